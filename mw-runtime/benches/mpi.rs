//! The MPI engine against hand-written rsmpi master/worker loops with dynamic self-scheduling
//! (send a task, receive from anyone, send the next to whoever answered), all measured on the
//! same ranks in one job:
//!
//! (a) empty tasks in chunks of one: tasks per second;
//! (b) 1 ms spinning tasks: efficiency = ideal time (total task time / workers) / measured time.
//!
//!     cargo bench -p mw-runtime --features mpi --bench mpi --no-run
//!     mpirun -np 2 target/release/deps/mpi-<hash> --bench --only a  # (a) with one worker
//!     mpirun -np 3 target/release/deps/mpi-<hash> --bench --only b  # (b) with two workers
//!
//! Four contenders, all in chunks of one task: the plain hand-written loop, the same loop
//! pipelined (each worker holds one task ahead), the runtime with `--prefetch 0` and with
//! `--prefetch 1`. Like is compared with like: `--prefetch 1` with the pipelined loop,
//! `--prefetch 0` with the plain one. Part (a) has four more: the plain and the pipelined loop
//! doing the least that any runtime measuring every task must do (the measuring loops), which
//! tell what measuring costs from what the rest of the engine costs; and the same two moving
//! their messages as the runtime does, posted and tested rather than with blocking calls (the
//! posted measuring loops), which tell what a send that cannot wait on a stopped peer costs.
//!
//! `--rounds N` (15 with `--bench`) and `--tasks N` (100,000 empty tasks) size the runs;
//! `--contender K` runs only the `K`th contender (0 to 7, in the order above), to profile it
//! alone (`valgrind --tool=callgrind` on each rank). Each
//! round runs every contender once, in rotating order; a ratio is the median of the rounds'
//! ratios, with their least and largest, so a machine whose speed drifts (a VM whose cores move)
//! compares like with like.

use std::time::{Duration, Instant};

use mw_runtime::codec::{Message, Reader};
use mw_runtime::mpi;
use mw_runtime::mpi::datatype::Equivalence;
use mw_runtime::mpi::point_to_point::{Destination, Source, Status};
use mw_runtime::mpi::topology::{Communicator, SimpleCommunicator};
use mw_runtime::prelude::*;
use mw_runtime::{PolicyName, RunConfig, TuningConfig};

const STOP: i32 = 0;
const WORK: i32 = 1;

fn spin(duration: Duration) {
    let started = Instant::now();
    while started.elapsed() < duration {
        std::hint::spin_loop();
    }
}

/// The hand-written loop: tasks are `u64` durations in µs (0 = empty); returns the master's
/// elapsed time (workers return zero). With `ahead` 0 it is plain self-scheduling (send a task,
/// receive from anyone, send the next to whoever answered); with `ahead` 1 it is pipelined: every
/// worker holds one task besides the one it works on, so the next is already in its buffer when
/// it answers, as the runtime's `--prefetch 1` does.
fn hand_written(world: &SimpleCommunicator, tasks: &[u64], ahead: usize) -> Duration {
    let workers = (world.size() - 1) as usize;
    if world.rank() != 0 {
        let master = world.process_at_rank(0);
        loop {
            let (task, status) = master.receive::<u64>();
            if status.tag() == STOP {
                return Duration::ZERO;
            }
            spin(Duration::from_micros(task));
            master.send_with_tag(&(task + 1), WORK);
        }
    }
    let started = Instant::now();
    let mut next = tasks.iter();
    let mut outstanding = 0;
    for _ in 0..=ahead {
        for w in 1..=workers {
            if let Some(task) = next.next() {
                world.process_at_rank(w as i32).send_with_tag(task, WORK);
                outstanding += 1;
            }
        }
    }
    while outstanding > 0 {
        let (answer, status) = world.any_process().receive::<u64>();
        assert!(answer > 0);
        outstanding -= 1;
        if let Some(task) = next.next() {
            world
                .process_at_rank(status.source_rank())
                .send_with_tag(task, WORK);
            outstanding += 1;
        }
    }
    let elapsed = started.elapsed();
    for w in 1..=workers {
        world.process_at_rank(w as i32).send_with_tag(&0u64, STOP);
    }
    elapsed
}

/// The received bytes of `status`'s message in `inbox`.
fn received<'a>(inbox: &'a [u8], status: &Status) -> Reader<'a> {
    let len = usize::try_from(status.count(u8::equivalent_datatype())).unwrap_or(0);
    Reader::new(&inbox[..len])
}

