//! Measurements the runtime takes while it runs (the "measure points"): task times,
//! pooled and per worker, and for every chunk the bytes it moved and the time its trip took
//! beyond its processing.
//!
//! The master records, per iteration, in a `Probe`: the entry time of every send with its
//! encoded size, the time each answer is received with its size, the processing time the worker
//! reports for the chunk (`busy`) and its per-task moments, and the time the master spends in
//! `partition`, `recover` and `end_iteration` (`λm`). From these it derives an
//! `Observation`: `Tt`, `Tc`, `V`, `α`, `λm`, μ and σ pooled and per worker, the imbalance `Q`,
//! and one `Transfer` per chunk — `receive − send entry − processing` — with the log of every
//! message sent (when, how many bytes), from which the tuner estimates `mo` and `k` by least
//! squares, the messages queueing on the master's one link. Recording costs two clock reads and
//! a few additions per chunk.
//!
//! Behind an emulated link (`--link-latency`), a trip starts when the message was handed to the
//! link, and the runtime's own time in it that the link did not charge (threads waking after a
//! message was due, the worker's engine around `do_work`) is measured per answer and left out,
//! so that the fit finds the link's `mo`; on a real network it stays in, as part of what a
//! message costs there.
//!
//! A chunk prefetched to a worker that still holds another waits there until that one is done,
//! so its trip says nothing of the network: only chunks sent to a worker holding none give a
//! `Transfer`.

use std::time::Duration;

use crate::clock::Instant;

/// Task times as every layer keeps them.
pub(crate) use crate::stats::{Moments, TaskStats};

/// One chunk's trip: the bytes it moved (the chunk, its answer and, for a worker's first chunk
/// of an iteration, the shared part before it) and the time that was not processing —
/// `master receive − master send entry − worker processing time` (Morajko et al. 2005).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Transfer {
    pub(crate) bytes: f64,
    pub(crate) ms: f64,
    /// Its first and last message to the worker (the shared part and the chunk, or the chunk
    /// twice) in the iteration's [`SentMessage`] log, when logged: on the master's one link they wait
    /// for the messages sent before them.
    pub(crate) out: Option<(usize, usize)>,
    /// Its answer's bytes and the worker's processing time before sending it, in ms, when
    /// logged: answers from several workers queue on the master's link back.
    pub(crate) back: Option<(f64, f64)>,
}

/// A message the master sent, in the order it sent them: when (ms from the iteration's
/// start) and how many bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SentMessage {
    pub(crate) at_ms: f64,
    pub(crate) bytes: f64,
}

/// A worker's answer to a chunk, as the master received it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Answer<'a> {
    /// Its encoded size.
    pub bytes: u64,
    /// When the master received it.
    pub at: Instant,
    /// The worker's processing time for the chunk.
    pub busy: Duration,
    /// How much of `busy` kept a core busy, when measured.
    pub cpu: Option<Duration>,
    /// How much of `busy` the worker waited for a core, when measured.
    pub wait: Option<Duration>,
    /// How long the worker waited for a core before it started the chunk, when measured: in
    /// the trip, not the link's.
    pub late: Option<Duration>,
    /// Its tasks' times.
    pub tasks: &'a Moments,
    /// The runtime's own time in the trip that an emulated link did not charge, in ns, when
    /// known: left out of the transfer, whose time is then the link's.
    pub unbilled_ns: Option<i64>,
}

/// A chunk's trip as its send started it. The engine keeps it with the chunk while the chunk
/// is out ([`Probe::chunk_sent`] hands it over, [`Probe::answered`] takes it back), so that
/// the chunks a worker holds are queued in one place, not once by the engine and again here.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Trip {
    /// Send entry.
    entry: Instant,
    /// The bytes sent for it.
    pub bytes: u64,
    /// Its first and last message in the send log.
    out: (usize, usize),
    /// Sent while the worker held another chunk of the iteration: its trip includes the wait
    /// behind that one.
    queued: bool,
}

