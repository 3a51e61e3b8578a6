//! Which MPI library this process runs on, and what of it the runtime must say at start: a
//! library other than the one the program was built against, and a launch line that asks one
//! library for what only another understands.
//!
//! The library is read from `MPI_Get_library_version`, the one it was built against from the
//! `mpi.h` its build compiled against ([`BUILT_AGAINST`](crate::launch::BUILT_AGAINST)). Open
//! MPI 4 and 5 share the soname `libmpi.so.40` but not their ABI, so a build for one that finds
//! the other starts, and then fails in ways that say nothing of the cause.
#![allow(unsafe_code)]

use std::sync::OnceLock;

/// An MPI implementation, as far as the runtime treats them differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Vendor {
    OpenMpi,
    Mpich,
    Intel,
}

/// A library and its version (`5.0.11`, `2021.19`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Library {
    pub(super) vendor: Vendor,
    pub(super) version: String,
}

impl Library {
    /// From the text of `MPI_Get_library_version`: `Open MPI v4.1.4, package: ...`,
    /// `MPICH Version:      5.0.2` and more lines, `Intel(R) MPI Library 2021.19 for Linux* OS`.
    fn from_version_text(text: &str) -> Option<Library> {
        let after = |prefix: &str| {
            let rest = text[text.find(prefix)? + prefix.len()..].trim_start();
            let version: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '.')
                .collect();
            (!version.is_empty()).then_some(version)
        };
        let (vendor, version) = if let Some(v) = after("Intel(R) MPI Library") {
            (Vendor::Intel, v)
        } else if let Some(v) = after("Open MPI v") {
            (Vendor::OpenMpi, v)
        } else {
            (Vendor::Mpich, after("MPICH Version:")?)
        };
        Some(Library { vendor, version })
    }

    /// From the build's `Open MPI 4.1.4`, `MPICH 5.0.2`, `Intel MPI 2021.19.0`.
    fn from_name(name: &str) -> Option<Library> {
        let (vendor, version) = name.rsplit_once(' ')?;
        let vendor = match vendor {
            "Open MPI" => Vendor::OpenMpi,
            "MPICH" => Vendor::Mpich,
            "Intel MPI" => Vendor::Intel,
            _ => return None,
        };
        Some(Library {
            vendor,
            version: version.to_owned(),
        })
    }

    /// The version's first number: Open MPI 4 and 5 differ in ABI.
    pub(super) fn major(&self) -> &str {
        self.version.split('.').next().unwrap_or_default()
    }

    /// The same library as `other` as far as a build goes: same vendor and release series.
    fn same_series(&self, other: &Library) -> bool {
        fn series(l: &Library) -> Vec<&str> {
            l.version.split('.').take(2).collect()
        }
        self.vendor == other.vendor && series(self) == series(other)
    }

    /// Why a rank given up on is ended only as the master exits under this library when the
    /// runtime sees no launch line that survives a lost rank: what that line is, and whether a
    /// rank could have seen it (hydra tells its ranks nothing of `-disable-auto-cleanup`).
    fn without_recovery(&self) -> &'static str {
        match (self.vendor, self.major()) {
            (Vendor::OpenMpi, "4") => {
                "without `--mca orte_enable_recovery 1` mpirun ends the whole job with it"
            }
            (Vendor::OpenMpi, _) => "without `--with-ft ulfm` mpirun ends the whole job with it",
            (Vendor::Intel, _) => {
                "mpiexec ends the whole job with it unless it was given `-disable-auto-cleanup`, \
                 which its ranks cannot see (they see `I_MPI_FAULT_CONTINUE=on`, which does the \
                 same)"
            }
            (Vendor::Mpich, _) => "MPICH's mpiexec ends the whole job with it, whatever its line",
        }
    }
}

/// [`Library::without_recovery`] for the library this process runs on.
pub(super) fn without_recovery() -> &'static str {
    running().map_or(
        "without a launch line that survives a lost rank (`--mca orte_enable_recovery 1` on \
         Open MPI 4, `--with-ft ulfm` on Open MPI 5, `I_MPI_FAULT_CONTINUE=on` on Intel MPI) the \
         launcher ends the whole job with it",
        Library::without_recovery,
    )
}

