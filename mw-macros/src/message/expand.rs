//! The `Message` impl written for a struct or enum.

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};
use syn::{Ident, Member};

use super::ast::{Container, Data, Field, Style, Variant};
use super::bounds::with_bounds;
use crate::runtime_path::RuntimePath;

/// The impl of `Message` for `cont`.
pub(crate) fn impl_message(cont: &Container<'_>, krate: &RuntimePath) -> TokenStream {
    let private = krate.private();
    let ident = cont.ident;
    let generics = with_bounds(cont, krate);
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let body = match &cont.data {
        Data::Struct(style, fields) => struct_body(cont, *style, fields, &private),
        Data::Enum(variants) => enum_body(cont, variants, &private),
    };
    quote! {
        #[automatically_derived]
        impl #impl_generics #private::Message for #ident #ty_generics #where_clause {
            #body
        }
    }
}

/// An impl that compiles whatever the input, emitted beside the errors so that they are not
/// followed by unrelated "`X` does not implement `Message`" ones.
pub(crate) fn fallback(input: &syn::DeriveInput, krate: Option<&RuntimePath>) -> TokenStream {
    let Some(krate) = krate else {
        return TokenStream::new();
    };
    let private = krate.private();
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        #[automatically_derived]
        impl #impl_generics #private::Message for #ident #ty_generics #where_clause {
            const MIN_ENCODED_LEN: ::core::primitive::usize = 0;
            fn encoded_len(&self) -> ::core::primitive::usize {
                ::core::unreachable!()
            }
            fn encode(&self, _: &mut #private::Vec<::core::primitive::u8>) {
                ::core::unreachable!()
            }
            fn decode(
                _: &mut #private::Reader<'_>,
            ) -> ::core::result::Result<Self, #private::DecodeError> {
                ::core::unreachable!()
            }
        }
    }
}

/// The fields that travel.
fn sent<'f, 'a>(fields: &'f [Field<'a>]) -> impl Iterator<Item = &'f Field<'a>> + Clone {
    fields.iter().filter(|field| !field.skip)
}

