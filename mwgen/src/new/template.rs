//! The templates of `mwgen new`, embedded in the binary from the crate's `templates/` folder
//! (see `build.rs`), and their rendering with tera.
//!
//! A template is a folder of `templates/` that holds a `template.toml` manifest. Its `*.tera`
//! files are rendered (the suffix is dropped from the name), the others are copied as they are.
//! Every `*.tera` file of every folder is registered under its path (`blank/src/main.rs.tera`),
//! so a template can `{% include %}` a piece kept in a folder whose name starts with `_`
//! (such folders are not templates).

use std::collections::HashMap;

use serde::Deserialize;

use crate::CliError;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/templates.rs"));
}

const MANIFEST: &str = "template.toml";
const SUFFIX: &str = ".tera";

/// A template's `template.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Manifest {
    /// One line for `mwgen new --help` and the project's README.
    pub description: String,
    /// Whether the template takes the user's message types.
    pub messages: MessageTypes,
    /// The definitions used when the user gives none (with `messages = "optional"`).
    #[serde(default)]
    pub defaults: Option<Defaults>,
    /// Files of the project (paths as written) that get the executable bit, such as scripts.
    #[serde(default)]
    pub executable: Vec<String>,
}

/// How a template gets its message types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum MessageTypes {
    /// From `--in`/`--out` (and `--shared`) or `--structs`, else the template's defaults.
    Optional,
    /// From `--in`/`--out` (and `--shared`) or `--structs`; there are no defaults.
    Required,
    /// The template has its own `src/messages.rs`; message flags are refused.
    Fixed,
}

/// Default message definitions, in the syntax of `--in` / `--out` / `--shared`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Defaults {
    pub task: String,
    pub result: String,
    #[serde(default)]
    pub shared: Option<String>,
}

/// A file of the project, as the template makes it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct File {
    /// Relative to the project, `/`-separated.
    pub path: String,
    pub bytes: Vec<u8>,
    /// Whether it is written with the executable bit (on Unix).
    pub executable: bool,
}

/// A template: its name and manifest.
#[derive(Debug, Clone)]
pub(crate) struct Template {
    pub name: &'static str,
    pub manifest: Manifest,
}

/// The names of the embedded templates, sorted.
pub(crate) fn names() -> Vec<&'static str> {
    embedded::FILES
        .iter()
        .filter_map(|(path, _)| path.strip_suffix(MANIFEST)?.strip_suffix('/'))
        .filter(|name| !name.contains('/') && !name.starts_with('_'))
        .collect()
}

/// The templates for `--template`, each with its description.
pub(crate) fn possible_values() -> Vec<clap::builder::PossibleValue> {
    names()
        .into_iter()
        .map(|name| {
            let value = clap::builder::PossibleValue::new(name);
            match Template::load(name) {
                Ok(template) => value.help(template.manifest.description),
                Err(_) => value,
            }
        })
        .collect()
}

impl Template {
    /// The embedded template called `name`.
    ///
    /// # Errors
    /// No such template, or a manifest that does not parse (a bug in the template).
    pub(crate) fn load(name: &str) -> Result<Template, CliError> {
        let Some(name) = names().into_iter().find(|n| *n == name) else {
            return Err(CliError::usage(
                format!("no template named `{name}`"),
                format!("choose one of: {}", names().join(", ")),
            ));
        };
        let path = format!("{name}/{MANIFEST}");
        let text = embedded::FILES
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, bytes)| String::from_utf8_lossy(bytes))
            .unwrap_or_default();
        let manifest = toml::from_str(&text).map_err(|e| {
            CliError::failure(
                format!("the manifest of template `{name}` is invalid: {e}"),
                None,
            )
        })?;
        Ok(Template { name, manifest })
    }

    /// The project's files, sorted by path.
    ///
    /// # Errors
    /// A template that does not render, or whose manifest names a file it does not make (bugs
    /// in the template).
    pub(crate) fn render(&self, context: &tera::Context) -> Result<Vec<File>, CliError> {
        let tera = engine().map_err(|e| self.broken(None, &e))?;
        let prefix = format!("{}/", self.name);
        let mut files = Vec::new();
        for (path, bytes) in embedded::FILES {
            let Some(relative) = path.strip_prefix(&prefix) else {
                continue;
            };
            if relative == MANIFEST {
                continue;
            }
            let (output, bytes) = match relative.strip_suffix(SUFFIX) {
                Some(output) => {
                    let text = tera
                        .render(path, context)
                        .map_err(|e| self.broken(Some(relative), &e))?;
                    (output, text.into_bytes())
                }
                None => (relative, bytes.to_vec()),
            };
            files.push(File {
                path: output.to_owned(),
                bytes,
                executable: self.manifest.executable.iter().any(|e| e == output),
            });
        }
        if let Some(missing) = self
            .manifest
            .executable
            .iter()
            .find(|e| !files.iter().any(|f| &f.path == *e))
        {
            return Err(CliError::failure(
                format!(
                    "template `{}` lists `{missing}` as executable but makes no such file",
                    self.name
                ),
                None,
            ));
        }
        files.sort();
        Ok(files)
    }

    fn broken(&self, file: Option<&str>, error: &tera::Error) -> CliError {
        let mut message = match file {
            Some(file) => format!("template `{}` failed to render `{file}`", self.name),
            None => format!("the templates failed to load (template `{}`)", self.name),
        };
        let mut source: Option<&dyn std::error::Error> = Some(error);
        while let Some(error) = source {
            message.push_str(&format!(": {error}"));
            source = error.source();
        }
        CliError::failure(message, None)
    }
}

