//! How the master notices that a worker rank died: every worker holds a TCP connection to the
//! master open for as long as its process lives, and the kernel closes it when the process ends,
//! however it ends (`kill -9` included). The master looks at the connections while it waits for
//! messages; a connection that reached its end is a worker gone.
//!
//! MPI itself does not tell: with Open MPI 4.1 (no ULFM), a send to or a receive from a dead
//! rank neither fails nor completes, over shared memory or TCP alike, even with the
//! communicator's errors returned (`orte_enable_recovery` only keeps the job alive). A stopped
//! rank (SIGSTOP) keeps its connection open: the engine's liveness timeout covers it.
//!
//! The same connection tells a waiting worker that the master died, so that it leaves instead
//! of waiting forever.
//!
//! A node that vanishes (powered off, its cable out) closes nothing: no end of the connection
//! ever arrives. So both ends have the kernel probe a silent connection (TCP keepalive), and end
//! it when the other node's kernel stops answering for as long as the liveness timeout: the
//! master then reports the worker lost ("its node stopped answering"), and a worker that waits
//! for the master, even after the run, stops waiting. A process that is only busy or stopped
//! does not trip it, since its kernel answers the probes.
//!
//! Only the run's own workers can hold a lifeline. The master makes a secret for the run and
//! hands it to the workers over MPI (a broadcast, or a spawned worker's private environment);
//! a connection must present it with its rank within [`HELLO`] or it is closed, and a worker's
//! lifeline, once held, is never displaced by another connection. The master listens only where
//! its workers reach it: on the loopback address for the workers of its own node, and for each
//! other node on the address of its own that shares a subnet with that node (else the one the
//! kernel would send from to reach it), never on every address at once. Nodes are told apart by
//! the kernel's boot id and the network namespace, not by host name: nodes that share a name,
//! or have no name service, still find the master.

use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::Root;

/// How long a worker tries to reach the master at one address.
const CONNECT: Duration = Duration::from_secs(2);
/// How long a connection has to present its rank and the run's secret before it is closed.
pub(super) const HELLO: Duration = Duration::from_secs(1);
/// Looks at the connections at most this often.
const LOOK_EVERY: Duration = Duration::from_millis(10);
/// How long a worker whose connection ended has for its last messages to be received.
const LAST_WORDS: Duration = Duration::from_millis(200);
/// How long a worker whose lifeline ended may still be in its run before it ends itself.
const STRANDED: Duration = Duration::from_secs(10);
/// Bytes of the run's secret.
const SECRET: usize = 16;
/// What a worker sends first: its rank (little-endian `u32`), then the secret.
const GREETING: usize = 4 + SECRET;
/// Addresses of a node's interfaces told, at most.
const ADDRESSES: usize = 8;
/// Bytes of a node's identity.
const NODE: usize = 64;
/// An address on the wire: its family (4 or 6; 0 for none), prefix length, 16 bytes of address
/// (an IPv4 one in the first 4) and a port.
const ADDRESS: usize = 20;
/// A rank's report: its node, then its interfaces' addresses.
const REPORT: usize = NODE + ADDRESSES * ADDRESS;
/// Addresses the master listens on, at most: the loopback one and one per interface.
const ENDPOINTS: usize = ADDRESSES + 1;
/// The master's answer, before each rank's pick: the secret, then the endpoints.
const ANSWER: usize = SECRET + ENDPOINTS * ADDRESS;
/// A rank's pick that has no endpoint: it holds no lifeline.
const NONE: u8 = u8::MAX;
/// Keepalive probes sent to a silent node before its connection ends.
const PROBES: u32 = 4;
/// The longest wait before a keepalive probe Linux takes, in seconds.
const MOST_SECONDS: u64 = 32_767;

/// A worker's end, kept open until its process ends (closing it would tell the master the
/// worker died), or until the next run replaces it.
static KEPT: Mutex<Option<TcpStream>> = Mutex::new(None);

/// Runs this worker joined so far, and the one it is in (0 once it left it): what the watch of
/// a lifeline checks before it ends the process.
static JOINED: AtomicU64 = AtomicU64::new(0);
static IN_RUN: AtomicU64 = AtomicU64::new(0);

/// An address of an interface, or an endpoint (then `prefix` is unused and `port` set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Address {
    ip: IpAddr,
    prefix: u8,
    port: u16,
}