/// `MIN_ENCODED_LEN` of some fields: the sum of theirs.
fn min_len(fields: &[Field<'_>], private: &TokenStream) -> TokenStream {
    let terms = sent(fields).filter(|f| !f.recursive).map(|field| {
        let ty = field.ty;
        quote!(<#ty as #private::Message>::MIN_ENCODED_LEN)
    });
    quote!(0 #(+ #terms)*)
}

/// `FIXED_ENCODED_LEN` of some fields: the sum of theirs when all have one.
fn fixed_len(fields: &[Field<'_>], private: &TokenStream) -> TokenStream {
    if sent(fields).any(|f| f.recursive) {
        return quote!(::core::option::Option::None);
    }
    let terms = sent(fields).map(|field| {
        let ty = field.ty;
        quote!(<#ty as #private::Message>::FIXED_ENCODED_LEN)
    });
    quote!(#private::fixed_sum(&[#(#terms),*]))
}

/// The name of a field in decode errors: `x`, `0`, or `Variant.x` in an enum.
fn field_name(variant: Option<&Ident>, member: &Member) -> String {
    let member = match member {
        Member::Named(ident) => ident.to_string(),
        Member::Unnamed(index) => index.index.to_string(),
    };
    match variant {
        Some(variant) => format!("{variant}.{member}"),
        None => member,
    }
}

/// The expressions that decode `fields` in order, as `member: expr` (or `expr` for tuples).
fn decode_fields(
    type_name: &str,
    variant: Option<&Ident>,
    style: Style,
    fields: &[Field<'_>],
    private: &TokenStream,
) -> TokenStream {
    let values = fields.iter().map(|field| {
        let ty = field.ty;
        let value = if field.skip {
            quote!(::core::default::Default::default())
        } else {
            let name = field_name(variant, &field.member);
            quote! {
                <#ty as #private::Message>::decode(input)
                    .map_err(|e| e.in_field(#type_name, #name))?
            }
        };
        match &field.member {
            Member::Named(ident) => quote!(#ident: #value),
            Member::Unnamed(_) => value,
        }
    });
    match style {
        Style::Named => quote!({ #(#values,)* }),
        Style::Tuple => quote!(( #(#values,)* )),
        Style::Unit => quote!(),
    }
}

fn struct_body(
    cont: &Container<'_>,
    style: Style,
    fields: &[Field<'_>],
    private: &TokenStream,
) -> TokenStream {
    let type_name = cont.ident.to_string();
    let min = min_len(fields, private);
    let fixed = fixed_len(fields, private);
    let members: Vec<&Member> = sent(fields).map(|f| &f.member).collect();
    let decoded = decode_fields(&type_name, None, style, fields, private);
    quote! {
        const MIN_ENCODED_LEN: ::core::primitive::usize = #min;
        const FIXED_ENCODED_LEN: ::core::option::Option<::core::primitive::usize> = #fixed;

        #[inline]
        fn encoded_len(&self) -> ::core::primitive::usize {
            if let ::core::option::Option::Some(len) =
                <Self as #private::Message>::FIXED_ENCODED_LEN
            {
                return len;
            }
            0 #(+ #private::Message::encoded_len(&self.#members))*
        }

        #[inline]
        fn encode(&self, out: &mut #private::Vec<::core::primitive::u8>) {
            #(#private::Message::encode(&self.#members, out);)*
        }

        #[inline]
        fn decode(
            input: &mut #private::Reader<'_>,
        ) -> ::core::result::Result<Self, #private::DecodeError> {
            ::core::result::Result::Ok(Self #decoded)
        }

        fn encode_slice(items: &[Self], out: &mut #private::Vec<::core::primitive::u8>) {
            // One reservation for the whole slice (O(1) for fixed-size structs), then the fields.
            out.reserve(<Self as #private::Message>::slice_encoded_len(items));
            for item in items {
                #(#private::Message::encode(&item.#members, out);)*
            }
        }

        fn decode_vec(
            input: &mut #private::Reader<'_>,
            len: ::core::primitive::usize,
        ) -> ::core::result::Result<#private::Vec<Self>, #private::DecodeError> {
            match <Self as #private::Message>::FIXED_ENCODED_LEN {
                // Made only of fixed-size fields: one length check for the whole run.
                ::core::option::Option::Some(fixed) => {
                    #private::decode_fixed_vec(input, len, fixed, #type_name)
                }
                ::core::option::Option::None => {
                    let mut items: #private::Vec<Self> = input.allocate_vec(len, #type_name)?;
                    for index in 0..len {
                        items.push(
                            <Self as #private::Message>::decode(input)
                                .map_err(|e| e.at_index(index))?,
                        );
                    }
                    ::core::result::Result::Ok(items)
                }
            }
        }
    }
}

/// `Self::Variant { a: __field0, b: _ }` (skipped fields ignored), and the bindings.
fn variant_pattern(variant: &Variant<'_>) -> (TokenStream, Vec<Ident>) {
    let ident = variant.ident;
    let mut bindings = Vec::new();
    let parts: Vec<TokenStream> = variant
        .fields
        .iter()
        .enumerate()
        .map(|(i, field)| {
            let binding = if field.skip {
                quote!(_)
            } else {
                let binding = format_ident!("__field{}", i);
                bindings.push(binding.clone());
                quote!(#binding)
            };
            match &field.member {
                Member::Named(name) => quote!(#name: #binding),
                Member::Unnamed(_) => binding,
            }
        })
        .collect();
    let pattern = match variant.style {
        Style::Named => quote!(Self::#ident { #(#parts),* }),
        Style::Tuple => quote!(Self::#ident( #(#parts),* )),
        Style::Unit => quote!(Self::#ident),
    };
    (pattern, bindings)
}

fn enum_body(cont: &Container<'_>, variants: &[Variant<'_>], private: &TokenStream) -> TokenStream {
    let type_name = cont.ident.to_string();
    let variant_mins = variants.iter().map(|v| min_len(&v.fields, private));
    let variant_fixed = variants.iter().map(|v| fixed_len(&v.fields, private));

    let mut len_arms = Vec::new();
    let mut encode_arms = Vec::new();
    let mut decode_arms = Vec::new();
    for (index, variant) in variants.iter().enumerate() {
        let tag = Literal::u64_suffixed(index as u64);
        let (pattern, bindings) = variant_pattern(variant);
        len_arms.push(quote! {
            #pattern => #private::varint_len(#tag)
                #(+ #private::Message::encoded_len(#bindings))*
        });
        encode_arms.push(quote! {
            #pattern => {
                #private::write_varint(out, #tag);
                #(#private::Message::encode(#bindings, out);)*
            }
        });
        let ident = variant.ident;
        let decoded = decode_fields(
            &type_name,
            Some(ident),
            variant.style,
            &variant.fields,
            private,
        );
        decode_arms.push(quote! {
            #tag => ::core::result::Result::Ok(Self::#ident #decoded)
        });
    }
    // `match *self {}` for an enum with no variants.
    let scrutinee = if variants.is_empty() {
        quote!(*self)
    } else {
        quote!(self)
    };
    quote! {
        const MIN_ENCODED_LEN: ::core::primitive::usize =
            #private::enum_min(&[#(#variant_mins),*]);
        const FIXED_ENCODED_LEN: ::core::option::Option<::core::primitive::usize> =
            #private::enum_fixed(&[#(#variant_fixed),*]);

        #[inline]
        fn encoded_len(&self) -> ::core::primitive::usize {
            if let ::core::option::Option::Some(len) =
                <Self as #private::Message>::FIXED_ENCODED_LEN
            {
                return len;
            }
            match #scrutinee {
                #(#len_arms,)*
            }
        }

        fn encode(&self, out: &mut #private::Vec<::core::primitive::u8>) {
            match #scrutinee {
                #(#encode_arms)*
            }
        }

        fn decode(
            input: &mut #private::Reader<'_>,
        ) -> ::core::result::Result<Self, #private::DecodeError> {
            let start = input.position();
            match input.read_varint(#type_name)? {
                #(#decode_arms,)*
                tag => ::core::result::Result::Err(#private::DecodeError::new(
                    #private::DecodeErrorKind::UnknownVariant(tag),
                    #type_name,
                    start,
                )),
            }
        }
    }
}