/// A chunk as the measuring loop sends it: its id, its first task's index and the task.
type MeasuredChunk = (u64, u64, u64);
/// An answer as the measuring loop sends it: the chunk's id, the result, the busy time in ns,
/// and the moments of the task times (count, mean, sum of squared deviations).
type MeasuredAnswer = (u64, u64, u64, (u64, f64, f64));

/// How a measuring loop moves its messages: with blocking calls (`MPI_Recv`, `MPI_Send`), or
/// posted and tested (`MPI_Irecv`, `MPI_Isend`, then `MPI_Test` until complete) as the runtime
/// moves them, so that no send can wait on a stopped peer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Calls {
    Blocking,
    Posted,
}

/// Receives the next message from `source` into `inbox`, the way `calls` says.
fn receive_from<S: Source>(source: &S, inbox: &mut [u8], calls: Calls) -> Status {
    match calls {
        Calls::Blocking => source.receive_into(inbox),
        Calls::Posted => mpi::request::scope(|scope| {
            let mut request = source.immediate_receive_into(scope, inbox);
            loop {
                match request.test() {
                    Ok(status) => return status,
                    Err(pending) => request = pending,
                }
                std::hint::spin_loop();
            }
        }),
    }
}

/// Sends `bytes` with `tag` to `to`, the way `calls` says.
fn send_to<D: Destination>(to: &D, bytes: &[u8], tag: i32, calls: Calls) {
    match calls {
        Calls::Blocking => to.send_with_tag(bytes, tag),
        Calls::Posted => mpi::request::scope(|scope| {
            let mut request = to.immediate_send_with_tag(scope, bytes, tag);
            // A short send is complete as it is posted: the first test says so.
            while let Err(pending) = request.test() {
                request = pending;
            }
        }),
    }
}

/// The hand-written loop (plain with `ahead` 0, pipelined with 1) doing the least that any
/// runtime measuring every task must do, and nothing else: chunks and answers encoded with the
/// crate's codec into bytes (buffers reused, as the runtime reuses them); on the worker a clock
/// read before and after each task, and the busy time and the task time's moments sent back; on
/// the master a clock read per answer and a record of each kept for the model. No fault
/// handling, tuning, trace, checkpoints or policy. With [`Calls::Posted`] its messages move as
/// the runtime's do, which tells what a send that cannot wait on a stopped peer costs.
fn measuring(world: &SimpleCommunicator, tasks: &[u64], ahead: usize, calls: Calls) -> Duration {
    let clock = quanta::Clock::new();
    let mut inbox = vec![0u8; 1024];
    let mut out = Vec::with_capacity(64);
    if world.rank() != 0 {
        let master = world.process_at_rank(0);
        loop {
            let status = receive_from(&master, &mut inbox[..], calls);
            if status.tag() == STOP {
                return Duration::ZERO;
            }
            let (id, _first, task) = MeasuredChunk::decode(&mut received(&inbox, &status))
                .expect("a chunk from the master");
            let began = clock.now();
            spin(Duration::from_micros(task));
            let busy = clock.now() - began;
            out.clear();
            let ms = busy.as_secs_f64() * 1e3;
            (id, task + 1, busy.as_nanos() as u64, (1u64, ms, 0.0)).encode(&mut out);
            send_to(&master, &out[..], WORK, calls);
        }
    }
    let workers = world.size() - 1;
    let started = Instant::now();
    let mut answers: Vec<(u64, u64, quanta::Instant)> = Vec::with_capacity(tasks.len());
    let mut next = tasks.iter().enumerate();
    let mut send = |to: i32, out: &mut Vec<u8>| {
        let Some((i, &task)) = next.next() else {
            return false;
        };
        out.clear();
        (i as u64, i as u64, task).encode(out);
        send_to(&world.process_at_rank(to), &out[..], WORK, calls);
        true
    };
    let mut outstanding = 0;
    for _ in 0..=ahead {
        outstanding += (1..=workers).filter(|&w| send(w, &mut out)).count();
    }
    while outstanding > 0 {
        let status = receive_from(&world.any_process(), &mut inbox[..], calls);
        let at = clock.now();
        let (id, answer, busy_ns, _moments) =
            MeasuredAnswer::decode(&mut received(&inbox, &status))
                .expect("an answer from a worker");
        assert!(answer > 0);
        outstanding -= 1;
        if send(status.source_rank(), &mut out) {
            outstanding += 1;
        }
        answers.push((id, busy_ns, at));
    }
    let elapsed = started.elapsed();
    assert_eq!(answers.len(), tasks.len());
    for w in 1..=workers {
        world.process_at_rank(w).send_with_tag(&0u64, STOP);
    }
    elapsed
}

