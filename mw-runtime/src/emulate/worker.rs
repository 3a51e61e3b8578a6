//! A worker under emulation: its tasks stretched by the emulated external load of `--load`,
//! and its emulated death ([`exit_worker`](crate::exit_worker)) ending its thread without an
//! answer, as a crash of its process would end a rank.
//!
//! Two wrappers share one [`Emulation`]: [`Emulated`] around the program's worker, which times
//! each task and sleeps the load's share after it, and [`EmulatedEnd`] around the worker's end
//! of the link, which learns the iteration (and so the load) from its shared part, and drops the
//! answer of a worker that died. The worker's loop (`engine::worker`) sees a worker and a link.

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::fault;
use crate::app::{TaskError, Worker, WorkerSetup};
use crate::load::LoadPattern;
use crate::transport::{FromWorker, ToWorker, WorkerLink};

/// What one worker's emulation holds: shared by its worker (built again after a panic) and its
/// end of the link, on the worker's thread.
#[derive(Debug, Default)]
pub(crate) struct Emulation {
    /// The load of the current iteration; `None` when unloaded.
    stretch: RefCell<Option<Stretch>>,
}

impl Emulation {
    /// The emulation of one worker: the load put on it, and the emulated death on a backend
    /// that runs workers as threads (`local`; elsewhere `exit_worker` aborts the process, a real
    /// death).
    pub(crate) fn new(setup: &WorkerSetup) -> Rc<Emulation> {
        fault::serving(setup.backend);
        Rc::default()
    }
}

/// The program's worker under emulation; `None` once the worker died the emulated death: the
/// worker's loop builds it again as after any panic, and nothing of the program runs.
#[derive(Debug)]
pub(crate) struct Emulated<W> {
    worker: Option<W>,
    emulation: Rc<Emulation>,
}

impl<W> Emulated<W> {
    /// The worker `build` makes, unless this thread's worker died.
    pub(crate) fn new(build: impl FnOnce() -> W, emulation: &Rc<Emulation>) -> Emulated<W> {
        Emulated {
            worker: (!fault::exited()).then(build),
            emulation: Rc::clone(emulation),
        }
    }
}

impl<W: Worker> Worker for Emulated<W> {
    type Task = W::Task;
    type Result = W::Result;
    type Shared = W::Shared;

    fn initialize(&mut self, setup: &WorkerSetup) -> crate::Result<()> {
        self.worker.as_mut().map_or(Ok(()), |w| w.initialize(setup))
    }

    fn do_work(&mut self, shared: &W::Shared, task: &W::Task) -> W::Result {
        match self.try_work(shared, task) {
            Ok(result) => result,
            Err(error) => panic!("{error}"),
        }
    }

    /// Runs the task, then sleeps the load's share of its time. A task that kills its worker
    /// unwinds to the worker's loop like any panic; no later task runs.
    fn try_work(&mut self, shared: &W::Shared, task: &W::Task) -> Result<W::Result, TaskError> {
        let worker = match self.worker.as_mut() {
            Some(worker) if !fault::exited() => worker,
            _ => return Err("not run: the worker exited".into()),
        };
        if self.emulation.stretch.borrow().is_none() {
            return worker.try_work(shared, task);
        }
        let begun = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| worker.try_work(shared, task)));
        // A task that failed or panicked took its time under the load too; one that killed
        // its worker ends there.
        if !fault::exited() {
            if let Some(stretch) = self.emulation.stretch.borrow_mut().as_mut() {
                stretch.after_task(begun.elapsed());
            }
        }
        outcome.unwrap_or_else(|payload| resume_unwind(payload))
    }

    fn final_work(&mut self) -> crate::Result<()> {
        self.worker.as_mut().map_or(Ok(()), Worker::final_work)
    }
}

/// A worker's end of the link under emulation.
#[derive(Debug)]
pub(crate) struct EmulatedEnd<'a, L> {
    link: &'a mut L,
    emulation: Rc<Emulation>,
    load: &'a LoadPattern,
    /// The worker's number, which the load pattern names.
    index: usize,
}

