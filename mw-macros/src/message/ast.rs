//! The input of `#[derive(Message)]`, read into the shapes the expansion needs, with its
//! `#[mw(...)]` attributes.

use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, DeriveInput, Ident, Member, Token, Type, WherePredicate};

use crate::ctxt::Ctxt;
use crate::runtime_path::parse_crate_value;

/// The type the derive is on.
pub(crate) struct Container<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) generics: &'a syn::Generics,
    pub(crate) attrs: ContainerAttrs,
    pub(crate) data: Data<'a>,
}

pub(crate) enum Data<'a> {
    Struct(Style, Vec<Field<'a>>),
    Enum(Vec<Variant<'a>>),
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    Named,
    Tuple,
    Unit,
}

pub(crate) struct Variant<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) style: Style,
    pub(crate) fields: Vec<Field<'a>>,
}

pub(crate) struct Field<'a> {
    /// `self.<member>`: a name or a tuple index.
    pub(crate) member: Member,
    pub(crate) ty: &'a Type,
    /// `#[mw(skip)]`: not sent; `Default` on decode.
    pub(crate) skip: bool,
    /// The field's type contains the container again through a `Box` (`#[mw(recursive)]`, or
    /// seen directly): its size constants are left out so that they do not refer to themselves.
    pub(crate) recursive: bool,
}

#[derive(Default)]
pub(crate) struct ContainerAttrs {
    /// `#[mw(crate = "path")]`.
    pub(crate) krate: Option<syn::Path>,
    /// `#[mw(bound = "T: Message")]`: replaces the inferred bounds.
    pub(crate) bound: Option<Vec<WherePredicate>>,
}

impl<'a> Container<'a> {
    /// Reads `input`, recording every problem in `cx`; `None` only for a `union`.
    pub(crate) fn from_ast(cx: &mut Ctxt, input: &'a DeriveInput) -> Option<Self> {
        let attrs = container_attrs(cx, &input.attrs);
        let data = match &input.data {
            syn::Data::Struct(data) => {
                let (style, fields) = fields(cx, input, &data.fields);
                Data::Struct(style, fields)
            }
            syn::Data::Enum(data) => Data::Enum(
                data.variants
                    .iter()
                    .map(|variant| {
                        no_attrs(cx, &variant.attrs, "an enum variant");
                        let (style, fields) = fields(cx, input, &variant.fields);
                        Variant {
                            ident: &variant.ident,
                            style,
                            fields,
                        }
                    })
                    .collect(),
            ),
            syn::Data::Union(data) => {
                cx.error_spanned_by(
                    data.union_token,
                    "`Message` cannot be derived for a union: use a struct or an enum",
                );
                return None;
            }
        };
        Some(Container {
            ident: &input.ident,
            generics: &input.generics,
            attrs,
            data,
        })
    }

    /// Every field, of every variant.
    pub(crate) fn all_fields(&self) -> impl Iterator<Item = &Field<'a>> {
        let (structs, variants) = match &self.data {
            Data::Struct(_, fields) => (Some(fields.iter()), None),
            Data::Enum(variants) => (None, Some(variants.iter().flat_map(|v| v.fields.iter()))),
        };
        structs
            .into_iter()
            .flatten()
            .chain(variants.into_iter().flatten())
    }
}

fn fields<'a>(
    cx: &mut Ctxt,
    input: &'a DeriveInput,
    fields: &'a syn::Fields,
) -> (Style, Vec<Field<'a>>) {
    let style = match fields {
        syn::Fields::Named(_) => Style::Named,
        syn::Fields::Unnamed(_) => Style::Tuple,
        syn::Fields::Unit => Style::Unit,
    };
    let fields = fields
        .iter()
        .enumerate()
        .map(|(index, field)| {
            let attrs = field_attrs(cx, &field.attrs);
            let member = match &field.ident {
                Some(ident) => Member::Named(ident.clone()),
                None => Member::Unnamed(syn::Index {
                    index: u32::try_from(index).unwrap_or(u32::MAX),
                    span: field.ty.span(),
                }),
            };
            Field {
                member,
                ty: &field.ty,
                skip: attrs.skip,
                recursive: attrs.recursive || contains_self(&field.ty, &input.ident),
            }
        })
        .collect();
    (style, fields)
}

fn mw_attrs(attrs: &[Attribute]) -> impl Iterator<Item = &Attribute> {
    attrs.iter().filter(|attr| attr.path().is_ident("mw"))
}

