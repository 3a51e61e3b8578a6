//! Files a user names for a program to read (`--config`, `Mw.toml`, `--resume`, and the metrics
//! and traces `mwgen` reads): read with a bound, so that a device (`/dev/zero`), a pipe nobody
//! writes to, or a file far larger than any of its kind gets a clear error at once instead of
//! filling the memory or waiting for ever.
//!
//! The file is opened without blocking (a pipe opens at once), its kind and size are taken from
//! the open file, and it is read only when it is a regular file within its kind's limit; a file
//! that grows while read is cut at the limit and refused.
//!
//! A configuration file also steers where a run writes, so it must be the user's own: owned by
//! them or by root, and writable by nobody else.

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::path::Path;

/// What a file is read as; each kind has its size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum InputKind {
    /// `Mw.toml` or `--config`: at most 1 MiB, and the user's own.
    Config,
    /// A run's `--metrics`: at most 1 GiB.
    Metrics,
    /// A run's `--trace`: at most 4 GiB (about 35 million events).
    Trace,
    /// A `--checkpoint` to `--resume` from: at most 64 GiB.
    Checkpoint,
}

impl InputKind {
    /// The largest file of this kind that is read, in bytes.
    pub const fn limit(self) -> u64 {
        const MIB: u64 = 1 << 20;
        match self {
            InputKind::Config => MIB,
            InputKind::Metrics => 1024 * MIB,
            InputKind::Trace => 4096 * MIB,
            InputKind::Checkpoint => 64 * 1024 * MIB,
        }
    }

    fn name(self) -> &'static str {
        match self {
            InputKind::Config => "a configuration file",
            InputKind::Metrics => "a metrics file",
            InputKind::Trace => "a trace",
            InputKind::Checkpoint => "a checkpoint",
        }
    }
}

/// Reads the whole file at `path` as a `kind` file.
///
/// # Errors
/// The file cannot be opened; it is not a regular file (a directory, a device, a pipe, a
/// socket); it is larger than `kind`'s [limit](InputKind::limit); or, of a configuration file,
/// it is another user's or others may write it. The message says which, in words that
/// complete "cannot read `PATH`: ".
pub fn read_input(path: &Path, kind: InputKind) -> io::Result<Vec<u8>> {
    let file = open_nonblocking(path)?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(io::Error::other("it is a directory"));
    }
    if !meta.is_file() {
        return Err(io::Error::other(format!(
            "it is {}, not a regular file",
            kind_of(&meta)
        )));
    }
    if kind == InputKind::Config {
        trusted(&meta)?;
    }
    let limit = kind.limit();
    let too_large = |size: u64| {
        io::Error::other(format!(
            "it is {}, more than the {} {} may have",
            exact(size),
            bytes(limit),
            kind.name()
        ))
    };
    if meta.len() > limit {
        return Err(too_large(meta.len()));
    }
    let mut content = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(limit + 1).read_to_end(&mut content)?;
    if content.len() as u64 > limit {
        return Err(too_large(content.len() as u64));
    }
    Ok(content)
}

/// Reads the file at `path` as text (see [`read_input`]).
///
/// # Errors
/// As [`read_input`], and when the file is not UTF-8.
pub fn read_input_text(path: &Path, kind: InputKind) -> io::Result<String> {
    String::from_utf8(read_input(path, kind)?).map_err(|_| io::Error::other("it is not UTF-8 text"))
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // A pipe opened for reading waits for a writer unless asked not to; for a regular file the
    // flag changes nothing.
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> io::Result<File> {
    File::open(path)
}

/// Of a configuration file: the user's own (or root's), and writable by nobody else.
#[cfg(unix)]
fn trusted(meta: &Metadata) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    check_owner(meta.uid(), meta.mode(), rustix::process::getuid().as_raw())
}

#[cfg(not(unix))]
fn trusted(_: &Metadata) -> io::Result<()> {
    Ok(())
}

/// Whether a file of `owner` with `mode` may steer a run of user `me`.
fn check_owner(owner: u32, mode: u32, me: u32) -> io::Result<()> {
    if owner != me && owner != 0 {
        return Err(io::Error::other(Untrusted(format!(
            "it belongs to user {owner}, not to you (user {me}), and a configuration decides \
             where a run writes"
        ))));
    }
    if mode & 0o022 != 0 {
        let who = match (mode & 0o020 != 0, mode & 0o002 != 0) {
            (true, true) => "its group and every other user",
            (true, false) => "its group",
            _ => "every other user",
        };
        return Err(io::Error::other(Untrusted(format!(
            "{who} may write it (mode {:o}), and a configuration decides where a run writes",
            mode & 0o7777
        ))));
    }
    Ok(())
}

