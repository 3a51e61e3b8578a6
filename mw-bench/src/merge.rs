//! Regenerating some sections of a document already written (`--merge`): when the code one
//! experiment measures changes, that experiment runs alone and its section replaces the old one
//! in `BENCHMARKS.md`, and its numbers the old ones in `results.json`, while every other section
//! stays as the run in the document's header wrote it.
//!
//! A merged section says so under its heading, in words made from its own run: the command,
//! when, on what machine (a virtual machine's processor may change between runs), in how long
//! and under what peak load. The document's opening lists the sections so regenerated, and its
//! table of run times gives theirs. The existing document is read before any experiment runs,
//! so that a missing or unreadable one fails at once, not after the experiment's hour.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::doc::{Document, Section, Table};
use crate::machine::Load;
use crate::{BenchError, Size};

/// The heading of the section whose table gives each experiment's run time.
const TIMES_SECTION: &str = "Sleeping tasks, spinning tasks, an emulated network";

/// A document written before, to merge sections into.
#[derive(Debug)]
pub struct Existing {
    markdown_path: PathBuf,
    json_path: PathBuf,
    markdown: String,
    json: Value,
}

impl Existing {
    /// Reads `out/BENCHMARKS.md` and `out/figures/results.json`, a document of experiments of
    /// `size`.
    ///
    /// # Errors
    /// Either file missing or unreadable, the numbers not JSON, or the document's experiments
    /// of another size (a section of `tiny` runs read among `full` ones would mislead).
    pub fn read(out: &Path, figures: &Path, size: Size) -> Result<Existing, BenchError> {
        let markdown_path = out.join("BENCHMARKS.md");
        let json_path = out.join(figures).join("results.json");
        let read = |path: &Path| {
            std::fs::read_to_string(path).map_err(|e| {
                BenchError(format!(
                    "error: --merge needs the document it merges into, and `{}` cannot be read: \
                     {e}\nhelp: write the whole document first (`mw-bench all -o {}`), or leave \
                     out --merge to write this experiment's document alone",
                    path.display(),
                    out.display()
                ))
            })
        };
        let markdown = read(&markdown_path)?;
        let json: Value = serde_json::from_str(&read(&json_path)?).map_err(|e| {
            BenchError(format!(
                "error: `{}` is not the numbers of a document: {e}",
                json_path.display()
            ))
        })?;
        if !json.get("sections").is_some_and(Value::is_object) {
            return Err(BenchError(format!(
                "error: `{}` has no sections to merge into",
                json_path.display()
            )));
        }
        let theirs = json
            .get("size")
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        if theirs != size.name() {
            return Err(BenchError(format!(
                "error: `{}` is a document of `{theirs}` experiments, and this run's are `{}`\n\
                 help: merge runs of the document's size (`--size {theirs}`)",
                markdown_path.display(),
                size.name()
            )));
        }
        Ok(Existing {
            markdown_path,
            json_path,
            markdown,
            json,
        })
    }

    /// Puts the sections of `document` in place of their old versions (or after the last
    /// section, for one the document lacks), with their figures linked inside `figures`;
    /// returns the document's path.
    ///
    /// # Errors
    /// A file that could not be written.
    pub fn merge(mut self, document: &Document, figures: &Path) -> Result<PathBuf, BenchError> {
        let (mut preamble, mut sections) = split(&self.markdown);
        for section in &document.sections {
            let note = note(document, section);
            let text = section.markdown(figures, Some(&note));
            match sections
                .iter_mut()
                .find(|(title, _)| *title == section.title)
            {
                Some((_, old)) => *old = text,
                None => sections.push((section.title.clone(), text)),
            }
            self.json["sections"][&section.title] = section.data.clone();
            self.json["regenerated_alone"][&section.title] = json!({
                "generated": document.generated,
                "seconds": section.seconds,
                "peak_load": document.peak_load,
                "machine": document.machine.describe(),
                "command": document.command,
            });
            if let Some((_, times)) = sections.iter_mut().find(|(t, _)| t == TIMES_SECTION) {
                *times = with_time(
                    times,
                    &section.title,
                    &format!("{:.0} s (alone, {})", section.seconds, document.generated),
                );
            }
        }
        let merged: Vec<&str> = sections
            .iter()
            .map(|(title, _)| title.as_str())
            .filter(|title| self.json["regenerated_alone"].get(title).is_some())
            .collect();
        preamble = with_merged_list(&preamble, &merged);
        let mut markdown = preamble;
        for (_, text) in &sections {
            markdown.push_str(text);
        }
        let put = |path: &Path, text: &str| {
            std::fs::write(path, text)
                .map_err(|e| BenchError(format!("error: cannot write `{}`: {e}", path.display())))
        };
        let json = serde_json::to_string_pretty(&self.json).unwrap_or_default() + "\n";
        put(&self.json_path, &json)?;
        put(&self.markdown_path, &markdown)?;
        Ok(self.markdown_path)
    }
}

