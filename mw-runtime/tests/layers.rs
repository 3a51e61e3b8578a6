//! The layering of mw-runtime's modules, read from the source.
//!
//! Parses `src/` with `syn`, follows the module tree from `lib.rs` (leaving out what is compiled
//! for tests only: `#[cfg(test)]` modules and items), and records which top-level module names
//! which: every `use`, and every path that starts with `crate`, `super`, `self`, `$crate` or
//! `mw_runtime`, in code and in macro arguments, resolved to the top-level module it lands in (a
//! root re-export such as `crate::Error` counts as the module it re-exports). Then it checks the
//! floors below: a module imports only modules of its own floor or of floors below, the imports
//! within a floor form no cycle, the sub-modules of any one module form no cycle among
//! themselves, and the few imports still allowed are listed with why, each of them present in
//! the code. `mw-runtime/README.md` describes the floors.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// The floors, bottom first. A module may import the modules of its own floor (without a cycle)
/// and of the floors below, never those above. A new top-level module must be given a floor.
const FLOORS: &[(&str, &[&str])] = &[
    // The vocabulary every layer speaks; these import nothing of the crate.
    (
        "vocabulary",
        &["clock", "layout", "protocol", "random", "signal", "stats"],
    ),
    // What any part of a run may touch: the codec, errors, the process (its launcher, its
    // signals, its exit status), files read and written whole, the load patterns (the
    // emulating is `emulate`'s).
    (
        "foundations",
        &[
            "codec",
            "error",
            "input",
            "interrupt",
            "launch",
            "load",
            "output",
            "status",
        ],
    ),
    // Pure formulas (the performance model), the policies, the measure points.
    ("models", &["measure", "model", "policy"]),
    // What a run leaves behind: metrics and trace.
    ("records", &["metrics", "trace"]),
    // The tuner, with the tunables, their configuration and the control endpoint (`tuning/`).
    ("tuning", &["tuning"]),
    // The run's configuration: every flag and `Mw.toml` key, the tuning's section among them.
    ("configuration", &["config"]),
    // The hooks a program fills in, and what is shown of a run while it goes on.
    ("program", &["agree", "app", "progress", "summary"]),
    // The links between the master and the workers.
    ("transport", &["transport"]),
    // The master's and the workers' loops.
    ("engine", &["engine"]),
    // Emulation as a layer: emulated load, faults and network, wrapped around a worker and
    // the ends of a link through their own traits; the engine below knows nothing of them.
    ("emulation", &["emulate"]),
    // Where a run starts, and what macro expansions call.
    ("entry", &["__private", "args", "run"]),
];

/// Imports still allowed to run up a floor or to close a cycle: (from, to, why), between
/// top-level modules or, written `module/sub`, between the sub-modules of one module. The test
/// fails when one of them is no longer in the code, so that the list stays true.
const ALLOWED: &[(&str, &str, &str)] = &[
    // A posted send keeps the buffer it sends, framing's `Outgoing`, while framing posts its
    // sends through `posted`: it goes when the buffer type has a home below both, in the
    // rework of the MPI links.
    (
        "transport/mpi/posted",
        "transport/mpi/framing",
        "a Posted send holds an Outgoing buffer",
    ),
];

/// An import of one top-level module by another: where, and the path as written.
#[derive(Debug, Clone)]
struct Site {
    file: PathBuf,
    line: usize,
    path: String,
}

/// Which top-level module names which, with the sites.
type Graph = BTreeMap<String, BTreeMap<String, Vec<Site>>>;

fn parse(file: &Path) -> syn::File {
    let text = std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
    syn::parse_file(&text).unwrap_or_else(|e| panic!("cannot parse {}: {e}", file.display()))
}

/// Whether attributes compile the item for tests only (`#[cfg(test)]`, `#[cfg(all(test, ..))]`).
fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta.require_list().is_ok_and(|l| {
                let t = l.tokens.to_string();
                t == "test" || t.starts_with("all (test")
            })
    })
}

/// The crate's top-level modules and the names `lib.rs` re-exports (name → module).
struct Root {
    modules: BTreeSet<String>,
    reexports: BTreeMap<String, String>,
}

