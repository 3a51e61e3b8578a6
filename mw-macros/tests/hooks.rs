//! `#[mw::master]` and `#[mw::worker]` write working `Master`/`Worker` impls: every hook is
//! called, optional ones default, helper methods stay, generic and by-value forms work.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mw::prelude::*;

fn local(workers: usize) -> RunArgs {
    RunArgs {
        workers: Some(workers),
        // A pool of exactly `workers` (with nworkers tuned it would otherwise have room to grow).
        max_workers: Some(workers),
        backend: Some(BackendChoice::Local),
        ..RunArgs::default()
    }
}

#[derive(Message, Debug, Clone, PartialEq)]
struct Segment {
    first: u32,
    points: Vec<[f64; 2]>,
}

#[derive(Message, Debug, Clone, PartialEq)]
struct Scale(f64);

/// Every master hook, plus helpers.
#[derive(Default)]
struct Fire {
    initialized: bool,
    pool: usize,
    iterations: usize,
    recovered: Vec<(usize, f64)>,
    finished: bool,
}

#[mw::master]
impl Fire {
    fn initialize(&mut self, setup: &mut Setup) -> mw::Result<()> {
        self.initialized = true;
        self.pool = setup.pool();
        Ok(())
    }

    fn partition(&mut self, iteration: &Iteration) -> Work<Scale, Segment> {
        let tasks = (0..8)
            .map(|first| Segment {
                first,
                points: vec![[f64::from(first), 1.0]; 3],
            })
            .collect();
        Work::new(Scale(iteration.index as f64 + 1.0), tasks)
    }

    fn recover(&mut self, task: TaskId, length: f64) {
        self.recovered.push((task.index(), length));
    }

    fn end_iteration(&mut self, _iteration: &Iteration) -> Flow {
        self.iterations += 1;
        if self.iterations == 3 {
            Flow::Stop
        } else {
            Flow::Continue
        }
    }

    fn final_work(&mut self) -> mw::Result<()> {
        self.finished = true;
        Ok(())
    }

    /// A helper: stays an ordinary method.
    fn total(&self) -> f64 {
        self.recovered.iter().map(|(_, l)| l).sum()
    }
}

struct Walker {
    initialized: bool,
    finals: Arc<AtomicUsize>,
}

#[mw::worker]
impl Walker {
    fn initialize(&mut self, _setup: &WorkerSetup) -> mw::Result<()> {
        self.initialized = true;
        Ok(())
    }

    fn do_work(&mut self, scale: &Scale, segment: &Segment) -> f64 {
        assert!(self.initialized);
        scale.0 * segment.points.iter().map(|p| p[0] + p[1]).sum::<f64>()
    }

