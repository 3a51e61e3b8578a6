//! `mwgen new`: scaffold a Master/Worker project from the definitions of its messages (the
//! papers' `create` script and communication class generator of POETRIES).
//!
//! The steps: check the name, read and check the message types (nothing is written when any
//! of them is wrong), find the runtime, render the template in memory, then write the files.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Component, Path, PathBuf};

use clap::Args;
use clap::builder::PossibleValuesParser;
use serde::Serialize;

use crate::CliError;

mod checks;
mod defs;
mod layout;
mod snippet;
mod template;
mod types;
mod vendor;

use defs::{Input, Messages};
use template::{MessageTypes, Template};

pub(crate) const LONG_ABOUT: &str = "\
Create a Master/Worker project: a cargo package that depends on the runtime, with the message
types in src/messages.rs, the master's hooks in src/master.rs, the worker's in src/worker.rs, run
defaults in Mw.toml and a README that says what to edit. It builds and runs as generated.

Give the messages as Rust: --in is the task a worker receives, --out the result it sends back,
--shared the data every worker gets once per iteration. Each definition is one struct or enum,
optionally followed by the helper types it uses. With none of them, the blank template starts
from a small example that sums squares and checks the answer.

The sweep template takes the same flags for a job that is one bag of tasks (a parameter sweep, a
Monte Carlo run): its master makes the tasks as the workers need them (the `more_tasks` hook),
so the bag need not fit in memory, and the tuner sizes the pool while the bag empties.

The templates nbody, xfire and synthetic are the examples of the mwgen repository, complete
programs with message types of their own (so they take no message flags): a project made from
one of them is that example under the name you give, ready to change.

Examples:
  mwgen new sums
  mwgen new fire --in 'struct Segment { first: u32, points: Vec<[f64; 2]> }' \\
                 --out 'struct Advanced { first: u32, points: Vec<[f64; 2]> }'
  mwgen new fire --structs messages.rs      # types marked #[mw(task)], #[mw(result)]
  mwgen new scan --template sweep --in 'struct Point { x: f64 }' --out 'struct Value { v: f64 }'
  mwgen new gravity --template nbody        # the N-Body example, to change";

/// Arguments of `mwgen new`.
#[derive(Debug, Clone, Args)]
pub struct NewArgs {
    /// Name of the project: its package, binary and (unless --path) folder
    #[arg(value_name = "NAME")]
    pub name: String,

    /// The task a worker receives, as a Rust struct or enum (then any helper types it uses)
    #[arg(
        long = "in",
        value_name = "DEF",
        conflicts_with = "structs",
        help_heading = "Messages"
    )]
    pub task: Option<String>,

    /// The result a worker sends back for one task, as a Rust struct or enum
    #[arg(
        long = "out",
        value_name = "DEF",
        conflicts_with = "structs",
        help_heading = "Messages"
    )]
    pub result: Option<String>,

    /// Data every worker receives once per iteration, as a Rust struct or enum [default: none]
    #[arg(
        long,
        value_name = "DEF",
        conflicts_with = "structs",
        help_heading = "Messages"
    )]
    pub shared: Option<String>,

    /// A Rust file of structs and enums, the task marked #[mw(task)], the result #[mw(result)]
    /// and the shared data #[mw(shared)] (or named Task, Result, Shared)
    #[arg(long, value_name = "FILE", help_heading = "Messages")]
    pub structs: Option<PathBuf>,

    /// The template to start from
    #[arg(
        long,
        value_name = "T",
        default_value = "blank",
        value_parser = PossibleValuesParser::new(template::possible_values()),
        help_heading = "Project"
    )]
    pub template: String,

    /// Folder to create the project in [default: ./NAME]
    #[arg(long, value_name = "DIR", help_heading = "Project")]
    pub path: Option<PathBuf>,

    /// Write into an existing folder, replacing the files the template writes (and only those)
    #[arg(long, help_heading = "Project")]
    pub force: bool,

    /// The `mw-runtime` folder of an mwgen checkout, for the project to depend on by path
    /// [default: the published runtime of this mwgen's version when cargo's cache holds it, else
    /// the runtime's sources this mwgen carries, written into the project's `vendor/`]
    #[arg(long, value_name = "DIR", help_heading = "Project")]
    pub runtime_path: Option<PathBuf>,

    /// Depend on this published version of `mw-runtime` (e.g. `0.1`) even when cargo's cache
    /// does not hold it yet (the first build then downloads it)
    #[arg(
        long,
        value_name = "VERSION",
        conflicts_with = "runtime_path",
        help_heading = "Project"
    )]
    pub runtime_version: Option<String>,

    /// Make the project a member of the enclosing workspace: its version, edition, lints and
    /// dependency versions come from the workspace's `[workspace.package]`, `[workspace.lints]`
    /// and `[workspace.dependencies]` (as the mwgen repository's examples do), and it has no
    /// `[workspace]` table of its own
    #[arg(long, help_heading = "Project")]
    pub workspace_member: bool,
}

