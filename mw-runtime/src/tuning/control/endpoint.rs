//! The external control endpoint (`--control ADDR`, MATE-style): a running program's tunables
//! on a local socket, with a line protocol.
//!
//! Requests, one per line:
//!
//! | request | reply |
//! |---|---|
//! | `get` | `ok nworkers=4 factor=0.5 policy=daf` |
//! | `get NAME` | `ok 4` |
//! | `set NAME VALUE` | `ok nworkers = 8 from the next iteration` |
//! | `set NAME auto` | `ok nworkers is tuned again` |
//! | `watch` | `ok watching`, then one line per iteration: `iteration=12 nworkers=4 factor=0.5 policy=daf time_ms=23.100 predicted_ms=22.800`, and `end` when the run ends |
//! | `help` | `ok ...` |
//!
//! A failed request gets `err MESSAGE`, followed by a tab and advice when there is some. A value
//! set from outside takes effect at the next iteration boundary, is logged as a decision with
//! reason `external`, and holds the tunable (the tuner leaves it alone) until `set NAME auto`.
//! Requests between two boundaries are merged: the last value set for a tunable wins, so a
//! flood of `set` lines makes at most one decision per tunable and boundary.
//!
//! **Who may ask.** The first line of a connection must be `auth TOKEN` with the run's token
//! (answered `ok authenticated`), else the connection is refused and closed; a client has
//! [`AUTH_TIMEOUT`] to send it (`mwgen ctl` sends it at once). The token is written, for the user who started the run only,
//! where [`ControlAddr::connect`] (and so `mwgen ctl`) finds it from the address (see
//! `token.rs`). A Unix socket is made with mode 0600 whatever the umask: it is bound in a
//! private directory, made 0600, then moved to its path.
//!
//! **Bounds.** Connections that have not authenticated yet and those that have are counted
//! apart, so that connections that never authenticate (another local user's) cannot keep the
//! owner out: at most [`MAX_UNAUTHENTICATED`] of the first kind wait at once, and one more
//! closes the oldest of them; at most [`MAX_CONNECTIONS`] of the second kind are served at once
//! (one thread each; one more is refused with an error line after its `auth`). A request line
//! longer than [`MAX_LINE`] bytes closes its connection with an error line.
//!
//! The server runs on threads of its own and holds no lock while it reads or writes a socket; the
//! engine only queues a line per iteration for each watcher (dropped when a watcher lags 64
//! lines behind). The endpoint is closed, and a Unix socket file and the token file removed, when
//! the run ends.

use std::fmt;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TrySendError, bounded};

use super::token::{self, TokenFile};
use crate::error::{Error, ErrorKind, Result, ValueError};
use crate::tuning::tunables::{Source, Tunables, TunablesHandle, Why};

/// How often blocked server threads look whether the run has ended.
const POLL: Duration = Duration::from_millis(50);
/// Lines queued for a watcher before new ones are dropped.
const WATCH_BACKLOG: usize = 64;
/// The longest request line accepted, in bytes; a longer one closes the connection.
pub const MAX_LINE: usize = 64 * 1024;
/// Authenticated connections served at once; more are refused.
pub const MAX_CONNECTIONS: usize = 8;
/// Connections waiting to authenticate at once; one more closes the one that waited longest.
pub const MAX_UNAUTHENTICATED: usize = 8;
/// How long a new connection has to send `auth TOKEN`.
pub const AUTH_TIMEOUT: Duration = Duration::from_secs(1);
/// How the refusal of one connection too many begins; the client tells it from a wrong token.
const BUSY: &str = "the control endpoint serves";

/// Where a control endpoint listens: a loopback TCP address or a Unix socket path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlAddr {
    /// `127.0.0.1:PORT`, `[::1]:PORT` or `localhost:PORT`.
    Tcp(SocketAddr),
    /// A Unix socket path.
    Unix(PathBuf),
}

impl FromStr for ControlAddr {
    type Err = ValueError;

