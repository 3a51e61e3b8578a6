//! Policies that weigh each worker by its measured speed, for heterogeneous or loaded machines:
//! weighted factoring (`wf`), its adaptive variants (`awf-b`, `awf-c`, `awf-d`, `awf-e`) and
//! adaptive factoring (`af`). Formulas and papers in `README.md` beside this file.

use super::dls::fac2_chunk;
use super::{Ask, ChunkDone, Plan, Policy};
use crate::stats::{Moments, TaskStats};

/// The workers taking part, as a policy learns them: those that asked since the iteration
/// began; until all `N` have, the others count at the pooled speed.
#[derive(Debug, Default, Clone)]
struct Crew {
    seen: Vec<usize>,
    workers: usize,
}

impl Crew {
    fn begin(&mut self, workers: usize) {
        self.seen.clear();
        self.workers = workers.max(1);
    }

    fn asked(&mut self, worker: usize) {
        if !self.seen.contains(&worker) {
            self.seen.push(worker);
        }
    }

    /// `worker`'s weight: its speed over the crew's mean speed, so that the weights of the `N`
    /// workers sum to `N`; 1 while its speed is unknown. `time` gives the measured time per task
    /// of the pool's `pool` workers; the workers that have not asked yet count at the mean speed
    /// of the measured ones among them, else at the `pooled` time's.
    fn weight(
        &self,
        worker: usize,
        pool: usize,
        time: impl Fn(usize) -> Option<f64>,
        pooled: Option<f64>,
    ) -> f64 {
        let speed = |t: Option<f64>| t.filter(|&t| t > 0.0).map(|t| 1.0 / t);
        let Some(own) = speed(time(worker).or(pooled)) else {
            return 1.0;
        };
        let waiting: Vec<f64> = (0..pool)
            .filter(|w| !self.seen.contains(w))
            .filter_map(|w| speed(time(w)))
            .collect();
        let fill = if waiting.is_empty() {
            speed(pooled).unwrap_or(own)
        } else {
            waiting.iter().sum::<f64>() / waiting.len() as f64
        };
        let seen: Vec<f64> = self
            .seen
            .iter()
            .map(|&w| speed(time(w).or(pooled)).unwrap_or(fill))
            .collect();
        let unseen = self.workers.saturating_sub(seen.len());
        let mean = (seen.iter().sum::<f64>() + unseen as f64 * fill) / (seen.len() + unseen) as f64;
        if mean > 0.0 { own / mean } else { 1.0 }
    }
}

/// A measured mean time per task, when there is one.
fn mean_of(m: Moments) -> Option<f64> {
    (m.count() > 0).then(|| m.mean())
}

/// The FAC2 batches of the weighted policies: `N` chunks of `w_i·⌈R_j/(2N)⌉` each, `R_j` the
/// tasks not yet handed out when batch `j` starts.
#[derive(Debug, Default, Clone)]
struct WeightedBatches {
    workers: usize,
    min_chunk: usize,
    /// `⌈R_j/(2N)⌉` of the batch being handed out, and its chunks left.
    unit: usize,
    left: usize,
}

impl WeightedBatches {
    fn begin(&mut self, plan: &Plan<'_>) {
        self.workers = plan.workers.max(1);
        self.min_chunk = plan.min_chunk.max(1);
        self.left = 0;
    }

    /// Whether this ask opens a new batch.
    fn opens_batch(&self) -> bool {
        self.left == 0
    }

    fn next(&mut self, ask: &Ask<'_>, weight: f64) -> usize {
        if self.left == 0 {
            self.unit = fac2_chunk(ask.remaining, self.workers, self.min_chunk);
            self.left = self.workers;
        }
        self.left -= 1;
        let size = (weight * self.unit as f64).round_ties_even() as usize;
        size.max(self.min_chunk).min(ask.remaining)
    }
}

/// Weighted factoring (Flynn Hummel et al.): FAC2's batches, each worker's chunk scaled by its
/// weight. The weights are fixed for an iteration, from the speeds measured before it began.
#[derive(Debug, Default, Clone)]
pub struct Wf {
    batches: WeightedBatches,
    crew: Crew,
    times: Vec<Option<f64>>,
    pooled: Option<f64>,
}

impl Policy for Wf {
    fn name(&self) -> &str {
        "wf"
    }

    fn begin(&mut self, plan: &Plan<'_>) {
        self.batches.begin(plan);
        self.crew.begin(plan.workers);
        self.times = (0..plan.stats.workers())
            .map(|w| mean_of(plan.stats.worker(w)))
            .collect();
        self.pooled = mean_of(plan.stats.pooled());
    }

    fn next_chunk(&mut self, ask: &Ask<'_>) -> usize {
        self.crew.asked(ask.worker);
        let times = &self.times;
        let weight = self.crew.weight(
            ask.worker,
            times.len(),
            |w| times.get(w).copied().flatten(),
            self.pooled,
        );
        self.batches.next(ask, weight)
    }
}

/// Which adaptive weighted factoring: when the weights are recomputed, and what time they are
/// computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AwfVariant {
    /// At every batch, from the chunks' processing times.
    B,
    /// At every chunk, from the chunks' processing times.
    C,
    /// At every batch, from the chunks' whole trips (sending, waiting and processing).
    D,
    /// At every chunk, from the chunks' whole trips.
    E,
}

