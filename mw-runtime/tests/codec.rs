//! The codec round-trips every supported type and survives hostile input: truncated, oversized
//! or random bytes give a `DecodeError`, never a panic, and never a large allocation.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use mw_runtime::codec::{self, DecodeError, Message};
use proptest::prelude::*;

/// Counts the largest single allocation, to check that lying length prefixes are not trusted.
struct Largest;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

#[allow(unsafe_code)]
// SAFETY: forwards to the system allocator unchanged; only records sizes.
unsafe impl GlobalAlloc for Largest {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        // SAFETY: same contract as our caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Largest = Largest;

type Kitchen = (
    u8,
    i64,
    f32,
    bool,
    char,
    String,
    Vec<u16>,
    Option<Box<(u128, [i32; 3])>>,
    Vec<Vec<String>>,
    Vec<[f64; 2]>,
    Vec<Option<bool>>,
    (usize, isize, ()),
);

fn kitchen() -> impl Strategy<Value = Kitchen> {
    (
        (
            any::<u8>(),
            any::<i64>(),
            any::<f32>(),
            any::<bool>(),
            any::<char>(),
            ".{0,20}",
        ),
        (
            prop::collection::vec(any::<u16>(), 0..50),
            prop::option::of((any::<u128>(), any::<[i32; 3]>()).prop_map(Box::new)),
            prop::collection::vec(prop::collection::vec(".{0,5}", 0..4), 0..4),
            prop::collection::vec(any::<[f64; 2]>(), 0..30),
            prop::collection::vec(prop::option::of(any::<bool>()), 0..10),
            (any::<usize>(), any::<isize>(), Just(())),
        ),
    )
        .prop_map(|((a, b, c, d, e, f), (g, h, i, j, k, l))| (a, b, c, d, e, f, g, h, i, j, k, l))
}

/// Equality that treats NaN as equal to itself, through the encoding.
fn same<T: Message>(a: &T, b: &T) -> bool {
    codec::encode(a) == codec::encode(b)
}

fn decode_all<T: Message>(bytes: &[u8]) -> Result<T, DecodeError> {
    codec::decode::<T>(bytes)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn round_trip(value in kitchen()) {
        let bytes = codec::encode(&value);
        prop_assert_eq!(bytes.len(), value.encoded_len());
        let back: Kitchen = codec::decode(&bytes).unwrap();
        prop_assert!(same(&back, &value));
    }

    #[test]
    fn every_truncation_is_an_error(value in kitchen(), cut in any::<prop::sample::Index>()) {
        let bytes = codec::encode(&value);
        let cut = cut.index(bytes.len());
        prop_assert!(decode_all::<Kitchen>(&bytes[..cut]).is_err());
    }

    #[test]
    fn trailing_bytes_are_an_error(value in kitchen(), extra in 1usize..8) {
        let mut bytes = codec::encode(&value);
        bytes.extend(std::iter::repeat_n(0, extra));
        prop_assert!(decode_all::<Kitchen>(&bytes).is_err());
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode_all::<Kitchen>(&bytes);
        let _ = decode_all::<Vec<String>>(&bytes);
        let _ = decode_all::<Vec<Vec<[u64; 4]>>>(&bytes);
        let _ = decode_all::<Vec<Option<Box<Vec<char>>>>>(&bytes);
        let _ = decode_all::<(String, Vec<bool>, Option<u8>)>(&bytes);
    }

    #[test]
    fn flipped_bytes_never_panic(value in kitchen(), at in any::<prop::sample::Index>(), bits in 1u8..) {
        let mut bytes = codec::encode(&value);
        if !bytes.is_empty() {
            let i = at.index(bytes.len());
            bytes[i] ^= bits;
        }
        let _ = decode_all::<Kitchen>(&bytes);
    }
}

#[test]
fn lying_lengths_do_not_allocate() {
    // A 10-byte message claiming 2^62 elements of every kind of sequence.
    let mut bytes = Vec::new();
    codec::write_varint(&mut bytes, 1 << 62);
    bytes.extend_from_slice(&[1; 9]);
    LARGEST.store(0, Ordering::Relaxed);
    assert!(decode_all::<Vec<u8>>(&bytes).is_err());
    assert!(decode_all::<Vec<f64>>(&bytes).is_err());
    assert!(decode_all::<String>(&bytes).is_err());
    assert!(decode_all::<Vec<Option<[u8; 4096]>>>(&bytes).is_err());
    assert!(decode_all::<Vec<Vec<Vec<u8>>>>(&bytes).is_err());
    let largest = LARGEST.load(Ordering::Relaxed);
    assert!(
        largest < 64 * 1024,
        "allocated {largest} bytes for a 10-byte message"
    );
}
