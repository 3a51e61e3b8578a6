//! Where a project made by `mwgen new` gets the runtime: a checkout (`--runtime-path`), or by
//! default the published version of mwgen's own version when cargo's cache holds it, else the
//! sources this mwgen carries (written into the project's `vendor/`); and the lock file it
//! ships so that it builds offline.

#![allow(clippy::unwrap_used)] // helpers of tests: a failure is a test failure

use std::fs;
use std::path::Path;

use assert_cmd::cargo::cargo_bin_cmd;

/// The runtime requirement that goes with this mwgen: `0.1` for 0.1.x.
fn own_version() -> String {
    let version = env!("CARGO_PKG_VERSION");
    version.split('.').take(2).collect::<Vec<_>>().join(".")
}

/// Runs `mwgen new demo ARGS` in `dir` with `cargo_home` as cargo's home.
fn new(dir: &Path, cargo_home: &Path, args: &[&str]) -> assert_cmd::assert::Assert {
    cargo_bin_cmd!("mwgen")
        .current_dir(dir)
        .env("CARGO_HOME", cargo_home)
        .args(["new", "demo"])
        .args(args)
        .assert()
}

/// Built from this checkout, mwgen carries the runtime's sources and writes them into the
/// project, with manifests that need no workspace.
#[test]
fn without_the_runtime_in_the_cache_the_project_gets_its_sources() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    new(dir.path(), home.path(), &[]).success();

    let project = dir.path().join("demo");
    let manifest = fs::read_to_string(project.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains("mw = { package = \"mw-runtime\", path = \"vendor/mw-runtime\" }"),
        "{manifest}"
    );
    let mw_toml = fs::read_to_string(project.join("Mw.toml")).unwrap();
    assert!(
        mw_toml.contains("runtime = \"vendor/mw-runtime\""),
        "{mw_toml}"
    );
    let readme = fs::read_to_string(project.join("README.md")).unwrap();
    assert!(readme.contains("`vendor/` holds the sources"), "{readme}");

    // The sources are this checkout's, file for file.
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for file in [
        "mw-runtime/src/lib.rs",
        "mw-macros/src/lib.rs",
        "mw-runtime/README.md",
    ] {
        assert_eq!(
            fs::read(project.join("vendor").join(file)).unwrap(),
            fs::read(checkout.join(file)).unwrap(),
            "{file}"
        );
    }
    // Their manifests stand alone: nothing inherited from a workspace the project does not have.
    for name in ["mw-runtime", "mw-macros"] {
        let text =
            fs::read_to_string(project.join("vendor").join(name).join("Cargo.toml")).unwrap();
        let table: toml::Table = toml::from_str(&text).unwrap();
        assert!(!text.contains("workspace ="), "{text}");
        assert!(!text.contains(".workspace"), "{text}");
        assert_eq!(table["package"]["name"].as_str(), Some(name));
        assert!(!table.contains_key("dev-dependencies"), "{text}");
    }
    let runtime = fs::read_to_string(project.join("vendor/mw-runtime/Cargo.toml")).unwrap();
    assert!(runtime.contains("path = \"../mw-macros\""), "{runtime}");

    // Made again with --force, the runtime's many files are named by their folder.
    let assert = new(dir.path(), home.path(), &["--force"]).success();
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).into_owned();
    let replaced = stdout.lines().find(|l| l.starts_with("Replaced")).unwrap();
    assert!(replaced.ends_with(", vendor/"), "{replaced}");
    assert!(!replaced.contains("vendor/mw-runtime"), "{replaced}");
}

#[test]
fn a_cached_runtime_is_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let registry = home
        .path()
        .join("registry/cache/index.crates.io-0000000000000000");
    fs::create_dir_all(&registry).unwrap();
    let version = own_version();
    fs::write(registry.join(format!("mw-runtime-{version}.7.crate")), "").unwrap();
    // Another crate whose name starts the same is not the runtime.
    fs::write(registry.join("mw-runtime-extra-9.0.0.crate"), "").unwrap();
    new(dir.path(), home.path(), &[]).success();

    let project = dir.path().join("demo");
    let manifest = fs::read_to_string(project.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains(&format!(
            "mw = {{ package = \"mw-runtime\", version = \"{version}\" }}"
        )),
        "{manifest}"
    );
    let mw_toml = fs::read_to_string(project.join("Mw.toml")).unwrap();
    assert!(
        mw_toml.contains(&format!("runtime_version = \"{version}\"")),
        "{mw_toml}"
    );
    let readme = fs::read_to_string(project.join("README.md")).unwrap();
    assert!(
        readme.contains("names the runtime's published version"),
        "{readme}"
    );
    let lock = fs::read_to_string(project.join("Cargo.lock")).unwrap();
    assert!(lock.contains("name = \"clap\""), "{lock}");
}

#[test]
fn a_version_given_is_used_without_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    new(dir.path(), home.path(), &["--runtime-version", "0.1.2"]).success();
    let manifest = fs::read_to_string(dir.path().join("demo/Cargo.toml")).unwrap();
    assert!(
        manifest.contains("mw = { package = \"mw-runtime\", version = \"0.1.2\" }"),
        "{manifest}"
    );

    let assert = new(
        dir.path(),
        home.path(),
        &["--runtime-version", "latest", "--force"],
    )
    .code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(
        stderr.starts_with("error: invalid runtime version `latest`"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "help: give a version of `mw-runtime` as cargo writes it, e.g. `--runtime-version {}`",
            own_version()
        )),
        "{stderr}"
    );
}

#[test]
fn a_path_and_a_version_cannot_both_be_given() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let assert = new(
        dir.path(),
        home.path(),
        &["--runtime-path", "x", "--runtime-version", "0.1"],
    )
    .code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(stderr.contains("cannot be used with"), "{stderr}");
}

/// A member of a workspace builds with that workspace's lock file, so it gets none.
#[test]
fn only_a_project_of_its_own_gets_a_lock_file() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    new(
        dir.path(),
        home.path(),
        &["--runtime-version", "0.1", "--workspace-member"],
    )
    .success();
    assert!(dir.path().join("demo/Cargo.toml").is_file());
    assert!(!dir.path().join("demo/Cargo.lock").exists());
}
