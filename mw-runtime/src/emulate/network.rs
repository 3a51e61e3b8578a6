//! The emulated network around the local backend's ends (`--link-latency`,
//! `--link-bandwidth`): a message is handed to the [`Wire`] of its direction, which says when it
//! arrives, and its receiver sleeps until then.
//!
//! The due time travels beside the message, not in it: each pair of ends shares a queue per
//! direction, in which the sender puts the due time of every message before sending it, and
//! the receiver takes the due time of every message it takes (a link keeps each worker's
//! messages in order, and `Lost`, which the link makes itself, has none).
//!
//! The runtime's own time in a chunk's round trip, which the link did not charge, travels back
//! the same way: the worker's from its chunk's due time to its answer, less `do_work`, and the
//! master's from the answer's due time to its delivery ([`Stamps::unbilled_ns`]). A thread
//! wakes tens of microseconds after a message is due, as much as the latencies emulated: left
//! in, the fit of `mo` read the link's latency 5–20 % high, by as much as the machine was busy.

use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender, unbounded};

use super::wire::{Sleeper, Wire};
use crate::clock::{self, Instant};
use crate::codec::Message;
use crate::config::EmulatedLink;
use crate::error::Result;
use crate::layout::Layout;
use crate::protocol::Protocol;
use crate::transport::{
    Chunk, FromWorker, MasterLink, SentBuffers, SentChunk, Stamps, ToWorker, WorkerLink,
};

/// The master's link out and its link back, shared by every end.
#[derive(Debug)]
struct Network {
    out: Wire,
    back: Wire,
}

/// An answer's due time, and the worker's own time in its chunk's round trip (for results).
type Back = (Instant, Option<i64>);

/// The master's side of the emulated network.
#[derive(Debug)]
struct MasterSide {
    network: Arc<Network>,
    /// By worker: the due times of the messages sent to it, and of those it sent.
    to: Vec<Sender<Instant>>,
    from: Vec<Receiver<Back>>,
    sync: bool,
    sleeper: Sleeper,
    /// When the last message sent was handed to the network.
    handed: Option<Instant>,
    /// The time the network did not charge of the answer received last.
    unbilled_ns: Option<i64>,
    /// Workers the master gave up on: nothing sent to them is handed to the network.
    forsaken: Vec<bool>,
    /// The chunks' encodings, made here so that a chunk is handed to the network once encoded,
    /// as a real link takes it.
    sent: SentBuffers,
}

/// A worker's side of the emulated network.
#[derive(Debug)]
struct WorkerSide {
    network: Arc<Network>,
    from: Receiver<Instant>,
    to: Sender<Back>,
    sync: bool,
    sleeper: Sleeper,
    /// When the last message taken was due.
    due: Option<Instant>,
}

/// The master's end of a local link, through the emulated network when there is one.
#[derive(Debug)]
pub(crate) struct NetworkMaster<L> {
    link: L,
    side: Option<MasterSide>,
}

/// A worker's end of a local link, through the emulated network when there is one.
#[derive(Debug)]
pub(crate) struct NetworkWorker<L> {
    link: L,
    side: Option<WorkerSide>,
}

/// Puts the ends of a local link of `protocol` on the emulated network `emulated`, if any.
pub(crate) fn connect<M, W>(
    master: M,
    workers: Vec<W>,
    protocol: Protocol,
    emulated: Option<EmulatedLink>,
) -> (NetworkMaster<M>, Vec<NetworkWorker<W>>) {
    let Some(emulated) = emulated else {
        let workers = workers
            .into_iter()
            .map(|link| NetworkWorker { link, side: None })
            .collect();
        return (
            NetworkMaster {
                link: master,
                side: None,
            },
            workers,
        );
    };
    let network = Arc::new(Network {
        out: Wire::new(&emulated),
        back: Wire::new(&emulated),
    });
    let sync = protocol == Protocol::Sync;
    let (mut to, mut from) = (Vec::new(), Vec::new());
    let workers = workers
        .into_iter()
        .map(|link| {
            let (out, taken) = unbounded();
            let (back, answered) = unbounded();
            to.push(out);
            from.push(answered);
            let side = WorkerSide {
                network: Arc::clone(&network),
                from: taken,
                to: back,
                sync,
                sleeper: Sleeper::default(),
                due: None,
            };
            NetworkWorker {
                link,
                side: Some(side),
            }
        })
        .collect();
    let pool = to.len();
    let side = MasterSide {
        network,
        to,
        from,
        sync,
        sleeper: Sleeper::default(),
        handed: None,
        unbilled_ns: None,
        forsaken: vec![false; pool],
        sent: SentBuffers::default(),
    };
    let master = NetworkMaster {
        link: master,
        side: Some(side),
    };
    (master, workers)
}