/// What a merged section says under its heading: made from the run that regenerated it.
fn note(document: &Document, section: &Section) -> String {
    let cores = document.machine.cores;
    let load = match Load::of(cores, document.peak_load) {
        Load::Quiet(peak) => format!(
            "the 1-minute load average peaking at {peak:.2} on its {cores} cores, its own runs \
             included"
        ),
        Load::Contended(peak) => format!(
            "the 1-minute load average peaking at {peak:.2} on its {cores} cores, above them: \
             its own runs or other programs competed for them at times"
        ),
        Load::Unread => "its load unread".to_owned(),
    };
    format!(
        "Regenerated alone (`{}`) at {} on {} in {:.0} s, {load}. The rest of the document is \
         from the run its header describes.",
        document.command,
        document.generated,
        document.machine.describe(),
        section.seconds
    )
}

/// The text before the first section, and each section's title and text (heading included).
fn split(markdown: &str) -> (String, Vec<(String, String)>) {
    let mut preamble = String::new();
    let mut sections: Vec<(String, String)> = Vec::new();
    for line in markdown.split_inclusive('\n') {
        if let Some(title) = line.strip_prefix("## ") {
            sections.push((title.trim_end().to_owned(), String::new()));
        }
        match sections.last_mut() {
            Some((_, text)) => text.push_str(line),
            None => preamble.push_str(line),
        }
    }
    (preamble, sections)
}

/// `text` with `title`'s row of the run-time table (`| experiment | run time |`) set to
/// `time`, added at the end where it had none; the table drawn again so its columns line up.
fn with_time(text: &str, title: &str, time: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let Some(start) = lines
        .iter()
        .position(|l| l.starts_with("| experiment") && l.contains("run time"))
    else {
        return text.to_owned();
    };
    let end = lines[start..]
        .iter()
        .position(|l| !l.starts_with('|'))
        .map_or(lines.len(), |n| start + n);
    let mut table = Table::new(["experiment", "run time"]);
    // The header and its rule, then a row per experiment.
    for row in &lines[start + 2..end] {
        let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
        if let [name, value] = cells[..] {
            table.push([name.to_owned(), value.to_owned()]);
        }
    }
    match table.rows.iter_mut().find(|row| row[0] == title) {
        Some(row) => row[1] = time.to_owned(),
        None => table.push([title.to_owned(), time.to_owned()]),
    }
    let mut out = lines[..start].join("\n");
    if start > 0 {
        out.push('\n');
    }
    out.push_str(&table.markdown());
    if end < lines.len() {
        out.push_str(&lines[end..].join("\n"));
        out.push('\n');
    }
    if text.ends_with("\n\n") && !out.ends_with("\n\n") {
        out.push('\n');
    }
    out
}

