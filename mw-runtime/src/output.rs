//! Files a run writes when it ends (`--metrics`, `--trace`, an application's own output),
//! checked before it starts: a typo in a directory costs a second, not the whole run.

use std::fs::{self, OpenOptions};
use std::io;
use std::path::Path;

use crate::error::{Error, Result};

/// Checks that this process can write `path`, given with `flag` (named in the error), before
/// any work is done. An existing file is opened for appending and left as it was; otherwise
/// the file is created and removed again, so nothing is left behind.
///
/// Under MPI only rank 0, the master, writes outputs, so the other ranks take its verdict:
/// when it fails, they leave at once, quietly, and the master returns the error (so every rank
/// of the job must call this with the same paths, as the same program with the same arguments
/// does). A rank that left alone would leave the others waiting for it.
///
/// # Examples
/// ```
/// let dir = std::env::temp_dir();
/// mw_runtime::check_output(&dir.join("final.csv"), "--out")?;
/// let e = mw_runtime::check_output(&dir.join("no-such-dir/final.csv"), "--out").unwrap_err();
/// assert!(e.to_string().starts_with("error: cannot write"));
/// # Ok::<(), mw_runtime::Error>(())
/// ```
///
/// # Errors
/// A configuration error, `cannot write PATH` with the reason and what to do, when the
/// directory is missing, is not writable, or `path` is a directory.
pub fn check_output(path: &Path, flag: &str) -> Result<()> {
    crate::run::agreed(writable(path, flag))
}

/// [`check_output`] on this process alone (worker ranks write nothing: `Ok`).
pub(crate) fn writable(path: &Path, flag: &str) -> Result<()> {
    if crate::launch::is_worker_rank() {
        return Ok(());
    }
    probe(path).map_err(|e| {
        let help = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(dir) if !dir.is_dir() => format!(
                "the directory `{}` does not exist: create it, or give {flag} another path",
                dir.display()
            ),
            _ => format!("give {flag} a path in a directory you can write"),
        };
        Error::config(
            format!("error: cannot write `{}` ({flag}): {e}", path.display()),
            help,
        )
    })
}

fn probe(path: &Path) -> io::Result<()> {
    match fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Err(io::Error::other("it is a directory")),
        Ok(_) => OpenOptions::new().append(true).open(path).map(drop),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            OpenOptions::new().write(true).create_new(true).open(path)?;
            fs::remove_file(path)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_directories_and_directories_are_refused_and_nothing_is_left_behind() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("m.json");
        check_output(&fresh, "--metrics").unwrap();
        assert!(!fresh.exists(), "the probe left a file behind");
        std::fs::write(&fresh, "kept").unwrap();
        check_output(&fresh, "--metrics").unwrap();
        assert_eq!(std::fs::read_to_string(&fresh).unwrap(), "kept");

        let missing = dir.path().join("nowhere/m.json");
        let e = check_output(&missing, "--metrics").unwrap_err().to_string();
        assert!(
            e.contains("error: cannot write `") && e.contains("(--metrics)"),
            "{e}"
        );
        assert!(
            e.contains("help: the directory `") && e.contains("does not exist"),
            "{e}"
        );
        let e = check_output(dir.path(), "--trace").unwrap_err().to_string();
        assert!(
            e.contains("it is a directory") && e.contains("help: "),
            "{e}"
        );
        // Under a file: not a directory, whoever runs it (root included).
        let e = check_output(&fresh.join("m.json"), "--trace")
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot write"), "{e}");
    }
}