/// What [`create`] made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Created {
    /// The project's folder, as given (`NAME` or `--path`).
    pub path: PathBuf,
    /// The files written, relative to the project, sorted.
    pub files: Vec<String>,
    /// The files that existed and were replaced (only with `--force`).
    pub replaced: Vec<String>,
}

/// Runs `mwgen new`: creates the project and says what to do next.
///
/// # Errors
/// As for [`create`]; and a failure to write the output.
pub fn run(args: &NewArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let created = create(args)?;
    let shown = created.path.display();
    let mut text = format!(
        "Created `{}` from template `{}` in `{shown}`\n",
        args.name, args.template
    );
    if !created.replaced.is_empty() {
        // The runtime's sources, by the folder that holds them.
        let vendored = format!("{}/", vendor::FOLDER);
        let mut shown: Vec<&str> = created
            .replaced
            .iter()
            .filter(|p| !p.starts_with(&vendored))
            .map(String::as_str)
            .collect();
        if shown.len() < created.replaced.len() {
            shown.push(&vendored);
        }
        text.push_str(&format!(
            "Replaced {} existing files: {}\n",
            created.replaced.len(),
            shown.join(", ")
        ));
    }
    let package = if args.workspace_member {
        format!(" -p {}", args.name)
    } else {
        String::new()
    };
    text.push_str(&format!(
        "\nRun it on this machine's cores:\n    cd {shown}\n    cargo run --release{package}\n\
         See {shown}/README.md for what to edit and how to run it under MPI.\n"
    ));
    out.write_all(text.as_bytes()).map_err(CliError::output)
}

