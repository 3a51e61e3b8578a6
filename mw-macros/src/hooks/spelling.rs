//! Telling a misspelt hook from a helper method.

/// The candidate `name` is most likely a misspelling of, if any is close enough: the same
/// letters ignoring case and underscores (`doWork`, `finalWork`), or within an edit distance of
/// a quarter of the hook's length (one typo in `recover`, two in `partition`).
pub(crate) fn misspelling_of<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let folded = fold(name);
    candidates
        .into_iter()
        .filter_map(|hook| {
            if fold(hook) == folded {
                return Some((0, hook));
            }
            let distance = edit_distance(name, hook);
            (distance <= (hook.len() / 4).max(1)).then_some((distance, hook))
        })
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, hook)| hook)
}

fn fold(name: &str) -> String {
    name.chars()
        .filter(|&c| c != '_')
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
/// neighbours each cost one.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // rows[i][j]: distance between a[..i] and b[..j].
    let mut rows = vec![vec![0; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const MASTER: [&str; 5] = [
        "initialize",
        "partition",
        "recover",
        "end_iteration",
        "final_work",
    ];

    #[test]
    fn distances() {
        assert_eq!(edit_distance("partition", "partition"), 0);
        assert_eq!(edit_distance("partiton", "partition"), 1);
        assert_eq!(edit_distance("patrition", "partition"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn misspellings_are_found() {
        assert_eq!(misspelling_of("partiton", MASTER), Some("partition"));
        assert_eq!(misspelling_of("recovr", MASTER), Some("recover"));
        assert_eq!(misspelling_of("initialise", MASTER), Some("initialize"));
        assert_eq!(misspelling_of("finalWork", MASTER), Some("final_work"));
        assert_eq!(
            misspelling_of("EndIteration", MASTER),
            Some("end_iteration")
        );
    }

    #[test]
    fn helpers_are_left_alone() {
        for helper in [
            "new",
            "step",
            "init",
            "finalize",
            "recovered",
            "tasks",
            "total",
        ] {
            assert_eq!(misspelling_of(helper, MASTER), None, "{helper}");
        }
    }
}
