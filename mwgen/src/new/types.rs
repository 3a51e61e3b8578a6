//! The field types `#[derive(Message)]` can send, checked on the user's definitions before
//! anything is written, and placeholder values of those types for the generated hooks.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{GenericArgument, PathArguments, Type};

/// What a field may hold, for the `help:` line of an unsupported type.
pub(crate) const SUPPORTED: &str = "a field can hold u8, u16, u32, u64, u128, usize, i8, i16, \
     i32, i64, i128, isize, f32, f64, bool, char, String, (), tuples of up to 12 of these, \
     Vec<T>, [T; N], Option<T>, Box<T>, and structs or enums defined in the same input";

const NUMBERS: [&str; 14] = [
    "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32",
    "f64",
];

/// The largest tuple with a `Message` impl.
const MAX_TUPLE: usize = 12;

/// A field type that `Message` supports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ty {
    Number(&'static str),
    Bool,
    Char,
    String,
    Vec(Box<Ty>),
    /// Element and length, as written.
    Array(Box<Ty>, String),
    Option(Box<Ty>),
    Box(Box<Ty>),
    /// `()` is the empty tuple.
    Tuple(Vec<Ty>),
    /// A struct or enum defined in the same input.
    User(String),
}

/// Why a type cannot be sent: the part of the type at fault and what to do.
#[derive(Debug)]
pub(crate) struct Unsupported {
    pub span: Span,
    pub reason: String,
}

impl Unsupported {
    fn new(span: Span, reason: impl Into<String>) -> Self {
        Unsupported {
            span,
            reason: reason.into(),
        }
    }
}

/// The user's types by name, and the name `Self` stands for where the type is written.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scope<'a> {
    pub known: &'a BTreeSet<String>,
    pub self_name: &'a str,
}

/// Reads a field's type, or says which part of it `Message` cannot send.
pub(crate) fn check(ty: &Type, scope: Scope<'_>) -> Result<Ty, Unsupported> {
    match ty {
        Type::Paren(inner) => check(&inner.elem, scope),
        Type::Group(inner) => check(&inner.elem, scope),
        Type::Tuple(tuple) => {
            if tuple.elems.len() > MAX_TUPLE {
                return Err(Unsupported::new(
                    ty.span(),
                    format!(
                        "a tuple of {} elements: `Message` is implemented for tuples of up to \
                         {MAX_TUPLE}",
                        tuple.elems.len()
                    ),
                ));
            }
            let elems = tuple
                .elems
                .iter()
                .map(|elem| check(elem, scope))
                .collect::<Result<_, _>>()?;
            Ok(Ty::Tuple(elems))
        }
        Type::Array(array) => {
            let elem = check(&array.elem, scope)?;
            // A whole number written out: an expression or a constant would run, or be
            // looked up, in the generated project, which cannot know it.
            // (Its size is checked with the definitions: `checks.rs`.)
            let len = match &array.len {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(len),
                    ..
                }) if len.suffix().is_empty() || len.suffix() == "usize" => {
                    len.base10_digits().to_owned()
                }
                other => {
                    return Err(Unsupported::new(
                        other.span(),
                        "an array length must be a whole number written out, like `[u8; 16]`: \
                         not an expression or a constant",
                    ));
                }
            };
            Ok(Ty::Array(Box::new(elem), len))
        }
        Type::Path(path) if path.qself.is_none() => check_path(&path.path, scope),
        Type::Reference(_) => Err(Unsupported::new(
            ty.span(),
            "a reference: messages own their data (use `String` for `&str`, `Vec<T>` for `&[T]`)",
        )),
        Type::Slice(_) => Err(Unsupported::new(
            ty.span(),
            "a slice has no size of its own: use `Vec<T>`",
        )),
        Type::Ptr(_) => Err(Unsupported::new(
            ty.span(),
            "a raw pointer cannot be sent to another process",
        )),
        Type::BareFn(_) => Err(Unsupported::new(
            ty.span(),
            "a function pointer cannot be sent to another process",
        )),
        Type::TraitObject(_) | Type::ImplTrait(_) => Err(Unsupported::new(
            ty.span(),
            "a trait object has no fixed shape to encode: use an enum of the possible types",
        )),
        _ => Err(Unsupported::new(ty.span(), "not a type `Message` can send")),
    }
}

