//! The transport's own handling of faults, under an MPI launcher with 4 processes and a launch
//! line that keeps the job when a rank dies (Open MPI 4: `--mca orte_enable_recovery 1`; Open
//! MPI 5: `--enable-recovery -x OMPI_MCA_orte_enable_recovery=1`, the variable telling the
//! runtime what the flag does not; MPICH has no such line):
//!
//!     cargo test -p mw-runtime --features mpi --lib --no-run
//!     mpirun --oversubscribe --mca orte_enable_recovery 1 -np 4 \
//!         target/debug/deps/mw_runtime-<hash> transport::mpi::tests --ignored --test-threads 1
//!
//! Worker 0 answers, worker 1 is killed by the master (SIGKILL, as `kill -9` would), worker 2
//! stops for good (SIGSTOP). Ignored by a plain `cargo test`; started with `--ignored` in another
//! launch, it fails and says why.
#![allow(clippy::unwrap_used)]

use std::mem::ManuallyDrop;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mpi::topology::Communicator;

use super::bootstrap::finalize;
use super::master_link::{MpiMaster, recovery_enabled};
use super::spawn::Spawner;
use super::worker_link::MpiWorker;
use super::{kill, layout, lifeline};
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

#[test]
#[ignore = "needs 4 processes under an MPI launcher that keeps the job when a rank dies (see \
            this module's doc)"]
fn a_dead_worker_is_lost_once_and_a_stopped_one_is_ended() {
    let launched = crate::launch::detect().map(|launch| launch.size);
    assert!(
        launched == Some(4) && recovery_enabled(),
        "launch it with 4 processes and recovery, e.g. `mpirun --mca orte_enable_recovery 1 -np \
         4` (this module's doc); it was launched with {launched:?} processes, recovery {}",
        if recovery_enabled() { "on" } else { "off" }
    );
    // `finalize` leaves MPI unfinalized after a loss, on every rank; nor may a failed assertion
    // finalize it while unwinding: `MPI_Finalize` would wait for the stopped rank for ever.
    let universe = ManuallyDrop::new(mpi::initialize().unwrap());
    let world = universe.world().duplicate();
    let layout = layout::gather(&world, 0);
    let lifelines = lifeline::connect(
        &world,
        world.size() as usize - 1,
        0,
        Duration::from_secs(60),
    );
    if world.rank() != 0 {
        let rank = world.rank();
        let mut link = MpiWorker::<u32, u32>::new(world, Protocol::Async);
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
        finalize(Some(ManuallyDrop::into_inner(universe)), true);
        return;
    }

    let spawner = Spawner::new(3, 3, None);
    let mut link =
        MpiMaster::<u32, u32, u32>::new(world, Protocol::Async, layout, lifelines, spawner);
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
    finalize(Some(ManuallyDrop::into_inner(universe)), true);
    eprintln!(
        "worker 1 reported lost {:.2} ms after its SIGKILL",
        lost_after.unwrap_or_default().as_secs_f64() * 1e3,
    );
}
