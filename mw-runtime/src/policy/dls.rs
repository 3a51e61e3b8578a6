//! Self-scheduling policies of the dynamic loop-scheduling family that need no measurements:
//! `ss`, `gss`, `tss`, `fac2` and `mfsc`. Formulas and papers in `README.md` beside this file.

use super::batch::Batches;
use super::{Ask, Plan, Policy};

/// Self-scheduling: one task per chunk.
#[derive(Debug, Default, Clone)]
pub struct Ss;

impl Policy for Ss {
    fn name(&self) -> &str {
        "ss"
    }

    fn begin(&mut self, _plan: &Plan<'_>) {}

    fn next_chunk(&mut self, _ask: &Ask<'_>) -> usize {
        1
    }
}

/// Guided self-scheduling (Polychronopoulos and Kuck): every chunk is `⌈R/N⌉` of the `R` tasks
/// not yet handed out, at least `min_chunk`.
#[derive(Debug, Default, Clone)]
pub struct Gss {
    workers: usize,
    min_chunk: usize,
}

impl Policy for Gss {
    fn name(&self) -> &str {
        "gss"
    }

    fn begin(&mut self, plan: &Plan<'_>) {
        self.workers = plan.workers.max(1);
        self.min_chunk = plan.min_chunk.max(1);
    }

    fn next_chunk(&mut self, ask: &Ask<'_>) -> usize {
        ask.remaining
            .div_ceil(self.workers)
            .max(self.min_chunk)
            .min(ask.remaining)
    }
}

/// Trapezoid self-scheduling (Tzen and Ni): chunks shrink linearly from `F = ⌈M/(2N)⌉` to
/// `L = min_chunk` over `C = ⌈2M/(F + L)⌉` chunks, by `δ = ⌊(F − L)/(C − 1)⌋` each time.
#[derive(Debug, Default, Clone)]
pub struct Tss {
    next: usize,
    last: usize,
    step: usize,
}

impl Policy for Tss {
    fn name(&self) -> &str {
        "tss"
    }

    fn begin(&mut self, plan: &Plan<'_>) {
        let (m, n) = (plan.tasks, plan.workers.max(1));
        self.last = plan.min_chunk.max(1);
        let first = m.div_ceil(2 * n).max(self.last);
        let chunks = (2 * m).div_ceil(first + self.last);
        self.step = if chunks > 1 {
            (first - self.last) / (chunks - 1)
        } else {
            0
        };
        self.next = first;
    }

    fn next_chunk(&mut self, ask: &Ask<'_>) -> usize {
        let size = self.next.max(self.last);
        self.next = self.next.saturating_sub(self.step);
        size.min(ask.remaining)
    }
}

/// The chunk of every worker in a batch of practical factoring (Hummel et al.): `⌈R/(2N)⌉`,
/// at least `min_chunk`.
pub(crate) fn fac2_chunk(uncut: usize, workers: usize, min_chunk: usize) -> usize {
    uncut.div_ceil(2 * workers.max(1)).max(min_chunk.max(1))
}

/// Practical factoring, FAC2 (Hummel et al.): batch `j` holds half the tasks not yet cut, `N`
/// chunks of `⌈R_j/(2N)⌉`. Factoring with its factor fixed at 0.5 and sizes rounded up.
#[derive(Debug, Default, Clone)]
pub struct Fac2 {
    batches: Batches,
    workers: usize,
    min_chunk: usize,
}

impl Policy for Fac2 {
    fn name(&self) -> &str {
        "fac2"
    }

    fn begin(&mut self, plan: &Plan<'_>) {
        self.batches.reset(plan.tasks);
        self.workers = plan.workers.max(1);
        self.min_chunk = plan.min_chunk;
    }

    fn next_chunk(&mut self, ask: &Ask<'_>) -> usize {
        let (workers, min_chunk) = (self.workers, self.min_chunk);
        let size = self.batches.next(ask, |b| {
            b.cut(fac2_chunk(b.uncut(), workers, min_chunk), workers);
        });
        size.min(ask.remaining)
    }
}

/// Modified fixed size chunking (Banicescu and Liu): fixed chunks of `⌈M/C⌉` tasks, `C` the
/// number of chunks FAC2 cuts from the same `M` tasks for the same `N` workers, so that it needs
/// no profile of the task times (FSC's optimal size does) and sends as many messages as FAC2.
#[derive(Debug, Default, Clone)]
pub struct Mfsc {
    chunk: usize,
}

impl Policy for Mfsc {
    fn name(&self) -> &str {
        "mfsc"
    }

    fn begin(&mut self, plan: &Plan<'_>) {
        let (workers, min_chunk) = (plan.workers.max(1), plan.min_chunk);
        let (mut uncut, mut chunks) = (plan.tasks, 0);
        while uncut > 0 {
            let size = fac2_chunk(uncut, workers, min_chunk);
            for _ in 0..workers {
                if uncut == 0 {
                    break;
                }
                uncut -= size.min(uncut);
                chunks += 1;
            }
        }
        self.chunk = plan.tasks.div_ceil(chunks.max(1)).max(min_chunk.max(1));
    }

    fn next_chunk(&mut self, ask: &Ask<'_>) -> usize {
        self.chunk.max(1).min(ask.remaining)
    }
}
