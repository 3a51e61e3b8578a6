//! `mwgen new` refuses bad input with an `error:` line and a `help:` line (exit code 2), and
//! writes nothing.

#![allow(clippy::unwrap_used)] // helpers of tests: a failure is a test failure

use std::fs;
use std::path::Path;

use assert_cmd::cargo::cargo_bin_cmd;

/// Runs `mwgen new ARGS` in an empty folder; returns its standard error after checking the
/// exit code, the `help:` line and that the folder is still empty (but for `keep`).
fn refused(args: &[&str], keep: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in keep {
        fs::write(dir.path().join(name), text).unwrap();
    }
    let assert = cargo_bin_cmd!("mwgen")
        .current_dir(dir.path())
        .arg("new")
        .args(args)
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(stderr.contains("\nhelp: "), "{stderr}");
    let left: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !keep.iter().any(|(k, _)| k == name))
        .collect();
    assert!(left.is_empty(), "wrote {left:?}");
    stderr
}

#[test]
fn names_must_be_crate_names() {
    let stderr = refused(&["1app"], &[]);
    assert!(
        stderr.contains("error: project name `1app` starts with a digit"),
        "{stderr}"
    );

    let stderr = refused(&["my.app"], &[]);
    assert!(
        stderr.contains("invalid character `.` in project name `my.app`"),
        "{stderr}"
    );

    let stderr = refused(&["apps/fire"], &[]);
    assert!(stderr.contains("invalid character `/`"), "{stderr}");
    assert!(stderr.contains("help: NAME names the package"), "{stderr}");
    assert!(stderr.contains("`--path DIR`"), "{stderr}");
}

#[test]
fn keywords_are_refused() {
    for keyword in ["fn", "async", "gen", "self"] {
        let stderr = refused(&[keyword], &[]);
        assert!(
            stderr.contains(&format!("project name `{keyword}` is a Rust keyword")),
            "{stderr}"
        );
        assert!(stderr.contains(&format!("help: choose another name, e.g. `{keyword}-app`")));
    }
}

#[test]
fn malformed_definitions_show_where() {
    let stderr = refused(
        &[
            "fire",
            "--in",
            "struct Range { first u32, count: u32 }",
            "--out",
            "struct A;",
        ],
        &[],
    );
    assert_eq!(
        stderr,
        "error: invalid `--in` definition: expected `:`\n  \
         |\n\
         1 | struct Range { first u32, count: u32 }\n  \
         |                      ^^^ expected `:`\n\
         help: write a Rust struct or enum, e.g. --in 'struct Range { first: u32, count: u32 }'\n"
    );

    let stderr = refused(
        &[
            "fire",
            "--in",
            "struct Range;",
            "--out",
            "struct Answer { sum: u64",
        ],
        &[],
    );
    assert!(
        stderr.starts_with("error: invalid `--out` definition: unbalanced delimiter"),
        "{stderr}"
    );
    assert!(
        stderr.contains("1 | struct Answer { sum: u64\n  |               ^ this delimiter"),
        "{stderr}"
    );

    let stderr = refused(&["fire", "--in", "fn task() {}", "--out", "struct A;"], &[]);
    assert!(
        stderr.contains("may hold only structs and enums"),
        "{stderr}"
    );
}

