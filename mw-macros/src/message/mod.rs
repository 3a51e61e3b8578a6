//! `#[derive(Message)]`: read the input ([`ast`]), add bounds ([`bounds`]), write the impl
//! ([`expand`]).

mod ast;
mod bounds;
mod expand;

use proc_macro2::TokenStream;
use quote::quote;
use syn::DeriveInput;

use crate::ctxt::Ctxt;
use crate::runtime_path::RuntimePath;
use ast::Container;

/// The expansion of `#[derive(Message)]` on `input`: the impl, or every problem found as a
/// `compile_error!` beside a fallback impl.
pub(crate) fn derive(input: &DeriveInput) -> TokenStream {
    let mut cx = Ctxt::new();
    let cont = Container::from_ast(&mut cx, input);
    let explicit = cont.as_ref().and_then(|c| c.attrs.krate.clone());
    let krate = match RuntimePath::resolve(explicit, input.ident.span()) {
        Ok(krate) => Some(krate),
        Err(error) => {
            cx.syn_error(error);
            None
        }
    };
    match (cont, krate) {
        (Some(cont), Some(krate)) if !cx.has_errors() => expand::impl_message(&cont, &krate),
        (_, krate) => {
            let fallback = expand::fallback(input, krate.as_ref());
            let errors = cx.into_compile_errors();
            quote!(#errors #fallback)
        }
    }
}