fn check_path(path: &syn::Path, scope: Scope<'_>) -> Result<Ty, Unsupported> {
    let Some(last) = path.segments.last() else {
        return Err(Unsupported::new(path.span(), "not a type"));
    };
    let name = last.ident.to_string();
    if path.segments.len() > 1 {
        // `std::vec::Vec<T>` and the like: the standard types under their full path.
        let first = path.segments[0].ident.to_string();
        let standard = matches!(first.as_str(), "std" | "core" | "alloc")
            && matches!(name.as_str(), "String" | "Vec" | "Option" | "Box")
            && path
                .segments
                .iter()
                .take(path.segments.len() - 1)
                .all(|s| s.arguments.is_none());
        if !standard {
            return Err(Unsupported::new(
                path.span(),
                "not a type `Message` supports, and not defined in the input",
            ));
        }
    }
    let args = match &last.arguments {
        PathArguments::None => Vec::new(),
        PathArguments::AngleBracketed(args) => args.args.iter().collect(),
        PathArguments::Parenthesized(_) => {
            return Err(Unsupported::new(
                path.span(),
                "not a type `Message` can send",
            ));
        }
    };
    let one_type = |what: &str| -> Result<Ty, Unsupported> {
        match args.as_slice() {
            [GenericArgument::Type(inner)] => check(inner, scope),
            _ => Err(Unsupported::new(
                path.span(),
                format!("`{what}` takes one type: `{what}<T>`"),
            )),
        }
    };
    let no_args = |ty: Ty| -> Result<Ty, Unsupported> {
        if args.is_empty() {
            Ok(ty)
        } else {
            Err(Unsupported::new(
                path.span(),
                format!("`{name}` takes no generic arguments"),
            ))
        }
    };
    if let Some(number) = NUMBERS.iter().find(|n| **n == name) {
        return no_args(Ty::Number(number));
    }
    match name.as_str() {
        "bool" => no_args(Ty::Bool),
        "char" => no_args(Ty::Char),
        "String" => no_args(Ty::String),
        "Vec" => Ok(Ty::Vec(Box::new(one_type("Vec")?))),
        "Option" => Ok(Ty::Option(Box::new(one_type("Option")?))),
        "Box" => Ok(Ty::Box(Box::new(one_type("Box")?))),
        "str" => Err(Unsupported::new(
            path.span(),
            "`str` has no size of its own: use `String`",
        )),
        "Self" => no_args(Ty::User(scope.self_name.to_owned())),
        _ if scope.known.contains(&name) => {
            if args.is_empty() {
                Ok(Ty::User(name))
            } else {
                Err(Unsupported::new(
                    path.span(),
                    format!("`{name}` is not generic"),
                ))
            }
        }
        "HashMap" | "BTreeMap" => Err(Unsupported::new(
            path.span(),
            format!("`{name}` is not a `Message` type: send its entries as `Vec<(K, V)>`"),
        )),
        "HashSet" | "BTreeSet" | "VecDeque" => Err(Unsupported::new(
            path.span(),
            format!("`{name}` is not a `Message` type: send its elements as `Vec<T>`"),
        )),
        _ => Err(Unsupported::new(
            path.span(),
            format!(
                "`{name}` is not a type `Message` supports, and no struct or enum of that name \
                 is defined in the input"
            ),
        )),
    }
}

impl Ty {
    /// Whether values are `Copy`, given which user types derive it.
    pub(crate) fn is_copy(&self, copy_types: &BTreeSet<String>) -> bool {
        match self {
            Ty::Number(_) | Ty::Bool | Ty::Char => true,
            Ty::String | Ty::Vec(_) | Ty::Box(_) => false,
            Ty::Option(inner) | Ty::Array(inner, _) => inner.is_copy(copy_types),
            Ty::Tuple(elems) => elems.iter().all(|e| e.is_copy(copy_types)),
            Ty::User(name) => copy_types.contains(name),
        }
    }
}