/// Why a configuration file that could be read is not: someone else could have written it.
#[derive(Debug)]
pub(crate) struct Untrusted(String);

impl std::fmt::Display for Untrusted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Untrusted {}

impl Untrusted {
    /// Whether `e` is this.
    pub(crate) fn is(e: &io::Error) -> bool {
        e.get_ref().is_some_and(|inner| inner.is::<Untrusted>())
    }
}

/// What a file that is not a regular one is, for a message: "a directory", "a pipe (FIFO)".
pub(crate) fn kind_of(meta: &Metadata) -> &'static str {
    let kind = meta.file_type();
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a pipe (FIFO)";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    if kind.is_dir() {
        "a directory"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// A file's size for people, exact: `512 bytes`, `1 MiB`, `1.5 GiB (1610612737 bytes)`.
fn exact(n: u64) -> String {
    let shown = bytes(n);
    if n < 1024 || n.is_power_of_two() || n % (1 << 20) == 0 {
        shown
    } else {
        format!("{shown} ({n} bytes)")
    }
}

/// A size for people: `512 bytes`, `1 MiB`, `2.5 GiB`.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} bytes");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value.fract() == 0.0 {
        format!("{value} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn refused(path: &Path, kind: InputKind) -> String {
        let started = Instant::now();
        let e = read_input(path, kind).unwrap_err().to_string();
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "took {:?}",
            started.elapsed()
        );
        e
    }

    #[cfg(unix)]
    #[test]
    fn devices_pipes_and_directories_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            refused(Path::new("/dev/zero"), InputKind::Config),
            "it is a character device, not a regular file"
        );
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        assert_eq!(
            refused(&fifo, InputKind::Metrics),
            "it is a pipe (FIFO), not a regular file"
        );
        assert_eq!(refused(dir.path(), InputKind::Trace), "it is a directory");
    }

    #[test]
    fn a_file_beyond_its_kinds_limit_is_refused_without_reading_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.json");
        // Sparse: its size is known at once, nothing is written.
        let file = File::create(&path).unwrap();
        file.set_len(InputKind::Metrics.limit() + 1).unwrap();
        assert_eq!(
            refused(&path, InputKind::Metrics),
            "it is 1.0 GiB (1073741825 bytes), more than the 1 GiB a metrics file may have"
        );
        file.set_len(3 << 20).unwrap();
        assert_eq!(
            refused(&path, InputKind::Config),
            "it is 3 MiB, more than the 1 MiB a configuration file may have"
        );
        assert_eq!(
            read_input(&path, InputKind::Metrics).unwrap().len(),
            3 << 20
        );
        let missing = read_input(&dir.path().join("none"), InputKind::Config).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn a_configuration_must_be_the_users_own() {
        let e = check_owner(1001, 0o100644, 0).unwrap_err().to_string();
        assert!(
            e.starts_with("it belongs to user 1001, not to you (user 0)"),
            "{e}"
        );
        // Root's own files and the user's are read.
        check_owner(0, 0o100644, 1000).unwrap();
        check_owner(1000, 0o100600, 1000).unwrap();
        let e = check_owner(1000, 0o100666, 1000).unwrap_err().to_string();
        assert!(
            e.starts_with("its group and every other user may write it (mode 666)"),
            "{e}"
        );
        let e = check_owner(1000, 0o100620, 1000).unwrap_err().to_string();
        assert!(e.starts_with("its group may write it (mode 620)"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn a_configuration_others_may_write_is_refused_and_a_private_one_read() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("Mw.toml");
        std::fs::write(&path, "[run]\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = refused(&path, InputKind::Config);
        assert!(
            e.contains("every other user may write it (mode 666)"),
            "{e}"
        );
        // Metrics are not a configuration: anyone's may be read.
        assert_eq!(read_input(&path, InputKind::Metrics).unwrap(), b"[run]\n");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(read_input(&path, InputKind::Config).unwrap(), b"[run]\n");
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(bytes(10), "10 bytes");
        assert_eq!(bytes(1 << 20), "1 MiB");
        assert_eq!(bytes(3 << 29), "1.5 GiB");
    }
}
