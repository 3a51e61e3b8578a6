//! Growing past the launched ranks: with `--max-workers` above them, the workers beyond the
//! launched ranks are slots, and a slot's process is spawned (`MPI_Comm_spawn`) when the engine
//! first gives it work, and released (`Stop`, then its communicators freed and the
//! intercommunicator disconnected) when the engine parks it, so a parked spawned worker holds no
//! process and no slot of the allocation.
//!
//! Each spawned worker is its own `MPI_Comm_spawn` of one process, with an intercommunicator of
//! its own, merged (`MPI_Intercomm_merge`) into an intracommunicator of two: the master at rank 0,
//! the worker at rank 1. Merged, the framing, posted sends and receives of the launched ranks
//! serve it unchanged. One spawn per worker, because a worker must be released alone: with Open
//! MPI 4.1 a process finalizes together with the whole job it was spawned in, and disconnecting
//! is collective over everyone on the intercommunicator. (Merging with the launched ranks into
//! one communicator would need every launched worker in the collective call, in the middle of
//! its work.) The merged communicators are freed, not disconnected: Open MPI 4.1 hangs in
//! `MPI_Comm_disconnect` of a merged communicator; the intercommunicator is disconnected.
//!
//! The spawned process runs the same program with the same arguments; it learns that it is a
//! spawned worker, its index, the pool and the master's lifeline from [`ENV`], set in its
//! environment by `env`, which MPI spawns with the variable and the program as its arguments:
//! every library passes a spawned process its arguments (Open MPI alone reads its `ompi_param`
//! info key), and the process knows what it is before MPI starts (`--backend auto` reads it).
//!
//! Where spawned processes may go is each library's own: Open MPI 4's `mpirun --oversubscribe`
//! says so in the ranks' environment (`OMPI_MCA_rmaps_base_oversubscribe`); Open MPI 5's says
//! nothing, so the variable is given with `-x`, and each spawn then asks to oversubscribe (info
//! keys `map_by` and `bind_to`); hydra (MPICH, Intel MPI) leaves `MPI_UNIVERSE_SIZE` unset
//! unless told (`-usize`), and spawns onto its hosts as asked. Intel MPI spawns only when the
//! ranks see two variables: `I_MPI_SPAWN=on` (without it `MPI_Comm_spawn` crashes) and
//! `I_MPI_SHM_SPIN_RATIO=1`. A spawned process reaches the master through the network module,
//! never shared memory, and while ranks share a node Intel MPI polls the network module once
//! every `I_MPI_SHM_SPIN_RATIO` progress calls: 10,000 by default (measured: a message from a
//! spawned process completed on the 10,000th `MPI_Test`). The runtime tests without blocking and
//! sleeps between tests while it waits, so at that ratio a message to or from a spawned worker
//! waits seconds, and the handshake's timeouts end the run. The variables are read once, as MPI
//! starts, so the launch line gives them (`-genv`); without both, none is tried.
//!
//! A spawn takes about a quarter of a second (240 ms on one node here), during which the master
//! waits: MPI has no nonblocking spawn, and spawning from a thread of its own would need
//! `MPI_THREAD_MULTIPLE` for the whole run. A failed spawn leaves Open MPI 4.1 unable to
//! finalize (`MPI_Finalize` never returns on any rank), so the master checks first that the
//! allocation has a free slot (`MPI_UNIVERSE_SIZE`, or `--oversubscribe`), and only a spawn that
//! fails nonetheless makes every rank leave without `MPI_Finalize`.
//!
//! rsmpi 0.8 has `Root::spawn`, but it reads only the per-process error codes (not the call's),
//! leaves the communicator's errors fatal (a refused spawn aborts the job) and takes no info
//! object, so the spawn itself is an `mpi::ffi` call here; merging (`InterCommunicator::merge`),
//! the parent (`Communicator::parent`) and disconnecting (dropping an `InterCommunicator`) use its
//! safe API.
#![allow(unsafe_code)]

use std::collections::VecDeque;
use std::ffi::CString;
use std::os::raw::{c_char, c_int, c_void};
use std::time::{Duration, Instant};

use mpi::ffi;
use mpi::raw::FromRaw;
use mpi::topology::{Communicator, InterCommunicator, MergeOrder, SimpleCommunicator};

use super::backoff::Backoff;
use super::framing::{Body, Comms, INLINE, Outgoing};
use super::layout::Place;
use super::library::{self, Vendor};
use super::lifeline::Secret;
use super::posted::{self, Posted, Received};

/// The environment variable that makes a process a spawned worker:
/// `INDEX:POOL:CROWD:CONTACT`, the worker's index, the pool, the processes of the job on the
/// master's node with this one, and how its lifeline reaches the master.
pub(crate) const ENV: &str = crate::launch::SPAWNED_WORKER;

