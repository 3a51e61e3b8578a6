//! What the runtime costs against doing without it, each pair measured in one run of this
//! program, alternating: the local engine against rayon on N-Body, the MPI engine against a
//! hand-written rsmpi loop, the derived codec against bincode, and a run with `--trace` against
//! the same run without. The detailed criterion and bench programs of `mw-runtime/benches/`
//! measure the same things at more sizes; this is the one-table summary.

use std::hint::black_box;
use std::time::Instant;

use mw_runtime::{PolicyName, codec};
use serde_json::json;

use super::children;
use super::{fixed, program, synthetic};
use crate::doc::{Section, Table, Verdict, ms, percent};
use crate::ideal::median;
use crate::{BenchError, Size};

/// One line of the table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Row {
    pub what: String,
    pub ours: String,
    pub baseline: String,
    /// What the comparison gives, as the column says (a ratio, an overhead, or why it was
    /// skipped).
    pub result: String,
}

#[derive(
    mw_runtime::Message, serde::Serialize, serde::Deserialize, Debug, Clone, Copy, PartialEq,
)]
struct Body {
    m: f64,
    x: f64,
    y: f64,
    vx: f64,
    vy: f64,
}

/// Round trips per timed block of the codec comparison.
const CODEC_BLOCK: usize = 10;

/// Encode-then-decode round trips of `n` bodies: (derived codec ms, bincode ms), each the median
/// over `rounds` of the mean of a block of [`CODEC_BLOCK`] round trips.
fn codec_times(n: usize, rounds: usize) -> Result<(f64, f64), BenchError> {
    let bodies: Vec<Body> = (0..n)
        .map(|i| {
            let f = i as f64;
            Body {
                m: 1.0 / (f + 1.0),
                x: f.sin(),
                y: f.cos(),
                vx: 0.1 * f,
                vy: -0.1 * f,
            }
        })
        .collect();
    let ours: Vec<Body> = codec::decode(&codec::encode(&bodies))
        .map_err(|e| BenchError(format!("error: the codec's round trip failed: {e}")))?;
    let theirs: Vec<Body> =
        bincode::deserialize(&bincode::serialize(&bodies).map_err(|e| BenchError(e.to_string()))?)
            .map_err(|e| BenchError(e.to_string()))?;
    if ours != bodies || theirs != bodies {
        return Err(BenchError(
            "error: a codec round trip changed the bodies".into(),
        ));
    }
    // Blocks of calls in a row, the two codecs' blocks alternated: single calls alternated
    // would measure the allocator handing each codec fresh pages for its 4 MB buffers, which a
    // program encoding message after message does not pay.
    let block = |f: &mut dyn FnMut()| {
        let started = Instant::now();
        for _ in 0..CODEC_BLOCK {
            f();
        }
        started.elapsed().as_secs_f64() * 1e3 / CODEC_BLOCK as f64
    };
    let (mut mw, mut bc) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        mw.push(block(&mut || {
            let bytes = codec::encode(black_box(&bodies));
            black_box(codec::decode::<Vec<Body>>(&bytes).ok());
        }));
        bc.push(block(&mut || {
            let bytes = bincode::serialize(black_box(&bodies)).ok();
            black_box(bytes.and_then(|b| bincode::deserialize::<Vec<Body>>(&b).ok()));
        }));
    }
    Ok((median(&mw), median(&bc)))
}

