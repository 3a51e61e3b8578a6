//! The `Master` / `Worker` impl written from the hook methods.
//!
//! Each trait method calls the inherent method of the same name (`Self::partition(self, ...)`:
//! inherent methods win over trait methods in paths). The calls carry the spans of the user's
//! signature, so a parameter or return type the macro could not check by name (a wrong
//! `Result`, a task that is not `Clone`) is reported there by the type checker.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{ImplItemFn, ItemImpl, ReturnType, Type};

use super::signature::Checked;
use super::{Hooks, Role};
use crate::runtime_path::RuntimePath;

/// The trait impl for `item`; hooks that are missing or wrong get bodies that are never run
/// (their errors stop the build) so that the user sees no follow-up errors.
pub(crate) fn trait_impl(
    role: Role,
    item: &ItemImpl,
    hooks: &Hooks<'_>,
    krate: &RuntimePath,
) -> TokenStream {
    let p = krate.private();
    let (impl_generics, _, where_clause) = item.generics.split_for_impl();
    let self_ty = &item.self_ty;
    let unknown = || quote!(());
    let (trait_name, types, methods) = match role {
        Role::Master => {
            let (shared, task) = match hooks.get("partition") {
                Some(Checked::Partition { shared, task, .. }) => (quote!(#shared), quote!(#task)),
                _ => (unknown(), unknown()),
            };
            let result = match hooks.get("recover") {
                Some(Checked::Recover { result, .. }) => quote!(#result),
                _ => unknown(),
            };
            let methods = vec![
                hooks.get("initialize").map(|c| {
                    let call = call(c.method(), &[param(c.method(), 0, "setup")]);
                    quote! {
                        fn initialize(&mut self, setup: &mut #p::Setup) -> #p::Result<()> {
                            #call
                        }
                    }
                }),
                Some(match hooks.get("partition") {
                    Some(c) => {
                        let call = call(c.method(), &[param(c.method(), 0, "iteration")]);
                        quote! {
                            fn partition(
                                &mut self,
                                iteration: &#p::Iteration,
                            ) -> #p::Work<Self::Shared, Self::Task> {
                                #call
                            }
                        }
                    }
                    None => quote! {
                        fn partition(&mut self, _: &#p::Iteration) -> #p::Work<Self::Shared, Self::Task> {
                            ::core::unreachable!()
                        }
                    },
                }),
                Some(match hooks.get("recover") {
                    Some(c) => {
                        let m = c.method();
                        let call = call(m, &[param(m, 0, "task"), param(m, 1, "result")]);
                        quote! {
                            fn recover(&mut self, task: #p::TaskId, result: Self::Result) {
                                #call
                            }
                        }
                    }
                    None => quote! {
                        fn recover(&mut self, _: #p::TaskId, _: Self::Result) {
                            ::core::unreachable!()
                        }
                    },
                }),
                hooks.get("more_tasks").map(|c| {
                    let m = c.method();
                    let call = call(m, &[param(m, 0, "iteration"), param(m, 1, "room")]);
                    quote! {
                        fn more_tasks(
                            &mut self,
                            iteration: &#p::Iteration,
                            room: usize,
                        ) -> ::std::vec::Vec<Self::Task> {
                            #call
                        }
                    }
                }),
                hooks.get("checkpoint").map(|c| {
                    let call = call(c.method(), &[]);
                    quote! {
                        fn checkpoint(&self) -> ::core::option::Option<::std::vec::Vec<u8>> {
                            #call
                        }
                    }
                }),
                hooks.get("restore").map(|c| {
                    let call = call(c.method(), &[param(c.method(), 0, "saved")]);
                    quote! {
                        fn restore(&mut self, saved: &[u8]) -> #p::Result<()> {
                            #call
                        }
                    }
                }),
                hooks.get("task_failed").map(|c| {
                    let m = c.method();
                    let call = call(m, &[param(m, 0, "task"), param(m, 1, "errors")]);
                    quote! {
                        fn task_failed(
                            &mut self,
                            task: #p::TaskId,
                            errors: &[::std::string::String],
                        ) {
                            #call
                        }
                    }
                }),
                hooks.get("end_iteration").map(|c| {
                    let call = call(c.method(), &[param(c.method(), 0, "iteration")]);
                    quote! {
                        fn end_iteration(&mut self, iteration: &#p::Iteration) -> #p::Flow {
                            #call
                        }
                    }
                }),
                final_work(hooks, &p),
            ];
            (quote!(Master), [task, result, shared], methods)
        }
        Role::Worker => {
            let (types, do_work) = match hooks.get("do_work") {
                Some(Checked::DoWork {
                    method,
                    shared,
                    task,
                    task_by_value,
                    result,
                    fallible,
                }) => {
                    let task_arg = param(method, 1, "task");
                    let task_arg = if *task_by_value {
                        let span = located_at(task.span());
                        quote_spanned!(span=> ::core::clone::Clone::clone(#task_arg))
                    } else {
                        task_arg
                    };
                    let call = call(method, &[param(method, 0, "shared"), task_arg]);
                    let do_work = if *fallible {
                        // The runtime calls `try_work`; `do_work`, its infallible form, fails by
                        // panicking, which the runtime also catches.
                        quote! {
                            fn do_work(
                                &mut self,
                                shared: &Self::Shared,
                                task: &Self::Task,
                            ) -> Self::Result {
                                match <Self as #p::Worker>::try_work(self, shared, task) {
                                    ::core::result::Result::Ok(result) => result,
                                    ::core::result::Result::Err(error) => {
                                        ::core::panic!("{}", error)
                                    }
                                }
                            }
                            fn try_work(
                                &mut self,
                                shared: &Self::Shared,
                                task: &Self::Task,
                            ) -> ::core::result::Result<Self::Result, #p::TaskError> {
                                ::core::result::Result::map_err(
                                    #call,
                                    ::core::convert::Into::into,
                                )
                            }
                        }
                    } else {
                        quote! {
                            fn do_work(
                                &mut self,
                                shared: &Self::Shared,
                                task: &Self::Task,
                            ) -> Self::Result {
                                #call
                            }
                        }
                    };
                    let result = match result {
                        Some(result) => quote!(#result),
                        None => quote!(()),
                    };
                    ([quote!(#task), result, quote!(#shared)], do_work)
                }
                _ => (
                    [unknown(), unknown(), unknown()],
                    quote! {
                        fn do_work(&mut self, _: &Self::Shared, _: &Self::Task) -> Self::Result {
                            ::core::unreachable!()
                        }
                    },
                ),
            };
            let methods = vec![
                hooks.get("initialize").map(|c| {
                    let call = call(c.method(), &[param(c.method(), 0, "setup")]);
                    quote! {
                        fn initialize(&mut self, setup: &#p::WorkerSetup) -> #p::Result<()> {
                            #call
                        }
                    }
                }),
                Some(do_work),
                final_work(hooks, &p),
            ];
            (quote!(Worker), types, methods)
        }
    };
    let [task, result, shared] = types;
    quote! {
        #[automatically_derived]
        impl #impl_generics #p::#trait_name for #self_ty #where_clause {
            type Task = #task;
            type Result = #result;
            type Shared = #shared;
            #(#methods)*
        }
    }
}

fn final_work(hooks: &Hooks<'_>, p: &TokenStream) -> Option<TokenStream> {
    hooks.get("final_work").map(|c| {
        let call = call(c.method(), &[]);
        quote! {
            fn final_work(&mut self) -> #p::Result<()> {
                #call
            }
        }
    })
}

/// A span that resolves names at the macro call but points at `span` in the user's code.
fn located_at(span: Span) -> Span {
    Span::call_site().located_at(span)
}

/// The trait method's parameter `name`, passed on as the inherent method's parameter `index`:
/// a type mismatch is reported at the user's parameter type.
fn param(method: &ImplItemFn, index: usize, name: &str) -> TokenStream {
    let span = method
        .sig
        .inputs
        .iter()
        .filter_map(|arg| match arg {
            syn::FnArg::Typed(param) => Some(param.ty.span()),
            syn::FnArg::Receiver(_) => None,
        })
        .nth(index)
        .unwrap_or_else(Span::call_site);
    let ident = Ident::new(name, located_at(span));
    quote!(#ident)
}

/// `Self::hook(self, args...)`, spanned at the user's return type.
fn call(method: &ImplItemFn, args: &[TokenStream]) -> TokenStream {
    let name = &method.sig.ident;
    let span = match &method.sig.output {
        ReturnType::Type(_, ty) => ty_span(ty),
        ReturnType::Default => name.span(),
    };
    let span = located_at(span);
    quote_spanned!(span=> Self::#name(self, #(#args),*))
}

fn ty_span(ty: &Type) -> Span {
    ty.span()
}