#[test]
fn unsupported_field_types_are_named() {
    let stderr = refused(
        &[
            "fire",
            "--in",
            "struct Task { names: Vec<&str>, cells: HashMap<u32, f64> }",
            "--out",
            "struct Answer { at: Point }",
        ],
        &[],
    );
    assert!(
        stderr.contains(
            "error: field `Task.names` has type `Vec<&str>`: `&str` is not something `Message` \
             can send\n  |\n1 | struct Task { names: Vec<&str>, cells: HashMap<u32, f64> }\n  \
             |                          ^^^^ a reference"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("error: field `Task.cells` has type `HashMap<u32, f64>`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("send its entries as `Vec<(K, V)>`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("error: field `Answer.at` has type `Point`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("no struct or enum of that name is defined"),
        "{stderr}"
    );
    assert!(
        stderr.contains("help: a field can hold u8, u16,") && stderr.contains("fix the 3 fields"),
        "{stderr}"
    );
}

#[test]
fn in_and_out_come_together() {
    let stderr = refused(&["fire", "--in", "struct Range { first: u32 }"], &[]);
    assert!(
        stderr.contains("error: `--in` was given without `--out`"),
        "{stderr}"
    );
    assert!(stderr.contains("help: give the result a worker sends back with `--out`"));

    let stderr = refused(&["fire", "--out", "struct Answer { sum: u64 }"], &[]);
    assert!(
        stderr.contains("error: `--out` was given without `--in`"),
        "{stderr}"
    );

    let stderr = refused(
        &["fire", "--shared", "struct Grid { cells: Vec<f64> }"],
        &[],
    );
    assert!(
        stderr.contains("`--shared` was given without `--in` and `--out`"),
        "{stderr}"
    );
}

#[test]
fn structs_files_need_a_task_and_a_result() {
    let file = "struct Job { n: u64 }\n#[mw(result)] struct Answer { v: u64 }\n";
    let stderr = refused(
        &["fire", "--structs", "messages.rs"],
        &[("messages.rs", file)],
    );
    assert!(
        stderr.contains(
            "error: `messages.rs` has no task type: no type is marked `#[mw(task)]` or named \
             `Task`"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("help: mark the type workers receive with `#[mw(task)]`"));

    let file = "#[mw(task)] struct Job { n: u64 }\n#[mw(task)] struct Other { v: u64 }\n";
    let stderr = refused(
        &["fire", "--structs", "messages.rs"],
        &[("messages.rs", file)],
    );
    assert!(
        stderr.contains("error: two types are marked `#[mw(task)]`"),
        "{stderr}"
    );
    assert!(stderr.contains(" --> messages.rs:2:6\n"), "{stderr}");

    let stderr = refused(&["fire", "--structs", "missing.rs"], &[]);
    assert!(
        stderr.contains("error: cannot read `missing.rs`"),
        "{stderr}"
    );
}

#[test]
fn the_runtime_must_be_there() {
    let stderr = refused(&["fire", "--runtime-path", "nowhere"], &[]);
    assert!(
        stderr.contains("error: cannot find the runtime (`mw-runtime`) at `nowhere`"),
        "{stderr}"
    );
    assert!(stderr.contains("help: `--runtime-path` names the `mw-runtime` folder"));
}

#[test]
fn a_file_in_the_way_is_not_replaced() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("fire"), "mine").unwrap();
    let assert = cargo_bin_cmd!("mwgen")
        .current_dir(dir.path())
        .args(["new", "fire", "--force"])
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(
        stderr.contains("error: destination `fire` exists and is not a folder"),
        "{stderr}"
    );
    assert_eq!(
        fs::read_to_string(Path::new(dir.path()).join("fire")).unwrap(),
        "mine"
    );
}

/// The example templates carry their own messages: any message flag is refused, naming it,
/// before a `--structs` file is even read.
#[test]
fn fixed_templates_refuse_message_flags() {
    let stderr = refused(
        &[
            "gravity",
            "--template",
            "nbody",
            "--in",
            "struct A;",
            "--out",
            "struct B;",
        ],
        &[],
    );
    assert!(
        stderr.starts_with(
            "error: template `nbody` has message types of its own, so `--in` and `--out` cannot \
             be used with it\n"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("help: leave out `--in`, `--out`, `--shared` and `--structs`"),
        "{stderr}"
    );
    assert!(stderr.contains("`--template blank`"), "{stderr}");

    let stderr = refused(
        &["fire", "--template", "xfire", "--shared", "struct S;"],
        &[],
    );
    assert!(
        stderr.contains("template `xfire` has message types of its own, so `--shared` cannot"),
        "{stderr}"
    );

    let stderr = refused(
        &[
            "synth",
            "--template",
            "synthetic",
            "--structs",
            "missing.rs",
        ],
        &[],
    );
    assert!(
        stderr.contains("template `synthetic` has message types of its own, so `--structs`"),
        "{stderr}"
    );
}

/// `mwgen new fire --in TASK --out RESULT`, refused; its standard error.
fn refused_defs(task: &str, result: &str) -> String {
    refused(&["fire", "--in", task, "--out", result], &[])
}

#[test]
fn definitions_rustc_would_refuse_are_refused_where_they_go_wrong() {
    let stderr = refused_defs("struct T { x: u32, x: u64 }", "struct R;");
    assert!(
        stderr.starts_with(
            "error: the field `x` is defined twice in `T`\n  |\n1 | struct T { x: u32, x: u64 }\n  \
             |                    ^ defined again here\n"
        ),
        "{stderr}"
    );
    let stderr = refused_defs("enum T { A, B(u8), A }", "struct R;");
    assert!(
        stderr.contains("the variant `A` is defined twice in `T`"),
        "{stderr}"
    );

    let stderr = refused_defs("struct T { next: Option<T> }", "struct R;");
    assert!(
        stderr.starts_with("error: `T` holds itself: field `T.next` has type `Option<T>`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("^^^^^^^^^ holds a `T` in place"),
        "{stderr}"
    );
    assert!(stderr.contains("`Option<Box<T>>`"), "{stderr}");
    // Through another type, and through a tuple.
    let stderr = refused_defs(
        "struct T { a: (u8, A) } struct A { t: [T; 2] }",
        "struct R;",
    );
    assert!(stderr.contains("`T` holds itself"), "{stderr}");

    let stderr = refused_defs("struct T { a: [u8; 99999999999999999999] }", "struct R;");
    assert!(
        stderr.contains("whose length `99999999999999999999` does not fit in `usize`"),
        "{stderr}"
    );
    let stderr = refused_defs("struct T { a: [u64; 1000000000000000000] }", "struct R;");
    assert!(stderr.contains("more than rustc allows"), "{stderr}");

    let stderr = refused_defs("#[derive(Serialize)] struct T { x: u32 }", "struct R;");
    assert!(
        stderr.contains(
            "error: `#[derive(Serialize)]` is not passed through\n  |\n1 | #[derive(Serialize)] \
             struct T { x: u32 }\n  |          ^^^^^^^^^ not a standard derive"
        ),
        "{stderr}"
    );
    let stderr = refused_defs("#[serde(default)] struct T { x: u32 }", "struct R;");
    assert!(
        stderr.contains("the attribute `#[serde]` is not passed through"),
        "{stderr}"
    );
    let stderr = refused_defs("struct T { #[serde(skip)] x: u32 }", "struct R;");
    assert!(
        stderr.contains("the attribute `#[serde]` is not passed through"),
        "{stderr}"
    );
    let stderr = refused_defs("#[derive(Eq, Hash)] struct T { x: f64 }", "struct R;");
    assert!(
        stderr.contains(
            "`T` derives `Eq`, but field `T.x` has type `f64`, which does not implement `Eq`"
        ),
        "{stderr}"
    );
    let stderr = refused_defs("#[derive(Copy)] struct T { name: String }", "struct R;");
    assert!(stderr.contains("does not implement `Copy`"), "{stderr}");
    let stderr = refused_defs("#[derive(Default)] enum T { A(u8), B }", "struct R;");
    assert!(
        stderr.contains("does not mark one unit variant `#[default]`"),
        "{stderr}"
    );

    let stderr = refused_defs("struct T { x: u32 } struct Extra { z: u8 }", "struct R;");
    assert!(
        stderr.starts_with("error: the type `Extra` is not used by the messages (`T`, `R`)"),
        "{stderr}"
    );
}

#[test]
fn an_empty_enum_is_not_called_recursion() {
    let stderr = refused_defs("enum T {}", "struct R;");
    assert!(
        stderr.starts_with("error: the enum `T` has no variants, so no value of it can be built\n"),
        "{stderr}"
    );
    assert!(!stderr.contains("never ends"), "{stderr}");
}

#[test]
fn a_stray_word_is_named_where_it_stands() {
    let stderr = refused_defs("struct T;", "struct R { y: u32 } garbage");
    assert_eq!(
        stderr,
        "error: invalid `--out` definition: expected `struct` or `enum`, found `garbage`\n  \
         |\n\
         1 | struct R { y: u32 } garbage\n  \
         |                     ^^^^^^^ expected `struct` or `enum`, found `garbage`\n\
         help: write a Rust struct or enum, e.g. --out 'struct Answer { sum: u64 }'\n"
    );
    // The end of the input is after its last character, not at column 1.
    let stderr = refused_defs("struct Task(u64, String)", "struct R;");
    assert!(
        stderr.contains("1 | struct Task(u64, String)\n  |                         ^"),
        "{stderr}"
    );
}

#[test]
fn absurd_nesting_and_computed_array_lengths_are_refused() {
    let nested = |depth: usize| {
        format!(
            "struct Deep {{ v: {}u8{} }}",
            "Vec<".repeat(depth),
            ">".repeat(depth)
        )
    };
    let out = "struct Answer { sum: u64 }";
    let stderr = refused(&["app", "--in", &nested(3000), "--out", out], &[]);
    assert!(
        stderr.starts_with("error: invalid `--in` definition: types nested more than 32 deep"),
        "{stderr}"
    );
    let stderr = refused(&["app", "--in", &nested(40), "--out", out], &[]);
    assert!(stderr.contains("nested more than 32 deep"), "{stderr}");
    let stderr = refused(
        &[
            "app",
            "--in",
            "struct Cells { v: [u8; { std::process::abort(); 3 }] }",
            "--out",
            out,
        ],
        &[],
    );
    assert!(
        stderr.contains("an array length must be a whole number written out"),
        "{stderr}"
    );
}
