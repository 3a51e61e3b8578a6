//! From a pilot's parameters to a whole run at each worker count asked: the balanced model of
//! Cesar et al. 2006 (or POETRIES' broadcast model when the shared part dominates) where its
//! assumptions hold, the runtime's event simulation ([`mw_runtime::tuning::simulate`]) elsewhere, plus
//! the run's fixed costs.

use mw_runtime::model::broadcast::{self, BroadcastParams};
use mw_runtime::model::{self, Params};
use mw_runtime::tuning::simulate::{SimWorker, Spec, simulate_run, task_stats};
use mw_runtime::{LoadPattern, PolicyName, Protocol};
use serde::Serialize;

use super::pilot::Pilot;

/// How big the real run is and where it runs.
#[derive(Debug, Clone)]
pub struct Request {
    pub workers: Vec<usize>,
    pub iterations: usize,
    /// Tasks per iteration; the pilot's when `None`.
    pub tasks: Option<usize>,
    /// The real run's link, replacing what the pilot measured.
    pub mo_ms: Option<f64>,
    pub k_ms_per_byte: Option<f64>,
    /// A policy other than the pilot's.
    pub policy: Option<PolicyName>,
    /// Emulated external load on the workers (the runtime's `--load`).
    pub load: LoadPattern,
    /// A range asked was longer than `MAX_COUNTS` and evaluated at some of its counts only.
    pub thinned: bool,
}

/// A time within this share of the best counts as good as the best, for the cheapest choice.
pub const NEAR_BEST: f64 = 0.10;
/// The master is the bottleneck once it is busy this share of an iteration.
pub const MASTER_SATURATED: f64 = 0.8;
/// Worker counts past this multiple of the pilot's are extrapolated and said so.
const FAR_FROM_PILOT: usize = 8;
/// A load that stretches task times by this much or more is far from what an unloaded pilot
/// measured, and said so.
const HEAVY_LOAD: f64 = 2.0;

/// The prediction for one worker count.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub workers: usize,
    /// The whole run, in ms.
    pub total_ms: f64,
    /// A steady iteration (under load, the mean iteration), in ms, by the method used.
    pub iteration_ms: f64,
    /// `model` or `simulation`.
    pub method: &'static str,
    /// The model's iteration time, when its parameters are valid.
    pub model_iteration_ms: Option<f64>,
    pub simulated_iteration_ms: f64,
    /// Workers × total time.
    pub worker_hours: f64,
    /// Total processing time / (workers × total time).
    pub efficiency: f64,
    /// Share of an iteration the master is busy (sending and recovering) or one of its links
    /// is, whichever is more.
    pub master_busy: f64,
}

/// What `mwgen predict` answers.
#[derive(Debug, Clone, Serialize)]
pub struct Forecast {
    pub iterations: usize,
    pub tasks: usize,
    pub policy: String,
    /// `balanced` or `broadcast`.
    pub model: &'static str,
    pub mo_ms: f64,
    pub k_ms_per_byte: f64,
    /// Relative uncertainty of each prediction (the pilot's iteration-to-iteration spread, at
    /// least 10 %).
    pub uncertainty: f64,
    /// Why the simulation was used rather than the model (empty: the model's assumptions hold).
    pub simulated_because: Vec<String>,
    pub rows: Vec<Row>,
    /// Fewest-time count, and the fewest worker-hours within `NEAR_BEST` of that time.
    pub best_time: usize,
    pub cheapest: usize,
    /// The model's MCMC: the most workers the master can feed before the first answer returns.
    pub mcmc: Option<usize>,
    /// The first count asked at which the master is busy `MASTER_SATURATED` of the time.
    pub master_bottleneck: Option<usize>,
    /// What the prediction cannot vouch for.
    pub caveats: Vec<String>,
}