/// Creates the project and returns where.
///
/// Everything is checked and rendered before the first file is written; when writing fails in
/// a folder this call created, the folder is removed again.
///
/// # Errors
/// An invalid name; message definitions that do not parse, use types `Message` cannot send, or
/// do not fit the template; a target that exists (without `force`); no runtime at the runtime
/// path; a failure to write.
pub fn create(args: &NewArgs) -> Result<Created, CliError> {
    check_name(&args.name)?;
    let template = Template::load(&args.template)?;
    if template.manifest.messages == MessageTypes::Fixed {
        refuse_message_flags(args, template.name)?;
    }
    let structs_text = match &args.structs {
        Some(path) => Some(std::fs::read_to_string(path).map_err(|e| {
            CliError::usage(
                format!("cannot read `{}`: {e}", path.display()),
                "`--structs` takes the path of a Rust file holding the message types",
            )
        })?),
        None => None,
    };
    let given = given_messages(args, structs_text.as_deref(), &template)?;
    let messages = match given {
        Some((input, example)) => Some((defs::read(input)?, example)),
        None => None,
    };

    let target = args
        .path
        .clone()
        .unwrap_or_else(|| PathBuf::from(&args.name));
    if target.exists() && !target.is_dir() {
        return Err(CliError::usage(
            format!(
                "destination `{}` exists and is not a folder",
                target.display()
            ),
            "choose another folder with `--path`",
        ));
    }
    if target.exists() && !args.force {
        return Err(CliError::usage(
            format!("destination `{}` already exists", target.display()),
            "use `--force` to write the template's files into it (replacing those, leaving any \
             other file alone), or choose another folder with `--path`",
        ));
    }
    let dependency = match (&args.runtime_path, &args.runtime_version) {
        (Some(dir), _) => {
            let runtime = find_runtime(dir)?;
            let project = resolve(&target).map_err(|e| {
                CliError::failure(
                    format!("cannot resolve the path `{}`: {e}", target.display()),
                    None,
                )
            })?;
            Runtime::Path(dependency_path(&runtime, &project))
        }
        (None, Some(version)) => Runtime::Version(check_version(version)?),
        (None, None) => default_runtime(),
    };

    let context = context(args, &template, messages.as_ref(), &dependency);
    let mut files = template.render(&context)?;
    // A workspace member builds with its workspace's lock file.
    if !args.workspace_member {
        files.push(template::lock_file());
    }
    if dependency == Runtime::Vendored {
        let vendored = vendor::files().map_err(|e| {
            CliError::failure(
                format!("the runtime this mwgen carries is broken: {e}"),
                None,
            )
        })?;
        files.extend(vendored);
    }
    files.sort();
    let (written, replaced) = write(&target, &files).map_err(|e| {
        CliError::failure(
            format!(
                "failed to create project `{}` at `{}`: {e}",
                args.name,
                target.display()
            ),
            None,
        )
    })?;
    Ok(Created {
        path: target,
        files: written,
        replaced,
    })
}

/// The message definitions to read, and whether they are the template's defaults (the user
/// gave none); `None` for a template with messages of its own.
fn given_messages<'a>(
    args: &'a NewArgs,
    structs_text: Option<&'a str>,
    template: &'a Template,
) -> Result<Option<(Input<'a>, bool)>, CliError> {
    let name = template.name;
    if template.manifest.messages == MessageTypes::Fixed {
        refuse_message_flags(args, name)?;
        return Ok(None);
    }
    if let (Some(path), Some(text)) = (&args.structs, structs_text) {
        return Ok(Some((Input::File { path, text }, false)));
    }
    match (&args.task, &args.result) {
        (Some(task), Some(result)) => {
            let input = Input::Defs {
                task,
                result,
                shared: args.shared.as_deref(),
            };
            Ok(Some((input, false)))
        }
        (Some(_), None) => Err(CliError::usage(
            "`--in` was given without `--out`",
            "give the result a worker sends back with `--out`, e.g. \
             --out 'struct Answer { sum: u64 }'",
        )),
        (None, Some(_)) => Err(CliError::usage(
            "`--out` was given without `--in`",
            "give the task a worker receives with `--in`, e.g. \
             --in 'struct Range { first: u32, count: u32 }'",
        )),
        (None, None) if args.shared.is_some() => Err(CliError::usage(
            "`--shared` was given without `--in` and `--out`",
            "give the task with `--in` and the result with `--out` as well",
        )),
        (None, None) => match (&template.manifest.defaults, template.manifest.messages) {
            (Some(defaults), MessageTypes::Optional) => {
                let input = Input::Defs {
                    task: &defaults.task,
                    result: &defaults.result,
                    shared: defaults.shared.as_deref(),
                };
                Ok(Some((input, true)))
            }
            _ => Err(CliError::usage(
                format!("template `{name}` needs the message types"),
                "give the task with `--in` and the result with `--out` (and the shared data \
                 with `--shared`), or all of them in a file with `--structs`",
            )),
        },
    }
}