struct Feeder(Vec<u64>);

impl Master for Feeder {
    type Task = u64;
    type Result = u64;
    type Shared = ();
    fn partition(&mut self, _: &Iteration) -> Work<(), u64> {
        Work::tasks(std::mem::take(&mut self.0))
    }
    fn recover(&mut self, _: TaskId, answer: u64) {
        assert!(answer > 0);
    }
}

struct Spinner;

impl Worker for Spinner {
    type Task = u64;
    type Result = u64;
    type Shared = ();
    fn do_work(&mut self, _: &(), task: &u64) -> u64 {
        spin(Duration::from_micros(*task));
        task + 1
    }
}

/// The runtime on the same ranks, in chunks of one task like the hand-written loop, with
/// `prefetch` chunks held ahead per worker.
fn runtime(tasks: &[u64], prefetch: usize) -> Duration {
    let config = RunConfig {
        policy: PolicyName::Fsc.into(),
        factor: 1.0 / tasks.len() as f64,
        prefetch: Some(prefetch),
        backend: BackendChoice::Mpi,
        quiet: true,
        // Like for like: the tuner would grow the chunks within the iteration.
        tuning: TuningConfig::off(),
        ..RunConfig::default()
    };
    let report = mw_runtime::run_config(&config, || Feeder(tasks.to_vec()), || Spinner)
        .expect("runtime run");
    report.metrics().map_or(Duration::ZERO, |m| {
        assert_eq!(m.iterations[0].chunks, tasks.len(), "one task per chunk");
        Duration::from_secs_f64(m.iterations[0].time_ms / 1e3)
    })
}

/// Median, least and largest of some samples.
struct Spread {
    median: f64,
    min: f64,
    max: f64,
}

impl Spread {
    fn of(mut xs: Vec<f64>) -> Spread {
        xs.sort_by(f64::total_cmp);
        Spread {
            median: xs[xs.len() / 2],
            min: xs[0],
            max: xs[xs.len() - 1],
        }
    }
}

impl std::fmt::Display for Spread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Three significant digits whatever the scale (tasks/s or an efficiency).
        let digits = |x: f64| {
            if x >= 100.0 {
                0
            } else if x >= 10.0 {
                1
            } else {
                3
            }
        };
        let d = digits(self.median);
        write!(
            f,
            "{:.d$} (min {:.d$}, max {:.d$})",
            self.median, self.min, self.max
        )
    }
}

/// The value after `flag` on the command line.
fn arg<T: std::str::FromStr>(flag: &str) -> Option<T> {
    let mut args = std::env::args().skip_while(|a| a != flag);
    args.nth(1).and_then(|v| v.parse().ok())
}

/// Runs every contender once per round, in an order that rotates, so that a change of speed of
/// the machine (vCPUs moved, a neighbour's load) hits all of them alike; returns each
/// contender's samples, round by round.
/// With `--contender K`, only contender `K` runs (for profiling one of them alone); the others
/// then have no samples.
fn paired(rounds: usize, contenders: &mut [&mut dyn FnMut() -> f64]) -> Vec<Vec<f64>> {
    let n = contenders.len();
    let alone: Option<usize> = arg("--contender");
    let mut samples = vec![Vec::with_capacity(rounds); n];
    for round in 0..rounds {
        for k in 0..n {
            let c = (round + k) % n;
            if alone.is_none_or(|alone| alone == c) {
                samples[c].push(contenders[c]());
            }
        }
    }
    samples
}

/// The per-round ratios of `ours` to `theirs`.
fn ratios(ours: &[f64], theirs: &[f64]) -> Spread {
    Spread::of(ours.iter().zip(theirs).map(|(a, b)| a / b).collect())
}

/// The contenders, in the order of `paired`'s samples (part (b) has no measuring loops).
const NAMES: [&str; 8] = [
    "plain loop",
    "pipelined loop",
    "runtime --prefetch 0",
    "runtime --prefetch 1",
    "measuring loop",
    "pipelined measuring loop",
    "posted measuring loop",
    "pipelined posted measuring loop",
];