impl std::fmt::Display for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self.vendor {
            Vendor::OpenMpi => "Open MPI",
            Vendor::Mpich => "MPICH",
            Vendor::Intel => "Intel MPI",
        };
        write!(f, "{name} {}", self.version)
    }
}

/// How Open MPI reads a boolean parameter (`OMPI_MCA_*` in the environment): true.
pub(super) fn open_mpi_true(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "t" | "yes" | "y" | "enabled"
    )
}

/// How Intel MPI reads a binary variable (`I_MPI_*`): on.
pub(super) fn intel_on(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "1" | "on" | "yes" | "enable"
    )
}

/// Whether the environment variable `key` is set to a value `reads` as true.
pub(super) fn env_is(key: &str, reads: fn(&str) -> bool) -> bool {
    std::env::var(key).is_ok_and(|v| reads(&v))
}

/// The library this process runs on; `None` when its version text is not one of the known.
pub(super) fn running() -> Option<&'static Library> {
    static RUNNING: OnceLock<Option<Library>> = OnceLock::new();
    RUNNING
        .get_or_init(|| {
            let text = mpi::environment::library_version().ok()?;
            Library::from_version_text(&text)
        })
        .as_ref()
}

/// Whether this process runs on `vendor`'s library.
pub(super) fn runs_on(vendor: Vendor) -> bool {
    running().is_some_and(|l| l.vendor == vendor)
}

/// Says on stderr, one line each, what is wrong with the library or the launch line. Called by
/// rank 0 once MPI is initialized.
pub(super) fn warn_at_start() {
    let built = crate::launch::BUILT_AGAINST.and_then(Library::from_name);
    let var = |key: &str| std::env::var(key).ok();
    for warning in warnings(built.as_ref(), running(), &var, loaded_from()) {
        eprintln!("warning: {warning}");
    }
}

/// The warnings for a build against `built` running on `running` (loaded from `path`), in an
/// environment read by `var`.
fn warnings(
    built: Option<&Library>,
    running: Option<&Library>,
    var: &dyn Fn(&str) -> Option<String>,
    path: Option<String>,
) -> Vec<String> {
    let mut said = Vec::new();
    if let (Some(built), Some(running)) = (built, running) {
        if !built.same_series(running) {
            let from = path.map_or_else(String::new, |p| format!(" from {p}"));
            said.push(format!(
                "this program was built against {built} but loaded {running}{from}: run it with \
                 the library it was built against first in the library path (its `lib` folder \
                 in LD_LIBRARY_PATH), or rebuild it against this one"
            ));
        }
    }
    let set = |key: &str| var(key).is_some_and(|v| open_mpi_true(&v));
    let open_mpi_5 = running.is_some_and(|l| l.vendor == Vendor::OpenMpi && l.major() != "4");
    if open_mpi_5 && set("OMPI_MCA_orte_enable_recovery") {
        said.push(
            "Open MPI 5 ignores `--mca orte_enable_recovery 1` (an Open MPI 4 parameter): unless \
             mpirun was also given `--enable-recovery`, a rank that dies ends the job; launch \
             with `mpirun --with-ft ulfm` to go on without a lost rank, with a true exit status"
                .to_owned(),
        );
    }
    if running.is_some_and(|l| l.vendor == Vendor::Mpich) && set("OMPI_MCA_orte_enable_recovery") {
        said.push(
            "`orte_enable_recovery` is Open MPI's: MPICH ends the whole job when a rank dies, \
             with or without `-disable-auto-cleanup`"
                .to_owned(),
        );
    }
    said
}

