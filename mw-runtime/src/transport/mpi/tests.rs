//! The transport's own handling of faults, each test under an MPI launcher of its own (MPI
//! starts once per process) with a launch line that keeps the job when a rank dies (Open MPI 4:
//! `--mca orte_enable_recovery 1`; Open MPI 5: `--with-ft ulfm`; MPICH has no such line):
//!
//!     cargo test -p mw-runtime --features mpi --lib --no-run
//!     mpirun --oversubscribe --mca orte_enable_recovery 1 -np 4 \
//!         target/debug/deps/mw_runtime-<hash> --ignored --exact \
//!         transport::mpi::tests::a_dead_worker_is_lost_once_and_a_stopped_one_is_ended
//!     mpirun --oversubscribe --mca orte_enable_recovery 1 -np 2 \
//!         target/debug/deps/mw_runtime-<hash> --ignored --exact \
//!         transport::mpi::tests::a_worker_stopped_in_the_middle_of_a_long_message_is_given_up
//!
//! In the first, worker 0 answers, worker 1 is killed by the master (SIGKILL, as `kill -9`
//! would), worker 2 stops for good (SIGSTOP). In the second, the one worker announces a long
//! message and sends none of its body. Ignored by a plain `cargo test`; started with
//! `--ignored` in another launch, each fails and says why.
#![allow(clippy::unwrap_used)]

use std::mem::ManuallyDrop;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mpi::environment::Universe;
use mpi::topology::{Communicator, SimpleCommunicator};

use super::bootstrap::finalize;
use super::framing::{Endpoint, FOLLOWS, Outgoing};
use super::layout::Place;
use super::lifeline::Lifelines;
use super::master_link::{MpiMaster, recovery_enabled};
use super::posted::Posted;
use super::spawn::Spawner;
use super::worker_link::MpiWorker;
use super::{DONE, kill, layout, lifeline, parts};
use crate::layout::Layout;
use crate::protocol::Protocol;
use crate::transport::{Chunk, Done, FromWorker, MasterLink, ToWorker, WorkerLink};

/// What each worker does with its first chunk.
fn fate(rank: i32) -> &'static str {
    match rank {
        1 => "answers",
        2 => "is killed",
        _ => "stops",
    }
}

/// What a run has once MPI started: MPI itself, a duplicate of the world, the layout and the
/// lifelines.
struct Job {
    /// Never finalized by dropping it: `finalize` leaves MPI out after a loss, on every rank,
    /// and a failed assertion must not finalize it while unwinding either, since
    /// `MPI_Finalize` would wait for a stopped rank for ever.
    universe: ManuallyDrop<Universe>,
    world: SimpleCommunicator,
    layout: Option<(Layout, Vec<Place>)>,
    lifelines: Option<Lifelines>,
}

/// Starts a job of `processes` launched with recovery, or fails saying how to launch it.
fn start(processes: usize) -> Job {
    let launched = crate::launch::detect().map(|launch| launch.size);
    assert!(
        launched == Some(processes) && recovery_enabled(),
        "launch it with {processes} processes and recovery, e.g. `mpirun --mca \
         orte_enable_recovery 1 -np {processes}` (this module's doc); it was launched with \
         {launched:?} processes, recovery {}",
        if recovery_enabled() { "on" } else { "off" }
    );
    let universe = ManuallyDrop::new(mpi::initialize().unwrap());
    let world = universe.world().duplicate();
    let layout = layout::gather(&world, 0);
    let lifelines = lifeline::connect(&world, processes - 1, 0, Duration::from_secs(60));
    Job {
        universe,
        world,
        layout,
        lifelines,
    }
}

#[test]
#[ignore = "needs 4 processes under an MPI launcher that keeps the job when a rank dies (see \
            this module's doc)"]