/// How long the master waits for a spawned process to say where it runs.
const HANDSHAKE: Duration = Duration::from_secs(30);

/// How often the master looks whether a spawned process it waits for still runs.
const LOOK_EVERY: Duration = Duration::from_millis(100);

/// Bytes of a spawned worker's node name in its handshake.
const NAME: usize = 256;

/// A worker slot beyond the launched ranks.
enum Slot {
    /// No process: never spawned, or released.
    Vacant,
    /// A process at work or waiting for it.
    Running(Spawned),
    /// Told to stop (released while parked, or at the end of the run): its `Finished` is
    /// awaited; `report` says whether the engine asked for it (at the end of the run).
    Stopping { spawned: Spawned, report: bool },
    /// Cannot be spawned (no free slot, or a spawn failed), or its process died or was given
    /// up on: never spawned again.
    Out,
}

/// A spawned worker's process and its communicators.
pub(super) struct Spawned {
    pub(super) comms: Comms,
    inter: InterCommunicator,
    /// Sends in progress to it, oldest first.
    pub(super) posted: VecDeque<Posted>,
    pub(super) place: Place,
    /// It runs on the master's node.
    here: bool,
}

/// What became of a message from a spawned worker.
pub(super) enum Taken {
    /// For the engine.
    Pass(usize, mpi::Tag, Body),
    /// Handled here (a spawned worker's `Ready`, the `Finished` of a release).
    Kept,
}

/// The master's side of spawning.
pub(super) struct Spawner {
    /// Workers below this index are launched ranks.
    pub(super) launched: usize,
    slots: Vec<Slot>,
    /// What spawned workers run, and where their lifeline reaches the master.
    program: CString,
    args: Vec<CString>,
    lifeline: Option<(String, Secret)>,
    /// Processes the allocation can still take (`None`: no limit known, or `--oversubscribe`).
    free: Option<usize>,
    /// Why no more workers are spawned, once said.
    refused: Option<String>,
    /// A spawn failed, or a spawned process died before it was ready: MPI cannot be finalized
    /// any more.
    pub(super) broken: bool,
    /// Slots whose `Ready` the engine is owed (each slot is ready by construction: its
    /// process initializes when it is spawned) or whose `Finished` it is owed (no process).
    pub(super) owed: VecDeque<(usize, mpi::Tag)>,
    /// Workers whose process was released since the master last looked: their lifelines may
    /// close from now on, which is no loss.
    pub(super) released: Vec<usize>,
    /// Workers were lost: released workers leave without `MPI_Finalize`, and are not
    /// disconnected (see `bootstrap::finalize`).
    pub(super) leaving: bool,
    /// Spawned workers so far, and the time their spawns took.
    pub(super) spawns: usize,
    pub(super) spawn_time: Duration,
    /// Spawn time the engine was not told of yet.
    pub(super) untold: Duration,
}

impl Spawner {
    /// Slots for the workers `launched..pool`; `lifeline` is where they reach the master.
    pub(super) fn new(launched: usize, pool: usize, lifeline: Option<(String, Secret)>) -> Self {
        let slots = pool.saturating_sub(launched);
        let program = std::env::current_exe()
            .ok()
            .and_then(|p| CString::new(p.into_os_string().into_encoded_bytes()).ok())
            .unwrap_or_default();
        let args = std::env::args_os()
            .skip(1)
            .filter_map(|a| CString::new(a.into_encoded_bytes()).ok())
            .collect();
        Spawner {
            launched,
            slots: (0..slots).map(|_| Slot::Vacant).collect(),
            program,
            args,
            lifeline,
            free: free_slots(launched + 1),
            refused: None,
            broken: false,
            owed: (launched..pool).map(|w| (w, super::READY)).collect(),
            released: Vec::new(),
            leaving: false,
            spawns: 0,
            spawn_time: Duration::ZERO,
            untold: Duration::ZERO,
        }
    }

    /// Workers beyond the launched ranks.
    pub(super) fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Whether there are slots at all.
    pub(super) fn elastic(&self) -> bool {
        !self.slots.is_empty()
    }

    fn slot(&mut self, worker: usize) -> Option<&mut Slot> {
        worker
            .checked_sub(self.launched)
            .and_then(|i| self.slots.get_mut(i))
    }

    /// Whether `worker` is a slot.
    pub(super) fn is_slot(&self, worker: usize) -> bool {
        worker >= self.launched && worker - self.launched < self.slots.len()
    }