/// The document's opening with its paragraph on the sections regenerated alone (`merged`, in
/// the document's order) written anew, or added at its end.
fn with_merged_list(preamble: &str, merged: &[&str]) -> String {
    let names: Vec<String> = merged.iter().map(|t| format!("*{t}*")).collect();
    let paragraph = match names.len() {
        0 => return preamble.to_owned(),
        1 => format!(
            "The section {} was regenerated alone after the code it measures changed; it says \
             when, on what machine, in how long and under what peak load below its heading.",
            names[0]
        ),
        _ => format!(
            "The sections {} were regenerated alone after the code they measure changed; each \
             says when, in how long and under what peak load below its heading (and on what \
             machine, where that was recorded). The whole document is to be regenerated at once \
             on a quiet machine.",
            names.join(", ")
        ),
    };
    let mut paragraphs: Vec<&str> = preamble.trim_end().split("\n\n").collect();
    paragraphs.retain(|p| !(p.starts_with("The section") && p.contains("regenerated alone")));
    let mut out = paragraphs.join("\n\n");
    out.push_str("\n\n");
    out.push_str(&paragraph);
    out.push_str("\n\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Verdict;
    use crate::machine::Machine;

    fn section(title: &str, verdict: &str, seconds: f64) -> Section {
        Section {
            title: title.into(),
            verdict: Verdict::Measured(verdict.into()),
            paper: "What the paper says.".into(),
            ours: format!("What {title} measured."),
            figures: Vec::new(),
            data: json!({ "verdict": verdict }),
            seconds,
        }
    }

    fn document(command: &str, cpu: &str, sections: Vec<Section>) -> Document {
        Document {
            size: Size::Full,
            command: command.into(),
            machine: Machine {
                cpu: cpu.into(),
                cores: 2,
                os: "Linux".into(),
                rustc: "rustc".into(),
            },
            generated: "2026-01-02 03:04 UTC".into(),
            seconds: sections.iter().map(|s| s.seconds).sum(),
            peak_load: Some(1.5),
            sections,
        }
    }

    /// A whole document of three sections written into a folder, as `all` writes it.
    fn written() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let whole = document(
            "mw-bench all -o .",
            "Old CPU",
            vec![
                section("Alpha", "alpha before", 10.0),
                section("Beta", "beta before", 20.0),
                section("Gamma", "gamma before", 30.0),
            ],
        );
        std::fs::create_dir_all(dir.path().join("figs")).unwrap();
        std::fs::write(
            dir.path().join("BENCHMARKS.md"),
            whole.markdown(Path::new("figs")),
        )
        .unwrap();
        std::fs::write(dir.path().join("figs/results.json"), whole.json()).unwrap();
        dir
    }

    #[test]
    fn a_merged_section_replaces_its_old_version_and_says_where_it_ran() {
        let dir = written();
        let existing = Existing::read(dir.path(), Path::new("figs"), Size::Full).unwrap();
        let again = document(
            "mw-bench beta -o . --merge",
            "New CPU",
            vec![section("Beta", "beta after", 42.0)],
        );
        existing.merge(&again, Path::new("figs")).unwrap();
        let md = std::fs::read_to_string(dir.path().join("BENCHMARKS.md")).unwrap();
        assert!(!md.contains("beta before"), "{md}");
        assert!(md.contains("**Measured**: beta after"), "{md}");
        assert!(
            md.contains("alpha before") && md.contains("gamma before"),
            "{md}"
        );
        // In its place, between the others.
        let (a, b, g) = (
            md.find("## Alpha").unwrap(),
            md.find("## Beta").unwrap(),
            md.find("## Gamma").unwrap(),
        );
        assert!(a < b && b < g, "{md}");
        assert!(
            md.contains(
                "## Beta\n\n*Regenerated alone (`mw-bench beta -o . --merge`) at 2026-01-02 \
                 03:04 UTC on New CPU, 2 cores in 42 s, the 1-minute load average peaking at \
                 1.50 on its 2 cores, its own runs included."
            ),
            "{md}"
        );
        assert!(
            md.contains("| Beta       | 42 s (alone, 2026-01-02 03:04 UTC) |"),
            "{md}"
        );
        assert!(md.contains("| Alpha      |"), "{md}");
        assert!(
            md.contains("The section *Beta* was regenerated alone after the code it measures"),
            "{md}"
        );
        let json: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("figs/results.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(json["sections"]["Beta"]["verdict"], "beta after");
        assert_eq!(json["sections"]["Alpha"]["verdict"], "alpha before");
        assert_eq!(
            json["regenerated_alone"]["Beta"]["machine"],
            "New CPU, 2 cores"
        );
    }

    #[test]
    fn merging_twice_lists_both_sections_once_in_the_documents_order() {
        let dir = written();
        for title in ["Gamma", "Alpha", "Gamma"] {
            let existing = Existing::read(dir.path(), Path::new("figs"), Size::Full).unwrap();
            let again = document("c", "CPU", vec![section(title, "after", 1.0)]);
            existing.merge(&again, Path::new("figs")).unwrap();
        }
        let md = std::fs::read_to_string(dir.path().join("BENCHMARKS.md")).unwrap();
        assert_eq!(md.matches("were regenerated alone").count(), 1, "{md}");
        assert!(
            md.contains("The sections *Alpha*, *Gamma* were regenerated alone"),
            "{md}"
        );
        assert_eq!(md.matches("## Gamma").count(), 1, "{md}");
        assert_eq!(md.matches("*Regenerated alone").count(), 2, "{md}");
    }

    #[test]
    fn a_section_the_document_lacks_comes_last() {
        let dir = written();
        let existing = Existing::read(dir.path(), Path::new("figs"), Size::Full).unwrap();
        let again = document("c", "CPU", vec![section("Delta", "new", 5.0)]);
        existing.merge(&again, Path::new("figs")).unwrap();
        let md = std::fs::read_to_string(dir.path().join("BENCHMARKS.md")).unwrap();
        assert!(
            md.find("## Gamma").unwrap() < md.find("## Delta").unwrap(),
            "{md}"
        );
        assert!(md.contains("| Delta      | 5 s (alone,"), "{md}");
    }

    #[test]
    fn a_run_of_another_size_is_not_merged() {
        let dir = written();
        let e = Existing::read(dir.path(), Path::new("figs"), Size::Tiny).unwrap_err();
        assert!(e.0.contains("a document of `full` experiments"), "{e}");
        assert!(
            e.0.contains("help: merge runs of the document's size (`--size full`)"),
            "{e}"
        );
    }

    #[test]
    fn merging_into_nothing_says_what_is_missing_and_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let e = Existing::read(dir.path(), Path::new("figs"), Size::Full).unwrap_err();
        assert!(e.0.contains("--merge needs the document"), "{e}");
        assert!(e.0.contains("help: write the whole document first"), "{e}");
    }
}
