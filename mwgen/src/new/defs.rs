//! The message types of a new project: read from `--in`/`--out`/`--shared` definitions or a
//! `--structs` file, checked, and rewritten for `src/messages.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use proc_macro2::Span;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Item, Meta, Token};

use super::checks::{self, Def as Checked};
use super::layout;
use super::snippet::Source;
use super::types::{self, Fields, Scope, Shape, Ty};
use crate::CliError;

/// The derives every message type gets (others the user asked for are kept after them).
const DERIVES: [&str; 4] = ["Message", "Debug", "Clone", "PartialEq"];

/// Names a message type may not take: the generated files import the runtime's prelude and
/// use the standard types by these names.
pub(crate) const RESERVED: [&str; 22] = [
    "Master",
    "Worker",
    "Work",
    "Iteration",
    "TaskId",
    "Flow",
    "Setup",
    "WorkerSetup",
    "Message",
    "RunArgs",
    "BackendChoice",
    "Protocol",
    "Cli",
    "Parser",
    "String",
    "Vec",
    "Option",
    "Box",
    "Some",
    "None",
    "Ok",
    "Err",
];

/// The three roles a message type plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Task,
    Result,
    Shared,
}

impl Role {
    const ALL: [Role; 3] = [Role::Task, Role::Result, Role::Shared];

    fn marker(self) -> &'static str {
        match self {
            Role::Task => "task",
            Role::Result => "result",
            Role::Shared => "shared",
        }
    }

    /// The type name that plays the role when no type is marked.
    fn default_name(self) -> &'static str {
        match self {
            Role::Task => "Task",
            Role::Result => "Result",
            Role::Shared => "Shared",
        }
    }

    fn flag(self) -> &'static str {
        match self {
            Role::Task => "--in",
            Role::Result => "--out",
            Role::Shared => "--shared",
        }
    }
}

/// Where the message types come from.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Input<'a> {
    /// One definition per role (`--in`, `--out`, `--shared`, or a template's defaults): the
    /// first struct or enum of each plays the role, any others are helpers it uses.
    Defs {
        task: &'a str,
        result: &'a str,
        shared: Option<&'a str>,
    },
    /// A Rust file whose types are marked `#[mw(task)]`, `#[mw(result)]`, `#[mw(shared)]` (or
    /// named `Task`, `Result`, `Shared`).
    File { path: &'a Path, text: &'a str },
}

/// The checked message types of a project.
#[derive(Debug)]
pub(crate) struct Messages {
    /// The items of `src/messages.rs`, in order.
    pub items: Vec<Item>,
    pub task: String,
    pub result: String,
    pub shared: Option<String>,
    /// Every user type, to build values of.
    pub shapes: BTreeMap<String, Shape>,
    /// The user types that derive `Copy`.
    pub copy_types: BTreeSet<String>,
}

impl Messages {
    /// The items as Rust, one blank line between two.
    pub(crate) fn text(&self) -> String {
        let items: Vec<String> = self
            .items
            .iter()
            .map(|item| {
                let file = syn::File {
                    shebang: None,
                    attrs: Vec::new(),
                    items: vec![item.clone()],
                };
                let text = prettyplease::unparse(&file);
                layout::item(text.trim_end())
            })
            .collect();
        items.join("\n\n")
    }
}

/// A struct or enum of the input, with where it came from.
struct Def {
    source: usize,
    name: String,
    span: Span,
}

/// A parsed input: the role its first type plays (for a definition), and its items.
type Parsed = (Option<Role>, syn::File);

