//! The master: broadcasts all bodies each step and cuts the index range into tasks.

use std::path::PathBuf;

use mw::prelude::*;

use crate::messages::{Bodies, Body, Moved, Range};
use crate::physics;

pub struct NBody {
    bodies: Vec<Body>,
    next: Vec<Body>,
    /// The seed of the initial state: a checkpoint holds the state it led to.
    seed: u64,
    steps: usize,
    bodies_per_task: usize,
    out: Option<PathBuf>,
    /// Where the final state goes for the caller (speedup check against `--mode seq`).
    pub result: std::sync::Arc<std::sync::Mutex<Vec<Body>>>,
}

impl NBody {
    pub fn new(
        bodies: Vec<Body>,
        seed: u64,
        steps: usize,
        bodies_per_task: usize,
        out: Option<PathBuf>,
    ) -> Self {
        NBody {
            next: bodies.clone(),
            bodies,
            seed,
            steps,
            bodies_per_task: bodies_per_task.max(1),
            out,
            result: Default::default(),
        }
    }
}

#[mw::master]
impl NBody {
    /// One iteration per step: lets the progress line show i/N and an ETA, and refuses to
    /// resume a checkpoint saved after more steps than this run has. The state comes from the
    /// bodies and the seed: a checkpoint of others is refused too.
    fn initialize(&mut self, setup: &mut Setup) -> mw::Result<()> {
        setup.expect_iterations(self.steps);
        setup.state_depends_on("--bodies", self.bodies.len());
        setup.state_depends_on("--seed", self.seed);
        Ok(())
    }

    fn partition(&mut self, it: &Iteration) -> Work<Bodies, Range> {
        if it.index >= self.steps {
            return Work::done();
        }
        let n = self.bodies.len();
        let tasks = (0..n)
            .step_by(self.bodies_per_task)
            .map(|first| Range {
                first: first as u32,
                count: self.bodies_per_task.min(n - first) as u32,
            })
            .collect();
        Work::new(
            Bodies {
                all: self.bodies.clone(),
            },
            tasks,
        )
    }

    fn recover(&mut self, task: TaskId, result: Moved) {
        let first = task.index() * self.bodies_per_task;
        self.next[first..first + result.bodies.len()].copy_from_slice(&result.bodies);
    }

    fn end_iteration(&mut self, _: &Iteration) -> Flow {
        std::mem::swap(&mut self.bodies, &mut self.next);
        Flow::Continue
    }

    /// `--checkpoint`: between two steps the bodies are the whole state (the step is the
    /// iteration, which the runtime saves).
    fn checkpoint(&self) -> Option<Vec<u8>> {
        Some(mw::codec::encode(&self.bodies))
    }

    /// `--resume`: the bodies as they were after the step saved.
    fn restore(&mut self, saved: &[u8]) -> mw::Result<()> {
        let bodies: Vec<Body> = mw::codec::decode(saved).map_err(mw::Error::app)?;
        if bodies.len() != self.bodies.len() {
            return Err(mw::Error::app(format!(
                "the checkpoint holds {} bodies and this run has {}: resume with the same \
                 --bodies",
                bodies.len(),
                self.bodies.len()
            )));
        }
        self.next = bodies.clone();
        self.bodies = bodies;
        Ok(())
    }

    fn final_work(&mut self) -> mw::Result<()> {
        if let Some(path) = &self.out {
            physics::write_csv(path, &self.bodies)?;
        }
        if let Ok(mut result) = self.result.lock() {
            *result = std::mem::take(&mut self.bodies);
        }
        Ok(())
    }
}
