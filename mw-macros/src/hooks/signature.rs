//! Which methods of the impl block are hooks, whether their signatures are right, and the
//! message types they tell.

use quote::ToTokens;
use syn::{FnArg, ImplItem, ImplItemFn, ItemImpl, PatType, ReturnType, Type};

use super::spelling::misspelling_of;
use super::{Hook, Hooks, Role};
use crate::ctxt::Ctxt;
use crate::runtime_path::RuntimePath;

/// A hook method whose signature is right, with what it tells about the message types.
pub(crate) enum Checked<'a> {
    /// `initialize`, `more_tasks`, `end_iteration`, `final_work`: nothing to learn.
    Plain { method: &'a ImplItemFn },
    /// `partition(&mut self, &Iteration) -> Work<Shared, Task>`.
    Partition {
        method: &'a ImplItemFn,
        shared: &'a Type,
        task: &'a Type,
    },
    /// `recover(&mut self, TaskId, Result)`.
    Recover {
        method: &'a ImplItemFn,
        result: &'a Type,
    },
    /// `do_work(&mut self, &Shared, &Task or Task) -> Result`.
    DoWork {
        method: &'a ImplItemFn,
        shared: &'a Type,
        task: &'a Type,
        task_by_value: bool,
        /// `None` for `()`; of a fallible `do_work`, the `Ok` type.
        result: Option<&'a Type>,
        /// Whether `do_work` returns a `Result` (its error is the task's failure).
        fallible: bool,
    },
}

impl<'a> Checked<'a> {
    pub(crate) fn method(&self) -> &'a ImplItemFn {
        match self {
            Checked::Plain { method }
            | Checked::Partition { method, .. }
            | Checked::Recover { method, .. }
            | Checked::DoWork { method, .. } => method,
        }
    }
}

/// Checks every method of `item` against the hooks of `role`; records the problems in `cx`.
pub(crate) fn check_all<'a>(
    cx: &mut Ctxt,
    role: Role,
    item: &'a ItemImpl,
    krate: &RuntimePath,
) -> Hooks<'a> {
    let hooks = role.hooks();
    let methods: Vec<&ImplItemFn> = item
        .items
        .iter()
        .filter_map(|item| match item {
            ImplItem::Fn(method) => Some(method),
            _ => None,
        })
        .collect();
    let defined: Vec<String> = methods.iter().map(|m| m.sig.ident.to_string()).collect();
    let is_defined = |name: &str| defined.iter().any(|d| d == name);

    let mut found = Vec::new();
    let mut suggested = Vec::new();
    for method in &methods {
        let name = method.sig.ident.to_string();
        if let Some(hook) = hooks.iter().find(|hook| hook.name == name) {
            if let Some(checked) = check(cx, role, hook, method, krate) {
                found.push((hook.name, checked));
            }
        } else if role.other().hooks().iter().any(|hook| hook.name == name) {
            cx.error_spanned_by(
                &method.sig.ident,
                format!(
                    "`{name}` is a hook of `#[mw::{}]`, not of `#[mw::{}]`: move it to the {} \
                     impl block (or rename it, if it is a helper)",
                    role.other().attr(),
                    role.attr(),
                    role.other().attr(),
                ),
            );
        } else if let Some(hook) = misspelling_of(
            &name,
            hooks.iter().map(|h| h.name).filter(|h| !is_defined(h)),
        ) {
            cx.error_spanned_by(
                &method.sig.ident,
                format!(
                    "`{name}` is not a hook of `#[mw::{}]`: did you mean `{hook}`? (a helper \
                     method with this name can go in another impl block)",
                    role.attr()
                ),
            );
            suggested.push(hook);
        }
    }
    for hook in hooks.iter().filter(|hook| hook.required) {
        if !is_defined(hook.name) && !suggested.contains(&hook.name) {
            cx.error_spanned_by(
                &item.self_ty,
                format!(
                    "missing hook `{}`: a `#[mw::{}]` impl must define `{}`",
                    hook.name,
                    role.attr(),
                    hook.signature(krate)
                ),
            );
        }
    }
    Hooks { found }
}