/// One iteration of the synthetic program, spinning, with and without the trace: median
/// iteration time off and on, in ms.
fn trace_times(
    tasks: usize,
    mean_ms: f64,
    workers: usize,
    chunk_of_one: bool,
    rounds: usize,
) -> Result<(f64, f64), BenchError> {
    let dir = std::env::temp_dir().join(format!("mw-bench-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .map_err(|e| BenchError(format!("error: `{}`: {e}", dir.display())))?;
    let trace = dir.join("run.trace.json");
    let once = |traced: bool| -> Result<f64, BenchError> {
        let mut prog = program(tasks, 1, mean_ms, 0.0);
        prog.spin = true;
        let mut run = fixed(workers);
        if chunk_of_one {
            run.policy = Some(PolicyName::Fsc);
            run.factor = Some(workers as f64 / tasks as f64);
        }
        run.trace = traced.then(|| trace.clone());
        let summary = synthetic(prog, run)?;
        Ok(summary
            .metrics
            .iterations
            .first()
            .map_or(f64::NAN, |i| i.time_ms))
    };
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        off.push(once(false)?);
        on.push(once(true)?);
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok((median(&off), median(&on)))
}

#[derive(Debug, Clone)]
struct Plan {
    bodies: usize,
    rounds: usize,
    trace_tasks: usize,
    /// Start other programs (N-Body, the MPI bench).
    children: bool,
    nbody: (usize, usize),
}

fn plan(size: Size) -> Plan {
    match size {
        Size::Full => Plan {
            bodies: 100_000,
            rounds: 9,
            trace_tasks: 20_000,
            children: true,
            nbody: (3000, 10),
        },
        Size::Tiny => Plan {
            bodies: 10_000,
            rounds: 1,
            trace_tasks: 500,
            children: false,
            nbody: (0, 0),
        },
    }
}

const PAPER: &str = "\
No counterpart in the papers: their runtimes were hand-written C over PVM or MPI. The targets
are the project's own: the derived codec at least as fast as bincode and aiming at 5× on slices
of plain structs; the engines close to a hand-written loop (rayon on threads, rsmpi on MPI); the
trace cheap enough to leave on.";

/// Runs the experiment.
///
/// # Errors
/// A run that failed (the programs started for the rayon and MPI rows are reported in the
/// table when they fail, not as errors).
pub fn run(size: Size) -> Result<Section, BenchError> {
    let plan = plan(size);
    let mut rows = Vec::new();

    if plan.children {
        let (bodies, steps) = plan.nbody;
        let times: Vec<children::NBodyTimes> = (0..3)
            .map(|_| children::nbody(bodies, steps))
            .collect::<Result<_, _>>()
            .unwrap_or_default();
        let row = if times.is_empty() {
            let why = children::nbody(bodies, steps).err().unwrap_or_default();
            Row {
                what: "N-Body, local engine vs rayon".into(),
                ours: "–".into(),
                baseline: "–".into(),
                result: format!("skipped: {why}"),
            }
        } else {
            let runtime = median(&times.iter().map(|t| t.runtime_ms).collect::<Vec<_>>());
            let rayon = median(&times.iter().map(|t| t.rayon_ms).collect::<Vec<_>>());
            let seq = median(&times.iter().map(|t| t.sequential_ms).collect::<Vec<_>>());
            Row {
                what: format!(
                    "N-Body {bodies} bodies × {steps} steps, 2 workers vs rayon on 2 threads \
                     (sequential {} ms)",
                    ms(seq)
                ),
                ours: format!("{} ms", ms(runtime)),
                baseline: format!("{} ms", ms(rayon)),
                result: format!("runtime at {:.2}× rayon's speed", rayon / runtime),
            }
        };
        rows.push(row);
    } else {
        rows.push(Row {
            what: "N-Body, local engine vs rayon".into(),
            ours: "–".into(),
            baseline: "–".into(),
            result: format!("skipped at size `{}` (runs at `full`)", size.name()),
        });
    }

    let mpi_row = |result: String| Row {
        what: "MPI engine vs hand-written rsmpi loop".into(),
        ours: "–".into(),
        baseline: "–".into(),
        result,
    };
    if !plan.children {
        rows.push(mpi_row(format!(
            "skipped at size `{}` (runs at `full`)",
            size.name()
        )));
    } else if !children::mpirun_available() {
        rows.push(mpi_row("skipped: no mpirun".into()));
    } else {
        match children::mpi() {
            Ok(m) => {
                rows.push(Row {
                    what: "MPI, empty tasks in chunks of one, 1 worker rank".into(),
                    ours: "runtime".into(),
                    baseline: "hand-written rsmpi".into(),
                    result: match (m.empty_ratio, m.empty_ratio_plain) {
                        (Some(r), Some(plain)) => format!(
                            "runtime at {r:.2}× the tasks/s of the hand-written loop \
                             ({plain:.2}× without prefetch)"
                        ),
                        (Some(r), None) => {
                            format!("runtime at {r:.2}× the tasks/s of the hand-written loop")
                        }
                        _ => "no number printed".into(),
                    },
                });
                rows.push(Row {
                    what: "MPI, 1 ms spinning tasks, 2 worker ranks (efficiency)".into(),
                    ours: m
                        .efficiency
                        .map_or("–".into(), |e| format!("{:.3} (daf)", e.1)),
                    baseline: m
                        .efficiency
                        .map_or("–".into(), |e| format!("{:.3} (chunks of 1)", e.0)),
                    result: m
                        .efficiency
                        .map_or("no number printed".into(), |e| format!("{:.2}×", e.1 / e.0)),
                });
            }
            Err(why) => rows.push(mpi_row(format!("skipped: {why}"))),
        }
    }

    let (mw, bc) = codec_times(plan.bodies, plan.rounds)?;
    rows.push(Row {
        what: format!(
            "codec round trip, Vec of {} five-f64 structs ({CODEC_BLOCK} in a row per codec)",
            plan.bodies
        ),
        ours: format!("{} ms", ms(mw)),
        baseline: format!("{} ms (bincode 1.3)", ms(bc)),
        result: format!("derived codec {:.1}× bincode's speed", bc / mw),
    });

    let tasks = plan.trace_tasks;
    let (off, on) = trace_times(tasks, 0.0, 1, true, plan.rounds)?;
    rows.push(Row {
        what: format!("--trace, {tasks} empty tasks, one per chunk, 1 worker (worst case)"),
        ours: format!("{} ms traced", ms(on)),
        baseline: format!("{} ms untraced", ms(off)),
        result: format!("overhead {}", percent(on / off - 1.0)),
    });
    let (off, on) = trace_times(tasks, 0.05, 2, false, plan.rounds)?;
    rows.push(Row {
        what: format!("--trace, {tasks} spinning tasks of 50 µs, daf, 2 workers"),
        ours: format!("{} ms traced", ms(on)),
        baseline: format!("{} ms untraced", ms(off)),
        result: format!("overhead {}", percent(on / off - 1.0)),
    });

    let mut table = Table::new(["comparison", "ours", "baseline", "result"]);
    for r in &rows {
        table.push([
            r.what.clone(),
            r.ours.clone(),
            r.baseline.clone(),
            r.result.clone(),
        ]);
    }
    let ours = format!(
        "Medians of {} rounds, each pair alternating in one run. N-Body runs the example with \
         `--mode all` (sequential, rayon and the runtime one after the other, results compared \
         bit for bit), median of 3 runs; the MPI rows run the runtime's `mpi` bench under \
         `mpirun --oversubscribe` (it measures both sides in one job). With 2 workers on 2 \
         cores the master shares a core with them.\n\n{}",
        plan.rounds,
        table.markdown()
    );
    Ok(Section {
        title: "Runtime overhead".into(),
        verdict: Verdict::Measured(
            "what the runtime costs against doing without it, pair by pair in one run; no \
             paper measured this."
                .into(),
        ),
        paper: PAPER.into(),
        ours,
        figures: Vec::new(),
        data: json!({ "rows": rows }),
        seconds: 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_codec_comparison_round_trips() {
        let (mw, bc) = codec_times(100, 1).unwrap();
        assert!(mw.is_finite() && bc.is_finite());
    }
}