/// Reads, checks and rewrites the message types.
///
/// # Errors
/// Text that is not Rust (with a caret at the place), a type that is not a struct or enum, a
/// name defined twice or reserved, generics, a field type `Message` cannot send, a role with no
/// type, or a type that has no finite value.
pub(crate) fn read(input: Input<'_>) -> Result<Messages, CliError> {
    let mut sources = Vec::new();
    let mut files: Vec<Parsed> = Vec::new();
    match input {
        Input::Defs {
            task,
            result,
            shared,
        } => {
            for (role, text) in [
                (Role::Task, Some(task)),
                (Role::Result, Some(result)),
                (Role::Shared, shared),
            ] {
                if let Some(text) = text {
                    let source = Source::definition(role.flag(), text);
                    files.push((Some(role), parse(&source)?));
                    sources.push(source);
                }
            }
        }
        Input::File { path, text } => {
            let source = Source::file(path, text);
            files.push((None, parse(&source)?));
            sources.push(source);
        }
    }

    let defs = definitions(&files, &sources)?;
    let known: BTreeSet<String> = defs.iter().map(|d| d.name.clone()).collect();
    let checked: Vec<Checked<'_>> = files
        .iter()
        .zip(&sources)
        .flat_map(|((_, file), source)| {
            file.items
                .iter()
                .filter(|item| item_name(item).is_some())
                .map(move |item| Checked { item, source })
        })
        .collect();
    for def in &checked {
        checks::duplicate_members(def)?;
        checks::attributes(def)?;
    }
    let shapes = shapes(&files, &sources, &known)?;
    checks::recursion(&checked, &known)?;
    // What each type derives: the message derives, and the standard ones it asks for.
    let derived: BTreeMap<String, BTreeSet<String>> = checked
        .iter()
        .filter_map(|def| {
            let mut names = checks::derive_names(item_attrs(def.item));
            names.extend(DERIVES.iter().map(|d| (*d).to_owned()));
            Some((item_name(def.item)?, names))
        })
        .collect();
    for def in &checked {
        let Some(name) = item_name(def.item) else {
            continue;
        };
        let scope = Scope {
            known: &known,
            self_name: &name,
        };
        checks::derives(def, scope, &derived)?;
        checks::sizes(def, scope, &shapes)?;
    }
    let [task, result, shared] = roles(&files, &sources, &known)?;
    let (Some(task), Some(result)) = (task, result) else {
        return Err(CliError::usage(
            "no task or result type",
            "give both `--in` and `--out`",
        ));
    };
    // Helper types nobody uses would make the project warn; a file with code of its own may
    // use them there.
    let only_types = files
        .iter()
        .flat_map(|(_, f)| &f.items)
        .all(|item| matches!(item, Item::Struct(_) | Item::Enum(_) | Item::Use(_)));
    if only_types {
        let roles: Vec<&str> = [Some(&task), Some(&result), shared.as_ref()]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect();
        checks::unused(&checked, &roles, &shapes)?;
    }

    // Every role needs a value the generated hooks can build.
    let copy_types: BTreeSet<String> = derived
        .iter()
        .filter(|(_, names)| names.contains("Copy"))
        .map(|(name, _)| name.clone())
        .collect();
    let values = types::Values::new(&shapes, &copy_types);
    for name in [Some(&task), Some(&result), shared.as_ref()]
        .into_iter()
        .flatten()
    {
        if let Some(empty) = checks::empty_enum_needed(name, &shapes) {
            let def = defs.iter().find(|d| d.name == empty);
            let (source, span) = match def {
                Some(def) => (&sources[def.source], def.span),
                None => (&sources[0], Span::call_site()),
            };
            let through = if &empty == name {
                String::new()
            } else {
                format!(", and a `{name}` needs one")
            };
            return Err(source.error(
                span,
                format!(
                    "the enum `{empty}` has no variants, so no value of it can be built{through}"
                ),
                "no variants",
                format!(
                    "add a variant, e.g. `enum {empty} {{ Empty }}`: the generated hooks build \
                     a value of the task, result and shared types"
                ),
            ));
        }
        if !values.finite(name) {
            let def = defs.iter().find(|d| &d.name == name);
            let (source, span) = match def {
                Some(def) => (&sources[def.source], def.span),
                None => (&sources[0], Span::call_site()),
            };
            return Err(source.error(
                span,
                format!("a value of `{name}` never ends: every way to build one holds another"),
                "no finite value",
                "make the recursion optional, e.g. `Option<Box<T>>` or `Vec<T>` instead of \
                 `Box<T>`, or add a variant without it",
            ));
        }
    }

    let recursive = checks::recursive_fields(&checked, &known);
    let items = files
        .iter()
        .flat_map(|(_, file)| file.items.iter().cloned())
        .filter_map(|item| rewrite(item, &recursive))
        .collect();
    Ok(Messages {
        items,
        task,
        result,
        shared,
        shapes,
        copy_types,
    })
}

