//! The number of workers (Caymes-Scutari et al., POETRIES, §5, Tables 1–2, Figs. 2–5): N-Body
//! run with 1, 2, 4, 8, 16 and 19 workers, and under MATE starting from one worker and tuned,
//! each under a variable and an increasing external load.
//!
//! Here the workload is the synthetic program in N-Body's communication shape (1000 bodies: the
//! 40,000 bytes of bodies sent to every worker each iteration, 100 tasks of 10 bodies, 320 bytes
//! back per task) with tasks of 1 ms ± 10 %, 60 iterations as in the paper's Figs. 3 and 5, and
//! the runtime's `--load variable` and `--load increasing` (75 % load, period 8). The tuned run
//! starts at one worker with a pool of 19 (`--workers 1 --max-workers 19 --tune on`).

use mw_runtime::{LoadPattern, RunArgs, TuneMode};
use mwgen::report::chart::{LineChart, Series};
use serde_json::json;

use super::{fixed, program, synthetic};
use crate::doc::{Figure, Section, Table};
use crate::{BenchError, Size};

#[derive(Debug, Clone)]
struct Plan {
    counts: Vec<usize>,
    spin_counts: Vec<usize>,
    pool: usize,
    iterations: usize,
    tasks: usize,
    mean_ms: f64,
    loads: Vec<&'static str>,
}

fn plan(size: Size) -> Plan {
    match size {
        Size::Full => Plan {
            counts: vec![1, 2, 4, 8, 16, 19],
            spin_counts: vec![1, 2],
            pool: 19,
            iterations: 60,
            tasks: 100,
            mean_ms: 1.0,
            loads: vec!["variable", "increasing"],
        },
        Size::Tiny => Plan {
            counts: vec![1, 2, 4],
            spin_counts: vec![1],
            pool: 4,
            iterations: 6,
            tasks: 20,
            mean_ms: 0.5,
            loads: vec!["variable:2", "increasing:2"],
        },
    }
}

/// The paper's Tables 1 and 2: seconds with 1, 2, 4, 8, 16, 19 workers, then under MATE.
pub const PAPER_VARIABLE: [f64; 7] = [64.49, 34.61, 18.09, 10.37, 11.83, 15.49, 10.92];
pub const PAPER_INCREASING: [f64; 7] = [73.23, 37.11, 19.28, 11.76, 13.05, 14.50, 12.46];
pub const PAPER_COUNTS: [usize; 6] = [1, 2, 4, 8, 16, 19];

/// One run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Row {
    pub load: String,
    /// `None` for the tuned run.
    pub workers: Option<usize>,
    pub spin: bool,
    pub total_ms: f64,
    /// Workers taking part in each iteration.
    pub trajectory: Vec<usize>,
}

fn measure(plan: &Plan, load: &str, run: RunArgs, spin: bool) -> Result<Row, BenchError> {
    let mut prog = program(plan.tasks, plan.iterations, plan.mean_ms, 0.1);
    prog.shared_bytes = 40_000;
    prog.result_bytes = 320;
    prog.spin = spin;
    let workers = (run.tune == Some(TuneMode::Off)).then_some(run.workers.unwrap_or(1));
    let pattern: LoadPattern = load
        .parse()
        .map_err(|e| BenchError(format!("error: load `{load}`: {e}")))?;
    let summary = synthetic(
        prog,
        RunArgs {
            load: Some(pattern),
            ..run
        },
    )?;
    Ok(Row {
        load: load.to_owned(),
        workers,
        spin,
        total_ms: summary.metrics.total_ms,
        trajectory: summary
            .metrics
            .iterations
            .iter()
            .map(|i| i.workers)
            .collect(),
    })
}

/// The tuned run's time over the best fixed run's, and the best fixed count.
pub fn tuned_against_best(fixed: &[(usize, f64)], tuned: f64) -> Option<(usize, f64)> {
    fixed
        .iter()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|&(n, best)| (n, tuned / best))
}

