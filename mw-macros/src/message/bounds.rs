//! The `where` clause of the derived impl: `T: Message` for each type parameter that a sent
//! field uses, `Field: Default` for skipped fields whose type uses one.

use std::collections::BTreeSet;

use syn::visit::Visit;
use syn::{Generics, Ident, WherePredicate, parse_quote};

use super::ast::Container;
use crate::runtime_path::RuntimePath;

/// The container's generics with the bounds the impl needs added to its `where` clause.
pub(crate) fn with_bounds(cont: &Container<'_>, krate: &RuntimePath) -> Generics {
    let mut generics = cont.generics.clone();
    let params: BTreeSet<&Ident> = cont.generics.type_params().map(|p| &p.ident).collect();
    let predicates: Vec<WherePredicate> = match &cont.attrs.bound {
        Some(bound) => bound.clone(),
        None if params.is_empty() => Vec::new(),
        None => inferred(cont, &params, krate),
    };
    generics.make_where_clause().predicates.extend(predicates);
    generics
}

fn inferred(
    cont: &Container<'_>,
    params: &BTreeSet<&Ident>,
    krate: &RuntimePath,
) -> Vec<WherePredicate> {
    let private = krate.private();
    let mut used = BTreeSet::new();
    let mut predicates = Vec::new();
    for field in cont.all_fields() {
        let mut uses = Uses {
            params,
            found: BTreeSet::new(),
            projection: false,
        };
        uses.visit_type(field.ty);
        if uses.found.is_empty() && !uses.projection {
            continue;
        }
        let ty = field.ty;
        if field.skip {
            predicates.push(parse_quote!(#ty: ::core::default::Default));
        } else {
            // `T::Item` or `<T as Trait>::Out`: bound the field's type itself.
            if uses.projection {
                predicates.push(parse_quote!(#ty: #private::Message));
            }
            used.extend(uses.found);
        }
    }
    // In declaration order, for stable expansions.
    let bounds = cont
        .generics
        .type_params()
        .filter(|param| used.contains(&param.ident))
        .map(|param| {
            let ident = &param.ident;
            parse_quote!(#ident: #private::Message)
        });
    bounds.chain(predicates).collect()
}

/// Finds the type parameters a type mentions.
struct Uses<'p, 'a> {
    params: &'p BTreeSet<&'a Ident>,
    found: BTreeSet<Ident>,
    /// Mentions a parameter's associated type (`T::Item`, `<T as Trait>::Out`).
    projection: bool,
}

impl<'ast> Visit<'ast> for Uses<'_, '_> {
    fn visit_type_path(&mut self, ty: &'ast syn::TypePath) {
        // `<T as Trait>::Out`: a projection; `T` itself needs no bound.
        if let Some(qself) = &ty.qself {
            let mut inner = Uses {
                params: self.params,
                found: BTreeSet::new(),
                projection: false,
            };
            inner.visit_type(&qself.ty);
            if !inner.found.is_empty() || inner.projection {
                self.projection = true;
            }
            for segment in &ty.path.segments {
                self.visit_path_arguments(&segment.arguments);
            }
            return;
        }
        if let Some(first) = ty.path.segments.first()
            && ty.path.leading_colon.is_none()
            && self.params.contains(&first.ident)
        {
            if ty.path.segments.len() > 1 {
                // `T::Item`: likewise.
                self.projection = true;
            } else {
                self.found.insert(first.ident.clone());
            }
        }
        syn::visit::visit_type_path(self, ty);
    }

    // Macros in type position are opaque; nothing to learn from them.
    fn visit_type_macro(&mut self, _: &'ast syn::TypeMacro) {}
}