impl<L> NetworkMaster<L> {
    /// The link it wraps.
    pub(crate) fn link(&self) -> &L {
        &self.link
    }
}

impl MasterSide {
    /// Hands a message of `bytes` for `worker` to the network: when it arrives; `None` for a
    /// worker given up on.
    fn hand(&mut self, worker: usize, bytes: usize) -> Option<Instant> {
        if self.forsaken.get(worker) != Some(&false) {
            return None;
        }
        let now = clock::now();
        self.handed = Some(now);
        let due = self.network.out.due(bytes, now);
        let _ = self.to[worker].send(due);
        Some(due)
    }

    /// After a send to a worker: a synchronous send completes once the message is delivered.
    fn delivered(&mut self, due: Option<Instant>) {
        if let (true, Some(due)) = (self.sync, due) {
            self.sleeper.until(due);
        }
    }

    /// A message taken from the link, once it is due.
    fn arrived<T, R>(&mut self, message: &(usize, FromWorker<T, R>)) {
        self.unbilled_ns = None;
        let (worker, message) = message;
        if matches!(message, FromWorker::Lost { .. }) {
            return;
        }
        let Some(Ok((due, hop))) = self.from.get(*worker).map(Receiver::try_recv) else {
            return;
        };
        self.sleeper.until(due);
        if matches!(message, FromWorker::Done(_)) {
            let late = signed_ns(clock::now(), due);
            self.unbilled_ns = hop.map(|hop| hop + late);
        }
    }
}

impl<T, S, R, L> MasterLink<T, S, R> for NetworkMaster<L>
where
    T: Message,
    S: Message,
    R: Message,
    L: MasterLink<T, S, R>,
{
    fn pool(&self) -> usize {
        self.link.pool()
    }

    fn backend(&self) -> &'static str {
        self.link.backend()
    }

    fn layout(&self) -> Option<Layout> {
        self.link.layout()
    }

    fn send(&mut self, worker: usize, message: ToWorker<T, S>) -> Result<()> {
        let Some(side) = &mut self.side else {
            return self.link.send(worker, message);
        };
        let due = side.hand(worker, to_worker_len(&message));
        self.link.send(worker, message)?;
        side.delivered(due);
        Ok(())
    }

    fn send_chunk(&mut self, worker: usize, chunk: Chunk<T>) -> Result<SentChunk> {
        let Some(side) = &mut self.side else {
            return self.link.send_chunk(worker, chunk);
        };
        let sent = side.sent.encode(&chunk);
        let due = side.hand(worker, 1 + chunk.encoded_len());
        self.link.send(worker, ToWorker::Chunk(chunk))?;
        side.delivered(due);
        Ok(sent)
    }

    fn reclaim(&mut self, sent: SentChunk) {
        match &mut self.side {
            Some(side) => side.sent.keep(sent),
            None => self.link.reclaim(sent),
        }
    }

    fn handed(&self) -> Option<Instant> {
        self.side.as_ref().and_then(|side| side.handed)
    }

    fn stamps(&self) -> Stamps {
        let stamps = self.link.stamps();
        match &self.side {
            Some(side) => Stamps {
                unbilled_ns: side.unbilled_ns,
                ..stamps
            },
            None => stamps,
        }
    }

    fn spare_tasks(&mut self) -> Vec<T> {
        self.link.spare_tasks()
    }

    fn reuse_results(&mut self, results: Vec<R>) {
        self.link.reuse_results(results);
    }

    fn recv(&mut self) -> Result<(usize, FromWorker<T, R>)> {
        let message = self.link.recv()?;
        if let Some(side) = &mut self.side {
            side.arrived(&message);
        }
        Ok(message)
    }

    fn recv_within(&mut self, timeout: Duration) -> Result<Option<(usize, FromWorker<T, R>)>> {
        let message = self.link.recv_within(timeout)?;
        if let (Some(side), Some(message)) = (&mut self.side, &message) {
            side.arrived(message);
        }
        Ok(message)
    }

    fn forsake(&mut self, worker: usize) {
        if let Some(forsaken) = self.side.as_mut().and_then(|s| s.forsaken.get_mut(worker)) {
            *forsaken = true;
        }
        self.link.forsake(worker);
    }

    fn parked_released(&self) -> bool {
        self.link.parked_released()
    }

    fn parked_note(&self) -> Option<String> {
        self.link.parked_note()
    }

    fn joining(&mut self) -> Duration {
        self.link.joining()
    }

    fn park(&mut self, worker: usize) {
        self.link.park(worker);
    }

    fn iteration_over(&mut self) {
        self.link.iteration_over();
    }

    fn can_leave_behind(&self) -> bool {
        self.link.can_leave_behind()
    }
}