/// Records that `hook`'s signature is wrong because of `reason`, at `tokens`.
fn wrong(cx: &mut Ctxt, tokens: impl ToTokens, hook: &Hook, krate: &RuntimePath, reason: &str) {
    cx.error_spanned_by(
        tokens,
        format!(
            "wrong signature for hook `{}`: {reason}; expected `{}`",
            hook.name,
            hook.signature(krate)
        ),
    );
}

/// Checks the signature of `method`, the hook `hook` of `role`.
fn check<'a>(
    cx: &mut Ctxt,
    role: Role,
    hook: &Hook,
    method: &'a ImplItemFn,
    krate: &RuntimePath,
) -> Option<Checked<'a>> {
    let sig = &method.sig;
    let errors_before = cx.error_count();
    let fail = |cx: &mut Ctxt, tokens: &dyn ToTokens, reason: &str| {
        wrong(cx, tokens, hook, krate, reason);
    };
    let qualifier: Option<(&dyn ToTokens, &str)> = if let Some(t) = &sig.constness {
        Some((t, "it cannot be `const`"))
    } else if let Some(t) = &sig.asyncness {
        Some((t, "it cannot be `async`"))
    } else if let Some(t) = &sig.unsafety {
        Some((t, "it cannot be `unsafe`"))
    } else if let Some(t) = &sig.abi {
        Some((t, "it cannot be `extern`"))
    } else if let Some(t) = &sig.variadic {
        Some((t, "it cannot be variadic"))
    } else {
        None
    };
    if let Some((tokens, reason)) = qualifier {
        fail(cx, tokens, reason);
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        fail(cx, &sig.generics, "it cannot have generic parameters");
    }
    let params: Vec<&PatType> = sig
        .inputs
        .iter()
        .filter_map(|arg| match arg {
            FnArg::Typed(param) => Some(param),
            FnArg::Receiver(_) => None,
        })
        .collect();
    // Saving a checkpoint only reads the master.
    let shared_self = (role, hook.name) == (Role::Master, "checkpoint");
    let receiver_text = if shared_self {
        "it must take `&self`"
    } else {
        "it must take `&mut self`"
    };
    match sig.inputs.first() {
        Some(FnArg::Receiver(receiver))
            if receiver.reference.is_some()
                && receiver.mutability.is_some() != shared_self
                && receiver.colon_token.is_none() => {}
        Some(FnArg::Receiver(receiver)) => fail(cx, receiver, receiver_text),
        _ => fail(cx, &sig.ident, receiver_text),
    }
    let arity = match (role, hook.name) {
        (_, "final_work") | (Role::Master, "checkpoint") => 0,
        (Role::Master, "recover" | "more_tasks" | "task_failed") | (Role::Worker, "do_work") => 2,
        _ => 1,
    };
    if params.len() != arity {
        let reason = match arity {
            0 => "it takes no parameter besides `&mut self`".to_owned(),
            1 => "it takes one parameter besides `&mut self`".to_owned(),
            n => format!("it takes {n} parameters besides `&mut self`"),
        };
        let tokens: &dyn ToTokens = if sig.inputs.is_empty() {
            &sig.ident
        } else {
            &sig.inputs
        };
        fail(cx, tokens, &reason);
        return None;
    }
    let ret = match &sig.output {
        ReturnType::Type(_, ty) => Some(&**ty),
        ReturnType::Default => None,
    };
    let checked = match (role, hook.name) {
        (Role::Master, "initialize") => {
            if !refers_to(&params[0].ty, true, "Setup") {
                fail(cx, &params[0].ty, "its parameter must be `&mut Setup`");
            }
            if ret.is_none() {
                fail(cx, &sig.ident, "it must return `Result<()>`");
            }
            Checked::Plain { method }
        }
        (Role::Worker, "initialize") => {
            if !refers_to(&params[0].ty, false, "WorkerSetup") {
                fail(cx, &params[0].ty, "its parameter must be `&WorkerSetup`");
            }
            if ret.is_none() {
                fail(cx, &sig.ident, "it must return `Result<()>`");
            }
            Checked::Plain { method }
        }
        (_, "final_work") => {
            if ret.is_none() {
                fail(cx, &sig.ident, "it must return `Result<()>`");
            }
            Checked::Plain { method }
        }
        (Role::Master, "checkpoint") => {
            if !ret.is_some_and(|ty| matches!(ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Option"))) {
                fail(cx, &sig.ident, "it must return `Option<Vec<u8>>`");
            }
            Checked::Plain { method }
        }
        (Role::Master, "restore") => {
            if !matches!(&*params[0].ty, Type::Reference(r) if r.mutability.is_none()) {
                fail(cx, &params[0].ty, "its parameter must be `&[u8]`");
            }
            if ret.is_none() {
                fail(cx, &sig.ident, "it must return `Result<()>`");
            }
            Checked::Plain { method }
        }
        (Role::Master, "task_failed") => {
            if !is_named(&params[0].ty, "TaskId") {
                fail(cx, &params[0].ty, "its first parameter must be `TaskId`");
            }
            if !matches!(&*params[1].ty, Type::Reference(r) if r.mutability.is_none()) {
                fail(
                    cx,
                    &params[1].ty,
                    "its second parameter must be `&[String]`",
                );
            }
            if let Some(ty) = ret {
                fail(cx, ty, "it returns nothing");
            }
            Checked::Plain { method }
        }
        (Role::Master, "end_iteration") => {
            if !refers_to(&params[0].ty, false, "Iteration") {
                fail(cx, &params[0].ty, "its parameter must be `&Iteration`");
            }
            match ret {
                Some(ty) if is_named(ty, "Flow") => {}
                Some(ty) => fail(cx, ty, "it must return `Flow`"),
                None => fail(cx, &sig.ident, "it must return `Flow`"),
            }
            Checked::Plain { method }
        }
        (Role::Master, "partition") => {
            if !refers_to(&params[0].ty, false, "Iteration") {
                fail(cx, &params[0].ty, "its parameter must be `&Iteration`");
            }
            let reason = "it must return `Work<Shared, Task>`, written out so that the `Shared` \
                          and `Task` types can be read from it";
            match ret.and_then(work_types) {
                Some((shared, task)) if cx.error_count() == errors_before => Checked::Partition {
                    method,
                    shared,
                    task,
                },
                Some(_) => return None,
                None => {
                    match ret {
                        Some(ty) => fail(cx, ty, reason),
                        None => fail(cx, &sig.ident, reason),
                    }
                    return None;
                }
            }
        }
        (Role::Master, "more_tasks") => {
            if !refers_to(&params[0].ty, false, "Iteration") {
                fail(
                    cx,
                    &params[0].ty,
                    "its first parameter must be `&Iteration`",
                );
            }
            if !is_named(&params[1].ty, "usize") {
                fail(
                    cx,
                    &params[1].ty,
                    "its second parameter must be `usize`, the room left",
                );
            }
            match ret {
                Some(ty) if is_vec(ty) => {}
                Some(ty) => fail(cx, ty, "it must return `Vec<Task>`"),
                None => fail(cx, &sig.ident, "it must return `Vec<Task>`"),
            }
            Checked::Plain { method }
        }
        (Role::Master, "recover") => {
            if !is_named(&params[0].ty, "TaskId") {
                fail(cx, &params[0].ty, "its first parameter must be `TaskId`");
            }
            if let Type::Reference(_) = &*params[1].ty {
                fail(cx, &params[1].ty, "it takes the result by value");
            }
            match ret {
                Some(Type::Tuple(unit)) if unit.elems.is_empty() => {}
                Some(ty) => fail(cx, ty, "it returns nothing"),
                None => {}
            }
            Checked::Recover {
                method,
                result: &params[1].ty,
            }
        }
        (Role::Worker, "do_work") => {
            let shared = match &*params[0].ty {
                Type::Reference(r) if r.mutability.is_none() => &*r.elem,
                other => {
                    fail(
                        cx,
                        other,
                        "it takes the shared data by reference (`&Shared`)",
                    );
                    return None;
                }
            };
            let (task, task_by_value) = match &*params[1].ty {
                Type::Reference(r) if r.mutability.is_none() => (&*r.elem, false),
                Type::Reference(r) => {
                    fail(
                        cx,
                        r,
                        "it takes the task as `&Task` (or by value, as `Task`)",
                    );
                    return None;
                }
                other => (other, true),
            };
            let (result, fallible) = match ret.and_then(result_ok) {
                Some(ok) => (Some(ok), true),
                None => (ret, false),
            };
            Checked::DoWork {
                method,
                shared,
                task,
                task_by_value,
                result,
                fallible,
            }
        }
        _ => return None,
    };
    (cx.error_count() == errors_before).then_some(checked)
}

