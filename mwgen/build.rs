//! Embeds the project templates of `mwgen new` in the binary, so that an installed `mwgen` works
//! away from this repository; and, when built from a checkout of the repository, the sources of
//! the runtime and its macros, which `mwgen new` writes into the projects it makes (so that they
//! build while the crates are on no registry, and away from the checkout).
//!
//! Every file under the crate's `templates/` folder is listed in `$OUT_DIR/templates.rs` as
//! `(path relative to templates/, include_bytes!(...))`. A build script rather than a crate such
//! as `include_dir`: cargo is told to watch the folder (`rerun-if-changed` on a directory scans
//! all of it), so editing a template rebuilds `mwgen`, which a proc macro cannot ask for on
//! stable Rust.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::{env, fs, io};

fn main() -> io::Result<()> {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let templates = manifest_dir.join("templates");
    println!("cargo::rerun-if-changed={}", templates.display());

    let mut files = Vec::new();
    collect(&templates, &templates, &mut files)?;
    files.sort();

    let mut code = String::from(
        "/// Every file under `templates/`: its path relative to that folder, `/`-separated, \
         and its bytes.\npub(crate) static FILES: &[(&str, &[u8])] = &[\n",
    );
    for (relative, absolute) in &files {
        let _ = writeln!(code, "    ({relative:?}, include_bytes!({absolute:?})),");
    }
    code.push_str("];\n");
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap_or_default());
    fs::write(out.join("templates.rs"), code)?;
    fs::write(out.join("runtime.rs"), runtime(&manifest_dir)?)
}

/// `RUNTIME`: the workspace's `Cargo.toml` and each runtime crate's `Cargo.toml`, `README.md`,
/// `build.rs` (where it has one) and `src/` (what their packages hold), as
/// `("mw-runtime/src/lib.rs", bytes)`; empty when mwgen is built from its published package,
/// which has no checkout around it (its projects then depend on the published runtime).
fn runtime(manifest_dir: &Path) -> io::Result<String> {
    let root = manifest_dir.join("..");
    let crates = ["mw-runtime", "mw-macros"];
    let mut files = Vec::new();
    if crates.iter().all(|c| is_package(&root.join(c), c)) {
        println!(
            "cargo::rerun-if-changed={}",
            root.join("Cargo.toml").display()
        );
        files.push(("Cargo.toml".to_owned(), absolute(&root.join("Cargo.toml"))?));
        for name in crates {
            let dir = root.join(name);
            for file in ["Cargo.toml", "README.md"] {
                println!("cargo::rerun-if-changed={}", dir.join(file).display());
                files.push((format!("{name}/{file}"), absolute(&dir.join(file))?));
            }
            // A crate's build script, where it has one (the runtime's finds the MPI library).
            println!("cargo::rerun-if-changed={}", dir.join("build.rs").display());
            if dir.join("build.rs").is_file() {
                files.push((format!("{name}/build.rs"), absolute(&dir.join("build.rs"))?));
            }
            let src = dir.join("src");
            println!("cargo::rerun-if-changed={}", src.display());
            let mut sources = Vec::new();
            collect(&src, &src, &mut sources)?;
            files.extend(
                sources
                    .into_iter()
                    .map(|(relative, absolute)| (format!("{name}/src/{relative}"), absolute)),
            );
        }
    }
    files.sort();
    let mut code = String::from(
        "/// The runtime's and its macros' sources with the workspace's manifest, by path \
         relative to the workspace; empty when built away from a checkout.\n\
         pub(crate) static RUNTIME: &[(&str, &[u8])] = &[\n",
    );
    for (relative, absolute) in &files {
        let _ = writeln!(code, "    ({relative:?}, include_bytes!({absolute:?})),");
    }
    code.push_str("];\n");
    Ok(code)
}

/// Whether `dir` holds the package `name` (a checkout's crate, not a registry's `name-0.1.0`).
fn is_package(dir: &Path, name: &str) -> bool {
    fs::read_to_string(dir.join("Cargo.toml")).is_ok_and(|text| {
        text.lines()
            .any(|l| l.trim() == format!("name = \"{name}\""))
    })
}

fn absolute(path: &Path) -> io::Result<String> {
    Ok(fs::canonicalize(path)?.to_string_lossy().into_owned())
}

/// Files under `dir`, skipping editor leftovers.
fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, String)>) -> io::Result<()> {
    let entries = fs::read_dir(dir).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot read the templates folder `{}`: {e}", dir.display()),
        )
    })?;
    for entry in entries {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.ends_with('~') || name.ends_with(".swp") || name.starts_with(".#") {
            continue;
        }
        if path.is_dir() {
            collect(root, &path, files)?;
        } else if let Ok(relative) = path.strip_prefix(root) {
            let relative: Vec<_> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            let absolute = fs::canonicalize(&path)?;
            files.push((relative.join("/"), absolute.to_string_lossy().into_owned()));
        }
    }
    Ok(())
}
