use super::*;

#[test]
fn flags_override_the_file_which_overrides_defaults() {
    let file =
        ConfigFile::parse("[run]\nworkers = 3\nmax_workers = 6\npolicy = \"fsc\"\nfactor = 0.25\n")
            .unwrap();
    let args = RunArgs {
        policy: Some(PolicyName::Static.into()),
        ..RunArgs::default()
    };
    let config = RunConfig::merge(&file.run, &args).unwrap();
    assert_eq!((config.workers, config.max_workers), (Some(3), Some(6)));
    assert_eq!(config.tunables(6).nworkers, 3);
    assert_eq!(config.policy, PolicyName::Static.into());
    assert_eq!(config.factor, 0.25);
    assert_eq!(config.protocol, Protocol::Async);
}

#[test]
fn workers_alone_sets_the_pool_unless_nworkers_is_tuned() {
    let merged = |args: RunArgs| RunConfig::merge(&RunSection::default(), &args).unwrap();
    let config = merged(RunArgs {
        workers: Some(5),
        tune: Some(TuneMode::Off),
        ..RunArgs::default()
    });
    assert_eq!(config.local_pool(), 5);
    assert_eq!(config.tunables(5).nworkers, 5);
    // Tuned (the default): room to grow, starting at --workers.
    let config = merged(RunArgs {
        workers: Some(5),
        ..RunArgs::default()
    });
    let pool = config.local_pool();
    assert_eq!(pool, default_tuned_pool().max(5));
    assert_eq!(config.local_start(pool), 5);
    let config = merged(RunArgs {
        workers: Some(40),
        tune: Some(TuneMode::Factor),
        ..RunArgs::default()
    });
    assert_eq!(config.local_pool(), 40);
    let config = merged(RunArgs {
        max_workers: Some(7),
        ..RunArgs::default()
    });
    assert_eq!((config.local_pool(), config.tunables(7).nworkers), (7, 7));
    // Under MPI the pool is what was launched; `workers` is capped by it.
    let config = merged(RunArgs {
        workers: Some(9),
        ..RunArgs::default()
    });
    assert_eq!(config.tunables(4).nworkers, 4);
}