/// Predicts the whole run at every count of `req.workers` (the pilot's count when it is
/// empty; a count of 0 is taken as 1).
pub fn forecast(pilot: &Pilot, req: &Request) -> Forecast {
    let counts: Vec<usize> = if req.workers.is_empty() {
        vec![pilot.workers]
    } else {
        req.workers.iter().map(|&n| n.max(1)).collect()
    };
    let tasks = req.tasks.unwrap_or(pilot.tasks.round().max(1.0) as usize);
    let policy = req.policy.or(pilot.policy).unwrap_or(PolicyName::Daf);
    let mo = req.mo_ms.or(pilot.mo_ms).unwrap_or(0.0);
    let k = req.k_ms_per_byte.or(pilot.k_ms_per_byte).unwrap_or(0.0);
    let m = tasks as f64;
    let params = Params {
        tc_ms: m * pilot.task_mean_ms,
        volume_bytes: m * (pilot.task_bytes + pilot.result_bytes),
        alpha: share(pilot.task_bytes, pilot.task_bytes + pilot.result_bytes),
        mo_ms: mo,
        k_ms_per_byte: k,
        lm_ms: m * pilot.master_ms_per_task,
    };
    // The shared part dominates when it outweighs the tasks each worker gets (POETRIES).
    let broadcast = pilot.shared_bytes * pilot.workers as f64 > m * pilot.task_bytes;
    let bparams = BroadcastParams {
        tc_ms: params.tc_ms,
        shared_bytes: pilot.shared_bytes,
        result_bytes: m * pilot.result_bytes,
        mo_ms: mo,
        k_ms_per_byte: k,
        lm_ms: params.lm_ms,
    };
    let mcmc = if broadcast {
        broadcast::mcmc(&bparams).ok().flatten()
    } else {
        model::mcmc(&params, pilot.protocol).ok().flatten()
    };
    let heterogeneous = spread_of(&pilot.worker_speeds) > 0.2;
    let mut because = Vec::new();
    let cv = share(pilot.task_sd_ms, pilot.task_mean_ms);
    if cv > 0.1 {
        because.push(format!("task times vary ({:.0} % of the mean)", 100.0 * cv));
    }
    if policy != PolicyName::Static {
        because.push(format!("`{policy}` cuts more than one chunk per worker"));
    }
    if heterogeneous {
        because.push("the pilot's workers ran at different speeds".to_string());
    }
    if pilot.protocol == Protocol::Async && pilot.prefetch > 0 {
        because.push("chunks are sent ahead (prefetch)".to_string());
    }
    if !req.load.is_none() {
        because.push("the load slows some workers in some iterations".to_string());
    }
    let model_holds = because.is_empty();

    let rows: Vec<Row> = counts
        .iter()
        .map(|&n| {
            let workers = speeds(pilot, n, heterogeneous);
            let stats = task_stats(&workers);
            let spec = Spec {
                tasks,
                workers: &workers,
                policy,
                factor: pilot.factor,
                min_chunk: 1,
                stats: &stats,
                protocol: pilot.protocol,
                mo_ms: mo,
                k_ms_per_byte: k,
                task_bytes: pilot.task_bytes,
                result_bytes: pilot.result_bytes,
                shared_bytes: pilot.shared_bytes,
                recover_ms_per_task: pilot.master_ms_per_task,
                serial_ms: 0.0,
                prefetch: pilot.prefetch,
            };
            let reps = if n <= 100 {
                5
            } else if n <= 2000 {
                2
            } else {
                1
            };
            let run = simulate_run(&spec, req.iterations, &req.load, 0x5EED, reps);
            let simulated_ms = run.time_ms / req.iterations.max(1) as f64;
            let model_ms = if broadcast {
                broadcast::iteration_time(&bparams, n).ok()
            } else {
                model::iteration_time(&params, n, pilot.protocol).ok()
            };
            let within_mcmc = mcmc.is_none_or(|c| n <= c) && n <= tasks;
            let (iteration_ms, method) = match model_ms {
                Some(t) if model_holds && within_mcmc => (t, "model"),
                _ => (simulated_ms, "simulation"),
            };
            let total_ms = pilot.fixed_ms + pilot.warmup_ms + req.iterations as f64 * iteration_ms;
            Row {
                workers: n,
                total_ms,
                iteration_ms,
                method,
                model_iteration_ms: model_ms,
                simulated_iteration_ms: simulated_ms,
                worker_hours: n as f64 * total_ms / 3.6e6,
                efficiency: share(req.iterations as f64 * params.tc_ms, n as f64 * total_ms),
                master_busy: share(run.master_busy_ms, run.time_ms).min(1.0),
            }
        })
        .collect();

    let best = rows.iter().min_by(|a, b| a.total_ms.total_cmp(&b.total_ms));
    let best_ms = best.map_or(0.0, |r| r.total_ms);
    let cheapest = rows
        .iter()
        .filter(|r| r.total_ms <= best_ms * (1.0 + NEAR_BEST))
        .min_by(|a, b| a.worker_hours.total_cmp(&b.worker_hours));
    let master_bottleneck = rows
        .iter()
        .find(|r| r.master_busy >= MASTER_SATURATED)
        .map(|r| r.workers);
    let caveats = caveats(pilot, req, policy, tasks, mo, heterogeneous);
    Forecast {
        iterations: req.iterations,
        tasks,
        policy: policy.to_string(),
        model: if broadcast { "broadcast" } else { "balanced" },
        mo_ms: mo,
        k_ms_per_byte: k,
        uncertainty: pilot.iteration_spread.max(0.1),
        simulated_because: because,
        best_time: best.map_or(pilot.workers, |r| r.workers),
        cheapest: cheapest.map_or(pilot.workers, |r| r.workers),
        mcmc,
        master_bottleneck,
        rows,
        caveats,
    }
}

