//! `mwgen new` makes the same tree as before, file by file.
//!
//! Each case keeps its expected tree in `tests/snapshots/<case>/out/` and, when it reads files,
//! its inputs in `tests/snapshots/<case>/in/` (copied to the folder the command runs in), as
//! cargo's own `cargo init` tests do. The command runs beside a stand-in `mw-runtime` folder,
//! so the generated dependency path is `../mw-runtime` whatever the machine.
//!
//! Files the template copies as they are (no `.tera` suffix) are compared with the template's
//! own file (and `Cargo.lock` with the one every project of its own gets) rather than kept in
//! `out/` again; so are the files of an example template that are the example's file but for
//! the project's name (the examples are their templates rendered, see `tests/examples.rs`).
//! `out/` holds what rendering made and nothing else covers.
//!
//! After a deliberate change to the templates, rewrite the expected trees with
//! `MWGEN_BLESS=1 cargo test -p mwgen --test new_snapshots` and review the diff.

#![allow(clippy::unwrap_used)] // helpers of tests: a failure is a test failure

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::cargo_bin_cmd;

fn snapshots() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots")
}

/// Every file under `dir`, by `/`-separated relative path.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let relative = path.strip_prefix(root).unwrap();
                let name: Vec<_> = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.insert(name.join("/"), fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    if dir.is_dir() {
        walk(dir, dir, &mut out);
    }
    out
}

fn write_tree(dir: &Path, files: &BTreeMap<String, Vec<u8>>) {
    for (name, bytes) in files {
        let path = dir.join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, bytes).unwrap();
    }
}

/// A folder with a stand-in runtime and the case's inputs.
fn workspace(case: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("mw-runtime")).unwrap();
    fs::write(
        dir.path().join("mw-runtime/Cargo.toml"),
        "[package]\nname = \"mw-runtime\"\nversion = \"0.1.0\"\n",
    )
    .unwrap();
    write_tree(dir.path(), &tree(&snapshots().join(case).join("in")));
    dir
}