impl<T, S, R, L> WorkerLink<T, S, R> for NetworkWorker<L>
where
    T: Message,
    S: Message,
    R: Message,
    L: WorkerLink<T, S, R>,
{
    fn recv(&mut self) -> Option<ToWorker<T, S>> {
        let message = self.link.recv()?;
        if let Some(side) = &mut self.side {
            side.due = side.from.try_recv().ok();
            if let Some(due) = side.due {
                side.sleeper.until(due);
            }
        }
        Some(message)
    }

    fn send(&mut self, message: FromWorker<T, R>) -> bool {
        let Some(side) = &mut self.side else {
            return self.link.send(message);
        };
        let now = clock::now();
        // An answer is to the chunk taken last: what its worker did besides `do_work` since
        // that chunk was due.
        let hop = match (&message, side.due) {
            (FromWorker::Done(done), Some(chunk_due)) => {
                let busy = i64::try_from(done.busy_ns).unwrap_or(i64::MAX);
                Some(signed_ns(now, chunk_due).saturating_sub(busy))
            }
            _ => None,
        };
        let due = side.network.back.due(from_worker_len(&message), now);
        let _ = side.to.send((due, hop));
        let sent = self.link.send(message);
        if sent && side.sync {
            side.sleeper.until(due);
        }
        sent
    }

    fn reuse_tasks(&mut self, tasks: Vec<T>) {
        self.link.reuse_tasks(tasks);
    }

    fn spare_results(&mut self) -> Vec<R> {
        self.link.spare_results()
    }
}

/// `later − earlier` in ns, negative when `later` came first.
fn signed_ns(later: Instant, earlier: Instant) -> i64 {
    let ns = |d: Duration| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX);
    match later.checked_duration_since(earlier) {
        Some(after) => ns(after),
        None => -ns(earlier.saturating_duration_since(later)),
    }
}

/// Bytes of a message to a worker as the MPI backend would send it (a tag byte and the
/// iteration besides the payloads).
fn to_worker_len<T: Message, S: Message>(message: &ToWorker<T, S>) -> usize {
    1 + match message {
        ToWorker::Shared { part, .. } => 8 + part.encoded_len(),
        ToWorker::Chunk(chunk) => chunk.encoded_len(),
        ToWorker::Stop => 0,
    }
}

