//! The tuner inside an iteration: it looks at the tasks done so far, and a change it makes
//! (workers, factor, policy) takes effect in the running iteration.

use crate::app::Master;
use crate::clock;
use crate::error::Result;
use crate::measure::Facts;
use crate::policy::PolicyChoice;
use crate::transport::MasterLink;

use super::{Engine, Round};

impl<M, L> Engine<'_, M, L>
where
    M: Master,
    L: MasterLink<M::Task, M::Shared, M::Result>,
{
    /// A checkpoint inside the iteration: the tuner looks at the tasks answered so far and may
    /// change `nworkers` or `factor` at once: new workers get the shared part and chunks, workers
    /// taken out get no more, and the policy plans the tasks not yet cut anew.
    pub(super) fn look(&mut self, round: &mut Round<M>) -> Result<()> {
        let looking = clock::now();
        let span = self.progress(round, looking);
        let done = span.tasks;
        let remaining = round.remaining(done);
        round.next_look = Some(done + round.look_every).filter(|_| remaining > 0);
        let asked = self.tuner.wants_look(round.probe.worker_tasks()) && {
            // The bytes of the iteration's chunks still out: not yet part of what is done.
            let out = self
                .held
                .iter()
                .flatten()
                .filter(|f| f.iteration == round.index)
                .map(|f| f.trip.bytes)
                .sum();
            let so_far = round.probe.observe_so_far(
                Facts {
                    index: round.index,
                    workers: round.workers,
                    factor: round.factor,
                    policy: self.policy_name.clone(),
                    tasks: done as usize,
                    chunks: round.chunk_sizes.len(),
                    time_ms: span.ms,
                    mixed: true,
                },
                out,
            );
            let healthy = self.healthy.iter().filter(|&&h| h).count();
            self.tuner.checkpoint(
                &so_far,
                span,
                remaining,
                round.look_every,
                &self.tunables.current(),
                healthy,
                &self.stats,
                &self.tunables,
            )
        };
        round.tuning += clock::since(looking);
        if asked {
            self.apply_now(round, done as usize)?;
        }
        if !round.planned {
            self.plan(round);
        }
        self.wake_idle(round)
    }

    /// Workers left waiting (by the probe, or with nothing left to cut) get chunks now.
    pub(super) fn wake_idle(&mut self, round: &mut Round<M>) -> Result<()> {
        while let Some(worker) = round.idle.pop() {
            debug_assert!(
                self.held[worker].is_empty(),
                "worker {worker} was listed idle while it holds a chunk"
            );
            if !self.dispatch(round, worker, clock::now())? {
                round.idle.push(worker);
                break;
            }
            self.prefetch(round, worker, clock::now())?;
        }
        Ok(())
    }

    /// Applies the tuner's changes inside the iteration, `done` of its tasks answered.
    pub(super) fn apply_now(&mut self, round: &mut Round<M>, done: usize) -> Result<()> {
        let applied = self.tunables.apply_tuned_now(round.index, done);
        if applied.is_empty() {
            return Ok(());
        }
        for a in &applied {
            self.announce(&a.decision);
        }
        self.trace.decided_midway(applied.len());
        self.tuner.applied(&applied);
        self.metrics
            .decisions
            .extend(applied.into_iter().map(|a| a.decision));
        round.mixed = true;
        let current = self.tunables.current();
        round.factor = current.factor;
        let healthy = self.healthy.iter().filter(|&&h| h).count();
        let target = current.nworkers.min(healthy).max(1);
        // Workers that failed are out already: count those taking part, not `round.workers`.
        let active = round.active.iter().filter(|&&a| a).count();
        if target > active {
            let joining: Vec<usize> = (0..self.healthy.len())
                .filter(|&w| round.parked(w, &self.healthy, &self.held))
                .take(target - active)
                .collect();
            for &worker in &joining {
                self.activate(round, worker)?;
                round.wait(worker);
            }
        } else {
            // Idle workers leave first, then the last busy ones, which finish what they hold.
            for _ in target..active {
                let Some(worker) = round
                    .idle
                    .pop()
                    .or_else(|| (0..round.active.len()).rev().find(|&w| round.active[w]))
                else {
                    break;
                };
                round.active[worker] = false;
            }
        }
        round.workers = round.active.iter().filter(|&&a| a).count().max(1);
        self.follow_policy(&current.policy)?;
        self.plan(round);
        Ok(())
    }

    /// Builds the policy now in force, if it changed and the program did not bring its own.
    pub(super) fn follow_policy(&mut self, choice: &PolicyChoice) -> Result<()> {
        if self.own_policy || *choice == self.policy_name {
            return Ok(());
        }
        self.policy = match choice {
            PolicyChoice::BuiltIn(name) => name.build(),
            PolicyChoice::Registered(name) => self.registry.build(name)?,
        };
        self.policy_name = choice.clone();
        Ok(())
    }

    /// Says on stderr what changed and why, unless the run is `--quiet`.
    pub(super) fn announce(&self, d: &crate::tuning::tunables::Decision) {
        if !self.config.quiet {
            eprint!("{}", crate::summary::announcement(d, self.config.verbose));
        }
    }
}
