//! The control endpoint's per-run token: who may retune a run.
//!
//! A loopback port is open to every local user, so a request counts only after the client has
//! shown the run's token (`auth TOKEN`). The token is random, written when the endpoint opens
//! to a file only its owner can read, in a directory only its owner can enter:
//! `$XDG_RUNTIME_DIR/mwgen/` when that is set (the per-user runtime directory), else
//! `mwgen-UID/` under the temporary directory, made with mode 0700 and refused if it is not the
//! user's own and private. The file's name comes from the address, so `mwgen ctl ADDR` of the
//! same user finds it by itself; other users find no token to read.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::ControlAddr;

/// Bytes of randomness in a token (shown as twice as many hex digits).
const TOKEN_BYTES: usize = 16;

/// A run's token, and the file that holds it until the endpoint closes.
#[derive(Debug)]
pub(crate) struct TokenFile {
    path: PathBuf,
    token: String,
}

impl TokenFile {
    /// Makes a new token for the endpoint at `addr` and writes it to its file (mode 0600),
    /// replacing one a crashed run left.
    ///
    /// # Errors
    /// When the private directory cannot be made or is not private, or the file cannot be
    /// written.
    pub(super) fn create(addr: &ControlAddr) -> io::Result<TokenFile> {
        let path = private_dir(true)?.join(file_name(addr));
        let token = new_token()?;
        match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&path)?;
        writeln!(file, "{token}")?;
        Ok(TokenFile { path, token })
    }

    /// The token.
    pub(super) fn token(&self) -> &str {
        &self.token
    }
}

impl Drop for TokenFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// The file that holds the token of the endpoint at `addr`, for this user.
///
/// # Errors
/// When the user's private directory is missing or not private.
pub(super) fn token_path(addr: &ControlAddr) -> io::Result<PathBuf> {
    Ok(private_dir(false)?.join(file_name(addr)))
}

/// Reads the token of the endpoint at `addr` (see [`token_path`]).
///
/// # Errors
/// When there is no token for that address (no run of this user listens there) or it cannot
/// be read.
pub(super) fn read_token(addr: &ControlAddr) -> io::Result<String> {
    let path = dir_path().join(file_name(addr));
    let text = token_path(addr)
        .and_then(|_| fs::read_to_string(&path))
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot read the run's token `{}`: {e}", path.display()),
            )
        })?;
    Ok(text.trim().to_owned())
}

/// Whether `given` is `expected`, in time that does not depend on where they differ.
pub(crate) fn same_token(given: &str, expected: &str) -> bool {
    given.len() == expected.len()
        && given
            .bytes()
            .zip(expected.bytes())
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
}

/// `tcp-127.0.0.1-7070`, or for a Unix socket `unix-` and a hash of its absolute path.
fn file_name(addr: &ControlAddr) -> String {
    match addr {
        ControlAddr::Tcp(a) => {
            let ip = a.ip().to_string().replace(':', "_");
            format!("tcp-{ip}-{}.token", a.port())
        }
        ControlAddr::Unix(path) => {
            let path = std::path::absolute(path).unwrap_or_else(|_| path.clone());
            format!(
                "unix-{:016x}.token",
                fnv1a(path.as_os_str().as_encoded_bytes())
            )
        }
    }
}

/// FNV-1a, 64 bits: a stable name for a path, the same in every process.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// This user's private directory for tokens, made when `create` (mode 0700).
fn private_dir(create: bool) -> io::Result<PathBuf> {
    let dir = dir_path();
    if create {
        let mut builder = fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        match builder.create(&dir) {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
    }
    check_private(&dir)?;
    Ok(dir)
}

/// Where this user's tokens go.
fn dir_path() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(runtime) => PathBuf::from(runtime).join("mwgen"),
        None => std::env::temp_dir().join(format!("mwgen-{}", user_id())),
    }
}

/// Refuses a directory another user owns or can enter: its tokens could be read or replaced.
#[cfg(unix)]
fn check_private(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let meta = fs::symlink_metadata(dir)?;
    let private =
        meta.is_dir() && meta.uid() == user_id() && meta.permissions().mode() & 0o077 == 0;
    if private {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "`{}` is not a directory private to this user (owner {}, mode {:o}): remove it",
                dir.display(),
                meta.uid(),
                meta.permissions().mode() & 0o7777
            ),
        ))
    }
}

#[cfg(not(unix))]
fn check_private(_: &Path) -> io::Result<()> {
    Ok(())
}

/// The effective user id: the owner of the files this process makes.
#[cfg(unix)]
fn user_id() -> u32 {
    rustix::process::geteuid().as_raw()
}

#[cfg(not(unix))]
fn user_id() -> u32 {
    0
}

/// The OS's random bytes, from the device every Unix has.
#[cfg(unix)]
fn new_token() -> io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; TOKEN_BYTES];
    fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Without the OS's random bytes: the standard library's randomly seeded hasher.
#[cfg(not(unix))]
fn new_token() -> io::Result<String> {
    use std::hash::{BuildHasher, Hasher};
    let mut token = String::new();
    for _ in 0..TOKEN_BYTES / 8 {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u128(std::time::UNIX_EPOCH.elapsed().map_or(0, |d| d.as_nanos()));
        token.push_str(&format!("{:016x}", hasher.finish()));
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_stable_and_tokens_differ() {
        let tcp: ControlAddr = "127.0.0.1:7070".parse().unwrap();
        assert_eq!(file_name(&tcp), "tcp-127.0.0.1-7070.token");
        let unix = ControlAddr::Unix(PathBuf::from("/tmp/a.sock"));
        assert_eq!(file_name(&unix), file_name(&unix.clone()));
        assert_ne!(
            file_name(&unix),
            file_name(&ControlAddr::Unix(PathBuf::from("/tmp/b.sock")))
        );
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_eq!(a.len(), 2 * TOKEN_BYTES);
        assert_ne!(a, b);
        assert!(same_token(&a, &a.clone()) && !same_token(&a, &b) && !same_token(&a, ""));
    }
}