fn path_name(path: &syn::Path) -> String {
    quote::quote!(#path).to_string().replace(' ', "")
}

fn container_attrs(cx: &mut Ctxt, attrs: &[Attribute]) -> ContainerAttrs {
    let mut out = ContainerAttrs::default();
    for attr in mw_attrs(attrs) {
        let result = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                let path = parse_crate_value(&meta)?;
                if out.krate.replace(path).is_some() {
                    return Err(meta.error("`crate` is given twice"));
                }
            } else if meta.path.is_ident("bound") {
                let lit: syn::LitStr = meta.value()?.parse()?;
                let predicates =
                    lit.parse_with(Punctuated::<WherePredicate, Token![,]>::parse_terminated)?;
                if out
                    .bound
                    .replace(predicates.into_iter().collect())
                    .is_some()
                {
                    return Err(meta.error("`bound` is given twice"));
                }
            } else if meta.path.is_ident("skip") || meta.path.is_ident("recursive") {
                return Err(meta.error(format!(
                    "`#[mw({})]` goes on a field, not on the type",
                    path_name(&meta.path)
                )));
            } else {
                return Err(meta.error(format!(
                    "unknown attribute `{}`: on the type, `#[mw(...)]` takes `crate = \"path\"` \
                     or `bound = \"T: Trait\"`",
                    path_name(&meta.path)
                )));
            }
            Ok(())
        });
        if let Err(error) = result {
            cx.syn_error(error);
        }
    }
    out
}

#[derive(Default)]
struct FieldAttrs {
    skip: bool,
    recursive: bool,
}

fn field_attrs(cx: &mut Ctxt, attrs: &[Attribute]) -> FieldAttrs {
    let mut out = FieldAttrs::default();
    for attr in mw_attrs(attrs) {
        let result = attr.parse_nested_meta(|meta| {
            let flag = if meta.path.is_ident("skip") {
                &mut out.skip
            } else if meta.path.is_ident("recursive") {
                &mut out.recursive
            } else if meta.path.is_ident("crate") || meta.path.is_ident("bound") {
                return Err(meta.error(format!(
                    "`{}` goes on the type (`#[mw({} = \"...\")]` above the `struct` or `enum`), \
                     not on a field",
                    path_name(&meta.path),
                    path_name(&meta.path)
                )));
            } else {
                return Err(meta.error(format!(
                    "unknown attribute `{}`: on a field, `#[mw(...)]` takes `skip` or `recursive`",
                    path_name(&meta.path)
                )));
            };
            if std::mem::replace(flag, true) {
                return Err(meta.error(format!("`{}` is given twice", path_name(&meta.path))));
            }
            Ok(())
        });
        if let Err(error) = result {
            cx.syn_error(error);
        }
    }
    out
}

fn no_attrs(cx: &mut Ctxt, attrs: &[Attribute], place: &str) {
    for attr in mw_attrs(attrs) {
        cx.error_spanned_by(
            attr,
            format!("`#[mw(...)]` has no options for {place}; `skip` goes on fields"),
        );
    }
}

/// Whether `ty` contains the container itself through a `Box` (or another type whose size
/// constants depend on its argument), which would make the size constants refer to themselves.
/// `Vec`, `Option` and `String` have constants of their own and break the cycle.
fn contains_self(ty: &Type, container: &Ident) -> bool {
    match ty {
        Type::Array(array) => contains_self(&array.elem, container),
        Type::Group(group) => contains_self(&group.elem, container),
        Type::Paren(paren) => contains_self(&paren.elem, container),
        Type::Tuple(tuple) => tuple
            .elems
            .iter()
            .any(|elem| contains_self(elem, container)),
        Type::Path(path) if path.qself.is_none() => {
            let Some(last) = path.path.segments.last() else {
                return false;
            };
            if last.ident == *container || (path.path.segments.len() == 1 && last.ident == "Self") {
                return true;
            }
            if ["Vec", "Option", "String"]
                .iter()
                .any(|name| last.ident == name)
            {
                return false;
            }
            match &last.arguments {
                syn::PathArguments::AngleBracketed(args) => args.args.iter().any(|arg| {
                    matches!(arg, syn::GenericArgument::Type(ty) if contains_self(ty, container))
                }),
                _ => false,
            }
        }
        _ => false,
    }
}
