//! The examples are their templates, rendered: `examples/<name>/` holds exactly what
//! `mwgen new` makes from `mwgen/templates/<name>/` with the answers recorded in the example's
//! `Mw.toml` (`[project]`), byte for byte.
//!
//! The templates are the source. After changing one, rewrite its example with
//! `MWGEN_BLESS=1 cargo test -p mwgen --test examples` and review the diff; a change made to an
//! example alone fails here, and blessing would undo it.

#![allow(clippy::unwrap_used)] // helpers of tests: a failure is a test failure

use std::collections::BTreeMap;
use std::fs;
use std::path::{Component, Path, PathBuf};

use assert_cmd::cargo::cargo_bin_cmd;

const EXAMPLES: [&str; 3] = ["nbody", "xfire", "synthetic"];

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A file's bytes and whether it is executable.
type Tree = BTreeMap<String, (Vec<u8>, bool)>;

/// Every file under `dir`, by `/`-separated relative path.
fn tree(dir: &Path) -> Tree {
    fn walk(root: &Path, dir: &Path, out: &mut Tree) {
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
                out.insert(
                    name.join("/"),
                    (fs::read(&path).unwrap(), executable(&path)),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

#[cfg(unix)]
fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).unwrap().permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn executable(_: &Path) -> bool {
    false
}

/// The arguments of `mwgen new` that made an example, from the `[project]` table of its
/// `Mw.toml`, and the runtime path it recorded.
struct Answers {
    args: Vec<String>,
    runtime: String,
}

fn answers(example: &str) -> Answers {
    let path = repository().join("examples").join(example).join("Mw.toml");
    let text = fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("examples/{example}/Mw.toml cannot be read ({e}): every example records how `mwgen new` made it")
    });
    let file: toml::Table = toml::from_str(&text).unwrap();
    let project = file
        .get("project")
        .and_then(toml::Value::as_table)
        .unwrap_or_else(|| panic!("examples/{example}/Mw.toml has no [project] table"));
    let text_of = |key: &str| -> String {
        project
            .get(key)
            .and_then(toml::Value::as_str)
            .unwrap_or_else(|| panic!("examples/{example}/Mw.toml: `[project] {key}` is missing"))
            .to_owned()
    };
    let mut args = vec![
        text_of("name"),
        "--template".to_owned(),
        text_of("template"),
    ];
    for (key, value) in project {
        match key.as_str() {
            // Given above; `mwgen` is the version that made it, an output.
            "name" | "template" | "runtime" | "mwgen" => {}
            "workspace_member" => {
                if value.as_bool() == Some(true) {
                    args.push("--workspace-member".to_owned());
                }
            }
            other => panic!(
                "examples/{example}/Mw.toml: this test does not know the answer `{other}`; teach \
                 it which flag of `mwgen new` gives it"
            ),
        }
    }
    Answers {
        args,
        runtime: text_of("runtime"),
    }
}

/// Renders the example's template into a temporary copy of the repository's layout: the
/// project at the example's place and a stand-in runtime where the recorded path points.
fn render(example: &str) -> Tree {
    let answers = answers(example);
    let runtime = Path::new(&answers.runtime);
    let up = runtime
        .components()
        .take_while(|c| *c == Component::ParentDir)
        .count();
    let below: PathBuf = runtime.components().skip(up).collect();
    assert!(
        runtime.is_relative() && up >= 1 && below.components().count() >= 1,
        "examples/{example}/Mw.toml: `[project] runtime` = `{}` is not a path up and out of \
         the project, as for a workspace member",
        answers.runtime
    );
    // The project sits as deep under the temporary folder as the runtime path climbs out.
    let place: PathBuf = Path::new("examples")
        .join(example)
        .components()
        .rev()
        .take(up)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    assert_eq!(
        place.components().count(),
        up,
        "examples/{example}: the runtime path `{}` climbs out further than the example lies",
        answers.runtime
    );
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join(&below)).unwrap();
    fs::write(
        dir.path().join(&below).join("Cargo.toml"),
        "[package]\nname = \"mw-runtime\"\nversion = \"0.1.0\"\n",
    )
    .unwrap();
    cargo_bin_cmd!("mwgen")
        .current_dir(dir.path())
        .arg("new")
        .args(&answers.args)
        .arg("--path")
        .arg(&place)
        .arg("--runtime-path")
        .arg(&below)
        .assert()
        .success();
    tree(&dir.path().join(&place))
}