fn read_root(lib: &syn::File) -> Root {
    let mut modules = BTreeSet::new();
    for item in &lib.items {
        if let syn::Item::Mod(m) = item {
            if m.content.is_none() && !test_only(&m.attrs) {
                modules.insert(m.ident.to_string());
            }
        }
    }
    let mut reexports = BTreeMap::new();
    for item in &lib.items {
        if let syn::Item::Use(u) = item {
            for (path, name) in flatten_use(&u.tree) {
                let first = path.first().map(String::as_str);
                let first = if first == Some("crate") {
                    path.get(1).map(String::as_str)
                } else {
                    first
                };
                if let Some(first) = first.filter(|f| modules.contains(*f)) {
                    if let Some(name) = name {
                        reexports.insert(name, first.to_string());
                    }
                }
            }
        }
    }
    Root { modules, reexports }
}

/// The paths a `use` tree names, each with the name it brings in (none for a glob).
fn flatten_use(tree: &syn::UseTree) -> Vec<(Vec<String>, Option<String>)> {
    fn walk(
        tree: &syn::UseTree,
        prefix: &mut Vec<String>,
        out: &mut Vec<(Vec<String>, Option<String>)>,
    ) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                walk(&p.tree, prefix, out);
                prefix.pop();
            }
            syn::UseTree::Name(n) if n.ident == "self" => {
                out.push((prefix.clone(), prefix.last().cloned()));
            }
            syn::UseTree::Name(n) => {
                let mut path = prefix.clone();
                path.push(n.ident.to_string());
                out.push((path, Some(n.ident.to_string())));
            }
            syn::UseTree::Rename(r) => {
                let mut path = prefix.clone();
                if r.ident != "self" {
                    path.push(r.ident.to_string());
                }
                out.push((path, Some(r.rename.to_string())));
            }
            syn::UseTree::Glob(_) => out.push((prefix.clone(), None)),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    walk(t, prefix, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(tree, &mut Vec::new(), &mut out);
    out
}

/// Walks one top-level module's files and records the other top-level modules it names.
struct Walker<'a> {
    root: &'a Root,
    file: PathBuf,
    /// The module being read, from the crate root (`["tuning", "decide"]`).
    module: Vec<String>,
    graph: &'a mut Graph,
    /// Within each module (`tuning`, `transport/mpi`), which of its sub-modules names which
    /// (the names kept only if they turn out to be sub-modules).
    inner: &'a mut BTreeMap<String, Graph>,
    /// The sub-modules of each module that has some.
    children: &'a mut BTreeMap<String, BTreeSet<String>>,
}

impl Walker<'_> {
    /// Records a path as written (`crate::config::Protocol`, `super::x`).
    fn record(&mut self, segments: &[String], line: usize) {
        let Some(first) = segments.first() else {
            return;
        };
        let (mut at, rest): (Vec<String>, &[String]) = match first.as_str() {
            "crate" | "mw_runtime" => (Vec::new(), &segments[1..]),
            "self" => (self.module.clone(), &segments[1..]),
            "super" => {
                let mut at = self.module.clone();
                let mut rest = segments;
                while rest.first().is_some_and(|s| s == "super") {
                    at.pop();
                    rest = &rest[1..];
                }
                (at, rest)
            }
            _ => return,
        };
        at.extend(rest.iter().cloned());
        let Some(top) = at.first() else {
            return;
        };
        let target = if self.root.modules.contains(top) {
            top.clone()
        } else if let Some(m) = self.root.reexports.get(top) {
            m.clone()
        } else {
            return;
        };
        let from = self.module[0].clone();
        if target == from {
            // Within one module: an import between two sub-modules of their closest common
            // parent.
            let common = self
                .module
                .iter()
                .zip(&at)
                .take_while(|(a, b)| a == b)
                .count();
            if let (Some(child), Some(other)) = (self.module.get(common), at.get(common)) {
                self.inner
                    .entry(self.module[..common].join("/"))
                    .or_default()
                    .entry(child.clone())
                    .or_default()
                    .entry(other.clone())
                    .or_default()
                    .push(Site {
                        file: self.file.clone(),
                        line,
                        path: segments.join("::"),
                    });
            }
        } else {
            self.graph
                .entry(from)
                .or_default()
                .entry(target)
                .or_default()
                .push(Site {
                    file: self.file.clone(),
                    line,
                    path: segments.join("::"),
                });
        }
    }

    /// Paths inside a macro's arguments (`format!("{}", crate::x::y())`, `$crate::x`).
    fn tokens(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            match &trees[i] {
                TokenTree::Group(g) => {
                    self.tokens(g.stream());
                    i += 1;
                }
                TokenTree::Ident(id) => {
                    let line = id.span().start().line;
                    let mut segments = vec![id.to_string()];
                    let mut j = i + 1;
                    while let (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b))) =
                        (trees.get(j), trees.get(j + 1))
                    {
                        if a.as_char() != ':' || b.as_char() != ':' {
                            break;
                        }
                        let Some(TokenTree::Ident(next)) = trees.get(j + 2) else {
                            break;
                        };
                        segments.push(next.to_string());
                        j += 3;
                    }
                    if segments.len() > 1 {
                        self.record(&segments, line);
                    }
                    i = j;
                }
                TokenTree::Punct(_) | TokenTree::Literal(_) => i += 1,
            }
        }
    }

    /// Reads the file of `mod name;` declared in the current file, then comes back.
    fn child_file(&mut self, name: &str) {
        let dir = if self
            .file
            .file_name()
            .is_some_and(|n| n == "mod.rs" || n == "lib.rs")
        {
            self.file.parent().map(Path::to_path_buf)
        } else {
            Some(self.file.with_extension(""))
        };
        let dir = dir.expect("a source file has a folder");
        let file = [
            dir.join(format!("{name}.rs")),
            dir.join(name).join("mod.rs"),
        ]
        .into_iter()
        .find(|f| f.exists())
        .unwrap_or_else(|| panic!("no file for `mod {name};` in {}", self.file.display()));
        let syntax = parse(&file);
        let outer = std::mem::replace(&mut self.file, file);
        self.visit_file(&syntax);
        self.file = outer;
    }
}

