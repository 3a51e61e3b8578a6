//! The exactly-once and failure scenarios on the MPI backend. Run it under MPI, e.g.
//!
//!     cargo test -p mw-runtime --features mpi --test mpi --no-run
//!     mpirun -np 4 --oversubscribe target/debug/deps/mpi-<hash>
//!
//! Every rank runs the same scenarios in the same order (they are derived from a fixed seed);
//! rank 0 checks them and prints the tally. Started without an MPI launcher, it reports itself
//! ignored.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Checker, Scenario, Sleeper, config};
use mw_runtime::codec::{DecodeErrorKind, Reader};
use mw_runtime::mpi::topology::Communicator;
use mw_runtime::prelude::*;
use mw_runtime::{DecodeError, ErrorKind, PolicyName, RunConfig};

/// Scenarios for a pool of `pool` workers, the same on every rank: every policy, protocol,
/// with and without a panicking worker, under async also in small chunks with two sent ahead to
/// each worker, and the tasks streamed by `more_tasks` (a window of 5) with a worker panicking.
fn scenarios(pool: usize) -> Vec<(String, Scenario, RunConfig, Option<usize>)> {
    let mut state = 0x5eed_u64;
    let mut next = move |n: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % n
    };
    let mut out = Vec::new();
    let settings = [
        (Protocol::Sync, 0.3, None),
        (Protocol::Async, 0.3, None),
        (Protocol::Async, 0.02, Some(2)),
    ];
    for policy in PolicyName::ALL {
        for (protocol, factor, prefetch) in settings {
            for panics in [false, true] {
                if panics && pool < 2 {
                    continue;
                }
                let iterations = (0..3)
                    .map(|_| (0..1 + next(40)).map(|_| next(300) as u32).collect())
                    .collect();
                let nworkers = (0..3).map(|_| 1 + next(pool as u64) as usize).collect();
                let scenario = Scenario {
                    iterations,
                    nworkers,
                    panic_at: panics.then_some(1),
                };
                let name = format!(
                    "{policy}/{protocol}/factor={factor}/prefetch={prefetch:?}/panic={panics}"
                );
                let config = RunConfig {
                    backend: BackendChoice::Mpi,
                    prefetch,
                    ..config(pool, policy, protocol, factor)
                };
                out.push((name, scenario, config, None));
            }
        }
        let scenario = Scenario {
            iterations: (0..3)
                .map(|_| (0..1 + next(40)).map(|_| next(300) as u32).collect())
                .collect(),
            nworkers: (0..3).map(|_| 1 + next(pool as u64) as usize).collect(),
            panic_at: (pool > 1).then_some(1),
        };
        let config = RunConfig {
            backend: BackendChoice::Mpi,
            ..config(pool, policy, Protocol::Async, 0.3)
        };
        out.push((
            format!("{policy}/async/streamed"),
            scenario,
            config,
            Some(5),
        ));
    }
    out
}

/// Messages of every size, from a few bytes to well past what travels whole (64 KiB): a shared
/// part of 256 KiB, tasks and results of up to 160 KiB, each checked word by word. In chunks of
/// one task with two sent ahead, large chunks wait at busy workers while those send large
/// answers back: the master must not wait for a chunk to be taken before it takes an answer.
struct Bulky {
    iterations: usize,
    tasks: usize,
    recovered: usize,
    wrong: Vec<String>,
}

/// The shared part of iteration `i`.
fn bulky_shared(i: usize) -> Vec<u64> {
    (0..32 * 1024).map(|k| (k * 7 + i) as u64).collect()
}

/// Words in the answer to task `t`: 0 to 20 000.
fn bulky_len(t: usize) -> usize {
    [0, 1, 100, 8 * 1024, 20_000][t % 5]
}

/// Word `k` of the answer to task `t` of iteration `i`.
fn bulky_word(i: usize, t: usize, k: usize) -> u64 {
    (i * 1_000_003 + t * 30_011 + k) as u64 ^ 0x5a5a
}

/// A task: its number, the length of its answer, and a payload the worker checks.
type BulkyTask = (u32, u32, Vec<u64>);

/// The payload of task `t`: as long as its answer, of other words.
fn bulky_payload(t: usize) -> Vec<u64> {
    (0..bulky_len(t + 2)).map(|k| (t * 77 + k) as u64).collect()
}

