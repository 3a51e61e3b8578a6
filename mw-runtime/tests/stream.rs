//! Tasks streamed by `more_tasks`: a sweep too large to hold, and tasks made from results (a
//! tree searched as branch and bound would). Every task is recovered exactly once under the
//! number it was produced with, whatever the policy, protocol and tuning, and the master never
//! holds more than the stream's window plus the chunks out at the workers.
#![allow(clippy::unwrap_used)]

use mw_runtime::prelude::*;
use mw_runtime::{PolicyName, RunConfig, RunMetrics, TuneMode, TuningConfig};

fn config(pool: usize, policy: PolicyName, protocol: Protocol, tune: TuneMode) -> RunConfig {
    RunConfig {
        workers: Some(pool.min(2)),
        max_workers: Some(pool),
        policy: policy.into(),
        protocol,
        backend: BackendChoice::Local,
        quiet: true,
        tuning: TuningConfig {
            mode: tune,
            persistence: 1,
            max_workers: Some(pool),
            ..TuningConfig::default()
        },
        ..RunConfig::default()
    }
}

/// A sweep of `points` tasks, in two iterations, pulled from an iterator `ahead` at a time.
struct Sweep {
    points: u32,
    ahead: usize,
    /// Workers started: as many may take part.
    pool: usize,
    source: std::ops::Range<u32>,
    produced: u32,
    seen: Vec<u8>,
    /// The most tasks produced and not yet recovered at any time.
    held: usize,
    too_many: Option<(usize, usize)>,
}

impl Sweep {
    fn new(points: u32, ahead: usize, pool: usize) -> Self {
        Sweep {
            points,
            ahead,
            pool,
            source: 0..0,
            produced: 0,
            seen: Vec::new(),
            held: 0,
            too_many: None,
        }
    }
}

impl Master for Sweep {
    type Task = u32;
    type Result = u64;
    type Shared = ();

    fn initialize(&mut self, setup: &mut Setup) -> mw_runtime::Result<()> {
        setup.stream_ahead(self.ahead);
        Ok(())
    }

    fn partition(&mut self, it: &Iteration) -> Work<(), u32> {
        if it.index < 2 {
            self.source = 0..self.points;
            self.produced = 0;
            self.seen = vec![0; self.points as usize];
        }
        Work::tasks(Vec::new())
    }

    fn more_tasks(&mut self, _it: &Iteration, room: usize) -> Vec<u32> {
        if room > self.ahead {
            self.too_many = Some((room, self.ahead));
        }
        let more: Vec<u32> = self.source.by_ref().take(room).collect();
        self.produced += more.len() as u32;
        let recovered = self.seen.iter().filter(|&&n| n > 0).count();
        self.held = self.held.max(self.produced as usize - recovered);
        more
    }

    fn recover(&mut self, task: TaskId, square: u64) {
        let n = task.index() as u64;
        assert_eq!(
            square,
            n * n,
            "result of task {n} delivered under the wrong TaskId"
        );
        self.seen[task.index()] += 1;
    }

    fn final_work(&mut self) -> mw_runtime::Result<()> {
        if let Some((room, ahead)) = self.too_many {
            return Err(format!("asked for {room} tasks with a window of {ahead}").into());
        }
        // The window, and chunks cut from it out at the workers: a chunk and one sent ahead
        // each, each chunk at most the window over the workers taking part, rounded up
        // (with 40 over 6 workers: 40 + 2·6·7 = 124).
        let out = (1..=self.pool)
            .map(|n| 2 * n * self.ahead.div_ceil(n))
            .max()
            .unwrap_or(0);
        if self.held > self.ahead + out {
            let (held, ahead) = (self.held, self.ahead);
            return Err(format!("held {held} tasks unanswered with a window of {ahead}").into());
        }
        match self.seen.iter().position(|&n| n != 1) {
            Some(task) => Err(format!("task {task} recovered {} times", self.seen[task]).into()),
            None => Ok(()),
        }
    }
}

#[derive(Default)]
struct Squarer;

impl Worker for Squarer {
    type Task = u32;
    type Result = u64;
    type Shared = ();

    fn do_work(&mut self, _: &(), n: &u32) -> u64 {
        // A little work, so that chunks are out while the stream is asked for more.
        std::thread::sleep(std::time::Duration::from_micros(20));
        u64::from(*n) * u64::from(*n)
    }
}