    fn from_str(text: &str) -> std::result::Result<Self, ValueError> {
        const HELP: &str = "give 127.0.0.1:PORT (a port from 0 to 65535; 0 picks a free one) or \
                            a Unix socket path (./NAME for one in this directory)";
        let text = text.trim();
        if text.is_empty() {
            return Err(ValueError::new("the control address is empty", HELP));
        }
        let tcp = match text.strip_prefix("localhost:") {
            Some(port) => format!("127.0.0.1:{port}").parse::<SocketAddr>().ok(),
            None => text.parse::<SocketAddr>().ok(),
        };
        match tcp {
            Some(addr) if addr.ip().is_loopback() => Ok(ControlAddr::Tcp(addr)),
            Some(addr) => Err(ValueError::new(
                format!("`{addr}` is not a loopback address: the control endpoint is local only"),
                HELP,
            )),
            // `HOST:DIGITS` with no `/` was meant as a TCP address, not a socket file's name.
            None if looks_like_host_port(text) => {
                let port = text
                    .rsplit_once(':')
                    .and_then(|(_, p)| p.parse::<u64>().ok());
                let why = match port {
                    Some(port) if port > u64::from(u16::MAX) => {
                        format!(": port {port} is past 65535")
                    }
                    _ => String::new(),
                };
                Err(ValueError::new(
                    format!("`{text}` is not a valid TCP address{why}"),
                    HELP,
                ))
            }
            None => Ok(ControlAddr::Unix(PathBuf::from(text))),
        }
    }
}

/// `127.0.0.1:70000`, `localhost:99999`, `[::1]:65536`: a host, a colon, a port of digits.
fn looks_like_host_port(text: &str) -> bool {
    !text.contains('/')
        && text.rsplit_once(':').is_some_and(|(host, port)| {
            !host.is_empty() && !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit())
        })
}

impl fmt::Display for ControlAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ControlAddr::Tcp(addr) => addr.fmt(f),
            ControlAddr::Unix(path) => path.display().fmt(f),
        }
    }
}

impl ControlAddr {
    /// Connects to a running program's endpoint and authenticates with the run's token, which
    /// a program started by the same user wrote where [`token_path`](Self::token_path) says.
    ///
    /// # Errors
    /// When nothing listens there; [`io::ErrorKind::PermissionDenied`] when no token of this user
    /// is there to read (the run is another user's) or the program refuses the token.
    pub fn connect(&self) -> io::Result<ControlStream> {
        let mut stream = self.connect_unauthenticated()?;
        let token = token::read_token(self)
            .map_err(|e| io::Error::new(io::ErrorKind::PermissionDenied, e.to_string()))?;
        stream.set_read_timeout(Some(AUTH_TIMEOUT * 5))?;
        match stream.request(&format!("auth {token}"))? {
            Reply::Ok(_) => {
                stream.set_read_timeout(None)?;
                Ok(stream)
            }
            Reply::Err { message, .. } if message.starts_with(BUSY) => {
                Err(io::Error::new(io::ErrorKind::ResourceBusy, message))
            }
            Reply::Err { message, .. } => Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("the program refused the token: {message}"),
            )),
        }
    }

    /// The file that holds the token of a run listening here, for the current user.
    ///
    /// # Errors
    /// When the user's token directory is not private to them.
    pub fn token_path(&self) -> io::Result<PathBuf> {
        token::token_path(self)
    }

    /// Connects without authenticating: every request but `auth TOKEN` is then refused.
    ///
    /// # Errors
    /// When nothing listens there.
    pub fn connect_unauthenticated(&self) -> io::Result<ControlStream> {
        match self {
            ControlAddr::Tcp(addr) => TcpStream::connect(addr).map(ControlStream::Tcp),
            #[cfg(unix)]
            ControlAddr::Unix(path) => {
                std::os::unix::net::UnixStream::connect(path).map(ControlStream::Unix)
            }
            #[cfg(not(unix))]
            ControlAddr::Unix(_) => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "Unix sockets are not available on this platform: use 127.0.0.1:PORT",
            )),
        }
    }
}

/// A connection to a control endpoint.
#[derive(Debug)]
pub enum ControlStream {
    Tcp(TcpStream),
    #[cfg(unix)]
    Unix(std::os::unix::net::UnixStream),
}

impl ControlStream {
    /// Another handle on the same connection.
    ///
    /// # Errors
    /// As the socket's own `try_clone`.
    pub fn try_clone(&self) -> io::Result<ControlStream> {
        Ok(match self {
            ControlStream::Tcp(s) => ControlStream::Tcp(s.try_clone()?),
            #[cfg(unix)]
            ControlStream::Unix(s) => ControlStream::Unix(s.try_clone()?),
        })
    }

    /// Closes the connection both ways: a thread reading it sees its end.
    fn shutdown(&self) {
        let _ = match self {
            ControlStream::Tcp(s) => s.shutdown(std::net::Shutdown::Both),
            #[cfg(unix)]
            ControlStream::Unix(s) => s.shutdown(std::net::Shutdown::Both),
        };
    }

