//! A worker's loop: keep the iteration's shared part, process chunks, report failed tasks
//! instead of dying with them. Emulated load and faults wrap the worker and its link
//! (`emulate/`): this loop knows nothing of them.

use crate::clock;
use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use crate::app::{Worker, WorkerSetup};
use crate::measure::Moments;
use crate::transport::{Chunk, Done, Failed, FromWorker, ToWorker, WorkerLink};

/// Builds a worker with `build`, then serves the master until told to stop (or until the master
/// is gone). Every call into application code is guarded, so a panic becomes a report to the
/// master rather than a silent hole in the pool; after one, the worker is built afresh.
pub(crate) fn serve<W, L>(build: &impl Fn() -> W, setup: &WorkerSetup, link: &mut L)
where
    W: Worker,
    L: WorkerLink<W::Task, W::Shared, W::Result>,
{
    // The clock calibrates on its first read (about a millisecond): before `Ready`, not
    // inside the first chunk's round trip.
    clock::now();
    let mut worker = match start(build, setup) {
        Ok(worker) => Some(worker),
        Err(error) => {
            link.send(FromWorker::Ready { error: Some(error) });
            None
        }
    };
    if worker.is_some() && !link.send(FromWorker::Ready { error: None }) {
        return;
    }

    let mut shared: Option<Arc<W::Shared>> = None;
    let mut cpu = clock::CpuMeter::default();
    while let Some(message) = link.recv() {
        match message {
            ToWorker::Shared { part, .. } => shared = Some(part),
            ToWorker::Chunk(chunk) => {
                let unprocessed = |chunk: Chunk<W::Task>, why: &str| {
                    FromWorker::Failed(Failed {
                        chunk: chunk.id,
                        tasks: chunk.tasks,
                        message: why.to_owned(),
                    })
                };
                let answer = match (&mut worker, &shared) {
                    (Some(_), Some(part)) => {
                        let mut tasks = Tasks {
                            worker: &mut worker,
                            build,
                            setup,
                        };
                        let results = link.spare_results();
                        let answer = process(&mut tasks, part, &chunk, results, &mut cpu);
                        link.reuse_tasks(chunk.tasks);
                        answer
                    }
                    (None, _) => unprocessed(chunk, "the worker could not be built"),
                    (Some(_), None) => {
                        unprocessed(chunk, "worker received a chunk before the shared part")
                    }
                };
                if !link.send(answer) {
                    return;
                }
            }
            ToWorker::Stop => {
                let error = worker.as_mut().and_then(|w| {
                    match catch_unwind(AssertUnwindSafe(|| w.final_work())) {
                        Ok(Ok(())) => None,
                        Ok(Err(e)) => Some(e.to_string()),
                        Err(panic) => Some(panic_message(&*panic)),
                    }
                });
                link.send(FromWorker::Finished { error });
                return;
            }
        }
    }
}

/// Builds and initializes a worker; the error or panic's message if that failed.
fn start<W: Worker>(build: &impl Fn() -> W, setup: &WorkerSetup) -> Result<W, String> {
    match catch_unwind(AssertUnwindSafe(|| {
        let mut worker = build();
        worker.initialize(setup).map(|()| worker)
    })) {
        Ok(Ok(worker)) => Ok(worker),
        Ok(Err(e)) => Err(e.to_string()),
        Err(panic) => Err(panic_message(&*panic)),
    }
}

/// The worker that runs tasks, and how to build it again after a panic.
struct Tasks<'a, W, B> {
    worker: &'a mut Option<W>,
    build: &'a B,
    setup: &'a WorkerSetup,
}

/// Runs every task of the chunk, timing each one. One clock read per task: a task ends when the
/// next begins (a read costs tens of nanoseconds, as much as an empty task). A task that fails
/// is reported in the answer and the rest go on, on a worker built afresh if it panicked.
/// `results` is an empty vector to collect the results in (one kept from an earlier answer).
fn process<W: Worker, B: Fn() -> W>(
    tasks: &mut Tasks<'_, W, B>,
    shared: &W::Shared,
    chunk: &Chunk<W::Task>,
    mut results: Vec<W::Result>,
    cpu: &mut clock::CpuMeter,
) -> FromWorker<W::Task, W::Result> {
    results.clear();
    results.reserve(chunk.tasks.len());
    let mut failed = Vec::new();
    let mut task_ms = Moments::default();
    cpu.begin(chunk.tasks.len());
    let started = clock::now();
    let mut begun = started;
    for (offset, task) in chunk.tasks.iter().enumerate() {
        let Some(worker) = tasks.worker.as_mut() else {
            failed.push((
                offset as u32,
                "not run: the worker could not be built again".into(),
            ));
            continue;
        };
        match catch_unwind(AssertUnwindSafe(|| worker.try_work(shared, task))) {
            Ok(Ok(result)) => results.push(result),
            Ok(Err(e)) => failed.push((offset as u32, e.to_string())),
            Err(panic) => {
                failed.push((offset as u32, panic_message(&*panic)));
                // Its state may be half-updated: the next task gets a new one.
                *tasks.worker = match start(tasks.build, tasks.setup) {
                    Ok(worker) => Some(worker),
                    Err(e) => {
                        eprintln!(
                            "warning: worker {} could not be built again after a panic: {e}",
                            tasks.setup.index
                        );
                        None
                    }
                };
            }
        }
        let ended = clock::now();
        task_ms.add((ended - begun).as_secs_f64() * 1e3);
        begun = ended;
    }
    let used = cpu.end(begun - started);
    FromWorker::Done(Done {
        chunk: chunk.id,
        results,
        failed,
        busy_ns: u64::try_from((begun - started).as_nanos()).unwrap_or(u64::MAX),
        cpu_ns: used.cpu_ns,
        wait_ns: used.wait_ns,
        late_ns: used.late_ns,
        task_ms,
    })
}

/// The text a panic was raised with.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panicked with a non-text payload".to_owned()
    }
}
