//! Messages of any length over MPI, which counts bytes in C ints (at most 2 GiB per message).
//!
//! A long message is announced by a short one that holds its length (a little-endian `u64`);
//! its body follows as parts of at most [`PART`] bytes, in order, on the bulk communicator, which
//! keeps the order of the messages between two ranks. The receiver allocates the body once at
//! its announced length and receives each part into its place.

use std::ops::Range;

/// The longest part of a body: 1 GiB, well inside a C int.
pub(super) const PART: usize = 1 << 30;

/// The announcement of a body of `len` bytes.
pub(super) fn announcement(len: usize) -> [u8; 8] {
    (len as u64).to_le_bytes()
}

/// The body length an announcement holds, if it is one.
pub(super) fn announced(bytes: &[u8]) -> Option<usize> {
    let bytes: [u8; 8] = bytes.try_into().ok()?;
    usize::try_from(u64::from_le_bytes(bytes)).ok()
}

/// The byte ranges of the parts of a body of `len` bytes, each at most `part` long (an empty
/// body is one empty part, so that every announcement is followed by something).
pub(super) fn parts(len: usize, part: usize) -> impl Iterator<Item = Range<usize>> {
    let part = part.max(1);
    let count = len.div_ceil(part).max(1);
    (0..count).map(move |i| i * part..((i + 1) * part).min(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_cover_the_body_in_order_without_overlap() {
        for (len, part) in [(0, 4), (1, 4), (4, 4), (5, 4), (12, 4), (13, 4), (7, 1)] {
            let ranges: Vec<_> = parts(len, part).collect();
            assert!(
                ranges.iter().all(|r| r.len() <= part),
                "{len}/{part}: {ranges:?}"
            );
            assert_eq!(ranges.first().map(|r| r.start), Some(0));
            assert_eq!(ranges.last().map(|r| r.end), Some(len));
            for pair in ranges.windows(2) {
                assert_eq!(pair[0].end, pair[1].start, "{len}/{part}: {ranges:?}");
                assert!(!pair[1].is_empty());
            }
        }
    }

    #[test]
    fn a_body_just_over_the_mpi_limit_goes_in_three_parts() {
        // 2 GiB and one byte: two full parts and one byte.
        let len = i32::MAX as usize + 2;
        let ranges: Vec<_> = parts(len, PART).collect();
        assert_eq!(ranges, vec![0..PART, PART..2 * PART, 2 * PART..len]);
        assert!(ranges.iter().all(|r| r.len() <= i32::MAX as usize));
    }

    #[test]
    fn announcements_hold_the_length() {
        let len = 5 * PART + 17;
        assert_eq!(announced(&announcement(len)), Some(len));
        assert_eq!(announced(&[1, 2, 3]), None);
        assert_eq!(announced(&[]), None);
    }
}