    /// Bounds how long a read waits (`None`: forever).
    ///
    /// # Errors
    /// As the socket's own `set_read_timeout`.
    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            ControlStream::Tcp(s) => s.set_read_timeout(timeout),
            #[cfg(unix)]
            ControlStream::Unix(s) => s.set_read_timeout(timeout),
        }
    }

    /// Sends one request line and reads the reply line: the text after `ok`, or the message and
    /// the advice of an `err`.
    ///
    /// # Errors
    /// An I/O error, or the endpoint closing before it replied.
    pub fn request(&mut self, line: &str) -> io::Result<Reply> {
        writeln!(self, "{line}")?;
        self.flush()?;
        let mut reply = Vec::new();
        // One byte at a time: nothing that follows the reply (a watch) is swallowed.
        loop {
            let mut byte = [0u8];
            if self.read(&mut byte)? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the endpoint closed the connection",
                ));
            }
            if byte[0] == b'\n' {
                break;
            }
            reply.push(byte[0]);
            if reply.len() > MAX_LINE {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "reply too long"));
            }
        }
        Ok(Reply::parse(&String::from_utf8_lossy(&reply)))
    }
}

impl Read for ControlStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            ControlStream::Tcp(s) => s.read(buf),
            #[cfg(unix)]
            ControlStream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for ControlStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            ControlStream::Tcp(s) => s.write(buf),
            #[cfg(unix)]
            ControlStream::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            ControlStream::Tcp(s) => s.flush(),
            #[cfg(unix)]
            ControlStream::Unix(s) => s.flush(),
        }
    }
}

/// A reply of the control endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `ok TEXT`.
    Ok(String),
    /// `err MESSAGE[\tHELP]`.
    Err {
        message: String,
        help: Option<String>,
    },
}

impl Reply {
    /// Reads a reply line.
    pub fn parse(line: &str) -> Reply {
        let line = line.trim_end_matches(['\r', '\n']);
        if let Some(rest) = line.strip_prefix("err") {
            let rest = rest.trim_start();
            let (message, help) = match rest.split_once('\t') {
                Some((m, h)) => (m.to_owned(), Some(h.to_owned())),
                None => (rest.to_owned(), None),
            };
            Reply::Err { message, help }
        } else {
            Reply::Ok(
                line.strip_prefix("ok")
                    .unwrap_or(line)
                    .trim_start()
                    .to_owned(),
            )
        }
    }

    fn line(&self) -> String {
        match self {
            Reply::Ok(text) => format!("ok {text}"),
            Reply::Err {
                message,
                help: Some(help),
            } => format!("err {message}\t{help}"),
            Reply::Err {
                message,
                help: None,
            } => format!("err {message}"),
        }
    }

    fn from_error(e: &Error) -> Reply {
        match e.kind() {
            ErrorKind::Config { message, help } => Reply::Err {
                message: message.trim_start_matches("error: ").to_owned(),
                help: Some(help.clone()),
            },
            _ => Reply::Err {
                message: e.to_string(),
                help: None,
            },
        }
    }
}

/// What the engine publishes after each iteration.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Status {
    pub iteration: usize,
    pub tunables: Tunables,
    pub time_ms: f64,
    pub predicted_ms: Option<f64>,
}

impl Status {
    fn line(&self) -> String {
        let t = &self.tunables;
        let mut line = format!(
            "iteration={} nworkers={} factor={} policy={} time_ms={:.3}",
            self.iteration, t.nworkers, t.factor, t.policy, self.time_ms
        );
        if let Some(p) = self.predicted_ms {
            line.push_str(&format!(" predicted_ms={p:.3}"));
        }
        line
    }
}

/// State shared by the engine and the server threads.
#[derive(Debug)]
struct Shared {
    stop: AtomicBool,
    /// Authenticated connections being served.
    controlling: AtomicUsize,
    watchers: Mutex<Vec<Sender<String>>>,
    handle: TunablesHandle,
    token: TokenFile,
}