/// Runs `mwgen new ARGS` in the case's folder and compares the project at `project` (relative
/// to that folder) with `tests/snapshots/<case>/out/`, and the files `template` copies as they
/// are with the template's own.
fn check(case: &str, template: &str, args: &[&str], project: &str) {
    let dir = workspace(case);
    cargo_bin_cmd!("mwgen")
        .current_dir(dir.path())
        .arg("new")
        .args(args)
        .args(["--runtime-path", "mw-runtime"])
        .assert()
        .success();
    let all = tree(&dir.path().join(project));
    let templates = Path::new(env!("CARGO_MANIFEST_DIR")).join("templates");
    let mut made = BTreeMap::new();
    for (name, bytes) in &all {
        let copied = if name == "Cargo.lock" {
            templates.join("_shared/Cargo.lock")
        } else {
            templates.join(template).join(name)
        };
        if copied.is_file() {
            assert!(
                fs::read(&copied).unwrap() == *bytes,
                "case `{case}`: `{name}` is not a copy of templates/{template}/{name}"
            );
        } else if !as_in_the_example(template, args[0], name, bytes) {
            made.insert(name.clone(), bytes.clone());
        }
    }
    let expected_dir = snapshots().join(case).join("out");
    if std::env::var_os("MWGEN_BLESS").is_some() {
        let _ = fs::remove_dir_all(&expected_dir);
        write_tree(&expected_dir, &made);
        return;
    }
    let expected = tree(&expected_dir);
    let names = |t: &BTreeMap<String, Vec<u8>>| t.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        names(&made),
        names(&expected),
        "case `{case}`: the files differ (MWGEN_BLESS=1 rewrites the snapshot)"
    );
    for (name, bytes) in &made {
        let made = String::from_utf8_lossy(bytes);
        let expected = String::from_utf8_lossy(&expected[name]);
        if made != expected {
            let line = made
                .lines()
                .zip(expected.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(made.lines().count().min(expected.lines().count()));
            panic!(
                "case `{case}`: `{name}` differs from line {} on (MWGEN_BLESS=1 rewrites the \
                 snapshot)\n--- made:\n{}\n--- expected:\n{}",
                line + 1,
                made.lines()
                    .skip(line)
                    .take(5)
                    .collect::<Vec<_>>()
                    .join("\n"),
                expected
                    .lines()
                    .skip(line)
                    .take(5)
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
        }
    }
    let runtime = format!(
        "{}mw-runtime",
        "../".repeat(Path::new(project).components().count())
    );
    well_formed(&dir.path().join(project), &all, &runtime);
}

/// Whether `name`, as made for project `project`, is the file of the example that `template`
/// renders (`examples/<template>/`, which `tests/examples.rs` keeps equal to its template) but
/// for the project's name: such files are not kept in `out/` again.
fn as_in_the_example(template: &str, project: &str, name: &str, bytes: &[u8]) -> bool {
    let example = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(template);
    let Ok(expected) = fs::read(example.join(name)) else {
        return false;
    };
    let crate_name = project.replace('-', "_");
    // The comparison cannot tell the crate's name from the package's: a dashed name where a
    // path needs the crate's fails here instead (in code, doctests and comments alike).
    if project != crate_name && name.ends_with(".rs") {
        let text = String::from_utf8_lossy(bytes);
        assert!(
            !text.contains(&format!("{project}::")),
            "`{name}` names crate `{project}` in a path: the crate is `{crate_name}`"
        );
    }
    let normal = |bytes: &[u8]| {
        [project, crate_name.as_str(), template]
            .iter()
            .fold(String::from_utf8_lossy(bytes).into_owned(), |text, name| {
                text.replace(name, "NAME")
            })
    };
    normal(bytes) == normal(&expected)
}

/// What every generated project satisfies: the runtime accepts its `Mw.toml`, the Rust files
/// parse and are formatted as rustfmt would (when rustfmt is installed).
fn well_formed(project: &Path, files: &BTreeMap<String, Vec<u8>>, runtime: &str) {
    let mw_toml = String::from_utf8_lossy(&files["Mw.toml"]);
    mw_runtime::ConfigFile::parse(&mw_toml).unwrap();
    // The keys it shows commented out are real, with values the runtime accepts.
    let uncommented: Vec<&str> = mw_toml
        .lines()
        .map(|line| match line.strip_prefix("# ") {
            Some(setting) if is_setting(setting) => setting,
            _ => line,
        })
        .collect();
    let commented = mw_toml
        .lines()
        .filter(|l| l.strip_prefix("# ").is_some_and(is_setting))
        .count();
    assert!(
        commented >= 10,
        "Mw.toml shows {commented} commented settings"
    );
    let all = mw_runtime::ConfigFile::parse(&uncommented.join("\n"))
        .unwrap_or_else(|e| panic!("Mw.toml with its commented settings on: {e}"));
    mw_runtime::RunConfig::merge_file(&all, &mw_runtime::RunArgs::default())
        .unwrap_or_else(|e| panic!("Mw.toml with its commented settings on: {e}"));
    let manifest: toml::Table =
        toml::from_str(&String::from_utf8_lossy(&files["Cargo.toml"])).expect("Cargo.toml is TOML");
    assert_eq!(
        manifest["dependencies"]["mw"]["path"].as_str(),
        Some(runtime)
    );
    let rustfmt = Command::new("rustfmt").arg("--version").output();
    let has_rustfmt = rustfmt.is_ok_and(|o| o.status.success());
    for name in files.keys().filter(|n| n.ends_with(".rs")) {
        let text = String::from_utf8_lossy(&files[name]);
        syn::parse_file(&text).unwrap_or_else(|e| panic!("`{name}` is not Rust: {e}"));
        if has_rustfmt {
            let output = Command::new("rustfmt")
                .args(["--check", "--edition", "2024"])
                .arg(project.join(name))
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "`{name}` is not as rustfmt formats it:\n{}",
                String::from_utf8_lossy(&output.stdout)
            );
        }
    }
}

/// `key = value`, as a line of a TOML table.
fn is_setting(line: &str) -> bool {
    line.split_once(" = ").is_some_and(|(key, _)| {
        !key.is_empty() && key.chars().all(|c| c.is_ascii_lowercase() || c == '_')
    })
}

/// No message types: the template's example, which sums squares.
#[test]
fn example() {
    check("example", "blank", &["sums"], "sums");
}

/// One bag streamed by `more_tasks`: the example, and the user's types with shared data.
#[test]
fn sweep() {
    check("sweep", "sweep", &["bag", "--template", "sweep"], "bag");
    check(
        "sweep_types",
        "sweep",
        &[
            "points",
            "--template",
            "sweep",
            "--in",
            "struct Point { index: u32, x: f64 }",
            "--out",
            "struct Value { index: u32, v: f64 }",
            "--shared",
            "struct Params { scale: f64 }",
        ],
        "points",
    );
}

/// The task and result of the fire example in `docs/ARCHITECTURE.md`, on the command line.
#[test]
fn in_out() {
    check(
        "in_out",
        "blank",
        &[
            "fire",
            "--in",
            "struct Segment { first: u32, points: Vec<[f64; 2]> }",
            "--out",
            "struct Advanced { first: u32, points: Vec<[f64; 2]> }",
        ],
        "fire",
    );
}

/// Shared data with helper types (an enum that is `Copy`, a struct), a dashed name and a
/// nested `--path`.
#[test]
fn shared() {
    check(
        "shared",
        "blank",
        &[
            "heat-map",
            "--path",
            "apps/heat",
            "--in",
            "/// A block of rows.\nstruct Rows { first: u32, count: u32 }",
            "--out",
            "struct Block(u32, Vec<f64>);",
            "--shared",
            "struct Plate { size: [u32; 2], cells: Vec<f64>, edges: Edges, source: Option<Source> }
             #[derive(Copy)] enum Edges { Fixed(f64), Insulated }
             struct Source { at: (u32, u32), power: f64 }",
        ],
        "apps/heat",
    );
}