/// Every struct and enum of the inputs: no name twice, none reserved, none generic; a
/// definition holds nothing else.
fn definitions(files: &[Parsed], sources: &[Source]) -> Result<Vec<Def>, CliError> {
    let mut defs: Vec<Def> = Vec::new();
    for (index, (role, file)) in files.iter().enumerate() {
        let source = &sources[index];
        if role.is_some() && file.items.is_empty() {
            return Err(CliError::usage(
                format!(
                    "the `{}` definition holds no struct or enum",
                    source.label()
                ),
                example_help(source.label()),
            ));
        }
        for item in &file.items {
            let (ident, generics) = match item {
                Item::Struct(s) => (&s.ident, &s.generics),
                Item::Enum(e) => (&e.ident, &e.generics),
                Item::Union(u) => {
                    return Err(source.error(
                        u.union_token.span(),
                        "a union cannot be a message",
                        "`Message` can only be derived for structs and enums",
                        "use a struct or an enum",
                    ));
                }
                _ if role.is_some() => {
                    return Err(source.error(
                        item.span(),
                        format!(
                            "the `{}` definition may hold only structs and enums",
                            source.label()
                        ),
                        "not a struct or enum",
                        "put functions, constants and impls in a `--structs` file, or add them \
                         to `src/messages.rs` after generating",
                    ));
                }
                _ => continue,
            };
            let name = ident.to_string();
            if let Some(first) = defs.iter().find(|d| d.name == name) {
                let place = sources[first.source].place(first.span);
                return Err(source.error(
                    ident.span(),
                    format!("the type `{name}` is defined twice"),
                    "defined again here",
                    format!("it is first defined at {place}; keep one definition"),
                ));
            }
            if RESERVED.contains(&name.as_str()) || types::is_primitive(&name) {
                return Err(source.error(
                    ident.span(),
                    format!("the type name `{name}` is taken"),
                    "taken by the runtime's prelude or the standard library",
                    format!("the generated code uses `{name}` for its own type; rename this one"),
                ));
            }
            if let Some(param) = generics.params.first() {
                return Err(source.error(
                    param.span(),
                    format!("the message type `{name}` is generic"),
                    "generic parameter",
                    "the task, result and shared types are concrete: write the types out",
                ));
            }
            defs.push(Def {
                source: index,
                name,
                span: ident.span(),
            });
        }
    }
    Ok(defs)
}

