//! What the runtime costs against doing without it, each pair measured in one run of this
//! program, alternating: the local engine against rayon on N-Body, the MPI engine against a
//! hand-written rsmpi loop, the derived codec against bincode, and a run with `--trace` against
//! the same run without. The detailed criterion and bench programs of `mw-runtime/benches/`
//! measure the same things at more sizes; this is the one-table summary.

use std::hint::black_box;
use std::time::Instant;

use mw_runtime::{PolicyName, Protocol, RunArgs, codec};
use serde_json::json;

use super::children;
use super::{fixed, program, synthetic};
use crate::doc::{Section, Table, Verdict, ms, percent};
use crate::ideal::{Spread, median};
use crate::teardown::Scratch;
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

/// One iteration of the synthetic program (spinning), its flags as `flags` leaves them (prefetch,
/// protocol, trace): its time in ms.
fn synthetic_ms(
    tasks: usize,
    mean_ms: f64,
    workers: usize,
    chunk_of_one: bool,
    flags: impl FnOnce(&mut RunArgs),
) -> Result<f64, BenchError> {
    let mut prog = program(tasks, 1, mean_ms, 0.0);
    prog.spin = true;
    let mut run = fixed(workers);
    if chunk_of_one {
        run.policy = Some(PolicyName::Fsc.into());
        run.factor = Some(workers as f64 / tasks as f64);
    }
    flags(&mut run);
    let summary = synthetic(prog, run)?;
    Ok(summary
        .metrics
        .iterations
        .first()
        .map_or(f64::NAN, |i| i.time_ms))
}

/// Runs `a` and `b` once each per round, the first of the pair alternating, and returns their
/// samples round by round.
fn paired(
    rounds: usize,
    mut a: impl FnMut() -> Result<f64, BenchError>,
    mut b: impl FnMut() -> Result<f64, BenchError>,
) -> Result<(Vec<f64>, Vec<f64>), BenchError> {
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        if round % 2 == 0 {
            xs.push(a()?);
            ys.push(b()?);
        } else {
            ys.push(b()?);
            xs.push(a()?);
        }
    }
    Ok((xs, ys))
}

/// The per-round ratios of `ours` to `theirs`.
fn ratios(ours: &[f64], theirs: &[f64]) -> Spread {
    Spread::of(
        &ours
            .iter()
            .zip(theirs)
            .map(|(a, b)| a / b)
            .collect::<Vec<_>>(),
    )
}

/// A ratio with its range, and "no difference" when the range holds 1.
fn ratio_text(r: &Spread, of: &str) -> String {
    let mut text = r.times();
    if !of.is_empty() {
        text = format!("{text} {of}");
    }
    if r.holds(1.0) {
        text.push_str(": no difference (the range holds 1)");
    }
    text
}

/// One iteration with and without the trace, paired: (untraced, traced) ms per round.
fn trace_times(
    tasks: usize,
    mean_ms: f64,
    workers: usize,
    chunk_of_one: bool,
    rounds: usize,
) -> Result<(Vec<f64>, Vec<f64>), BenchError> {
    let scratch = Scratch::new("mw-bench-trace").map_err(|e| BenchError(format!("error: {e}")))?;
    let trace = scratch.path().join("run.trace.json");
    paired(
        rounds,
        || synthetic_ms(tasks, mean_ms, workers, chunk_of_one, |_| {}),
        || {
            synthetic_ms(tasks, mean_ms, workers, chunk_of_one, |run| {
                run.trace = Some(trace.clone());
            })
        },
    )
}

/// The trace's row: the median overhead with the range of the rounds' overheads; a range that
/// holds zero is no difference.
fn trace_row(what: String, off: &[f64], on: &[f64]) -> Row {
    let r = ratios(on, off);
    let overhead = format!(
        "overhead {} ({} to {})",
        percent(r.median - 1.0),
        percent(r.min - 1.0),
        percent(r.max - 1.0)
    );
    Row {
        what,
        ours: format!("{} ms traced", ms(median(on))),
        baseline: format!("{} ms untraced", ms(median(off))),
        result: if r.holds(1.0) {
            format!("{overhead}: no difference, the rounds' range holds zero")
        } else {
            overhead
        },
    }
}