/// A running control endpoint; dropping it closes it.
#[derive(Debug)]
pub(crate) struct ControlServer {
    addr: ControlAddr,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

enum Listener {
    Tcp(TcpListener),
    #[cfg(unix)]
    Unix(std::os::unix::net::UnixListener),
}

impl Listener {
    /// Binds `addr` and writes the run's token before anyone can connect (for a Unix socket,
    /// before it appears at its path), so a client that finds the endpoint finds the token.
    fn bind(addr: &ControlAddr) -> io::Result<(Listener, ControlAddr, TokenFile)> {
        let token = |bound: &ControlAddr| {
            TokenFile::create(bound)
                .map_err(|e| io::Error::new(e.kind(), format!("cannot write the run's token: {e}")))
        };
        match addr {
            ControlAddr::Tcp(a) => {
                let l = TcpListener::bind(a)?;
                let bound = ControlAddr::Tcp(l.local_addr()?);
                let token = token(&bound)?;
                l.set_nonblocking(true)?;
                Ok((Listener::Tcp(l), bound, token))
            }
            #[cfg(unix)]
            ControlAddr::Unix(path) => {
                use std::os::unix::fs::FileTypeExt;
                if let Ok(meta) = std::fs::symlink_metadata(path) {
                    if !meta.file_type().is_socket() {
                        return Err(io::Error::new(
                            io::ErrorKind::AlreadyExists,
                            "the path exists and is not a socket",
                        ));
                    }
                    if std::os::unix::net::UnixStream::connect(path).is_ok() {
                        return Err(io::Error::new(
                            io::ErrorKind::AddrInUse,
                            "another program is listening there",
                        ));
                    }
                    // Left behind by a run that did not end cleanly.
                    std::fs::remove_file(path)?;
                }
                let (l, token) = bind_private(path, || token(addr))?;
                l.set_nonblocking(true)?;
                Ok((Listener::Unix(l), addr.clone(), token))
            }
            #[cfg(not(unix))]
            ControlAddr::Unix(_) => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "Unix sockets are not available on this platform",
            )),
        }
    }

    fn accept(&self) -> io::Result<ControlStream> {
        match self {
            Listener::Tcp(l) => {
                let (s, _) = l.accept()?;
                s.set_nonblocking(false)?;
                Ok(ControlStream::Tcp(s))
            }
            #[cfg(unix)]
            Listener::Unix(l) => {
                let (s, _) = l.accept()?;
                s.set_nonblocking(false)?;
                Ok(ControlStream::Unix(s))
            }
        }
    }
}

/// Binds a Unix socket at `path` with mode 0600 whatever the umask, never reachable before:
/// bound in a new directory of mode 0700 beside it, made 0600, then, once `ready` has done
/// what must precede any connection, renamed into place.
#[cfg(unix)]
fn bind_private<T>(
    path: &std::path::Path,
    ready: impl FnOnce() -> io::Result<T>,
) -> io::Result<(std::os::unix::net::UnixListener, T)> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
    let mut hidden = std::ffi::OsString::from(".");
    hidden.push(name);
    hidden.push(format!(".{}.bind", std::process::id()));
    let dir = path.with_file_name(hidden);
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    let inside = dir.join("socket");
    let bound = std::os::unix::net::UnixListener::bind(&inside).and_then(|listener| {
        std::fs::set_permissions(&inside, std::fs::Permissions::from_mode(0o600))?;
        let ready = ready()?;
        std::fs::rename(&inside, path)?;
        Ok((listener, ready))
    });
    let _ = std::fs::remove_file(&inside);
    let _ = std::fs::remove_dir(&dir);
    bound
}

