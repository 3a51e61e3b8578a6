//! Payload bytes and their checksums: tasks, results and the shared part carry bytes that the
//! other side can check, so a run proves that every byte arrived where it belonged.

use crate::times::SplitMix64;

/// Salts that keep the byte streams of a task, its result and the shared part apart.
pub const TASK: u64 = 0x7461_736b;
pub const RESULT: u64 = 0x7265_7375_6c74;
pub const SHARED: u64 = 0x7368_6172_6564;

/// `len` bytes drawn from SplitMix64 seeded with `key ^ salt`.
pub fn fill(key: u64, salt: u64, len: usize) -> Vec<u8> {
    let mut rng = SplitMix64::new(key ^ salt.rotate_left(32));
    let mut bytes = Vec::with_capacity(len);
    while bytes.len() + 8 <= len {
        bytes.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    let rest = len - bytes.len();
    bytes.extend_from_slice(&rng.next_u64().to_le_bytes()[..rest]);
    bytes
}

/// Whether `bytes` is exactly what [`fill`] makes for `key` and `salt`.
pub fn is_fill(bytes: &[u8], key: u64, salt: u64) -> bool {
    let mut rng = SplitMix64::new(key ^ salt.rotate_left(32));
    let mut words = bytes.chunks_exact(8);
    let whole = words.by_ref().all(|w| w == rng.next_u64().to_le_bytes());
    let rest = words.remainder();
    whole && rest == &rng.next_u64().to_le_bytes()[..rest.len()]
}

/// A 64-bit checksum of `bytes`, eight bytes at a step (not cryptographic: it catches bytes
/// that are lost, reordered or corrupted).
pub fn checksum(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (bytes.len() as u64).wrapping_mul(K);
    let mut words = bytes.chunks_exact(8);
    for word in words.by_ref() {
        let mut w = [0; 8];
        w.copy_from_slice(word);
        h = (h.rotate_left(23) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    for &b in words.remainder() {
        h = (h.rotate_left(23) ^ u64::from(b)).wrapping_mul(K);
    }
    h ^ (h >> 29)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_has_the_length_asked_and_is_recognised() {
        for len in [0, 1, 7, 8, 9, 100] {
            let bytes = fill(5, TASK, len);
            assert_eq!(bytes.len(), len);
            assert!(is_fill(&bytes, 5, TASK));
            if len > 0 {
                assert!(!is_fill(&bytes, 6, TASK));
                assert!(!is_fill(&bytes, 5, RESULT));
                let mut bad = bytes.clone();
                bad[len - 1] ^= 1;
                assert!(!is_fill(&bad, 5, TASK));
            }
        }
        assert_ne!(fill(1, TASK, 16), fill(1, RESULT, 16));
    }

    #[test]
    fn checksum_sees_changes() {
        let bytes = fill(9, SHARED, 37);
        let sum = checksum(&bytes);
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert_ne!(checksum(&bad), sum, "byte {i}");
        }
        assert_ne!(checksum(&bytes[..36]), sum);
        assert_ne!(checksum(&[]), checksum(&[0]));
    }
}
