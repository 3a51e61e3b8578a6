//! A program's own policies registered by name with `Setup::register_policy`: `--policy NAME`
//! and `[run] policy = "NAME"` select them as they select a built-in one, an unknown name lists
//! every name, and a name taken by a built-in policy is refused.
#![allow(clippy::unwrap_used)]

use clap::Parser;
use mw_runtime::ConfigFile;
use mw_runtime::policy::{Ask, Plan, Policy};
use mw_runtime::prelude::*;
use mw_runtime::{ErrorKind, RunConfig, TuningConfig};

/// Chunks of a fixed size, under a name of its own.
#[derive(Debug)]
struct Fixed {
    name: &'static str,
    size: usize,
}

impl Policy for Fixed {
    fn name(&self) -> &str {
        self.name
    }
    fn begin(&mut self, _plan: &Plan<'_>) {}
    fn next_chunk(&mut self, ask: &Ask<'_>) -> usize {
        ask.remaining.min(self.size)
    }
}

/// Registers `tiles` and `pairs`, and one more policy under `extra` when given.
struct Registering {
    extra: Option<&'static str>,
}

impl Master for Registering {
    type Task = u32;
    type Result = u32;
    type Shared = ();

    fn initialize(&mut self, setup: &mut Setup) -> mw_runtime::Result<()> {
        setup.register_policy("tiles", || {
            Box::new(Fixed {
                name: "tiles",
                size: 8,
            })
        })?;
        setup.register_policy("pairs", || {
            Box::new(Fixed {
                name: "pairs",
                size: 2,
            })
        })?;
        if let Some(name) = self.extra {
            setup.register_policy(name, || {
                Box::new(Fixed {
                    name: "extra",
                    size: 1,
                })
            })?;
        }
        Ok(())
    }

    fn partition(&mut self, it: &Iteration) -> Work<(), u32> {
        Work::tasks(if it.index < 2 {
            (0..40).collect()
        } else {
            Vec::new()
        })
    }

    fn recover(&mut self, _task: TaskId, _result: u32) {}
}

#[derive(Default)]
struct Echo;

impl Worker for Echo {
    type Task = u32;
    type Result = u32;
    type Shared = ();
    fn do_work(&mut self, _shared: &(), task: &u32) -> u32 {
        *task
    }
}

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    run: RunArgs,
}

/// The configuration from `Mw.toml` text and flags, for three quiet workers.
fn config(toml: &str, flags: &[&str]) -> RunConfig {
    let file = ConfigFile::parse(toml).unwrap();
    let args = ["app", "--workers", "3", "--max-workers", "3", "--quiet"]
        .iter()
        .chain(flags);
    let cli = Cli::try_parse_from(args).unwrap();
    RunConfig {
        tuning: TuningConfig::off(),
        ..RunConfig::merge_file(&file, &cli.run).unwrap()
    }
}

/// The policies named in the metrics and the chunks of each iteration (of 40 tasks).
fn run(
    config: &RunConfig,
    extra: Option<&'static str>,
) -> mw_runtime::Result<(Vec<String>, Vec<usize>)> {
    let report = mw_runtime::run_config(config, move || Registering { extra }, Echo::default)?;
    let metrics = report.into_metrics().unwrap();
    Ok(metrics
        .iterations
        .iter()
        .map(|it| (it.policy.clone(), it.chunks))
        .unzip())
}

#[test]
fn a_registered_policy_is_chosen_by_flag() {
    let (names, chunks) = run(&config("", &["--policy", "tiles"]), None).unwrap();
    assert_eq!(names, ["tiles", "tiles"]);
    assert_eq!(chunks, [5, 5], "40 tasks in chunks of 8");
}

#[test]
fn a_registered_policy_is_chosen_by_the_file_and_the_flag_wins() {
    let file = "[run]\npolicy = \"pairs\"\n";
    let (names, chunks) = run(&config(file, &[]), None).unwrap();
    assert_eq!(names, ["pairs", "pairs"]);
    assert_eq!(chunks, [20, 20], "40 tasks in chunks of 2");
    let (names, _) = run(&config(file, &["--policy", "tiles"]), None).unwrap();
    assert_eq!(names, ["tiles", "tiles"]);
    let (names, _) = run(&config(file, &["--policy", "ss"]), None).unwrap();
    assert_eq!(names, ["ss", "ss"]);
}

#[test]
fn an_unknown_policy_lists_every_name() {
    let e = run(&config("", &["--policy", "tile"]), None).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Config { .. }), "{e}");
    let e = e.to_string();
    assert!(e.contains("unknown policy `tile`"), "{e}");
    for name in ["`daf`", "`awf-b`", "`auto`", "`tiles`", "`pairs`"] {
        assert!(e.contains(name), "{name} missing from: {e}");
    }
    assert!(e.contains("help:") && e.contains("register_policy"), "{e}");
}

