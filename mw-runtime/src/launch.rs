//! Which launcher started this process, as the environment it set tells: `mpirun` (Open MPI's
//! or another implementation's) or Slurm's `srun`.
//!
//! `mpirun` is asked first: inside a Slurm allocation it starts its daemons with `srun`, so its
//! ranks also carry the `SLURM_*` variables of a step, with the daemon's numbers, not theirs.

use crate::error::Error;

/// A launch of several processes by `mpirun` or `srun`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Launch {
    pub launcher: Launcher,
    /// Processes started.
    pub size: usize,
    /// This process's number among them, when the launcher says.
    pub rank: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Launcher {
    Mpirun,
    Srun,
}

// Only the MPI backend reports a launch of too few processes; the tests check it in every build.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
impl Launcher {
    /// The command that launches `n` processes, for help messages.
    fn example(self, n: usize) -> String {
        match self {
            Launcher::Mpirun => format!("mpirun -np {n} ..."),
            Launcher::Srun => format!("srun -n {n} ..."),
        }
    }
}

impl std::fmt::Display for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.launcher {
            Launcher::Mpirun => write!(f, "mpirun with {} processes", self.size),
            Launcher::Srun => write!(f, "srun with {} tasks", self.size),
        }
    }
}

/// Sizes and ranks set by `mpirun` and by the PMI libraries that MPI implementations and `srun
/// --mpi=pmi2|pmix` share.
const MPI_SIZE: [&str; 4] = [
    "OMPI_COMM_WORLD_SIZE",
    "PMI_SIZE",
    "PMIX_SIZE",
    "MPI_LOCALNRANKS",
];
const MPI_RANK: [&str; 3] = ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"];

/// The launch of this process; `None` when it was started on its own.
pub(crate) fn detect() -> Option<Launch> {
    detect_in(|key| std::env::var(key).ok())
}

/// [`detect`] over any environment (`var` returns a variable's value).
pub(crate) fn detect_in(var: impl Fn(&str) -> Option<String>) -> Option<Launch> {
    let number = |key: &str| var(key)?.trim().parse::<usize>().ok();
    let first = |keys: &[&str]| keys.iter().find_map(|key| number(key));
    if let Some(size) = first(&MPI_SIZE) {
        return Some(Launch {
            launcher: Launcher::Mpirun,
            size,
            rank: first(&MPI_RANK),
        });
    }
    // A step of `srun`, not the batch script of `sbatch` (which has the job's task count and
    // process id 0, but no step id). Older Slurm spells the step id `SLURM_STEPID`.
    let in_step = var("SLURM_STEP_ID")
        .or_else(|| var("SLURM_STEPID"))
        .is_some();
    let rank = number("SLURM_PROCID");
    if in_step && rank.is_some() {
        let size = first(&["SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"])?;
        return Some(Launch {
            launcher: Launcher::Srun,
            size,
            rank: first(&MPI_RANK).or(rank),
        });
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

/// The error of the MPI backend when MPI sees `seen` processes, fewer than the 2 it needs: the
/// same under mpirun and srun, with the launch line of the launcher used.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn too_few_processes(seen: usize, launch: Option<Launch>) -> Error {
    let launcher = launch.map_or(Launcher::Mpirun, |l| l.launcher);
    let by = match launch.map(|l| l.launcher) {
        Some(Launcher::Srun) => " by `srun`",
        Some(Launcher::Mpirun) => " by `mpirun`",
        None => "",
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
        let open_mpi = [("OMPI_COMM_WORLD_SIZE", "4"), ("OMPI_COMM_WORLD_RANK", "2")];
        assert_eq!(
            launch(&open_mpi),
            Some(Launch {
                launcher: Launcher::Mpirun,
                size: 4,
                rank: Some(2)
            })
        );
        let hydra = [("PMI_SIZE", "3"), ("PMI_RANK", "0")];
        assert_eq!(launch(&hydra).map(|l| (l.size, l.rank)), Some((3, Some(0))));
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
                rank: Some(1)
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
        // pmi2 also sets the size: the launch then reads as MPI's, with the same numbers.
        let mut pmi2 = SRUN.to_vec();
        pmi2.extend([("PMI_SIZE", "3"), ("PMI_RANK", "1")]);
        assert_eq!(launch(&pmi2).map(|l| (l.size, l.rank)), Some((3, Some(1))));
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
        for (text, launcher, example) in [
            (&mpirun, "`mpirun`", "`mpirun -np 5 ...`"),
            (&srun, "`srun`", "`srun -n 5 ...`"),
        ] {
            assert!(
                text.contains("needs a master and at least one worker, but 1 process was launched"),
                "{text}"
            );
            assert!(text.contains(launcher) && text.contains(example), "{text}");
            assert!(text.contains("--backend local"), "{text}");
        }
    }
}