impl Address {
    fn write(self, into: &mut [u8]) {
        match self.ip {
            IpAddr::V4(ip) => {
                into[0] = 4;
                into[2..6].copy_from_slice(&ip.octets());
            }
            IpAddr::V6(ip) => {
                into[0] = 6;
                into[2..18].copy_from_slice(&ip.octets());
            }
        }
        into[1] = self.prefix;
        into[18..20].copy_from_slice(&self.port.to_le_bytes());
    }

    fn read(from: &[u8]) -> Option<Address> {
        let ip = match from[0] {
            4 => IpAddr::V4(Ipv4Addr::new(from[2], from[3], from[4], from[5])),
            6 => IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(&from[2..18]).ok()?)),
            _ => return None,
        };
        Some(Address {
            ip,
            prefix: from[1],
            port: u16::from_le_bytes([from[18], from[19]]),
        })
    }

    /// Whether `other` is in this address's subnet.
    fn shares_subnet(self, other: IpAddr) -> bool {
        let (mine, theirs, bits) = match (self.ip, other) {
            (IpAddr::V4(a), IpAddr::V4(b)) => (
                u128::from(a.to_bits()) << 96,
                u128::from(b.to_bits()) << 96,
                self.prefix.min(32),
            ),
            (IpAddr::V6(a), IpAddr::V6(b)) => (a.to_bits(), b.to_bits(), self.prefix.min(128)),
            _ => return false,
        };
        let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
        bits > 0 && mine & mask == theirs & mask
    }
}

/// This node's identity: the kernel's boot id and this process's network namespace where the
/// system tells them (two processes with the same identity reach each other on the loopback
/// address), else the node's name.
fn node_identity() -> [u8; NODE] {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let network = std::fs::read_link("/proc/self/ns/net").unwrap_or_default();
    let identity = match boot.trim() {
        "" => mpi::environment::processor_name().unwrap_or_default(),
        boot => format!("{boot}/{}", network.display()),
    };
    let mut bytes = [0u8; NODE];
    let len = identity.len().min(NODE);
    bytes[..len].copy_from_slice(&identity.as_bytes()[..len]);
    bytes
}

/// The addresses of this node's interfaces that are up, loopback left out (IPv4 first).
fn interfaces() -> Vec<Address> {
    let mut addresses: Vec<Address> = if_addrs::get_if_addrs()
        .unwrap_or_default()
        .into_iter()
        .filter(|i| !i.is_loopback() && !i.is_link_local())
        .map(|i| {
            let prefix = match &i.addr {
                if_addrs::IfAddr::V4(v4) => v4.prefixlen,
                if_addrs::IfAddr::V6(v6) => v6.prefixlen,
            };
            Address {
                ip: i.ip(),
                prefix,
                port: 0,
            }
        })
        .collect();
    addresses.sort_by_key(|a| a.ip.is_ipv6());
    addresses.truncate(ADDRESSES);
    addresses
}

/// The address of the master's own, among `mine`, that a node with the addresses `theirs`
/// reaches it on: one in a subnet they share, else the one the kernel would send from to reach
/// the node's first address (a UDP socket is bound and connected, nothing is sent).
fn facing(mine: &[Address], theirs: &[Address]) -> Option<IpAddr> {
    let shared = theirs
        .iter()
        .find_map(|t| mine.iter().find(|m| m.shares_subnet(t.ip)).map(|m| m.ip));
    shared.or_else(|| {
        let target = theirs.first()?.ip;
        let unspecified: IpAddr = match target {
            IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
            IpAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
        };
        let socket = UdpSocket::bind((unspecified, 0)).ok()?;
        socket.connect((target, 9)).ok()?;
        Some(socket.local_addr().ok()?.ip())
    })
}

/// What a worker needs to reach the master: the run's secret, the master's node and where it
/// listens. A spawned worker is told the node and the endpoints in its environment as
/// `NODE/ENDPOINTS` (hex, comma-separated socket addresses), and the secret over MPI once it
/// joined: the environment travels in the arguments of the command MPI spawns, which any local
/// user can read while it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Contact {
    secret: Secret,
    node: [u8; NODE],
    endpoints: Vec<SocketAddr>,
}

/// The run's secret.
pub(super) type Secret = [u8; SECRET];

impl Contact {
    /// The node and the endpoints, without the secret.
    pub(super) fn encode(&self) -> String {
        let endpoints: Vec<String> = self.endpoints.iter().map(ToString::to_string).collect();
        format!("{}/{}", hex(&self.node), endpoints.join(","))
    }

