//! Which launcher started this process, as the environment it set tells: Open MPI's `mpirun`
//! (4 or 5), the `mpiexec` of MPICH and Intel MPI (hydra), or Slurm's `srun`.
//!
//! `mpirun` and `mpiexec` are asked first: inside a Slurm allocation they start their daemons
//! with `srun`, so their ranks also carry the `SLURM_*` variables of a step, with the daemon's
//! numbers, not theirs.

use crate::error::Error;

/// A launch of several processes by `mpirun`, `mpiexec` or `srun`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Launch {
    pub launcher: Launcher,
    /// Processes started.
    pub size: usize,
    /// This process's number among them, when the launcher says.
    pub rank: Option<usize>,
    /// Processes started on this node, when the launcher says.
    pub local: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Launcher {
    /// Open MPI's `mpirun` (4's ORTE or 5's PRRTE), or another launcher that speaks PMI.
    Mpirun,
    /// Hydra, the `mpiexec` of MPICH and of Intel MPI.
    Hydra,
    Srun,
}

// Only the MPI backend reports a launch of too few processes; the tests check it in every build.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
impl Launcher {
    /// The command that launches `n` processes, for help messages.
    fn example(self, n: usize) -> String {
        match self {
            Launcher::Mpirun => format!("mpirun -np {n} ..."),
            Launcher::Hydra => format!("mpiexec -n {n} ..."),
            Launcher::Srun => format!("srun -n {n} ..."),
        }
    }

    /// The launcher's command, and whose it is.
    fn name(self) -> &'static str {
        match self {
            Launcher::Mpirun => "`mpirun`",
            Launcher::Hydra => "`mpiexec` (hydra, of MPICH or Intel MPI)",
            Launcher::Srun => "`srun`",
        }
    }
}

impl std::fmt::Display for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.launcher {
            Launcher::Mpirun => write!(f, "mpirun with {} processes", self.size),
            Launcher::Hydra => write!(f, "mpiexec with {} processes", self.size),
            Launcher::Srun => write!(f, "srun with {} tasks", self.size),
        }
    }
}

/// Sizes and ranks set by `mpirun` and by the PMI libraries that MPI implementations and `srun
/// --mpi=pmi2|pmix` share.
const MPI_SIZE: [&str; 3] = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"];
const MPI_RANK: [&str; 3] = ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"];
/// Processes on this node: Open MPI's `mpirun`, and hydra's (MPICH and Intel MPI).
const LOCAL_SIZE: [&str; 2] = ["OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"];
/// Set by hydra alone (its proxies' control socket, and the local count `mpirun` spells
/// otherwise); `PMI_SIZE` alone may also come from `srun --mpi=pmi2`.
const HYDRA: [&str; 2] = ["HYDI_CONTROL_FD", "MPI_LOCALNRANKS"];

/// The launch of this process; `None` when it was started on its own.
pub(crate) fn detect() -> Option<Launch> {
    detect_in(|key| std::env::var(key).ok())
}

/// [`detect`] over any environment (`var` returns a variable's value).
pub(crate) fn detect_in(var: impl Fn(&str) -> Option<String>) -> Option<Launch> {
    let number = |key: &str| var(key)?.trim().parse::<usize>().ok();
    let first = |keys: &[&str]| keys.iter().find_map(|key| number(key));
    let rank = first(&MPI_RANK);
    let local = first(&LOCAL_SIZE);
    if let Some(size) = number("OMPI_COMM_WORLD_SIZE") {
        let launcher = Launcher::Mpirun;
        return Some(Launch {
            launcher,
            size,
            rank,
            local,
        });
    }
    if let Some(size) = number("PMI_SIZE").filter(|_| HYDRA.iter().any(|k| var(k).is_some())) {
        let launcher = Launcher::Hydra;
        return Some(Launch {
            launcher,
            size,
            rank,
            local,
        });
    }
    // A step of `srun`, not the batch script of `sbatch` (which has the job's task count and
    // process id 0, but no step id). Older Slurm spells the step id `SLURM_STEPID`.
    let in_step = var("SLURM_STEP_ID")
        .or_else(|| var("SLURM_STEPID"))
        .is_some();
    let task = number("SLURM_PROCID");
    if in_step && task.is_some() {
        let size = first(&["SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"])?;
        return Some(Launch {
            launcher: Launcher::Srun,
            size,
            rank: rank.or(task),
            local: local.or_else(|| slurm_local_tasks(&var)),
        });
    }
    let size = first(&MPI_SIZE)?;
    Some(Launch {
        launcher: Launcher::Mpirun,
        size,
        rank,
        local,
    })
}

