//! `--trace PATH`: what the master and every worker did, as a Chrome trace-event file that opens
//! in Perfetto (<https://ui.perfetto.dev>) and in `chrome://tracing`.
//!
//! # Recording
//! The master records while it runs; nothing is formatted then. Every slice is a small `Copy`
//! value pushed onto a `Vec` ([`Trace::master`], [`Trace::chunk_sent`], ...), and a disabled
//! trace does not even read the clock. The file is written once, when the run ends
//! ([`Trace::write`]), with the run's metrics at hand for the counters and the decisions.
//!
//! At most `limit` events are kept (`--trace-limit`, 1,000,000 by default, about 110 MB of
//! JSON): slices and the arrow ends bound to them count, metadata, counters and decisions do
//! not. A longer run keeps its beginning, says how many slices it dropped in the file's
//! `otherData`, and still has its counters and decisions for every iteration, so the file stays
//! small enough to open.
//!
//! # Tracks
//! One process per role, each with one named thread: `master` (pid 1), then `worker 0`,
//! `worker 1`, ... (pid 2, 3, ...). On the master: an `iteration N` slice around `partition`,
//! every `send shared` and `send chunk`, every `receive`, `recover` per chunk and `end_iteration`.
//! On each worker: one `do_work` slice per chunk, and an instant where a chunk panicked. Flow
//! arrows (`s`/`f`, the end bound to its enclosing slice with `bp: "e"`) go from a chunk's send
//! to its `do_work`, and from there to the `recover` of its results. Counters on the master:
//! `nworkers`, `factor`, and the measured and predicted iteration time; tuning decisions are
//! global instants carrying their reason.
//!
//! # One clock
//! All times are the master's. On the local backend the workers are threads of the same
//! process, so a chunk's answer carries the instant its `do_work` began and the slice is exact.
//! Under MPI the workers run elsewhere, on clocks that need not agree: a worker reports only a
//! duration, its `do_work` time for the chunk (`busy_ns`, which the engine needs anyway), and
//! the master knows when it sent the chunk and when the answer came back. The `do_work` slice is
//! placed in the middle of that round trip: the time not spent working is taken to be split
//! evenly between the way out and the way back. So the slice is exact in length and, in
//! position, off by at most half the difference between the two transfer times.

mod chrome;
#[cfg(test)]
mod tests;

use crate::clock::{self, Instant};
use std::collections::VecDeque;
use std::path::Path;

use crate::error::Result;
use crate::metrics::RunMetrics;

/// What the trace reads of a message from a worker: the transport's messages convert into it,
/// so that the trace knows nothing of the transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Heard<'a> {
    /// A chunk's results.
    Results {
        chunk: u64,
        /// Results in the answer (the tasks that did not fail).
        tasks: usize,
        /// How many of the chunk's tasks failed, and why the first did.
        failed: Option<(usize, &'a str)>,
        /// When `do_work` began on the chunk, from a worker that shares the master's clock.
        began: Option<Instant>,
        /// Time in `do_work` for the chunk, in ns.
        busy_ns: u64,
    },
    /// `do_work` panicked on the chunk.
    Failure { chunk: u64, message: &'a str },
    /// Anything else: a worker ready, finished or lost.
    Other,
}

/// The trace being recorded, or nothing when `--trace` is off.
#[derive(Debug)]
pub(crate) struct Trace {
    recorder: Option<Box<Recorder>>,
}

/// When something started; empty when tracing is off (the clock is not read then).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mark(Option<Instant>);

/// What the master does that gets a slice of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MasterWork {
    Partition,
    EndIteration,
}

#[derive(Debug)]
struct Recorder {
    origin: Instant,
    limit: usize,
    /// Events the kept slices will write (see [`Kind::events`]).
    events: usize,
    spans: Vec<Span>,
    dropped: u64,
    /// Every iteration run, even past the limit: the counters hang on these.
    iterations: Vec<IterationSpan>,
    /// Panicked chunks, with the panic message (rare: the message is kept as it is).
    failures: Vec<FailureMark>,
    /// When each decision made inside an iteration was applied, in the order of the metrics'
    /// decisions that carry `tasks_done`.
    midway: Vec<u64>,
    /// Per worker: the chunks it holds, oldest first, and when their sends ended.
    holding: Vec<VecDeque<SentChunk>>,
    /// Per worker: when its last `do_work` slice ended (a chunk sent ahead starts no earlier).
    free_at: Vec<u64>,
    /// The iteration being run, for the arguments of the slices.
    iteration: u32,
}

/// One slice, in ns since the trace began.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Span {
    kind: Kind,
    iteration: u32,
    /// The worker sent to, received from, or working.
    worker: u32,
    tasks: u32,
    chunk: u64,
    start: u64,
    dur: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Master(MasterWork),
    SendShared,
    SendChunk,
    Receive(Answer),
    Recover,
    DoWork,
}