/// A struct's or variant's fields; a field's type is `None` when `#[mw(skip)]` leaves it out.
#[derive(Debug, Clone)]
pub(crate) enum Fields {
    Named(Vec<(String, Option<Ty>)>),
    Unnamed(Vec<Option<Ty>>),
    Unit,
}

impl Fields {
    pub(crate) fn types(&self) -> Vec<&Ty> {
        match self {
            Fields::Named(fields) => fields.iter().filter_map(|(_, t)| t.as_ref()).collect(),
            Fields::Unnamed(fields) => fields.iter().filter_map(Option::as_ref).collect(),
            Fields::Unit => Vec::new(),
        }
    }
}

/// A user type, as far as building a value of it goes.
#[derive(Debug, Clone)]
pub(crate) enum Shape {
    Struct(Fields),
    /// Variants by name, in declaration order.
    Enum(Vec<(String, Fields)>),
}

/// Builds placeholder values of the user's types, as Rust expressions.
#[derive(Debug)]
pub(crate) struct Values<'a> {
    shapes: &'a BTreeMap<String, Shape>,
    copy_types: &'a BTreeSet<String>,
    /// For each type that has a finite value, the variant to build (0 for a struct).
    plan: BTreeMap<&'a str, usize>,
    /// User types the expressions written so far name (to import them).
    pub used: BTreeSet<String>,
}

/// rustfmt's widths (`use_small_heuristics = "Default"`): a struct literal whose fields take more
/// than 18 columns, or a call whose arguments take more than 60, gets a line per field.
const STRUCT_LIT_WIDTH: usize = 18;
const FN_CALL_WIDTH: usize = 60;
const MAX_WIDTH: usize = 100;

impl<'a> Values<'a> {
    pub(crate) fn new(
        shapes: &'a BTreeMap<String, Shape>,
        copy_types: &'a BTreeSet<String>,
    ) -> Self {
        Values {
            shapes,
            copy_types,
            plan: plan(shapes),
            used: BTreeSet::new(),
        }
    }

    /// Whether a value of the type can be built without recursing forever: some variant, or
    /// the fields, lead to values that end (`Option` and `Vec` always can).
    pub(crate) fn finite(&self, name: &str) -> bool {
        self.plan.contains_key(name)
    }

    pub(crate) fn is_copy(&self, ty: &Ty) -> bool {
        ty.is_copy(self.copy_types)
    }

    /// The empty value of a type: zeros, empty collections, `None`, the planned variant.
    pub(crate) fn zero(&mut self, ty: &Ty, indent: usize) -> String {
        match ty {
            Ty::Number(n) if n.starts_with('f') => "0.0".into(),
            Ty::Number(_) => "0".into(),
            Ty::Bool => "false".into(),
            Ty::Char => "'\\0'".into(),
            Ty::String => "String::new()".into(),
            Ty::Vec(_) => "Vec::new()".into(),
            Ty::Option(_) => "None".into(),
            Ty::Box(inner) => format!("Box::new({})", self.zero(inner, indent)),
            Ty::Array(elem, len) => {
                let value = self.zero(elem, indent);
                if self.is_copy(elem) {
                    format!("[{value}; {len}]")
                } else {
                    format!("std::array::from_fn(|_| {value})")
                }
            }
            Ty::Tuple(elems) => {
                let values: Vec<_> = elems.iter().map(|e| self.zero(e, indent)).collect();
                match values.as_slice() {
                    [one] => format!("({one},)"),
                    _ => format!("({})", values.join(", ")),
                }
            }
            Ty::User(name) => self.build(name, indent, None),
        }
    }

