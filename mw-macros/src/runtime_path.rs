//! The path under which the calling crate sees `mw-runtime`.
//!
//! Generated projects depend on the runtime renamed (`mw = { package = "mw-runtime", ... }`), so
//! the expansions cannot simply write `::mw_runtime`: the caller's `Cargo.toml` is read (with
//! `proc-macro-crate`) to find the name it gave the dependency. `#[mw(crate = "...")]` overrides
//! the lookup, for crates that reach the runtime through a re-export.

use proc_macro_crate::{Error, FoundCrate, crate_name};
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};

const PACKAGE: &str = "mw-runtime";

/// The runtime's path, as the expansion writes it.
#[derive(Clone)]
pub(crate) struct RuntimePath(syn::Path);

impl RuntimePath {
    /// `explicit` (from `crate = "..."`) if given, else the caller's name for `mw-runtime`.
    ///
    /// # Errors
    /// When `mw-runtime` is not among the dependencies of the crate being compiled.
    pub(crate) fn resolve(explicit: Option<syn::Path>, span: Span) -> syn::Result<Self> {
        if let Some(path) = explicit {
            return Ok(RuntimePath(path));
        }
        let name = match crate_name(PACKAGE) {
            // The runtime itself (its library, unit tests and doctests): `lib.rs` declares
            // `extern crate self as mw_runtime`.
            Ok(FoundCrate::Itself) => "mw_runtime".to_owned(),
            Ok(FoundCrate::Name(name)) => name,
            // Not built by cargo: no manifest to read; assume the usual name.
            Err(Error::CargoManifestDirNotSet) => "mw_runtime".to_owned(),
            Err(_) => {
                return Err(syn::Error::new(
                    span,
                    format!(
                        "cannot find `{PACKAGE}` among the dependencies of this package\n\
                         help: add `mw = {{ package = \"{PACKAGE}\", ... }}` to [dependencies], \
                         or name the runtime's path with `#[mw(crate = \"path::to::mw_runtime\")]`"
                    ),
                ));
            }
        };
        let ident = syn::Ident::new(&name, Span::call_site());
        Ok(RuntimePath(syn::parse_quote!(::#ident)))
    }

    /// `<runtime>::__private`, where everything the expansions name lives.
    pub(crate) fn private(&self) -> TokenStream {
        let path = &self.0;
        quote!(#path::__private)
    }
}

impl ToTokens for RuntimePath {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        self.0.to_tokens(tokens);
    }
}

/// Reads the value of a `crate = ...` option: a string (`"path::to::mw"`) or a bare path.
pub(crate) fn parse_crate_value(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<syn::Path> {
    let value = meta.value()?;
    if value.peek(syn::LitStr) {
        let lit: syn::LitStr = value.parse()?;
        lit.parse()
    } else {
        value.parse()
    }
}
