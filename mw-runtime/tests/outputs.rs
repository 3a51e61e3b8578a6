//! Files a run writes when it ends are checked before it starts: a directory that does not
//! exist gets its error at once, before the master's first `partition`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mw_runtime::prelude::*;

struct Counted {
    partitions: Arc<AtomicUsize>,
}

impl Master for Counted {
    type Task = u32;
    type Result = u32;
    type Shared = ();
    fn partition(&mut self, it: &Iteration) -> Work<(), u32> {
        self.partitions.fetch_add(1, Ordering::SeqCst);
        Work::tasks(if it.index < 3 {
            (0..10).collect()
        } else {
            vec![]
        })
    }
    fn recover(&mut self, _: TaskId, _: u32) {}
}

#[derive(Default)]
struct Echo;

impl Worker for Echo {
    type Task = u32;
    type Result = u32;
    type Shared = ();
    fn do_work(&mut self, _: &(), n: &u32) -> u32 {
        *n
    }
}

fn run(args: RunArgs) -> (mw_runtime::Result<()>, usize) {
    let partitions = Arc::new(AtomicUsize::new(0));
    let master = Counted {
        partitions: Arc::clone(&partitions),
    };
    let args = RunArgs {
        workers: Some(2),
        backend: Some(BackendChoice::Local),
        quiet: true,
        ..args
    };
    let result = mw_runtime::run_with(&args, || master, Echo::default).map(drop);
    (result, partitions.load(Ordering::SeqCst))
}

#[test]
fn metrics_and_trace_in_a_missing_directory_fail_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir");
    for (args, flag) in [
        (
            RunArgs {
                metrics: Some(missing.join("m.json")),
                ..RunArgs::default()
            },
            "--metrics",
        ),
        (
            RunArgs {
                trace: Some(missing.join("t.json")),
                ..RunArgs::default()
            },
            "--trace",
        ),
    ] {
        let (result, partitions) = run(args);
        let e = result.unwrap_err().to_string();
        assert_eq!(partitions, 0, "{flag}: the run started before the check");
        assert!(
            e.contains("error: cannot write `") && e.contains(flag) && e.contains("\nhelp: "),
            "{e}"
        );
    }
    // A writable place runs, and the files are there at the end.
    let metrics = dir.path().join("m.json");
    let (result, partitions) = run(RunArgs {
        metrics: Some(metrics.clone()),
        ..RunArgs::default()
    });
    result.unwrap();
    assert_eq!(partitions, 4);
    assert!(metrics.is_file());
}