/// The shape of every user type; every field type `Message` cannot send is reported at once.
fn shapes(
    files: &[Parsed],
    sources: &[Source],
    known: &BTreeSet<String>,
) -> Result<BTreeMap<String, Shape>, CliError> {
    let mut shapes = BTreeMap::new();
    let mut problems = Vec::new();
    for (index, (_, file)) in files.iter().enumerate() {
        for item in &file.items {
            let (name, shape) = match item {
                Item::Struct(s) => {
                    let scope = Scope {
                        known,
                        self_name: &s.ident.to_string(),
                    };
                    let fields = read_fields(&s.fields, &s.ident.to_string(), scope, &mut |p| {
                        problems.push((index, p));
                    });
                    (s.ident.to_string(), Shape::Struct(fields))
                }
                Item::Enum(e) => {
                    let name = e.ident.to_string();
                    let scope = Scope {
                        known,
                        self_name: &name,
                    };
                    let variants = e
                        .variants
                        .iter()
                        .map(|v| {
                            let owner = format!("{name}::{}", v.ident);
                            let fields = read_fields(&v.fields, &owner, scope, &mut |p| {
                                problems.push((index, p));
                            });
                            (v.ident.to_string(), fields)
                        })
                        .collect();
                    (name, Shape::Enum(variants))
                }
                _ => continue,
            };
            shapes.insert(name, shape);
        }
    }
    if !problems.is_empty() {
        let count = problems.len();
        let mut message = String::new();
        for (n, (index, problem)) in problems.iter().enumerate() {
            let source = &sources[*index];
            let text = source.text_of(problem.ty_span);
            let part = source.text_of(problem.unsupported.span);
            let mut line = if text == part {
                format!(
                    "field `{}` has type `{text}`, which `Message` cannot send",
                    problem.field
                )
            } else {
                format!(
                    "field `{}` has type `{text}`: `{part}` is not something `Message` can send",
                    problem.field
                )
            };
            line.push_str(&source.snippet(problem.unsupported.span, &problem.unsupported.reason));
            if n > 0 {
                message.push_str("\n\nerror: ");
            }
            message.push_str(&line);
        }
        let help = if count > 1 {
            format!("{}; fix the {count} fields above", types::SUPPORTED)
        } else {
            types::SUPPORTED.to_owned()
        };
        return Err(CliError::usage(message, help));
    }
    Ok(shapes)
}

/// The types playing the task, result and shared roles: the first type of each definition, or
/// in a file the marked types, else those named `Task`, `Result`, `Shared`.
fn roles(
    files: &[Parsed],
    sources: &[Source],
    known: &BTreeSet<String>,
) -> Result<[Option<String>; 3], CliError> {
    let mut roles: [Option<String>; 3] = [None, None, None];
    let [(None, file)] = files else {
        for (role, file) in files {
            let first = file.items.iter().find_map(item_name);
            if let (Some(role), Some(name)) = (role, first) {
                roles[*role as usize] = Some(name);
            }
        }
        return Ok(roles);
    };
    let source = &sources[0];
    for item in &file.items {
        let Some(name) = item_name(item) else {
            continue;
        };
        for (role, span) in markers(item_attrs(item), source)? {
            if let Some(other) = &roles[role as usize] {
                return Err(source.error(
                    span,
                    format!("two types are marked `#[mw({})]`", role.marker()),
                    format!("`{other}` is marked too"),
                    format!("mark one type with `#[mw({})]`", role.marker()),
                ));
            }
            roles[role as usize] = Some(name.clone());
        }
    }
    for role in Role::ALL {
        if roles[role as usize].is_none() && known.contains(role.default_name()) {
            roles[role as usize] = Some(role.default_name().to_owned());
        }
    }
    for role in [Role::Task, Role::Result] {
        if roles[role as usize].is_none() {
            return Err(CliError::usage(
                format!(
                    "`{}` has no {} type: no type is marked `#[mw({})]` or named `{}`",
                    source.label(),
                    role.marker(),
                    role.marker(),
                    role.default_name()
                ),
                "mark the type workers receive with `#[mw(task)]` and the one they \
                 send back with `#[mw(result)]` (and the data every worker gets once \
                 per iteration, if any, with `#[mw(shared)]`)",
            ));
        }
    }
    Ok(roles)
}

/// Words an item may start with; another word where an item should start is a stray token
/// (syn would read it as the start of a macro call and ask for `!`).
const ITEM_WORDS: [&str; 16] = [
    "struct",
    "enum",
    "union",
    "pub",
    "fn",
    "const",
    "static",
    "use",
    "impl",
    "mod",
    "type",
    "trait",
    "extern",
    "unsafe",
    "async",
    "macro_rules",
];

