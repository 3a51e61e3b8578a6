//! Messages longer than MPI's 2 GiB limit travel in parts: a shared part just over 2 GiB under
//! both protocols, and an answer just as long. Needs about 9 GB of memory; run it under MPI with
//! two processes:
//!
//!     cargo test -p mw-runtime --features mpi --test mpi_large --no-run
//!     mpirun -np 2 target/debug/deps/mpi_large-<hash>
//!
//! Started without an MPI launcher, it reports itself ignored.
#![allow(clippy::unwrap_used)]

mod common;

use mw_runtime::mpi::topology::Communicator;
use mw_runtime::prelude::*;
use mw_runtime::{PolicyName, RunConfig};

/// Just over what MPI can count in one message.
const LEN: usize = i32::MAX as usize + 65;
/// MPI parts are 1 GiB: bytes on both sides of every boundary, and the ends, are marked.
const MARKS: [usize; 6] = [0, (1 << 30) - 1, 1 << 30, (2 << 30) - 1, 2 << 30, LEN - 1];

/// `LEN` bytes, the marks set to a value of their position.
fn long_message() -> Vec<u8> {
    let mut bytes = vec![0xa5; LEN];
    for p in MARKS {
        bytes[p] = (p % 251) as u8;
    }
    bytes
}

/// Whether `bytes` is [`long_message`], every byte between the marks included (compared a
/// block at a time, which is a `memcmp` even in a debug build).
fn is_long_message(bytes: &[u8]) -> bool {
    if bytes.len() != LEN || MARKS.iter().any(|&p| bytes[p] != (p % 251) as u8) {
        return false;
    }
    let filler = vec![0xa5; 1 << 20];
    let mut from = 0;
    for mark in MARKS {
        let between = &bytes[from..mark];
        if !between
            .chunks(filler.len())
            .all(|b| b == &filler[..b.len()])
        {
            return false;
        }
        from = mark + 1;
    }
    true
}

/// One task: `0` checks the shared part, `1` answers with the long message.
struct Long {
    task: u32,
    results: Vec<bool>,
}

impl Master for Long {
    type Task = u32;
    type Result = Vec<u8>;
    type Shared = Vec<u8>;

    fn partition(&mut self, it: &Iteration) -> Work<Vec<u8>, u32> {
        match (it.index, self.task) {
            (0, 0) => Work::new(long_message(), vec![0]),
            (0, _) => Work::new(Vec::new(), vec![1]),
            _ => Work::new(Vec::new(), Vec::new()),
        }
    }

    fn recover(&mut self, _: TaskId, result: Vec<u8>) {
        self.results.push(match self.task {
            0 => result == [1],
            _ => is_long_message(&result),
        });
    }

    fn final_work(&mut self) -> mw_runtime::Result<()> {
        if self.results != [true] {
            return Err(format!("results checked: {:?}", self.results).into());
        }
        Ok(())
    }
}

struct Checker;

impl Worker for Checker {
    type Task = u32;
    type Result = Vec<u8>;
    type Shared = Vec<u8>;

    fn do_work(&mut self, shared: &Vec<u8>, task: &u32) -> Vec<u8> {
        match task {
            0 => vec![u8::from(is_long_message(shared))],
            _ => long_message(),
        }
    }
}

fn main() {
    if !common::mpi_launched() {
        common::report_ignored(
            "mpi_large",
            "needs an MPI launcher: `mpirun -np 2` (see the file's doc)",
        );
        return;
    }
    let universe = mw_runtime::mpi::initialize().unwrap();
    let rank = universe.world().rank();
    let cases = [
        ("shared part, async", Protocol::Async, 0),
        ("shared part, sync", Protocol::Sync, 0),
        ("answer, async", Protocol::Async, 1),
    ];
    let mut failed = 0;
    for (name, protocol, task) in cases {
        let config = RunConfig {
            backend: BackendChoice::Mpi,
            protocol,
            policy: PolicyName::Static.into(),
            workers: Some(1),
            quiet: true,
            ..RunConfig::default()
        };
        let started = std::time::Instant::now();
        let outcome = mw_runtime::run_config(
            &config,
            || Long {
                task,
                results: Vec::new(),
            },
            || Checker,
        );
        if rank == 0 {
            match outcome {
                Ok(_) => println!("{name}: {LEN} bytes in {:.1?}", started.elapsed()),
                Err(e) => {
                    failed += 1;
                    println!("FAILED {name}: {e}");
                }
            }
        }
    }
    if rank == 0 {
        println!(
            "mpi large messages: {} passed, {failed} failed",
            cases.len() - failed
        );
        if failed > 0 {
            universe.world().abort(1);
        }
    }
}