/// A template with message types of its own takes none from the command line.
fn refuse_message_flags(args: &NewArgs, template: &str) -> Result<(), CliError> {
    let flags = [
        ("--in", args.task.is_some()),
        ("--out", args.result.is_some()),
        ("--shared", args.shared.is_some()),
        ("--structs", args.structs.is_some()),
    ];
    let given: Vec<String> = flags
        .iter()
        .filter(|(_, given)| *given)
        .map(|(flag, _)| format!("`{flag}`"))
        .collect();
    if given.is_empty() {
        return Ok(());
    }
    Err(CliError::usage(
        format!(
            "template `{template}` has message types of its own, so {} cannot be used with it",
            given.join(" and ")
        ),
        "leave out `--in`, `--out`, `--shared` and `--structs` (the project's messages are in \
         its src/messages.rs, to edit), or give your types to `--template blank`",
    ))
}

/// Rust keywords (strict, reserved, and those of later editions), which cannot name a crate.
const KEYWORDS: [&str; 52] = [
    "_", "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn",
    "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref",
    "return", "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe",
    "use", "where", "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final",
    "macro", "override", "priv", "typeof", "unsized", "virtual", "yield", "try",
];

/// Names cargo or the generated project already gives a meaning to.
const TAKEN: [&str; 11] = [
    "std",
    "core",
    "alloc",
    "proc_macro",
    "test",
    "mw",
    "mw_runtime",
    "clap",
    "build",
    "deps",
    "examples",
];

/// A project name must be a crate name: ASCII letters, digits, `-` and `_`, not starting with a
/// digit, not a keyword, not a crate the project uses.
fn check_name(name: &str) -> Result<(), CliError> {
    let help_chars = "use ASCII letters, digits, `-` and `_`, starting with a letter";
    if name.is_empty() {
        return Err(CliError::usage("the project name is empty", help_chars));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        let help = if bad == '/' || bad == '\\' {
            "NAME names the package and its binary; to create the project in another folder, \
             give that folder with `--path DIR`"
        } else {
            help_chars
        };
        return Err(CliError::usage(
            format!("invalid character `{bad}` in project name `{name}`"),
            help,
        ));
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(CliError::usage(
            format!("project name `{name}` starts with a digit"),
            "a crate name starts with a letter (or `_`): choose another name",
        ));
    }
    let ident = name.replace('-', "_");
    let keyword = KEYWORDS.contains(&ident.as_str()) || ident == "gen";
    if keyword || TAKEN.contains(&ident.as_str()) {
        let why = if keyword {
            "a Rust keyword"
        } else {
            "the name of a crate the project uses, or one cargo reserves"
        };
        return Err(CliError::usage(
            format!("project name `{name}` is {why}, so it cannot name a package"),
            format!("choose another name, e.g. `{name}-app`"),
        ));
    }
    Ok(())
}

/// `fire-front` → `FireFront`: the master's type; the worker's adds `Worker`.
fn type_names(name: &str, taken: &BTreeSet<&str>) -> (String, String) {
    let mut camel: String = name
        .split(['-', '_'])
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect();
    if camel.is_empty() || camel.starts_with(|c: char| c.is_ascii_digit()) {
        camel.insert_str(0, "App");
    }
    for suffix in ["", "Master", "App"] {
        let master = format!("{camel}{suffix}");
        let worker = format!("{camel}Worker");
        let clash = |n: &str| taken.contains(n) || defs::RESERVED.contains(&n) || n == "Result";
        if !clash(&master) && !clash(&worker) && master != worker {
            return (master, worker);
        }
    }
    (format!("{camel}Main"), format!("{camel}Helper"))
}

/// Where the project's `mw` dependency comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Runtime {
    /// A checkout's `mw-runtime` folder, as `Cargo.toml` names it.
    Path(String),
    /// A published version requirement, such as `0.1`.
    Version(String),
    /// The sources this mwgen carries, written into the project's `vendor/`.
    Vendored,
}

/// The canonical path of the runtime crate, checked to be `mw-runtime`.
fn find_runtime(dir: &Path) -> Result<PathBuf, CliError> {
    let manifest = dir.join("Cargo.toml");
    let name = std::fs::read_to_string(&manifest)
        .ok()
        .and_then(|text| toml::from_str::<toml::Table>(&text).ok())
        .and_then(|table| {
            table
                .get("package")?
                .get("name")?
                .as_str()
                .map(str::to_owned)
        });
    let found = name.as_deref() == Some("mw-runtime");
    let canonical = dir.canonicalize().ok().filter(|_| found);
    canonical.ok_or_else(|| {
        CliError::usage(
            format!(
                "cannot find the runtime (`mw-runtime`) at `{}`",
                dir.display()
            ),
            "`--runtime-path` names the `mw-runtime` folder of an mwgen checkout",
        )
    })
}