impl<'a, L> EmulatedEnd<'a, L> {
    pub(crate) fn new(
        link: &'a mut L,
        emulation: &Rc<Emulation>,
        load: &'a LoadPattern,
        setup: &WorkerSetup,
    ) -> EmulatedEnd<'a, L> {
        EmulatedEnd {
            link,
            emulation: Rc::clone(emulation),
            load,
            index: setup.index,
        }
    }
}

impl<T, S, R, L: WorkerLink<T, S, R>> WorkerLink<T, S, R> for EmulatedEnd<'_, L> {
    /// The next message; a shared part sets the load of its iteration.
    fn recv(&mut self) -> Option<ToWorker<T, S>> {
        let message = self.link.recv()?;
        if let ToWorker::Shared { iteration, .. } = &message {
            let percent = self.load.percent(self.index, *iteration);
            *self.emulation.stretch.borrow_mut() = Stretch::new(percent);
        }
        Some(message)
    }

    /// Sends the answer, unless the worker died making it: then the worker's loop ends (as if
    /// the master were gone), and so does its thread, which the link reports as a lost worker.
    fn send(&mut self, message: FromWorker<T, R>) -> bool {
        !fault::exited() && self.link.send(message)
    }

    fn reuse_tasks(&mut self, tasks: Vec<T>) {
        self.link.reuse_tasks(tasks);
    }

    fn spare_results(&mut self) -> Vec<R> {
        self.link.spare_results()
    }
}

/// Stretches the tasks of a worker under `percent` load: after each task, sleeps
/// `t · p / (100 − p)`. Sleeps overshoot by tens of microseconds; the overshoot is carried over
/// and taken off the next sleep, so a chunk of short tasks is stretched by the right total.
#[derive(Debug)]
struct Stretch {
    /// `p / (100 − p)`: extra time per unit of work.
    extra_per_busy: f64,
    /// Slept beyond what was owed so far.
    ahead: Duration,
}

impl Stretch {
    /// `None` when `percent` is 0: nothing to stretch.
    fn new(percent: f64) -> Option<Stretch> {
        (percent > 0.0 && percent < 100.0).then(|| Stretch {
            extra_per_busy: percent / (100.0 - percent),
            ahead: Duration::ZERO,
        })
    }

