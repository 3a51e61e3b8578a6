//! The steady path: how the master takes an answer while an iteration runs and nothing else
//! calls for it.
//!
//! With chunks of a task or two, the master's work per answer is what bounds the run, and
//! the general wait ([`MasterLink::recv_within`]) is built for everything a worker or the link
//! may say: a loss to report, a spawned worker, a long message, a timeout. The steady path asks
//! the link for an answer already there or coming within microseconds, decoded into a
//! vector-keeping [`Done`] the loop holds, and hands it to [`Engine::answered`], the one place
//! an answer is handled on either path: the same measurements, recovery and next chunk.
//!
//! Control goes back to the general path for the next message when the link says so: nothing
//! came within its few tests, the message is not a short answer (a failure, a long answer, a
//! loss the link noticed), or the link has news of its own. A trace (`--trace`) records how
//! each message was received, so a traced run takes the general path throughout, as a run on
//! a link without a steady path does (threads, the emulated network).

use crate::app::{Iteration, Master};
use crate::clock;
use crate::error::Result;
use crate::transport::{Done, MasterLink};

use super::faults::WATCH_EVERY;
use super::{Arrival, Engine, Round};

impl<M, L> Engine<'_, M, L>
where
    M: Master,
    L: MasterLink<M::Task, M::Shared, M::Result>,
{
    /// Takes the next answer by the steady path into `done` and handles it; `false` when the
    /// general path is to wait for the next message.
    pub(super) fn steady(
        &mut self,
        round: &mut Round<M>,
        it: &Iteration,
        done: &mut Done<M::Result>,
    ) -> Result<bool> {
        if !L::STEADY_PATH || self.trace.is_on() {
            return Ok(false);
        }
        let from = clock::now();
        let answer = self.link.answer_into(done)?;
        let at = clock::now();
        // The link listened meanwhile, as `listen` does.
        self.listened += at.saturating_duration_since(from).min(WATCH_EVERY);
        let Some((worker, bytes)) = answer else {
            return Ok(false);
        };
        self.heard(worker, at);
        if at >= round.next_watch {
            self.watch(round, at)?;
        }
        let arrival = Arrival {
            at,
            bytes: bytes as u64,
            unbilled_ns: None,
        };
        self.answered(round, it, worker, done, arrival)?;
        Ok(true)
    }
}