impl Master for Bulky {
    type Task = BulkyTask;
    type Result = Vec<u64>;
    type Shared = Vec<u64>;

    fn partition(&mut self, it: &Iteration) -> Work<Vec<u64>, BulkyTask> {
        if it.index == self.iterations {
            return Work::new(Vec::new(), Vec::new());
        }
        let tasks = (0..self.tasks)
            .map(|t| (t as u32, bulky_len(t) as u32, bulky_payload(t)))
            .collect();
        Work::new(bulky_shared(it.index), tasks)
    }

    fn recover(&mut self, task: TaskId, result: Vec<u64>) {
        let (i, t) = (self.recovered / self.tasks, task.index());
        let expected: Vec<u64> = (0..bulky_len(t)).map(|k| bulky_word(i, t, k)).collect();
        if result != expected {
            self.wrong
                .push(format!("iteration {i}, task {t}: {} words", result.len()));
        }
        self.recovered += 1;
    }

    fn final_work(&mut self) -> mw_runtime::Result<()> {
        if !self.wrong.is_empty() {
            return Err(format!("wrong results: {}", self.wrong.join("; ")).into());
        }
        if self.recovered != self.tasks * self.iterations {
            return Err(format!("{} results recovered", self.recovered).into());
        }
        Ok(())
    }
}

struct Echo;

impl Worker for Echo {
    type Task = BulkyTask;
    type Result = Vec<u64>;
    type Shared = Vec<u64>;

    /// Answers with the words of `bulky_word`, for the iteration the shared part names; a shared
    /// part or a payload that did not arrive whole gives an empty answer, which the master
    /// reports.
    fn do_work(&mut self, shared: &Vec<u64>, (t, len, payload): &BulkyTask) -> Vec<u64> {
        let i = shared.first().map_or(0, |&w| w as usize);
        let t = *t as usize;
        if *shared != bulky_shared(i) || *payload != bulky_payload(t) {
            return Vec::new();
        }
        (0..*len as usize).map(|k| bulky_word(i, t, k)).collect()
    }
}

/// Bytes of [`LargeShared`]'s shared part.
const LARGE_SHARED: usize = 32 << 20;

/// Three iterations of a few tasks, each with a shared part of [`LARGE_SHARED`] bytes whose
/// first byte is the iteration's index; a worker answers with the byte it found.
struct LargeShared {
    iteration: usize,
}

impl Master for LargeShared {
    type Task = u32;
    type Result = u8;
    type Shared = Vec<u8>;

    fn partition(&mut self, it: &Iteration) -> Work<Vec<u8>, u32> {
        self.iteration = it.index;
        if it.index == 3 {
            return Work::new(Vec::new(), Vec::new());
        }
        Work::new(vec![it.index as u8; LARGE_SHARED], (0..4).collect())
    }

    fn recover(&mut self, _: TaskId, first: u8) {
        assert_eq!(
            usize::from(first),
            self.iteration,
            "a shared part of another iteration"
        );
    }
}

impl Worker for LargeShared {
    type Task = u32;
    type Result = u8;
    type Shared = Vec<u8>;

    fn do_work(&mut self, shared: &Vec<u8>, _: &u32) -> u8 {
        assert_eq!(shared.len(), LARGE_SHARED, "a shared part cut short");
        shared[0]
    }
}

/// Starts this process's peak resident memory (`VmHWM`) afresh from what it holds now.
fn reset_peak_memory() {
    std::fs::write("/proc/self/clear_refs", "5").expect("Linux resets the peak resident memory");
}