/// The MPI bench's like-for-like rows: `--prefetch 1` against the pipelined loop, `--prefetch 0`
/// against the plain one, for empty tasks (tasks/s) and 1 ms tasks (efficiency); where the part
/// has measuring loops, each against the loop it measures in, and the runtime against each;
/// where it has posted measuring loops, each against its blocking twin, and the runtime
/// against each.
fn mpi_rows(m: &children::MpiNumbers) -> Vec<Row> {
    let mut rows = Vec::new();
    let parts = [
        (
            "MPI, empty tasks in chunks of one, 1 worker rank, tasks/s",
            &m.empty,
            0,
            "the loop's tasks/s",
        ),
        (
            "MPI, 1 ms spinning tasks in chunks of one, 2 worker ranks, efficiency",
            &m.busy,
            3,
            "the loop's efficiency",
        ),
    ];
    for (what, part, digits, of) in parts {
        let mut pairs = vec![
            (
                "`--prefetch 1` vs the pipelined loop",
                part.prefetch_1,
                part.pipelined,
                part.like_pipelined,
            ),
            (
                "`--prefetch 0` vs the plain loop",
                part.prefetch_0,
                part.plain,
                part.like_plain,
            ),
        ];
        if part.measuring.is_some() {
            pairs.extend([
                (
                    "the measuring loop vs the plain loop",
                    part.measuring,
                    part.plain,
                    part.measuring_plain,
                ),
                (
                    "`--prefetch 0` vs the measuring loop",
                    part.prefetch_0,
                    part.measuring,
                    part.like_measuring,
                ),
            ]);
        }
        if part.pipelined_measuring.is_some() {
            pairs.extend([
                (
                    "the pipelined measuring loop vs the pipelined loop",
                    part.pipelined_measuring,
                    part.pipelined,
                    part.pipelined_measuring_ratio,
                ),
                (
                    "`--prefetch 1` vs the pipelined measuring loop",
                    part.prefetch_1,
                    part.pipelined_measuring,
                    part.like_pipelined_measuring,
                ),
            ]);
        }
        if part.posted_measuring.is_some() {
            pairs.extend([
                (
                    "the posted measuring loop vs the measuring loop",
                    part.posted_measuring,
                    part.measuring,
                    part.posted_measuring_ratio,
                ),
                (
                    "`--prefetch 0` vs the posted measuring loop",
                    part.prefetch_0,
                    part.posted_measuring,
                    part.like_posted_measuring,
                ),
            ]);
        }
        if part.pipelined_posted_measuring.is_some() {
            pairs.extend([
                (
                    "the pipelined posted measuring loop vs the pipelined measuring loop",
                    part.pipelined_posted_measuring,
                    part.pipelined_measuring,
                    part.pipelined_posted_measuring_ratio,
                ),
                (
                    "`--prefetch 1` vs the pipelined posted measuring loop",
                    part.prefetch_1,
                    part.pipelined_posted_measuring,
                    part.like_pipelined_posted_measuring,
                ),
            ]);
        }
        for (which, ours, theirs, ratio) in pairs {
            rows.push(Row {
                what: format!("{what}: {which}"),
                ours: ours.map_or("–".into(), |s| s.text(digits)),
                baseline: theirs.map_or("–".into(), |s| s.text(digits)),
                result: ratio.map_or("no number printed".into(), |r| ratio_text(&r, of)),
            });
        }
    }
    rows
}

/// Empty tasks in chunks of one on one worker thread, with one chunk prefetched and without,
/// paired: (with, without) tasks/s per round.
fn prefetch_on_threads(tasks: usize, rounds: usize) -> Result<(Vec<f64>, Vec<f64>), BenchError> {
    let per_s = |ms: f64| tasks as f64 / (ms / 1e3);
    paired(
        rounds,
        || synthetic_ms(tasks, 0.0, 1, true, |run| run.prefetch = Some(1)).map(per_s),
        || synthetic_ms(tasks, 0.0, 1, true, |run| run.prefetch = Some(0)).map(per_s),
    )
}

