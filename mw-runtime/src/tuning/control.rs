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
//!
//! The server runs on threads of its own and holds no lock while it reads or writes a socket; the
//! engine only queues a line per iteration for each watcher (dropped when a watcher lags 64
//! lines behind). The endpoint is closed, and a Unix socket file removed, when the run ends.

use std::fmt;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TrySendError, bounded};

use crate::error::{Error, ErrorKind, Result};
use crate::tunables::{Change, Source, Tunables, TunablesHandle, Why};

/// How often blocked server threads look whether the run has ended.
const POLL: Duration = Duration::from_millis(50);
/// Lines queued for a watcher before new ones are dropped.
const WATCH_BACKLOG: usize = 64;
/// The longest request line accepted.
const MAX_LINE: usize = 4096;

/// Where a control endpoint listens: a loopback TCP address or a Unix socket path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlAddr {
    /// `127.0.0.1:PORT`, `[::1]:PORT` or `localhost:PORT`.
    Tcp(SocketAddr),
    /// A Unix socket path.
    Unix(PathBuf),
}

impl FromStr for ControlAddr {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("the control address is empty".into());
        }
        let tcp = match text.strip_prefix("localhost:") {
            Some(port) => format!("127.0.0.1:{port}").parse::<SocketAddr>().ok(),
            None => text.parse::<SocketAddr>().ok(),
        };
        match tcp {
            Some(addr) if addr.ip().is_loopback() => Ok(ControlAddr::Tcp(addr)),
            Some(addr) => Err(format!(
                "`{addr}` is not a loopback address: the control endpoint is local only \
                 (use 127.0.0.1:PORT or a Unix socket path)"
            )),
            None => Ok(ControlAddr::Unix(PathBuf::from(text))),
        }
    }
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
    /// Connects to a running program's endpoint.
    ///
    /// # Errors
    /// When nothing listens there.
    pub fn connect(&self) -> io::Result<ControlStream> {
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
    watchers: Mutex<Vec<Sender<String>>>,
    handle: TunablesHandle,
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
    fn bind(addr: &ControlAddr) -> io::Result<(Listener, ControlAddr)> {
        match addr {
            ControlAddr::Tcp(a) => {
                let l = TcpListener::bind(a)?;
                let bound = ControlAddr::Tcp(l.local_addr()?);
                l.set_nonblocking(true)?;
                Ok((Listener::Tcp(l), bound))
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
                let l = std::os::unix::net::UnixListener::bind(path)?;
                l.set_nonblocking(true)?;
                Ok((Listener::Unix(l), addr.clone()))
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

impl ControlServer {
    /// Opens the endpoint at `addr`.
    ///
    /// # Errors
    /// A configuration error when the address cannot be bound.
    pub fn start(addr: &ControlAddr, handle: TunablesHandle) -> Result<ControlServer> {
        let (listener, bound) = Listener::bind(addr).map_err(|e| {
            Error::config(
                format!("error: cannot open the control endpoint `{addr}`: {e}"),
                "choose another socket path or port with --control (a port of 0 picks a free one)",
            )
        })?;
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            watchers: Mutex::new(Vec::new()),
            handle,
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
    pub fn addr(&self) -> &ControlAddr {
        &self.addr
    }

    /// Queues an iteration's status for every watcher; never blocks.
    pub fn publish(&self, status: &Status) {
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

fn accept_loop(listener: &Listener, shared: &Arc<Shared>) {
    let mut connections = Vec::new();
    while !shared.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok(stream) => {
                let shared = Arc::clone(shared);
                if let Ok(handle) = std::thread::Builder::new()
                    .name("mw-control-conn".into())
                    .spawn(move || serve(stream, &shared))
                {
                    connections.push(handle);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(POLL),
            Err(_) => std::thread::sleep(POLL),
        }
        connections.retain(|c: &JoinHandle<()>| !c.is_finished());
    }
    for c in connections {
        let _ = c.join();
    }
}

/// Serves one connection until the client leaves or the run ends.
fn serve(stream: ControlStream, shared: &Shared) {
    if stream.set_read_timeout(Some(POLL)).is_err() {
        return;
    }
    let Ok(mut out) = stream.try_clone() else {
        return;
    };
    let mut input = BufReader::new(stream);
    let mut line = String::new();
    while !shared.stop.load(Ordering::SeqCst) {
        match input.read_line(&mut line) {
            Ok(0) => return,
            Ok(_) if !line.ends_with('\n') => continue,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                if line.len() > MAX_LINE {
                    let _ = writeln!(out, "err request line too long");
                    return;
                }
                continue;
            }
            Err(_) => return,
        }
        let request = std::mem::take(&mut line);
        let request = request.trim();
        if request.is_empty() {
            continue;
        }
        if request == "watch" {
            watch(&mut out, shared);
            return;
        }
        let reply = answer(request, &shared.handle);
        if writeln!(out, "{}", reply.line()).is_err() {
            return;
        }
    }
}

fn answer(request: &str, handle: &TunablesHandle) -> Reply {
    let words: Vec<&str> = request.split_whitespace().collect();
    match words[..] {
        ["get"] => {
            let t = handle.current();
            Reply::Ok(format!(
                "nworkers={} factor={} policy={}",
                t.nworkers, t.factor, t.policy
            ))
        }
        ["get", name] => match handle.current().get(name) {
            Some(value) => Reply::Ok(value),
            None => Reply::Err {
                message: format!("no tunable is named `{name}`"),
                help: Some("the tunables are `nworkers`, `factor` and `policy`".into()),
            },
        },
        ["set", name, "auto"] => match handle.release(name) {
            Ok(()) => Reply::Ok(format!("{name} is tuned again")),
            Err(e) => Reply::from_error(&e),
        },
        ["set", name, value] => {
            let queued = Change::parse(name, value).and_then(|change| {
                handle.request_why(change, Why::plain(Source::External, "external"))
            });
            match queued {
                Ok(()) => Reply::Ok(format!("{name} = {value} from the next iteration")),
                Err(e) => Reply::from_error(&e),
            }
        }
        ["help"] => Reply::Ok(
            "commands: get [NAME], set NAME VALUE, set NAME auto, watch; tunables: nworkers, \
             factor, policy"
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