/// Adaptive weighted factoring (Banicescu et al.; variants B–E by Cariño and Banicescu):
/// weighted factoring whose weights follow the speeds measured while the run goes. Worker `i`'s
/// time per task is `π_i = Σ_k k·t_ik / Σ_k k·n_ik` over its chunks `k = 1, 2, …` (the
/// latest count most), and its weight is its speed `1/π_i` over the mean speed.
#[derive(Debug, Clone)]
pub struct Awf {
    variant: AwfVariant,
    batches: WeightedBatches,
    crew: Crew,
    /// Per worker: chunks answered, `Σ k·t` (ms) and `Σ k·n`.
    records: Vec<(u64, f64, f64)>,
    /// The weights' times per task, as of the last recomputation (batch variants).
    frozen: Vec<Option<f64>>,
    frozen_pooled: Option<f64>,
}

impl Awf {
    /// An adaptive weighted factoring of the given variant.
    pub fn new(variant: AwfVariant) -> Self {
        Awf {
            variant,
            batches: WeightedBatches::default(),
            crew: Crew::default(),
            records: Vec::new(),
            frozen: Vec::new(),
            frozen_pooled: None,
        }
    }

    /// `π_i` from the worker's own chunks, else the engine's measurements of its tasks.
    fn time(&self, worker: usize, stats: &TaskStats) -> Option<f64> {
        match self.records.get(worker) {
            Some(&(chunks, kt, kn)) if chunks > 0 && kn > 0.0 => Some(kt / kn),
            _ => mean_of(stats.worker(worker)),
        }
    }

    fn pooled(&self, stats: &TaskStats) -> Option<f64> {
        let (kt, kn) = self
            .records
            .iter()
            .fold((0.0, 0.0), |(t, n), r| (t + r.1, n + r.2));
        if kn > 0.0 {
            Some(kt / kn)
        } else {
            mean_of(stats.pooled())
        }
    }
}

impl Policy for Awf {
    fn name(&self) -> &str {
        match self.variant {
            AwfVariant::B => "awf-b",
            AwfVariant::C => "awf-c",
            AwfVariant::D => "awf-d",
            AwfVariant::E => "awf-e",
        }
    }

    fn begin(&mut self, plan: &Plan<'_>) {
        self.batches.begin(plan);
        self.crew.begin(plan.workers);
    }

    fn next_chunk(&mut self, ask: &Ask<'_>) -> usize {
        self.crew.asked(ask.worker);
        let per_chunk = matches!(self.variant, AwfVariant::C | AwfVariant::E);
        if per_chunk || self.batches.opens_batch() {
            let workers = ask.stats.workers().max(self.records.len());
            self.frozen = (0..workers).map(|w| self.time(w, ask.stats)).collect();
            self.frozen_pooled = self.pooled(ask.stats);
        }
        let frozen = &self.frozen;
        let weight = self.crew.weight(
            ask.worker,
            frozen.len(),
            |w| frozen.get(w).copied().flatten(),
            self.frozen_pooled,
        );
        self.batches.next(ask, weight)
    }

    fn chunk_done(&mut self, done: &ChunkDone) {
        let took = match self.variant {
            AwfVariant::B | AwfVariant::C => done.busy,
            AwfVariant::D | AwfVariant::E => done.round_trip.max(done.busy),
        };
        if done.worker >= self.records.len() {
            self.records.resize(done.worker + 1, (0, 0.0, 0.0));
        }
        let record = &mut self.records[done.worker];
        record.0 += 1;
        let k = record.0 as f64;
        record.1 += k * took.as_secs_f64() * 1e3;
        record.2 += k * done.tasks as f64;
    }
}

/// Adaptive factoring (Banicescu and Liu): worker `i` gets
/// `x_i = (D + 2·E·R − √(D² + 4·D·E·R)) / (2·μ_i)` of the `R` tasks left, with
/// `D = Σ_j σ_j²/μ_j` and `E = (Σ_j 1/μ_j)⁻¹` over the workers taking part, `μ_j` and `σ_j`
/// the mean and deviation of worker `j`'s task time as measured so far. Before any task has
/// been measured every chunk is `⌈R/(2N)⌉`.
#[derive(Debug, Default, Clone)]
pub struct Af {
    crew: Crew,
    workers: usize,
    min_chunk: usize,
}

impl Policy for Af {
    fn name(&self) -> &str {
        "af"
    }

    fn begin(&mut self, plan: &Plan<'_>) {
        self.crew.begin(plan.workers);
        self.workers = plan.workers.max(1);
        self.min_chunk = plan.min_chunk.max(1);
    }

    fn next_chunk(&mut self, ask: &Ask<'_>) -> usize {
        self.crew.asked(ask.worker);
        let pooled = ask.stats.pooled();
        let moments = |w: usize| Some(ask.stats.worker(w)).filter(|m| m.count() > 0);
        let own = moments(ask.worker).unwrap_or(pooled);
        if pooled.count() == 0 || own.mean() <= 0.0 {
            return fac2_chunk(ask.remaining, self.workers, self.min_chunk).min(ask.remaining);
        }
        let unseen = self.workers.saturating_sub(self.crew.seen.len());
        let crew = self
            .crew
            .seen
            .iter()
            .map(|&w| moments(w).unwrap_or(pooled))
            .chain(std::iter::repeat_n(pooled, unseen))
            .filter(|m| m.mean() > 0.0);
        let (mut d, mut speed) = (0.0, 0.0);
        for m in crew {
            d += m.stddev().powi(2) / m.mean();
            speed += 1.0 / m.mean();
        }
        let e = 1.0 / speed;
        let r = ask.remaining as f64;
        let x = (d + 2.0 * e * r - (d * d + 4.0 * d * e * r).sqrt()) / (2.0 * own.mean());
        (x.round_ties_even().max(0.0) as usize)
            .max(self.min_chunk)
            .min(ask.remaining)
    }
}
