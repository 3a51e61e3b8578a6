//! What rustc would refuse in the message types, caught before anything is written: a member
//! defined twice, an attribute the project cannot compile, a derive one of the fields does not
//! allow, a type that holds itself without a pointer between, a type too large for the target,
//! and a type nothing uses (the project would warn that it is never constructed).

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Attribute, Item};

use super::snippet::Source;
use super::types::{self, Scope, Shape, Ty};
use crate::CliError;

/// Derives of the standard library that are kept (`Message`, `Debug`, `Clone` and `PartialEq`
/// are added to every type anyway).
const STANDARD_DERIVES: [&str; 10] = [
    "Message",
    "Debug",
    "Clone",
    "PartialEq",
    "Copy",
    "Eq",
    "Hash",
    "PartialOrd",
    "Ord",
    "Default",
];

/// The largest value rustc allows on a 64-bit target, in bytes (`[u8; 1 << 61]` is "too big
/// for the target architecture").
const MAX_BYTES: u128 = (1 << 61) - 1;

/// A struct or enum of the input with its source.
pub(crate) struct Def<'a> {
    pub item: &'a Item,
    pub source: &'a Source,
}

impl Def<'_> {
    fn name(&self) -> String {
        match self.item {
            Item::Struct(s) => s.ident.to_string(),
            Item::Enum(e) => e.ident.to_string(),
            _ => String::new(),
        }
    }

    fn ident_span(&self) -> Span {
        match self.item {
            Item::Struct(s) => s.ident.span(),
            Item::Enum(e) => e.ident.span(),
            other => other.span(),
        }
    }

    /// Every field with its name as messages say it (`Type.field`, `Enum::Variant.0`).
    fn fields(&self) -> Vec<(String, &syn::Field)> {
        fn label<'f>(owner: &str, fields: &'f syn::Fields) -> Vec<(String, &'f syn::Field)> {
            fields
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let member = f.ident.as_ref().map_or(i.to_string(), ToString::to_string);
                    (format!("{owner}.{member}"), f)
                })
                .collect()
        }
        let name = self.name();
        match self.item {
            Item::Struct(s) => label(&name, &s.fields),
            Item::Enum(e) => e
                .variants
                .iter()
                .flat_map(|v| label(&format!("{name}::{}", v.ident), &v.fields))
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// Members (fields, variants) of one type named twice.
pub(crate) fn duplicate_members(def: &Def<'_>) -> Result<(), CliError> {
    let name = def.name();
    let check = |what: &str, owner: &str, idents: Vec<&syn::Ident>| {
        let mut seen: Vec<&syn::Ident> = Vec::new();
        for ident in idents {
            if let Some(first) = seen.iter().find(|s| *s == &ident) {
                let place = def.source.place(first.span());
                return Err(def.source.error(
                    ident.span(),
                    format!("the {what} `{ident}` is defined twice in `{owner}`"),
                    "defined again here",
                    format!("it is first defined at {place}; rename or remove one"),
                ));
            }
            seen.push(ident);
        }
        Ok(())
    };
    match def.item {
        Item::Struct(s) => check(
            "field",
            &name,
            s.fields.iter().flat_map(|f| &f.ident).collect(),
        ),
        Item::Enum(e) => {
            check(
                "variant",
                &name,
                e.variants.iter().map(|v| &v.ident).collect(),
            )?;
            for v in &e.variants {
                let owner = format!("{name}::{}", v.ident);
                check(
                    "field",
                    &owner,
                    v.fields.iter().flat_map(|f| &f.ident).collect(),
                )?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Only attributes the generated project compiles are passed through: doc comments,
/// `#[mw(...)]`, derives of the standard traits, and `#[default]` on the variant an enum's
/// `Default` derive picks.
pub(crate) fn attributes(def: &Def<'_>) -> Result<(), CliError> {
    let attrs: &[Attribute] = match def.item {
        Item::Struct(s) => &s.attrs,
        Item::Enum(e) => &e.attrs,
        _ => &[],
    };
    for attr in attrs {
        if attr.path().is_ident("derive") {
            for path in derive_paths(std::slice::from_ref(attr)) {
                if !is_standard(&path) {
                    let text = quote::ToTokens::to_token_stream(&path).to_string();
                    return Err(def.source.error(
                        path.span(),
                        format!("`#[derive({text})]` is not passed through"),
                        "not a standard derive",
                        "the project depends on no crate that defines it: add the crate to its \
                         Cargo.toml and the derive to src/messages.rs after generating (kept: \
                         Copy, Eq, Hash, PartialOrd, Ord, Default)",
                    ));
                }
            }
        } else {
            refuse_other(attr, def.source, &["doc", "mw"])?;
        }
    }
    let defaults = derive_names(attrs).contains("Default");
    if let Item::Enum(e) = def.item {
        for v in &e.variants {
            let allowed: &[&str] = if defaults {
                &["doc", "default"]
            } else {
                &["doc"]
            };
            for attr in &v.attrs {
                refuse_other(attr, def.source, allowed)?;
            }
        }
    }
    for (_, field) in def.fields() {
        for attr in &field.attrs {
            refuse_other(attr, def.source, &["doc", "mw"])?;
        }
    }
    Ok(())
}

fn refuse_other(attr: &Attribute, source: &Source, allowed: &[&str]) -> Result<(), CliError> {
    if allowed.iter().any(|a| attr.path().is_ident(a)) {
        return Ok(());
    }
    let name = quote::ToTokens::to_token_stream(attr.path()).to_string();
    Err(source.error(
        attr.span(),
        format!("the attribute `#[{name}]` is not passed through"),
        "not kept",
        "only doc comments, `#[mw(...)]` and the standard derives are kept: add other \
         attributes to src/messages.rs after generating",
    ))
}

fn is_standard(path: &syn::Path) -> bool {
    let Some(last) = path.segments.last() else {
        return false;
    };
    let prefix_ok = match path.segments.first() {
        Some(first) if path.segments.len() > 1 => {
            ["std", "core", "mw"].iter().any(|p| first.ident == p)
        }
        _ => true,
    };
    prefix_ok && STANDARD_DERIVES.iter().any(|d| last.ident == d)
}

/// The paths in a type's `#[derive(...)]` attributes.
pub(crate) fn derive_paths(attrs: &[Attribute]) -> Vec<syn::Path> {
    use syn::punctuated::Punctuated;
    attrs
        .iter()
        .filter(|a| a.path().is_ident("derive"))
        .filter_map(|a| {
            a.parse_args_with(Punctuated::<syn::Path, syn::Token![,]>::parse_terminated)
                .ok()
        })
        .flatten()
        .collect()
}

/// The names (last path segment) a type derives.
pub(crate) fn derive_names(attrs: &[Attribute]) -> BTreeSet<String> {
    derive_paths(attrs)
        .iter()
        .filter_map(|p| p.segments.last().map(|s| s.ident.to_string()))
        .collect()
}

/// The standard derives a type asks for hold: each field's type implements the trait, `Ord`
/// comes with `Eq` and `PartialOrd`, and an enum deriving `Default` marks one unit variant
/// `#[default]`.
pub(crate) fn derives(
    def: &Def<'_>,
    scope: Scope<'_>,
    derived: &BTreeMap<String, BTreeSet<String>>,
) -> Result<(), CliError> {
    let name = def.name();
    let Some(own) = derived.get(&name) else {
        return Ok(());
    };
    for (needs, wants) in [("Ord", ["Eq", "PartialOrd"])] {
        for want in wants {
            if own.contains(needs) && !own.contains(want) {
                return Err(def.source.error(
                    def.ident_span(),
                    format!("`{name}` derives `{needs}` without `{want}`"),
                    "derives `Ord`",
                    format!("`{needs}` needs `{want}`: derive both, or neither"),
                ));
            }
        }
    }
    if let (Item::Enum(e), true) = (def.item, own.contains("Default")) {
        let marked: Vec<&syn::Variant> = e
            .variants
            .iter()
            .filter(|v| v.attrs.iter().any(|a| a.path().is_ident("default")))
            .collect();
        match marked.as_slice() {
            [one] if matches!(one.fields, syn::Fields::Unit) => {}
            _ => {
                return Err(def.source.error(
                    def.ident_span(),
                    format!(
                        "`{name}` derives `Default` but does not mark one unit variant `#[default]`"
                    ),
                    "derives `Default`",
                    "mark exactly one variant without fields `#[default]`, or drop `Default`",
                ));
            }
        }
    }
    for (field_name, field) in def.fields() {
        let Ok(ty) = types::check(&field.ty, scope) else {
            continue;
        };
        for t in own {
            // An enum's `Default` builds the marked unit variant: its other fields do not count.
            if t == "Default" && matches!(def.item, Item::Enum(_)) {
                continue;
            }
            if !implements(&ty, t, derived) {
                let text = def.source.text_of(field.ty.span());
                return Err(def.source.error(
                    field.ty.span(),
                    format!(
                        "`{name}` derives `{t}`, but field `{field_name}` has type `{text}`, \
                         which does not implement `{t}`"
                    ),
                    format!("not `{t}`"),
                    format!("drop `{t}` from the derive, or change the field's type"),
                ));
            }
        }
    }
    Ok(())
}

/// Whether a field type implements one of the standard derivable traits.
fn implements(ty: &Ty, name: &str, derived: &BTreeMap<String, BTreeSet<String>>) -> bool {
    let always = matches!(name, "Message" | "Debug" | "Clone" | "PartialEq");
    match ty {
        _ if always => true,
        Ty::Number(n) if n.starts_with('f') => !matches!(name, "Eq" | "Ord" | "Hash"),
        Ty::Number(_) | Ty::Bool | Ty::Char => true,
        Ty::String => name != "Copy",
        Ty::Vec(inner) => match name {
            "Copy" => false,
            "Default" => true,
            _ => implements(inner, name, derived),
        },
        Ty::Box(inner) => name != "Copy" && implements(inner, name, derived),
        Ty::Option(inner) => name == "Default" || implements(inner, name, derived),
        Ty::Array(inner, len) => {
            let small = array_len(len).is_some_and(|n| n <= 32);
            (name != "Default" || small) && implements(inner, name, derived)
        }
        Ty::Tuple(elems) => elems.iter().all(|e| implements(e, name, derived)),
        Ty::User(user) => derived.get(user).is_some_and(|d| d.contains(name)),
    }
}

/// An array length written as a number (digits past `u128` count as `u128::MAX`).
fn array_len(len: &str) -> Option<u128> {
    let digits: String = len
        .trim_end_matches("usize")
        .chars()
        .filter(|c| *c != '_')
        .collect();
    let digits = digits.trim();
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some(digits.parse().unwrap_or(u128::MAX))
}

/// The first array length in a type that does not fit in a 64-bit `usize`.
fn too_long(ty: &Ty) -> Option<String> {
    match ty {
        Ty::Array(inner, len) => match array_len(len) {
            Some(n) if n > u128::from(u64::MAX) => Some(len.clone()),
            _ => too_long(inner),
        },
        Ty::Vec(inner) | Ty::Box(inner) | Ty::Option(inner) => too_long(inner),
        Ty::Tuple(elems) => elems.iter().find_map(too_long),
        _ => None,
    }
}

/// A type that holds itself other than through `Vec` or `Box` has no size: rustc refuses it.
pub(crate) fn recursion(defs: &[Def<'_>], known: &BTreeSet<String>) -> Result<(), CliError> {
    fn scope_of<'s>(known: &'s BTreeSet<String>, name: &'s str) -> Scope<'s> {
        Scope {
            known,
            self_name: name,
        }
    }
    // Which user types each type holds inline (through `Option`, arrays and tuples).
    let mut inline: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for def in defs {
        let name = def.name();
        let scope = scope_of(known, &name);
        let held = def
            .fields()
            .iter()
            .filter_map(|(_, f)| types::check(&f.ty, scope).ok())
            .flat_map(|ty| inline_users(&ty))
            .collect();
        inline.insert(name, held);
    }
    for def in defs {
        let name = def.name();
        let scope = scope_of(known, &name);
        for (field_name, field) in def.fields() {
            let Ok(ty) = types::check(&field.ty, scope) else {
                continue;
            };
            let leads_back = inline_users(&ty)
                .iter()
                .any(|start| reaches(start, &name, &inline));
            if leads_back {
                let text = def.source.text_of(field.ty.span());
                return Err(def.source.error(
                    field.ty.span(),
                    format!(
                        "`{name}` holds itself: field `{field_name}` has type `{text}`, so a \
                         `{name}` would be infinitely large"
                    ),
                    format!("holds a `{name}` in place"),
                    "put the recursion behind a pointer: `Option<Box<T>>` instead of \
                     `Option<T>`, or `Vec<T>`",
                ));
            }
        }
    }
    Ok(())
}

/// The user types a field type holds in place, not behind `Vec` or `Box`.
fn inline_users(ty: &Ty) -> Vec<String> {
    match ty {
        Ty::User(name) => vec![name.clone()],
        Ty::Option(inner) | Ty::Array(inner, _) => inline_users(inner),
        Ty::Tuple(elems) => elems.iter().flat_map(inline_users).collect(),
        _ => Vec::new(),
    }
}

fn reaches(from: &str, to: &str, edges: &BTreeMap<String, BTreeSet<String>>) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.to_owned()];
    while let Some(next) = stack.pop() {
        if next == to {
            return true;
        }
        if seen.insert(next.clone()) {
            stack.extend(edges.get(&next).into_iter().flatten().cloned());
        }
    }
    false
}

/// Fields whose type is larger than rustc allows.
pub(crate) fn sizes(
    def: &Def<'_>,
    scope: Scope<'_>,
    shapes: &BTreeMap<String, Shape>,
) -> Result<(), CliError> {
    for (field_name, field) in def.fields() {
        let Ok(ty) = types::check(&field.ty, scope) else {
            continue;
        };
        if let Some(len) = too_long(&ty) {
            let text = def.source.text_of(field.ty.span());
            return Err(def.source.error(
                field.ty.span(),
                format!(
                    "field `{field_name}` has type `{text}`, whose length `{len}` does not fit \
                     in `usize` (at most {})",
                    u64::MAX
                ),
                "length too large",
                "make the array shorter, or use `Vec<T>` for data whose length is known only \
                 when the program runs",
            ));
        }
        let bytes = min_size(&ty, shapes, 0);
        if bytes > MAX_BYTES {
            let text = def.source.text_of(field.ty.span());
            return Err(def.source.error(
                field.ty.span(),
                format!(
                    "field `{field_name}` has type `{text}`, at least {bytes} bytes: more than \
                     rustc allows for a value (2^61 - 1 bytes)"
                ),
                "too large",
                "make the array shorter, or use `Vec<T>` for data whose length is known only \
                 when the program runs",
            ));
        }
    }
    Ok(())
}

/// A lower bound of a type's size in bytes (`depth` guards against recursion the recursion
/// check reports anyway).
fn min_size(ty: &Ty, shapes: &BTreeMap<String, Shape>, depth: usize) -> u128 {
    if depth > 64 {
        return 0;
    }
    let fields_size = |fields: &types::Fields| -> u128 {
        fields.types().iter().fold(0u128, |sum, t| {
            sum.saturating_add(min_size(t, shapes, depth + 1))
        })
    };
    match ty {
        Ty::Number(n) => {
            let bits: u128 = n.trim_start_matches(['u', 'i', 'f']).parse().unwrap_or(64);
            bits / 8
        }
        Ty::Bool => 1,
        Ty::Char => 4,
        Ty::String | Ty::Vec(_) => 24,
        Ty::Box(_) => 8,
        Ty::Option(inner) => min_size(inner, shapes, depth + 1),
        Ty::Array(inner, len) => {
            array_len(len)
                .unwrap_or(0)
                .saturating_mul(min_size(inner, shapes, depth + 1))
        }
        Ty::Tuple(elems) => elems.iter().fold(0u128, |sum, t| {
            sum.saturating_add(min_size(t, shapes, depth + 1))
        }),
        Ty::User(name) => match shapes.get(name) {
            Some(Shape::Struct(fields)) => fields_size(fields),
            Some(Shape::Enum(variants)) => variants
                .iter()
                .map(|(_, f)| fields_size(f))
                .max()
                .unwrap_or(0),
            None => 0,
        },
    }
}

/// Every type must be reachable from a role's type: the project warns about one that is not
/// (it is never constructed).
pub(crate) fn unused(
    defs: &[Def<'_>],
    roles: &[&str],
    shapes: &BTreeMap<String, Shape>,
) -> Result<(), CliError> {
    let mut used: BTreeSet<String> = BTreeSet::new();
    let mut stack: Vec<String> = roles.iter().map(|r| (*r).to_owned()).collect();
    while let Some(name) = stack.pop() {
        if !used.insert(name.clone()) {
            continue;
        }
        let fields: Vec<&types::Fields> = match shapes.get(&name) {
            Some(Shape::Struct(fields)) => vec![fields],
            Some(Shape::Enum(variants)) => variants.iter().map(|(_, f)| f).collect(),
            None => Vec::new(),
        };
        for ty in fields.iter().flat_map(|f| f.types()) {
            stack.extend(all_users(ty));
        }
    }
    let roles_text = roles
        .iter()
        .map(|r| format!("`{r}`"))
        .collect::<Vec<_>>()
        .join(", ");
    for def in defs {
        let name = def.name();
        if !used.contains(&name) {
            return Err(def.source.error(
                def.ident_span(),
                format!("the type `{name}` is not used by the messages ({roles_text})"),
                "not used",
                format!(
                    "remove it, or use it in a field of {roles_text}: the project would warn \
                     that `{name}` is never constructed"
                ),
            ));
        }
    }
    Ok(())
}

fn all_users(ty: &Ty) -> Vec<String> {
    match ty {
        Ty::User(name) => vec![name.clone()],
        Ty::Option(inner) | Ty::Array(inner, _) | Ty::Vec(inner) | Ty::Box(inner) => {
            all_users(inner)
        }
        Ty::Tuple(elems) => elems.iter().flat_map(all_users).collect(),
        _ => Vec::new(),
    }
}

/// An enum without variants that a value of `name` cannot do without: no value of `name` can
/// then be built. Types behind `Option` and `Vec` are not needed (`None`, empty).
pub(crate) fn empty_enum_needed(name: &str, shapes: &BTreeMap<String, Shape>) -> Option<String> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![name.to_owned()];
    while let Some(next) = stack.pop() {
        if !seen.insert(next.clone()) {
            continue;
        }
        match shapes.get(&next) {
            Some(Shape::Enum(variants)) if variants.is_empty() => return Some(next),
            Some(Shape::Struct(fields)) => {
                stack.extend(fields.types().into_iter().flat_map(needed_users));
            }
            Some(Shape::Enum(variants)) => {
                for (_, fields) in variants {
                    stack.extend(fields.types().into_iter().flat_map(needed_users));
                }
            }
            None => {}
        }
    }
    None
}

fn needed_users(ty: &Ty) -> Vec<String> {
    match ty {
        Ty::User(name) => vec![name.clone()],
        Ty::Box(inner) | Ty::Array(inner, _) => needed_users(inner),
        Ty::Tuple(elems) => elems.iter().flat_map(needed_users).collect(),
        _ => Vec::new(),
    }
}

/// The fields (`Type.field`, `Enum::Variant.0`) whose type leads back to their own type by way
/// of another one (`enum A { B(Box<B>) }` with `enum B { A(Box<A>), End }`): the derive needs
/// `#[mw(recursive)]` on them, or its size constants refer to themselves and rustc reports a
/// cycle. Direct recursion (`Box<Self>`) the derive sees by itself.
pub(crate) fn recursive_fields(defs: &[Def<'_>], known: &BTreeSet<String>) -> BTreeSet<String> {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut fields = Vec::new();
    for def in defs {
        let name = def.name();
        let scope = Scope {
            known,
            self_name: &name,
        };
        for (label, field) in def.fields() {
            let Ok(ty) = types::check(&field.ty, scope) else {
                continue;
            };
            let users = all_users(&ty);
            edges
                .entry(name.clone())
                .or_default()
                .extend(users.iter().cloned());
            fields.push((name.clone(), label, users));
        }
    }
    fields
        .into_iter()
        .filter(|(owner, _, users)| {
            users
                .iter()
                .any(|u| u != owner && reaches(u, owner, &edges))
        })
        .map(|(_, label, _)| label)
        .collect()
}