/// A Rust file as `syn::parse_file` reads it, but a word that cannot start an item is reported
/// as what it is.
fn parse_items(input: syn::parse::ParseStream<'_>) -> syn::Result<syn::File> {
    let attrs = input.call(Attribute::parse_inner)?;
    let mut items = Vec::new();
    while !input.is_empty() {
        if let Some((word, rest)) = input.cursor().ident() {
            let macro_call = rest.punct().is_some_and(|(p, _)| p.as_char() == '!');
            if !macro_call && !ITEM_WORDS.iter().any(|w| word == w) {
                return Err(syn::Error::new(
                    word.span(),
                    format!("expected `struct` or `enum`, found `{word}`"),
                ));
            }
        }
        items.push(input.parse()?);
    }
    Ok(syn::File {
        shebang: None,
        attrs,
        items,
    })
}

/// How deep types and brackets may nest in a definition (`Vec<Option<[u8; 4]>>` inside its
/// struct's braces is 4 deep): far past any message, and well within what parsing, checking and
/// the derive's generated code can recurse through.
pub(crate) const MAX_NESTING: usize = 32;

/// Refuses a definition nested deeper than [`MAX_NESTING`] before anything recursive reads it:
/// the text is only tokenized (which takes no stack per level) and its brackets and `<`
/// counted.
fn check_nesting(source: &Source) -> Result<(), CliError> {
    use proc_macro2::{TokenStream, TokenTree};
    // Text that does not tokenize gets the parser's own error.
    let Ok(tokens) = source.text().parse::<TokenStream>() else {
        return Ok(());
    };
    // Per open group: its tokens still to read and the `<` open in it.
    let mut open = vec![(tokens.into_iter(), 0usize)];
    let mut deepest = None;
    while let Some((tokens, angles)) = open.last_mut() {
        let Some(token) = tokens.next() else {
            open.pop();
            continue;
        };
        let span = match &token {
            TokenTree::Punct(p) if p.as_char() == '<' => {
                *angles += 1;
                p.span()
            }
            TokenTree::Punct(p) if p.as_char() == '>' => {
                *angles = angles.saturating_sub(1);
                continue;
            }
            TokenTree::Group(g) => g.span_open(),
            _ => continue,
        };
        let depth = open.len() - 1 + open.iter().map(|(_, a)| a).sum::<usize>();
        let depth = depth + usize::from(matches!(token, TokenTree::Group(_)));
        if depth > MAX_NESTING {
            deepest = Some(span);
            break;
        }
        if let TokenTree::Group(g) = token {
            open.push((g.stream().into_iter(), 0));
        }
    }
    let Some(span) = deepest else {
        return Ok(());
    };
    let reason = format!("types nested more than {MAX_NESTING} deep");
    let what = if source.is_file() {
        format!("cannot read `{}` as Rust: {reason}", source.label())
    } else {
        format!("invalid `{}` definition: {reason}", source.label())
    };
    Err(CliError::usage(
        format!("{what}{}", source.snippet(span, "too deep here")),
        "give the inner parts names of their own: a struct for what the nested types hold",
    ))
}

fn parse(source: &Source) -> Result<syn::File, CliError> {
    check_nesting(source)?;
    syn::parse::Parser::parse_str(parse_items, source.text()).map_err(|error| {
        // The tokenizer's message for a delimiter that is never closed (or closed twice).
        let (reason, label) = match error.to_string() {
            lex if lex == "cannot parse string into token stream" => (
                "unbalanced delimiter: `(`, `[` or `{` not closed, or closed twice".to_owned(),
                "this delimiter".to_owned(),
            ),
            other => (other.clone(), other),
        };
        let what = if source.is_file() {
            format!("cannot read `{}` as Rust: {reason}", source.label())
        } else {
            format!("invalid `{}` definition: {reason}", source.label())
        };
        let help = if source.is_file() {
            "the file must be Rust: structs and enums, the task marked `#[mw(task)]` and the \
             result `#[mw(result)]`"
                .to_owned()
        } else {
            example_help(source.label())
        };
        let span = error.span();
        CliError::usage(format!("{what}{}", source.snippet(span, &label)), help)
    })
}