impl ControlServer {
    /// Opens the endpoint at `addr`, writing the run's token for its owner.
    ///
    /// # Errors
    /// A configuration error when the address cannot be bound or the token not written.
    pub(crate) fn start(addr: &ControlAddr, handle: TunablesHandle) -> Result<ControlServer> {
        let (listener, bound, token) = Listener::bind(addr).map_err(|e| {
            Error::config(
                format!("error: cannot open the control endpoint `{addr}`: {e}"),
                "choose another socket path or port with --control (a port of 0 picks a free \
                 one); the run's token goes in $XDG_RUNTIME_DIR/mwgen, else in mwgen-UID under \
                 the temporary directory, which must be private to you",
            )
        })?;
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            controlling: AtomicUsize::new(0),
            watchers: Mutex::new(Vec::new()),
            handle,
            token,
        });
        let serving = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("mw-control".into())
            .spawn(move || accept_loop(&listener, &serving))
            .map_err(|e| Error::backend(format!("cannot start the control thread: {e}")))?;
        Ok(ControlServer {
            addr: bound,
            shared,
            thread: Some(thread),
        })
    }

    /// Where it listens (with the port chosen when 0 was asked for).
    pub(crate) fn addr(&self) -> &ControlAddr {
        &self.addr
    }

    /// Queues an iteration's status for every watcher; never blocks.
    pub(crate) fn publish(&self, status: &Status) {
        let mut watchers = self
            .shared
            .watchers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if watchers.is_empty() {
            return;
        }
        let line = status.line();
        watchers
            .retain(|w| !matches!(w.try_send(line.clone()), Err(TrySendError::Disconnected(_))));
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        #[cfg(unix)]
        if let ControlAddr::Unix(path) = &self.addr {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A connection being served, as the accept loop keeps it.
struct Connection {
    thread: JoinHandle<()>,
    /// To close it, should it wait too long for its turn.
    stream: ControlStream,
    /// Set once it has shown the token.
    authenticated: Arc<AtomicBool>,
}

fn accept_loop(listener: &Listener, shared: &Arc<Shared>) {
    // In the order they came; closed ones are kept to be joined.
    let mut connections: Vec<Connection> = Vec::new();
    let mut closed: Vec<JoinHandle<()>> = Vec::new();
    while !shared.stop.load(Ordering::SeqCst) {
        connections.retain(|c| !c.thread.is_finished());
        closed.retain(|c| !c.is_finished());
        match listener.accept() {
            Ok(stream) => {
                let waiting = |c: &Connection| !c.authenticated.load(Ordering::SeqCst);
                if connections.iter().filter(|c| waiting(c)).count() >= MAX_UNAUTHENTICATED {
                    if let Some(oldest) = connections.iter().position(waiting) {
                        let oldest = connections.remove(oldest);
                        oldest.stream.shutdown();
                        closed.push(oldest.thread);
                    }
                }
                let Ok(handle) = stream.try_clone() else {
                    continue;
                };
                let authenticated = Arc::new(AtomicBool::new(false));
                let (serving, flag) = (Arc::clone(shared), Arc::clone(&authenticated));
                if let Ok(thread) = std::thread::Builder::new()
                    .name("mw-control-conn".into())
                    .spawn(move || serve(stream, &serving, &flag))
                {
                    connections.push(Connection {
                        thread,
                        stream: handle,
                        authenticated,
                    });
                }
            }
            Err(_) => std::thread::sleep(POLL),
        }
    }
    for c in connections {
        let _ = c.thread.join();
    }
    for c in closed {
        let _ = c.join();
    }
}

/// One of the [`MAX_CONNECTIONS`] places of authenticated connections, given back when dropped.
struct Place<'a>(&'a AtomicUsize);

impl<'a> Place<'a> {
    fn take(count: &'a AtomicUsize) -> Option<Place<'a>> {
        count
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < MAX_CONNECTIONS).then_some(n + 1)
            })
            .ok()
            .map(|_| Place(count))
    }
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What reading a request line gave.
enum Line {
    Request(String),
    /// The client left, the run ended, or the client took too long to authenticate.
    Closed,
    TooLong,
}

/// Reads one request line of at most [`MAX_LINE`] bytes, looking at `stop` (and, while `by`
/// is set, at that deadline) between reads.
fn read_line(
    input: &mut BufReader<ControlStream>,
    stop: &AtomicBool,
    by: Option<std::time::Instant>,
) -> Line {
    let mut line = Vec::new();
    loop {
        if stop.load(Ordering::SeqCst) || by.is_some_and(|by| std::time::Instant::now() > by) {
            return Line::Closed;
        }
        let available = match input.fill_buf() {
            Ok([]) => return Line::Closed,
            Ok(bytes) => bytes,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                continue;
            }
            Err(_) => return Line::Closed,
        };
        let (taken, done) = match available.iter().position(|&b| b == b'\n') {
            Some(end) => (end + 1, true),
            None => (available.len(), false),
        };
        line.extend_from_slice(&available[..taken]);
        input.consume(taken);
        if line.len() > MAX_LINE + 1 {
            return Line::TooLong;
        }
        if done {
            return Line::Request(String::from_utf8_lossy(&line).trim().to_owned());
        }
    }
}