#[test]
fn invalid_values_are_refused_with_help() {
    let bad = |section: &str| {
        let file = ConfigFile::parse(section).unwrap();
        RunConfig::merge(&file.run, &RunArgs::default())
            .unwrap_err()
            .to_string()
    };
    let e = bad("[run]\nfactor = 1.5");
    assert!(
        e.contains("`factor` = 1.5 is out of range") && e.contains("help:"),
        "{e}"
    );
    // The flag's factor is checked where the file's is, with the same words.
    let flag = |factor: f64| {
        let args = RunArgs {
            factor: Some(factor),
            ..RunArgs::default()
        };
        RunConfig::merge(&ConfigFile::default().run, &args)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(flag(1.5), e);
    assert!(flag(-1.0).contains("`factor` = -1 is out of range"));
    let e = bad("[run]\nworkers = 0");
    assert!(e.contains("a run with 0 workers"), "{e}");
    let e = bad("[run]\nworkers = 4\nmax_workers = 2");
    assert!(e.contains("more than `max_workers`"), "{e}");
}

#[test]
fn absurd_worker_counts_are_refused_before_anything_runs() {
    let file = ConfigFile::parse("[run]\nmax_workers = 9223372036854775807").unwrap();
    let e = RunConfig::merge(&file.run, &RunArgs::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`max_workers` = 9223372036854775807 is more than 4096 workers")
            && e.contains("help:"),
        "{e}"
    );
    let args = RunArgs {
        workers: Some(100_000),
        ..RunArgs::default()
    };
    let e = RunConfig::merge(&ConfigFile::default().run, &args)
        .unwrap_err()
        .to_string();
    assert!(e.contains("`workers` = 100000 is more than 4096"), "{e}");
    let fine = RunArgs {
        workers: Some(MAX_WORKERS),
        ..RunArgs::default()
    };
    RunConfig::merge(&ConfigFile::default().run, &fine).unwrap();
}

#[test]
fn prefetch_defaults_to_one_chunk_ahead_under_async_only() {
    let merged = |section: &str, args: RunArgs| {
        let file = ConfigFile::parse(section).unwrap();
        RunConfig::merge(&file.run, &args)
    };
    let config = merged("", RunArgs::default()).unwrap();
    assert_eq!(config.prefetch_depth(), 1);
    let sync = RunArgs {
        protocol: Some(Protocol::Sync),
        ..RunArgs::default()
    };
    assert_eq!(merged("", sync.clone()).unwrap().prefetch_depth(), 0);
    let config = merged(
        "[run]
prefetch = 3
",
        RunArgs::default(),
    )
    .unwrap();
    assert_eq!(config.prefetch_depth(), 3);
    let off = RunArgs {
        prefetch: Some(0),
        ..RunArgs::default()
    };
    assert_eq!(
        merged(
            "[run]
prefetch = 3
",
            off
        )
        .unwrap()
        .prefetch_depth(),
        0
    );
    // Asked for under sync, or too deep: refused, saying what to do.
    let e = merged(
        "[run]
prefetch = 1
",
        sync,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("`prefetch` = 1 needs the async protocol") && e.contains("--prefetch 0"),
        "{e}"
    );
    let e = merged(
        "[run]
prefetch = 20
",
        RunArgs::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("more than 8 chunks") && e.contains("help:"),
        "{e}"
    );
}

#[test]
fn unknown_keys_and_policies_in_the_file_are_reported_with_position() {
    let e = ConfigFile::parse("[run]\nwokers = 2\n").unwrap_err();
    assert!(e.contains("wokers") && e.contains("line 2"), "{e}");
    let e = ConfigFile::parse("[run]\npolicy = \"round robin\"\n").unwrap_err();
    assert!(e.contains("round robin"), "{e}");
    // Any other name may be one the program registers: it is looked up when the run starts.
    let file = ConfigFile::parse("[run]\npolicy = \"round-robin\"\n").unwrap();
    let config = RunConfig::merge(&file.run, &RunArgs::default()).unwrap();
    assert_eq!(
        config.policy,
        PolicyChoice::Registered("round-robin".into())
    );
    assert!(ConfigFile::parse("[project]\nname = \"fire\"\nin = \"struct A {}\"\n").is_ok());
}

#[test]
fn flags_are_checked_by_clap() {
    #[derive(clap::Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }
    use clap::Parser;
    // A factor's range is checked with the configuration's (`invalid_values_are_refused_with_help`).
    assert!(Cli::try_parse_from(["app", "--factor", "x"]).is_err());
    let zero = Cli::try_parse_from(["app", "--factor", "0"]).unwrap();
    let e = RunConfig::merge(&ConfigFile::default().run, &zero.run).unwrap_err();
    assert!(
        e.to_string().contains("`factor` = 0 is out of range"),
        "{e}"
    );
    assert!(Cli::try_parse_from(["app", "--workers", "0"]).is_err());
    assert!(Cli::try_parse_from(["app", "--policy", "no pe"]).is_err());
    assert!(Cli::try_parse_from(["app", "--policy", ""]).is_err());
    let named = Cli::try_parse_from(["app", "--policy", "guided-tile"]).unwrap();
    assert_eq!(
        named.run.policy,
        Some(PolicyChoice::Registered("guided-tile".into()))
    );
    assert!(Cli::try_parse_from(["app", "--prefetch", "x"]).is_err());
    assert!(Cli::try_parse_from(["app", "--trace-limit", "-1"]).is_err());
    let ok = Cli::try_parse_from([
        "app",
        "--workers",
        "2",
        "--policy",
        "fsc",
        "--protocol",
        "sync",
    ])
    .unwrap();
    assert_eq!(ok.run.workers, Some(2));
    assert_eq!(ok.run.protocol, Some(Protocol::Sync));
}

#[test]
fn the_tuning_table_and_flags_merge() {
    let file = ConfigFile::parse(
        "[tuning]\ntune = \"workers\"\nmin_workers = 2\nmax_workers = 12\npersistence = 3\n\
         objective = \"time\"\ncontrol = \"127.0.0.1:0\"\n",
    )
    .unwrap();
    let config = RunConfig::merge_file(&file, &RunArgs::default()).unwrap();
    assert_eq!(config.tuning.mode, TuneMode::Workers);
    assert_eq!(config.tuning.range(32), (2, 12));
    assert_eq!(config.tuning.range(8), (2, 8));
    assert_eq!(config.tuning.persistence, 3);
    assert_eq!(config.tuning.objective, Some(Objective::Time));
    assert!(matches!(config.control, Some(ControlAddr::Tcp(_))));
    // Without a pool bound, the local pool is the tuner's upper bound.
    assert_eq!(config.local_pool(), 12);
    let flags = RunArgs {
        tune: Some(TuneMode::Off),
        ..RunArgs::default()
    };
    let config = RunConfig::merge_file(&file, &flags).unwrap();
    assert_eq!(config.tuning.mode, TuneMode::Off);
    assert_eq!(RunConfig::default().tuning.mode, TuneMode::On);
}

#[test]
fn bad_tuning_values_are_refused_with_help() {
    let bad = |text: &str| {
        let file = ConfigFile::parse(text).unwrap();
        RunConfig::merge_file(&file, &RunArgs::default())
            .unwrap_err()
            .to_string()
    };
    let e = bad("[tuning]\nmin_workers = 8\nmax_workers = 4\n");
    assert!(
        e.contains("less than `min_workers`") && e.contains("help:"),
        "{e}"
    );
    let e = bad("[tuning]\npersistence = 0\n");
    assert!(e.contains("persistence") && e.contains("help:"), "{e}");
    let e = bad("[tuning]\ncontrol = \"0.0.0.0:7000\"\n");
    assert!(e.contains("not a loopback address"), "{e}");
    let e = ConfigFile::parse("[tuning]\ntune = \"maybe\"\n").unwrap_err();
    assert!(e.contains("maybe"), "{e}");
    let e = ConfigFile::parse("[tuning]\nobjective = \"speed\"\n").unwrap_err();
    assert!(e.contains("speed"), "{e}");
}

#[test]
fn tuning_and_control_flags_parse() {
    #[derive(clap::Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }
    use clap::Parser;
    let ok =
        Cli::try_parse_from(["app", "--tuning", "factor", "--control", "/tmp/x.sock"]).unwrap();
    assert_eq!(ok.run.tune, Some(TuneMode::Factor));
    assert_eq!(
        ok.run.control,
        Some(ControlAddr::Unix(std::path::PathBuf::from("/tmp/x.sock")))
    );
    let ok = Cli::try_parse_from(["app", "--control", "localhost:7070"]).unwrap();
    assert_eq!(
        ok.run.control,
        Some(ControlAddr::Tcp("127.0.0.1:7070".parse().unwrap()))
    );
    assert!(Cli::try_parse_from(["app", "--tuning", "sometimes"]).is_err());
    // `mpirun` takes `--tune FILE` for itself wherever it appears, so the flag is not `--tune`.
    assert!(Cli::try_parse_from(["app", "--tune", "off"]).is_err());
    assert!(Cli::try_parse_from(["app", "--control", "192.168.1.2:80"]).is_err());
}

#[test]
fn quiet_comes_from_the_flag_or_the_file() {
    let file = ConfigFile::parse("[run]\nquiet = true\n").unwrap();
    let config = RunConfig::merge(&file.run, &RunArgs::default()).unwrap();
    assert!(config.quiet);
    let args = RunArgs {
        quiet: true,
        ..RunArgs::default()
    };
    assert!(
        RunConfig::merge(&RunSection::default(), &args)
            .unwrap()
            .quiet
    );
    assert!(
        !RunConfig::merge(&RunSection::default(), &RunArgs::default())
            .unwrap()
            .quiet
    );
}

#[test]
fn the_trace_comes_from_the_flags_or_the_file() {
    let file = ConfigFile::parse("[run]\ntrace = \"run.trace.json\"\ntrace_limit = 50\n").unwrap();
    let config = RunConfig::merge(&file.run, &RunArgs::default()).unwrap();
    assert_eq!(config.trace.as_deref(), Some(Path::new("run.trace.json")));
    assert_eq!(config.trace_limit, 50);
    let args = RunArgs {
        trace: Some("other.json".into()),
        ..RunArgs::default()
    };
    let config = RunConfig::merge(&file.run, &args).unwrap();
    assert_eq!(config.trace.as_deref(), Some(Path::new("other.json")));
    let config = RunConfig::merge(&RunSection::default(), &RunArgs::default()).unwrap();
    assert_eq!((config.trace, config.trace_limit), (None, 1_000_000));
}

#[test]
fn load_comes_from_the_flag_or_the_file() {
    use crate::load::LoadPattern;
    #[derive(clap::Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }
    use clap::Parser;
    let file = ConfigFile::parse("[run]\nload = \"increasing:4\"\n").unwrap();
    let config = RunConfig::merge(&file.run, &RunArgs::default()).unwrap();
    assert_eq!(
        config.load,
        LoadPattern::Increasing {
            period: 4,
            percent: 75.0
        }
    );
    let flags = Cli::try_parse_from(["app", "--load", "0:0-3:75,8:0-3:0"]).unwrap();
    let config = RunConfig::merge(&file.run, &flags.run).unwrap();
    assert_eq!(config.load.percent(3, 7), 75.0);
    assert_eq!(config.load.percent(3, 8), 0.0);
    let config = RunConfig::merge(&RunSection::default(), &RunArgs::default()).unwrap();
    assert_eq!(config.load, LoadPattern::None);
}

#[test]
fn bad_load_patterns_are_refused_with_help() {
    #[derive(clap::Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }
    use clap::Parser;
    let e = Cli::try_parse_from(["app", "--load", "0:0-3:100"])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("load 100 % is out of range") && e.contains("help:"),
        "{e}"
    );
    let e = ConfigFile::parse("[run]\nworkers = 2\nload = \"sometimes\"\n").unwrap_err();
    assert!(
        e.contains("unknown load pattern `sometimes`") && e.contains("line 3"),
        "{e}"
    );
}

