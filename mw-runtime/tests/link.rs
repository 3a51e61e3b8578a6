//! The emulated network of the local backend: the tuner's fit of `mo` and `k` recovers the
//! link's latency and bandwidth, and bad values are refused before anything runs.
#![allow(clippy::unwrap_used)]

use mw_runtime::prelude::*;
use mw_runtime::{EmulatedLink, PolicyName, RunConfig, TuningConfig};

#[derive(Debug, Clone, PartialEq, Message)]
struct Job {
    index: u32,
    data: Vec<u8>,
}

/// Tasks of 1 ms carrying 2,000 bytes out and 500 back, cut by factoring into chunks of many
/// sizes, so that message sizes vary and `k` can be told from `mo`.
struct Bag {
    iterations: usize,
    recovered: usize,
}

impl Master for Bag {
    type Task = Job;
    type Result = Job;
    type Shared = ();

    fn partition(&mut self, it: &Iteration) -> Work<(), Job> {
        let tasks = if it.index < self.iterations { 200 } else { 0 };
        Work::tasks(
            (0..tasks)
                .map(|index| Job {
                    index,
                    data: vec![7; 2_000],
                })
                .collect(),
        )
    }

    fn recover(&mut self, _: TaskId, result: Job) {
        assert_eq!(result.data.len(), 500);
        self.recovered += 1;
    }
}

#[derive(Default)]
struct Echo;

impl Worker for Echo {
    type Task = Job;
    type Result = Job;
    type Shared = ();

    fn do_work(&mut self, _: &(), job: &Job) -> Job {
        std::thread::sleep(std::time::Duration::from_millis(1));
        Job {
            index: job.index,
            data: vec![1; 500],
        }
    }
}

fn config(link: EmulatedLink) -> RunConfig {
    RunConfig {
        workers: Some(1),
        max_workers: Some(1),
        policy: PolicyName::Factoring.into(),
        factor: 0.5,
        backend: BackendChoice::Local,
        tuning: TuningConfig::off(),
        quiet: true,
        link: Some(link),
        ..RunConfig::default()
    }
}

/// `mo` and `k` as fitted over the last iterations of a run behind `link`: the median of the
/// last nine fits (each covers the transfers of the last four iterations), so that a few windows
/// where the machine was busy elsewhere do not decide.
fn fitted(link: EmulatedLink) -> (f64, f64) {
    let report = mw_runtime::run_config(
        &config(link),
        || Bag {
            iterations: 16,
            recovered: 0,
        },
        Echo::default,
    )
    .unwrap();
    let metrics = report.into_metrics().unwrap();
    let median = |f: &dyn Fn(&mw_runtime::metrics::IterationMetrics) -> f64| {
        let mut v: Vec<f64> = metrics.iterations.iter().rev().take(9).map(f).collect();
        v.sort_by(f64::total_cmp);
        v[4]
    };
    (
        median(&|i| i.mo_ms.unwrap()),
        median(&|i| i.k_ms_per_byte.unwrap()),
    )
}

#[test]
fn the_fit_recovers_the_links_latency_and_bandwidth() {
    let link = EmulatedLink {
        latency_ms: 0.1,
        bandwidth_mbit: Some(100.0),
    };
    let (mo, k) = fitted(link);
    // 100 Mbit/s: 12.5 bytes per µs, k = 8e-5 ms per byte.
    assert!((k / link.ms_per_byte() - 1.0).abs() < 0.1, "k = {k}");
    // The runtime's own time per message (the receiving thread waking after the message was
    // due, the engine around `do_work`) is measured per message and left out of the fit.
    assert!((mo / link.latency_ms - 1.0).abs() < 0.1, "mo = {mo}");
}

#[test]
fn a_link_that_is_not_positive_is_refused_before_the_run() {
    for (latency, bandwidth) in [(-1.0, Some(100.0)), (0.1, Some(0.0)), (f64::NAN, None)] {
        let link = EmulatedLink {
            latency_ms: latency,
            bandwidth_mbit: bandwidth,
        };
        let err = mw_runtime::run_config(
            &config(link),
            || Bag {
                iterations: 1,
                recovered: 0,
            },
            Echo::default,
        )
        .expect_err("refused");
        let text = err.to_string();
        assert!(text.contains("link_") && text.contains("help:"), "{text}");
    }
}

#[test]
fn a_link_is_refused_under_mpi() {
    let link = EmulatedLink {
        latency_ms: 0.1,
        bandwidth_mbit: Some(100.0),
    };
    let config = RunConfig {
        backend: BackendChoice::Mpi,
        ..config(link)
    };
    let err = mw_runtime::run_config(
        &config,
        || Bag {
            iterations: 1,
            recovered: 0,
        },
        Echo::default,
    )
    .expect_err("refused");
    let text = err.to_string();
    assert!(
        text.contains("--link-latency") && text.contains("help:"),
        "{text}"
    );
}

#[test]
fn link_flags_parse_and_refuse_bad_values() {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }
    let cli =
        Cli::try_parse_from(["p", "--link-latency", "0.1", "--link-bandwidth", "100"]).unwrap();
    let config = RunConfig::merge(&Default::default(), &cli.run).unwrap();
    assert_eq!(
        config.link,
        Some(EmulatedLink {
            latency_ms: 0.1,
            bandwidth_mbit: Some(100.0)
        })
    );
    for bad in [
        ["--link-latency", "-1"],
        ["--link-latency", "0"],
        ["--link-bandwidth", "fast"],
    ] {
        let err = Cli::try_parse_from(["p", bad[0], bad[1]])
            .err()
            .unwrap_or_else(|| panic!("{bad:?} was accepted"))
            .to_string();
        assert!(err.contains(bad[0]) && err.contains("\nhelp: "), "{err}");
    }
    let file = mw_runtime::ConfigFile::parse("[run]\nlink_bandwidth = -3\n").unwrap();
    let err = RunConfig::merge_file(&file, &RunArgs::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("link_bandwidth") && err.contains("help:"),
        "{err}"
    );
}