fn example_help(flag: &str) -> String {
    let example = match flag {
        "--out" => "struct Answer { sum: u64 }",
        "--shared" => "struct Grid { cells: Vec<f64>, width: u32 }",
        _ => "struct Range { first: u32, count: u32 }",
    };
    format!("write a Rust struct or enum, e.g. {flag} '{example}'")
}

/// One field whose type `Message` cannot send.
struct Problem {
    /// `Type.field` (`Type.0` for a tuple field, `Enum::Variant.field` in an enum).
    field: String,
    ty_span: Span,
    unsupported: types::Unsupported,
}

fn read_fields(
    fields: &syn::Fields,
    owner: &str,
    scope: Scope<'_>,
    problems: &mut dyn FnMut(Problem),
) -> Fields {
    let mut read = |index: usize, field: &syn::Field| -> Option<Ty> {
        if is_skipped(&field.attrs) {
            return None;
        }
        match types::check(&field.ty, scope) {
            Ok(ty) => Some(ty),
            Err(unsupported) => {
                let name = field
                    .ident
                    .as_ref()
                    .map_or_else(|| index.to_string(), ToString::to_string);
                problems(Problem {
                    field: format!("{owner}.{name}"),
                    ty_span: field.ty.span(),
                    unsupported,
                });
                None
            }
        }
    };
    match fields {
        syn::Fields::Named(named) => Fields::Named(
            named
                .named
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let name = f
                        .ident
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default();
                    (name, read(i, f))
                })
                .collect(),
        ),
        syn::Fields::Unnamed(unnamed) => Fields::Unnamed(
            unnamed
                .unnamed
                .iter()
                .enumerate()
                .map(|(i, f)| read(i, f))
                .collect(),
        ),
        syn::Fields::Unit => Fields::Unit,
    }
}

/// `#[mw(skip)]`: the derive leaves the field out, so any `Default` type will do.
fn is_skipped(attrs: &[Attribute]) -> bool {
    attrs.iter().filter(|a| a.path().is_ident("mw")).any(|a| {
        a.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
            .is_ok_and(|metas| metas.iter().any(|m| m.path().is_ident("skip")))
    })
}

fn item_name(item: &Item) -> Option<String> {
    match item {
        Item::Struct(s) => Some(s.ident.to_string()),
        Item::Enum(e) => Some(e.ident.to_string()),
        _ => None,
    }
}

fn item_attrs(item: &Item) -> &[Attribute] {
    match item {
        Item::Struct(s) => &s.attrs,
        Item::Enum(e) => &e.attrs,
        _ => &[],
    }
}

/// The roles a type's `#[mw(...)]` attributes mark it with.
fn markers(attrs: &[Attribute], source: &Source) -> Result<Vec<(Role, Span)>, CliError> {
    let mut found = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("mw")) {
        let metas = attr
            .parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
            .map_err(|e| {
                source.error(
                    e.span(),
                    format!("malformed `#[mw(...)]` attribute: {e}"),
                    "here",
                    "mark types with `#[mw(task)]`, `#[mw(result)]` or `#[mw(shared)]`",
                )
            })?;
        for meta in &metas {
            let Meta::Path(path) = meta else { continue };
            match Role::ALL.iter().find(|r| path.is_ident(r.marker())) {
                Some(role) => found.push((*role, path.span())),
                None => {
                    let name = quote::ToTokens::to_token_stream(path).to_string();
                    return Err(source.error(
                        path.span(),
                        format!("unknown marker `#[mw({name})]`"),
                        "not a marker",
                        "mark types with `#[mw(task)]`, `#[mw(result)]` or `#[mw(shared)]`",
                    ));
                }
            }
        }
    }
    Ok(found)
}

