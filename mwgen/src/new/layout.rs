//! The message types as rustfmt lays them out. prettyplease prints a struct's fields one per
//! line, as rustfmt does, but keeps a tuple struct, a tuple variant or a struct variant on one
//! line where rustfmt breaks it, so `cargo fmt --check` would fail on the generated project.
//!
//! rustfmt's rules, with its default widths: a tuple struct or tuple variant whose fields take
//! more than 60 columns (`fn_call_width`), and a struct variant whose fields take more than 35
//! (`struct_variant_width`), go one field per line; and when an enum mixes variants on one
//! line with variants that span several (broken, or with attributes or doc comments above
//! them), every struct variant of that enum does.

/// rustfmt's `fn_call_width`, which also bounds tuple structs and tuple variants.
const TUPLE_WIDTH: usize = 60;
/// rustfmt's `struct_variant_width`.
const STRUCT_VARIANT_WIDTH: usize = 35;
/// rustfmt's `max_width`.
const MAX_WIDTH: usize = 100;

/// One item as prettyplease printed it, laid out as rustfmt would.
pub(crate) fn item(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(broken) = tuple_struct(line) {
            out.extend(broken);
        } else if !line.starts_with(' ') && line.contains("enum ") && line.ends_with('{') {
            out.push(line.to_owned());
            let end = (i + 1..lines.len())
                .find(|&j| lines[j] == "}")
                .unwrap_or(lines.len());
            out.extend(enum_body(&lines[i + 1..end]));
            i = end + 1;
            continue;
        } else {
            out.push(line.to_owned());
        }
        i += 1;
    }
    out.join("\n")
}

/// `pub struct P(pub u64, ...);` broken into one field per line when too wide.
fn tuple_struct(line: &str) -> Option<Vec<String>> {
    if line.starts_with([' ', '#', '/']) || !line.contains("struct ") {
        return None;
    }
    let (head, rest) = line.split_once('(')?;
    let inner = rest.strip_suffix(");")?;
    if inner.len() <= TUPLE_WIDTH && line.len() <= MAX_WIDTH {
        return None;
    }
    let mut out = vec![format!("{head}(")];
    out.extend(parts(inner).iter().map(|p| format!("    {},", p.trim())));
    out.push(");".to_owned());
    Some(out)
}

/// A variant: its attribute lines and its own lines.
struct Variant<'a> {
    attrs: Vec<&'a str>,
    lines: Vec<&'a str>,
}

impl Variant<'_> {
    /// The name and the fields of a one-line struct variant (`A { x: u8 },`).
    fn struct_fields(&self) -> Option<(&str, &str)> {
        let [line] = self.lines.as_slice() else {
            return None;
        };
        let (name, body) = line
            .strip_prefix("    ")?
            .strip_suffix(" },")?
            .split_once(" { ")?;
        Some((name, body))
    }

    /// The name and the fields of a one-line tuple variant (`A(u8, u16),`).
    fn tuple_fields(&self) -> Option<(&str, &str)> {
        let [line] = self.lines.as_slice() else {
            return None;
        };
        let (name, rest) = line.strip_prefix("    ")?.split_once('(')?;
        let inner = rest.strip_suffix("),")?;
        (!name.contains(' ')).then_some((name, inner))
    }

    fn too_wide(&self) -> bool {
        let over = |width| self.lines.iter().any(|l| l.len() > width);
        over(MAX_WIDTH)
            || self
                .struct_fields()
                .is_some_and(|(_, body)| body.len() > STRUCT_VARIANT_WIDTH)
            || self
                .tuple_fields()
                .is_some_and(|(_, inner)| inner.len() > TUPLE_WIDTH)
    }

    fn multi_line(&self) -> bool {
        !self.attrs.is_empty() || self.lines.len() > 1 || self.too_wide()
    }
}

