//! Under the `mpi` feature: which MPI library's `mpi.h` rsmpi compiles against, found by the
//! same probe rsmpi's build uses (`$MPICC`, then `mpicc`, then pkg-config) and read from the
//! header's version macros, for the program to compare with the library it loads at run time
//! (`MW_MPI_HEADERS`: `Open MPI 4.1.4`, `MPICH 5.0.2`, `Intel MPI 2021.19.0`).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=MPICC");
    #[cfg(feature = "mpi")]
    if let Some(headers) = mpi_headers() {
        println!("cargo:rustc-env=MW_MPI_HEADERS={headers}");
    }
}

/// The library and version `mpi.h` names; `None` when the probe or the header says nothing.
#[cfg(feature = "mpi")]
fn mpi_headers() -> Option<String> {
    let library = build_probe_mpi::probe().ok()?;
    let header = library
        .include_paths
        .iter()
        .map(|dir| dir.join("mpi.h"))
        .find(|path| path.is_file())?;
    println!("cargo:rerun-if-changed={}", header.display());
    let text = std::fs::read_to_string(header).ok()?;
    from_header(&text)
}

/// Reads the vendor's version macros. Intel MPI's header also defines MPICH's (it derives from
/// MPICH), so it is asked first.
#[cfg(feature = "mpi")]
fn from_header(text: &str) -> Option<String> {
    let define = |name: &str| {
        text.lines().find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next()? == "#define" && words.next()? == name)
                .then(|| words.next().map(|v| v.trim_matches('"').to_owned()))?
        })
    };
    if let Some(version) = define("I_MPI_VERSION") {
        return Some(format!("Intel MPI {version}"));
    }
    if let Some(major) = define("OMPI_MAJOR_VERSION") {
        let minor = define("OMPI_MINOR_VERSION")?;
        let release = define("OMPI_RELEASE_VERSION")?;
        return Some(format!("Open MPI {major}.{minor}.{release}"));
    }
    define("MPICH_VERSION").map(|version| format!("MPICH {version}"))
}
