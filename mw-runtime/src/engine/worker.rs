//! A worker's loop: keep the iteration's shared part, process chunks, report panics instead of
//! dying with them, and stretch task times by the emulated load of `--load`.

use crate::clock;
use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use crate::app::{Worker, WorkerSetup};
use crate::load::{LoadPattern, Stretch};
use crate::measure::Moments;
use crate::transport::{Chunk, Done, Failed, FromWorker, ToWorker, WorkerLink};

/// Builds a worker with `build`, then serves the master until told to stop (or until the master
/// is gone). Every call into application code is guarded, so a panic becomes a report to the
/// master rather than a silent hole in the pool. `load` says how much emulated external load
/// this worker carries in each iteration.
pub(crate) fn serve<W, L>(
    build: impl FnOnce() -> W,
    setup: &WorkerSetup,
    load: &LoadPattern,
    link: &mut L,
) where
    W: Worker,
    L: WorkerLink<W::Task, W::Shared, W::Result>,
{
    let started = catch_unwind(AssertUnwindSafe(|| {
        let mut worker = build();
        worker.initialize(setup).map(|()| worker)
    }));
    let mut worker = match started {
        Ok(Ok(worker)) => Some(worker),
        Ok(Err(e)) => {
            link.send(FromWorker::Ready {
                error: Some(e.to_string()),
            });
            None
        }
        Err(panic) => {
            link.send(FromWorker::Ready {
                error: Some(panic_message(&*panic)),
            });
            None
        }
    };
    if worker.is_some() && !link.send(FromWorker::Ready { error: None }) {
        return;
    }

    let mut shared: Option<Arc<W::Shared>> = None;
    let mut stretch = None;
    let mut cpu = clock::CpuMeter::default();
    while let Some(message) = link.recv() {
        match message {
            ToWorker::Shared { iteration, part } => {
                shared = Some(part);
                stretch = Stretch::new(load.percent(setup.index, iteration));
            }
            ToWorker::Chunk(chunk) => {
                let unprocessed = |chunk: Chunk<W::Task>, why: &str| {
                    FromWorker::Failed(Failed {
                        chunk: chunk.id,
                        tasks: chunk.tasks,
                        message: why.to_owned(),
                    })
                };
                let answer = match (&mut worker, &shared) {
                    (Some(w), Some(part)) => process(w, part, chunk, stretch.as_mut(), &mut cpu),
                    // Chunks sent ahead to a worker whose `do_work` then panicked.
                    (None, _) => unprocessed(chunk, "the worker was retired after a failure"),
                    (Some(_), None) => {
                        unprocessed(chunk, "worker received a chunk before the shared part")
                    }
                };
                if matches!(answer, FromWorker::Failed(_)) {
                    // Its state may be half-updated: it takes no further part.
                    worker = None;
                }
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

/// Runs `do_work` on every task of the chunk, timing each one; under emulated load, each task's
/// time is stretched before it is measured. One clock read per task: a task ends when the next
/// begins (a read costs tens of nanoseconds, as much as an empty task).
fn process<W: Worker>(
    worker: &mut W,
    shared: &W::Shared,
    chunk: Chunk<W::Task>,
    mut stretch: Option<&mut Stretch>,
    cpu: &mut clock::CpuMeter,
) -> FromWorker<W::Task, W::Result> {
    let mut results = Vec::with_capacity(chunk.tasks.len());
    let mut task_ms = Moments::default();
    cpu.begin();
    let started = clock::now();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let mut begun = started;
        for task in &chunk.tasks {
            results.push(worker.do_work(shared, task));
            let mut ended = clock::now();
            if let Some(stretch) = stretch.as_deref_mut() {
                stretch.after_task(ended - begun);
                ended = clock::now();
            }
            task_ms.add((ended - begun).as_secs_f64() * 1e3);
            begun = ended;
        }
        begun
    }));
    match outcome {
        Ok(ended) => FromWorker::Done(Done {
            chunk: chunk.id,
            results,
            busy_ns: u64::try_from((ended - started).as_nanos()).unwrap_or(u64::MAX),
            cpu_ns: cpu.end(ended - started),
            task_ms,
            began: Some(started),
        }),
        Err(panic) => {
            cpu.end(std::time::Duration::ZERO);
            FromWorker::Failed(Failed {
                chunk: chunk.id,
                tasks: chunk.tasks,
                message: panic_message(&*panic),
            })
        }
    }
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