    /// A value of a user type. With `number`, the first number field of a struct gets that
    /// expression (cast to the field's type) instead of zero.
    pub(crate) fn build(&mut self, name: &str, indent: usize, number: Option<&str>) -> String {
        self.used.insert(name.to_owned());
        let Some(shape) = self.shapes.get(name) else {
            return format!("{name}::default()");
        };
        let (path, fields) = match shape {
            Shape::Struct(fields) => (name.to_owned(), fields),
            Shape::Enum(variants) => {
                let index = self.plan.get(name).copied().unwrap_or(0);
                match variants.get(index) {
                    Some((variant, fields)) => (format!("{name}::{variant}"), fields),
                    None => return format!("{name}::default()"),
                }
            }
        };
        let mut number = number;
        let mut value = |this: &mut Self, ty: &Option<Ty>| -> String {
            match (ty, number) {
                (Some(Ty::Number(n)), Some(expr)) => {
                    number = None;
                    if *n == "usize" {
                        expr.to_owned()
                    } else {
                        format!("{expr} as {n}")
                    }
                }
                (Some(ty), _) => this.zero(ty, indent + 4),
                (None, _) => "Default::default()".into(),
            }
        };
        match fields {
            Fields::Unit => path,
            Fields::Named(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(field, ty)| format!("{field}: {}", value(self, ty)))
                    .collect();
                layout(&path, &parts, indent, ('{', '}'))
            }
            Fields::Unnamed(fields) => {
                let parts: Vec<String> = fields.iter().map(|ty| value(self, ty)).collect();
                layout(&path, &parts, indent, ('(', ')'))
            }
        }
    }
}

/// `Path { a, b }` / `Path(a, b)` on one line when short, else one part per line, as rustfmt
/// lays them out.
pub(crate) fn layout(
    path: &str,
    parts: &[String],
    indent: usize,
    (open, close): (char, char),
) -> String {
    let braces = open == '{';
    let inner = parts.join(", ");
    let one_line = if braces {
        format!("{path} {{ {inner} }}")
    } else {
        format!("{path}({inner})")
    };
    let limit = if braces {
        STRUCT_LIT_WIDTH
    } else {
        FN_CALL_WIDTH
    };
    if inner.len() <= limit && indent + one_line.len() <= MAX_WIDTH && !inner.contains('\n') {
        return one_line;
    }
    let inner = " ".repeat(indent + 4);
    let outer = " ".repeat(indent);
    let mut text = if braces {
        format!("{path} {open}\n")
    } else {
        format!("{path}{open}\n")
    };
    for part in parts {
        text.push_str(&format!("{inner}{part},\n"));
    }
    text.push_str(&format!("{outer}{close}"));
    text
}

/// For each type with a finite value, which variant to build: rounds of a fixpoint where a type
/// joins once its fields only need types that joined in earlier rounds, so that building the
/// chosen variants always ends.
fn plan(shapes: &BTreeMap<String, Shape>) -> BTreeMap<&str, usize> {
    let mut plan: BTreeMap<&str, usize> = BTreeMap::new();
    loop {
        let mut joined = Vec::new();
        for (name, shape) in shapes {
            if plan.contains_key(name.as_str()) {
                continue;
            }
            let ready = |fields: &Fields| fields.types().iter().all(|ty| finite_ty(ty, &plan));
            let choice = match shape {
                Shape::Struct(fields) => ready(fields).then_some(0),
                Shape::Enum(variants) => variants.iter().position(|(_, fields)| ready(fields)),
            };
            if let Some(choice) = choice {
                joined.push((name.as_str(), choice));
            }
        }
        if joined.is_empty() {
            return plan;
        }
        plan.extend(joined);
    }
}

fn finite_ty(ty: &Ty, plan: &BTreeMap<&str, usize>) -> bool {
    match ty {
        Ty::Number(_) | Ty::Bool | Ty::Char | Ty::String | Ty::Vec(_) | Ty::Option(_) => true,
        Ty::Box(inner) | Ty::Array(inner, _) => finite_ty(inner, plan),
        Ty::Tuple(elems) => elems.iter().all(|e| finite_ty(e, plan)),
        Ty::User(name) => plan.contains_key(name.as_str()),
    }
}