/// The tasks of this node in a step of `srun`: `SLURM_STEP_TASKS_PER_NODE` lists them by node
/// (`2(x3),1`: 2 on each of the first three nodes, 1 on the fourth), `SLURM_NODEID` is this
/// node's place in the list.
fn slurm_local_tasks(var: &impl Fn(&str) -> Option<String>) -> Option<usize> {
    let list = var("SLURM_STEP_TASKS_PER_NODE").or_else(|| var("SLURM_TASKS_PER_NODE"))?;
    let mut node: usize = var("SLURM_NODEID")?.trim().parse().ok()?;
    for group in list.split(',') {
        let (tasks, times) = match group.split_once("(x") {
            Some((tasks, times)) => (tasks, times.trim_end_matches(')').parse().ok()?),
            None => (group, 1),
        };
        if node < times {
            return tasks.trim().parse().ok();
        }
        node -= times;
    }
    None
}

/// Set in the environment of a worker the master spawned (`MPI_Comm_spawn`, under
/// `--max-workers` above the launched ranks): its index, the pool and the master's lifeline.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) const SPAWNED_WORKER: &str = "MW_SPAWNED_WORKER";

/// Whether the master spawned this process as a worker.
pub(crate) fn is_spawned_worker() -> bool {
    std::env::var_os(SPAWNED_WORKER).is_some()
}

/// Whether this process is one of several launched ones, other than the first, or a spawned
/// worker.
pub(crate) fn is_worker_rank() -> bool {
    is_spawned_worker() || detect().is_some_and(|launch| launch.rank.is_some_and(|rank| rank != 0))
}

/// The MPI library whose headers this build was compiled against, as its build script read
/// them from `mpi.h` (`Open MPI 4.1.4`, `MPICH 5.0.2`, `Intel MPI 2021.19.0`); `None` in a build
/// without the MPI backend.
pub(crate) const BUILT_AGAINST: Option<&str> = option_env!("MW_MPI_HEADERS");

