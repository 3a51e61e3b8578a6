//! The repository's BENCHMARKS.md as readers get it: every figure it shows is a file of the
//! repository, named relative to the document (a section regenerated alone into another
//! folder and spliced in once pointed at that folder instead).
#![allow(clippy::unwrap_used)]

use std::path::Path;

/// The targets of the Markdown images `![alt](target)` of `text`.
fn images(text: &str) -> Vec<&str> {
    text.match_indices("![")
        .filter_map(|(at, _)| {
            let rest = &text[at..];
            let open = rest.find("](")? + 2;
            let close = rest[open..].find(')')?;
            Some(&rest[open..open + close])
        })
        .collect()
}

#[test]
fn every_figure_of_benchmarks_md_is_in_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let text = std::fs::read_to_string(root.join("BENCHMARKS.md")).unwrap();
    let figures = images(&text);
    assert!(!figures.is_empty(), "BENCHMARKS.md shows no figure");
    for target in figures {
        assert!(
            Path::new(target).is_relative(),
            "BENCHMARKS.md shows `{target}`, a path outside the repository"
        );
        assert!(
            root.join(target).is_file(),
            "BENCHMARKS.md shows `{target}`, which the repository does not have"
        );
    }
}

#[test]
fn images_are_read_from_markdown() {
    let text = "a ![x](docs/a.svg) b ![y (z)](/tmp/b.svg)\n![](c.svg";
    assert_eq!(images(text), vec!["docs/a.svg", "/tmp/b.svg"]);
}
