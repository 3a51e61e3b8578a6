//! Comparisons that need programs of their own: N-Body on the runtime against rayon (the
//! example's `--mode all`), and the MPI engine against a hand-written rsmpi loop (the runtime's
//! `mpi` bench under `mpirun`). Both print sentences meant for people; the parsers below look
//! for the numbers by the words around them and say so when they are missing, so a change of
//! wording fails loudly instead of giving a wrong number.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use mw_runtime::RunMetrics;
use rustix::process::{Pid, Signal, kill_process};

use crate::BenchError;
use crate::ideal::Spread;
use crate::teardown::Teardown;

/// The first number after `marker` in `text` (a decimal, maybe signed or in `e` notation).
pub fn number_after(text: &str, marker: &str) -> Option<f64> {
    let start = text.find(marker)? + marker.len();
    let rest = text[start..].trim_start();
    let end = rest
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || ((c == '-' || c == '+') && (i == 0 || rest[..i].ends_with(['e', 'E'])))
                || ((c == 'e' || c == 'E') && i > 0))
        })
        .map_or(rest.len(), |(i, _)| i);
    rest[..end].parse().ok()
}

/// What `nbody --mode all` reports: times in ms of the sequential loop, rayon and the runtime.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct NBodyTimes {
    pub sequential_ms: f64,
    pub rayon_ms: f64,
    pub runtime_ms: f64,
}

/// Reads the lines `master/worker: … in X ms …`, `sequential: X ms; …`, `rayon: X ms …`.
pub fn parse_nbody(stderr: &str) -> Result<NBodyTimes, BenchError> {
    let line = |start: &str| stderr.lines().find(|l| l.starts_with(start));
    let missing = |what: &str| {
        BenchError(format!(
            "error: `nbody --mode all` printed no {what} time; its output was:\n{stderr}"
        ))
    };
    let runtime_ms = line("master/worker:")
        .and_then(|l| number_after(l, " in "))
        .ok_or_else(|| missing("master/worker"))?;
    let sequential_ms = line("sequential:")
        .and_then(|l| number_after(l, "sequential:"))
        .ok_or_else(|| missing("sequential"))?;
    let rayon_ms = line("rayon:")
        .and_then(|l| number_after(l, "rayon:"))
        .ok_or_else(|| missing("rayon"))?;
    Ok(NBodyTimes {
        sequential_ms,
        rayon_ms,
        runtime_ms,
    })
}

/// One part of the MPI bench: each contender's median and range (tasks/s or efficiency), and
/// the per-round ratios.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct MpiPart {
    pub plain: Option<Spread>,
    pub pipelined: Option<Spread>,
    pub prefetch_0: Option<Spread>,
    pub prefetch_1: Option<Spread>,
    /// `--prefetch 1` over the pipelined loop.
    pub like_pipelined: Option<Spread>,
    /// `--prefetch 0` over the plain loop.
    pub like_plain: Option<Spread>,
    /// `--prefetch 1` over `--prefetch 0`.
    pub prefetch_gain: Option<Spread>,
    /// The plain loop doing the least any runtime measuring every task must do (part (a) only).
    pub measuring: Option<Spread>,
    /// The measuring loop over the plain loop: what measuring costs.
    pub measuring_plain: Option<Spread>,
    /// `--prefetch 0` over the measuring loop: what the rest of the engine costs.
    pub like_measuring: Option<Spread>,
    /// The pipelined loop doing the same measuring (part (a) only).
    pub pipelined_measuring: Option<Spread>,
    /// The pipelined measuring loop over the pipelined loop.
    pub pipelined_measuring_ratio: Option<Spread>,
    /// `--prefetch 1` over the pipelined measuring loop.
    pub like_pipelined_measuring: Option<Spread>,
    /// The measuring loop with its messages posted and tested as the runtime's are (part (a)
    /// only).
    pub posted_measuring: Option<Spread>,
    /// The posted measuring loop over the measuring loop: what posted messages cost.
    pub posted_measuring_ratio: Option<Spread>,
    /// `--prefetch 0` over the posted measuring loop.
    pub like_posted_measuring: Option<Spread>,
    /// The pipelined measuring loop with posted messages (part (a) only).
    pub pipelined_posted_measuring: Option<Spread>,
    /// The pipelined posted measuring loop over the pipelined measuring loop.
    pub pipelined_posted_measuring_ratio: Option<Spread>,
    /// `--prefetch 1` over the pipelined posted measuring loop.
    pub like_pipelined_posted_measuring: Option<Spread>,
}

/// What the MPI bench reports: (a) empty tasks in chunks of one on one worker rank, tasks/s;
/// (b) 1 ms tasks on two worker ranks, efficiency.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct MpiNumbers {
    pub empty: MpiPart,
    pub busy: MpiPart,
}

