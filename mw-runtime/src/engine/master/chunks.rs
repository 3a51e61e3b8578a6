//! The per-chunk path: the shared part sent to a worker taking part, chunks cut by the policy
//! and sent (one ahead with `--prefetch`), and each answer recovered exactly once.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use crate::app::{Master, TaskId};
use crate::clock::{self, Instant};
use crate::error::{Error, Result};
use crate::measure::Answer;
use crate::policy::{self, Ask, ChunkDone};
use crate::transport::{Chunk, Done, MasterLink, SentChunk, ToWorker};

use super::faults::Open;
use super::{Arrival, Engine, InFlight, RUNTIME, Round, entering};

impl<M, L> Engine<'_, M, L>
where
    M: Master,
    L: MasterLink<M::Task, M::Shared, M::Result>,
{
    /// Sends the iteration's shared part to `worker`, making it take part.
    pub(super) fn activate(&mut self, round: &mut Round<M>, worker: usize) -> Result<()> {
        round.active[worker] = true;
        let part = Arc::clone(&round.shared);
        let iteration = round.index;
        let entry = clock::now();
        let sending = self.trace.mark();
        let sent = self.link.send(worker, ToWorker::Shared { iteration, part });
        self.trace.shared_sent(sending, worker);
        let entry = self.link.handed().unwrap_or(entry);
        round.probe.shared_sent(worker, entry);
        round.joining += self.link.joining();
        sent
    }

    /// Keeps `worker`, which just answered, supplied: a chunk now if it holds none (with nothing
    /// left, it waits idle), then as many ahead as `prefetch` allows.
    pub(super) fn supply(
        &mut self,
        round: &mut Round<M>,
        worker: usize,
        now: Instant,
    ) -> Result<()> {
        // Counted only for a parked worker: a count over the pool for every answer would cost
        // as much as the rest of the bookkeeping on a large pool.
        if round.parked(worker, &self.healthy, &self.held)
            && round.active.iter().filter(|&&a| a).count() < round.workers
        {
            // Still busy with a chunk of an earlier iteration (whose copy was answered first)
            // when this one began: it joins now that it has answered.
            self.activate(round, worker)?;
        }
        if !round.active[worker] || !self.healthy[worker] {
            // Taken out of the iteration midway: it parks once its chunks are answered.
            return Ok(());
        }
        if self.held[worker].is_empty() && !self.dispatch(round, worker, now)? {
            round.wait(worker);
            return Ok(());
        }
        self.prefetch(round, worker, now)
    }

    /// Sends `worker`, already holding a chunk, more while plenty of work is left
    /// ([`policy::sends_ahead`]) and no task waits to be run again: those go to a free worker,
    /// never to the back of a queue.
    pub(super) fn prefetch(
        &mut self,
        round: &mut Round<M>,
        worker: usize,
        now: Instant,
    ) -> Result<()> {
        let depth = self.config.prefetch_depth();
        loop {
            let held = &self.held[worker];
            let last = held.back().map_or(0, |f| f.len);
            if !round.retry.is_empty()
                || !policy::sends_ahead(held.len(), last, depth, round.workers, round.uncut.len())
                || !self.dispatch(round, worker, now)?
            {
                return Ok(());
            }
        }
    }

    /// Sends `worker` a chunk: tasks to run again first (those that failed on it go to another
    /// worker when there is one), else a new one cut by the policy. `false` when nothing is left
    /// to send. `now` is the caller's latest clock reading: with empty tasks, a read costs as
    /// much as the rest of a dispatch.
    pub(super) fn dispatch(
        &mut self,
        round: &mut Round<M>,
        worker: usize,
        now: Instant,
    ) -> Result<bool> {
        let (first, tasks, fresh) = if let Some(retry) = self.retry_for(round, worker) {
            (retry.first, retry.tasks, false)
        } else if !round.uncut.is_empty() {
            let uncut = round.uncut.len();
            let size = if round.probe_left > 0 {
                round.probe_left -= 1;
                1
            } else if !round.planned {
                // The probe's tasks are out: the rest waits for the tuner's first look.
                return Ok(false);
            } else {
                let ask = Ask {
                    worker,
                    remaining: uncut,
                    stats: &self.stats,
                };
                let size = self.policy.next_chunk(&ask);
                policy::checked(&*self.policy, size, uncut)?
            };
            let first = round.next_task;
            round.next_task += size;
            round.chunk_sizes.push(size);
            let mut tasks = self.link.spare_tasks();
            if size == 1 {
                // The finest grain: a drain's bookkeeping costs more than moving the one task.
                tasks.extend(round.uncut.pop_front());
            } else {
                tasks.extend(round.uncut.drain(..size));
            }
            (first, tasks, true)
        } else {
            return Ok(false);
        };
        let len = tasks.len();
        // A copy of a chunk still out elsewhere, or a chunk the engine keeps while it is out.
        // Tasks cut now were never sent, so only tasks run again can be out already.
        let copy = if fresh {
            None
        } else {
            round.open.get_mut(&first).filter(|open| open.len == len)
        };
        if let Some(open) = copy {
            open.holders += 1;
            let sent = self.send_chunk(round, worker, first, tasks, now)?;
            self.link.reclaim(sent);
        } else {
            let sent = self.send_chunk(round, worker, first, tasks, now)?;
            let open = Open {
                len,
                sent,
                holders: 1,
                copied: false,
            };
            round.open.insert(first, open);
        }
        Ok(true)
    }

    /// Sends tasks `first..` to `worker` as a new chunk, and notes that it holds it; the chunk
    /// as sent, encoded.
    pub(super) fn send_chunk(
        &mut self,
        round: &mut Round<M>,
        worker: usize,
        first: usize,
        tasks: Vec<M::Task>,
        now: Instant,
    ) -> Result<SentChunk> {
        let chunk = Chunk {
            id: self.next_chunk_id,
            first: first as u64,
            tasks,
        };
        self.next_chunk_id += 1;
        let held = &self.held[worker];
        round.prefetched += usize::from(!held.is_empty());
        if held.is_empty() {
            // Its silence counts from when it has work.
            self.standing[worker].hear(now, self.listened);
        }
        // Chunks are held in the order sent, so one of this iteration is at the back if any.
        let queued = held.back().is_some_and(|f| f.iteration == round.index);
        let (id, len, sending) = (chunk.id, chunk.tasks.len(), self.trace.mark());
        let sent = self.link.send_chunk(worker, chunk)?;
        self.trace.chunk_sent(sending, worker, id, len);
        // Its trip counts from `now`, or from when a link that keeps its own time took it: the
        // link charges from there, and cutting the chunk before is the master's time.
        let entry = self.link.handed().unwrap_or(now);
        let trip = round
            .probe
            .chunk_sent(worker, sent.len() as u64, entry, queued);
        self.held[worker].push_back(InFlight {
            chunk: id,
            iteration: round.index,
            first,
            len,
            sent: now,
            trip,
        });
        Ok(sent)
    }

    /// Hands a chunk's results, come as `arrival` says, to `recover`, one call per task;
    /// returns how many tasks it settled (recovered, or failed for good and skipped), and when
    /// it was done. The master's time for the answer counts from its arrival: its bookkeeping
    /// and the `recover` calls. An answer to a chunk whose copy was answered first, or of an
    /// earlier iteration, settles nothing. The results are taken out of `done`, which keeps its
    /// vectors for the next answer.
    pub(super) fn recover(
        &mut self,
        round: &mut Round<M>,
        worker: usize,
        done: &mut Done<M::Result>,
        arrival: Arrival,
    ) -> Result<(usize, Instant)> {
        let at = arrival.at;
        let flight = match self.held.get_mut(worker).and_then(VecDeque::pop_front) {
            Some(flight)
                if flight.chunk == done.chunk
                    && flight.len == done.results.len() + done.failed.len() =>
            {
                flight
            }
            other => {
                // What was expected, for telling a worker's mistake from a message mixed up on
                // the way (an answer of another worker's, one of an earlier chunk).
                let expected = other.map_or_else(
                    || "it held no chunk".to_owned(),
                    |f| format!("it was given chunk {} of {} task(s)", f.chunk, f.len),
                );
                return Err(Error::backend(format!(
                    "worker {worker} answered chunk {} with {} result(s) and {} failure(s), which \
                     does not match the chunk it was given: {expected}",
                    done.chunk,
                    done.results.len(),
                    done.failed.len()
                )));
            }
        };
        let busy = Duration::from_nanos(done.busy_ns);
        self.stats.record(worker, &done.task_ms);
        self.policy.chunk_done(&ChunkDone {
            worker,
            tasks: flight.len,
            busy,
            round_trip: at.saturating_duration_since(flight.sent),
        });
        if flight.iteration != round.index {
            self.failed_late(flight.iteration, worker, flight.first, &done.failed);
            return Ok((0, at));
        }
        let recovering_from =
            if self.send_first(round, worker, &flight, done.failed.is_empty(), at)? {
                clock::now()
            } else {
                at
            };
        // Recorded once the next chunk is out: what is sent does not depend on it (whether a
        // chunk's trip waits behind another is known from the chunks held), so the worker does
        // not wait for it.
        let answer = Answer {
            bytes: arrival.bytes,
            at,
            busy,
            cpu: done.cpu_ns.map(Duration::from_nanos),
            wait: done.wait_ns.map(Duration::from_nanos),
            late: done.late_ns.map(Duration::from_nanos),
            tasks: &done.task_ms,
            unbilled_ns: arrival.unbilled_ns,
        };
        round.probe.answered(worker, answer, flight.trip);
        let open = match round.open.remove(&flight.first) {
            Some(open) if open.len == flight.len => open,
            other => {
                // A copy was answered first: these results are the same again, but the
                // failures (a panic slowed by its backtrace, say) happened all the same.
                if let Some(open) = other {
                    round.open.insert(flight.first, open);
                }
                self.failed_late(round.index, worker, flight.first, &done.failed);
                return Ok((0, at));
            }
        };
        self.standing[worker].answered(done.failed.is_empty());
        let recovering = self.trace.mark();
        let mut failed = done
            .failed
            .iter()
            .map(|(offset, _)| *offset as usize)
            .peekable();
        let mut offset = 0;
        entering("recover");
        for result in done.results.drain(..) {
            while failed.next_if_eq(&offset).is_some() {
                offset += 1;
            }
            let place = flight.first + offset;
            self.master.recover(TaskId(round.id(place)), result);
            if let Some(settled) = round.settled.get_mut(place) {
                *settled = true;
            }
            offset += 1;
        }
        entering(RUNTIME);
        let mut settled = flight.len - done.failed.len();
        if !done.failed.is_empty() {
            settled += self.task_failures(round, worker, flight.first, &open, &done.failed)?;
        }
        self.link.reclaim(open.sent);
        let now = clock::now();
        round.probe.recover += now.saturating_duration_since(recovering_from);
        self.trace
            .recovered(recovering, worker, flight.chunk, flight.len);
        Ok((settled, now))
    }

    /// Sends `worker`, which just answered `flight` and holds no other chunk, its next chunk
    /// before the answer is recovered, so that the master's recovery overlaps the worker's
    /// next chunk instead of leaving it idle (a hand-written loop sends before it looks at the
    /// answer). Only where recovering could not change what is sent: every task succeeded (a
    /// failed one runs again first), nothing waits to run again, no look of the tuner is due
    /// and the iteration streams no tasks. `at` is when the answer came. Whether it sent one.
    pub(super) fn send_first(
        &mut self,
        round: &mut Round<M>,
        worker: usize,
        flight: &InFlight,
        clean: bool,
        at: Instant,
    ) -> Result<bool> {
        let answered = round.done + flight.len as u64;
        let ready = clean
            && self.held[worker].is_empty()
            && round.retry.is_empty()
            && !round.streamed
            && round.active[worker]
            && self.healthy[worker]
            && round.next_look.is_none_or(|look| answered < look);
        Ok(ready && self.dispatch(round, worker, at)?)
    }
}