    /// Sleeps the extra time owed for a task that kept the worker busy for `busy`.
    fn after_task(&mut self, busy: Duration) {
        let owed = busy.mul_f64(self.extra_per_busy);
        if owed <= self.ahead {
            self.ahead -= owed;
            return;
        }
        let sleep = owed - self.ahead;
        let started = Instant::now();
        std::thread::sleep(sleep);
        self.ahead = started.elapsed().saturating_sub(sleep);
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::collections::VecDeque;
    use std::sync::Arc;

    use super::*;

    /// A link that hands out `inbox` and keeps what is sent.
    #[derive(Default)]
    struct Recorded {
        inbox: VecDeque<ToWorker<u32, ()>>,
        sent: Vec<FromWorker<u32, u32>>,
    }

    impl WorkerLink<u32, (), u32> for Recorded {
        fn recv(&mut self) -> Option<ToWorker<u32, ()>> {
            self.inbox.pop_front()
        }

        fn send(&mut self, message: FromWorker<u32, u32>) -> bool {
            self.sent.push(message);
            true
        }
    }

    /// A task sleeps its value in ms; 0 kills the worker.
    struct Sleepy {
        ran: Rc<Cell<usize>>,
    }

    impl Worker for Sleepy {
        type Task = u32;
        type Result = u32;
        type Shared = ();

        fn do_work(&mut self, (): &(), task: &u32) -> u32 {
            self.ran.set(self.ran.get() + 1);
            if *task == 0 {
                crate::exit_worker();
            }
            std::thread::sleep(Duration::from_millis(u64::from(*task)));
            *task
        }
    }

    fn setup() -> WorkerSetup {
        WorkerSetup {
            index: 1,
            pool: 2,
            backend: "local",
        }
    }

    fn shared(iteration: usize) -> ToWorker<u32, ()> {
        ToWorker::Shared {
            iteration,
            part: Arc::new(()),
        }
    }

    #[test]
    fn stretch_sleeps_the_extra_time() {
        assert!(Stretch::new(0.0).is_none());
        let mut stretch = Stretch::new(50.0).expect("loaded");
        let started = Instant::now();
        for _ in 0..5 {
            stretch.after_task(Duration::from_millis(2));
        }
        // 5 tasks of 2 ms at 50 %: 10 ms extra; the bound is generous for a busy machine.
        let slept = started.elapsed();
        assert!(slept >= Duration::from_millis(10), "{slept:?}");
        assert!(slept < Duration::from_secs(2), "{slept:?}");
    }

    #[test]
    fn the_shared_part_sets_the_load_of_its_iteration() {
        let setup = setup();
        let load: LoadPattern = "1:1:75".parse().expect("a pattern");
        let emulation = Emulation::new(&setup);
        let mut recorded = Recorded::default();
        recorded.inbox.extend([shared(0), shared(1)]);
        let mut end = EmulatedEnd::new(&mut recorded, &emulation, &load, &setup);
        let ran = Rc::new(Cell::new(0));
        let mut worker = Emulated::new(|| Sleepy { ran: ran.clone() }, &emulation);
        let time = |worker: &mut Emulated<Sleepy>| {
            let started = Instant::now();
            assert_eq!(worker.try_work(&(), &4).ok(), Some(4));
            started.elapsed()
        };
        end.recv();
        let unloaded = time(&mut worker);
        assert!(unloaded < Duration::from_millis(12), "{unloaded:?}");
        end.recv();
        // 75 %: 4 ms take 16.
        let loaded = time(&mut worker);
        assert!(loaded >= Duration::from_millis(16), "{loaded:?}");
        assert_eq!(ran.get(), 2);
    }

    #[test]
    fn a_worker_that_exits_runs_nothing_more_and_its_answer_is_dropped() {
        let setup = setup();
        let emulation = Emulation::new(&setup);
        let mut recorded = Recorded::default();
        let load = LoadPattern::None;
        let mut end = EmulatedEnd::new(&mut recorded, &emulation, &load, &setup);
        let ran = Rc::new(Cell::new(0));
        let mut worker = Emulated::new(|| Sleepy { ran: ran.clone() }, &emulation);
        let died = catch_unwind(AssertUnwindSafe(|| worker.try_work(&(), &0)));
        assert!(died.is_err(), "the death unwinds to the worker's loop");
        assert!(fault::exited());
        assert!(worker.try_work(&(), &1).is_err());
        // Built again after the death, as after any panic: nothing of the program is.
        let again = Emulated::new(|| Sleepy { ran: ran.clone() }, &emulation);
        assert!(again.worker.is_none());
        assert_eq!(ran.get(), 1, "no task runs after the emulated death");
        let answer = FromWorker::Finished { error: None };
        assert!(!end.send(answer), "the worker's loop is told to end");
        assert!(recorded.sent.is_empty());
    }

    #[test]
    fn a_panic_reaches_the_workers_loop() {
        struct Panics;
        impl Worker for Panics {
            type Task = u32;
            type Result = u32;
            type Shared = ();
            fn do_work(&mut self, (): &(), _: &u32) -> u32 {
                panic!("the program's own panic")
            }
        }
        let emulation = Emulation::new(&setup());
        let mut worker = Emulated::new(|| Panics, &emulation);
        let panic = catch_unwind(AssertUnwindSafe(|| worker.try_work(&(), &1)));
        let payload = panic.expect_err("the panic goes on up");
        assert_eq!(
            payload.downcast_ref::<&str>(),
            Some(&"the program's own panic")
        );
        assert!(!fault::exited());
    }
}