    /// The running (or stopping) process of `worker`, if any.
    pub(super) fn spawned(&mut self, worker: usize) -> Option<&mut Spawned> {
        match self.slot(worker)? {
            Slot::Running(spawned) | Slot::Stopping { spawned, .. } => Some(spawned),
            Slot::Vacant | Slot::Out => None,
        }
    }

    /// Makes sure `worker` has a process before the engine gives it work: spawns one into a
    /// vacant slot, waiting first for the `Finished` of one being released. `Err` says why it
    /// has none (it is then out for good).
    pub(super) fn ensure(&mut self, worker: usize, inbox: &mut Vec<u8>) -> Result<(), String> {
        if matches!(self.slot(worker), Some(Slot::Stopping { .. })) {
            self.await_release(worker, inbox);
        }
        match self.slot(worker) {
            Some(Slot::Running(_)) | None => return Ok(()),
            Some(Slot::Out) => return Err("it could not be spawned".to_owned()),
            Some(Slot::Vacant | Slot::Stopping { .. }) => {}
        }
        if let Some(why) = &self.refused {
            let why = why.clone();
            self.put(worker, Slot::Out);
            return Err(why);
        }
        if self.free == Some(0) {
            let why = format!(
                "the allocation has no free slot for another process ({})",
                no_room(self.launched + 1)
            );
            return Err(self.refuse(worker, why));
        }
        let started = Instant::now();
        let spawned = match self.spawn(worker) {
            Ok(spawned) => spawned,
            Err(why) => return Err(self.refuse(worker, why)),
        };
        self.spawns += 1;
        self.free = self.free.map(|f| f - 1);
        self.put(worker, Slot::Running(spawned));
        // It joins once `Worker::initialize` ran: under `sync` its `Ready` waits for the master
        // to take it, so it is taken now, before anything is sent to it.
        let ready = self.await_ready(worker, inbox);
        self.spawn_time += started.elapsed();
        self.untold += started.elapsed();
        if let Err(why) = &ready {
            self.release(worker, false, |spawned| {
                let stop = Outgoing::Own(Vec::new());
                let queue = &mut spawned.posted;
                let _ = super::framing::post_message(
                    &spawned.comms,
                    1,
                    super::STOP,
                    stop,
                    false,
                    Vec::new(),
                    queue,
                );
            });
            eprintln!("warning: spawned worker {worker} takes no part: {why}");
        }
        ready
    }