/// `X (min A, max B)` after `marker`.
fn spread_after(line: &str, marker: &str) -> Option<Spread> {
    let start = line.find(marker)? + marker.len();
    let rest = &line[start..];
    Some(Spread {
        median: number_after(rest, "")?,
        min: number_after(rest, "min")?,
        max: number_after(rest, "max")?,
    })
}

/// Reads the lines of part `part` (`(a)` or `(b)`): `(a) plain loop: tasks/s X (min A, max B)`
/// for each contender, and `(a) ratio prefetch 1 / pipelined: X (min A, max B)` for each ratio.
pub fn parse_mpi(stdout: &str, part: &str) -> MpiPart {
    let find = |what: &str| {
        let head = format!("{part} {what}:");
        stdout
            .lines()
            .find(|l| l.trim_start().starts_with(&head))
            .and_then(|l| {
                let (_, rest) = l.split_once(':')?;
                // A contender's line names its unit before the number.
                let rest = rest
                    .trim_start()
                    .trim_start_matches(|c: char| c.is_alphabetic() || c == '/');
                spread_after(rest, "")
            })
    };
    MpiPart {
        plain: find("plain loop"),
        pipelined: find("pipelined loop"),
        prefetch_0: find("runtime --prefetch 0"),
        prefetch_1: find("runtime --prefetch 1"),
        like_pipelined: find("ratio prefetch 1 / pipelined"),
        like_plain: find("ratio prefetch 0 / plain"),
        prefetch_gain: find("ratio prefetch 1 / prefetch 0"),
        measuring: find("measuring loop"),
        measuring_plain: find("ratio measuring / plain"),
        like_measuring: find("ratio prefetch 0 / measuring"),
        pipelined_measuring: find("pipelined measuring loop"),
        pipelined_measuring_ratio: find("ratio pipelined measuring / pipelined"),
        like_pipelined_measuring: find("ratio prefetch 1 / pipelined measuring"),
        posted_measuring: find("posted measuring loop"),
        posted_measuring_ratio: find("ratio posted measuring / measuring"),
        like_posted_measuring: find("ratio prefetch 0 / posted measuring"),
        pipelined_posted_measuring: find("pipelined posted measuring loop"),
        pipelined_posted_measuring_ratio: find(
            "ratio pipelined posted measuring / pipelined measuring",
        ),
        like_pipelined_posted_measuring: find("ratio prefetch 1 / pipelined posted measuring"),
    }
}

/// The executable of the target `name` of `kind` (`bin`, `bench`) from cargo's
/// `--message-format=json` output.
pub fn executable(cargo_json: &str, name: &str, kind: &str) -> Option<PathBuf> {
    cargo_json
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == name)
        .filter(|m| {
            m["target"]["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == kind))
        })
        .filter_map(|m| m["executable"].as_str().map(PathBuf::from))
        .next_back()
}

/// The workspace's manifest (this crate sits one folder below it).
pub(crate) fn workspace_manifest() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("Cargo.toml")
}

pub(crate) fn cargo() -> Command {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command.arg("--quiet").arg("--color").arg("never");
    command
}

/// Runs `command` to its end, killing it after `limit`.
pub fn run_with_limit(mut command: Command, limit: Duration) -> Result<Output, String> {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start it: {e}"))?;
    // Read the pipes on threads so that a chatty child never blocks on a full pipe.
    let read = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut text);
            }
            text
        })
    };
    let out = read(child.stdout.take().map(|p| Box::new(p) as _));
    let err = read(child.stderr.take().map(|p| Box::new(p) as _));
    let stop = stopped_at_signal(child.id());
    let started = Instant::now();
    let status = loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(status) => {
                stop.disarm();
                break status;
            }
            None if started.elapsed() > limit => {
                stop.disarm();
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "it took more than {} s and was stopped",
                    limit.as_secs()
                ));
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    Ok(Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

/// Ends child `pid` (SIGTERM) at a signal that ends this process while the child runs: a
/// `timeout` in front of a program passes it on, and kills what ignores it.
fn stopped_at_signal(pid: u32) -> Teardown {
    Teardown::new(move || {
        if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
            let _ = kill_process(pid, Signal::TERM);
        }
    })
}