#[test]
fn the_objective_flag_overrides_the_file() {
    #[derive(clap::Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }
    use clap::Parser;
    let cli = Cli::try_parse_from(["app", "--objective", "time"]).unwrap();
    let file = ConfigFile::parse("[tuning]\nobjective = \"index\"\n").unwrap();
    let config = RunConfig::merge_file(&file, &cli.run).unwrap();
    assert_eq!(config.tuning.objective, Some(Objective::Time));
    // Also through `merge`, which reads only a `[run]` table.
    let config = RunConfig::merge(&file.run, &cli.run).unwrap();
    assert_eq!(config.tuning.objective, Some(Objective::Time));
    assert!(Cli::try_parse_from(["app", "--objective", "speed"]).is_err());
}

#[test]
fn negative_numbers_get_the_rule_not_an_unexpected_argument() {
    #[derive(clap::Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }
    use clap::Parser;
    for (flag, rule) in [
        ("--workers", "must be at least 1"),
        ("--max-workers", "must be at least 1"),
        ("--min-chunk", "must be at least 1"),
        ("--prefetch", "must be 0 or more"),
        ("--trace-limit", "must be 0 or more"),
    ] {
        let error = Cli::try_parse_from(["app", flag, "-1"])
            .unwrap_err()
            .to_string();
        assert!(error.contains(rule), "{flag}: {error}");
        assert!(!error.contains("unexpected argument"), "{flag}: {error}");
    }
}