/// The project's target for `--protocol sync` on threads.
const SYNC_TARGET: f64 = 100_000.0;

/// Empty tasks in chunks of one on one worker thread under `--protocol sync` (each send waits
/// for the worker to take the message) against `--protocol async --prefetch 0` (one message at
/// a time as well, without the wait), paired.
fn sync_row(tasks: usize, rounds: usize) -> Result<Row, BenchError> {
    let per_s = |ms: f64| tasks as f64 / (ms / 1e3);
    let (sync, plain) = paired(
        rounds,
        || {
            synthetic_ms(tasks, 0.0, 1, true, |run| {
                run.protocol = Some(Protocol::Sync)
            })
            .map(per_s)
        },
        || synthetic_ms(tasks, 0.0, 1, true, |run| run.prefetch = Some(0)).map(per_s),
    )?;
    let rate = Spread::of(&sync);
    let target = if rate.min >= SYNC_TARGET {
        "met in every round"
    } else if rate.median >= SYNC_TARGET {
        "met by the median"
    } else {
        "not met"
    };
    Ok(Row {
        what: format!(
            "threads, {tasks} empty tasks in chunks of one, 1 worker, tasks/s: `--protocol sync` \
             vs `--protocol async --prefetch 0`"
        ),
        ours: rate.text(0),
        baseline: Spread::of(&plain).text(0),
        result: format!(
            "{} the async rate; the target of 100,000 tasks/s {target}",
            ratio_text(&ratios(&sync, &plain), "")
        ),
    })
}