impl<'ast> Visit<'ast> for Walker<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Const(i) => &i.attrs,
            syn::Item::Enum(i) => &i.attrs,
            syn::Item::ExternCrate(i) => &i.attrs,
            syn::Item::Fn(i) => &i.attrs,
            syn::Item::ForeignMod(i) => &i.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Macro(i) => &i.attrs,
            syn::Item::Mod(i) => &i.attrs,
            syn::Item::Static(i) => &i.attrs,
            syn::Item::Struct(i) => &i.attrs,
            syn::Item::Trait(i) => &i.attrs,
            syn::Item::TraitAlias(i) => &i.attrs,
            syn::Item::Type(i) => &i.attrs,
            syn::Item::Union(i) => &i.attrs,
            syn::Item::Use(i) => &i.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if !test_only(attrs) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs = match item {
            syn::ImplItem::Const(i) => &i.attrs,
            syn::ImplItem::Fn(i) => &i.attrs,
            syn::ImplItem::Type(i) => &i.attrs,
            syn::ImplItem::Macro(i) => &i.attrs,
            _ => return syn::visit::visit_impl_item(self, item),
        };
        if !test_only(attrs) {
            syn::visit::visit_impl_item(self, item);
        }
    }

    fn visit_field(&mut self, field: &'ast syn::Field) {
        if !test_only(&field.attrs) {
            syn::visit::visit_field(self, field);
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.module.push(m.ident.to_string());
        if let [parent @ .., child] = self.module.as_slice() {
            if !parent.is_empty() {
                self.children
                    .entry(parent.join("/"))
                    .or_default()
                    .insert(child.clone());
            }
        }
        match &m.content {
            Some((_, items)) => {
                // An inline module's own `mod x;` files sit in a folder named after it.
                let outer = self.file.clone();
                if let Some(dir) = self.file.parent() {
                    let stem = self.file.file_stem().map(|s| s.to_os_string());
                    let inner = match stem {
                        Some(s) if s == "mod" || s == "lib" => dir.join(m.ident.to_string()),
                        Some(s) => dir.join(s).join(m.ident.to_string()),
                        None => dir.to_path_buf(),
                    };
                    self.file = inner.join("mod.rs");
                }
                for item in items {
                    self.visit_item(item);
                }
                self.file = outer;
            }
            None => self.child_file(&m.ident.to_string()),
        }
        self.module.pop();
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let line = u.use_token.span.start().line;
        for (path, _) in flatten_use(&u.tree) {
            self.record(&path, line);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let line = path
            .segments
            .first()
            .map_or(0, |s| s.ident.span().start().line);
        self.record(&segments, line);
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        self.tokens(mac.tokens.clone());
    }
}

/// The imports between a crate's modules.
struct Imports {
    /// The top-level modules.
    modules: BTreeSet<String>,
    /// Which top-level module names which.
    graph: Graph,
    /// Per module with sub-modules (`tuning`, `transport/mpi`): they, and which of them names
    /// which (a name of the parent module's own, re-exports included, is not counted).
    inner: BTreeMap<String, (BTreeSet<String>, Graph)>,
}

/// The imports of the crate whose `lib.rs` is in `src`.
fn imports(src: &Path) -> Imports {
    let lib = src.join("lib.rs");
    let syntax = parse(&lib);
    let root = read_root(&syntax);
    let mut graph = Graph::new();
    let mut inner = BTreeMap::new();
    let mut children = BTreeMap::new();
    for item in &syntax.items {
        if let syn::Item::Mod(m) = item {
            if root.modules.contains(&m.ident.to_string()) {
                let mut walker = Walker {
                    root: &root,
                    file: lib.clone(),
                    module: Vec::new(),
                    graph: &mut graph,
                    inner: &mut inner,
                    children: &mut children,
                };
                walker.visit_item_mod(m);
            }
        }
    }
    let inner = children
        .into_iter()
        .map(|(top, subs)| {
            let mut g = inner.remove(&top).unwrap_or_default();
            for to in g.values_mut() {
                to.retain(|m, _| subs.contains(m));
            }
            (top, (subs, g))
        })
        .collect();
    Imports {
        modules: root.modules,
        graph,
        inner,
    }
}

/// The strongly connected components with more than one module (Tarjan's algorithm).
fn cycles(modules: &BTreeSet<String>, edges: &BTreeSet<(String, String)>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeSet<(String, String)>,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        on_stack: BTreeSet<String>,
        found: Vec<Vec<String>>,
    }
    fn connect(s: &mut State<'_>, v: &str) {
        let n = s.index.len();
        s.index.insert(v.to_string(), n);
        s.low.insert(v.to_string(), n);
        s.stack.push(v.to_string());
        s.on_stack.insert(v.to_string());
        let next: Vec<String> = s
            .edges
            .iter()
            .filter(|(a, _)| a == v)
            .map(|(_, b)| b.clone())
            .collect();
        for w in next {
            if !s.index.contains_key(&w) {
                connect(s, &w);
                let low = s.low[v].min(s.low[&w]);
                s.low.insert(v.to_string(), low);
            } else if s.on_stack.contains(&w) {
                let low = s.low[v].min(s.index[&w]);
                s.low.insert(v.to_string(), low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(&w);
                let done = w == v;
                component.push(w);
                if done {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for m in modules {
        if !s.index.contains_key(m) {
            connect(&mut s, m);
        }
    }
    s.found.sort();
    s.found
}

/// Where `from` names `to`, one line each, by file and line.
fn sites(src: &Path, graph: &Graph, from: &str, to: &str) -> String {
    let sites: BTreeSet<(&Path, usize, &str)> = graph
        .get(from)
        .and_then(|t| t.get(to))
        .into_iter()
        .flatten()
        .map(|site| {
            let file = site.file.strip_prefix(src).unwrap_or(&site.file);
            (file, site.line, site.path.as_str())
        })
        .collect();
    let mut out = String::new();
    for (file, line, path) in sites {
        let _ = write!(out, "\n    src/{}:{line}: {path}", file.display());
    }
    out
}

/// The imports of `graph`, as (from, to).
fn edges(graph: &Graph) -> BTreeSet<(String, String)> {
    graph
        .iter()
        .flat_map(|(a, to)| to.keys().map(move |b| (a.clone(), b.clone())))
        .collect()
}

/// A shortest cycle through the first module of a strongly connected `component`, as the
/// modules along it, the first repeated at the end.
fn a_cycle(component: &[String], edges: &BTreeSet<(String, String)>) -> Vec<String> {
    let start = component[0].as_str();
    let mut before: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(at) = queue.pop_front() {
        let next = edges
            .iter()
            .filter(|(a, b)| a == at && component.contains(b))
            .map(|(_, b)| b.as_str());
        for b in next {
            if b == start {
                let mut path = vec![start.to_string(), at.to_string()];
                let mut back = at;
                while back != start {
                    back = before[back];
                    path.push(back.to_string());
                }
                path.reverse();
                return path;
            }
            if !before.contains_key(b) {
                before.insert(b, at);
                queue.push_back(b);
            }
        }
    }
    component.to_vec()
}

/// What breaks the floors in the crate at `src`, one message each; empty when nothing does.
fn problems(src: &Path, floors: &[(&str, &[&str])], allowed: &[(&str, &str, &str)]) -> Vec<String> {
    let Imports {
        modules,
        graph,
        inner,
    } = imports(src);
    let mut problems = Vec::new();
    let mut floor_of = BTreeMap::new();
    for (level, (floor, members)) in floors.iter().enumerate() {
        for &m in *members {
            if floor_of.insert(m, (level, *floor)).is_some() {
                problems.push(format!("`{m}` is on two floors"));
            }
            if !modules.contains(m) {
                problems.push(format!(
                    "`{m}` is on floor `{floor}` but is no module of lib.rs"
                ));
            }
        }
    }
    for m in &modules {
        if !floor_of.contains_key(m.as_str()) {
            problems.push(format!("`{m}` is on no floor: give it one in FLOORS"));
        }
    }
    let edges = edges(&graph);
    let is_allowed = |a: &str, b: &str| allowed.iter().any(|&(x, y, _)| x == a && y == b);
    for (a, b) in &edges {
        if let (Some(&(la, fa)), Some(&(lb, fb))) =
            (floor_of.get(a.as_str()), floor_of.get(b.as_str()))
        {
            if lb > la && !is_allowed(a, b) {
                problems.push(format!(
                    "`{a}` (floor `{fa}`) imports `{b}`, a floor up (`{fb}`):{}",
                    sites(src, &graph, a, b)
                ));
            }
        }
    }
    for &(a, b, _) in allowed.iter().filter(|(a, _, _)| !a.contains('/')) {
        let runs_down = matches!(
            (floor_of.get(a), floor_of.get(b)),
            (Some(&(la, _)), Some(&(lb, _))) if lb < la
        );
        if !edges.contains(&(a.to_string(), b.to_string())) {
            problems.push(format!(
                "`{a}` no longer imports `{b}`: take it off the allowed imports"
            ));
        } else if runs_down {
            problems.push(format!(
                "`{a}` imports `{b}` from a floor below, which needs no leave: take it off the \
                 allowed imports"
            ));
        }
    }
    let kept: BTreeSet<(String, String)> = edges
        .iter()
        .filter(|(a, b)| !is_allowed(a, b))
        .cloned()
        .collect();
    for component in cycles(&modules, &kept) {
        let path = a_cycle(&component, &kept);
        let mut message = format!(
            "import cycle between {}: {}",
            component.join(", "),
            path.join(" -> ")
        );
        for pair in path.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            let _ = write!(message, "\n  {a} -> {b}{}", sites(src, &graph, a, b));
        }
        problems.push(message);
    }
    // Inside a module, its sub-modules form no cycle either (allowed imports named
    // `module/sub`).
    for (top, (subs, g)) in &inner {
        let is_allowed = |a: &str, b: &str| {
            allowed
                .iter()
                .any(|&(x, y, _)| x == format!("{top}/{a}") && y == format!("{top}/{b}"))
        };
        let imported: BTreeSet<(String, String)> = self::edges(g)
            .into_iter()
            .filter(|(a, b)| !is_allowed(a, b))
            .collect();
        for component in cycles(subs, &imported) {
            let path = a_cycle(&component, &imported);
            let mut message = format!(
                "import cycle inside `{top}` between {}: {}",
                component.join(", "),
                path.join(" -> ")
            );
            for pair in path.windows(2) {
                let (a, b) = (&pair[0], &pair[1]);
                let _ = write!(message, "\n  {a} -> {b}{}", sites(src, g, a, b));
            }
            problems.push(message);
        }
    }
    for &(a, b, _) in allowed.iter().filter(|(a, _, _)| a.contains('/')) {
        let present = match (a.rsplit_once('/'), b.rsplit_once('/')) {
            (Some((top, x)), Some((top_b, y))) if top == top_b => inner
                .get(top)
                .and_then(|(_, g)| g.get(x))
                .is_some_and(|to| to.contains_key(y)),
            _ => false,
        };
        if !present {
            problems.push(format!(
                "`{a}` no longer imports `{b}`: take it off the allowed imports"
            ));
        }
    }
    problems
}

#[test]
fn mw_runtime_is_layered() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let problems = problems(&src, FLOORS, ALLOWED);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let imports = imports(&src);
    let edges = edges(&imports.graph);
    println!(
        "{} modules, {} imports between them; cycles closed by the allowed imports: {:?}",
        imports.modules.len(),
        edges.len(),
        cycles(&imports.modules, &edges)
    );
    for (top, (subs, g)) in &imports.inner {
        let closed = cycles(subs, &self::edges(g));
        if !closed.is_empty() {
            println!("{top}/: cycles closed by the allowed imports: {closed:?}");
        }
        println!(
            "{top}/: {} sub-modules, {} imports between them",
            subs.len(),
            self::edges(g).len()
        );
    }
}

/// A crate's `src` in a temporary folder, from (file, text) pairs.
fn planted(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary folder");
    for (file, text) in files {
        let path = dir.path().join(file);
        std::fs::create_dir_all(path.parent().expect("a file in a folder")).expect("a folder");
        std::fs::write(path, text).expect("a file");
    }
    dir
}

#[test]
fn a_planted_cycle_and_a_planted_import_up_are_named() {
    let src = planted(&[
        (
            "lib.rs",
            "mod low;\nmod high;\nmod side;\nmod apart;\npub use side::Thing;\n",
        ),
        // Up, through a grouped `use` in a sub-module's file.
        ("low/mod.rs", "mod deep;\n"),
        ("low/deep.rs", "use crate::{high::High, side};\n"),
        // Back down, through `super::` inside a macro's arguments and through a root re-export.
        (
            "high.rs",
            "pub struct High;\nfn f() { let _ = format!(\"{:?}\", super::low::X); }\n\
             fn g() -> crate::Thing { crate::Thing }\n",
        ),
        // Test-only code is left out: with it, `side` and `apart` would form a cycle.
        (
            "side.rs",
            "pub struct Thing;\n#[cfg(test)]\nmod tests { use crate::apart::A; }\n\
             #[cfg(test)]\nfn helper() -> crate::apart::A { crate::apart::A }\n",
        ),
        (
            "apart.rs",
            "pub struct A;\nfn h() -> crate::side::Thing { crate::side::Thing }\n",
        ),
    ]);
    let floors: &[(&str, &[&str])] = &[("bottom", &["low", "side", "apart"]), ("top", &["high"])];
    let found = problems(
        src.path(),
        floors,
        &[("side", "low", "listed, but not in the code")],
    );
    let text = found.join("\n");
    println!("{text}");
    assert!(
        text.contains("`low` (floor `bottom`) imports `high`, a floor up (`top`):")
            && text.contains("src/low/deep.rs:1: crate::high::High"),
        "{text}"
    );
    assert!(
        text.contains("import cycle between high, low: high -> low -> high"),
        "{text}"
    );
    assert!(text.contains("src/high.rs:2: super::low::X"), "{text}");
    assert!(
        text.contains("`side` no longer imports `low`: take it off the allowed imports"),
        "{text}"
    );
    assert_eq!(found.len(), 3, "{text}");
    // The same crate with the import up allowed: nothing is left.
    let allowed = [("low", "high", "the planted one")];
    assert_eq!(problems(src.path(), floors, &allowed), Vec::<String>::new());
    // A module left off the floors is named, and so is one listed that does not exist.
    let floors: &[(&str, &[&str])] = &[("all", &["low", "high", "side", "gone"])];
    let text = problems(src.path(), floors, &allowed).join("\n");
    assert!(text.contains("`apart` is on no floor"), "{text}");
    assert!(
        text.contains("`gone` is on floor `all` but is no module of lib.rs"),
        "{text}"
    );
}

#[test]
fn a_planted_cycle_between_sub_modules_is_named() {
    let src = planted(&[
        ("lib.rs", "mod a;\n"),
        ("a/mod.rs", "mod b;\nmod c;\npub use b::B;\n"),
        (
            "a/b.rs",
            "pub struct B;\nfn f() -> super::c::C {\n    super::c::C\n}\n",
        ),
        // The second import names the parent's re-export: not an import of `b`.
        (
            "a/c.rs",
            "pub struct C;\nfn g() -> crate::a::b::B { crate::a::b::B }\n\
             fn h() -> super::B { super::B }\n",
        ),
    ]);
    let floors: &[(&str, &[&str])] = &[("all", &["a"])];
    let text = problems(src.path(), floors, &[]).join("\n");
    println!("{text}");
    assert!(
        text.contains("import cycle inside `a` between b, c: b -> c -> b")
            && text.contains("src/a/b.rs:2: super::c::C")
            && text.contains("src/a/c.rs:2: crate::a::b::B")
            && !text.contains("super::B"),
        "{text}"
    );
    let allowed = [("a/b", "a/c", "planted")];
    assert_eq!(problems(src.path(), floors, &allowed), Vec::<String>::new());
    let allowed = [
        ("a/b", "a/c", "planted"),
        ("a/c", "a/d", "listed, not in the code"),
    ];
    assert_eq!(
        problems(src.path(), floors, &allowed),
        ["`a/c` no longer imports `a/d`: take it off the allowed imports"]
    );
}
