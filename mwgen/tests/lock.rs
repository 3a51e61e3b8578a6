//! The lock file that `mwgen new` ships with a project of its own (`templates/_shared/Cargo.lock`)
//! holds the workspace's own versions: every registry package that the runtime, its macros and
//! the examples reach in the workspace's `Cargo.lock`, copied from it block for block.
//!
//! After a dependency change in the workspace, rewrite it with
//! `MWGEN_BLESS=1 cargo test -p mwgen --test lock` and review the diff.

#![allow(clippy::unwrap_used)] // helpers of tests: a failure is a test failure

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// The packages whose dependencies a generated project may need: the runtime (the templates
/// depend on nothing else from the workspace) and the examples, which are templates too.
const ROOTS: [&str; 4] = ["mw-runtime", "nbody", "xfire", "synthetic"];

/// A `[[package]]` block of a lock file: its text and the names it depends on.
struct Block {
    text: String,
    registry: bool,
    dependencies: Vec<String>,
}

/// The blocks of a lock file by `name version`, those keys in the file's order, and the keys
/// of each name.
type Blocks = (
    BTreeMap<String, Block>,
    Vec<String>,
    BTreeMap<String, Vec<String>>,
);

fn blocks(lock: &str) -> Blocks {
    let mut out = BTreeMap::new();
    let mut order = Vec::new();
    let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for text in lock.split("\n[[package]]\n").skip(1) {
        let text = format!("[[package]]\n{}", text.trim_end());
        let table: toml::Table = toml::from_str(&text.replacen("[[package]]", "", 1)).unwrap();
        let name = table["name"].as_str().unwrap().to_owned();
        let version = table["version"].as_str().unwrap().to_owned();
        let dependencies = table
            .get("dependencies")
            .and_then(toml::Value::as_array)
            .map(|deps| {
                deps.iter()
                    .map(|d| d.as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default();
        let key = format!("{name} {version}");
        by_name.entry(name).or_default().push(key.clone());
        order.push(key.clone());
        out.insert(
            key,
            Block {
                registry: table.contains_key("source"),
                text,
                dependencies,
            },
        );
    }
    (out, order, by_name)
}

/// The lock file a project of its own gets, made from the workspace's.
fn expected(workspace_lock: &str) -> String {
    let (blocks, order, by_name) = blocks(workspace_lock);
    let mut reached = BTreeSet::new();
    let mut todo: Vec<String> = ROOTS.iter().map(|root| by_name[*root][0].clone()).collect();
    while let Some(key) = todo.pop() {
        if !reached.insert(key.clone()) {
            continue;
        }
        for dependency in &blocks[&key].dependencies {
            // `name`, or `name version` when the lock holds several versions of it.
            let mut parts = dependency.split(' ');
            let name = parts.next().unwrap();
            let key = match parts.next() {
                Some(version) => format!("{name} {version}"),
                None => by_name[name][0].clone(),
            };
            todo.push(key);
        }
    }
    let header = workspace_lock
        .split("\n[[package]]\n")
        .next()
        .unwrap()
        .trim_end();
    let mut out = format!("{header}\n");
    // In the workspace's order, which is cargo's.
    for key in &order {
        let block = &blocks[key];
        if block.registry && reached.contains(key) {
            out.push('\n');
            out.push_str(&block.text);
            out.push('\n');
        }
    }
    out
}

#[test]
fn the_shipped_lock_file_has_the_workspace_versions() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace_lock = fs::read_to_string(crate_dir.join("../Cargo.lock")).unwrap();
    let made = expected(&workspace_lock);
    let shipped = crate_dir.join("templates/_shared/Cargo.lock");
    if std::env::var_os("MWGEN_BLESS").is_some() {
        fs::write(&shipped, &made).unwrap();
        return;
    }
    let found = fs::read_to_string(&shipped).unwrap_or_default();
    assert!(
        found == made,
        "mwgen/templates/_shared/Cargo.lock differs from the versions in the workspace's \
         Cargo.lock: `MWGEN_BLESS=1 cargo test -p mwgen --test lock` rewrites it (review the \
         diff)"
    );
    let (blocks, _, _) = blocks(&made);
    for root in ["mw-runtime", "mw-macros"] {
        assert!(
            !blocks
                .keys()
                .any(|key| key.starts_with(&format!("{root} "))),
            "the workspace's own packages are left to cargo, which adds them at the first build"
        );
    }
    for needed in ["clap", "serde", "crossbeam-channel", "rayon", "assert_cmd"] {
        assert!(
            blocks
                .keys()
                .any(|key| key.starts_with(&format!("{needed} "))),
            "`{needed}` is missing from the shipped lock file"
        );
    }
}