    fn decode(text: &str, secret: Secret) -> Option<Contact> {
        let (node, endpoints) = text.split_once('/')?;
        let node = unhex(node)?.try_into().ok()?;
        let endpoints = endpoints
            .split(',')
            .filter(|e| !e.is_empty())
            .map(|e| e.parse().ok())
            .collect::<Option<_>>()?;
        Some(Contact {
            secret,
            node,
            endpoints,
        })
    }

    pub(super) fn secret(&self) -> Secret {
        self.secret
    }

    /// The endpoints a worker of the node `node` tries, in order: the loopback ones on the
    /// master's node, the others elsewhere.
    fn for_node(&self, node: &[u8; NODE]) -> impl Iterator<Item = SocketAddr> + '_ {
        let local = *node == self.node;
        self.endpoints
            .iter()
            .copied()
            .filter(move |e| e.ip().is_loopback() == local)
    }
}

/// Whether this process runs on the master's node, as a spawned worker's `contact` (encoded)
/// tells.
pub(super) fn on_masters_node(contact: &str) -> bool {
    Contact::decode(contact, [0; SECRET]).is_some_and(|c| c.node == node_identity())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The master's side: where it listens, and each worker's connection once it said who it is.
pub(super) struct Lifelines {
    listeners: Vec<TcpListener>,
    contact: Contact,
    /// Accepted, not yet greeted, with when each was accepted.
    unnamed: Vec<(TcpStream, Instant)>,
    /// By worker index.
    named: Vec<Option<TcpStream>>,
    /// Connections no longer watched (the worker finished, or was given up on), held open: a
    /// worker that leaves without `MPI_Finalize` waits for their end.
    held: Vec<TcpStream>,
    /// By worker index: when its connection was first seen ended while a message of it still
    /// waited to be received.
    ended_at: Vec<Option<Instant>>,
    looked: Instant,
    /// How long a worker's node may not answer before its connection ends.
    silence: Duration,
}

/// What a look at the connections found: workers whose connection ended, and why.
pub(super) type Ended = Vec<(usize, String)>;

/// Collective over `world`: every rank tells rank 0 its node and addresses; rank 0 listens
/// where they reach it and answers with the secret and each rank's endpoint; the others
/// connect. `slots` workers may be spawned later (on any node). A connection whose other node
/// stops answering for `silence` (the liveness timeout) ends. `None` on the workers, and on the
/// master when it could not listen at all (deaths are then noticed by the engine's liveness
/// timeout only).
pub(super) fn connect(
    world: &SimpleCommunicator,
    pool: usize,
    slots: usize,
    silence: Duration,
) -> Option<Lifelines> {
    let root = world.process_at_rank(0);
    let node = node_identity();
    let mine = interfaces();
    let mut report = [0u8; REPORT];
    report[..NODE].copy_from_slice(&node);
    for (address, into) in mine.iter().zip(report[NODE..].chunks_exact_mut(ADDRESS)) {
        address.write(into);
    }
    let size = world.size() as usize;
    let mut answer = vec![0u8; ANSWER + size];
    if world.rank() != 0 {
        root.gather_into(&report[..]);
        root.broadcast_into(&mut answer[..]);
        let pick = answer[ANSWER + world.rank() as usize];
        let endpoint = answer[SECRET..ANSWER]
            .chunks_exact(ADDRESS)
            .nth(usize::from(pick))
            .and_then(Address::read);
        let secret = <[u8; SECRET]>::try_from(&answer[..SECRET]).unwrap_or_default();
        match endpoint {
            Some(e) => join(
                &[SocketAddr::new(e.ip, e.port)],
                world.rank() as u32,
                &secret,
                silence,
            ),
            None => eprintln!(
                "warning: worker {} has no address to reach the master on; if it dies, the \
                 master notices only by its silence",
                world.rank() - 1
            ),
        }
        return None;
    }
    let mut reports = vec![0u8; REPORT * size];
    root.gather_into_root(&report[..], &mut reports[..]);
    // Where each worker rank reaches the master: `None` for its own node (loopback).
    let wanted: Vec<Option<Option<IpAddr>>> = reports
        .chunks_exact(REPORT)
        .skip(1)
        .map(|report| {
            if report[..NODE] == node {
                return None;
            }
            let theirs: Vec<Address> = report[NODE..]
                .chunks_exact(ADDRESS)
                .filter_map(Address::read)
                .collect();
            Some(facing(&mine, &theirs))
        })
        .collect();
    let mut ips: Vec<IpAddr> = Vec::new();
    if slots > 0 || wanted.iter().any(Option::is_none) {
        ips.push(Ipv4Addr::LOCALHOST.into());
    }
    for ip in wanted.iter().flatten().flatten() {
        if !ips.contains(ip) && ips.len() < ENDPOINTS {
            ips.push(*ip);
        }
    }
    let lifelines = Lifelines::listen(&ips, node, pool, silence);
    let contact = &lifelines.contact;
    answer[..SECRET].copy_from_slice(&contact.secret);
    for (endpoint, into) in contact
        .endpoints
        .iter()
        .zip(answer[SECRET..].chunks_exact_mut(ADDRESS))
    {
        Address {
            ip: endpoint.ip(),
            prefix: 0,
            port: endpoint.port(),
        }
        .write(into);
    }
    for (rank, wanted) in wanted.iter().enumerate() {
        let ip = match wanted {
            None => Some(IpAddr::from(Ipv4Addr::LOCALHOST)),
            Some(ip) => *ip,
        };
        let pick = ip.and_then(|ip| contact.endpoints.iter().position(|e| e.ip() == ip));
        answer[ANSWER + rank + 1] = pick.map_or(NONE, |p| p as u8);
    }
    root.broadcast_into(&mut answer[..]);
    (!lifelines.listeners.is_empty()).then_some(lifelines)
}

/// On a spawned worker: connects its lifeline as the master's `contact` (encoded) says, with
/// the run's `secret`, saying it is worker `rank - 1`; it ends when the master's node stops
/// answering for `silence`.
pub(super) fn join_spawned(contact: &str, secret: Secret, rank: u32, silence: Duration) {
    let Some(contact) = Contact::decode(contact, secret) else {
        eprintln!(
            "warning: spawned worker {} was told no way to reach the master; if it dies, the \
             master notices only by its silence",
            rank - 1
        );
        return;
    };
    let endpoints: Vec<SocketAddr> = contact.for_node(&node_identity()).collect();
    join(&endpoints, rank, &contact.secret, silence);
}

/// On a worker: connects its lifeline to the first of `endpoints` that answers, saying it is
/// worker `rank - 1` of the run whose secret is `secret`.
fn join(endpoints: &[SocketAddr], rank: u32, secret: &[u8; SECRET], silence: Duration) {
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    // The last run's master is done with it.
    *kept = None;
    let mut greeting = [0u8; GREETING];
    greeting[..4].copy_from_slice(&rank.to_le_bytes());
    greeting[4..].copy_from_slice(secret);
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no address for the master");
    for endpoint in endpoints {
        match reach(*endpoint, &greeting, silence) {
            Ok(stream) => {
                if let Ok(watched) = stream.try_clone() {
                    watch(watched);
                }
                *kept = Some(stream);
                return;
            }
            Err(e) => last = io::Error::new(e.kind(), format!("{endpoint}: {e}")),
        }
    }
    eprintln!(
        "warning: worker {} cannot reach the master ({last}); if it dies, the master notices \
         only by its silence",
        rank - 1
    );
}

/// On a worker: a thread that waits for the end of the lifeline `stream` (the master's process
/// ended, or its node stopped answering) and ends this process if it is still in the same run
/// [`STRANDED`] later. The worker's own waits notice the master's end within 100 ms and leave;
/// but a rank can be held inside the MPI library, where none of the runtime's waits runs:
/// MPICH's `MPI_Test` was seen blocked for good in a read from its process manager, whose link
/// to the launcher went with a node's cable. Such a rank serves no one, and nothing else would
/// end it.
fn watch(stream: TcpStream) {
    use rustix::event::{PollFd, PollFlags, poll};
    let run = JOINED.fetch_add(1, Ordering::Relaxed) + 1;
    IN_RUN.store(run, Ordering::Relaxed);
    let watching = move || {
        loop {
            let mut fds = [PollFd::new(&stream, PollFlags::IN | PollFlags::RDHUP)];
            match poll(&mut fds, None) {
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => return,
                Ok(_) => {}
            }
            // Read, not peeked: a stray byte is taken, and the next poll waits again.
            if end_of((&stream).read(&mut [0u8; 1])).is_some() {
                break;
            }
        }
        std::thread::sleep(STRANDED);
        if IN_RUN.load(Ordering::Relaxed) == run {
            eprintln!(
                "warning: the master is gone, and {} s later this worker has not left its run \
                 (held in a task, or inside the MPI library); it ends",
                STRANDED.as_secs()
            );
            // At once, by SIGKILL: no exit handler runs, and an MPI library's might wait where
            // this rank is held.
            let _ = super::kill::kill(std::process::id());
        }
    };
    // Without the thread, only a rank held inside MPI goes unended, as before.
    let _ = std::thread::Builder::new()
        .name("mw-lifeline".into())
        .spawn(watching);
}

/// On a worker: it leaves its run; the watch of its lifeline no longer ends the process.
pub(super) fn left_run() {
    IN_RUN.store(0, Ordering::Relaxed);
}

/// On a worker: whether the master's process ended (its end of the connection closed). A master
/// closes it only once the run is over for this worker, or when it dies.
pub(super) fn master_gone() -> bool {
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    let Some(stream) = kept.as_mut() else {
        return false;
    };
    end_of(stream.read(&mut [0u8; 1])).is_some()
}

/// On a worker: waits until the master's process has ended (its end of the connection closed,
/// which the master leaves open until it exits after a loss), at once without a lifeline.
pub(super) fn await_master_exit() {
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    let Some(stream) = kept.as_mut() else {
        return;
    };
    if stream.set_nonblocking(false).is_err() {
        return;
    }
    let mut byte = [0u8; 1];
    loop {
        match stream.read(&mut byte) {
            Ok(0) => return,
            Err(e) if e.kind() != io::ErrorKind::Interrupted => return,
            _ => {}
        }
    }
}

/// How a lifeline ended.
enum End {
    /// The other process closed it: it ended, however it ended.
    Closed,
    /// The kernel ended it: the other node stopped answering its probes, or the connection broke.
    Failed(io::Error),
}

/// Whether a lifeline ended, from one read or peek of it (non-blocking, or after a poll). After
/// its greeting a lifeline carries nothing, so a byte read tells as little as none waiting.
fn end_of(read: io::Result<usize>) -> Option<End> {
    match read {
        Ok(0) => Some(End::Closed),
        Ok(_) => None,
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
            ) =>
        {
            None
        }
        Err(e) => Some(End::Failed(e)),
    }
}