/// The measure points of one iteration as the master records them.
#[derive(Debug)]
pub(crate) struct Probe {
    shared_bytes: u64,
    /// Per worker: the shared part sent ahead of its first chunk (when, and its place in the
    /// send log), not yet counted in one.
    shared: Vec<Option<(Instant, usize)>>,
    /// Every message sent, in order, timed from `started`.
    sends: Vec<SentMessage>,
    started: Instant,
    busy: Vec<Duration>,
    /// CPU time of the chunks whose CPU time was measured, and their processing time.
    cpu: Duration,
    cpu_busy: Duration,
    /// Run-queue wait and CPU time of the chunks whose wait and CPU time were both measured,
    /// and their processing time: shares of the same chunks.
    wait: Duration,
    wait_cpu: Duration,
    wait_busy: Duration,
    /// The workers' waits for a core before their chunks, where measured, and those chunks'
    /// processing time.
    late: Duration,
    late_busy: Duration,
    /// Answers received.
    answers: u64,
    tasks: Vec<Moments>,
    pub bytes_to: u64,
    pub bytes_from: u64,
    transfers: Vec<Transfer>,
    /// Master time in `partition` and `end_iteration` (every worker idle).
    pub serial: Duration,
    /// Master time handling answers: from receipt, the bookkeeping and the `recover` calls.
    pub recover: Duration,
}

impl Probe {
    /// The measure points of an iteration started at `started` on a pool of `pool` workers,
    /// whose shared part has `shared_bytes`.
    pub(crate) fn new(pool: usize, shared_bytes: u64, started: Instant) -> Self {
        Probe {
            shared_bytes,
            shared: vec![None; pool],
            sends: Vec::new(),
            started,
            busy: vec![Duration::ZERO; pool],
            cpu: Duration::ZERO,
            cpu_busy: Duration::ZERO,
            wait: Duration::ZERO,
            wait_cpu: Duration::ZERO,
            wait_busy: Duration::ZERO,
            late: Duration::ZERO,
            late_busy: Duration::ZERO,
            answers: 0,
            tasks: vec![Moments::default(); pool],
            bytes_to: 0,
            bytes_from: 0,
            transfers: Vec::new(),
            serial: Duration::ZERO,
            recover: Duration::ZERO,
        }
    }

    /// The shared part is about to be sent to `worker`: the trip of its first chunk starts now.
    pub(crate) fn shared_sent(&mut self, worker: usize, entry: Instant) {
        self.bytes_to += self.shared_bytes;
        let logged = self.log(entry, self.shared_bytes);
        if let Some(slot) = self.shared.get_mut(worker) {
            *slot = Some((entry, logged));
        }
    }

    /// Logs a message of `bytes` sent at `entry`; its place in the log.
    fn log(&mut self, entry: Instant, bytes: u64) -> usize {
        self.sends.push(SentMessage {
            at_ms: ms(entry.saturating_duration_since(self.started)),
            bytes: bytes as f64,
        });
        self.sends.len() - 1
    }

    /// A chunk of `bytes` is about to be sent to `worker` (send entry); `queued` when the
    /// worker still holds another chunk of the iteration. Its trip, for
    /// [`answered`](Self::answered).
    pub(crate) fn chunk_sent(
        &mut self,
        worker: usize,
        bytes: u64,
        entry: Instant,
        queued: bool,
    ) -> Trip {
        self.bytes_to += bytes;
        let logged = self.log(entry, bytes);
        // A worker's first chunk: its trip counts from its shared part's send, and the shared
        // part is part of it.
        let (entry, bytes, first) = match self.shared.get_mut(worker).and_then(Option::take) {
            Some((since, first)) => (since, self.shared_bytes + bytes, first),
            None => (entry, bytes, logged),
        };
        Trip {
            entry,
            bytes,
            out: (first, logged),
            queued,
        }
    }