/// The runtime released with this mwgen: the same major and minor version (`0.1` for 0.1.3).
fn own_version() -> String {
    let version = env!("CARGO_PKG_VERSION");
    version.split('.').take(2).collect::<Vec<_>>().join(".")
}

/// A `--runtime-version` cargo can read: numbers separated by dots, at most three.
fn check_version(version: &str) -> Result<String, CliError> {
    let parts: Vec<&str> = version.split('.').collect();
    let numbers = parts
        .iter()
        .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    if numbers && parts.len() <= 3 {
        return Ok(version.to_owned());
    }
    Err(CliError::usage(
        format!("invalid runtime version `{version}`"),
        format!(
            "give a version of `mw-runtime` as cargo writes it, e.g. `--runtime-version {}`",
            own_version()
        ),
    ))
}

/// The runtime a project gets when no flag names one: the published runtime of this mwgen's
/// version when cargo's cache holds it (the crates are on a registry, and the project builds
/// offline with the lock file the template ships); else the sources this mwgen carries, when it
/// was built from a checkout; else (an mwgen from the registry) the published version, which
/// the project's first build downloads.
fn default_runtime() -> Runtime {
    let version = own_version();
    let cached = cargo_home()
        .map(|home| home.join("registry").join("cache"))
        .is_some_and(|cache| in_cache(&cache, "mw-runtime", &version));
    if !cached && vendor::available() {
        Runtime::Vendored
    } else {
        Runtime::Version(version)
    }
}

/// Cargo's home: `$CARGO_HOME`, else `~/.cargo`.
fn cargo_home() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("CARGO_HOME").filter(|h| !h.is_empty()) {
        return Some(PathBuf::from(home));
    }
    // Not `std::env::home_dir`: deprecated in releases this crate still supports.
    let home = std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE"))?;
    Some(PathBuf::from(home).join(".cargo"))
}

/// Whether a registry of cargo's cache holds `NAME-VERSION.*.crate` (`0.1` matches `0.1.3`).
fn in_cache(cache: &Path, name: &str, version: &str) -> bool {
    let prefix = format!("{name}-{version}");
    let Ok(registries) = std::fs::read_dir(cache) else {
        return false;
    };
    registries.flatten().any(|registry| {
        std::fs::read_dir(registry.path()).is_ok_and(|files| {
            files.flatten().any(|file| {
                let file = file.file_name();
                let file = file.to_string_lossy();
                file.strip_prefix(&prefix)
                    .and_then(|rest| rest.strip_suffix(".crate"))
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
            })
        })
    })
}

/// An absolute path with no `.`, `..` or symbolic links in the part that exists.
fn resolve(path: &Path) -> std::io::Result<PathBuf> {
    let absolute = std::path::absolute(path)?;
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    while !existing.exists() {
        let Some(parent) = existing.parent() else {
            break;
        };
        rest.push(existing.file_name().map(ToOwned::to_owned));
        existing = parent;
    }
    let mut resolved = existing.canonicalize()?;
    for part in rest.into_iter().rev() {
        match part {
            Some(name) => resolved.push(name),
            None => {
                resolved.pop();
            }
        }
    }
    Ok(resolved)
}