/// Connects to the master and greets it.
fn reach(endpoint: SocketAddr, greeting: &[u8], silence: Duration) -> io::Result<TcpStream> {
    let mut stream = TcpStream::connect_timeout(&endpoint, CONNECT)?;
    stream.write_all(greeting)?;
    stream.set_nonblocking(true)?;
    // Without it the lifeline still tells the master's end; only a vanished node goes unseen.
    let _ = keep_alive(&stream, silence);
    Ok(stream)
}

/// Has the kernel end `stream` once the other node has not answered for about `silence`:
/// probes start after half of it without a word, then [`PROBES`] of them share the rest (the
/// kernel counts in whole seconds, from one to [`MOST_SECONDS`]).
fn keep_alive(stream: &TcpStream, silence: Duration) -> io::Result<()> {
    use rustix::net::sockopt;
    let seconds = |d: Duration| d.clamp(Duration::from_secs(1), Duration::from_secs(MOST_SECONDS));
    let idle = seconds(silence / 2);
    let interval = seconds(silence.saturating_sub(idle) / PROBES);
    sockopt::set_socket_keepalive(stream, true)?;
    sockopt::set_tcp_keepidle(stream, idle)?;
    sockopt::set_tcp_keepintvl(stream, interval)?;
    sockopt::set_tcp_keepcnt(stream, PROBES)?;
    Ok(())
}