/// Serves one connection until the client leaves or the run ends: `auth TOKEN` first (then
/// `authenticated` is set, when a place is free), then requests.
fn serve(stream: ControlStream, shared: &Shared, authenticated: &AtomicBool) {
    if stream.set_read_timeout(Some(POLL)).is_err() {
        return;
    }
    let Ok(mut out) = stream.try_clone() else {
        return;
    };
    let mut input = BufReader::new(stream);
    let mut deadline = Some(std::time::Instant::now() + AUTH_TIMEOUT);
    // Held while the connection is served, once authenticated.
    let mut place = None;
    loop {
        let request = match read_line(&mut input, &shared.stop, deadline) {
            Line::Request(request) => request,
            Line::Closed => return,
            Line::TooLong => {
                let _ = writeln!(
                    out,
                    "{}",
                    Reply::Err {
                        message: format!("request line longer than {MAX_LINE} bytes"),
                        help: Some("send one request per line: `get`, `set NAME VALUE`".into()),
                    }
                    .line()
                );
                return;
            }
        };
        if request.is_empty() {
            continue;
        }
        if deadline.is_some() {
            let mut reply = authenticate(&request, shared.token.token());
            if matches!(reply, Reply::Ok(_)) {
                place = Place::take(&shared.controlling);
                if place.is_none() {
                    reply = Reply::Err {
                        message: format!("{BUSY} {MAX_CONNECTIONS} connections at once"),
                        help: Some("close a `mwgen ctl ... watch`, then try again".into()),
                    };
                }
            }
            let accepted = place.is_some();
            if writeln!(out, "{}", reply.line()).is_err() || !accepted {
                return;
            }
            authenticated.store(true, Ordering::SeqCst);
            deadline = None;
            continue;
        }
        if request == "watch" {
            watch(&mut out, shared);
            return;
        }
        let reply = answer(&request, &shared.handle);
        if writeln!(out, "{}", reply.line()).is_err() {
            return;
        }
    }
}

/// The answer to a connection's first line, which must be `auth TOKEN`.
fn authenticate(request: &str, token: &str) -> Reply {
    match request.split_once(' ') {
        Some(("auth", given)) if token::same_token(given.trim(), token) => {
            Reply::Ok("authenticated".into())
        }
        Some(("auth", _)) => Reply::Err {
            message: "wrong token: only the user who started the run may control it".into(),
            help: Some(
                "run `mwgen ctl ADDR ...` as that user: it reads the run's token by itself".into(),
            ),
        },
        _ => Reply::Err {
            message: "not authenticated: the first request must be `auth TOKEN`".into(),
            help: Some(
                "use `mwgen ctl ADDR ...` as the user who started the run: it sends the run's \
                 token by itself"
                    .into(),
            ),
        },
    }
}

fn answer(request: &str, handle: &TunablesHandle) -> Reply {
    let words: Vec<&str> = request.split_whitespace().collect();
    match words[..] {
        ["get"] => Reply::Ok(handle.list()),
        ["get", name] => match handle.get_text(name) {
            Ok(value) => Reply::Ok(value),
            Err(e) => Reply::from_error(&e),
        },
        ["set", name, "auto"] => match handle.release(name) {
            Ok(()) => Reply::Ok(format!("{name} is tuned again")),
            Err(e) => Reply::from_error(&e),
        },
        ["set", name, value] => {
            let queued = handle.parse(name, value).and_then(|change| {
                handle.request_why(change, Why::plain(Source::External, "external"))
            });
            match queued {
                Ok(()) => Reply::Ok(format!("{name} = {value} from the next iteration")),
                Err(e) => Reply::from_error(&e),
            }
        }
        ["help"] => Reply::Ok(
            "commands: get [NAME], set NAME VALUE, set NAME auto, watch; tunables: nworkers, \
             factor, policy and the program's own (`get` lists them)"
                .into(),
        ),
        _ => Reply::Err {
            message: format!("unknown request `{request}`"),
            help: Some("the requests are `get [NAME]`, `set NAME VALUE|auto` and `watch`".into()),
        },
    }
}

/// Streams one line per iteration until the client leaves or the run ends.
fn watch(out: &mut ControlStream, shared: &Shared) {
    let (tx, rx): (Sender<String>, Receiver<String>) = bounded(WATCH_BACKLOG);
    shared
        .watchers
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(tx);
    if writeln!(out, "ok watching").is_err() {
        return;
    }
    loop {
        match rx.recv_timeout(POLL) {
            Ok(line) => {
                if writeln!(out, "{line}").is_err() {
                    return;
                }
            }
            Err(RecvTimeoutError::Timeout) if !shared.stop.load(Ordering::SeqCst) => {}
            Err(_) => {
                for line in rx.try_iter() {
                    if writeln!(out, "{line}").is_err() {
                        return;
                    }
                }
                let _ = writeln!(out, "end");
                return;
            }
        }
    }
}