/// Where the lock file of a project of its own is kept, relative to `templates/`.
const LOCK: &str = "_shared/Cargo.lock";

/// The `Cargo.lock` of a project of its own: the versions of the runtime's dependencies (and
/// the examples') in the mwgen workspace, so that the project builds offline once cargo's cache
/// holds them. Cargo adds the project and the runtime at the first build.
pub(crate) fn lock_file() -> File {
    let bytes = embedded::FILES
        .iter()
        .find(|(path, _)| *path == LOCK)
        .map(|(_, bytes)| bytes.to_vec())
        .unwrap_or_default();
    File {
        path: "Cargo.lock".to_owned(),
        bytes,
        executable: false,
    }
}

/// Every `*.tera` file of every folder, with the `toml` filter, and no HTML escaping.
fn engine() -> tera::Result<tera::Tera> {
    let mut tera = tera::Tera::default();
    tera.autoescape_on(Vec::new());
    let sources: Vec<(&str, String)> = embedded::FILES
        .iter()
        .filter(|(path, _)| path.ends_with(SUFFIX))
        .map(|(path, bytes)| (*path, String::from_utf8_lossy(bytes).into_owned()))
        .collect();
    tera.add_raw_templates(sources)?;
    tera.register_filter("toml", toml_filter);
    Ok(tera)
}

/// `{{ value | toml }}`: a string as a TOML string, quoted and escaped; a boolean as `true` or
/// `false`.
fn toml_filter(value: &tera::Value, _: &HashMap<String, tera::Value>) -> tera::Result<tera::Value> {
    match value {
        tera::Value::String(text) => Ok(tera::Value::String(
            toml::Value::String(text.clone()).to_string(),
        )),
        tera::Value::Bool(flag) => Ok(tera::Value::String(flag.to_string())),
        other => Err(tera::Error::msg(format!(
            "the `toml` filter takes a string or a boolean, not {other}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_is_embedded_with_its_defaults() {
        assert!(names().contains(&"blank"));
        let blank = Template::load("blank").unwrap();
        assert_eq!(blank.manifest.messages, MessageTypes::Optional);
        assert!(blank.manifest.defaults.is_some());
    }

    /// The run settings every project gets list the policies in a comment: the runtime's list,
    /// in its order.
    #[test]
    fn the_run_settings_name_every_policy_in_order() {
        let text = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/templates/_shared/Mw.toml.tera"
        ));
        let heading = "# Task distribution policy:";
        let start = text.find(heading).unwrap() + heading.len();
        let comment: Vec<&str> = text[start..]
            .lines()
            .take_while(|line| line.starts_with('#') || !line.contains('='))
            .map(|line| line.trim_start_matches('#'))
            .collect();
        let listed: Vec<&str> = comment
            .iter()
            .flat_map(|line| line.split(|c: char| c == ',' || c.is_whitespace()))
            .take_while(|word| !word.starts_with('('))
            .filter(|word| !word.is_empty() && *word != "or")
            .collect();
        let all: Vec<&str> = mw_runtime::PolicyName::ALL
            .iter()
            .map(|p| p.as_str())
            .collect();
        assert_eq!(listed, all);
    }

    #[test]
    fn toml_strings_are_escaped() {
        let value = tera::Value::String("a \"b\"\\c\nd".into());
        let shown = toml_filter(&value, &HashMap::new()).unwrap();
        let table: toml::Table =
            toml::from_str(&format!("x = {}", shown.as_str().unwrap())).unwrap();
        assert_eq!(table["x"].as_str(), Some("a \"b\"\\c\nd"));
    }
}