/// The `nbody` example's binary, built by cargo in this program's profile first: a binary left
/// from an older checkout would run with another version's flags.
fn nbody_binary() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut build = cargo();
    build.args([
        "build",
        "-p",
        "nbody",
        "--message-format=json",
        "--manifest-path",
    ]);
    build.arg(workspace_manifest());
    if exe.parent().is_some_and(|dir| dir.ends_with("release")) {
        build.arg("--release");
    }
    let out = run_with_limit(build, Duration::from_secs(900))?;
    executable(&String::from_utf8_lossy(&out.stdout), "nbody", "bin").ok_or_else(|| {
        format!(
            "building nbody failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })
}

/// N-Body with `bodies` bodies for `steps` steps: sequential, rayon on 2 threads and the
/// runtime with 2 workers (fixed), one after the other in one process, results compared bit for
/// bit by the example.
pub fn nbody(bodies: usize, steps: usize) -> Result<NBodyTimes, String> {
    let mut command = Command::new(nbody_binary()?);
    command.args([
        "--mode",
        "all",
        "--backend",
        "local",
        "--tuning",
        "off",
        "--quiet",
    ]);
    command.args(["--workers", "2", "--max-workers", "2"]);
    command.args([
        "--bodies",
        &bodies.to_string(),
        "--steps",
        &steps.to_string(),
    ]);
    let out = run_with_limit(command, Duration::from_secs(600))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("nbody failed: {}", stderr.trim()));
    }
    parse_nbody(&stderr).map_err(|e| e.0)
}

/// One run of the `nbody` example on threads with `args`, its metrics written to `path` and read
/// back.
pub(crate) fn nbody_metrics(args: &[String], path: &Path) -> Result<RunMetrics, String> {
    let mut command = Command::new(nbody_binary()?);
    command.args(["--backend", "local", "--quiet"]).args(args);
    command.arg("--metrics").arg(path);
    let out = run_with_limit(command, Duration::from_secs(600))?;
    if !out.status.success() {
        return Err(format!(
            "nbody {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("no metrics at `{}`: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("metrics at `{}`: {e}", path.display()))
}

/// Whether `mpirun` is on the `PATH`.
pub fn mpirun_available() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("mpirun").is_file()))
}

