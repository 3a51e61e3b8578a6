//! Collects the errors found in one macro input so that the user sees all of them at once.

use std::fmt::Display;

use proc_macro2::TokenStream;
use quote::ToTokens;

/// Errors gathered while reading and checking one input.
#[derive(Default)]
pub(crate) struct Ctxt {
    errors: Option<syn::Error>,
}

impl Ctxt {
    pub(crate) fn new() -> Self {
        Ctxt::default()
    }

    /// Records an error spanning `tokens`.
    pub(crate) fn error_spanned_by(&mut self, tokens: impl ToTokens, message: impl Display) {
        self.syn_error(syn::Error::new_spanned(tokens, message));
    }

    /// Records an error at `span`.
    pub(crate) fn error_at(&mut self, span: proc_macro2::Span, message: impl Display) {
        self.syn_error(syn::Error::new(span, message));
    }

    /// Records an error from a parser.
    pub(crate) fn syn_error(&mut self, error: syn::Error) {
        match &mut self.errors {
            Some(errors) => errors.combine(error),
            None => self.errors = Some(error),
        }
    }

    pub(crate) fn has_errors(&self) -> bool {
        self.errors.is_some()
    }

    pub(crate) fn error_count(&self) -> usize {
        self.errors
            .as_ref()
            .map_or(0, |errors| errors.into_iter().count())
    }

    /// `compile_error!` invocations for every recorded error (nothing when there were none).
    pub(crate) fn into_compile_errors(self) -> TokenStream {
        self.errors
            .map(syn::Error::into_compile_error)
            .unwrap_or_default()
    }
}
