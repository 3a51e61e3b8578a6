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

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::Root;

/// Bytes of the master's node name sent to the workers.
const NAME: usize = 256;
/// How long a worker tries to reach the master's address.
const CONNECT: Duration = Duration::from_secs(2);
/// Looks at the connections at most this often.
const LOOK_EVERY: Duration = Duration::from_millis(10);

/// A worker's end, kept open until its process ends (closing it would tell the master the
/// worker died), or until the next run replaces it.
static KEPT: Mutex<Option<TcpStream>> = Mutex::new(None);

/// The master's side: the listener, and each worker's connection once it said who it is.
pub(super) struct Lifelines {
    listener: Option<TcpListener>,
    /// Accepted, not yet identified.
    unnamed: Vec<TcpStream>,
    /// By worker index.
    named: Vec<Option<TcpStream>>,
    looked: Instant,
}

/// What a look at the connections found: workers whose connection ended, and why.
pub(super) type Ended = Vec<(usize, String)>;

/// Collective over `world`: rank 0 listens and tells the others where; the others connect.
/// `None` on the workers, and on the master when it could not listen (deaths are then noticed by
/// the engine's liveness timeout only).
pub(super) fn connect(world: &SimpleCommunicator, pool: usize) -> Option<Lifelines> {
    let root = world.process_at_rank(0);
    let mut address = [0u8; 2 + NAME];
    let me = mpi::environment::processor_name().unwrap_or_default();
    if world.rank() == 0 {
        let lifelines = Lifelines::listen(Ipv4Addr::UNSPECIFIED, pool);
        let port = lifelines
            .listener
            .as_ref()
            .and_then(|l| l.local_addr().ok())
            .map_or(0, |a| a.port());
        address[..2].copy_from_slice(&port.to_le_bytes());
        let len = me.len().min(NAME);
        address[2..2 + len].copy_from_slice(&me.as_bytes()[..len]);
        root.broadcast_into(&mut address[..]);
        return Some(lifelines);
    }
    root.broadcast_into(&mut address[..]);
    let port = u16::from_le_bytes([address[0], address[1]]);
    if port == 0 {
        return None;
    }
    let name = &address[2..];
    let name = String::from_utf8_lossy(&name[..name.iter().position(|&b| b == 0).unwrap_or(NAME)]);
    // On the master's node, the loopback address always works.
    let host = if name == me { "127.0.0.1" } else { &name };
    join(host, port, world.rank() as u32);
    None
}

/// On a worker: connects its lifeline to the master's node `host` at `port`, saying it is
/// worker `rank - 1`.
pub(super) fn join(host: &str, port: u16, rank: u32) {
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    // The last run's master is done with it.
    *kept = None;
    match reach(host, port, rank) {
        Ok(stream) => *kept = Some(stream),
        Err(e) => eprintln!(
            "warning: worker {} cannot reach the master at {host}:{port} ({e}); if it dies, \
             the master notices only by its silence",
            rank - 1
        ),
    }
}

/// On a worker: whether the master's process ended (its end of the connection closed). A master
/// closes it only once the run is over for this worker, or when it dies.
pub(super) fn master_gone() -> bool {
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    let Some(stream) = kept.as_mut() else {
        return false;
    };
    let mut byte = [0u8; 1];
    match stream.read(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != io::ErrorKind::WouldBlock,
    }
}

/// Connects to the master and says which rank this is.
fn reach(host: &str, port: u16, rank: u32) -> io::Result<TcpStream> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no address for the master's node");
    for address in (host, port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&address, CONNECT) {
            Ok(mut stream) => {
                stream.write_all(&rank.to_le_bytes())?;
                stream.set_nonblocking(true)?;
                return Ok(stream);
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

impl Lifelines {
    /// Listens on `ip` (any port) for `pool` workers; without a listener when that fails.
    fn listen(ip: Ipv4Addr, pool: usize) -> Self {
        let listener = TcpListener::bind((ip, 0))
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|e| eprintln!("warning: the master cannot watch for dead workers: {e}"))
            .ok();
        Lifelines {
            listener,
            unnamed: Vec::new(),
            named: (0..pool).map(|_| None).collect(),
            looked: Instant::now(),
        }
    }

    /// Where workers reach the master: its port, and its node's name (`None` without a
    /// listener).
    pub(super) fn address(&self) -> Option<(u16, String)> {
        let port = self.listener.as_ref()?.local_addr().ok()?.port();
        Some((port, mpi::environment::processor_name().unwrap_or_default()))
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
            let mut byte = [0u8; 1];
            let why = match stream.read(&mut byte) {
                Ok(0) => "its process ended (connection closed)".to_owned(),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => format!("its process ended ({e})"),
                // Workers never write after their rank: nothing to read is the live case.
                Ok(_) => continue,
            };
            // The end of a connection stays: it is seen again at the next look, once the
            // worker's last messages are taken.
            if waiting(worker) {
                continue;
            }
            self.named[worker] = None;
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
        let mut byte = [0u8; 1];
        match stream.peek(&mut byte) {
            Ok(0) => true,
            Err(e) => e.kind() != io::ErrorKind::WouldBlock,
            Ok(_) => false,
        }
    }

    /// Stops watching `worker`: it finished, or the master gave up on it.
    pub(super) fn release(&mut self, worker: usize) {
        if let Some(stream) = self.named.get_mut(worker) {
            *stream = None;
        }
    }

    /// Takes the connections that came, and their ranks once they sent them.
    fn accept(&mut self) {
        if let Some(listener) = &self.listener {
            while let Ok((stream, _)) = listener.accept() {
                if stream.set_nonblocking(true).is_ok() {
                    self.unnamed.push(stream);
                }
            }
        }
        let named = &mut self.named;
        self.unnamed.retain_mut(|stream| {
            let mut rank = [0u8; 4];
            match stream.peek(&mut rank) {
                Ok(4) => {}
                Ok(0) => return false,
                Ok(_) => return true,
                Err(e) => return e.kind() == io::ErrorKind::WouldBlock,
            }
            if stream.read_exact(&mut rank).is_err() {
                return false;
            }
            let worker = (u32::from_le_bytes(rank) as usize).wrapping_sub(1);
            if let (Some(slot), Ok(stream)) = (named.get_mut(worker), stream.try_clone()) {
                *slot = Some(stream);
            }
            false
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Looks again at once, not after [`LOOK_EVERY`].
    fn look_now(lifelines: &mut Lifelines, waiting: bool) -> Ended {
        lifelines.looked = Instant::now() - LOOK_EVERY;
        lifelines.look(|_| waiting)
    }

    #[test]
    fn a_closed_connection_is_a_worker_ended_once_its_messages_are_taken() {
        let mut lifelines = Lifelines::listen(Ipv4Addr::LOCALHOST, 3);
        let port = lifelines
            .listener
            .as_ref()
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        // Ranks 1 and 3: workers 0 and 2; worker 1 never connects.
        let first = reach("127.0.0.1", port, 1).unwrap();
        let third = reach("127.0.0.1", port, 3).unwrap();
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
}