fn sweep(points: u32, ahead: usize, config: &RunConfig) -> RunMetrics {
    let pool = config.max_workers.unwrap();
    mw_runtime::run_config(
        config,
        move || Sweep::new(points, ahead, pool),
        Squarer::default,
    )
    .unwrap()
    .into_metrics()
    .unwrap()
}

#[test]
fn a_sweep_is_recovered_once_per_task_whatever_the_policy_and_protocol() {
    for policy in PolicyName::ALL {
        for protocol in [Protocol::Sync, Protocol::Async] {
            for tune in [TuneMode::Off, TuneMode::On] {
                let metrics = sweep(1_500, 40, &config(6, policy, protocol, tune));
                assert_eq!(metrics.iterations.len(), 2, "{policy} {protocol} {tune:?}");
                for it in &metrics.iterations {
                    assert_eq!(it.tasks, 1_500, "{policy} {protocol} {tune:?}");
                    assert_eq!(it.chunk_sizes.iter().sum::<usize>(), 1_500);
                    // Of a stream, the tasks known at the start say nothing of the end.
                    assert_eq!(it.predicted_ms, None);
                }
            }
        }
    }
}

/// A binary tree searched from its root: every answer makes its node's children, until
/// `depth`. `partition` gives the root, `more_tasks` the children made so far.
struct Tree {
    depth: u32,
    frontier: Vec<(u32, u64)>,
    /// Node ids in the order they were produced: task `i` is `order[i]`.
    order: Vec<u64>,
    recovered: Vec<u8>,
}

impl Master for Tree {
    /// (depth, id): the children of `id` are `2·id + 1` and `2·id + 2`.
    type Task = (u32, u64);
    type Result = (u64, bool);
    type Shared = ();

    fn partition(&mut self, it: &Iteration) -> Work<(), (u32, u64)> {
        if it.index > 0 {
            return Work::tasks(Vec::new());
        }
        self.order.push(0);
        Work::tasks(vec![(0, 0)])
    }

    fn more_tasks(&mut self, _it: &Iteration, room: usize) -> Vec<(u32, u64)> {
        let take = room.min(self.frontier.len());
        let more: Vec<_> = self.frontier.drain(..take).collect();
        self.order.extend(more.iter().map(|&(_, id)| id));
        more
    }

    fn recover(&mut self, task: TaskId, (id, branch): (u64, bool)) {
        assert_eq!(
            self.order[task.index()],
            id,
            "node {id} under the wrong TaskId"
        );
        let at = self.recovered.len().max(id as usize + 1);
        self.recovered.resize(at, 0);
        self.recovered[id as usize] += 1;
        if branch {
            let depth = (id + 1).ilog2() + 1;
            self.frontier.push((depth, 2 * id + 1));
            self.frontier.push((depth, 2 * id + 2));
        }
    }

    fn final_work(&mut self) -> mw_runtime::Result<()> {
        let nodes = (1usize << (self.depth + 1)) - 1;
        if self.recovered.len() != nodes || self.recovered.iter().any(|&n| n != 1) {
            return Err(format!(
                "{} of {nodes} nodes recovered, counts {:?}",
                self.recovered.len(),
                self.recovered.iter().filter(|&&n| n != 1).count()
            )
            .into());
        }
        Ok(())
    }
}

struct Brancher {
    depth: u32,
}

impl Worker for Brancher {
    type Task = (u32, u64);
    type Result = (u64, bool);
    type Shared = ();

    fn do_work(&mut self, _: &(), &(depth, id): &(u32, u64)) -> (u64, bool) {
        std::thread::sleep(std::time::Duration::from_micros(50));
        (id, depth < self.depth)
    }
}

#[test]
fn tasks_made_from_results_are_each_recovered_once() {
    let depth = 9;
    for policy in PolicyName::ALL {
        for protocol in [Protocol::Sync, Protocol::Async] {
            for tune in [TuneMode::Off, TuneMode::On] {
                let metrics = mw_runtime::run_config(
                    &config(5, policy, protocol, tune),
                    || Tree {
                        depth,
                        frontier: Vec::new(),
                        order: Vec::new(),
                        recovered: Vec::new(),
                    },
                    move || Brancher { depth },
                )
                .unwrap_or_else(|e| panic!("{policy} {protocol} {tune:?}: {e}"))
                .into_metrics()
                .unwrap();
                assert_eq!(metrics.iterations.len(), 1);
                assert_eq!(metrics.iterations[0].tasks, (1 << (depth + 1)) - 1);
            }
        }
    }
}