/// One run of `exe` under `mpirun --oversubscribe` on `ranks` ranks with `args`, its tunables
/// from a config file holding `config` (Open MPI reads `--tune` on the command line as its
/// own), its metrics written to `dir`/`name` and read back.
pub(crate) fn mpirun_metrics(
    exe: &Path,
    dir: &Path,
    ranks: usize,
    args: &[String],
    config: &str,
    name: &str,
    limit: Duration,
) -> Result<RunMetrics, String> {
    let config_file = dir.join("Mw.toml");
    std::fs::write(&config_file, config)
        .map_err(|e| format!("cannot write `{}`: {e}", config_file.display()))?;
    let metrics = dir.join(name);
    let mut command = Command::new("mpirun");
    command.env("OMPI_ALLOW_RUN_AS_ROOT", "1");
    command.env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    command.args(["--oversubscribe", "-np", &ranks.to_string()]);
    command.arg(exe).args(args);
    command.arg("--config").arg(&config_file);
    command.arg("--metrics").arg(&metrics);
    let out = run_with_limit(command, limit)?;
    if !out.status.success() {
        return Err(format!(
            "mpirun -np {ranks} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = std::fs::read_to_string(&metrics)
        .map_err(|e| format!("no metrics at `{}`: {e}", metrics.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("metrics at `{}`: {e}", metrics.display()))
}

/// The runtime's MPI bench: (a) with one worker rank, (b) with two.
pub fn mpi() -> Result<MpiNumbers, String> {
    let mut build = cargo();
    build.args([
        "bench",
        "-p",
        "mw-runtime",
        "--features",
        "mpi",
        "--bench",
        "mpi",
    ]);
    build.args(["--no-run", "--message-format=json", "--manifest-path"]);
    build.arg(workspace_manifest());
    let out = run_with_limit(build, Duration::from_secs(1200))?;
    let json = String::from_utf8_lossy(&out.stdout);
    let exe = executable(&json, "mpi", "bench").ok_or_else(|| {
        format!(
            "the MPI bench did not build: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })?;
    let launch = |ranks: &str, half: &str| -> Result<String, String> {
        let mut command = Command::new("mpirun");
        command.env("OMPI_ALLOW_RUN_AS_ROOT", "1");
        command.env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        command.args(["--oversubscribe", "-np", ranks]);
        command.arg(&exe).args(["--bench", "--only", half]);
        let out = run_with_limit(command, Duration::from_secs(300))?;
        if !out.status.success() {
            return Err(format!(
                "mpirun -np {ranks} failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    Ok(MpiNumbers {
        empty: parse_mpi(&launch("2", "a")?, "(a)"),
        busy: parse_mpi(&launch("3", "b")?, "(b)"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_found_by_the_words_before_them() {
        assert_eq!(number_after("ratio 0.93", "ratio"), Some(0.93));
        assert_eq!(number_after("x in 12.5 ms", " in "), Some(12.5));
        assert_eq!(number_after("a: -3e-2, b", "a:"), Some(-0.03));
        assert_eq!(number_after("runs at 1.07× rayon's", "runs at"), Some(1.07));
        assert_eq!(number_after("ratio n/a", "ratio"), None);
        assert_eq!(number_after("nothing here", "ratio"), None);
    }

    #[test]
    fn nbody_output_is_read() {
        let stderr = "master/worker: 3000 bodies, 10 steps in 412.3 ms on 2 workers\n\
                      sequential: 790.1 ms; speedup 1.92; results bit-identical\n\
                      rayon: 401.0 ms on 2 threads (speedup 1.97); master/worker runs at 0.97× \
                      rayon's speed; results bit-identical\n";
        let t = parse_nbody(stderr).unwrap();
        assert_eq!(
            (t.runtime_ms, t.sequential_ms, t.rayon_ms),
            (412.3, 790.1, 401.0)
        );
        let e = parse_nbody("sequential: 1 ms\n").unwrap_err();
        assert!(e.0.contains("no master/worker time"), "{e}");
    }

    #[test]
    fn mpi_output_is_read() {
        let stdout = "MPI, 1 worker rank(s), 5 rounds\n\
            (a) plain loop: tasks/s 52000 (min 50000, max 53000)\n\
            (a) pipelined loop: tasks/s 90000 (min 85000, max 91000)\n\
            (a) runtime --prefetch 0: tasks/s 48000 (min 47000, max 49000)\n\
            (a) runtime --prefetch 1: tasks/s 60000 (min 59000, max 61000)\n\
            (a) ratio prefetch 1 / pipelined: 0.667 (min 0.640, max 0.700)\n\
            (a) ratio prefetch 0 / plain: 0.923 (min 0.900, max 0.950)\n\
            (a) ratio prefetch 1 / prefetch 0: 1.250 (min 1.200, max 1.300)\n\
            (a) measuring loop: tasks/s 44000 (min 43000, max 45000)\n\
            (a) ratio measuring / plain: 0.846 (min 0.800, max 0.900)\n\
            (a) ratio prefetch 0 / measuring: 1.091 (min 1.000, max 1.200)\n\
            (a) pipelined measuring loop: tasks/s 80000 (min 79000, max 81000)\n\
            (a) ratio pipelined measuring / pipelined: 0.889 (min 0.850, max 0.900)\n\
            (a) ratio prefetch 1 / pipelined measuring: 0.750 (min 0.700, max 0.800)\n\
            (b) plain loop: efficiency 0.981 (min 0.970, max 0.990)\n";
        let a = parse_mpi(stdout, "(a)");
        let s = |median, min, max| Some(Spread { median, min, max });
        assert_eq!(a.plain, s(52000.0, 50000.0, 53000.0));
        assert_eq!(a.prefetch_1, s(60000.0, 59000.0, 61000.0));
        assert_eq!(a.like_pipelined, s(0.667, 0.64, 0.7));
        assert_eq!(a.like_plain, s(0.923, 0.9, 0.95));
        assert_eq!(a.prefetch_gain, s(1.25, 1.2, 1.3));
        assert_eq!(a.measuring, s(44000.0, 43000.0, 45000.0));
        assert_eq!(a.measuring_plain, s(0.846, 0.8, 0.9));
        assert_eq!(a.like_measuring, s(1.091, 1.0, 1.2));
        assert_eq!(a.pipelined, s(90000.0, 85000.0, 91000.0));
        assert_eq!(a.pipelined_measuring, s(80000.0, 79000.0, 81000.0));
        assert_eq!(a.pipelined_measuring_ratio, s(0.889, 0.85, 0.9));
        assert_eq!(a.like_pipelined_measuring, s(0.75, 0.7, 0.8));
        let b = parse_mpi(stdout, "(b)");
        assert_eq!(b.plain, s(0.981, 0.97, 0.99));
        assert_eq!(b.pipelined, None);
        assert_eq!(b.measuring, None);
        assert_eq!(b.pipelined_measuring, None);
        assert_eq!(parse_mpi("mpi bench skipped", "(a)").like_plain, None);
    }

    #[test]
    fn the_bench_executable_comes_from_cargos_messages() {
        let json = concat!(
            r#"{"reason":"compiler-artifact","target":{"name":"mpi","kind":["lib"]},"executable":null}"#,
            "\n",
            r#"{"reason":"compiler-artifact","target":{"name":"mpi","kind":["bench"]},"executable":"/t/release/deps/mpi-abc"}"#,
            "\nnot json\n",
            r#"{"reason":"build-finished","success":true}"#,
        );
        assert_eq!(
            executable(json, "mpi", "bench"),
            Some(PathBuf::from("/t/release/deps/mpi-abc"))
        );
        assert_eq!(executable(json, "codec", "bench"), None);
        assert_eq!(executable(json, "mpi", "bin"), None);
    }
}
