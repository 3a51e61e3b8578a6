//! The program's own command line, parsed the way a launched program should: once per job, not
//! once per rank.
//!
//! `mpirun -np 8 prog --bad-flag` starts eight copies, and each would print clap's error and
//! usage: eight times the same screen. Here the first rank (or a process started on its own)
//! prints it; the other ranks end with the same status and say nothing.

use crate::{launch, status};

/// Parses the command line into `C`, as `C::parse()` does, for a program that runs under
/// `mpirun`, `mpiexec` or `srun` too: a refused flag, `--help` or `--version` is printed by the
/// first rank only, and every rank exits with clap's status (2 for a refused flag, 0 for help).
/// Under a launcher the master's `mw: exit status N` line is arranged first
/// ([`report_exit_status`](crate::report_exit_status)), so a refused flag's 2 is said too.
///
/// ```no_run
/// use clap::Parser;
///
/// #[derive(Parser)]
/// struct Cli {
///     #[arg(long, default_value_t = 100)]
///     bodies: usize,
///     #[command(flatten)]
///     run: mw_runtime::RunArgs,
/// }
///
/// let cli: Cli = mw_runtime::parse_args();
/// ```
pub fn parse_args<C: clap::Parser>() -> C {
    status::report_exit_status();
    match C::try_parse() {
        Ok(parsed) => parsed,
        Err(e) if launch::is_worker_rank() => std::process::exit(e.exit_code()),
        Err(e) => e.exit(),
    }
}
