//! The runtime a project gets when the crates are on no registry: the sources of `mw-runtime`
//! and `mw-macros` this mwgen was built with (embedded by `build.rs` from its checkout), written
//! into the project's `vendor/` folder, each with a manifest of its own.
//!
//! In the repository the two crates take their version, edition and dependencies from the
//! workspace (`version.workspace = true`); a project has no such workspace, so their manifests
//! are written with those values filled in, as `cargo package` does, and with what only the
//! repository has (tests, benchmarks, dev-dependencies, the workspace's lints) left out.

use toml::{Table, Value};

use super::template::File;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/runtime.rs"));
}

/// The folder of the project that holds the runtime's crates.
pub(crate) const FOLDER: &str = "vendor";

/// The crates written, in the order they depend on each other.
const CRATES: [&str; 2] = ["mw-macros", "mw-runtime"];

/// Whether this mwgen carries the runtime's sources (it was built from a checkout).
pub(crate) fn available() -> bool {
    !embedded::RUNTIME.is_empty()
}

/// The files of `vendor/`, paths relative to the project.
///
/// # Errors
/// A manifest of the embedded sources that does not read as the repository's (a bug of this
/// build of mwgen, reported rather than written).
pub(crate) fn files() -> Result<Vec<File>, String> {
    let workspace = manifest("Cargo.toml")?;
    let mut files = Vec::new();
    for (path, bytes) in embedded::RUNTIME {
        let Some((name, rest)) = path.split_once('/') else {
            continue; // the workspace's manifest, read above
        };
        let bytes = if rest == "Cargo.toml" {
            standalone(name, &manifest(path)?, &workspace)?.into_bytes()
        } else {
            bytes.to_vec()
        };
        files.push(File {
            path: format!("{FOLDER}/{path}"),
            bytes,
            executable: false,
        });
    }
    Ok(files)
}

/// An embedded manifest, parsed.
fn manifest(path: &str) -> Result<Table, String> {
    let (_, bytes) = embedded::RUNTIME
        .iter()
        .find(|(p, _)| *p == path)
        .ok_or_else(|| format!("the embedded runtime has no `{path}`"))?;
    let text = std::str::from_utf8(bytes).map_err(|e| format!("`{path}`: {e}"))?;
    toml::from_str(text).map_err(|e| format!("`{path}`: {e}"))
}