/// The speeds of `n` workers: the pilot's mix repeated when its workers differed, the pooled
/// time otherwise (small differences between alike workers are noise, not speed).
fn speeds(pilot: &Pilot, n: usize, heterogeneous: bool) -> Vec<SimWorker> {
    if heterogeneous {
        pilot
            .worker_speeds
            .iter()
            .copied()
            .cycle()
            .take(n)
            .collect()
    } else {
        vec![
            SimWorker {
                mean_ms: pilot.task_mean_ms,
                sd_ms: pilot.task_sd_ms,
            };
            n
        ]
    }
}

/// (slowest − fastest) / mean of the workers' task times.
fn spread_of(workers: &[SimWorker]) -> f64 {
    let means = workers.iter().map(|w| w.mean_ms);
    let lo = means.clone().fold(f64::INFINITY, f64::min);
    let hi = means.clone().fold(0.0, f64::max);
    let mean = means.sum::<f64>() / workers.len().max(1) as f64;
    share(hi - lo, mean)
}

/// `a / b`, 0 when `b` is 0.
fn share(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { 0.0 }
}

fn caveats(
    pilot: &Pilot,
    req: &Request,
    policy: PolicyName,
    tasks: usize,
    mo: f64,
    heterogeneous: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    let largest = req.workers.iter().copied().max().unwrap_or(pilot.workers);
    if pilot.decisions > 0 {
        out.push(format!(
            "the pilot's tuner changed its tunables {} times: this assumes the last iteration's (factor {}) held for the whole run; run the pilot with `--tuning off` for a firmer prediction",
            pilot.decisions, pilot.factor
        ));
    }
    if req.policy.is_some_and(|p| Some(p) != pilot.policy) {
        out.push(format!(
            "the pilot ran `{}`, not `{policy}`: `{policy}` is simulated from the pilot's task times, never measured",
            pilot.policy_name
        ));
    }
    if pilot.steady_iterations == pilot.iterations {
        out.push(
            "the pilot finished one iteration: its warm-up is counted in every iteration; a pilot of 3 or more iterations separates them"
                .to_string(),
        );
    }
    if req.mo_ms.is_none() && pilot.mo_ms.is_none() {
        out.push("the pilot measured no transfer: messages cost nothing here; give --link-latency and --link-bandwidth (or --mo and --k)".to_string());
    } else if pilot.backend == "local" && req.mo_ms.is_none() {
        out.push(format!(
            "the pilot ran on threads: mo = {mo:.4} ms and k are that machine's, not a cluster's; give --link-latency and --link-bandwidth of the real network"
        ));
    }
    let far = req
        .workers
        .iter()
        .filter(|&&n| n > FAR_FROM_PILOT * pilot.workers || n * FAR_FROM_PILOT < pilot.workers)
        .count();
    if far > 0 {
        out.push(format!(
            "{far} of the counts are more than {FAR_FROM_PILOT}x away from the pilot's {} workers: they extrapolate (same task times, a master that pays the same per message)",
            pilot.workers
        ));
    }
    if let Some(&n) = req.workers.iter().find(|&&n| n > tasks) {
        out.push(format!(
            "{n} workers and more outnumber the {tasks} tasks of an iteration: some idle"
        ));
    }
    if heterogeneous {
        out.push(format!(
            "the pilot's {} workers ran at different speeds: larger counts repeat that mix",
            pilot.worker_speeds.len()
        ));
    }
    if !req.load.is_none() {
        let stretch = (0..req.iterations)
            .flat_map(|i| (0..largest).map(move |w| (w, i)))
            .map(|(w, i)| req.load.stretch(w, i))
            .fold(1.0, f64::max);
        out.push(format!(
            "the load is emulated from its pattern, not measured: task times stretched by 1/(1 − load) at most {stretch:.1}x, the master and the links unchanged"
        ));
        if stretch >= HEAVY_LOAD {
            out.push(format!(
                "the load slows workers up to {stretch:.1}x, far from the pilot's unloaded speeds: a real competing process may also slow the master and the messages; run a pilot under that load for a firmer prediction"
            ));
        }
    }
    if req.thinned {
        out.push(format!(
            "the range was evaluated at {} counts spread evenly on a log scale, not at every count: the fastest and cheapest are among those",
            req.workers.len()
        ));
    }
    if pilot.faults > 0 {
        out.push(format!(
            "the pilot had {} failed or backed-up chunks: the prediction assumes none",
            pilot.faults
        ));
    }
    out
}