    /// Waits for the `Ready` of `worker`, just spawned: `Err` says why it failed to start.
    fn await_ready(&mut self, worker: usize, inbox: &mut Vec<u8>) -> Result<(), String> {
        let Some(spawned) = self.spawned(worker) else {
            return Err("it has no process".to_owned());
        };
        // `initialize` may take long; a process that died is not waited for (when it runs on
        // this node, where it can be looked at).
        let here = mpi::environment::processor_name().unwrap_or_default();
        let pid = (spawned.place.node == here).then_some(spawned.place.pid);
        let mut looked = Instant::now();
        let mut died = false;
        let mut backoff = Backoff::new(Duration::from_millis(1), Duration::from_millis(5));
        let received = super::framing::receive(&spawned.comms, inbox, Some(1), |_| {
            backoff.wait();
            if looked.elapsed() >= LOOK_EVERY {
                looked = Instant::now();
                died = pid.is_some_and(|pid| !super::kill::alive(pid));
            }
            !died
        });
        if died {
            // Like a launched rank that died: no rank may finalize.
            self.broken = true;
            self.lose(worker);
            return Err("its process ended before it was ready".to_owned());
        }
        match received {
            Ok(Some((_, super::READY, body))) => {
                let bytes = match &body {
                    Body::Inline(len) => &inbox[..*len],
                    Body::Bulk(bytes) => bytes,
                };
                match super::messages::decode::<Option<String>>(bytes) {
                    Ok(None) => Ok(()),
                    Ok(Some(e)) => Err(format!("`Worker::initialize` failed: {e}")),
                    Err(e) => Err(format!("its `Ready` could not be read: {e}")),
                }
            }
            Ok(Some((_, tag, _))) => Err(format!("it sent tag {tag} before it was ready")),
            Ok(None) => Err("it never said it was ready".to_owned()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// No more spawns, for `why`, said once on stderr.
    fn refuse(&mut self, worker: usize, why: String) -> String {
        eprintln!(
            "warning: cannot spawn worker {worker}: {why}; the run goes on with the workers it has"
        );
        self.refused = Some(why.clone());
        self.put(worker, Slot::Out);
        why
    }

    /// Once spawning is refused, every vacant slot is out: the workers the engine must count
    /// as lost (they never had a process), each once.
    pub(super) fn close_vacant(&mut self) -> Vec<usize> {
        if self.refused.is_none() {
            return Vec::new();
        }
        let launched = self.launched;
        let mut closed = Vec::new();
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if matches!(slot, Slot::Vacant) {
                *slot = Slot::Out;
                closed.push(launched + i);
            }
        }
        closed
    }

    fn put(&mut self, worker: usize, slot: Slot) {
        if let Some(place) = self.slot(worker) {
            *place = slot;
        }
    }

    /// Spawns one process for `worker`, merges its intercommunicator and takes its handshake.
    fn spawn(&mut self, worker: usize) -> Result<Spawned, String> {
        let pool = self.launched + self.slots.len();
        let (contact, secret) = self.lifeline.clone().unwrap_or_default();
        let crowd = super::backoff::processes_here() + 1;
        let value = format!("{ENV}={worker}:{pool}:{crowd}:{contact}");
        let oversubscribe = self.free.is_none();
        let inter = watched(worker, || {
            spawn_one(&self.program, &self.args, &value, oversubscribe)
        })
        .inspect_err(|_| self.broken = true)?;
        let merged = inter.merge(MergeOrder::Low);
        posted::errors_return(&merged);
        let place = handshake(&merged)?;
        // The secret of its lifeline, which its arguments must not hold.
        let told = Posted::send(
            &merged,
            1,
            super::LIFELINE,
            Outgoing::Own(secret.to_vec()),
            0..secret.len(),
            false,
        );
        drop(told.finish());
        let here = place.node == mpi::environment::processor_name().unwrap_or_default();
        if here {
            super::backoff::spawned_here(1);
        }
        // Collective with the worker, which makes its bulk communicator the same way.
        let bulk = merged.duplicate();
        posted::errors_return(&bulk);
        Ok(Spawned {
            comms: Comms {
                inline: merged,
                bulk,
            },
            inter,
            posted: VecDeque::new(),
            place,
            here,
        })
    }

    /// Releases `worker` if it has a process: it is told to stop, and its communicators go
    /// once its `Finished` arrives. `stop` posts the `Stop`.
    pub(super) fn release(&mut self, worker: usize, report: bool, stop: impl FnOnce(&mut Spawned)) {
        let Some(slot) = self.slot(worker) else {
            return;
        };
        match std::mem::replace(slot, Slot::Vacant) {
            Slot::Running(mut spawned) => {
                stop(&mut spawned);
                *slot = Slot::Stopping { spawned, report };
            }
            Slot::Stopping { spawned, .. } => *slot = Slot::Stopping { spawned, report },
            other @ Slot::Out => {
                *slot = other;
                if report {
                    self.owed.push_back((worker, super::FINISHED));
                }
            }
            Slot::Vacant => {
                if report {
                    self.owed.push_back((worker, super::FINISHED));
                }
            }
        }
    }

    /// `worker` died or was given up on: its process is never waited for again (disconnecting
    /// would wait for it forever), and its slot is not spawned again.
    pub(super) fn lose(&mut self, worker: usize) -> Option<Place> {
        let slot = self.slot(worker)?;
        match std::mem::replace(slot, Slot::Out) {
            Slot::Running(spawned) | Slot::Stopping { spawned, .. } => {
                let place = spawned.place.clone();
                if spawned.here {
                    super::backoff::left_here();
                }
                spawned.posted.into_iter().for_each(Posted::abandon);
                std::mem::forget(spawned.comms);
                std::mem::forget(spawned.inter);
                Some(place)
            }
            Slot::Vacant | Slot::Out => None,
        }
    }

    /// Whether a message of a spawned worker waits to be received.
    pub(super) fn waiting(&self) -> bool {
        self.slots.iter().any(|slot| match slot {
            Slot::Running(s) | Slot::Stopping { spawned: s, .. } => has_message(&s.comms),
            Slot::Vacant | Slot::Out => false,
        })
    }

    /// Whether a message of `worker` waits to be received.
    pub(super) fn waiting_from(&mut self, worker: usize) -> bool {
        self.spawned(worker).is_some_and(|s| has_message(&s.comms))
    }

    /// Receives the first waiting message of a spawned worker into `inbox`: what is for the
    /// engine, or what this module handled. `None` when none waits, or when the worker's
    /// process ended (`ended`) in the middle of a long message: the lifelines report it lost.
    pub(super) fn take(
        &mut self,
        inbox: &mut Vec<u8>,
        mut ended: impl FnMut(usize) -> bool,
    ) -> crate::error::Result<Option<Taken>> {
        let found = (0..self.slots.len()).find(|&i| match &self.slots[i] {
            Slot::Running(s) | Slot::Stopping { spawned: s, .. } => has_message(&s.comms),
            Slot::Vacant | Slot::Out => false,
        });
        let Some(i) = found else {
            return Ok(None);
        };
        let worker = self.launched + i;
        let Some(spawned) = self.spawned(worker) else {
            return Ok(None);
        };
        let mut backoff = Backoff::new(Duration::from_millis(1), Duration::from_millis(1));
        let mut waits = 0u32;
        let received = super::framing::receive(&spawned.comms, inbox, Some(1), |part| {
            backoff.wait();
            waits = waits.wrapping_add(1);
            // The rest of a long message comes unless its sender died: look every 64 waits.
            part.is_none() || waits % 64 != 0 || !ended(worker)
        })?;
        let Some((_, tag, body)) = received else {
            return Ok(None);
        };
        Ok(Some(self.sort(worker, tag, body, inbox)))
    }

    /// Keeps what is for this module, passes the rest on.
    fn sort(&mut self, worker: usize, tag: mpi::Tag, body: Body, inbox: &[u8]) -> Taken {
        let stopping = match self.slot(worker) {
            Some(Slot::Stopping { report, .. }) => Some(*report),
            _ => None,
        };
        match (tag, stopping) {
            // Ready by construction; a spawned worker that failed to initialize is reported
            // to the engine as lost, and released.
            (super::READY, _) => {
                let bytes = match &body {
                    Body::Inline(len) => &inbox[..*len],
                    Body::Bulk(bytes) => bytes,
                };
                let error: Option<String> = super::messages::decode(bytes).unwrap_or(None);
                match error {
                    None => Taken::Kept,
                    Some(e) => Taken::Pass(
                        worker,
                        super::LOST,
                        Body::Bulk(
                            format!("its spawned process failed to initialize: {e}").into_bytes(),
                        ),
                    ),
                }
            }
            (super::FINISHED, Some(report)) => {
                self.disconnect(worker);
                if report {
                    Taken::Pass(worker, tag, body)
                } else {
                    Taken::Kept
                }
            }
            (super::FINISHED, None) => {
                self.disconnect(worker);
                Taken::Pass(worker, tag, body)
            }
            // Anything else from a worker being released is a late answer: dropped.
            (_, Some(_)) => Taken::Kept,
            _ => Taken::Pass(worker, tag, body),
        }
    }

    /// Waits for the `Finished` of `worker`, being released, and disconnects it.
    fn await_release(&mut self, worker: usize, inbox: &mut Vec<u8>) {
        let deadline = Instant::now() + HANDSHAKE;
        while matches!(self.slot(worker), Some(Slot::Stopping { .. })) {
            if Instant::now() > deadline {
                eprintln!("warning: spawned worker {worker} did not stop; it is left behind");
                self.lose(worker);
                return;
            }
            let Some(spawned) = self.spawned(worker) else {
                return;
            };
            let mut backoff = Backoff::new(Duration::from_millis(1), Duration::from_millis(1));
            let received = super::framing::receive(&spawned.comms, inbox, Some(1), |_| {
                backoff.wait();
                Instant::now() < deadline
            });
            if let Ok(Some((_, tag, body))) = received {
                if let Taken::Pass(..) = self.sort(worker, tag, body, inbox) {
                    // Nothing of a parked worker is for the engine.
                }
            }
        }
    }

    /// Frees the communicators of `worker` (after its `Finished`) and disconnects it: its
    /// process may end on its own from now on.
    fn disconnect(&mut self, worker: usize) {
        let Some(slot) = self.slot(worker) else {
            return;
        };
        if let Slot::Running(spawned) | Slot::Stopping { spawned, .. } =
            std::mem::replace(slot, Slot::Vacant)
        {
            for mut send in spawned.posted {
                // `Finished` came after every message to it was taken.
                send.test();
                drop(send);
            }
            if spawned.here {
                super::backoff::left_here();
            }
            self.released.push(worker);
            if self.leaving {
                // The worker leaves without disconnecting: waiting for it would never end.
                std::mem::forget(spawned.comms);
                std::mem::forget(spawned.inter);
                return;
            }
            drop(spawned.comms);
            // `MPI_Comm_disconnect`, with the worker doing the same.
            drop(spawned.inter);
        }
    }

    /// Takes back the finished sends of spawned workers.
    pub(super) fn reap(&mut self) -> Vec<Outgoing> {
        let mut done = Vec::new();
        for slot in &mut self.slots {
            if let Slot::Running(s) | Slot::Stopping { spawned: s, .. } = slot {
                while s.posted.front_mut().is_some_and(Posted::test) {
                    if let Some(send) = s.posted.pop_front() {
                        done.push(send.finish());
                    }
                }
            }
        }
        done
    }

    /// A one-line account of the spawns, for the run's end.
    pub(super) fn summary(&self) -> Option<String> {
        (self.spawns > 0).then(|| {
            format!(
                "mw: spawned {} worker process(es), {:.0} ms each on average",
                self.spawns,
                self.spawn_time.as_secs_f64() * 1e3 / self.spawns as f64
            )
        })
    }
}

impl Drop for Spawner {
    /// A process still attached when the master's end goes (the run failed): its communicators
    /// are left as they are, since disconnecting would wait for it.
    fn drop(&mut self) {
        for slot in std::mem::take(&mut self.slots) {
            if let Slot::Running(spawned) | Slot::Stopping { spawned, .. } = slot {
                spawned.posted.into_iter().for_each(Posted::abandon);
                std::mem::forget(spawned.comms);
                std::mem::forget(spawned.inter);
            }
        }
    }
}

/// Whether a message waits on `comms` from the worker (rank 1).
fn has_message(comms: &Comms) -> bool {
    mpi::point_to_point::Source::immediate_probe(&comms.inline.process_at_rank(1)).is_some()
}

/// Processes the allocation can take beyond the `taken` ones: `None` when unlimited (the
/// launch lets processes share cores) or unknown; none where spawning is off.
pub(super) fn free_slots(taken: usize) -> Option<usize> {
    if spawning_off().is_some() {
        return Some(0);
    }
    let universe = universe_size();
    if oversubscribing() || universe.is_some_and(|size| size < taken) {
        return None;
    }
    universe.map(|size| size.saturating_sub(taken))
}

/// Whether the launch lets spawned processes share cores: `OMPI_MCA_rmaps_base_oversubscribe`,
/// which Open MPI 4's `mpirun --oversubscribe` sets in the ranks' environment and Open MPI 5's
/// is given with `-x`.
fn oversubscribing() -> bool {
    library::env_is("OMPI_MCA_rmaps_base_oversubscribe", library::open_mpi_true)
}

/// Why this library spawns nothing, if it does not.
fn spawning_off() -> Option<&'static str> {
    let ready = library::env_is("I_MPI_SPAWN", library::intel_on)
        && library::env_is("I_MPI_SHM_SPIN_RATIO", |ratio| ratio.trim() == "1");
    (library::runs_on(Vendor::Intel) && !ready).then_some(
        "Intel MPI spawns workers only with `-genv I_MPI_SPAWN on` (without it MPI_Comm_spawn \
         crashes) and `-genv I_MPI_SHM_SPIN_RATIO 1` (without it a spawned worker, reached \
         through the network module, is heard once every 10,000 tests and the run stalls), so \
         none is spawned; give both on the launch line, or launch every worker with `-n`",
    )
}

/// Why no process can be spawned beyond the `taken` ones, and what makes room, in this
/// library's words.
pub(super) fn no_room(taken: usize) -> String {
    if let Some(why) = spawning_off() {
        return why.to_owned();
    }
    let universe = universe_size().unwrap_or(taken);
    let open_mpi = library::running().filter(|l| l.vendor == Vendor::OpenMpi);
    match open_mpi.map(library::Library::major) {
        Some("4") => format!(
            "MPI_UNIVERSE_SIZE {universe}, without mpirun's `--oversubscribe`; give it, or a \
             hostfile with free slots, or in a batch job ask for more tasks than mpirun's `-np`"
        ),
        Some(_) => format!(
            "MPI_UNIVERSE_SIZE {universe}; Open MPI 5's mpirun does not tell its ranks that it \
             may oversubscribe: add `-x OMPI_MCA_rmaps_base_oversubscribe=1` to let spawned \
             workers share cores, or give it a hostfile with free slots"
        ),
        None => format!(
            "MPI_UNIVERSE_SIZE {universe}; give mpiexec a larger universe (`-usize N`) or hosts \
             with free slots"
        ),
    }
}

/// `MPI_UNIVERSE_SIZE`: the processes the allocation can hold, when MPI knows.
pub(super) fn universe_size() -> Option<usize> {
    let mut value: *mut c_int = std::ptr::null_mut();
    let mut found: c_int = 0;
    // SAFETY: the attribute's value is a pointer to an int owned by MPI, read only when found.
    unsafe {
        ffi::MPI_Comm_get_attr(
            ffi::RSMPI_COMM_WORLD,
            ffi::MPI_UNIVERSE_SIZE as c_int,
            (&raw mut value).cast::<c_void>(),
            &mut found,
        );
        if found == 0 || value.is_null() {
            return None;
        }
        usize::try_from(*value).ok()
    }
}

/// `MPI_Comm_spawn` of one process running `program` with `args`, `env` (`NAME=VALUE`) in its
/// environment: MPI spawns [`ENV_COMMAND`] with `env`, `program` and `args` as arguments. With
/// `oversubscribe` on Open MPI 5, the spawn asks to share cores (Open MPI 4 takes that from
/// mpirun). MPI's reason when it fails.
fn spawn_one(
    program: &CString,
    args: &[CString],
    env: &str,
    oversubscribe: bool,
) -> Result<InterCommunicator, String> {
    let command = CString::new(ENV_COMMAND).unwrap_or_default();
    let env = CString::new(env).map_err(|e| e.to_string())?;
    let mut argv: Vec<*mut c_char> = [&env, program]
        .into_iter()
        .chain(args)
        .map(|a| a.as_ptr().cast_mut())
        .chain(std::iter::once(std::ptr::null_mut()))
        .collect();
    let open_mpi_5 =
        library::running().is_some_and(|l| l.vendor == Vendor::OpenMpi && l.major() != "4");
    let keys: &[(&str, &str)] = if oversubscribe && open_mpi_5 {
        &[("map_by", ":OVERSUBSCRIBE"), ("bind_to", "none")]
    } else {
        &[]
    };
    let keys: Vec<(CString, CString)> = keys
        .iter()
        .filter_map(|(k, v)| Some((CString::new(*k).ok()?, CString::new(*v).ok()?)))
        .collect();
    // SAFETY: every pointer given to MPI points to a live, nul-terminated string or array for
    // the duration of the calls; the info object is freed before returning; the intercommunicator
    // is owned by the returned value only when the spawn succeeded.
    unsafe {
        let self_comm = ffi::RSMPI_COMM_SELF;
        ffi::MPI_Comm_set_errhandler(self_comm, ffi::RSMPI_ERRORS_RETURN);
        let mut info = ffi::RSMPI_INFO_NULL;
        ffi::MPI_Info_create(&mut info);
        for (key, value) in &keys {
            ffi::MPI_Info_set(info, key.as_ptr(), value.as_ptr());
        }
        let mut inter = ffi::RSMPI_COMM_NULL;
        let mut code: c_int = 0;
        let status = ffi::MPI_Comm_spawn(
            command.as_ptr(),
            argv.as_mut_ptr(),
            1,
            info,
            0,
            self_comm,
            &mut inter,
            &mut code,
        );
        ffi::MPI_Info_free(&mut info);
        if status != ffi::MPI_SUCCESS as c_int || inter == ffi::RSMPI_COMM_NULL {
            let status = if status == ffi::MPI_SUCCESS as c_int {
                code
            } else {
                status
            };
            return Err(format!("MPI_Comm_spawn failed: {}", error_string(status)));
        }
        Ok(InterCommunicator::from_raw(inter))
    }
}

/// What MPI spawns: POSIX's `env`, at the one path every Unix has it, which sets the variable
/// and runs the program in its place (the same process for MPI).
const ENV_COMMAND: &str = "/usr/bin/env";

/// How long a spawn may take before the user is told it hangs.
const SLOW_SPAWN: Duration = Duration::from_secs(20);

/// Runs `spawn` (of `worker`), saying on stderr if it has not returned after [`SLOW_SPAWN`]:
/// Open MPI 4.1 with an external PMIx 4 hangs now and then in `MPI_Comm_spawn` (openpmix issue
/// 2735; here about one spawn in a hundred), and nothing but ending the job gets it out.
fn watched<T>(worker: usize, spawn: impl FnOnce() -> T) -> T {
    let (done, waiting) = std::sync::mpsc::channel::<()>();
    let open_mpi_4 =
        library::running().is_some_and(|l| l.vendor == Vendor::OpenMpi && l.major() == "4");
    let known = if open_mpi_4 {
        "Open MPI 4.1 with PMIx 4 hangs now and then in MPI_Comm_spawn; "
    } else {
        ""
    };
    let watchdog = std::thread::spawn(move || {
        if waiting.recv_timeout(SLOW_SPAWN) == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
            eprintln!(
                "warning: spawning worker {worker} has not returned after {} s: {known}end the \
                 job and start it again, or launch every worker with the launcher's `-n` instead \
                 of spawning them",
                SLOW_SPAWN.as_secs()
            );
        }
    });
    let spawned = spawn();
    drop(done);
    let _ = watchdog.join();
    spawned
}