/// The paper's row and ours for one load, in seconds.
pub fn comparison(load: &str, paper: &[f64; 7], rows: &[Row], counts: &[usize]) -> Table {
    let mut header = vec!["".to_owned()];
    header.extend(counts.iter().map(|n| format!("{n}")));
    header.push("tuned from 1".into());
    header.push("tuned / best fixed".into());
    let mut table = Table {
        header,
        rows: Vec::new(),
    };
    let paper_fixed: Vec<(usize, f64)> = PAPER_COUNTS
        .iter()
        .copied()
        .zip(paper[..6].iter().copied())
        .collect();
    let mut line = vec!["paper (s)".to_owned()];
    for n in counts {
        line.push(
            paper_fixed
                .iter()
                .find(|(c, _)| c == n)
                .map_or("–".into(), |(_, s)| format!("{s:.2}")),
        );
    }
    line.push(format!("{:.2}", paper[6]));
    line.push(
        tuned_against_best(&paper_fixed, paper[6])
            .map_or("–".into(), |(n, r)| format!("{r:.2} (best: {n})")),
    );
    table.rows.push(line);
    for spin in [false, true] {
        let of: Vec<&Row> = rows
            .iter()
            .filter(|r| r.load == load && r.spin == spin)
            .collect();
        if of.is_empty() {
            continue;
        }
        let fixed: Vec<(usize, f64)> = of
            .iter()
            .filter_map(|r| r.workers.map(|n| (n, r.total_ms / 1e3)))
            .collect();
        let tuned = of
            .iter()
            .find(|r| r.workers.is_none())
            .map(|r| r.total_ms / 1e3);
        let mut line = vec![
            if spin {
                "here, spinning (s)"
            } else {
                "here (s)"
            }
            .to_owned(),
        ];
        for n in counts {
            line.push(
                fixed
                    .iter()
                    .find(|(c, _)| c == n)
                    .map_or("–".into(), |(_, s)| format!("{s:.2}")),
            );
        }
        line.push(tuned.map_or("–".into(), |s| format!("{s:.2}")));
        line.push(
            tuned
                .and_then(|t| tuned_against_best(&fixed, t))
                .map_or("–".into(), |(n, r)| format!("{r:.2} (best: {n})")),
        );
        table.rows.push(line);
    }
    table
}