/// `ty` with `&` (or `&mut` when `mutable`) removed, naming `name` (`&mw::Setup`, `&Setup`).
fn refers_to(ty: &Type, mutable: bool, name: &str) -> bool {
    match ty {
        Type::Reference(r) => r.mutability.is_some() == mutable && is_named(&r.elem, name),
        Type::Group(group) => refers_to(&group.elem, mutable, name),
        Type::Paren(paren) => refers_to(&paren.elem, mutable, name),
        _ => false,
    }
}

/// Whether `ty` is a path ending in `name` with no generic arguments.
fn is_named(ty: &Type, name: &str) -> bool {
    match ty {
        Type::Path(path) if path.qself.is_none() => path
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == name && matches!(s.arguments, syn::PathArguments::None)),
        Type::Group(group) => is_named(&group.elem, name),
        Type::Paren(paren) => is_named(&paren.elem, name),
        _ => false,
    }
}

/// Whether `ty` is a path ending in `Vec` with one generic argument.
fn is_vec(ty: &Type) -> bool {
    match ty {
        Type::Path(path) if path.qself.is_none() => {
            path.path.segments.last().is_some_and(|s| {
                s.ident == "Vec"
                    && matches!(&s.arguments, syn::PathArguments::AngleBracketed(a) if a.args.len() == 1)
            })
        }
        Type::Group(group) => is_vec(&group.elem),
        Type::Paren(paren) => is_vec(&paren.elem),
        _ => false,
    }
}

