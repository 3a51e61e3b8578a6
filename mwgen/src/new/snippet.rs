//! Showing where in the user's text a problem is, the way rustc does:
//!
//! ```text
//! error: invalid `--in` definition: expected `:`
//!   |
//! 1 | struct Range { first u32, count: u32 }
//!   |                      ^^^ expected `:`
//! ```

use std::fmt::Write as _;
use std::path::Path;

use proc_macro2::{LineColumn, Span};

use crate::CliError;

/// Text the user gave: a definition on the command line or a file.
#[derive(Debug)]
pub(crate) struct Source {
    label: String,
    text: String,
    is_file: bool,
}

impl Source {
    /// A definition given with a flag (`--in`).
    pub(crate) fn definition(flag: &str, text: &str) -> Self {
        Source {
            label: flag.to_owned(),
            text: text.to_owned(),
            is_file: false,
        }
    }

    /// A file, labelled with its path as the user gave it.
    pub(crate) fn file(path: &Path, text: &str) -> Self {
        Source {
            label: path.display().to_string(),
            text: text.to_owned(),
            is_file: true,
        }
    }

    pub(crate) fn label(&self) -> &str {
        &self.label
    }

    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    pub(crate) fn is_file(&self) -> bool {
        self.is_file
    }

    /// A usage error whose message is followed by the snippet that shows `span`.
    pub(crate) fn error(
        &self,
        span: Span,
        message: impl Into<String>,
        label: impl AsRef<str>,
        help: impl Into<String>,
    ) -> CliError {
        let mut message = message.into();
        message.push_str(&self.snippet(span, label.as_ref()));
        CliError::usage(message, help)
    }

    /// `file:line:column`, or `` `--in` `` with the column, for mentioning a place in prose.
    pub(crate) fn place(&self, span: Span) -> String {
        let (start, _) = self.range(span);
        if self.is_file {
            format!("`{}:{}:{}`", self.label, start.line, start.column + 1)
        } else {
            format!("`{}` column {}", self.label, start.column + 1)
        }
    }

    /// The text a span covers (on its first line).
    pub(crate) fn text_of(&self, span: Span) -> String {
        let (start, end) = self.range(span);
        let Some(line) = self.text.lines().nth(start.line.saturating_sub(1)) else {
            return String::new();
        };
        let to = if end.line == start.line {
            end.column
        } else {
            usize::MAX
        };
        line.chars()
            .skip(start.column)
            .take(to.saturating_sub(start.column))
            .collect::<String>()
            .trim_end()
            .to_owned()
    }

    /// The lines after an `error:` line: where (for a file), the source line and a caret under
    /// the span, with `label` beside it.
    pub(crate) fn snippet(&self, span: Span, label: &str) -> String {
        let (start, end) = self.range(span);
        let lines: Vec<&str> = self.text.lines().collect();
        let line_index = start
            .line
            .saturating_sub(1)
            .min(lines.len().saturating_sub(1));
        let line = lines.get(line_index).copied().unwrap_or("");
        let number = (line_index + 1).to_string();
        let gutter = " ".repeat(number.len());
        let line_chars = line.chars().count();
        let column = start.column.min(line_chars);
        let width = if end.line == start.line && end.column > start.column {
            end.column.min(line_chars.max(column + 1)) - column
        } else {
            1
        };
        let pad: String = line
            .chars()
            .take(column)
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        let mut out = String::new();
        if self.is_file {
            let _ = write!(
                out,
                "\n{gutter}--> {}:{}:{}",
                self.label,
                line_index + 1,
                column + 1
            );
        }
        let _ = write!(
            out,
            "\n{gutter} |\n{number} | {line}\n{gutter} | {pad}{} {label}",
            "^".repeat(width.max(1))
        );
        out.truncate(out.trim_end().len());
        out
    }

    /// Start and end of a span in this text. syn reports the end of the input as the start of
    /// the text (line 0 or before the first token); those point after the last character.
    fn range(&self, span: Span) -> (LineColumn, LineColumn) {
        let start = span.start();
        let end = span.end();
        // An empty span at the very start is syn's call site: the end of the input.
        let call_site = start == end && start.line <= 1 && start.column == 0;
        if start.line == 0 || call_site {
            let last = self.end();
            return (last, last);
        }
        (start, end)
    }

    /// The position after the last non-blank character.
    fn end(&self) -> LineColumn {
        let trimmed = self.text.trim_end();
        let line = trimmed.lines().count().max(1);
        let column = trimmed.lines().last().map_or(0, |l| l.chars().count());
        LineColumn { line, column }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caret_under_the_error() {
        let source = Source::definition("--in", "struct Range { first u32, count: u32 }");
        let error = syn::parse_file(source.text()).unwrap_err();
        let text = source.snippet(error.span(), "expected `:`");
        assert_eq!(
            text,
            "\n  |\n1 | struct Range { first u32, count: u32 }\n  |                      ^^^ expected `:`"
        );
    }

    #[test]
    fn files_say_where() {
        let text = "struct A {\n    x: u32,\n    y u32,\n}\n";
        let source = Source::file(Path::new("defs.rs"), text);
        let error = syn::parse_file(source.text()).unwrap_err();
        let shown = source.snippet(error.span(), "here");
        assert!(
            shown.starts_with("\n --> defs.rs:3:7\n  |\n3 |     y u32,\n  |       ^^^ here"),
            "{shown}"
        );
    }

    #[test]
    fn end_of_input() {
        let source = Source::definition("--in", "struct Range { first: u32");
        let error = syn::parse_file(source.text()).unwrap_err();
        let shown = source.snippet(error.span(), "unclosed");
        assert!(shown.contains("1 | struct Range { first: u32\n"), "{shown}");
    }
}