/// A `--structs` file: markers, the `Result` name, doc comments, a recursive enum, a skipped
/// field, a constant and an impl kept as they are.
#[test]
fn structs_file() {
    check(
        "structs_file",
        "blank",
        &["calc", "--structs", "messages.rs"],
        "calc",
    );
}

/// The N-Body example under another name, on its own (not a workspace member).
#[test]
fn nbody() {
    check(
        "nbody",
        "nbody",
        &["gravity", "--template", "nbody"],
        "gravity",
    );
}

/// Xfire under a dashed name: the library's crate name differs from the binary's.
#[test]
fn xfire() {
    check(
        "xfire",
        "xfire",
        &["fire-front", "--template", "xfire"],
        "fire-front",
    );
}

/// The synthetic programs as a member of the enclosing workspace, in a nested folder.
#[test]
fn synthetic_workspace_member() {
    check(
        "synthetic_member",
        "synthetic",
        &[
            "policies",
            "--template",
            "synthetic",
            "--workspace-member",
            "--path",
            "apps/policies",
        ],
        "apps/policies",
    );
}

/// The blank template as a member of the enclosing workspace.
#[test]
fn blank_workspace_member() {
    check(
        "blank_member",
        "blank",
        &["sums", "--workspace-member"],
        "sums",
    );
}

/// `--force` rewrites the template's files and leaves the others alone; without it, nothing
/// is touched.
#[test]
fn force_replaces_only_the_template_files() {
    let dir = workspace("example");
    let new = |force: bool| {
        let mut cmd = cargo_bin_cmd!("mwgen");
        cmd.current_dir(dir.path())
            .args(["new", "sums", "--runtime-path", "mw-runtime"]);
        if force {
            cmd.arg("--force");
        }
        cmd.assert()
    };
    new(false).success();
    let project = dir.path().join("sums");
    let original = fs::read_to_string(project.join("src/worker.rs")).unwrap();
    fs::write(project.join("src/worker.rs"), "// changed\n").unwrap();
    fs::write(project.join("notes.txt"), "mine\n").unwrap();

    let refused = new(false).code(2);
    let stderr = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(
        stderr.contains("error: destination `sums` already exists"),
        "{stderr}"
    );
    assert!(stderr.contains("help: use `--force`"), "{stderr}");
    assert_eq!(
        fs::read_to_string(project.join("src/worker.rs")).unwrap(),
        "// changed\n"
    );

    let forced = new(true).success();
    let stdout = String::from_utf8_lossy(&forced.get_output().stdout).into_owned();
    assert!(stdout.contains("Replaced 9 existing files"), "{stdout}");
    assert_eq!(
        fs::read_to_string(project.join("src/worker.rs")).unwrap(),
        original
    );
    assert_eq!(
        fs::read_to_string(project.join("notes.txt")).unwrap(),
        "mine\n"
    );
}

/// The `[default: …]` a generated `Mw.toml` gives a setting is the one the runtime's `--help`
/// gives its flag.
#[test]
fn mw_toml_defaults_are_the_help_texts() {
    use clap::CommandFactory;

    #[derive(clap::Parser)]
    struct Program {
        #[command(flatten)]
        run: mw_runtime::RunArgs,
    }
    let command = Program::command();
    let help_default = |flag: &str| -> Option<String> {
        let arg = command
            .get_arguments()
            .find(|a| a.get_long() == Some(flag))?;
        let help = arg.get_help()?.to_string();
        let start = help.find("[default: ")?;
        Some(
            help[start..]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
        )
    };
    let mw_toml = fs::read_to_string(snapshots().join("example/out/Mw.toml")).unwrap();
    let mut comment = String::new();
    let mut checked = 0;
    for line in mw_toml.lines() {
        let Some(text) = line.strip_prefix('#') else {
            comment.clear();
            continue;
        };
        let text = text.trim();
        let setting = text
            .split_once(" = ")
            .filter(|(key, _)| key.chars().all(|c| c.is_ascii_lowercase() || c == '_'));
        let Some((key, _)) = setting else {
            comment = format!("{comment} {text}");
            continue;
        };
        let flag = if key == "tune" {
            "tuning".to_owned()
        } else {
            key.replace('_', "-")
        };
        let ours = comment
            .find("[default: ")
            .map(|start| comment[start..].split(']').next().unwrap_or("").to_owned() + "]");
        if let (Some(ours), Some(help)) = (ours, help_default(&flag)) {
            let ours = ours.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(
                help.starts_with(&ours),
                "`{key}`: Mw.toml says {ours}, --{flag} {help}"
            );
            checked += 1;
        }
        comment.clear();
    }
    assert!(checked >= 4, "only {checked} defaults compared");
}