/// MPI's text for an error code.
fn error_string(code: c_int) -> String {
    let mut text = vec![0u8; ffi::MPI_MAX_ERROR_STRING as usize + 1];
    let mut len: c_int = 0;
    // SAFETY: `text` has room for MPI_MAX_ERROR_STRING characters.
    unsafe {
        ffi::MPI_Error_string(code, text.as_mut_ptr().cast(), &mut len);
    }
    text.truncate(usize::try_from(len).unwrap_or(0));
    String::from_utf8_lossy(&text).into_owned()
}

/// The master's side of the handshake: the worker's node and process id.
fn handshake(merged: &SimpleCommunicator) -> Result<Place, String> {
    let mut bytes = vec![0u8; NAME + 4];
    let deadline = Instant::now() + HANDSHAKE;
    let mut backoff = Backoff::new(Duration::from_millis(1), Duration::from_millis(1));
    match posted::receive(merged, Some(1), None, &mut bytes, 0..NAME + 4, || {
        backoff.wait();
        Instant::now() < deadline
    }) {
        Received::Message(_) => {}
        Received::GaveUp => return Err("the spawned process never said where it runs".into()),
        Received::Failed(code) => return Err(format!("its handshake failed (code {code})")),
        Received::Dropped(_) => return Err("its process failed in the handshake".into()),
    }
    let name = &bytes[..NAME];
    let end = name.iter().position(|&b| b == 0).unwrap_or(NAME);
    let mut pid = [0u8; 4];
    pid.copy_from_slice(&bytes[NAME..]);
    Ok(Place {
        node: String::from_utf8_lossy(&name[..end]).into_owned(),
        pid: u32::from_le_bytes(pid),
    })
}