    /// `worker`'s answer to the chunk whose trip is `trip` was received.
    pub(crate) fn answered(&mut self, worker: usize, answer: Answer<'_>, trip: Trip) {
        let Answer {
            bytes,
            at,
            busy,
            cpu,
            wait,
            late,
            tasks,
            unbilled_ns,
        } = answer;
        self.bytes_from += bytes;
        self.answers += 1;
        if let Some(cpu) = cpu {
            self.cpu += cpu.min(busy);
            self.cpu_busy += busy;
        }
        if let (Some(wait), Some(cpu)) = (wait, cpu) {
            self.wait += wait.min(busy);
            self.wait_cpu += cpu.min(busy);
            self.wait_busy += busy;
        }
        if let Some(late) = late {
            self.late += late;
            self.late_busy += busy;
        }
        if let Some(b) = self.busy.get_mut(worker) {
            *b += busy;
        }
        if let Some(t) = self.tasks.get_mut(worker) {
            t.merge(tasks);
        }
        if !trip.queued {
            let time = at
                .saturating_duration_since(trip.entry)
                .saturating_sub(busy);
            // Behind an emulated link the runtime's own time in the trip is measured whole
            // (`unbilled_ns`, the worker's late start in it); elsewhere the worker's late start is
            // what is known of it.
            let own_ms = match (unbilled_ns, late) {
                (Some(ns), _) => ns as f64 / 1e6,
                (None, Some(late)) => ms(late),
                (None, None) => 0.0,
            };
            self.transfers.push(Transfer {
                bytes: (trip.bytes + bytes) as f64,
                ms: ms(time) - own_ms,
                out: Some(trip.out),
                back: Some((bytes as f64, ms(busy))),
            });
        }
    }

    /// Each worker's task times so far.
    pub(crate) fn worker_tasks(&self) -> &[Moments] {
        &self.tasks
    }

    /// Tasks answered so far, the processing time they took (in ms), and the answers.
    /// The tasks answered, their own processing time in ms ([`Observation::own_ms`]) and the
    /// answers received so far.
    pub(crate) fn done(&self) -> (u64, f64, u64) {
        let tasks = self.tasks.iter().map(Moments::count).sum();
        (tasks, self.own_ms(), self.answers)
    }

    /// The processing time less the waits for a core measured in it.
    fn own_ms(&self) -> f64 {
        let busy: Duration = self.busy.iter().sum();
        ms(busy.saturating_sub(self.wait))
    }

    /// The measurements so far, for a checkpoint inside the iteration: `facts` describe the
    /// part done (its tasks answered and its time until now). Bytes count what was answered:
    /// chunks still out (`out`, the bytes of their [`Trip`]s), and shared parts sent ahead of
    /// them, belong to tasks not yet done.
    pub(crate) fn observe_so_far(&self, facts: Facts, out: u64) -> Observation {
        let waiting = self.shared.iter().flatten().count() as u64 * self.shared_bytes;
        Probe {
            shared: Vec::new(),
            busy: self.busy.clone(),
            tasks: self.tasks.clone(),
            transfers: self.transfers.clone(),
            sends: self.sends.clone(),
            bytes_to: self.bytes_to.saturating_sub(waiting + out),
            ..*self
        }
        .observe(facts)
    }

    /// The iteration's derived measurements.
    pub(crate) fn observe(self, facts: Facts) -> Observation {
        let busy_ms: Vec<f64> = self.busy.iter().map(|&b| ms(b)).collect();
        let mut task = Moments::default();
        for t in &self.tasks {
            task.merge(t);
        }
        let active = self.tasks.iter().filter(|t| t.count() > 0).count().max(1);
        Observation {
            facts,
            own_ms: self.own_ms(),
            tc_ms: busy_ms.iter().sum(),
            busy_ms,
            active,
            serial_ms: ms(self.serial),
            recover_ms: ms(self.recover),
            // Where the waits were measured, the CPU share of the same chunks: chunks too short
            // for the wait to be read may have waited differently.
            cpu_share: if self.wait_busy > Duration::ZERO {
                Some(self.wait_cpu.as_secs_f64() / self.wait_busy.as_secs_f64())
            } else {
                (self.cpu_busy > Duration::ZERO)
                    .then(|| self.cpu.as_secs_f64() / self.cpu_busy.as_secs_f64())
            },
            wait_share: (self.wait_busy > Duration::ZERO)
                .then(|| self.wait.as_secs_f64() / self.wait_busy.as_secs_f64()),
            late_share: (self.late_busy > Duration::ZERO)
                .then(|| self.late.as_secs_f64() / self.late_busy.as_secs_f64()),
            bytes_to: self.bytes_to,
            bytes_from: self.bytes_from,
            shared_bytes: self.shared_bytes,
            task,
            worker_tasks: self.tasks,
            transfers: self.transfers,
            sends: self.sends,
        }
    }
}