/// Bytes of a message to the master, likewise.
fn from_worker_len<T: Message, R: Message>(message: &FromWorker<T, R>) -> usize {
    1 + match message {
        FromWorker::Ready { error } | FromWorker::Finished { error } => {
            1 + error.as_ref().map_or(0, |e| 8 + e.len())
        }
        FromWorker::Done(done) => done.encoded_len(),
        FromWorker::Failed(failed) => 16 + failed.tasks.encoded_len() + failed.message.len(),
        FromWorker::Lost { .. } => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::{Done, local};

    /// A chunk's round trip over an emulated link whose worker spends `held` besides `do_work`
    /// before it answers: the time the link did not charge, and the trip from the hand-off to
    /// delivery.
    fn round_trip(held: Duration) -> (Option<i64>, Duration) {
        let link = EmulatedLink {
            latency_ms: 0.5,
            bandwidth_mbit: None,
        };
        let (master, workers) = local::connect::<u32, (), u32>(1, Protocol::Async);
        let (mut master, mut workers) = connect(master, workers, Protocol::Async, Some(link));
        let mut worker = workers.pop().expect("one worker");
        let chunk = Chunk {
            id: 0,
            first: 0,
            tasks: vec![1],
        };
        master.send(0, ToWorker::Chunk(chunk)).expect("sent");
        let handed = master
            .handed()
            .expect("an emulated link says when it took the chunk");
        let answering = std::thread::spawn(move || {
            let Some(ToWorker::Chunk(chunk)) = worker.recv() else {
                return;
            };
            std::thread::sleep(held);
            let done = Done {
                chunk: chunk.id,
                results: chunk.tasks,
                failed: Vec::new(),
                busy_ns: 0,
                cpu_ns: None,
                wait_ns: None,
                late_ns: None,
                task_ms: Default::default(),
            };
            worker.send(FromWorker::Done(done));
        });
        let answer = master.recv().expect("answered");
        let trip = crate::clock::since(handed);
        answering.join().expect("the worker's thread");
        match answer {
            (0, FromWorker::Done(_)) => (master.stamps().unbilled_ns, trip),
            (_, other) => panic!("not an answer: {other:?}"),
        }
    }

    #[test]
    fn an_answer_carries_the_time_the_link_did_not_charge() {
        let held = Duration::from_millis(3);
        let (hop, trip) = round_trip(held);
        let hop = Duration::from_nanos(u64::try_from(hop.expect("measured")).expect("positive"));
        // The worker's 3 ms are in it, and what is left of the trip is the link's 2 × 0.5 ms:
        // how late each thread woke is in the hop too (the bound leaves room for the thread
        // to be preempted between its delivery and the clock read here).
        assert!(hop >= held, "{hop:?}");
        let link = trip.saturating_sub(hop);
        let off = link.abs_diff(Duration::from_millis(1));
        assert!(off < Duration::from_micros(500), "{link:?} of {trip:?}");
    }

    #[test]
    fn each_message_waits_for_its_own_due_time_and_a_lost_worker_for_none() {
        let link = EmulatedLink {
            latency_ms: 20.0,
            bandwidth_mbit: None,
        };
        let (master, workers) = local::connect::<u32, (), u32>(2, Protocol::Async);
        let (mut master, mut workers) = connect(master, workers, Protocol::Async, Some(link));
        let mut leaving = workers.pop().expect("worker 1");
        let mut staying = workers.pop().expect("worker 0");
        let ready = || FromWorker::Ready { error: None };
        let sent = crate::clock::now();
        assert!(leaving.send(ready()));
        // Its thread ends unfinished: the link says so itself, after the message before, with
        // no due time of its own.
        drop(leaving);
        let (who, message) = master.recv().expect("a message");
        assert!(matches!((who, &message), (1, FromWorker::Ready { .. })));
        let delivered = crate::clock::now();
        assert!(delivered - sent >= Duration::from_millis(19));
        let (who, message) = master.recv().expect("a message");
        assert!(matches!((who, &message), (1, FromWorker::Lost { .. })));
        assert!(crate::clock::since(delivered) < Duration::from_millis(19));
        // The next message waits for its own due time, not for one the loss left behind.
        let sent = crate::clock::now();
        assert!(staying.send(ready()));
        let (who, message) = master.recv().expect("a message");
        assert!(matches!((who, &message), (0, FromWorker::Ready { .. })));
        // The link's sleeper wakes early by the average of its past oversleeps (`Sleeper`),
        // which the first sleep on a busy machine can make a few ms: a message sent at once
        // would take well under half the latency.
        assert!(crate::clock::since(sent) >= Duration::from_millis(10));
    }

    #[test]
    fn without_a_link_nothing_is_measured() {
        let (master, workers) = local::connect::<u32, (), u32>(1, Protocol::Async);
        let (master, _) = connect(master, workers, Protocol::Async, None);
        assert_eq!(MasterLink::<u32, (), u32>::handed(&master), None);
    }

    #[test]
    fn signed_differences_of_instants() {
        let early = crate::clock::now();
        let late = early + Duration::from_micros(5);
        assert_eq!(signed_ns(late, early), 5_000);
        assert_eq!(signed_ns(early, late), -5_000);
    }
}