impl Kind {
    /// Events a slice of this kind writes: itself, and the ends of the arrows bound to it.
    fn events(self) -> usize {
        match self {
            Kind::SendChunk | Kind::Recover => 2,
            Kind::DoWork => 3,
            _ => 1,
        }
    }
}

/// What a receive brought.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Results,
    Failure,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct IterationSpan {
    index: usize,
    start: u64,
    end: u64,
}

#[derive(Debug, Clone, PartialEq)]
struct FailureMark {
    at: u64,
    worker: u32,
    chunk: u64,
    iteration: u32,
    message: String,
}

/// A chunk sent to a worker and not yet answered: its `do_work` slice is placed when the
/// answer comes.
#[derive(Debug, Clone, Copy, PartialEq)]
struct SentChunk {
    chunk: u64,
    tasks: u32,
    /// When its send ended, in ns since the trace began.
    sent: u64,
}

impl Trace {
    /// No trace: every call is a no-op that does not read the clock.
    pub(crate) fn off() -> Self {
        Trace { recorder: None }
    }

    /// Records for a pool of `pool` workers, keeping at most about `limit` events.
    pub(crate) fn new(pool: usize, limit: usize) -> Self {
        Trace {
            recorder: Some(Box::new(Recorder {
                origin: clock::now(),
                limit,
                events: 0,
                spans: Vec::with_capacity(limit.min(1 << 16)),
                dropped: 0,
                iterations: Vec::new(),
                failures: Vec::new(),
                midway: Vec::new(),
                holding: vec![VecDeque::new(); pool],
                free_at: vec![0; pool],
                iteration: 0,
            })),
        }
    }

    /// Whether anything is recorded (`--trace`).
    #[inline]
    pub(crate) fn is_on(&self) -> bool {
        self.recorder.is_some()
    }

    /// Now, if tracing.
    #[inline]
    pub(crate) fn mark(&self) -> Mark {
        Mark(self.recorder.as_ref().map(|_| clock::now()))
    }

    /// Decisions made inside the iteration were applied now (`count` of them).
    pub(crate) fn decided_midway(&mut self, count: usize) {
        if let Some(r) = &mut self.recorder {
            let at = r.ns(clock::now());
            r.midway.extend(std::iter::repeat_n(at, count));
        }
    }

    /// The iteration `index` begins (its slices are tagged with it).
    pub(crate) fn iteration_begins(&mut self, index: usize) {
        if let Some(r) = &mut self.recorder {
            r.iteration = saturate(index);
        }
    }

    /// Iteration `index`, which began at `started`, has ended.
    pub(crate) fn iteration_ends(&mut self, index: usize, started: Instant) {
        if let Some(r) = &mut self.recorder {
            let start = r.ns(started);
            let end = r.ns(clock::now());
            r.iterations.push(IterationSpan { index, start, end });
        }
    }

    /// The master's own work, from `started` until now.
    pub(crate) fn master(&mut self, started: Instant, work: MasterWork) {
        if let Some(r) = &mut self.recorder {
            let start = r.ns(started);
            r.push(Kind::Master(work), 0, 0, 0, start);
        }
    }

    /// The iteration's shared part was sent to `worker`, from `mark` until now.
    pub(crate) fn shared_sent(&mut self, mark: Mark, worker: usize) {
        if let (Some(r), Mark(Some(at))) = (&mut self.recorder, mark) {
            let start = r.ns(at);
            r.push(Kind::SendShared, worker, 0, 0, start);
        }
    }

    /// Chunk `chunk` of `tasks` tasks was sent to `worker`, from `mark` until now.
    #[inline]
    pub(crate) fn chunk_sent(&mut self, mark: Mark, worker: usize, chunk: u64, tasks: usize) {
        if let (Some(r), Mark(Some(at))) = (&mut self.recorder, mark) {
            let start = r.ns(at);
            let sent = r.push(Kind::SendChunk, worker, chunk, tasks, start);
            if let Some(held) = r.holding.get_mut(worker) {
                let tasks = saturate(tasks);
                held.push_back(SentChunk { chunk, tasks, sent });
            }
        }
    }