#[test]
fn absurd_sizes_are_refused_with_their_limit_on_the_command_line_and_in_the_file() {
    #[derive(clap::Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }
    use clap::Parser;
    let huge = "18446744073709551615";
    let cases = [
        ("--workers", huge, "workers", "more than 4096 workers"),
        (
            "--max-workers",
            "100000",
            "max_workers",
            "more than 4096 workers",
        ),
        ("--prefetch", "9", "prefetch", "more than 8 chunks"),
        (
            "--min-chunk",
            huge,
            "min_chunk",
            "more than 1000000000 tasks",
        ),
        (
            "--trace-limit",
            huge,
            "trace_limit",
            "more than 100000000 events",
        ),
    ];
    for (flag, value, key, limit) in cases {
        let cli = Cli::try_parse_from(["app", flag, value]).unwrap();
        let e = RunConfig::merge_file(&ConfigFile::default(), &cli.run)
            .unwrap_err()
            .to_string();
        assert!(e.contains(limit) && e.contains("\nhelp: "), "{flag}: {e}");
        let file = ConfigFile::parse(&format!("[run]\n{key} = {value}\n")).unwrap();
        let e = RunConfig::merge_file(&file, &RunArgs::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains(limit) && e.contains("\nhelp: "), "{key}: {e}");
    }
    let file = ConfigFile::parse(&format!("[tuning]\nmin_workers = {huge}\n")).unwrap();
    let e = RunConfig::merge_file(&file, &RunArgs::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`[tuning] min_workers`") && e.contains("help:"),
        "{e}"
    );
    // The limits themselves are accepted.
    let at_limits = RunArgs {
        min_chunk: Some(MAX_MIN_CHUNK),
        trace_limit: Some(MAX_TRACE_LIMIT),
        prefetch: Some(MAX_PREFETCH),
        ..RunArgs::default()
    };
    RunConfig::merge_file(&ConfigFile::default(), &at_limits).unwrap();
}

#[test]
fn the_objective_follows_what_a_parked_worker_costs_unless_configured() {
    #[derive(clap::Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }
    use clap::Parser;
    let none = Cli::try_parse_from(["app"]).unwrap().run;
    let config = RunConfig::merge_file(&ConfigFile::default(), &none).unwrap();
    assert_eq!(config.tuning.objective, None);
    assert_eq!(
        config.tuning.objective_for(false, "mpi"),
        (
            Objective::Time,
            "parked MPI ranks keep their allocation".to_owned()
        )
    );
    assert_eq!(
        config.tuning.objective_for(true, "local"),
        (
            Objective::Index,
            "parked worker threads are released".to_owned()
        )
    );
    // A flag or the file wins, whatever a parked worker costs.
    let flag = Cli::try_parse_from(["app", "--objective", "index"])
        .unwrap()
        .run;
    let file = ConfigFile::parse("[tuning]\nobjective = \"index\"\n").unwrap();
    for config in [
        RunConfig::merge_file(&ConfigFile::default(), &flag).unwrap(),
        RunConfig::merge_file(&file, &none).unwrap(),
    ] {
        for released in [false, true] {
            assert_eq!(
                config.tuning.objective_for(released, "mpi"),
                (Objective::Index, "configured".to_owned())
            );
        }
    }
}