/// The manifest of crate `name` with the workspace's values filled in.
fn standalone(name: &str, manifest: &Table, workspace: &Table) -> Result<String, String> {
    let shared = |key: &str| {
        workspace
            .get("workspace")
            .and_then(|w| w.get(key))
            .and_then(Value::as_table)
            .cloned()
            .unwrap_or_default()
    };
    let (package_values, dependency_values) = (shared("package"), shared("dependencies"));
    let mut out = Table::new();
    for (key, value) in manifest {
        match key.as_str() {
            "package" => {
                let package = inherit_package(value, &package_values, name)?;
                out.insert(key.clone(), Value::Table(package));
            }
            "dependencies" | "build-dependencies" => {
                let deps = inherit_dependencies(value, &dependency_values, name)?;
                out.insert(key.clone(), Value::Table(deps));
            }
            "target" => {
                let mut targets = Table::new();
                for (cfg, table) in value.as_table().into_iter().flatten() {
                    let Some(deps) = table.get("dependencies") else {
                        continue;
                    };
                    let deps = inherit_dependencies(deps, &dependency_values, name)?;
                    let mut target = Table::new();
                    target.insert("dependencies".to_owned(), Value::Table(deps));
                    targets.insert(cfg.clone(), Value::Table(target));
                }
                out.insert(key.clone(), Value::Table(targets));
            }
            // What only the repository has: its tests, benchmarks and their dependencies, and
            // the workspace's lints.
            "dev-dependencies" | "test" | "bench" | "example" | "lints" => {}
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    // `[package]` first, as people write it (the table's keys are kept sorted).
    let package: Table = out
        .remove("package")
        .into_iter()
        .map(|p| ("package".to_owned(), p))
        .collect();
    let error = |e: toml::ser::Error| format!("`{name}/Cargo.toml`: {e}");
    let text =
        toml::to_string(&package).map_err(error)? + "\n" + &toml::to_string(&out).map_err(error)?;
    Ok(format!(
        "# {name} {}, written by mwgen {} with the versions and settings of the mwgen \
         workspace\n# it was built in. Its sources are those of that version: to update them, \
         make a new\n# project with a newer mwgen, or depend on the published crate.\n\n{text}",
        version(manifest, &package_values),
        env!("CARGO_PKG_VERSION"),
    ))
}

/// `[package]` with each `key.workspace = true` replaced by the workspace's value.
fn inherit_package(value: &Value, workspace: &Table, name: &str) -> Result<Table, String> {
    let mut package = Table::new();
    for (key, value) in value.as_table().into_iter().flatten() {
        let value = if inherits(value) {
            workspace.get(key).cloned().ok_or_else(|| {
                format!("`{name}` inherits `package.{key}`, which the workspace does not set")
            })?
        } else {
            value.clone()
        };
        package.insert(key.clone(), value);
    }
    Ok(package)
}

/// A dependency table with each `dep.workspace = true` replaced by the workspace's entry (its
/// features joined with the crate's, `optional` kept), and the other runtime crate by path.
fn inherit_dependencies(value: &Value, workspace: &Table, name: &str) -> Result<Table, String> {
    let mut deps = Table::new();
    for (dep, value) in value.as_table().into_iter().flatten() {
        let mut entry = if inherits(value) {
            match workspace.get(dep) {
                Some(Value::String(version)) => {
                    let mut t = Table::new();
                    t.insert("version".to_owned(), Value::String(version.clone()));
                    t
                }
                Some(Value::Table(t)) => t.clone(),
                _ => {
                    return Err(format!(
                        "`{name}` inherits the dependency `{dep}`, which the workspace does not \
                         list"
                    ));
                }
            }
        } else {
            match value {
                Value::String(version) => {
                    let mut t = Table::new();
                    t.insert("version".to_owned(), Value::String(version.clone()));
                    t
                }
                Value::Table(t) => t.clone(),
                _ => return Err(format!("`{name}`: the dependency `{dep}` is not a table")),
            }
        };
        if let Some(own) = value.as_table() {
            for (key, value) in own {
                match key.as_str() {
                    "workspace" => {}
                    "features" => {
                        let mut features: Vec<Value> = entry
                            .get("features")
                            .and_then(Value::as_array)
                            .cloned()
                            .unwrap_or_default();
                        for feature in value.as_array().into_iter().flatten() {
                            if !features.contains(feature) {
                                features.push(feature.clone());
                            }
                        }
                        entry.insert(key.clone(), Value::Array(features));
                    }
                    _ => {
                        entry.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        if CRATES.contains(&dep.as_str()) {
            entry.insert("path".to_owned(), Value::String(format!("../{dep}")));
        }
        deps.insert(dep.clone(), Value::Table(entry));
    }
    Ok(deps)
}

/// `{ workspace = true }`.
fn inherits(value: &Value) -> bool {
    value
        .get("workspace")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The crate's version, its own or the workspace's.
fn version(manifest: &Table, workspace: &Table) -> String {
    let own = manifest.get("package").and_then(|p| p.get("version"));
    let version = match own {
        Some(v) if inherits(v) => workspace.get("version"),
        other => other,
    };
    version
        .and_then(Value::as_str)
        .unwrap_or("(unknown version)")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Table {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn workspace_values_are_filled_in() {
        let workspace = table(
            r#"
            [workspace.package]
            version = "0.3.1"
            edition = "2024"
            [workspace.dependencies]
            mw-macros = { path = "mw-macros", version = "0.3.1" }
            clap = { version = "4.6", features = ["derive"] }
            libc = "0.2"
            "#,
        );
        let manifest = table(
            r#"
            [package]
            name = "mw-runtime"
            version.workspace = true
            edition.workspace = true
            publish = true
            [features]
            mpi = ["dep:libc"]
            [dependencies]
            clap = { workspace = true, features = ["env"] }
            libc = { workspace = true, optional = true }
            mw-macros.workspace = true
            [target.'cfg(unix)'.dependencies]
            libc.workspace = true
            [dev-dependencies]
            tempfile = "3"
            [lints]
            workspace = true
            [[bench]]
            name = "engine"
            "#,
        );
        let text = standalone("mw-runtime", &manifest, &workspace).unwrap();
        assert!(
            text.starts_with("# mw-runtime 0.3.1, written by mwgen"),
            "{text}"
        );
        let out = table(&text);
        assert_eq!(out["package"]["version"].as_str(), Some("0.3.1"));
        assert_eq!(out["package"]["edition"].as_str(), Some("2024"));
        assert_eq!(out["package"]["publish"].as_bool(), Some(true));
        let deps = &out["dependencies"];
        assert_eq!(
            deps["clap"]["features"],
            Value::Array(vec!["derive".into(), "env".into()])
        );
        assert_eq!(deps["libc"]["version"].as_str(), Some("0.2"));
        assert_eq!(deps["libc"]["optional"].as_bool(), Some(true));
        assert_eq!(deps["mw-macros"]["path"].as_str(), Some("../mw-macros"));
        assert_eq!(
            out["target"]["cfg(unix)"]["dependencies"]["libc"]["version"].as_str(),
            Some("0.2")
        );
        for gone in ["dev-dependencies", "lints", "bench"] {
            assert!(!out.contains_key(gone), "{gone}: {text}");
        }
        assert_eq!(
            out["features"]["mpi"],
            Value::Array(vec!["dep:libc".into()])
        );
    }

    #[test]
    fn a_missing_workspace_value_is_an_error() {
        let manifest = table("[package]\nname = \"x\"\nlicense.workspace = true\n");
        let error = standalone("x", &manifest, &Table::new()).unwrap_err();
        assert!(error.contains("`package.license`"), "{error}");
    }

    #[test]
    fn a_checkout_build_carries_both_crates() {
        // The tests build mwgen from this repository.
        assert!(available());
        let files = files().unwrap();
        for path in [
            "vendor/mw-runtime/Cargo.toml",
            "vendor/mw-runtime/src/lib.rs",
            "vendor/mw-macros/Cargo.toml",
            "vendor/mw-macros/src/lib.rs",
        ] {
            assert!(files.iter().any(|f| f.path == path), "{path}");
        }
        assert!(!files.iter().any(|f| f.path == "vendor/Cargo.toml"));
    }
}