impl Lifelines {
    /// Listens on each of `ips` (any port) for `pool` workers, on the node `node`; the
    /// addresses it cannot listen on are left out, with a warning. A connection whose node
    /// stops answering for `silence` ends.
    fn listen(ips: &[IpAddr], node: [u8; NODE], pool: usize, silence: Duration) -> Self {
        let mut secret = [0u8; SECRET];
        if let Err(e) = getrandom::fill(&mut secret) {
            eprintln!("warning: the master cannot watch for dead workers (no secret: {e})");
            return Lifelines::without(node, pool, silence);
        }
        let mut listeners = Vec::new();
        let mut endpoints = Vec::new();
        for &ip in ips {
            let bound = TcpListener::bind((ip, 0))
                .and_then(|l| l.set_nonblocking(true).map(|()| l))
                .and_then(|l| Ok((l.local_addr()?, l)));
            match bound {
                Ok((address, listener)) => {
                    endpoints.push(address);
                    listeners.push(listener);
                }
                Err(e) => eprintln!(
                    "warning: the master cannot watch for dead workers on {ip}: {e}; those \
                     workers are given up only by the liveness timeout"
                ),
            }
        }
        Lifelines {
            listeners,
            contact: Contact {
                secret,
                node,
                endpoints,
            },
            unnamed: Vec::new(),
            named: (0..pool).map(|_| None).collect(),
            held: Vec::new(),
            ended_at: vec![None; pool],
            looked: Instant::now(),
            silence,
        }
    }