/// The first line where two texts differ, and a few lines of each from there.
fn first_difference(made: &[u8], found: &[u8]) -> String {
    let (made, found) = (
        String::from_utf8_lossy(made),
        String::from_utf8_lossy(found),
    );
    let line = made
        .lines()
        .zip(found.lines())
        .position(|(a, b)| a != b)
        .unwrap_or(made.lines().count().min(found.lines().count()));
    let show = |text: &str| {
        text.lines()
            .skip(line)
            .take(4)
            .collect::<Vec<_>>()
            .join("\n")
    };
    format!(
        "from line {} on\n--- the template makes:\n{}\n--- the example holds:\n{}",
        line + 1,
        show(&made),
        show(&found)
    )
}

fn check(example: &str) {
    let made = render(example);
    let folder = repository().join("examples").join(example);
    let bless = std::env::var_os("MWGEN_BLESS").is_some();
    let source = |name: &str| {
        let plain = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("templates")
            .join(example)
            .join(name);
        if plain.is_file() {
            format!("mwgen/templates/{example}/{name}")
        } else {
            format!("mwgen/templates/{example}/{name}.tera (and the pieces it includes)")
        }
    };
    let mut problems = Vec::new();
    let found = tree(&folder);
    for (name, (bytes, exec)) in &made {
        let same = found
            .get(name)
            .is_some_and(|(b, e)| b == bytes && e == exec);
        if same {
            continue;
        }
        if bless {
            let path = folder.join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, bytes).unwrap();
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = if *exec { 0o755 } else { 0o644 };
                fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
            }
            continue;
        }
        let what = match found.get(name) {
            None => "is missing".to_owned(),
            Some((b, _)) if b != bytes => format!("differs {}", first_difference(bytes, b)),
            Some(_) if *exec => "is not executable, and the template makes it so".to_owned(),
            Some(_) => "is executable, and the template does not make it so".to_owned(),
        };
        problems.push(format!(
            "`examples/{example}/{name}` {what}\n(it comes from {})",
            source(name)
        ));
    }
    for name in found.keys().filter(|name| !made.contains_key(*name)) {
        problems.push(format!(
            "`examples/{example}/{name}` is not made by template `{example}`: add it to \
             mwgen/templates/{example}/ (as `{name}`, or `{name}.tera` to render it), or remove it"
        ));
    }
    assert!(
        problems.is_empty(),
        "examples/{example} has drifted from its template:\n\n{}\n\nThe template is the \
         source: make the change in mwgen/templates/{example}/, then \
         `MWGEN_BLESS=1 cargo test -p mwgen --test examples` rewrites examples/{example}/ from \
         it (review the diff).",
        problems.join("\n\n")
    );
}

#[test]
fn nbody_is_its_template_rendered() {
    check("nbody");
}

#[test]
fn xfire_is_its_template_rendered() {
    check("xfire");
}

#[test]
fn synthetic_is_its_template_rendered() {
    check("synthetic");
}

/// Every example has its template, and every template of an example is checked above.
#[test]
fn each_example_has_a_template() {
    let mut examples: Vec<String> = fs::read_dir(repository().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    examples.sort();
    let mut expected: Vec<String> = EXAMPLES.iter().map(|e| (*e).to_owned()).collect();
    expected.sort();
    assert_eq!(
        examples, expected,
        "each folder of examples/ is a template rendered: add a template and a test above"
    );
    for example in EXAMPLES {
        assert!(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("templates")
                .join(example)
                .join("template.toml")
                .is_file(),
            "mwgen/templates/{example}/template.toml is missing"
        );
    }
}