/// The per-round ratios printed, as (name, contender over, contender under), in `NAMES`'
/// order: like with like, the runtime with prefetch over itself without, and each measuring
/// loop over the loop it measures in and the runtime over it; then each posted measuring loop
/// over its blocking twin (what posted messages cost) and the runtime over it (what the rest of
/// the engine costs).
const RATIOS: [(&str, usize, usize); 11] = [
    ("prefetch 1 / pipelined", 3, 1),
    ("prefetch 0 / plain", 2, 0),
    ("prefetch 1 / prefetch 0", 3, 2),
    ("measuring / plain", 4, 0),
    ("prefetch 0 / measuring", 2, 4),
    ("pipelined measuring / pipelined", 5, 1),
    ("prefetch 1 / pipelined measuring", 3, 5),
    ("posted measuring / measuring", 6, 4),
    ("prefetch 0 / posted measuring", 2, 6),
    ("pipelined posted measuring / pipelined measuring", 7, 5),
    ("prefetch 1 / pipelined posted measuring", 3, 7),
];

/// Prints one part: each contender's median and range, then the ratios of [`RATIOS`] between
/// the contenders it ran.
fn report(part: &str, what: &str, samples: &[Vec<f64>]) {
    for (name, s) in NAMES.iter().zip(samples).filter(|(_, s)| !s.is_empty()) {
        println!("{part} {name}: {what} {}", Spread::of(s.clone()));
    }
    if samples.iter().any(Vec::is_empty) {
        return;
    }
    for (name, over, under) in RATIOS {
        if let (Some(over), Some(under)) = (samples.get(over), samples.get(under)) {
            println!("{part} ratio {name}: {}", ratios(over, under));
        }
    }
}

fn main() {
    if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_none() && std::env::var_os("PMI_SIZE").is_none()
    {
        // Not a pass: a run that measured nothing says so and fails.
        eprintln!(
            "error: the MPI bench needs several processes started by an MPI launcher\n\
             help: launch it with mpirun, e.g. `mpirun -np 2 target/release/deps/mpi-<hash> \
             --bench --only a` (see the file's header)"
        );
        std::process::exit(2);
    }
    let universe = mw_runtime::mpi::initialize().expect("MPI initializes");
    let world = universe.world();
    let workers = (world.size() - 1) as usize;
    let bench = std::env::args().any(|a| a == "--bench");
    let rounds = arg("--rounds").unwrap_or(if bench { 15 } else { 1 });
    let empty = vec![0u64; arg("--tasks").unwrap_or(100_000)];
    let busy = vec![1000u64; 200 * workers.max(1)];
    let ideal = Duration::from_micros(busy.iter().sum::<u64>() / workers.max(1) as u64);
    // `--only a` or `--only b` runs one half (for profiling).
    let only: Option<String> = arg("--only");
    let master = world.rank() == 0;
    if master {
        println!("MPI, {workers} worker rank(s), {rounds} rounds");
    }
    if only.as_deref() != Some("b") {
        let tasks_per_s = |t: Duration| empty.len() as f64 / t.as_secs_f64();
        let samples = paired(
            rounds,
            &mut [
                &mut || tasks_per_s(hand_written(&world.duplicate(), &empty, 0)),
                &mut || tasks_per_s(hand_written(&world.duplicate(), &empty, 1)),
                &mut || tasks_per_s(runtime(&empty, 0)),
                &mut || tasks_per_s(runtime(&empty, 1)),
                &mut || tasks_per_s(measuring(&world.duplicate(), &empty, 0, Calls::Blocking)),
                &mut || tasks_per_s(measuring(&world.duplicate(), &empty, 1, Calls::Blocking)),
                &mut || tasks_per_s(measuring(&world.duplicate(), &empty, 0, Calls::Posted)),
                &mut || tasks_per_s(measuring(&world.duplicate(), &empty, 1, Calls::Posted)),
            ],
        );
        if master {
            report("(a)", "tasks/s", &samples);
        }
    }
    if only.as_deref() != Some("a") {
        let efficiency = |t: Duration| ideal.as_secs_f64() / t.as_secs_f64();
        let samples = paired(
            rounds,
            &mut [
                &mut || efficiency(hand_written(&world.duplicate(), &busy, 0)),
                &mut || efficiency(hand_written(&world.duplicate(), &busy, 1)),
                &mut || efficiency(runtime(&busy, 0)),
                &mut || efficiency(runtime(&busy, 1)),
            ],
        );
        if master {
            report("(b)", "efficiency", &samples);
        }
    }
}