#[test]
fn a_named_network_sets_the_link_and_the_flags_override_its_parts() {
    #[derive(clap::Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }
    use clap::Parser;
    let link = |argv: &[&str], file: &str| {
        let flags = Cli::try_parse_from(argv).unwrap();
        let file = ConfigFile::parse(file).unwrap();
        RunConfig::merge(&file.run, &flags.run).unwrap().link
    };
    let gigabit = EmulatedLink {
        latency_ms: 0.05,
        bandwidth_mbit: Some(1000.0),
    };
    assert_eq!(link(&["app", "--link", "gigabit"], ""), Some(gigabit));
    assert_eq!(link(&["app"], "[run]\nlink = \"gigabit\"\n"), Some(gigabit));
    // The flag wins over the file; a latency or bandwidth flag overrides that part only.
    assert_eq!(
        link(
            &["app", "--link", "10-gigabit"],
            "[run]\nlink = \"gigabit\"\n"
        ),
        Some(LinkPreset::TenGigabit.link())
    );
    assert_eq!(
        link(
            &["app", "--link", "fast-ethernet", "--link-latency", "0.3"],
            ""
        ),
        Some(EmulatedLink {
            latency_ms: 0.3,
            bandwidth_mbit: Some(100.0),
        })
    );
    assert_eq!(link(&["app"], ""), None);
    // An unknown network lists the known ones.
    let error = Cli::try_parse_from(["app", "--link", "ethernet"])
        .unwrap_err()
        .to_string();
    for name in ["fast-ethernet", "gigabit", "10-gigabit", "infiniband"] {
        assert!(error.contains(name), "{error}");
    }
    assert!(ConfigFile::parse("[run]\nlink = \"ethernet\"\n").is_err());
}

/// `--config` as a user gives it.
fn load(path: &Path) -> String {
    let args = RunArgs {
        config: Some(path.to_owned()),
        ..RunArgs::default()
    };
    RunConfig::resolve(&args).unwrap_err().to_string()
}

#[test]
fn a_missing_configuration_is_not_found_with_help() {
    let e = load(Path::new("/nonexistent/Mw.toml"));
    assert_eq!(
        e,
        "error: the configuration file `/nonexistent/Mw.toml` was not found\nhelp: check the \
         path given to --config, or leave --config out (a run reads `Mw.toml` of the current \
         directory when there is one)"
    );
    let e = load(Path::new("/dev/zero"));
    assert_eq!(
        e,
        "error: cannot read the configuration file `/dev/zero`: it is a character device, not \
         a regular file\nhelp: give --config a TOML file such as the `Mw.toml` that `mwgen new` \
         writes"
    );
}

#[cfg(unix)]
#[test]
fn a_configuration_others_may_write_steers_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("Mw.toml");
    std::fs::write(&path, "[run]\nmetrics = \"/etc/steered.json\"\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o646)).unwrap();
    let e = load(&path);
    let shown = path.display();
    assert_eq!(
        e,
        format!(
            "error: the configuration file `{shown}` is not read: every other user may write it \
             (mode 646), and a configuration decides where a run writes\nhelp: make it yours and \
             private (`chmod go-w {shown}`, as its owner), or copy it to a file of your own and \
             pass that with --config"
        )
    );
}

#[test]
fn a_malformed_configuration_says_where_and_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("Mw.toml");
    std::fs::write(&path, "[run]\nworkers = \"many\"\n").unwrap();
    let e = load(&path);
    assert!(
        e.starts_with(&format!(
            "error: invalid configuration file `{}`: ",
            path.display()
        )) && e.contains("\nhelp: fix it where shown"),
        "{e}"
    );
}

/// `--help` is read in a terminal: rustdoc's link syntax must not show there.
#[test]
fn the_help_shows_no_rustdoc_links() {
    use clap::CommandFactory;
    #[derive(clap::Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }
    let help = Cli::command().render_long_help().to_string();
    for link in ["[`", "](", "crate::"] {
        assert!(!help.contains(link), "`{link}` in:\n{help}");
    }
    assert!(help.contains("its `task_failed` hook"), "{help}");
}
