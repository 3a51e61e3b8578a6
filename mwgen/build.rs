//! Embeds the project templates of `mwgen new` in the binary, so that an installed `mwgen` works
//! away from this repository.
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
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap_or_default()).join("templates.rs");
    fs::write(out, code)
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