fn a_dead_worker_is_lost_once_and_a_stopped_one_is_ended() {
    let job = start(4);
    if job.world.rank() != 0 {
        let rank = job.world.rank();
        let mut link = MpiWorker::<u32, u32>::new(job.world, Protocol::Async);
        loop {
            match WorkerLink::<u32, u32, u32>::recv(&mut link) {
                Some(ToWorker::Chunk(chunk)) => match fate(rank) {
                    "answers" => {
                        let done = Done {
                            failed: Vec::new(),
                            chunk: chunk.id,
                            results: chunk.tasks,
                            busy_ns: 0,
                            cpu_ns: None,
                            wait_ns: None,
                            late_ns: None,
                            task_ms: Default::default(),
                        };
                        WorkerLink::<u32, u32, u32>::send(&mut link, FromWorker::Done(done));
                    }
                    // Waits for the master's `kill -9`.
                    "is killed" => {}
                    _ => {
                        let me = std::process::id().to_string();
                        std::process::Command::new("kill")
                            .args(["-STOP", &me])
                            .status()
                            .unwrap();
                    }
                },
                Some(ToWorker::Shared { .. }) => {}
                Some(ToWorker::Stop) | None => break,
            }
        }
        let finished = FromWorker::Finished { error: None };
        WorkerLink::<u32, u32, u32>::send(&mut link, finished);
        assert!(
            link.leave_unfinalized,
            "the Stop after a loss says to leave unfinalized"
        );
        drop(link);
        finalize(Some(ManuallyDrop::into_inner(job.universe)), true);
        return;
    }

    let spawner = Spawner::new(3, 3, None);
    let mut link = MpiMaster::<u32, u32, u32>::new(
        job.world,
        Protocol::Async,
        job.layout,
        job.lifelines,
        spawner,
        Duration::from_secs(60),
    );
    for worker in 0..3 {
        let part = Arc::new(7);
        link.send(worker, ToWorker::Shared { iteration: 0, part })
            .unwrap();
        let chunk = Chunk {
            id: worker as u64,
            first: 0,
            tasks: vec![worker as u32],
        };
        link.send(worker, ToWorker::Chunk(chunk)).unwrap();
    }
    // Give the workers time to take their chunks, then kill worker 1.
    std::thread::sleep(Duration::from_millis(100));
    kill::kill(link.places[1].pid).unwrap();
    let killed = Instant::now();
    let (mut answered, mut lost_after) = (false, None);
    while !answered || lost_after.is_none() {
        let got = link.recv_within(Duration::from_secs(10)).unwrap();
        match got.expect("worker 0 answers and worker 1 is found lost within 10 s") {
            (0, FromWorker::Done(done)) => {
                assert_eq!(done.results, [0]);
                answered = true;
            }
            (1, FromWorker::Lost { why }) => {
                assert!(lost_after.is_none(), "worker 1 reported lost twice");
                // Whichever saw it first: the lifeline ("its process ended (…)") or, under
                // ULFM, MPI itself ("its process failed (…)").
                assert!(
                    why.starts_with("its process ended") || why.starts_with("its process failed"),
                    "{why}"
                );
                lost_after = Some(killed.elapsed());
            }
            (worker, message) => panic!("unexpected from worker {worker}: {message:?}"),
        }
    }
    // The stopped worker is silent; the engine would give up on it after its liveness timeout.
    assert!(
        link.recv_within(Duration::from_millis(300))
            .unwrap()
            .is_none()
    );
    link.forsake(2);
    // Neither the lost nor the forsaken worker is sent anything again, nor heard from.
    for worker in [1, 2] {
        let chunk = Chunk {
            id: 9,
            first: 0,
            tasks: vec![9],
        };
        link.send(worker, ToWorker::Chunk(chunk)).unwrap();
    }
    link.send(0, ToWorker::Stop).unwrap();
    match link.recv_within(Duration::from_secs(10)).unwrap() {
        Some((0, FromWorker::Finished { error: None })) => {}
        other => panic!("expected worker 0 to finish, got {other:?}"),
    }
    let after = link.recv_within(Duration::from_millis(300)).unwrap();
    assert!(after.is_none(), "nothing more, but {after:?}");
    assert!(link.lost_any());
    drop(link);
    finalize(Some(ManuallyDrop::into_inner(job.universe)), true);
    eprintln!(
        "worker 1 reported lost {:.2} ms after its SIGKILL",
        lost_after.unwrap_or_default().as_secs_f64() * 1e3,
    );
}

#[test]
#[ignore = "needs 2 processes under an MPI launcher that keeps the job when a rank dies (see \
            this module's doc)"]
fn a_worker_stopped_in_the_middle_of_a_long_message_is_given_up() {
    let job = start(2);
    if job.world.rank() != 0 {
        // The announcement of a 4 MiB answer, and then nothing: as a sender stopped between
        // its parts, or one whose parts move only with its MPI's progress (TCP), which a
        // stopped process never makes.
        let end = Endpoint::new(job.world);
        let header = Outgoing::Own(parts::announcement(4 << 20).to_vec());
        let _announced = Posted::send(&end.comms.inline, 0, DONE | FOLLOWS, header, 0..8, false);
        std::thread::sleep(Duration::from_secs(30));
        panic!("the master did not end this worker within 30 s");
    }

    let patience = Duration::from_secs(1);
    let spawner = Spawner::new(1, 1, None);
    let mut link = MpiMaster::<u32, u32, u32>::new(
        job.world,
        Protocol::Async,
        job.layout,
        job.lifelines,
        spawner,
        patience,
    );
    let started = Instant::now();
    match link.recv_within(Duration::from_secs(20)).unwrap() {
        Some((0, FromWorker::Lost { why })) => {
            assert!(why.contains("stopped in the middle of a message"), "{why}");
        }
        Some((worker, _)) => panic!("expected worker 0 reported lost, got a message of {worker}"),
        None => panic!("expected worker 0 reported lost within 20 s"),
    }
    let after = started.elapsed();
    // The patience, the 4 MiB at the slow pace (0.4 s) and the abandoned receive's cancel
    // (1 s), at most; well inside the wait's 20 s.
    assert!(after < Duration::from_secs(5), "reported after {after:?}");
    assert!(link.lost_any());
    drop(link);
    finalize(Some(ManuallyDrop::into_inner(job.universe)), true);
    eprintln!(
        "the stopped worker was reported lost after {:.2} s",
        after.as_secs_f64()
    );
}