/// What the engine knows of an iteration besides its measure points.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Facts {
    pub index: usize,
    /// `nworkers` in force (workers asked to take part).
    pub workers: usize,
    pub factor: f64,
    pub policy: crate::policy::PolicyChoice,
    pub tasks: usize,
    pub chunks: usize,
    /// Wall time of the iteration (`Tt`), in ms.
    pub time_ms: f64,
    /// Whether `nworkers` or `factor` changed while the iteration ran: its time then belongs
    /// to no single setting.
    pub mixed: bool,
}

/// One iteration, measured: the inputs of the model (Cesar et al. 2006) and of the tunlets.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Observation {
    pub facts: Facts,
    /// `Tc`: total processing time, in ms.
    pub tc_ms: f64,
    /// `Tc` less the workers' waits for a core, where measured: the processing time the tasks
    /// had a core for or waited on something else (sleep, I/O). Run-queue waits come from the
    /// cores' crowding, by other programs or by more workers than cores, not from the work, so
    /// the index objective divides by this: the same work scores the same however crowded.
    pub own_ms: f64,
    /// Processing time of each worker of the pool (`λ_i`), in ms.
    pub busy_ms: Vec<f64>,
    /// Workers that processed at least one chunk.
    pub active: usize,
    /// Master time in `partition` and `end_iteration`, while no worker has anything to do.
    pub serial_ms: f64,
    /// Master time handling answers: from receipt, the bookkeeping and the `recover` calls.
    pub recover_ms: f64,
    /// The share of processing time that kept a core busy (thread CPU time over wall time),
    /// over the chunks where it was measured (where their run-queue wait was measured too, when
    /// there are such chunks): near 1 for computing tasks on free cores, near 0 for tasks that
    /// wait (sleep, I/O).
    pub cpu_share: Option<f64>,
    /// The share of processing time spent ready to compute and waiting for a core (the
    /// workers' run-queue wait over wall time), over the chunks where it was measured: near 0
    /// on free cores, the rest of a computing task's time on cores that others hold.
    pub wait_share: Option<f64>,
    /// The workers' waits for a core before their chunks (late wake-ups), over the chunks'
    /// processing time, where measured: near 0 when the cores are free when a chunk arrives.
    pub late_share: Option<f64>,
    pub bytes_to: u64,
    pub bytes_from: u64,
    /// Bytes of the shared part, sent to each worker taking part.
    pub shared_bytes: u64,
    /// Task times of this iteration, pooled and per worker of the pool.
    pub task: Moments,
    pub worker_tasks: Vec<Moments>,
    pub transfers: Vec<Transfer>,
    /// Every message the master sent, in order: what the transfers queued behind.
    pub sends: Vec<SentMessage>,
}

impl Observation {
    /// `λm`: the master's processing time, in ms.
    pub(crate) fn lm_ms(&self) -> f64 {
        self.serial_ms + self.recover_ms
    }

    /// `V`: every byte moved, both directions.
    pub(crate) fn volume(&self) -> f64 {
        (self.bytes_to + self.bytes_from) as f64
    }

    /// `α`: the share of `V` sent to the workers.
    pub(crate) fn alpha(&self) -> f64 {
        let v = self.volume();
        if v > 0.0 {
            self.bytes_to as f64 / v
        } else {
            0.5
        }
    }

    /// `Q = 1 − (1/n)·Σλ_i/Tt` over the workers that took part (Cesar et al. 2006), in `[0, 1]`.
    pub(crate) fn imbalance(&self) -> f64 {
        let t = self.facts.time_ms;
        if t > 0.0 {
            (1.0 - self.tc_ms / self.active as f64 / t).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }

    /// `Q` over the distribution phase only, leaving out `partition` and `end_iteration`, when
    /// every worker waits by construction: what load balancing can change.
    pub(crate) fn distribution_imbalance(&self) -> f64 {
        let t = self.facts.time_ms - self.serial_ms;
        if t > 0.0 {
            (1.0 - self.tc_ms / self.active as f64 / t).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