    fn without(node: [u8; NODE], pool: usize, silence: Duration) -> Self {
        Lifelines {
            listeners: Vec::new(),
            contact: Contact {
                secret: [0; SECRET],
                node,
                endpoints: Vec::new(),
            },
            unnamed: Vec::new(),
            named: (0..pool).map(|_| None).collect(),
            held: Vec::new(),
            ended_at: vec![None; pool],
            looked: Instant::now(),
            silence,
        }
    }

    /// How spawned workers reach the master.
    pub(super) fn contact(&self) -> &Contact {
        &self.contact
    }

    /// Looks at the connections, at most every [`LOOK_EVERY`]: workers whose connection ended
    /// since the last look. `waiting(worker)` says whether a message of that worker waits to be
    /// received; such a worker is reported only once it has none.
    pub(super) fn look(&mut self, mut waiting: impl FnMut(usize) -> bool) -> Ended {
        let mut ended = Vec::new();
        if self.looked.elapsed() < LOOK_EVERY {
            return ended;
        }
        self.looked = Instant::now();
        self.accept();
        for worker in 0..self.named.len() {
            let Some(stream) = &mut self.named[worker] else {
                continue;
            };
            let why = match end_of(stream.read(&mut [0u8; 1])) {
                None => continue,
                Some(End::Closed) => "its process ended (connection closed)".to_owned(),
                Some(End::Failed(e)) if e.kind() == io::ErrorKind::TimedOut => format!(
                    "its node stopped answering for {:.0} s ({e})",
                    self.silence.as_secs_f64()
                ),
                Some(End::Failed(e)) => format!("its process ended ({e})"),
            };
            // The end of a connection stays: it is seen again at the next look, once the
            // worker's last messages are taken. For a short while only: a message the worker
            // was still sending when it died never arrives whole, yet shows as waiting.
            let since = *self.ended_at[worker].get_or_insert_with(Instant::now);
            if waiting(worker) && since.elapsed() < LAST_WORDS {
                continue;
            }
            self.named[worker] = None;
            self.ended_at[worker] = None;
            ended.push((worker, why));
        }
        ended
    }

    /// Whether `worker`'s connection has ended, without taking it as reported: for a wait that
    /// only the worker's death can end (the rest of a long message from a spawned worker).
    pub(super) fn ended(&self, worker: usize) -> bool {
        let Some(Some(stream)) = self.named.get(worker) else {
            return false;
        };
        end_of(stream.peek(&mut [0u8; 1])).is_some()
    }

    /// Stops watching `worker`: it finished, or the master gave up on it. Its connection stays
    /// open.
    pub(super) fn release(&mut self, worker: usize) {
        if let Some(stream) = self.named.get_mut(worker) {
            self.held.extend(stream.take());
            self.ended_at[worker] = None;
        }
    }

    /// Leaves every connection open until this process exits, when the kernel closes them: the
    /// workers, which leave without `MPI_Finalize` after a loss, wait for that, so that none
    /// leaves before the master has written its results (a launcher without recovery ends the
    /// whole job as the first rank leaves).
    pub(super) fn hold_until_exit(self) {
        std::mem::forget(self);
    }