/// The error of the MPI backend when MPI sees `seen` processes, fewer than the 2 it needs: the
/// same under every launcher, with its launch line. When the launcher started more than MPI
/// sees, each process is alone in a job of its own: the launcher is another MPI library's (hydra
/// starting an Open MPI build), and running would make copies of a one-process job.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn too_few_processes(seen: usize, launch: Option<Launch>) -> Error {
    if let Some(launch) = launch.filter(|l| l.size > seen) {
        let ours = BUILT_AGAINST.unwrap_or("another MPI library");
        return Error::config(
            format!(
                "error: {} started {} processes, but MPI sees {seen} in this one's job: the \
                 launcher belongs to another MPI library than the one this program was built \
                 against ({ours}), so every process would run alone as rank 0",
                launch.launcher.name(),
                launch.size
            ),
            format!(
                "launch it with the `mpirun` or `mpiexec` of {ours} (the one next to the \
                 `mpicc` it was built with), or rebuild it against the launcher's library \
                 (`MPICC=<that library's mpicc> cargo build --features mpi`)"
            ),
        );
    }
    let launcher = launch.map_or(Launcher::Mpirun, |l| l.launcher);
    let by = match launch {
        Some(launch) => format!(" by {}", launch.launcher.name()),
        None => String::new(),
    };
    Error::config(
        format!(
            "error: the MPI backend needs a master and at least one worker, but {seen} process \
             was launched{by}"
        ),
        format!(
            "launch 2 or more processes, e.g. `{}`, or run on threads with `--backend local`",
            launcher.example(5)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(vars: &[(&str, &str)]) -> Option<Launch> {
        detect_in(|key| {
            vars.iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn a_process_started_on_its_own_has_no_launch() {
        assert_eq!(launch(&[]), None);
        assert_eq!(launch(&[("HOME", "/root")]), None);
    }

    #[test]
    fn mpirun_is_recognized_by_its_variables() {
        // Open MPI 4.1's mpirun, and 5's (PRRTE), which sets the same and `PRTE_LAUNCHED`.
        let open_mpi_4 = [
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_COMM_WORLD_RANK", "2"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "4"),
            ("PMIX_RANK", "2"),
        ];
        assert_eq!(
            launch(&open_mpi_4),
            Some(Launch {
                launcher: Launcher::Mpirun,
                size: 4,
                rank: Some(2),
                local: Some(4),
            })
        );
        let mut open_mpi_5 = open_mpi_4.to_vec();
        open_mpi_5.extend([("PRTE_LAUNCHED", "1"), ("OMPI_VERSION", "5.0.11")]);
        assert_eq!(launch(&open_mpi_5), launch(&open_mpi_4));
        // Without any of its own variables, PMI's numbers are mpirun's.
        let pmi = [("PMI_SIZE", "3"), ("PMI_RANK", "0")];
        assert_eq!(launch(&pmi).map(|l| (l.size, l.rank)), Some((3, Some(0))));
    }

    /// What hydra (the `mpiexec` of MPICH 5 and Intel MPI) sets in the second of 3 processes.
    const HYDRA_VARS: [(&str, &str); 6] = [
        ("PMI_SIZE", "3"),
        ("PMI_RANK", "1"),
        ("PMI_FD", "11"),
        ("HYDI_CONTROL_FD", "7"),
        ("MPI_LOCALNRANKS", "3"),
        ("MPI_LOCALRANKID", "1"),
    ];

    #[test]
    fn hydra_is_recognized_by_its_own_variables() {
        assert_eq!(
            launch(&HYDRA_VARS),
            Some(Launch {
                launcher: Launcher::Hydra,
                size: 3,
                rank: Some(1),
                local: Some(3),
            })
        );
        // Inside an allocation hydra starts its proxies with srun: hydra's numbers win.
        let mut in_slurm = HYDRA_VARS.to_vec();
        in_slurm.extend([
            ("SLURM_STEP_ID", "0"),
            ("SLURM_PROCID", "0"),
            ("SLURM_STEP_NUM_TASKS", "1"),
        ]);
        assert_eq!(launch(&in_slurm), launch(&HYDRA_VARS));
    }

    /// What `srun -n 3` sets in its second task (Slurm 22.05, `--mpi=none`).
    const SRUN: [(&str, &str); 7] = [
        ("SLURM_JOB_ID", "7"),
        ("SLURM_STEP_ID", "0"),
        ("SLURM_STEPID", "0"),
        ("SLURM_PROCID", "1"),
        ("SLURM_LOCALID", "1"),
        ("SLURM_STEP_NUM_TASKS", "3"),
        ("SLURM_NTASKS", "3"),
    ];

    #[test]
    fn srun_is_recognized_by_its_step_and_task_variables() {
        assert_eq!(
            launch(&SRUN),
            Some(Launch {
                launcher: Launcher::Srun,
                size: 3,
                rank: Some(1),
                local: None,
            })
        );
        // Older Slurm: `SLURM_STEPID` and `SLURM_NPROCS` only.
        let old = [
            ("SLURM_STEPID", "0"),
            ("SLURM_PROCID", "0"),
            ("SLURM_NPROCS", "2"),
        ];
        assert_eq!(launch(&old).map(|l| (l.size, l.rank)), Some((2, Some(0))));
        // One task: a launch of one process, which `--backend auto` runs on threads.
        let one = [
            ("SLURM_STEP_ID", "0"),
            ("SLURM_PROCID", "0"),
            ("SLURM_STEP_NUM_TASKS", "1"),
        ];
        assert_eq!(launch(&one).map(|l| l.size), Some(1));
    }

    #[test]
    fn srun_with_a_pmi_plugin_numbers_ranks_as_pmi_does() {
        let mut pmix = SRUN.to_vec();
        pmix.extend([("PMIX_RANK", "1"), ("PMIX_NAMESPACE", "slurm.pmix.7.0")]);
        let seen = launch(&pmix).unwrap();
        assert_eq!(
            (seen.launcher, seen.size, seen.rank),
            (Launcher::Srun, 3, Some(1))
        );
        // pmi2 also sets the size, which is the step's.
        let mut pmi2 = SRUN.to_vec();
        pmi2.extend([("PMI_SIZE", "3"), ("PMI_RANK", "1")]);
        assert_eq!(launch(&pmi2), launch(&SRUN));
    }

    #[test]
    fn srun_says_the_tasks_of_each_node_in_a_list() {
        let on = |node: &str, list: &str| {
            let mut vars = SRUN.to_vec();
            vars.extend([("SLURM_NODEID", node), ("SLURM_STEP_TASKS_PER_NODE", list)]);
            launch(&vars).and_then(|l| l.local)
        };
        assert_eq!(on("0", "3"), Some(3));
        assert_eq!(on("2", "2(x3),1"), Some(2));
        assert_eq!(on("3", "2(x3),1"), Some(1));
        assert_eq!(on("4", "2(x3),1"), None);
        assert_eq!(on("1", "4,x"), None);
    }

    #[test]
    fn an_sbatch_script_is_not_a_launch() {
        // The batch script has the job's task count and process 0 (as Slurm 22.05 sets them),
        // but it is one process, not a step.
        let batch = [
            ("SLURM_JOB_ID", "7"),
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "8"),
            ("SLURM_NPROCS", "8"),
            ("SLURM_JOB_NUM_NODES", "2"),
        ];
        assert_eq!(launch(&batch), None);
    }

    #[test]
    fn mpirun_inside_an_allocation_wins_over_the_step_of_its_daemons() {
        // mpirun starts one daemon per node with `srun`; its ranks inherit the daemon's step.
        let mut vars = vec![
            ("SLURM_STEP_ID", "0"),
            ("SLURM_PROCID", "1"),
            ("SLURM_STEP_NUM_TASKS", "2"),
        ];
        vars.extend([
            ("OMPI_COMM_WORLD_SIZE", "16"),
            ("OMPI_COMM_WORLD_RANK", "9"),
        ]);
        let seen = launch(&vars).unwrap();
        assert_eq!(
            (seen.launcher, seen.size, seen.rank),
            (Launcher::Mpirun, 16, Some(9))
        );
    }

    #[test]
    fn numbers_that_do_not_parse_are_ignored() {
        let bad = [
            ("SLURM_STEP_ID", "0"),
            ("SLURM_PROCID", "x"),
            ("SLURM_STEP_NUM_TASKS", "3"),
        ];
        assert_eq!(launch(&bad), None);
        assert_eq!(launch(&[("OMPI_COMM_WORLD_SIZE", "")]), None);
    }

    #[test]
    fn one_process_reads_the_same_under_mpirun_and_srun() {
        let mpirun = too_few_processes(1, launch(&[("OMPI_COMM_WORLD_SIZE", "1")])).to_string();
        let srun = [
            ("SLURM_STEP_ID", "0"),
            ("SLURM_PROCID", "0"),
            ("SLURM_STEP_NUM_TASKS", "1"),
        ];
        let srun = too_few_processes(1, launch(&srun)).to_string();
        let hydra = [
            ("PMI_SIZE", "1"),
            ("PMI_RANK", "0"),
            ("MPI_LOCALNRANKS", "1"),
        ];
        let hydra = too_few_processes(1, launch(&hydra)).to_string();
        for (text, launcher, example) in [
            (&mpirun, "`mpirun`", "`mpirun -np 5 ...`"),
            (&srun, "`srun`", "`srun -n 5 ...`"),
            (&hydra, "`mpiexec`", "`mpiexec -n 5 ...`"),
        ] {
            assert!(
                text.contains("needs a master and at least one worker, but 1 process was launched"),
                "{text}"
            );
            assert!(text.contains(launcher) && text.contains(example), "{text}");
            assert!(text.contains("--backend local"), "{text}");
        }
    }

    #[test]
    fn a_launcher_of_another_library_is_refused_not_run_as_copies() {
        // Hydra started 3 processes of an Open MPI build: each sees a world of 1.
        let text = too_few_processes(1, launch(&HYDRA_VARS)).to_string();
        assert!(
            text.contains("`mpiexec` (hydra, of MPICH or Intel MPI) started 3 processes")
                && text.contains("MPI sees 1")
                && text.contains("another MPI library"),
            "{text}"
        );
        assert!(!text.contains("needs a master"), "{text}");
    }
}