/// The item as `src/messages.rs` holds it: markers gone, the message derives added, the type
/// and its fields public. `use` items that import the runtime are dropped (the file imports
/// `Message` itself).
fn rewrite(item: Item, recursive: &BTreeSet<String>) -> Option<Item> {
    match item {
        Item::Struct(mut s) => {
            s.attrs = message_attrs(&s.attrs);
            s.vis = public(s.vis);
            let owner = s.ident.to_string();
            for (i, field) in s.fields.iter_mut().enumerate() {
                field.vis = public(field.vis.clone());
                mark_recursive(field, &owner, i, recursive);
            }
            Some(Item::Struct(s))
        }
        Item::Enum(mut e) => {
            e.attrs = message_attrs(&e.attrs);
            e.vis = public(e.vis);
            for variant in e.variants.iter_mut() {
                let owner = format!("{}::{}", e.ident, variant.ident);
                for (i, field) in variant.fields.iter_mut().enumerate() {
                    mark_recursive(field, &owner, i, recursive);
                }
            }
            Some(Item::Enum(e))
        }
        Item::Use(u) if imports_runtime(&u.tree) => None,
        other => Some(other),
    }
}

/// Adds `#[mw(recursive)]` to a field whose type leads back to its owner through another type
/// (see [`checks::recursive_fields`]), unless the user wrote it.
fn mark_recursive(field: &mut syn::Field, owner: &str, index: usize, recursive: &BTreeSet<String>) {
    let member = field
        .ident
        .as_ref()
        .map_or(index.to_string(), ToString::to_string);
    let marked = field.attrs.iter().any(|a| {
        a.path().is_ident("mw")
            && a.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                .is_ok_and(|metas| metas.iter().any(|m| m.path().is_ident("recursive")))
    });
    if recursive.contains(&format!("{owner}.{member}")) && !marked {
        field.attrs.push(syn::parse_quote!(#[mw(recursive)]));
    }
}

fn imports_runtime(tree: &syn::UseTree) -> bool {
    match tree {
        syn::UseTree::Path(p) => p.ident == "mw" || p.ident == "mw_runtime",
        syn::UseTree::Name(n) => n.ident == "mw" || n.ident == "mw_runtime",
        syn::UseTree::Rename(r) => r.ident == "mw" || r.ident == "mw_runtime",
        _ => false,
    }
}

fn public(vis: syn::Visibility) -> syn::Visibility {
    match vis {
        syn::Visibility::Inherited => syn::parse_quote!(pub),
        other => other,
    }
}

/// Doc comments first, then one derive with the message derives and the user's others, then the
/// other attributes, without role markers.
fn message_attrs(attrs: &[Attribute]) -> Vec<Attribute> {
    let mut derives: Vec<syn::Path> = DERIVES
        .iter()
        .map(|d| syn::Path::from(syn::Ident::new(d, Span::call_site())))
        .collect();
    for path in checks::derive_paths(attrs) {
        let last = path.segments.last().map(|s| s.ident.to_string());
        if !last.is_some_and(|l| DERIVES.contains(&l.as_str())) {
            derives.push(path);
        }
    }
    let mut docs = Vec::new();
    let mut others = Vec::new();
    for attr in attrs {
        if attr.path().is_ident("doc") {
            docs.push(attr.clone());
        } else if attr.path().is_ident("derive") {
            continue;
        } else if attr.path().is_ident("mw") {
            if let Some(kept) = without_markers(attr) {
                others.push(kept);
            }
        } else {
            others.push(attr.clone());
        }
    }
    let derive: Attribute = syn::parse_quote!(#[derive(#(#derives),*)]);
    docs.push(derive);
    docs.extend(others);
    docs
}

/// An `#[mw(...)]` attribute without its role markers; `None` when nothing else is left.
fn without_markers(attr: &Attribute) -> Option<Attribute> {
    let Ok(metas) = attr.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated) else {
        return Some(attr.clone());
    };
    let kept: Vec<&Meta> = metas
        .iter()
        .filter(|m| !Role::ALL.iter().any(|r| m.path().is_ident(r.marker())))
        .collect();
    (!kept.is_empty()).then(|| syn::parse_quote!(#[mw(#(#kept),*)]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defs(task: &str, result: &str) -> Result<Messages, String> {
        read(Input::Defs {
            task,
            result,
            shared: None,
        })
        .map_err(|e| e.to_string())
    }

    #[test]
    fn definitions_get_derives_and_public_fields() {
        let messages = defs(
            "struct Segment { first: u32, points: Vec<Point> } #[derive(Copy)] struct Point(f64, f64);",
            "/// Moved.\n#[derive(Debug)] enum Moved { Line(Vec<Point>), Gone }",
        )
        .unwrap();
        assert_eq!(messages.task, "Segment");
        assert_eq!(messages.result, "Moved");
        assert!(messages.copy_types.contains("Point"));
        let file = syn::File {
            shebang: None,
            attrs: Vec::new(),
            items: messages.items,
        };
        let text = prettyplease::unparse(&file);
        assert!(
            text.contains("#[derive(Message, Debug, Clone, PartialEq)]\npub struct Segment {\n    pub first: u32,"),
            "{text}"
        );
        assert!(
            text.contains("#[derive(Message, Debug, Clone, PartialEq, Copy)]\npub struct Point(pub f64, pub f64);"),
            "{text}"
        );
        assert!(
            text.contains(
                "/// Moved.\n#[derive(Message, Debug, Clone, PartialEq)]\npub enum Moved {"
            ),
            "{text}"
        );
    }

    #[test]
    fn every_unsupported_field_is_reported() {
        let error = defs(
            "struct Task { name: &str, map: HashMap<u32, f64> }",
            "struct Answer { ok: bool }",
        )
        .unwrap_err();
        assert!(
            error.contains("field `Task.name` has type `&str`"),
            "{error}"
        );
        assert!(
            error.contains("field `Task.map` has type `HashMap<u32, f64>`"),
            "{error}"
        );
        assert!(error.contains("fix the 2 fields"), "{error}");
    }

    #[test]
    fn files_mark_roles_or_use_the_names() {
        let text = "#[mw(task)] struct Job { n: u64 }\nstruct Result { v: u64 }\n\
                    #[mw(shared, crate = \"mw\")] struct Grid { cells: Vec<f64> }";
        let messages = read(Input::File {
            path: Path::new("m.rs"),
            text,
        })
        .unwrap();
        assert_eq!(messages.task, "Job");
        assert_eq!(messages.result, "Result");
        assert_eq!(messages.shared.as_deref(), Some("Grid"));
        let file = syn::File {
            shebang: None,
            attrs: Vec::new(),
            items: messages.items,
        };
        let text = prettyplease::unparse(&file);
        assert!(!text.contains("task"), "{text}");
        assert!(text.contains("#[mw(crate = \"mw\")]"), "{text}");
    }

    #[test]
    fn long_struct_variants_go_one_field_per_line() {
        let messages = defs(
            "enum T { A { id: u64, long_field_name: String, pair: (u8, u16) }, B { x: u8 } }",
            "struct R;",
        )
        .unwrap();
        let text = messages.text();
        assert!(
            text.contains(
                "    A {\n        id: u64,\n        long_field_name: String,\n        \
                 pair: (u8, u16),\n    },\n    B {\n        x: u8,\n    },"
            ),
            "{text}"
        );
    }

    #[test]
    fn recursion_through_another_type_is_marked_for_the_derive() {
        let messages = defs(
            "enum A { B(Box<B>), Me(Box<A>), End } enum B { A(Box<A>), End }",
            "struct R;",
        )
        .unwrap();
        let text = messages.text();
        assert!(text.contains("    B(#[mw(recursive)] Box<B>),"), "{text}");
        assert!(text.contains("    A(#[mw(recursive)] Box<A>),"), "{text}");
        // Direct recursion the derive sees by itself.
        assert!(text.contains("    Me(Box<A>),"), "{text}");
    }

    #[test]
    fn a_type_with_no_finite_value_is_refused() {
        let error = defs("struct Task { next: Box<Task> }", "struct A;").unwrap_err();
        assert!(error.contains("never ends"), "{error}");
    }
}