/// Whether a type name is one of the primitive types.
pub(crate) fn is_primitive(name: &str) -> bool {
    NUMBERS.contains(&name) || matches!(name, "bool" | "char" | "str")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    fn read(text: &str, names: &[&str]) -> Result<Ty, String> {
        let ty: Type = syn::parse_str(text).map_err(|e| e.to_string())?;
        let known = known(names);
        let scope = Scope {
            known: &known,
            self_name: "Me",
        };
        check(&ty, scope).map_err(|e| e.reason)
    }

    #[test]
    fn supported_types_nest() {
        let ty = read("Vec<Option<[f64; 3]>>", &[]).unwrap();
        assert_eq!(
            ty,
            Ty::Vec(Box::new(Ty::Option(Box::new(Ty::Array(
                Box::new(Ty::Number("f64")),
                "3".into()
            )))))
        );
        assert_eq!(
            read("(u8, std::string::String, ())", &[]).unwrap(),
            Ty::Tuple(vec![Ty::Number("u8"), Ty::String, Ty::Tuple(vec![])])
        );
        assert_eq!(
            read("Box<Point>", &["Point"]).unwrap(),
            Ty::Box(Box::new(Ty::User("Point".into())))
        );
        assert_eq!(
            read("Box<Self>", &[]).unwrap(),
            Ty::Box(Box::new(Ty::User("Me".into())))
        );
    }

    #[test]
    fn unsupported_types_say_why() {
        assert!(read("&str", &[]).unwrap_err().contains("reference"));
        assert!(
            read("Vec<HashMap<u32, f64>>", &[])
                .unwrap_err()
                .contains("Vec<(K, V)>")
        );
        assert!(
            read("Point", &[])
                .unwrap_err()
                .contains("no struct or enum")
        );
        assert!(read("Vec<u8, u8>", &[]).unwrap_err().contains("one type"));
        assert!(
            read("Option<[str; 2]>", &[])
                .unwrap_err()
                .contains("String")
        );
        for len in ["{ std::process::abort(); 3 }", "N", "2 + 2", "3u8", "-1"] {
            let err = read(&format!("[u8; {len}]"), &[]).unwrap_err();
            assert!(err.contains("whole number written out"), "{len}: {err}");
        }
        assert_eq!(
            read("[u8; 0x10]", &[]).unwrap(),
            Ty::Array(Box::new(Ty::Number("u8")), "16".into())
        );
        let wide = format!("({})", vec!["u8"; 13].join(", "));
        assert!(read(&wide, &[]).unwrap_err().contains("up to 12"));
        assert!(read("other::String", &[]).is_err());
    }

    fn shapes(list: &[(&str, Shape)]) -> BTreeMap<String, Shape> {
        list.iter()
            .map(|(n, s)| (n.to_string(), s.clone()))
            .collect()
    }

    #[test]
    fn values_end_even_for_recursive_types() {
        let expr = Ty::User("Expr".into());
        let shapes = shapes(&[
            (
                "Expr",
                Shape::Enum(vec![
                    (
                        "Add".into(),
                        Fields::Unnamed(vec![
                            Some(Ty::Box(Box::new(expr.clone()))),
                            Some(Ty::Box(Box::new(expr.clone()))),
                        ]),
                    ),
                    ("Num".into(), Fields::Unnamed(vec![Some(Ty::Number("f64"))])),
                ]),
            ),
            (
                "Loop",
                Shape::Struct(Fields::Named(vec![(
                    "next".into(),
                    Some(Ty::Box(Box::new(Ty::User("Loop".into())))),
                )])),
            ),
        ]);
        let copy = BTreeSet::new();
        let mut values = Values::new(&shapes, &copy);
        assert_eq!(values.build("Expr", 0, None), "Expr::Num(0.0)");
        assert!(values.finite("Expr"));
        assert!(!values.finite("Loop"));
    }

    #[test]
    fn long_literals_break_into_lines() {
        let shapes = shapes(&[(
            "Segment",
            Shape::Struct(Fields::Named(vec![
                ("first".into(), Some(Ty::Number("u32"))),
                (
                    "points".into(),
                    Some(Ty::Vec(Box::new(Ty::Array(
                        Box::new(Ty::Number("f64")),
                        "2".into(),
                    )))),
                ),
                ("label".into(), Some(Ty::String)),
                (
                    "names".into(),
                    Some(Ty::Array(Box::new(Ty::String), "2".into())),
                ),
            ])),
        )]);
        let copy = BTreeSet::new();
        let mut values = Values::new(&shapes, &copy);
        assert_eq!(
            values.build("Segment", 4, Some("index")),
            "Segment {\n        first: index as u32,\n        points: Vec::new(),\n        \
             label: String::new(),\n        names: std::array::from_fn(|_| String::new()),\n    }"
        );
    }
}