/// A line of `/proc/self/status` in KiB, e.g. `VmRSS` or `VmHWM`.
fn memory_kib(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("Linux has /proc");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

/// Panics in `recover` on the result of task 4 of iteration 1.
struct Crashing;

impl Master for Crashing {
    type Task = common::Job;
    type Result = (u32, u32, u64);
    type Shared = u32;

    fn partition(&mut self, it: &Iteration) -> Work<u32, common::Job> {
        let i = it.index as u32;
        Work::new(i, (0..40).map(|t| (i, t, 200)).collect())
    }

    fn recover(&mut self, task: TaskId, (iteration, _, _): (u32, u32, u64)) {
        assert!(
            !(iteration == 1 && task.0 == 4),
            "recover breaks on purpose"
        );
    }
}

/// A task its worker cannot read back when it holds 13: decoding refuses it, naming the field.
#[derive(Debug)]
struct Fussy(u32);

impl Message for Fussy {
    const MIN_ENCODED_LEN: usize = 4;

    fn encoded_len(&self) -> usize {
        4
    }

    fn encode(&self, out: &mut Vec<u8>) {
        self.0.encode(out);
    }

    fn decode(input: &mut Reader<'_>) -> Result<Self, DecodeError> {
        match u32::decode(input).map_err(|e| e.in_field("Fussy", "value"))? {
            13 => Err(DecodeError::new(DecodeErrorKind::OutOfRange(13), "u32", 0)
                .in_field("Fussy", "value")),
            value => Ok(Fussy(value)),
        }
    }
}

/// One iteration of 20 tasks, 13 among them.
struct FussyMaster;

impl Master for FussyMaster {
    type Task = Fussy;
    type Result = u32;
    type Shared = ();

    fn partition(&mut self, it: &Iteration) -> Work<(), Fussy> {
        Work::tasks(if it.index == 0 {
            (0..20).map(Fussy).collect()
        } else {
            Vec::new()
        })
    }

    fn recover(&mut self, _: TaskId, _: u32) {}
}

struct FussyWorker;

impl Worker for FussyWorker {
    type Task = Fussy;
    type Result = u32;
    type Shared = ();

    fn do_work(&mut self, _: &(), task: &Fussy) -> u32 {
        task.0
    }
}

fn main() {
    if !common::mpi_launched() {
        common::report_ignored(
            "mpi",
            &format!(
                "needs an MPI launcher: `mpirun -np 4 --oversubscribe {}`",
                std::env::args().next().unwrap_or_default()
            ),
        );
        return;
    }
    common::quiet_on_purpose_panics();
    let universe = mw_runtime::mpi::initialize().expect("MPI initializes once");
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size() as usize);
    if size < 2 {
        println!("mpi suite: MPI sees {size} process, and the suite needs 2 or more");
        println!("0 passed, 1 failed");
        std::process::exit(1);
    }
    let pool = size - 1;
    let (mut passed, mut failed) = (0, 0);
    for (name, scenario, config, stream) in scenarios(pool) {
        if rank == 0 {
            println!("running {name}");
        }
        let checker = || match stream {
            Some(ahead) => Checker::streaming(&scenario, ahead),
            None => Checker::new(&scenario),
        };
        let panic_at = scenario.panic_at;
        let outcome = mw_runtime::run_config(&config, checker, move || Sleeper::new(panic_at));
        if rank != 0 {
            continue;
        }
        let verdict = match outcome {
            Ok(report) => {
                let metrics = report.into_metrics().unwrap();
                // Worker 0 fails every task it gets in that iteration (none if it sits it out).
                let elsewhere = metrics
                    .failures
                    .iter()
                    .find(|f| f.worker != 0 || Some(f.iteration as u32) != scenario.panic_at);
                if let Some(f) = elsewhere {
                    Err(format!("a failure that was not injected: {f:?}"))
                } else if metrics.backend != "mpi" {
                    Err(format!("ran on {}", metrics.backend))
                } else if (
                    metrics.objective.as_str(),
                    metrics.objective_reason.as_str(),
                ) != ("time", "parked MPI ranks keep their allocation")
                {
                    // No objective configured: launched ranks cannot be released.
                    Err(format!(
                        "objective {} ({})",
                        metrics.objective, metrics.objective_reason
                    ))
                } else {
                    Ok(())
                }
            }
            Err(e) => Err(e.to_string()),
        };
        match verdict {
            Ok(()) => passed += 1,
            Err(e) => {
                failed += 1;
                println!("FAILED {name}: {e}");
            }
        }
    }

    let tasks = 15 * pool;
    let bulky = [
        (Protocol::Sync, 0.5, None),
        (Protocol::Async, 0.5, None),
        (Protocol::Async, 1.0 / tasks as f64, Some(2)),
    ];
    for (protocol, factor, prefetch) in bulky {
        let config = RunConfig {
            backend: BackendChoice::Mpi,
            prefetch,
            ..config(pool, PolicyName::Fsc, protocol, factor)
        };
        let outcome = mw_runtime::run_config(
            &config,
            || Bulky {
                iterations: 3,
                tasks,
                recovered: 0,
                wrong: Vec::new(),
            },
            || Echo,
        );
        if rank == 0 {
            let ahead = |r: &mw_runtime::Report| {
                r.metrics()
                    .map_or(0, |m| m.iterations.iter().map(|i| i.prefetched).sum())
            };
            match outcome {
                Ok(report) if prefetch.is_some() && ahead(&report) == 0 => {
                    failed += 1;
                    println!("FAILED large messages/{protocol}/prefetch: no chunk went ahead");
                }
                Ok(_) => passed += 1,
                Err(e) => {
                    failed += 1;
                    println!("FAILED large messages/{protocol}/prefetch={prefetch:?}: {e}");
                }
            }
        }
    }

    // The master holds a shared part of S bytes and its encoding, 2·S, and nothing of the
    // iteration before: measured as its peak resident memory above what it held at the start.
    let large = RunConfig {
        backend: BackendChoice::Mpi,
        ..config(pool, PolicyName::Fsc, Protocol::Async, 0.5)
    };
    if rank == 0 {
        reset_peak_memory();
    }
    let before = memory_kib("VmRSS");
    let outcome = mw_runtime::run_config(
        &large,
        || LargeShared { iteration: 0 },
        || LargeShared { iteration: 0 },
    );
    if rank == 0 {
        let grown = memory_kib("VmHWM").saturating_sub(before);
        let part = LARGE_SHARED / 1024;
        match outcome {
            Ok(_) if grown <= 2 * part + part / 4 => passed += 1,
            Ok(_) => {
                failed += 1;
                println!(
                    "FAILED large shared part: the master grew by {grown} KiB for a part of \
                     {part} KiB over 3 iterations (at most 2.25 times the part)"
                );
            }
            Err(e) => {
                failed += 1;
                println!("FAILED large shared part: {e}");
            }
        }
    }

    // A master that panics in `recover` mid-run ends the run with an error naming the hook, and
    // stops the workers: the next run finds them ready.
    for protocol in [Protocol::Sync, Protocol::Async] {
        let config = RunConfig {
            backend: BackendChoice::Mpi,
            ..config(pool, PolicyName::Daf, protocol, 0.5)
        };
        let outcome = mw_runtime::run_config(&config, || Crashing, || Sleeper::new(None));
        if rank == 0 {
            match outcome {
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::MasterPanicked {
                            hook: "recover",
                            iteration: Some(1),
                            ..
                        }
                    ) =>
                {
                    passed += 1;
                }
                other => {
                    failed += 1;
                    println!("FAILED master-panic/{protocol}: {other:?}");
                }
            }
        }
    }

    // A worker that cannot decode a chunk tells the master, which ends the run with an error
    // naming the worker, the type and the field; the workers stop, so the next run starts.
    for protocol in [Protocol::Sync, Protocol::Async] {
        let config = RunConfig {
            backend: BackendChoice::Mpi,
            ..config(pool, PolicyName::Fsc, protocol, 0.5)
        };
        let outcome = mw_runtime::run_config(&config, || FussyMaster, || FussyWorker);
        if rank == 0 {
            match outcome {
                Err(e)
                    if e.to_string().contains("could not decode a chunk")
                        && e.to_string().contains(".value` (byte 0)") =>
                {
                    passed += 1;
                }
                other => {
                    failed += 1;
                    println!("FAILED undecodable chunk/{protocol}: {other:?}");
                }
            }
        }
    }

    // A task that fails on every worker ends the run with an error naming it, on every rank count.
    let all_fail = Scenario {
        iterations: vec![vec![0; 4]],
        nworkers: vec![],
        panic_at: Some(0),
    };
    let config = RunConfig {
        backend: BackendChoice::Mpi,
        ..config(pool, PolicyName::Static, Protocol::Async, 0.5)
    };
    let outcome = mw_runtime::run_config(
        &config,
        || Checker::new(&all_fail),
        Sleeper::always_panicking,
    );
    if rank == 0 {
        match outcome {
            Err(e) if matches!(e.kind(), ErrorKind::TaskFailed { .. }) => passed += 1,
            other => {
                failed += 1;
                println!("FAILED all-workers-fail: {other:?}");
            }
        }
        println!("mpi suite on {size} processes: {passed} passed, {failed} failed");
        if failed > 0 {
            world.abort(1);
        }
    }
}
