//! A program's own tunable: declared in `initialize`, read by the master in `partition` and by
//! the workers through the shared part, tuned by the program's own tunlet under the tuner's
//! decision rules, and set from outside through the control endpoint.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mw_runtime::prelude::*;
use mw_runtime::tuning::control::{ControlAddr, ControlStream, Reply};
use mw_runtime::tuning::{Proposal, TunerView, Tunlet};
use mw_runtime::{
    Objective, PolicyName, RunConfig, RunMetrics, TunableId, TunablesHandle, TuneMode, TuningConfig,
};

/// The tile size: a task takes `64 ms / tile`, so larger tiles are faster up to the range's end
/// (tasks of milliseconds, not fractions: a sleep overshoots by a fraction on a busy machine).
const START: i64 = 1;
const MOST: i64 = 16;

/// Four tasks per iteration; the tile in force goes to the workers in the shared part.
struct Tiled {
    iterations: usize,
    tunlet: bool,
    tile: Option<(TunablesHandle, TunableId<i64>)>,
    /// The tile each iteration ran with, as `partition` read it.
    seen: Arc<Mutex<Vec<i64>>>,
}

impl Master for Tiled {
    type Task = u32;
    type Result = u32;
    type Shared = i64;

    fn initialize(&mut self, setup: &mut Setup) -> mw_runtime::Result<()> {
        let tunables = setup.tunables();
        let tile = tunables.declare("tile", START, 1..=MOST)?;
        if self.tunlet {
            setup.tunlet(Box::new(Doubling { tile }));
        }
        self.tile = Some((tunables, tile));
        Ok(())
    }

    /// Ends after `iterations`, or once the tile is set to the range's end.
    fn partition(&mut self, it: &Iteration) -> Work<i64, u32> {
        let (tunables, id) = self.tile.as_ref().unwrap();
        let tile = tunables.value(*id);
        self.seen.lock().unwrap().push(tile);
        if it.index >= self.iterations || tile == MOST {
            return Work::done();
        }
        Work::new(tile, (0..4).collect())
    }

    fn recover(&mut self, _: TaskId, _: u32) {}
}

#[derive(Default)]
struct Sleeper;

impl Worker for Sleeper {
    type Task = u32;
    type Result = u32;
    type Shared = i64;

    fn do_work(&mut self, tile: &i64, task: &u32) -> u32 {
        std::thread::sleep(Duration::from_micros(64_000 / *tile as u64));
        *task
    }
}

/// Doubles the tile while it is below 8, predicting a gain of 40 % (a little less than the
/// half it gains, so that the first look does not act at once as on a cold start).
#[derive(Debug)]
struct Doubling {
    tile: TunableId<i64>,
}

impl Tunlet for Doubling {
    fn tunable(&self) -> mw_runtime::Tunable {
        self.tile.tunable()
    }

    fn propose(&mut self, view: &TunerView<'_>) -> Option<Proposal> {
        let tile = view.value(self.tile);
        (tile < 8 && view.task_ms() > 0.0)
            .then(|| Proposal::new(self.tile, tile * 2, 0.4, "larger tiles take less time"))
    }
}

fn config(control: Option<ControlAddr>) -> RunConfig {
    RunConfig {
        workers: Some(2),
        max_workers: Some(2),
        policy: PolicyName::Ss.into(),
        backend: BackendChoice::Local,
        // The factor only: `ss` uses none, so the program's tunlet is the only one proposing.
        // Time, not the index (time per resource): a larger tile does less work, which the
        // index would count as a worker less busy, against it, when the time falls by less (as
        // on a busy machine, where each wake-up waits for a core).
        tuning: TuningConfig {
            mode: TuneMode::Factor,
            objective: Some(Objective::Time),
            ..TuningConfig::default()
        },
        control,
        quiet: true,
        ..RunConfig::default()
    }
}

fn run(master: Tiled, control: Option<ControlAddr>) -> RunMetrics {
    mw_runtime::run_config(&config(control), || master, Sleeper::default)
        .unwrap()
        .into_metrics()
        .unwrap()
}