/// The `Ok` type of `Result<T, E>` or of an alias such as `mw::Result<T>`: a `do_work` that
/// returns one can fail.
fn result_ok(ty: &Type) -> Option<&Type> {
    match ty {
        Type::Path(path) if path.qself.is_none() => {
            let last = path.path.segments.last()?;
            if last.ident != "Result" {
                return None;
            }
            let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
                return None;
            };
            match args.args.first() {
                Some(syn::GenericArgument::Type(ok)) if args.args.len() <= 2 => Some(ok),
                _ => None,
            }
        }
        Type::Group(group) => result_ok(&group.elem),
        Type::Paren(paren) => result_ok(&paren.elem),
        _ => None,
    }
}

/// `Shared` and `Task` of `Work<Shared, Task>`.
fn work_types(ty: &Type) -> Option<(&Type, &Type)> {
    match ty {
        Type::Path(path) if path.qself.is_none() => {
            let last = path.path.segments.last()?;
            if last.ident != "Work" {
                return None;
            }
            let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
                return None;
            };
            let mut types = args.args.iter().map(|arg| match arg {
                syn::GenericArgument::Type(ty) => Some(ty),
                _ => None,
            });
            match (types.next(), types.next(), types.next()) {
                (Some(Some(shared)), Some(Some(task)), None) => Some((shared, task)),
                _ => None,
            }
        }
        Type::Group(group) => work_types(&group.elem),
        Type::Paren(paren) => work_types(&paren.elem),
        _ => None,
    }
}