/// The table of prefetch's gain: the same runtime with `--prefetch 1` and `--prefetch 0`, on
/// threads and under MPI.
fn prefetch_table(
    threads: &(Vec<f64>, Vec<f64>),
    tasks: usize,
    mpi: Option<&children::MpiNumbers>,
) -> (Table, Vec<Spread>) {
    let mut table = Table::new([
        "backend, workload",
        "--prefetch 1",
        "--prefetch 0",
        "with over without",
    ]);
    let mut gains = Vec::new();
    let gain = ratios(&threads.0, &threads.1);
    table.push([
        format!("threads, {tasks} empty tasks in chunks of one, 1 worker, tasks/s"),
        Spread::of(&threads.0).text(0),
        Spread::of(&threads.1).text(0),
        ratio_text(&gain, ""),
    ]);
    gains.push(gain);
    if let Some(m) = mpi {
        for (what, part, digits) in [
            (
                "MPI, empty tasks in chunks of one, 1 worker rank, tasks/s",
                &m.empty,
                0,
            ),
            (
                "MPI, 1 ms spinning tasks in chunks of one, 2 worker ranks, efficiency",
                &m.busy,
                3,
            ),
        ] {
            table.push([
                what.to_owned(),
                part.prefetch_1.map_or("–".into(), |s| s.text(digits)),
                part.prefetch_0.map_or("–".into(), |s| s.text(digits)),
                part.prefetch_gain
                    .map_or("no number printed".into(), |r| ratio_text(&r, "")),
            ]);
            gains.extend(part.prefetch_gain);
        }
    }
    (table, gains)
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

    let mut mpi = None;
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
                rows.extend(mpi_rows(&m));
                mpi = Some(m);
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
    rows.push(sync_row(tasks, plan.rounds)?);
    let (off, on) = trace_times(tasks, 0.0, 1, true, plan.rounds)?;
    rows.push(trace_row(
        format!("--trace, {tasks} empty tasks, one per chunk, 1 worker (worst case)"),
        &off,
        &on,
    ));
    let (off, on) = trace_times(tasks, 0.05, 2, false, plan.rounds)?;
    rows.push(trace_row(
        format!("--trace, {tasks} spinning tasks of 50 µs, daf, 2 workers"),
        &off,
        &on,
    ));

    let mut table = Table::new(["comparison", "ours", "baseline", "result"]);
    for r in &rows {
        table.push([
            r.what.clone(),
            r.ours.clone(),
            r.baseline.clone(),
            r.result.clone(),
        ]);
    }
    let threads = prefetch_on_threads(tasks, plan.rounds)?;
    let (prefetch, gains) = prefetch_table(&threads, tasks, mpi.as_ref());
    let ours = format!(
        "Medians of {rounds} rounds with the least and largest in brackets, each pair measured \
         in the same round, which of the two goes first alternating; a ratio is the median of \
         the rounds' ratios, and a range of ratios that holds 1 is no difference. N-Body runs \
         the example with `--mode all` (sequential, rayon and the runtime one after the other, \
         results compared bit for bit), median of 3 runs; the MPI rows run the runtime's `mpi` \
         bench under `mpirun --oversubscribe`: in one job, {mpi_rounds} rounds of its \
         contenders in rotating order, all in chunks of one task: a hand-written rsmpi loop \
         (send a task, receive from anyone, send the next to whoever answered), the same loop \
         pipelined (each worker holds one task ahead), and the runtime with `--prefetch 0` and \
         `--prefetch 1`, each compared with its like. With empty tasks two more, the measuring \
         loops: the plain and the pipelined loop doing the least that any runtime measuring \
         every task must do, and nothing else (chunks and answers encoded with the runtime's \
         codec, a clock read before and after each task on the worker and one per answer on \
         the master, a record of each answer kept for the model). Against the loop it measures \
         in, each gives what measuring costs, and so the most a runtime that measures every \
         task can reach; the runtime against it, what the rest of the engine costs (fault \
         handling, the policy, the tuner's probe, the trace and checkpoint hooks). With empty \
         tasks two more again, the posted measuring loops: the same two with their messages \
         posted and tested (`MPI_Irecv`, `MPI_Isend`, `MPI_Test`) as the runtime's are, so that \
         no send can wait on a stopped peer, where the measuring loops block (`MPI_Recv`, \
         `MPI_Send`). Against its blocking twin, each gives what posted messages cost; the \
         runtime against it, what the engine costs beyond both. With 2 workers on 2 cores the \
         master shares a core with them.\n\n{}\n\
         **Prefetch**: the same runtime with one chunk held ahead per worker (`--prefetch 1`, the \
         default) and without (`--prefetch 0`), paired round by round:\n\n{}",
        table.markdown(),
        prefetch.markdown(),
        rounds = plan.rounds,
        mpi_rounds = 15,
    );
    let verdict = Verdict::Measured(verdict_text(mpi.as_ref(), &gains));
    Ok(Section {
        title: "Runtime overhead".into(),
        verdict,
        paper: PAPER.into(),
        ours,
        figures: Vec::new(),
        data: json!({
            "rows": rows,
            "mpi": mpi,
            "prefetch_threads": { "with": threads.0, "without": threads.1 },
        }),
        seconds: 0.0,
    })
}