fn enum_body(lines: &[&str]) -> Vec<String> {
    let mut variants: Vec<Variant<'_>> = Vec::new();
    let mut attrs = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[") || trimmed.starts_with("//") {
            attrs.push(line);
            i += 1;
            continue;
        }
        let mut own = vec![line];
        if line.ends_with('{') || line.ends_with('(') {
            // Broken already: up to the closing line at the variant's indent.
            while i + 1 < lines.len() {
                i += 1;
                own.push(lines[i]);
                if lines[i].starts_with("    }") || lines[i].starts_with("    )") {
                    break;
                }
            }
        }
        variants.push(Variant {
            attrs: std::mem::take(&mut attrs),
            lines: own,
        });
        i += 1;
    }
    // rustfmt spreads the struct variants when the enum mixes one-line and multi-line
    // variants, not when every variant spans several lines.
    let mixed =
        variants.iter().any(Variant::multi_line) && variants.iter().any(|v| !v.multi_line());
    let mut out: Vec<String> = Vec::new();
    for variant in &variants {
        out.extend(variant.attrs.iter().map(|a| (*a).to_owned()));
        if let Some((name, body)) = variant.struct_fields() {
            if mixed && !body.trim().is_empty() {
                out.push(format!("    {name} {{"));
                out.extend(parts(body).iter().map(|p| format!("        {},", p.trim())));
                out.push("    },".to_owned());
                continue;
            }
        }
        if let Some((name, inner)) = variant.tuple_fields() {
            if variant.too_wide() {
                out.push(format!("    {name}("));
                out.extend(
                    parts(inner)
                        .iter()
                        .map(|p| format!("        {},", p.trim())),
                );
                out.push("    ),".to_owned());
                continue;
            }
        }
        out.extend(variant.lines.iter().map(|l| (*l).to_owned()));
    }
    out.push("}".to_owned());
    out
}

/// `a: u8, b: (u8, u16)` → `a: u8`, `b: (u8, u16)`: split at the commas outside brackets.
fn parts(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' | '{' | '<' => depth += 1,
            ')' | ']' | '}' | '>' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if !text[start..].trim().is_empty() {
        parts.push(&text[start..]);
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_struct_variants_break_and_take_the_others_along() {
        let text = "pub enum R {\n    A { id: u64, long_field_name: String, pair: (u8, u16) },\n    \
                    B { x: u8 },\n    C(u8),\n    D,\n}";
        assert_eq!(
            item(text),
            "pub enum R {\n    A {\n        id: u64,\n        long_field_name: String,\n        \
             pair: (u8, u16),\n    },\n    B {\n        x: u8,\n    },\n    C(u8),\n    D,\n}"
        );
    }

    #[test]
    fn narrow_enums_stay_on_one_line_each() {
        let text = "pub enum R {\n    A { x: u8 },\n    C(u8, u16),\n    D,\n}";
        assert_eq!(item(text), text);
    }

    #[test]
    fn a_doc_comment_spreads_the_struct_variants() {
        let text = "pub enum R {\n    /// The first.\n    A { x: u8 },\n    D,\n}";
        assert_eq!(
            item(text),
            "pub enum R {\n    /// The first.\n    A {\n        x: u8,\n    },\n    D,\n}"
        );
    }

    #[test]
    fn documented_variants_alone_stay_on_one_line() {
        let text =
            "pub enum R {\n    /// Ok.\n    A(u8),\n    /// Failed.\n    B { why: String },\n}";
        assert_eq!(item(text), text);
    }

    #[test]
    fn wide_tuples_go_one_field_per_line() {
        let fields = ["pub u64"; 7].join(", ");
        let text = format!("pub struct S({fields});");
        assert_eq!(
            item(&text),
            format!("pub struct S(\n{});", "    pub u64,\n".repeat(7))
        );
        let narrow = format!("pub struct S({});", ["pub u64"; 6].join(", "));
        assert_eq!(item(&narrow), narrow);
        let text = "pub enum E {\n    Alpha(u64, String, Vec<f64>, [u8; 16], (u32, u32), \
                    Option<String>, u8),\n    Beta(u8),\n}";
        assert_eq!(
            item(text),
            "pub enum E {\n    Alpha(\n        u64,\n        String,\n        Vec<f64>,\n        \
             [u8; 16],\n        (u32, u32),\n        Option<String>,\n        u8,\n    ),\n    \
             Beta(u8),\n}"
        );
    }
}