#[test]
fn a_name_taken_by_a_built_in_policy_is_refused() {
    for (name, says) in [
        (
            "gss",
            "policy name `gss` is taken by the built-in policy `gss`",
        ),
        (
            "Auto",
            "policy name `Auto` is taken by the built-in policy `auto`",
        ),
        ("tiles", "policy `tiles` is registered twice"),
        ("my tiles", "`my tiles` cannot name a policy"),
    ] {
        let e = run(&config("", &["--policy", "tiles"]), Some(name)).unwrap_err();
        let e = e.to_string();
        assert!(e.contains(says), "{name}: {e}");
        assert!(e.contains("help:"), "{e}");
    }
}

/// One chunk per worker, sized by the worker's measured speed: on workers of unequal speed
/// behind a slow link, fewer messages than any built-in policy sends and no imbalance.
#[derive(Debug, Default)]
struct Proportional {
    shares: Vec<usize>,
}

impl Policy for Proportional {
    fn name(&self) -> &str {
        "proportional"
    }
    fn begin(&mut self, plan: &Plan<'_>) {
        let speeds: Vec<f64> = (0..plan.workers)
            .map(|w| plan.stats.worker(w).mean())
            .map(|mean| if mean > 0.0 { 1.0 / mean } else { 0.0 })
            .collect();
        let total: f64 = speeds.iter().sum();
        self.shares = speeds
            .iter()
            .map(|s| {
                if total > 0.0 {
                    (plan.tasks as f64 * s / total).ceil() as usize
                } else {
                    plan.tasks.div_ceil(plan.workers)
                }
            })
            .collect();
    }
    fn next_chunk(&mut self, ask: &Ask<'_>) -> usize {
        let share = self.shares.get_mut(ask.worker).map_or(0, std::mem::take);
        share.clamp(1, ask.remaining)
    }
}

/// Tasks of 1 ms, three iterations of 400, registering `proportional`.
struct Sleepy;

impl Master for Sleepy {
    type Task = u32;
    type Result = u32;
    type Shared = ();

    fn initialize(&mut self, setup: &mut Setup) -> mw_runtime::Result<()> {
        setup.register_policy("proportional", || Box::new(Proportional::default()))
    }

    fn partition(&mut self, it: &Iteration) -> Work<(), u32> {
        Work::tasks(if it.index < 3 {
            (0..400).collect()
        } else {
            Vec::new()
        })
    }

    fn recover(&mut self, _task: TaskId, _result: u32) {}
}

#[derive(Default)]
struct Sleeper;

impl Worker for Sleeper {
    type Task = u32;
    type Result = u32;
    type Shared = ();
    fn do_work(&mut self, _shared: &(), task: &u32) -> u32 {
        std::thread::sleep(std::time::Duration::from_millis(1));
        *task
    }
}

#[test]
fn auto_chooses_a_registered_policy_when_it_is_best() {
    // Workers 0 and 1 at a quarter of the others' speed, 2 ms a message: every built-in policy
    // pays for its many chunks or for the imbalance, the registered one for neither.
    let config = config(
        "",
        &[
            "--policy",
            "auto",
            "--load",
            "0:0-1:75",
            "--link-latency",
            "2",
            "--backup-after",
            "1000",
        ],
    );
    let config = RunConfig {
        workers: Some(4),
        max_workers: Some(4),
        tuning: TuningConfig {
            mode: mw_runtime::TuneMode::Factor,
            ..TuningConfig::default()
        },
        ..config
    };
    let report = mw_runtime::run_config(&config, || Sleepy, Sleeper::default).unwrap();
    let metrics = report.into_metrics().unwrap();
    let chosen = metrics
        .decisions
        .iter()
        .find(|d| d.tunable == "policy" && d.to == "proportional");
    assert!(chosen.is_some(), "{:#?}", metrics.decisions);
    assert_eq!(metrics.iterations.last().unwrap().policy, "proportional");
}