    /// The master waited from `mark` until now for `message` from `worker`. Results also give
    /// the worker's `do_work` slice, a failure its instant.
    #[inline]
    pub(crate) fn received<'a>(
        &mut self,
        mark: Mark,
        worker: usize,
        message: impl Into<Heard<'a>>,
    ) {
        // Inlined down to this test: with tracing off, nothing per answer but it.
        if self.recorder.is_some() {
            self.record_received(mark, worker, message.into());
        }
    }

    fn record_received(&mut self, mark: Mark, worker: usize, message: Heard<'_>) {
        let (Some(r), Mark(Some(at))) = (&mut self.recorder, mark) else {
            return;
        };
        let start = r.ns(at);
        let held = r.holding.get_mut(worker).and_then(VecDeque::pop_front);
        match message {
            Heard::Results {
                chunk: answered,
                tasks,
                failed,
                began,
                busy_ns,
            } => {
                let chunk = held.map_or(answered, |h| h.chunk);
                let arrived = r.push(Kind::Receive(Answer::Results), worker, chunk, tasks, start);
                if let Some((n, why)) = failed {
                    let iteration = r.iteration;
                    r.failures.push(FailureMark {
                        at: arrived,
                        worker: saturate(worker),
                        chunk,
                        iteration,
                        message: format!("{n} task(s) failed, the first: {why}"),
                    });
                }
                if let Some(held) = held.filter(|h| h.chunk == answered) {
                    match began {
                        Some(began) => r.work_at(worker, held, r.ns(began), busy_ns),
                        None => r.place_work(worker, held, busy_ns, arrived),
                    }
                }
            }
            Heard::Failure { chunk, message } => {
                let arrived = r.push(Kind::Receive(Answer::Failure), worker, chunk, 0, start);
                let iteration = r.iteration;
                r.failures.push(FailureMark {
                    at: arrived,
                    worker: saturate(worker),
                    chunk,
                    iteration,
                    message: message.to_owned(),
                });
            }
            Heard::Other => {
                r.push(Kind::Receive(Answer::Other), worker, 0, 0, start);
            }
        }
    }

    /// The results of `worker`'s chunk `chunk` were handed to `recover`, from `mark` until now.
    #[inline]
    pub(crate) fn recovered(&mut self, mark: Mark, worker: usize, chunk: u64, tasks: usize) {
        if let (Some(r), Mark(Some(at))) = (&mut self.recorder, mark) {
            let start = r.ns(at);
            r.push(Kind::Recover, worker, chunk, tasks, start);
        }
    }

    /// Slices left out because the limit was reached.
    pub(crate) fn dropped(&self) -> u64 {
        self.recorder.as_ref().map_or(0, |r| r.dropped)
    }

    /// Writes the trace to `path` as Chrome trace-event JSON; `metrics` gives the counters and
    /// the decisions. Does nothing when tracing is off.
    ///
    /// # Errors
    /// When the file cannot be created or written.
    pub(crate) fn write(&self, path: &Path, metrics: &RunMetrics) -> Result<()> {
        match &self.recorder {
            Some(r) => chrome::write(r, metrics, path),
            None => Ok(()),
        }
    }
}

impl Recorder {
    fn ns(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.origin).as_nanos()).unwrap_or(u64::MAX)
    }

    /// Pushes a slice from `start` until now; returns now.
    fn push(&mut self, kind: Kind, worker: usize, chunk: u64, tasks: usize, start: u64) -> u64 {
        let end = self.ns(clock::now()).max(start);
        self.push_span(Span {
            kind,
            iteration: self.iteration,
            worker: saturate(worker),
            tasks: saturate(tasks),
            chunk,
            start,
            dur: end - start,
        });
        end
    }

    fn push_span(&mut self, span: Span) {
        // Once full, stay full: the trace is the run's beginning, not a sample.
        let events = span.kind.events();
        if self.dropped == 0 && self.events + events <= self.limit {
            self.events += events;
            self.spans.push(span);
        } else {
            self.dropped += 1;
        }
    }

    /// The worker's `do_work` slice for `held`, in the middle of its round trip (see the module
    /// docs): `busy_ns` long, between the end of the send (or of the worker's previous slice,
    /// for a chunk that waited behind it) and the arrival of the answer.
    fn place_work(&mut self, worker: usize, held: SentChunk, busy_ns: u64, arrived: u64) {
        let from = held
            .sent
            .max(self.free_at.get(worker).copied().unwrap_or(0))
            .min(arrived);
        let round_trip = arrived - from;
        let dur = busy_ns.min(round_trip);
        let start = from + (round_trip - dur) / 2;
        self.work_at(worker, held, start, dur);
    }

    /// The worker's `do_work` slice for `held`, from `start`, `dur` long.
    fn work_at(&mut self, worker: usize, held: SentChunk, start: u64, dur: u64) {
        if let Some(free) = self.free_at.get_mut(worker) {
            *free = start + dur;
        }
        self.push_span(Span {
            kind: Kind::DoWork,
            iteration: self.iteration,
            worker: saturate(worker),
            tasks: held.tasks,
            chunk: held.chunk,
            start,
            dur,
        });
    }
}

fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
