//! Files a run writes (`--metrics`, `--trace`, `--checkpoint`, an application's own output):
//! checked before the run starts, so that a typo in a directory costs a second, not the whole
//! run; and written whole or not at all, so that a run killed while writing leaves the previous
//! file (or none), never a cut one.
//!
//! Every output goes the same way: a new file with a random name is created exclusively in the
//! target's directory (it cannot be a link someone planted, nor a file that exists), filled,
//! flushed to the disk, and renamed over the target. A symbolic link at the target is replaced,
//! not followed.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::Path;

use crate::error::{Error, Result};

/// [`check_output`](crate::check_output) on this process alone (worker ranks write nothing: `Ok`).
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

/// Writes the file at `path` whole or not at all: `fill` writes its content to a new file
/// next to it, which replaces `path` only once it is complete and on the disk. A run killed
/// meanwhile leaves the previous `path` as it was.
///
/// # Examples
/// ```
/// use std::io::Write;
/// let path = std::env::temp_dir().join("mw-write-output-example.csv");
/// mw_runtime::write_output(&path, |out| writeln!(out, "i,x"))?;
/// assert_eq!(std::fs::read_to_string(&path)?, "i,x\n");
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`ErrorKind::Io`](crate::ErrorKind::Io) naming `path` when the new file cannot be made,
/// written or renamed, `fill` fails, or `path` is a directory, a device or a pipe.
pub fn write_output(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<()> {
    replace(path, fill).map_err(|e| Error::io(path, e))
}

fn replace(path: &Path, fill: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    refuse_special(path)?;
    let mut file = new_beside(path)?;
    let mut out = BufWriter::new(file.as_file_mut());
    fill(&mut out)?;
    out.flush()?;
    drop(out);
    file.as_file().sync_all()?;
    file.persist(path).map_err(|e| e.error)?;
    // The rename is on the disk once the directory is; a file system that cannot sync a
    // directory still has the file.
    if let Ok(dir) = File::open(directory(path)) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Checks as [`replace`] will write: a new file in the directory, removed again.
fn probe(path: &Path) -> io::Result<()> {
    refuse_special(path)?;
    new_beside(path).map(drop)
}

/// A new file with a random name in `path`'s directory, created exclusively (`O_EXCL`, no link
/// followed) and readable as the umask allows, as a file the program created itself would be.
/// Dropped unrenamed, it is removed.
fn new_beside(path: &Path) -> io::Result<tempfile::NamedTempFile> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".partial");
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    builder.tempfile_in(directory(path)).map_err(without_path)
}

/// The system's error without the temporary file's random name, which tells the user nothing
/// (the message names the output): `tempfile` appends ` at path "..."` to it.
fn without_path(e: io::Error) -> io::Error {
    let text = e.to_string();
    match text.rfind(" at path \"") {
        Some(end) => io::Error::new(e.kind(), &text[..end]),
        None => e,
    }
}

fn directory(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// An output replaces a regular file (or a link) only: a directory, a device or a pipe at its
/// place is a mistake, and renaming over `/dev/stdout` would replace the device's link.
fn refuse_special(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => Err(io::Error::other("it is a directory")),
        Ok(meta) if !(meta.is_file() || meta.file_type().is_symlink()) => Err(io::Error::other(
            format!("it is {}, not a regular file", crate::input::kind_of(&meta)),
        )),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names in `dir`.
    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn missing_directories_and_directories_are_refused_and_nothing_is_left_behind() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("m.json");
        writable(&fresh, "--metrics").unwrap();
        assert!(names(dir.path()).is_empty(), "the probe left a file behind");
        std::fs::write(&fresh, "kept").unwrap();
        writable(&fresh, "--metrics").unwrap();
        assert_eq!(std::fs::read_to_string(&fresh).unwrap(), "kept");
        assert_eq!(names(dir.path()), ["m.json"]);

        let missing = dir.path().join("nowhere/m.json");
        let e = writable(&missing, "--metrics").unwrap_err().to_string();
        assert!(
            e.contains("error: cannot write `") && e.contains("(--metrics)"),
            "{e}"
        );
        assert!(
            e.contains("help: the directory `") && e.contains("does not exist"),
            "{e}"
        );
        assert!(!e.contains(".partial"), "the temporary name is shown: {e}");
        let e = writable(dir.path(), "--trace").unwrap_err().to_string();
        assert!(
            e.contains("it is a directory") && e.contains("help: "),
            "{e}"
        );
        // Under a file: not a directory, whoever runs it (root included).
        let e = writable(&fresh.join("m.json"), "--trace")
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot write"), "{e}");
    }

    #[test]
    fn devices_and_pipes_are_refused_before_the_run() {
        let e = writable(Path::new("/dev/null"), "--metrics")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("it is a character device, not a regular file"),
            "{e}"
        );
    }

    #[test]
    fn a_failed_write_leaves_the_previous_file_and_no_other() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.json");
        write_output(&path, |out| out.write_all(b"first")).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "first");
        let e = write_output(&path, |out| {
            out.write_all(b"half of the sec")?;
            Err(io::Error::other("the disk is full"))
        })
        .unwrap_err();
        assert!(e.to_string().contains("the disk is full"), "{e}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "first");
        assert_eq!(names(dir.path()), ["m.json"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_planted_link_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let precious = dir.path().join("precious");
        fs::write(&precious, "keep me").unwrap();
        // Another user's link where the run will write, and links at every name the old
        // `PATH.partial` scheme would have used.
        let path = dir.path().join("run.ck");
        std::os::unix::fs::symlink(&precious, &path).unwrap();
        std::os::unix::fs::symlink(&precious, dir.path().join("run.ck.partial")).unwrap();
        write_output(&path, |out| out.write_all(b"state")).unwrap();
        assert_eq!(fs::read_to_string(&precious).unwrap(), "keep me");
        assert_eq!(fs::read_to_string(&path).unwrap(), "state");
        assert!(
            !fs::symlink_metadata(&path)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    #[cfg(unix)]
    #[test]
    fn the_new_file_has_the_permissions_a_plain_write_gives() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
        let plain = dir.path().join("plain.csv");
        fs::write(&plain, "x").unwrap();
        let path = dir.path().join("out.csv");
        write_output(&path, |out| out.write_all(b"x")).unwrap();
        assert_eq!(mode(&path), mode(&plain));
    }
}
