//! `mwgen launch` around fake launchers (sh scripts) that behave as `mpirun` does when it loses
//! or keeps the master's status.
#![cfg(unix)]
#![allow(clippy::unwrap_used)]

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `mwgen launch [flags] -- sh -c SCRIPT`, with the time it took.
fn launch(flags: &[&str], script: &str) -> (Output, Duration) {
    let start = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_mwgen"))
        .arg("launch")
        .args(flags)
        .args(["--", "sh", "-c", script])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (output, start.elapsed())
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_launcher_that_never_exits_is_ended_after_the_grace_with_the_master_s_status() {
    // The master said 3; the launcher hangs and ignores SIGTERM, as a stuck mpirun does.
    let script = "trap '' TERM; echo 'mw: exit status 3 (failed)' >&2; while :; do sleep 1; done";
    let (output, took) = launch(&["--grace", "1"], script);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    // grace + SIGTERM's 2 s + the drain of its output, at most.
    assert!(took < Duration::from_millis(4500), "took {took:?}");
    assert!(
        took >= Duration::from_secs(3),
        "SIGKILL came early: {took:?}"
    );
    let said = stderr(&output);
    assert!(said.contains("mw: exit status 3 (failed)"), "{said}");
    assert!(
        said.contains("mwgen launch: the master exited with status 3"),
        "{said}"
    );
    assert!(
        said.contains("mwgen launch: the launcher ignored SIGTERM"),
        "{said}"
    );
}

#[test]
fn a_launcher_that_obeys_sigterm_ends_at_the_grace() {
    let script = "echo 'mw: exit status 0 (completed)' >&2; exec sleep 1000";
    let (output, took) = launch(&["--grace", "1"], script);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(took < Duration::from_millis(2500), "took {took:?}");
    assert!(!stderr(&output).contains("SIGKILL"), "{}", stderr(&output));
}

#[test]
fn a_launcher_that_drops_the_status_is_overruled() {
    // `mpirun --mca orte_enable_recovery 1` exits 0 after a master that failed.
    let (output, took) = launch(&[], "echo 'mw: exit status 1 (failed)' >&2; exit 0");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(took < Duration::from_secs(2), "took {took:?}");
    let (output, _) = launch(
        &[],
        "echo 'mw: exit status 143 (interrupted by SIGTERM)' >&2",
    );
    assert_eq!(output.status.code(), Some(143));
}

#[test]
fn a_master_that_said_nothing_is_a_failure_even_when_the_launcher_says_0() {
    let (output, _) = launch(&[], "echo some output >&2; exit 0");
    assert_eq!(output.status.code(), Some(1));
    let said = stderr(&output);
    assert!(said.contains("some output"), "{said}");
    assert!(
        said.contains(
            "mwgen launch: error: the master ended without reporting its exit status (killed, \
             or not an mw program)"
        ),
        "{said}"
    );
    assert!(said.contains("mwgen launch: help: "), "{said}");
}

#[test]
fn a_launcher_s_own_failure_is_passed_on_when_the_master_said_nothing() {
    let (output, _) = launch(&[], "exit 4");
    assert_eq!(output.status.code(), Some(4));
    assert!(!stderr(&output).contains("error:"), "{}", stderr(&output));
    let (output, _) = launch(&[], "kill -9 $$");
    assert_eq!(output.status.code(), Some(137));
}

#[test]
fn standard_output_passes_through_untouched() {
    let script = "printf 'no newline at the end'; printf 'mw: exit status 0\\n' >&2";
    let (output, _) = launch(&[], script);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(output.stdout, b"no newline at the end");
}

#[test]
fn a_signal_to_the_wrapper_reaches_the_launcher_and_gives_the_shell_s_status() {
    let mut wrapper = Command::new(env!("CARGO_BIN_EXE_mwgen"))
        .args([
            "launch",
            "--",
            "sh",
            "-c",
            "echo started >&2; exec sleep 1000",
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the launcher runs (its first line came through).
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(wrapper.stderr.as_mut().unwrap()),
        &mut first,
    )
    .unwrap();
    assert_eq!(first, "started\n");
    let start = Instant::now();
    let pid = rustix::process::Pid::from_raw(wrapper.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = wrapper.wait().unwrap();
    assert_eq!(status.code(), Some(143));
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_launcher_that_cannot_be_found_is_said_so() {
    let output = Command::new(env!("CARGO_BIN_EXE_mwgen"))
        .args(["launch", "--", "no-such-launcher-anywhere"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(127));
    let said = stderr(&output);
    assert!(
        said.starts_with("mwgen launch: error: cannot start `no-such-launcher-anywhere`"),
        "{said}"
    );
}

#[test]
fn the_launcher_s_command_line_is_required() {
    let output = Command::new(env!("CARGO_BIN_EXE_mwgen"))
        .args(["launch"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn a_signal_reaches_the_ranks_on_this_node_at_once() {
    // As mpirun does: the rank in a session of its own, which a signal to the launcher's group
    // does not reach, and the launcher passing nothing on while the rank runs. The rank, a
    // master that ends on SIGINT, says so; left alone it ends after 10 s saying nothing.
    let rank = "trap 'echo \"mw: exit status 130 (interrupted by SIGINT)\" >&2; exit 130' INT; \
                echo started >&2; i=0; while [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done";
    let launcher = format!(
        "trap 'exit 1' INT; OMPI_COMM_WORLD_RANK=0 setsid -w sh -c '{}'",
        rank.replace('\'', "'\\''")
    );
    let mut wrapper = Command::new(env!("CARGO_BIN_EXE_mwgen"))
        .args(["launch", "--", "sh", "-c", &launcher])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(wrapper.stderr.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stderr, &mut first).unwrap();
    assert_eq!(first, "started\n");
    let start = Instant::now();
    let pid = rustix::process::Pid::from_raw(wrapper.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let status = wrapper.wait().unwrap();
    assert!(
        rest.contains("mw: exit status 130"),
        "the rank did not get the signal: {rest}"
    );
    assert_eq!(status.code(), Some(130), "{rest}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn the_master_s_status_is_read_from_its_file_when_the_launcher_drops_its_output() {
    // As hydra after losing a node: the master's standard error never comes through and the
    // launcher does not exit; the master wrote its line to MW_STATUS_FILE as well.
    let script = "echo 'mw: exit status 3 (failed)' > \"$MW_STATUS_FILE\"; sleep 20";
    let (output, took) = launch(&["--grace", "1"], script);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert!(took < Duration::from_secs(10), "{took:?}");
}

/// Runs `mwgen launch [flags] -- sh -c SCRIPT` for at most `limit`: `None` when it was still
/// running then (and was killed).
fn launch_within(flags: &[&str], script: &str, limit: Duration) -> Option<(Output, Duration)> {
    let start = Instant::now();
    let mut wrapper = Command::new(env!("CARGO_BIN_EXE_mwgen"))
        .arg("launch")
        .args(flags)
        .args(["--", "sh", "-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while wrapper.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            wrapper.kill().unwrap();
            wrapper.wait().unwrap();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let took = start.elapsed();
    Some((wrapper.wait_with_output().unwrap(), took))
}

/// A launcher that never ends the job, as Open MPI 5's prterun did across nodes once the
/// master's MPI had ended it: it ignores SIGTERM and runs on for 30 s. `$1` is what it runs
/// first.
const STUCK_LAUNCHER: &str =
    "trap '' TERM; eval \"$1\"; i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done";

fn stuck_launcher(first: &str) -> String {
    format!(
        "set -- '{}'; {STUCK_LAUNCHER}",
        first.replace('\'', "'\\''")
    )
}

#[test]
fn a_master_that_ended_without_a_status_does_not_leave_the_wrapper_waiting() {
    // The master (rank 0) ends after a second without saying its status, as one that Open MPI
    // 5 ended with `_exit` (`MPI_ERRORS_ARE_FATAL`) does.
    let script = stuck_launcher("OMPI_COMM_WORLD_RANK=0 sh -c 'sleep 1; exit 14'");
    let Some((output, took)) = launch_within(&["--grace", "1"], &script, Duration::from_secs(20))
    else {
        panic!("mwgen launch still waited 20 s after the master ended");
    };
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    // The master's second, the grace, SIGTERM's 2 s, the drain of the launcher's output.
    assert!(took >= Duration::from_secs(4), "took {took:?}: {said}");
    assert!(took < Duration::from_secs(7), "took {took:?}: {said}");
    assert!(
        said.contains("mwgen launch: the master (rank 0, pid ")
            && said.contains(
                ") ended without saying its exit status, and the launcher is still running \
                 1.0 s later: SIGTERM to its process group"
            ),
        "{said}"
    );
    assert!(
        said.contains(
            "mwgen launch: error: the master ended without reporting its exit status, and the \
             launcher did not end the job: mwgen launch ended it"
        ),
        "{said}"
    );
}

#[test]
fn a_worker_rank_that_ended_is_not_taken_for_the_master() {
    // Rank 1 ends at once; the master runs 3 s and says 0; the launcher then exits 0.
    let script = "OMPI_COMM_WORLD_RANK=1 sh -c 'exit 9' & \
                  OMPI_COMM_WORLD_RANK=0 sh -c \
                  'sleep 3; echo \"mw: exit status 0 (completed)\" >&2'; wait";
    let (output, took) =
        launch_within(&["--grace", "1"], script, Duration::from_secs(20)).expect("it ended");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(took >= Duration::from_secs(3), "took {took:?}");
    assert!(!stderr(&output).contains("SIGTERM"), "{}", stderr(&output));
}

#[test]
fn a_launcher_that_ends_the_job_itself_after_a_silent_master_gives_its_own_status() {
    // As plain mpirun does after a master that was killed: its status, within the grace.
    let script = "OMPI_COMM_WORLD_RANK=0 sh -c 'sleep 0.5'; sleep 1; exit 137";
    let (output, _) =
        launch_within(&["--grace", "5"], script, Duration::from_secs(20)).expect("it ended");
    assert_eq!(output.status.code(), Some(137), "{}", stderr(&output));
    assert!(!stderr(&output).contains("SIGTERM"), "{}", stderr(&output));
}