#[test]
fn a_programs_tunlet_tunes_its_tunable_under_the_decision_rules() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let metrics = run(
        Tiled {
            iterations: 24,
            tunlet: true,
            tile: None,
            seen: Arc::clone(&seen),
        },
        None,
    );
    let tiles: Vec<(serde_json::Value, serde_json::Value)> = metrics
        .decisions
        .iter()
        .filter(|d| d.tunable == "tile")
        .map(|d| (d.from.clone(), d.to.clone()))
        .collect();
    assert_eq!(
        tiles,
        [(1, 2), (2, 4), (4, 8)]
            .map(|(a, b)| (serde_json::Value::from(a), serde_json::Value::from(b))),
        "{:#?}",
        metrics.decisions
    );
    for decision in metrics.decisions.iter().filter(|d| d.tunable == "tile") {
        // Logged like the runtime's: the tunlet's reason, the rules it passed, the numbers.
        assert!(
            decision
                .reason
                .starts_with("larger tiles take less time; held 2 "),
            "{}",
            decision.reason
        );
        assert!(decision.predicted_ms.is_some() && decision.measured_ms.is_some());
    }
    let seen = seen.lock().unwrap();
    // The first looks are checkpoints inside iteration 0: the first change may come there,
    // after two of them agreed; the iteration itself ran with the tile it started with.
    assert_eq!(seen[0], START);
    assert_eq!(*seen.last().unwrap(), 8);
}

/// Connects, with the token, once the endpoint is up.
fn connect(addr: &ControlAddr) -> ControlStream {
    for _ in 0..500 {
        if let Ok(stream) = addr.connect() {
            return stream;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the control endpoint at {addr} never opened");
}

#[cfg(unix)]
#[test]
fn the_control_endpoint_lists_and_sets_a_programs_tunable() {
    let dir = tempfile::tempdir().unwrap();
    let addr = ControlAddr::Unix(dir.path().join("ctl.sock"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let master = Tiled {
        iterations: 100_000,
        tunlet: false,
        tile: None,
        seen: Arc::clone(&seen),
    };
    let run_addr = addr.clone();
    let program = std::thread::spawn(move || run(master, Some(run_addr)));
    let mut control = connect(&addr);
    // The tunable is declared in `initialize`, which may not have run yet.
    let mut listed = String::new();
    for _ in 0..500 {
        if let Reply::Ok(line) = control.request("get").unwrap() {
            if line.contains("tile=") {
                listed = line;
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(listed.ends_with(" tile=1"), "{listed}");
    match control.request("set tile 99").unwrap() {
        Reply::Err { message, help } => {
            assert!(message.contains("`tile` = 99 is out of range"), "{message}");
            assert!(help.unwrap().contains("between 1 and 16"));
        }
        reply => panic!("{reply:?}"),
    }
    match control.request("set tile 2.5").unwrap() {
        Reply::Err { message, .. } => assert!(message.contains("not a valid value"), "{message}"),
        reply => panic!("{reply:?}"),
    }
    assert!(matches!(
        control.request("set tile 4").unwrap(),
        Reply::Ok(_)
    ));
    for _ in 0..500 {
        if seen.lock().unwrap().last() == Some(&4) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(control.request("get tile").unwrap(), Reply::Ok("4".into()));
    assert!(matches!(
        control.request("set tile auto").unwrap(),
        Reply::Ok(_)
    ));
    match control.request("get tiles").unwrap() {
        Reply::Err { message, help } => {
            assert!(message.contains("no tunable is named `tiles`"), "{message}");
            assert!(help.unwrap().contains("`tile`"));
        }
        reply => panic!("{reply:?}"),
    }
    // The master stops once the tile is at the range's end.
    assert!(matches!(
        control.request("set tile 16").unwrap(),
        Reply::Ok(_)
    ));
    let metrics = program.join().unwrap();
    let decision = metrics
        .decisions
        .iter()
        .find(|d| d.tunable == "tile")
        .unwrap();
    assert_eq!(
        (decision.from.clone(), decision.to.clone()),
        (1.into(), 4.into())
    );
    assert_eq!(decision.reason, "external");
    assert_eq!(seen.lock().unwrap().last(), Some(&16));
}