    /// Takes the connections that came, and names those that greeted with the run's secret: a
    /// connection that is silent past [`HELLO`], says something else, or names a worker that
    /// holds its lifeline already is closed.
    fn accept(&mut self) {
        for listener in &self.listeners {
            while let Ok((stream, _)) = listener.accept() {
                if stream.set_nonblocking(true).is_ok() {
                    // As on the worker's side: without it, only a vanished node goes unseen.
                    let _ = keep_alive(&stream, self.silence);
                    self.unnamed.push((stream, Instant::now()));
                }
            }
        }
        let (named, secret) = (&mut self.named, &self.contact.secret);
        self.unnamed.retain_mut(|(stream, accepted)| {
            let mut greeting = [0u8; GREETING];
            match stream.peek(&mut greeting) {
                Ok(GREETING) => {}
                Ok(0) => return false,
                Ok(_) => return accepted.elapsed() < HELLO,
                Err(e) => {
                    return e.kind() == io::ErrorKind::WouldBlock && accepted.elapsed() < HELLO;
                }
            }
            if stream.read_exact(&mut greeting).is_err() || !same(&greeting[4..], secret) {
                return false;
            }
            let rank = u32::from_le_bytes([greeting[0], greeting[1], greeting[2], greeting[3]]);
            let worker = (rank as usize).wrapping_sub(1);
            if let Some(slot @ None) = named.get_mut(worker) {
                *slot = stream.try_clone().ok();
            }
            false
        });
    }
}