/// The file the MPI library was loaded from.
fn loaded_from() -> Option<String> {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    let symbol = mpi::ffi::MPI_Init as *const libc::c_void;
    // SAFETY: dladdr only reads the loader's tables for an address of this process; the name
    // it returns points into them and is copied at once.
    let found = unsafe { libc::dladdr(symbol, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: a non-null `dli_fname` is a nul-terminated string owned by the loader.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    Some(name.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// The first lines of `MPI_Get_library_version` of the four libraries.
    const OPEN_MPI_4: &str = "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: \
                              v4.1.4, May 26, 2022";
    const OPEN_MPI_5: &str = "Open MPI v5.0.11, package: Open MPI runner@host Distribution, \
                              ident: 5.0.11, repo rev: v5.0.11, Oct 01, 2026";
    const MPICH: &str = "MPICH Version:      5.0.2\nMPICH Release date: unreleased";
    const INTEL: &str = "Intel(R) MPI Library 2021.19 for Linux* OS\n";

    fn read(text: &str) -> Library {
        Library::from_version_text(text).unwrap()
    }

    #[test]
    fn each_librarys_version_text_names_it() {
        assert_eq!(read(OPEN_MPI_4).to_string(), "Open MPI 4.1.4");
        assert_eq!(read(OPEN_MPI_5).to_string(), "Open MPI 5.0.11");
        assert_eq!(read(MPICH).to_string(), "MPICH 5.0.2");
        assert_eq!(read(INTEL).to_string(), "Intel MPI 2021.19");
        assert_eq!(Library::from_version_text("Some MPI 1.0"), None);
        for name in ["Open MPI 4.1.4", "MPICH 5.0.2", "Intel MPI 2021.19.0"] {
            assert_eq!(Library::from_name(name).unwrap().to_string(), name);
        }
    }

    #[test]
    fn open_mpi_booleans_read_as_open_mpi_reads_them() {
        for yes in ["1", "true", "T", " yes ", "enabled"] {
            assert!(open_mpi_true(yes), "{yes}");
        }
        for no in ["0", "false", "", "no", "2"] {
            assert!(!open_mpi_true(no), "{no}");
        }
    }

    #[test]
    fn a_rank_ended_late_for_want_of_recovery_names_its_librarys_line() {
        let why = |text| read(text).without_recovery();
        assert!(why(OPEN_MPI_4).contains("`--mca orte_enable_recovery 1`"));
        assert!(why(OPEN_MPI_5).contains("`--with-ft ulfm`"));
        assert!(why(INTEL).contains("`-disable-auto-cleanup`"));
        assert!(why(INTEL).contains("`I_MPI_FAULT_CONTINUE=on`"));
        assert!(why(MPICH).contains("whatever its line"));
    }

    fn said(built: &str, running: &str, vars: &[(&str, &str)]) -> Vec<String> {
        let var = |key: &str| {
            vars.iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| (*v).to_owned())
        };
        let built = Library::from_name(built).unwrap();
        let path = Some("/usr/lib/x86_64-linux-gnu/libmpi.so.40".to_owned());
        warnings(Some(&built), Some(&read(running)), &var, path)
    }

    #[test]
    fn a_build_for_one_library_loading_another_says_so_once() {
        assert!(said("Open MPI 4.1.4", OPEN_MPI_4, &[]).is_empty());
        // Another release of the same series is the same library to a build.
        assert!(said("Open MPI 4.1.6", OPEN_MPI_4, &[]).is_empty());
        assert!(said("Intel MPI 2021.19.0", INTEL, &[]).is_empty());
        let wrong = said("Open MPI 5.0.11", OPEN_MPI_4, &[]);
        assert_eq!(wrong.len(), 1, "{wrong:?}");
        assert!(
            wrong[0].starts_with(
                "this program was built against Open MPI 5.0.11 but loaded Open MPI 4.1.4 from \
                 /usr/lib/x86_64-linux-gnu/libmpi.so.40"
            ),
            "{}",
            wrong[0]
        );
        assert_eq!(said("MPICH 5.0.2", INTEL, &[]).len(), 1);
    }

    #[test]
    fn a_recovery_line_another_library_ignores_is_named_with_the_one_that_works() {
        let recovery = [("OMPI_MCA_orte_enable_recovery", "1")];
        assert!(said("Open MPI 4.1.4", OPEN_MPI_4, &recovery).is_empty());
        let ignored = said("Open MPI 5.0.11", OPEN_MPI_5, &recovery);
        assert_eq!(ignored.len(), 1);
        assert!(ignored[0].contains("`--enable-recovery`"), "{ignored:?}");
        assert!(
            ignored[0].contains("`mpirun --with-ft ulfm`"),
            "{ignored:?}"
        );
        // ULFM is Open MPI 5's own fault tolerance: nothing to warn about.
        let ulfm = said(
            "Open MPI 5.0.11",
            OPEN_MPI_5,
            &[("OMPI_MCA_mpi_ft_enable", "1")],
        );
        assert!(ulfm.is_empty(), "{ulfm:?}");
        let mpich = said("MPICH 5.0.2", MPICH, &recovery);
        assert!(mpich[0].contains("MPICH ends the whole job"), "{mpich:?}");
    }
}
