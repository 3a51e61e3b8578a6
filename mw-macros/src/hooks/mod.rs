//! `#[master]` and `#[worker]`: read the inherent impl and its attribute arguments, check the
//! hook methods ([`signature`], [`spelling`]), write the trait impl ([`expand`]).

mod expand;
mod signature;
mod spelling;

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::ItemImpl;
use syn::parse::Parser;

use crate::ctxt::Ctxt;
use crate::runtime_path::{RuntimePath, parse_crate_value};
use signature::Checked;

/// Which trait the attribute writes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Master,
    Worker,
}

/// One hook of a role: its method name, whether it must be written, and its signature as the
/// error messages show it (`{mw}` stands for the runtime's path).
pub(crate) struct Hook {
    pub(crate) name: &'static str,
    pub(crate) required: bool,
    signature: &'static str,
}

const MASTER_HOOKS: &[Hook] = &[
    Hook {
        name: "initialize",
        required: false,
        signature: "fn initialize(&mut self, setup: &mut {mw}::Setup) -> {mw}::Result<()>",
    },
    Hook {
        name: "partition",
        required: true,
        signature: "fn partition(&mut self, iteration: &{mw}::Iteration) -> {mw}::Work<Shared, Task>",
    },
    Hook {
        name: "more_tasks",
        required: false,
        signature: "fn more_tasks(&mut self, iteration: &{mw}::Iteration, room: usize) -> Vec<Task>",
    },
    Hook {
        name: "recover",
        required: true,
        signature: "fn recover(&mut self, task: {mw}::TaskId, result: Result)",
    },
    Hook {
        name: "checkpoint",
        required: false,
        signature: "fn checkpoint(&self) -> Option<Vec<u8>>",
    },
    Hook {
        name: "restore",
        required: false,
        signature: "fn restore(&mut self, saved: &[u8]) -> {mw}::Result<()>",
    },
    Hook {
        name: "task_failed",
        required: false,
        signature: "fn task_failed(&mut self, task: {mw}::TaskId, errors: &[String])",
    },
    Hook {
        name: "end_iteration",
        required: false,
        signature: "fn end_iteration(&mut self, iteration: &{mw}::Iteration) -> {mw}::Flow",
    },
    Hook {
        name: "final_work",
        required: false,
        signature: "fn final_work(&mut self) -> {mw}::Result<()>",
    },
];

const WORKER_HOOKS: &[Hook] = &[
    Hook {
        name: "initialize",
        required: false,
        signature: "fn initialize(&mut self, setup: &{mw}::WorkerSetup) -> {mw}::Result<()>",
    },
    Hook {
        name: "do_work",
        required: true,
        signature: "fn do_work(&mut self, shared: &Shared, task: &Task) -> Result",
    },
    Hook {
        name: "final_work",
        required: false,
        signature: "fn final_work(&mut self) -> {mw}::Result<()>",
    },
];

impl Role {
    pub(crate) fn hooks(self) -> &'static [Hook] {
        match self {
            Role::Master => MASTER_HOOKS,
            Role::Worker => WORKER_HOOKS,
        }
    }

    fn other(self) -> Role {
        match self {
            Role::Master => Role::Worker,
            Role::Worker => Role::Master,
        }
    }

    /// `master` or `worker`, as in `#[mw::master]`.
    pub(crate) fn attr(self) -> &'static str {
        match self {
            Role::Master => "master",
            Role::Worker => "worker",
        }
    }
}

impl Hook {
    /// The hook's signature with the runtime path the caller uses (`mw::Setup`).
    pub(crate) fn signature(&self, krate: &RuntimePath) -> String {
        let path = krate.to_token_stream().to_string().replace(' ', "");
        self.signature
            .replace("{mw}", path.strip_prefix("::").unwrap_or(&path))
    }
}

/// The expansion of `#[mw::master]` / `#[mw::worker]` with arguments `args` on `input`: the
/// impl block unchanged, then the trait impl (a fallback one beside the errors, if any).
pub(crate) fn expand(role: Role, args: TokenStream, input: TokenStream) -> TokenStream {
    let mut cx = Ctxt::new();
    let explicit = parse_args(&mut cx, args);
    let item: ItemImpl = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(_) => {
            cx.error_at(
                proc_macro2::Span::call_site(),
                format!(
                    "`#[mw::{0}]` goes on an inherent impl block: `#[mw::{0}] impl MyType {{ ... }}`",
                    role.attr()
                ),
            );
            let errors = cx.into_compile_errors();
            return quote!(#errors #input);
        }
    };
    let krate = match RuntimePath::resolve(explicit, proc_macro2::Span::call_site()) {
        Ok(krate) => krate,
        Err(error) => {
            cx.syn_error(error);
            let errors = cx.into_compile_errors();
            return quote!(#errors #item);
        }
    };
    if let Some((_, trait_path, _)) = &item.trait_ {
        cx.error_spanned_by(
            trait_path,
            format!(
                "`#[mw::{}]` writes the trait impl itself: put it on an inherent impl block \
                 (`impl MyType {{ ... }}`) holding the hook methods",
                role.attr()
            ),
        );
        let errors = cx.into_compile_errors();
        return quote!(#errors #item);
    }
    let hooks = signature::check_all(&mut cx, role, &item, &krate);
    let trait_impl = expand::trait_impl(role, &item, &hooks, &krate);
    let errors = cx.into_compile_errors();
    quote! {
        #item
        #trait_impl
        #errors
    }
}

/// `crate = "path"`, the only argument.
fn parse_args(cx: &mut Ctxt, args: TokenStream) -> Option<syn::Path> {
    let mut krate = None;
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("crate") {
            krate = Some(parse_crate_value(&meta)?);
            Ok(())
        } else {
            Err(meta.error("unknown argument: the only one is `crate = \"path::to::mw\"`"))
        }
    });
    if let Err(error) = parser.parse2(args) {
        cx.syn_error(error);
    }
    krate
}

/// The checked hooks of one impl block, by name.
pub(crate) struct Hooks<'a> {
    pub(crate) found: Vec<(&'static str, Checked<'a>)>,
}

impl<'a> Hooks<'a> {
    pub(crate) fn get(&self, name: &str) -> Option<&Checked<'a>> {
        self.found.iter().find(|(n, _)| *n == name).map(|(_, c)| c)
    }
}