/// The section's opening line: the like-for-like MPI ratios and prefetch's gain.
fn verdict_text(mpi: Option<&children::MpiNumbers>, gains: &[Spread]) -> String {
    let mut parts = Vec::new();
    if let Some(m) = mpi {
        let r = |s: Option<Spread>| s.map_or("–".into(), |s| s.times());
        parts.push(format!(
            "under MPI with empty tasks the runtime reaches {} the pipelined loop's tasks/s \
             with `--prefetch 1` and {} the plain loop's with `--prefetch 0` (the project's \
             targets: 0.9× and 0.8×)",
            r(m.empty.like_pipelined),
            r(m.empty.like_plain)
        ));
        if m.empty.measuring.is_some() {
            parts.push(format!(
                "a hand-written loop that only measures what the runtime measures reaches {} the \
                 plain loop's, and `--prefetch 0` {} that loop's",
                r(m.empty.measuring_plain),
                r(m.empty.like_measuring)
            ));
        }
        if m.empty.pipelined_measuring.is_some() {
            parts.push(format!(
                "pipelined, the measuring loop reaches {} the pipelined loop's, and \
                 `--prefetch 1` {} that loop's",
                r(m.empty.pipelined_measuring_ratio),
                r(m.empty.like_pipelined_measuring)
            ));
        }
    }
    if let Some(m) = mpi
        && m.empty.posted_measuring.is_some()
    {
        let r = |s: Option<Spread>| s.map_or("–".into(), |s| s.times());
        parts.push(format!(
            "with its messages posted and tested as the runtime's are, the measuring loop \
             reaches {} its blocking twin's and the pipelined one {}, and against them \
             `--prefetch 0` reaches {} and `--prefetch 1` {}",
            r(m.empty.posted_measuring_ratio),
            r(m.empty.pipelined_posted_measuring_ratio),
            r(m.empty.like_posted_measuring),
            r(m.empty.like_pipelined_posted_measuring)
        ));
    }
    if let Some(threads) = gains.first() {
        let mut gain = format!(
            "with empty tasks, prefetch gives {} the tasks/s on threads",
            threads.times()
        );
        if let Some(under_mpi) = gains.get(1) {
            gain.push_str(&format!(" and {} under MPI", under_mpi.times()));
        }
        parts.push(gain);
    }
    parts.push("no paper measured this".into());
    let mut text = parts.join("; ");
    text.push('.');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The MPI bench's output read as mw-bench reads it, and the rows made from it.
    fn numbers_and_rows(stdout: &str) -> (children::MpiNumbers, Vec<Row>) {
        let m = children::MpiNumbers {
            empty: children::parse_mpi(stdout, "(a)"),
            busy: children::parse_mpi(stdout, "(b)"),
        };
        let rows = mpi_rows(&m);
        (m, rows)
    }

    #[test]
    fn the_measuring_loop_gets_its_rows_where_the_bench_printed_it() {
        let stdout = "(a) plain loop: tasks/s 2000 (min 1900, max 2100)\n\
            (a) runtime --prefetch 0: tasks/s 1000 (min 900, max 1100)\n\
            (a) ratio prefetch 0 / plain: 0.500 (min 0.450, max 0.550)\n\
            (a) measuring loop: tasks/s 1600 (min 1500, max 1700)\n\
            (a) ratio measuring / plain: 0.800 (min 0.750, max 0.850)\n\
            (a) ratio prefetch 0 / measuring: 0.625 (min 0.600, max 0.650)\n\
            (b) plain loop: efficiency 0.981 (min 0.970, max 0.990)\n";
        let (m, rows) = numbers_and_rows(stdout);
        let names: Vec<&str> = rows.iter().map(|r| r.what.as_str()).collect();
        assert_eq!(rows.len(), 6, "{names:?}");
        let measuring = &rows[3];
        assert!(
            measuring
                .what
                .ends_with("`--prefetch 0` vs the measuring loop")
        );
        assert_eq!(measuring.baseline, m.empty.measuring.unwrap().text(0));
        assert!(measuring.result.starts_with("0.62"), "{}", measuring.result);
        assert!(!rows[4].what.contains("measuring") && !rows[5].what.contains("measuring"));
        let verdict = verdict_text(Some(&m), &[]);
        assert!(verdict.contains("reaches 0.80"), "{verdict}");
        assert!(!verdict.contains("pipelined, the measuring"), "{verdict}");
    }

    #[test]
    fn the_pipelined_measuring_loop_gets_its_rows_where_the_bench_printed_it() {
        let stdout = "(a) pipelined loop: tasks/s 4000 (min 3900, max 4100)\n\
            (a) runtime --prefetch 1: tasks/s 2000 (min 1900, max 2100)\n\
            (a) ratio prefetch 1 / pipelined: 0.500 (min 0.450, max 0.550)\n\
            (a) pipelined measuring loop: tasks/s 3400 (min 3300, max 3500)\n\
            (a) ratio pipelined measuring / pipelined: 0.850 (min 0.800, max 0.900)\n\
            (a) ratio prefetch 1 / pipelined measuring: 0.588 (min 0.550, max 0.600)\n";
        let (m, rows) = numbers_and_rows(stdout);
        let names: Vec<&str> = rows.iter().map(|r| r.what.as_str()).collect();
        assert_eq!(rows.len(), 6, "{names:?}");
        let bound = &rows[2];
        assert!(
            bound
                .what
                .ends_with("the pipelined measuring loop vs the pipelined loop")
        );
        assert_eq!(bound.ours, m.empty.pipelined_measuring.unwrap().text(0));
        assert_eq!(bound.baseline, m.empty.pipelined.unwrap().text(0));
        assert!(bound.result.starts_with("0.85"), "{}", bound.result);
        let runtime = &rows[3];
        assert!(
            runtime
                .what
                .ends_with("`--prefetch 1` vs the pipelined measuring loop")
        );
        assert!(runtime.result.starts_with("0.59"), "{}", runtime.result);
        let verdict = verdict_text(Some(&m), &[]);
        assert!(
            verdict.contains("pipelined, the measuring loop reaches 0.85"),
            "{verdict}"
        );
    }

    #[test]
    fn the_posted_measuring_loops_get_their_rows_where_the_bench_printed_them() {
        let stdout = "(a) runtime --prefetch 0: tasks/s 1000 (min 900, max 1100)\n\
            (a) runtime --prefetch 1: tasks/s 2000 (min 1900, max 2100)\n\
            (a) measuring loop: tasks/s 1600 (min 1500, max 1700)\n\
            (a) pipelined measuring loop: tasks/s 3400 (min 3300, max 3500)\n\
            (a) posted measuring loop: tasks/s 1400 (min 1300, max 1500)\n\
            (a) pipelined posted measuring loop: tasks/s 3000 (min 2900, max 3100)\n\
            (a) ratio posted measuring / measuring: 0.875 (min 0.850, max 0.900)\n\
            (a) ratio prefetch 0 / posted measuring: 0.714 (min 0.700, max 0.730)\n\
            (a) ratio pipelined posted measuring / pipelined measuring: 0.882 (min 0.860, max 0.900)\n\
            (a) ratio prefetch 1 / pipelined posted measuring: 0.667 (min 0.650, max 0.680)\n";
        let (m, rows) = numbers_and_rows(stdout);
        let find = |end: &str| {
            rows.iter()
                .find(|r| r.what.ends_with(end))
                .unwrap_or_else(|| panic!("no row {end}"))
        };
        let cost = find("the posted measuring loop vs the measuring loop");
        assert_eq!(cost.ours, m.empty.posted_measuring.unwrap().text(0));
        assert_eq!(cost.baseline, m.empty.measuring.unwrap().text(0));
        assert!(cost.result.starts_with("0.88"), "{}", cost.result);
        let pipelined = find("`--prefetch 1` vs the pipelined posted measuring loop");
        assert_eq!(
            pipelined.baseline,
            m.empty.pipelined_posted_measuring.unwrap().text(0)
        );
        assert!(pipelined.result.starts_with("0.67"), "{}", pipelined.result);
        // The blocking loops' own lines are not read as the posted ones'.
        assert_eq!(m.empty.measuring.unwrap().median, 1600.0);
        assert_eq!(m.empty.pipelined_measuring.unwrap().median, 3400.0);
        let verdict = verdict_text(Some(&m), &[]);
        assert!(
            verdict.contains("reaches 0.88× (0.85–0.90) its blocking twin's and the pipelined one"),
            "{verdict}"
        );
        assert!(
            verdict.contains("`--prefetch 1` 0.67× (0.65–0.68)"),
            "{verdict}"
        );
    }

    #[test]
    fn the_codec_comparison_round_trips() {
        let (mw, bc) = codec_times(100, 1).unwrap();
        assert!(mw.is_finite() && bc.is_finite());
    }
}