/// Compares two secrets in time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const SILENCE: Duration = Duration::from_secs(60);

    /// Looks again at once, not after [`LOOK_EVERY`].
    fn look_now(lifelines: &mut Lifelines, waiting: bool) -> Ended {
        lifelines.looked = Instant::now() - LOOK_EVERY;
        lifelines.look(|_| waiting)
    }

    fn loopback(pool: usize) -> (Lifelines, SocketAddr) {
        let lifelines = Lifelines::listen(&[Ipv4Addr::LOCALHOST.into()], [0; NODE], pool, SILENCE);
        let endpoint = lifelines.contact.endpoints[0];
        (lifelines, endpoint)
    }

    fn greeting(rank: u32, secret: &[u8; SECRET]) -> Vec<u8> {
        let mut bytes = rank.to_le_bytes().to_vec();
        bytes.extend_from_slice(secret);
        bytes
    }

    #[test]
    fn a_closed_connection_is_a_worker_ended_once_its_messages_are_taken() {
        let (mut lifelines, endpoint) = loopback(3);
        let secret = lifelines.contact.secret;
        // Ranks 1 and 3: workers 0 and 2; worker 1 never connects.
        let first = reach(endpoint, &greeting(1, &secret), SILENCE).unwrap();
        let third = reach(endpoint, &greeting(3, &secret), SILENCE).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert!(look_now(&mut lifelines, false).is_empty(), "both alive");

        drop(third);
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            look_now(&mut lifelines, true).is_empty(),
            "a message of its is still waiting"
        );
        let ended = look_now(&mut lifelines, false);
        assert_eq!(ended.len(), 1);
        assert_eq!(ended[0].0, 2);
        assert!(ended[0].1.contains("ended"), "{}", ended[0].1);
        assert!(look_now(&mut lifelines, false).is_empty(), "reported once");

        // A worker that finished is no loss.
        lifelines.release(0);
        drop(first);
        std::thread::sleep(Duration::from_millis(50));
        assert!(look_now(&mut lifelines, false).is_empty());
    }

    #[test]
    fn a_connection_without_the_secret_never_displaces_a_worker() {
        let (mut lifelines, endpoint) = loopback(2);
        let secret = lifelines.contact.secret;
        let worker = reach(endpoint, &greeting(1, &secret), SILENCE).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert!(look_now(&mut lifelines, false).is_empty());

        // Another local user, who knows the port but not the secret, claims rank 1; so does a
        // second connection that somehow had the secret: neither takes the lifeline over.
        let wrong = reach(endpoint, &greeting(1, &[7; SECRET]), SILENCE).unwrap();
        let again = reach(endpoint, &greeting(1, &secret), SILENCE).unwrap();
        // One that says nothing is closed after `HELLO`.
        let silent = TcpStream::connect(endpoint).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert!(look_now(&mut lifelines, false).is_empty());
        std::thread::sleep(HELLO);
        assert!(look_now(&mut lifelines, false).is_empty());
        assert!(lifelines.unnamed.is_empty(), "every stranger closed");
        for mut stranger in [wrong, again, silent] {
            stranger.set_nonblocking(false).unwrap();
            let mut byte = [0u8; 1];
            assert_eq!(
                stranger.read(&mut byte).unwrap_or(0),
                0,
                "closed by the master"
            );
        }

        // The real worker still holds its lifeline: its death is seen.
        drop(worker);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(look_now(&mut lifelines, false).len(), 1);
    }

    /// What the kernel was told: keepalive on, probes after `idle` s, every `interval` s, how many.
    fn probing(stream: &TcpStream) -> (bool, u64, u64, u32) {
        use rustix::net::sockopt;
        (
            sockopt::socket_keepalive(stream).unwrap(),
            sockopt::tcp_keepidle(stream).unwrap().as_secs(),
            sockopt::tcp_keepintvl(stream).unwrap().as_secs(),
            sockopt::tcp_keepcnt(stream).unwrap(),
        )
    }

    #[test]
    fn both_ends_probe_a_silent_node_for_as_long_as_the_liveness_timeout() {
        let silence = Duration::from_secs(20);
        let mut lifelines = Lifelines::listen(&[Ipv4Addr::LOCALHOST.into()], [0; NODE], 1, silence);
        let endpoint = lifelines.contact.endpoints[0];
        let secret = lifelines.contact.secret;
        let worker = reach(endpoint, &greeting(1, &secret), silence).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert!(look_now(&mut lifelines, false).is_empty());
        let master = lifelines.named[0].as_ref().expect("greeted");
        // 10 s without a word, then 4 probes 3 s apart (2.5 s, in whole seconds up): 22 s.
        assert_eq!(probing(&worker), (true, 10, 3, PROBES));
        assert_eq!(probing(master), (true, 10, 3, PROBES));

        // A short timeout still gives the kernel whole seconds; a long one stays in its range.
        let short = reach(endpoint, &greeting(2, &secret), Duration::from_millis(300)).unwrap();
        assert_eq!(probing(&short), (true, 1, 1, PROBES));
        let long = reach(
            endpoint,
            &greeting(2, &secret),
            Duration::from_secs(1 << 30),
        )
        .unwrap();
        assert_eq!(probing(&long), (true, MOST_SECONDS, MOST_SECONDS, PROBES));
    }

    #[test]
    fn a_contact_survives_its_encoding_and_picks_endpoints_by_node() {
        let contact = Contact {
            secret: [0xab; SECRET],
            node: [3; NODE],
            endpoints: vec![
                "127.0.0.1:4000".parse().unwrap(),
                "10.1.2.3:4001".parse().unwrap(),
                "[fd00::1]:4002".parse().unwrap(),
            ],
        };
        let encoded = contact.encode();
        assert!(!encoded.contains("abab"), "the secret stays out: {encoded}");
        let decoded = Contact::decode(&encoded, [0xab; SECRET]).unwrap();
        assert_eq!(decoded, contact);
        let local: Vec<_> = decoded.for_node(&[3; NODE]).collect();
        assert_eq!(local, vec![contact.endpoints[0]]);
        let remote: Vec<_> = decoded.for_node(&[4; NODE]).collect();
        assert_eq!(remote, contact.endpoints[1..]);
        assert!(Contact::decode("zz/", [0; SECRET]).is_none());
        assert!(Contact::decode("", [0; SECRET]).is_none());
    }

    #[test]
    fn the_master_faces_a_node_from_the_subnet_they_share() {
        let address = |ip: &str, prefix| Address {
            ip: ip.parse().unwrap(),
            prefix,
            port: 0,
        };
        let mine = [address("192.168.5.1", 24), address("10.77.0.1", 24)];
        let theirs = [address("10.77.0.3", 24)];
        assert_eq!(facing(&mine, &theirs), Some("10.77.0.1".parse().unwrap()));
        assert!(address("10.77.0.1", 24).shares_subnet("10.77.0.200".parse().unwrap()));
        assert!(!address("10.77.0.1", 24).shares_subnet("10.77.1.2".parse().unwrap()));
        assert!(!address("10.77.0.1", 24).shares_subnet("fd00::1".parse().unwrap()));
        assert!(address("fd00::1", 64).shares_subnet("fd00::2".parse().unwrap()));
        let mut wire = [0u8; ADDRESS];
        let endpoint = Address {
            port: 4711,
            ..address("fd00::9", 64)
        };
        endpoint.write(&mut wire);
        assert_eq!(Address::read(&wire), Some(endpoint));
        assert_eq!(Address::read(&[0u8; ADDRESS]), None);
    }
}