/// A spawned worker, as it learned from [`ENV`].
pub(crate) struct Joining {
    pub(crate) index: usize,
    pub(crate) pool: usize,
    /// Processes of the job on the master's node, this one included, when it was spawned.
    pub(crate) crowd: usize,
    /// How its lifeline reaches the master (`lifeline::Contact`, encoded).
    pub(crate) contact: String,
}

/// This process's part when it was spawned: `None` when it was not.
pub(super) fn joining() -> Option<Joining> {
    parse_joining(&std::env::var(ENV).ok()?)
}

/// `INDEX:POOL:CROWD:CONTACT` (the contact may hold colons, as IPv6 addresses do).
fn parse_joining(value: &str) -> Option<Joining> {
    let mut fields = value.splitn(4, ':');
    Some(Joining {
        index: fields.next()?.parse().ok()?,
        pool: fields.next()?.parse().ok()?,
        crowd: fields.next()?.parse().ok()?,
        contact: fields.next()?.to_owned(),
    })
}

/// The worker's side: its parent intercommunicator merged (the master at rank 0), and its
/// handshake sent. `None` when the process has no parent.
pub(super) fn join() -> Option<(InterCommunicator, SimpleCommunicator, Secret)> {
    let parent = SimpleCommunicator::world().parent()?;
    let merged = parent.merge(MergeOrder::High);
    posted::errors_return(&merged);
    let mut bytes = [0u8; NAME + 4];
    let name = mpi::environment::processor_name().unwrap_or_default();
    // On the master's node, the processes already there share its cores with this one.
    if let Some(joining) = joining().filter(|j| super::lifeline::on_masters_node(&j.contact)) {
        super::backoff::spawned_here(joining.crowd.saturating_sub(1));
    }
    let len = name.len().min(NAME);
    bytes[..len].copy_from_slice(&name.as_bytes()[..len]);
    bytes[NAME..].copy_from_slice(&std::process::id().to_le_bytes());
    let send = Posted::send(
        &merged,
        0,
        super::READY,
        Outgoing::Own(bytes.to_vec()),
        0..bytes.len(),
        false,
    );
    drop(send.finish());
    debug_assert!(bytes.len() <= INLINE);
    // The master answers with the secret of the lifeline.
    let mut secret = vec![0u8; std::mem::size_of::<Secret>()];
    let deadline = Instant::now() + HANDSHAKE;
    let mut backoff = Backoff::new(Duration::from_millis(1), Duration::from_millis(1));
    let whole = 0..secret.len();
    let told = posted::receive(
        &merged,
        Some(0),
        Some(super::LIFELINE),
        &mut secret,
        whole,
        || {
            backoff.wait();
            Instant::now() < deadline
        },
    );
    let secret = match told {
        Received::Message(_) => Secret::try_from(secret.as_slice()).unwrap_or_default(),
        Received::GaveUp | Received::Failed(_) | Received::Dropped(_) => Secret::default(),
    };
    Some((parent, merged, secret))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_spawned_worker_reads_its_index_pool_and_the_masters_lifeline() {
        let joining = parse_joining("3:6:4:ab/01/127.0.0.1:40123,[fd00::1]:40124").unwrap();
        assert_eq!((joining.index, joining.pool, joining.crowd), (3, 6, 4));
        assert_eq!(joining.contact, "ab/01/127.0.0.1:40123,[fd00::1]:40124");
        assert!(parse_joining("1:notapool:3:x").is_none());
        assert!(parse_joining("1:2:x").is_none());
        assert!(parse_joining("1:2").is_none());
    }
}