    fn final_work(&mut self) -> mw::Result<()> {
        self.finals.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// The master's state is read back through shared state once the run has ended.
#[test]
fn masters_and_workers_from_the_macros_run() {
    let finals = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(std::sync::Mutex::new(None));
    let seen2 = seen.clone();
    /// initialized, pool, iterations, recovered, total, finished.
    type Outcome = (bool, usize, usize, usize, f64, bool);
    struct Probe {
        fire: Fire,
        out: Arc<std::sync::Mutex<Option<Outcome>>>,
    }
    #[mw::master]
    impl Probe {
        fn initialize(&mut self, setup: &mut Setup) -> mw::Result<()> {
            Master::initialize(&mut self.fire, setup)
        }
        fn partition(&mut self, iteration: &Iteration) -> Work<Scale, Segment> {
            Master::partition(&mut self.fire, iteration)
        }
        fn recover(&mut self, task: TaskId, length: f64) {
            Master::recover(&mut self.fire, task, length);
        }
        fn end_iteration(&mut self, iteration: &Iteration) -> Flow {
            Master::end_iteration(&mut self.fire, iteration)
        }
        fn final_work(&mut self) -> mw::Result<()> {
            Master::final_work(&mut self.fire)?;
            let f = &self.fire;
            *self.out.lock().expect("not poisoned") = Some((
                f.initialized,
                f.pool,
                f.iterations,
                f.recovered.len(),
                f.total(),
                f.finished,
            ));
            Ok(())
        }
    }
    mw::run_with(
        &local(2),
        move || Probe {
            fire: Fire::default(),
            out: seen2,
        },
        {
            let finals = finals.clone();
            move || Walker {
                initialized: false,
                finals: finals.clone(),
            }
        },
    )
    .expect("runs");
    let (initialized, pool, iterations, recovered, total, finished) =
        seen.lock().expect("not poisoned").expect("final_work ran");
    assert!(initialized && finished);
    assert_eq!(pool, 2);
    assert_eq!(iterations, 3);
    assert_eq!(recovered, 3 * 8);
    // Segment `first` has 3 points (first, 1): sum = 3·(first + 1); scale = iteration + 1.
    let per_iteration: f64 = (0..8).map(|f| 3.0 * (f64::from(f) + 1.0)).sum();
    assert_eq!(total, per_iteration * (1.0 + 2.0 + 3.0));
    assert_eq!(finals.load(Ordering::SeqCst), 2);
}

/// Only the required hooks; the task taken by value (it must be `Clone`); a generic master.
struct Summer<T> {
    items: Vec<T>,
    total: u64,
    done: Arc<AtomicUsize>,
}

#[mw::master]
impl<T> Summer<T>
where
    T: Message + Clone + Send + 'static,
{
    fn partition(&mut self, iteration: &Iteration) -> Work<(), T> {
        if iteration.index == 0 {
            Work::tasks(self.items.clone())
        } else {
            let total = usize::try_from(self.total).expect("small");
            self.done.store(total, Ordering::SeqCst);
            Work::done()
        }
    }

    fn recover(&mut self, _task: TaskId, value: u64) {
        self.total += value;
    }
}

#[derive(Default)]
struct Lengths;

#[mw::worker]
impl Lengths {
    fn do_work(&mut self, _shared: &(), task: String) -> u64 {
        // By value: this is the worker's own copy.
        let mut task = task;
        task.push('!');
        task.len() as u64 - 1
    }
}

#[test]
fn required_hooks_only_by_value_and_generic() {
    let done = Arc::new(AtomicUsize::new(0));
    let items: Vec<String> = ["a", "bb", "ccc", "dddd"].map(String::from).to_vec();
    let done2 = done.clone();
    mw::run_with(
        &local(2),
        move || Summer {
            items,
            total: 0,
            done: done2,
        },
        Lengths::default,
    )
    .expect("runs");
    assert_eq!(done.load(Ordering::SeqCst), 10);
}

/// A worker with `()` as its result (no return type).
struct Counter {
    calls: Arc<AtomicUsize>,
}

#[mw::worker]
impl Counter {
    fn do_work(&mut self, _shared: &(), _task: &u32) {
        self.calls.fetch_add(1, Ordering::SeqCst);
    }
}

struct Ticks;

#[mw::master]
impl Ticks {
    fn partition(&mut self, iteration: &Iteration) -> Work<(), u32> {
        Work::tasks(if iteration.index == 0 {
            (0..5).collect()
        } else {
            Vec::new()
        })
    }

    fn recover(&mut self, _task: TaskId, _result: ()) {}
}

#[test]
fn unit_results() {
    let calls = Arc::new(AtomicUsize::new(0));
    mw::run_with(&local(2), || Ticks, {
        let calls = calls.clone();
        move || Counter {
            calls: calls.clone(),
        }
    })
    .expect("runs");
    assert_eq!(calls.load(Ordering::SeqCst), 5);
}

#[test]
fn inherent_methods_stay_callable() {
    let mut fire = Fire::default();
    let iteration = Iteration {
        index: 0,
        workers: 1,
        factor: 0.5,
        policy: mw::PolicyName::Static.into(),
    };
    // The inherent method and the trait method are the same hook.
    let work = fire.partition(&iteration);
    assert_eq!(work.tasks.len(), 8);
    fire.recover(TaskId(0), 2.5);
    Master::recover(&mut fire, TaskId(1), 0.5);
    assert_eq!(fire.total(), 3.0);
}

/// A sweep of 1..=1000 streamed by `more_tasks` from an iterator: `partition` only opens the
/// one iteration.
struct Sweep {
    points: std::ops::RangeInclusive<u32>,
    asked: usize,
    sum: u64,
}

#[mw::master]
impl Sweep {
    fn partition(&mut self, _iteration: &Iteration) -> Work<(), u32> {
        Work::tasks(Vec::new())
    }

    fn more_tasks(&mut self, _iteration: &Iteration, room: usize) -> Vec<u32> {
        self.asked += 1;
        self.points.by_ref().take(room).collect()
    }

    fn recover(&mut self, _task: TaskId, square: u64) {
        self.sum += square;
    }

    fn final_work(&mut self) -> mw::Result<()> {
        let expected = 1000 * 1001 * 2001 / 6;
        if self.sum != expected || self.asked < 2 {
            return Err(format!(
                "sum {} in {} calls, expected {expected}",
                self.sum, self.asked
            )
            .into());
        }
        Ok(())
    }
}

struct Squarer;

#[mw::worker]
impl Squarer {
    fn do_work(&mut self, _shared: &(), n: &u32) -> u64 {
        u64::from(*n) * u64::from(*n)
    }
}

#[test]
fn more_tasks_streams_through_the_macro() {
    let sweep = || Sweep {
        points: 1..=1000,
        asked: 0,
        sum: 0,
    };
    mw::run_with(&local(3), sweep, || Squarer).expect("every square summed");
}

/// Counts what came back: results, and tasks reported failed for good.
#[derive(Default)]
struct Tally {
    results: Vec<u32>,
    failed: Vec<(usize, usize)>,
}

#[mw::master]
impl Tally {
    fn partition(&mut self, it: &Iteration) -> Work<(), u32> {
        Work::tasks(if it.index == 0 {
            (0..20).collect()
        } else {
            Vec::new()
        })
    }

    fn recover(&mut self, task: TaskId, n: u32) {
        assert_eq!(task.index() as u32, n);
        self.results.push(n);
    }

    fn task_failed(&mut self, task: TaskId, errors: &[String]) {
        self.failed.push((task.index(), errors.len()));
    }

    fn final_work(&mut self) -> mw::Result<()> {
        self.results.sort_unstable();
        let expected: Vec<u32> = (0..20).filter(|&n| n != 7).collect();
        if self.results != expected || self.failed != [(7, 2)] {
            return Err(mw::Error::app(format!(
                "results {:?}, failed {:?}",
                self.results, self.failed
            )));
        }
        Ok(())
    }
}

/// Fails task 7 every time, with an error rather than a panic.
#[derive(Default)]
struct Picky;

#[mw::worker]
impl Picky {
    fn do_work(&mut self, _: &(), n: &u32) -> Result<u32, String> {
        if *n == 7 {
            return Err(format!("task {n} is not wanted"));
        }
        Ok(*n)
    }
}

#[test]
fn a_do_work_that_returns_errors_has_its_tasks_retried_then_skipped() {
    let args = RunArgs {
        task_retries: Some(1),
        on_task_failure: Some(mw::OnTaskFailure::Skip),
        ..local(2)
    };
    mw::run_with(&args, Tally::default, Picky::default).expect("all but task 7 recovered");
    // Without `skip`, the same run fails naming the task and both attempts.
    let args = RunArgs {
        task_retries: Some(1),
        ..local(2)
    };
    let err = mw::run_with(&args, Tally::default, Picky::default).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("task 7 of iteration 0 failed 2 times"),
        "{text}"
    );
    assert_eq!(text.matches("task 7 is not wanted").count(), 2, "{text}");
}