/// The runtime's path as the project's Cargo.toml names it: relative when the project is
/// inside the folder that holds the runtime (a project made in the mwgen checkout keeps
/// building when the checkout moves), absolute otherwise.
fn dependency_path(runtime: &Path, project: &Path) -> String {
    let inside = runtime
        .parent()
        .is_some_and(|root| project.starts_with(root));
    if !inside {
        return runtime.display().to_string();
    }
    let common = project
        .components()
        .zip(runtime.components())
        .take_while(|(a, b)| a == b)
        .count();
    let mut parts: Vec<String> = project
        .components()
        .skip(common)
        .map(|_| "..".to_owned())
        .collect();
    parts.extend(
        runtime
            .components()
            .skip(common)
            .filter(|c| matches!(c, Component::Normal(_)))
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

/// One answer recorded in `[project]` of `Mw.toml`: a string, or `true` for a flag.
#[derive(Debug, Serialize)]
struct Answer {
    key: &'static str,
    value: serde_json::Value,
}

impl Answer {
    fn text(key: &'static str, value: impl Into<String>) -> Answer {
        Answer {
            key,
            value: serde_json::Value::String(value.into()),
        }
    }
}

/// The template's variables (documented in `templates/README.md`).
fn context(
    args: &NewArgs,
    template: &Template,
    messages: Option<&(Messages, bool)>,
    runtime: &Runtime,
) -> tera::Context {
    let mut context = tera::Context::new();
    let user_types: BTreeSet<&str> = messages
        .map(|(m, _)| m.shapes.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let (master, worker) = type_names(&args.name, &user_types);
    context.insert("name", &args.name);
    context.insert("crate_name", &args.name.replace('-', "_"));
    context.insert("master", &master);
    context.insert("worker", &worker);
    context.insert("template", template.name);
    context.insert("description", &template.manifest.description);
    context.insert("mwgen_version", env!("CARGO_PKG_VERSION"));
    let vendored = format!("{}/mw-runtime", vendor::FOLDER);
    let (path, version) = match runtime {
        Runtime::Path(path) => (path.as_str(), ""),
        Runtime::Version(version) => ("", version.as_str()),
        Runtime::Vendored => (vendored.as_str(), ""),
    };
    context.insert("runtime_path", path);
    context.insert("runtime_version", version);
    context.insert("runtime_vendored", &(*runtime == Runtime::Vendored));

    context.insert("workspace_member", &args.workspace_member);
    // What cargo needs to pick the project's package from the workspace's root.
    let package_arg = if args.workspace_member {
        format!(" -p {}", args.name)
    } else {
        String::new()
    };
    context.insert("package_arg", &package_arg);

    let mut answers = vec![
        Answer::text("name", &args.name),
        Answer::text("template", template.name),
        Answer::text("mwgen", env!("CARGO_PKG_VERSION")),
        match runtime {
            Runtime::Path(path) => Answer::text("runtime", path),
            Runtime::Version(version) => Answer::text("runtime_version", version),
            Runtime::Vendored => Answer::text("runtime", &vendored),
        },
    ];
    if args.workspace_member {
        answers.push(Answer {
            key: "workspace_member",
            value: serde_json::Value::Bool(true),
        });
    }
    if let Some((messages, defaults)) = messages {
        let given = [
            ("in", &args.task),
            ("out", &args.result),
            ("shared", &args.shared),
        ];
        for (key, value) in given {
            if let Some(value) = value {
                answers.push(Answer::text(key, value));
            }
        }
        if let Some(path) = &args.structs {
            answers.push(Answer::text("structs", path.display().to_string()));
        }
        answers.push(Answer::text("task_type", &messages.task));
        answers.push(Answer::text("result_type", &messages.result));
        if let Some(shared) = &messages.shared {
            answers.push(Answer::text("shared_type", shared));
        }
        insert_messages(&mut context, messages, *defaults);
    }
    context.insert("answers", &answers);
    context
}

/// The message types and the code that builds and reads them.
fn insert_messages(context: &mut tera::Context, messages: &Messages, defaults: bool) {
    context.insert("messages", &messages.text());
    context.insert("example", &defaults);
    context.insert("task", &messages.task);
    context.insert("result", &messages.result);
    context.insert("shared", messages.shared.as_deref().unwrap_or("()"));
    context.insert("has_shared", &messages.shared.is_some());

    // The master builds tasks (the index in the first number field) and the shared data.
    let mut values = types::Values::new(&messages.shapes, &messages.copy_types);
    let task_value = values.build(&messages.task, 4, Some("index"));
    context.insert("task_uses_index", &task_value.contains("index"));
    context.insert("task_value", &task_value);
    if let Some(shared) = &messages.shared {
        context.insert("shared_value", &values.build(shared, 4, None));
    }
    let mut master_types = values.used.clone();
    master_types.insert(messages.result.clone());
    context.insert("master_use", &use_line(&master_types));

    // The worker copies what the task and the result have in common.
    let mut values = types::Values::new(&messages.shapes, &messages.copy_types);
    let (result_value, reads_task) = result_from_task(messages, &mut values);
    context.insert("result_value", &result_value);
    context.insert("worker_reads_task", &reads_task);
    let mut worker_types = values.used;
    worker_types.insert(messages.task.clone());
    worker_types.extend(messages.shared.clone());
    context.insert("worker_use", &use_line(&worker_types));
}

/// `use crate::messages::{A, B};`
fn use_line(names: &BTreeSet<String>) -> String {
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    match names.as_slice() {
        [one] => format!("use crate::messages::{one};"),
        _ => format!("use crate::messages::{{{}}};", names.join(", ")),
    }
}

/// The worker's result for a task: fields the result shares with the task (same name and type)
/// are copied from it, the others are empty. Also says whether the task was read.
fn result_from_task(messages: &Messages, values: &mut types::Values<'_>) -> (String, bool) {
    use types::{Fields, Shape};
    let (task, result) = (&messages.task, &messages.result);
    if task == result {
        values.used.insert(result.clone());
        let copy = values.is_copy(&types::Ty::User(task.clone()));
        return (if copy { "*task" } else { "task.clone()" }.to_owned(), true);
    }
    let named = |name: &str| match messages.shapes.get(name) {
        Some(Shape::Struct(Fields::Named(fields))) => Some(fields),
        _ => None,
    };
    let (Some(task_fields), Some(result_fields)) = (named(task), named(result)) else {
        return (values.build(result, 8, None), false);
    };
    let copied = |name: &String, ty: &Option<types::Ty>| {
        ty.is_some() && task_fields.iter().any(|(n, t)| n == name && t == ty)
    };
    if !result_fields.iter().any(|(name, ty)| copied(name, ty)) {
        return (values.build(result, 8, None), false);
    }
    values.used.insert(result.clone());
    let parts: Vec<String> = result_fields
        .iter()
        .map(|(name, ty)| match ty {
            Some(ty) if copied(name, &Some(ty.clone())) => {
                if values.is_copy(ty) {
                    format!("{name}: task.{name}")
                } else {
                    format!("{name}: task.{name}.clone()")
                }
            }
            Some(ty) => format!("{name}: {}", values.zero(ty, 12)),
            None => format!("{name}: Default::default()"),
        })
        .collect();
    (types::layout(result, &parts, 8, ('{', '}')), true)
}

/// Writes the files under `dir` (created with its parents when missing). Returns the files
/// written and those that existed before. When `dir` did not exist and a write fails, `dir` is
/// removed again: it holds nothing but what this call wrote.
fn write(dir: &Path, files: &[template::File]) -> std::io::Result<(Vec<String>, Vec<String>)> {
    let existed = dir.exists();
    let result = (|| {
        for template::File { path, .. } in files {
            let file = dir.join(path);
            if file.is_dir() {
                return Err(std::io::Error::other(format!(
                    "`{path}` is a folder; the template writes a file there"
                )));
            }
        }
        std::fs::create_dir_all(dir)?;
        let mut written = Vec::new();
        let mut replaced = Vec::new();
        for template::File {
            path,
            bytes,
            executable,
        } in files
        {
            let file = dir.join(path);
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent)?;
            }
            if file.exists() {
                replaced.push(path.clone());
            }
            let context =
                |e: std::io::Error| std::io::Error::new(e.kind(), format!("`{path}`: {e}"));
            std::fs::write(&file, bytes).map_err(context)?;
            if *executable {
                make_executable(&file).map_err(context)?;
            }
            written.push(path.clone());
        }
        Ok((written, replaced))
    })();
    if result.is_err() && !existed {
        let _ = std::fs::remove_dir_all(dir);
    }
    result
}

/// Adds the executable bits to a file, where its reader may run it.
#[cfg(unix)]
fn make_executable(file: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut permissions = std::fs::metadata(file)?.permissions();
    let mode = permissions.mode();
    // Execute for whoever may read: r-- → r-x.
    permissions.set_mode(mode | ((mode & 0o444) >> 2));
    std::fs::set_permissions(file, permissions)
}

/// Files carry no executable bit here: scripts run through their interpreter.
#[cfg(not(unix))]
fn make_executable(_file: &Path) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_must_be_crate_names() {
        assert!(check_name("fire").is_ok());
        assert!(check_name("fire-front_2").is_ok());
        for bad in [
            "", "1fire", "fire.app", "a/b", "fn", "async", "gen", "self", "mw", "std",
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn type_names_avoid_the_user_types() {
        let none = BTreeSet::new();
        assert_eq!(
            type_names("fire-front", &none),
            ("FireFront".into(), "FireFrontWorker".into())
        );
        let taken: BTreeSet<&str> = ["Task"].into();
        assert_eq!(
            type_names("task", &taken),
            ("TaskMaster".into(), "TaskWorker".into())
        );
        // The prelude's names stay the prelude's.
        assert_eq!(
            type_names("work", &none),
            ("WorkMaster".into(), "WorkWorker".into())
        );
        assert_eq!(
            type_names("worker", &none),
            ("WorkerMaster".into(), "WorkerWorker".into())
        );
    }

    #[test]
    fn runtime_paths_are_relative_inside_its_checkout() {
        let runtime = Path::new("/src/mwgen/mw-runtime");
        assert_eq!(
            dependency_path(runtime, Path::new("/src/mwgen/apps/fire")),
            "../../mw-runtime"
        );
        assert_eq!(
            dependency_path(runtime, Path::new("/src/mwgen/fire")),
            "../mw-runtime"
        );
        assert_eq!(
            dependency_path(runtime, Path::new("/home/me/fire")),
            "/src/mwgen/mw-runtime"
        );
    }

    fn args(task: Option<&str>, result: Option<&str>) -> NewArgs {
        NewArgs {
            name: "fire".into(),
            task: task.map(Into::into),
            result: result.map(Into::into),
            shared: None,
            structs: None,
            template: "blank".into(),
            path: None,
            force: false,
            runtime_path: None,
            runtime_version: None,
            workspace_member: false,
        }
    }

    fn template(messages: MessageTypes) -> Template {
        Template {
            name: "other",
            manifest: template::Manifest {
                description: String::new(),
                messages,
                defaults: None,
                executable: Vec::new(),
            },
        }
    }

    #[test]
    fn templates_say_which_messages_they_take() {
        let none = args(None, None);
        let given = args(Some("struct A;"), Some("struct B;"));

        let required = template(MessageTypes::Required);
        let error = given_messages(&none, None, &required)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("template `other` needs the message types"),
            "{error}"
        );
        assert!(given_messages(&given, None, &required).unwrap().is_some());

        let fixed = template(MessageTypes::Fixed);
        assert!(given_messages(&none, None, &fixed).unwrap().is_none());
        let error = given_messages(&given, None, &fixed)
            .unwrap_err()
            .to_string();
        assert!(error.contains("has message types of its own"), "{error}");

        let blank = Template::load("blank").unwrap();
        let (_, example) = given_messages(&none, None, &blank).unwrap().unwrap();
        assert!(example);
        let (_, example) = given_messages(&given, None, &blank).unwrap().unwrap();
        assert!(!example);
    }

    #[test]
    fn paths_resolve_before_they_exist() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let path = dir.path().join("a").join("..").join("b").join("c");
        assert_eq!(resolve(&path).unwrap(), base.join("b").join("c"));
    }
}