const PAPER: &str = "\
Caymes-Scutari et al. (POETRIES), §5: N-Body on a cluster of Pentium 4 at 1.8 GHz on 100 Mbit/s,
one worker per machine, with 1, 2, 4, 8, 16, 19 workers and under MATE starting from one worker
(\"La aplicación comenzó con un worker, y durante la ejecución el número fue modificándose\"),
each alongside a variable and a gradually increasing external load. Execution time in seconds:

| load | 1 | 2 | 4 | 8 | 16 | 19 | MATE |
| :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| variable (Table 1) | 64.49 | 34.61 | 18.09 | 10.37 | 11.83 | 15.49 | 10.92 |
| increasing (Table 2) | 73.23 | 37.11 | 19.28 | 11.76 | 13.05 | 14.50 | 12.46 |

The tuned run comes within 5–6 % of the best fixed count (8 workers), reached without knowing it
in advance; Figs. 3 and 5 show the number of workers adapting over 60 iterations, one or two
iterations after each change of load.";

/// Runs the experiment.
///
/// # Errors
/// A run that failed.
pub fn run(size: Size) -> Result<Section, BenchError> {
    let plan = plan(size);
    let mut rows = Vec::new();
    for load in &plan.loads {
        for &n in &plan.counts {
            rows.push(measure(&plan, load, fixed(n), false)?);
        }
        let tuned = RunArgs {
            workers: Some(1),
            max_workers: Some(plan.pool),
            tune: Some(TuneMode::On),
            ..fixed(1)
        };
        rows.push(measure(&plan, load, tuned, false)?);
        for &n in &plan.spin_counts {
            rows.push(measure(&plan, load, fixed(n), true)?);
        }
    }
    let mut ours = format!(
        "{} iterations of {} sleeping tasks of {} ms ± 10 %, N-Body's shape (40,000 bytes to \
         every worker, 320 bytes back per task), `daf`; fixed runs `--tune off`, the tuned run \
         `--workers 1 --max-workers {} --tune on` (objective: the performance index). Total run \
         time in seconds. The spinning rows use real CPU work where the workers fit the cores.\n\n",
        plan.iterations, plan.tasks, plan.mean_ms, plan.pool
    );
    let papers = [PAPER_VARIABLE, PAPER_INCREASING];
    let mut figures = Vec::new();
    for (i, load) in plan.loads.iter().enumerate() {
        let paper = papers[i.min(1)];
        ours.push_str(&format!(
            "**`--load {load}`**:\n\n{}\n",
            comparison(load, &paper, &rows, &plan.counts).markdown()
        ));
        if let Some(tuned) = rows.iter().find(|r| &r.load == load && r.workers.is_none()) {
            let changes = tuned.trajectory.windows(2).filter(|w| w[0] != w[1]).count();
            let last = tuned.trajectory.last().copied().unwrap_or(0);
            let most = tuned.trajectory.iter().copied().max().unwrap_or(0);
            let plural = if changes == 1 { "" } else { "s" };
            ours.push_str(&format!(
                "Tuned under `{load}`: {changes} change{plural} of `nworkers`, at most {most}, \
                 {last} at the end.\n\n"
            ));
        }
        let name = load.split(':').next().unwrap_or(load);
        let point = |r: &Row| r.workers.map(|n| (n as f64, r.total_ms / 1e3));
        let fixed_points: Vec<(f64, f64)> = rows
            .iter()
            .filter(|r| &r.load == load && !r.spin)
            .filter_map(point)
            .collect();
        let mut series = vec![Series::line(
            "fixed number of workers",
            fixed_points.clone(),
        )];
        if let Some(t) = rows.iter().find(|r| &r.load == load && r.workers.is_none()) {
            let (lo, hi) = (
                plan.counts[0] as f64,
                *plan.counts.last().unwrap_or(&1) as f64,
            );
            series.push(Series::dashed(
                "tuned from 1",
                vec![(lo, t.total_ms / 1e3), (hi, t.total_ms / 1e3)],
            ));
        }
        figures.push(Figure {
            file: format!("workers-time-{name}.svg"),
            caption: format!(
                "Total time against the number of workers under `--load {load}` (the paper's \
                 Figs. 2 and 4); dashed: the tuned run."
            ),
            chart: LineChart {
                title: format!("Run time by number of workers, load {name}"),
                x_label: "workers".into(),
                y_label: "total time (s)".into(),
                series,
                log_x: true,
            },
        });
    }
    let trajectories: Vec<Series> = rows
        .iter()
        .filter(|r| r.workers.is_none())
        .map(|r| {
            Series::line(
                format!("load {}", r.load),
                r.trajectory
                    .iter()
                    .enumerate()
                    .map(|(i, &n)| (i as f64, n as f64))
                    .collect(),
            )
        })
        .collect();
    figures.push(Figure {
        file: "workers-trajectory.svg".into(),
        caption: "nworkers chosen by the tuner in each iteration, starting from one worker \
                  (the paper's Figs. 3 and 5)."
            .into(),
        chart: LineChart {
            title: "Tuned number of workers over the run".into(),
            x_label: "iteration".into(),
            y_label: "nworkers".into(),
            series: trajectories,
            log_x: false,
        },
    });
    Ok(Section {
        title: "Number of workers".into(),
        paper: PAPER.into(),
        ours,
        figures,
        data: json!({ "rows": rows }),
        seconds: 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_papers_tuned_run_is_within_six_percent_of_the_best() {
        let fixed: Vec<(usize, f64)> = PAPER_COUNTS
            .iter()
            .copied()
            .zip(PAPER_VARIABLE[..6].iter().copied())
            .collect();
        let (n, r) = tuned_against_best(&fixed, PAPER_VARIABLE[6]).unwrap();
        assert_eq!(n, 8);
        assert!((r - 10.92 / 10.37).abs() < 1e-12);
        assert_eq!(tuned_against_best(&[], 1.0), None);
    }

    #[test]
    fn the_comparison_puts_ours_under_the_papers() {
        let row = |workers, total_ms| Row {
            load: "variable".into(),
            workers,
            spin: false,
            total_ms,
            trajectory: vec![1, 2],
        };
        let rows = vec![
            row(Some(1), 4000.0),
            row(Some(2), 2000.0),
            row(None, 2500.0),
        ];
        let md = comparison("variable", &PAPER_VARIABLE, &rows, &[1, 2]).markdown();
        let lines: Vec<&str> = md.lines().collect();
        assert!(
            lines[2].contains("64.49") && lines[2].contains("10.92"),
            "{md}"
        );
        assert!(lines[2].contains("1.05 (best: 8)"), "{md}");
        assert!(lines[3].starts_with("| here (s)"), "{md}");
        assert!(
            lines[3].contains("4.00") && lines[3].contains("1.25 (best: 2)"),
            "{md}"
        );
        assert_eq!(lines.len(), 4, "no spinning rows were given");
    }
}