/// Starts from a registered policy and switches, from the application, to the other registered
/// one and then to a built-in one; a name nobody registered is refused when asked for.
struct Switching {
    registering: Registering,
    tunables: Option<mw_runtime::TunablesHandle>,
    refused: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Master for Switching {
    type Task = u32;
    type Result = u32;
    type Shared = ();

    fn initialize(&mut self, setup: &mut Setup) -> mw_runtime::Result<()> {
        self.tunables = Some(setup.tunables());
        self.registering.initialize(setup)
    }

    fn partition(&mut self, it: &Iteration) -> Work<(), u32> {
        let tunables = self.tunables.as_ref().unwrap();
        let policy = |name: &str| mw_runtime::TunableId::POLICY.change(name.parse().unwrap());
        match it.index {
            0 => {
                tunables.request(policy("pairs"), "test").unwrap();
                let e = tunables.request(policy("tile"), "test").unwrap_err();
                *self.refused.lock().unwrap() = e.to_string();
            }
            1 => tunables.request(policy("ss"), "test").unwrap(),
            _ => {}
        }
        Work::tasks(if it.index < 3 {
            (0..40).collect()
        } else {
            Vec::new()
        })
    }

    fn recover(&mut self, _task: TaskId, _result: u32) {}
}

#[test]
fn a_run_started_on_a_registered_policy_changes_policy_like_any_other() {
    let refused = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let shared = refused.clone();
    let report = mw_runtime::run_config(
        &config("", &["--policy", "tiles"]),
        move || Switching {
            registering: Registering { extra: None },
            tunables: None,
            refused: shared.clone(),
        },
        Echo::default,
    )
    .unwrap();
    let metrics = report.into_metrics().unwrap();
    let (names, chunks): (Vec<String>, Vec<usize>) = metrics
        .iterations
        .iter()
        .map(|it| (it.policy.clone(), it.chunks))
        .unzip();
    assert_eq!(names, ["tiles", "pairs", "ss"]);
    assert_eq!(chunks, [5, 20, 40]);
    let decisions: Vec<(String, String)> = metrics
        .decisions
        .iter()
        .map(|d| (d.from.to_string(), d.to.to_string()))
        .collect();
    assert_eq!(
        decisions,
        [
            ("\"tiles\"".to_owned(), "\"pairs\"".to_owned()),
            ("\"pairs\"".to_owned(), "\"ss\"".to_owned())
        ]
    );
    let refused = refused.lock().unwrap().clone();
    assert!(refused.contains("no policy is named `tile`"), "{refused}");
    assert!(
        refused.contains("help:") && refused.contains("`tiles`, `pairs`"),
        "{refused}"
    );
}

/// Registers `tiles` and keeps what each iteration says the policy is.
struct Seeing {
    seen: std::sync::Arc<std::sync::Mutex<Vec<mw_runtime::PolicyChoice>>>,
}

impl Master for Seeing {
    type Task = u32;
    type Result = u32;
    type Shared = ();

    fn initialize(&mut self, setup: &mut Setup) -> mw_runtime::Result<()> {
        setup.register_policy("tiles", || {
            Box::new(Fixed {
                name: "tiles",
                size: 8,
            })
        })
    }

    fn partition(&mut self, it: &Iteration) -> Work<(), u32> {
        self.seen.lock().unwrap().push(it.policy.clone());
        Work::tasks(if it.index < 2 {
            (0..40).collect()
        } else {
            Vec::new()
        })
    }

    fn recover(&mut self, _task: TaskId, _result: u32) {}
}

#[test]
fn the_iteration_names_the_registered_policy_running() {
    let seen = std::sync::Arc::default();
    let master = {
        let seen = std::sync::Arc::clone(&seen);
        move || Seeing { seen }
    };
    mw_runtime::run_config(&config("", &["--policy", "tiles"]), master, Echo::default).unwrap();
    let tiles = mw_runtime::PolicyChoice::Registered("tiles".into());
    assert_eq!(*seen.lock().unwrap(), vec![tiles; 3]);
}

/// A program's tunlet for `policy`: proposes `pairs` while another policy runs.
#[derive(Debug)]
struct ToPairs;

impl mw_runtime::tuning::Tunlet for ToPairs {
    fn tunable(&self) -> mw_runtime::Tunable {
        mw_runtime::TunableId::POLICY.tunable()
    }

    fn propose(
        &mut self,
        view: &mw_runtime::tuning::TunerView<'_>,
    ) -> Option<mw_runtime::tuning::Proposal> {
        let pairs = mw_runtime::PolicyChoice::Registered("pairs".into());
        (*view.policy() != pairs).then(|| {
            mw_runtime::tuning::Proposal::new(
                mw_runtime::TunableId::POLICY,
                pairs,
                0.6,
                "pairs balance better",
            )
        })
    }
}

/// Registers `tiles` and `pairs` and adds [`ToPairs`].
struct Proposing(Registering);

impl Master for Proposing {
    type Task = u32;
    type Result = u32;
    type Shared = ();

    fn initialize(&mut self, setup: &mut Setup) -> mw_runtime::Result<()> {
        setup.tunlet(Box::new(ToPairs));
        self.0.initialize(setup)
    }

    fn partition(&mut self, it: &Iteration) -> Work<(), u32> {
        Work::tasks(if it.index < 4 {
            (0..40).collect()
        } else {
            Vec::new()
        })
    }

    fn recover(&mut self, _task: TaskId, _result: u32) {}
}

#[test]
fn a_programs_tunlet_moves_from_one_registered_policy_to_another() {
    // Each registered policy has a number of its own: a proposal from `tiles` to `pairs` is a
    // change, not one number to itself.
    let config = RunConfig {
        tuning: TuningConfig {
            mode: mw_runtime::TuneMode::Factor,
            ..TuningConfig::default()
        },
        ..config("", &["--policy", "tiles"])
    };
    let report = mw_runtime::run_config(
        &config,
        || Proposing(Registering { extra: None }),
        Echo::default,
    )
    .unwrap();
    let metrics = report.into_metrics().unwrap();
    let moved = metrics
        .decisions
        .iter()
        .any(|d| d.tunable == "policy" && d.from == "tiles" && d.to == "pairs");
    assert!(moved, "{:#?}", metrics.decisions);
}
