//! The codec round-trips every supported type and survives hostile input: truncated, oversized
//! or random bytes give a `DecodeError`, never a panic, and never a large allocation.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use mw_runtime::codec::{self, DecodeError, DecodeErrorKind, Message};
use proptest::prelude::*;

/// Counts the largest single allocation, to check that lying length prefixes are not trusted,
/// and each thread's peak of memory held, to check what a decode takes relative to its input.
struct Largest;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Bytes this thread holds (what it allocated less what it freed) and their peak.
    static HELD: Cell<(isize, isize)> = const { Cell::new((0, 0)) };
}

fn held(change: isize) {
    // `try_with`: the allocator also runs while the thread's locals are torn down.
    let _ = HELD.try_with(|held| {
        let (now, peak) = held.get();
        let now = now + change;
        held.set((now, peak.max(now)));
    });
}

/// The most memory this thread held at once while `f` ran, beyond what it held before.
fn peak_memory<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let start = HELD.with(|held| {
        let (now, _) = held.get();
        held.set((now, now));
        now
    });
    let value = f();
    let peak = HELD.with(|held| held.get().1);
    (value, (peak - start).max(0) as usize)
}

#[allow(unsafe_code)]
// SAFETY: forwards to the system allocator unchanged; only records sizes.
unsafe impl GlobalAlloc for Largest {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        held(layout.size() as isize);
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        held(-(layout.size() as isize));
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        // Counted as the new block before the old one is freed, as a move would hold them.
        held(new_size as isize);
        held(-(layout.size() as isize));
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

/// An enum whose small variant encodes to one byte and whose large one takes 8 KB in memory.
#[derive(mw_runtime::Message, Debug, Clone, Copy, PartialEq)]
#[allow(clippy::large_enum_variant)] // the size difference is what is tested
enum Cell8k {
    Empty,
    Full([f64; 1000]),
}

#[test]
fn values_far_larger_in_memory_than_on_the_wire_are_refused() {
    // 20 KB of valid input: 20,000 one-byte `Empty`s, 8 KB each once decoded (160 MB).
    let bytes = codec::encode(&vec![Cell8k::Empty; 20_000]);
    assert!(bytes.len() < 20_010);
    let (decoded, peak) = peak_memory(|| codec::decode::<Vec<Cell8k>>(&bytes));
    let e = decoded.unwrap_err();
    assert!(
        matches!(e.kind(), DecodeErrorKind::TooMuchMemory { .. }),
        "{e}"
    );
    assert!(e.to_string().contains("per input byte"), "{e}");
    let bound = codec::MAX_EXPANSION * bytes.len() + codec::BASE_ALLOCATION;
    assert!(
        peak <= bound,
        "held {peak} bytes decoding {} bytes",
        bytes.len()
    );
    // Boxed, one at a time, past the allowance too.
    let boxes = codec::encode(&vec![Box::new(Cell8k::Empty); 20_000]);
    let e = codec::decode::<Vec<Box<Cell8k>>>(&boxes).unwrap_err();
    assert!(
        matches!(e.kind(), DecodeErrorKind::TooMuchMemory { .. }),
        "{e}"
    );
    // A few are fine.
    let few = vec![Cell8k::Empty, Cell8k::Full([1.5; 1000]), Cell8k::Empty];
    assert_eq!(
        codec::decode::<Vec<Cell8k>>(&codec::encode(&few)).unwrap(),
        few
    );
}

#[test]
fn sequences_are_allocated_once_at_their_length() {
    // 400 KB of empty strings: 24 bytes each in memory, and nothing more (no doubling).
    let strings = vec![String::new(); 400_000];
    let bytes = codec::encode(&strings);
    let (decoded, peak) = peak_memory(|| codec::decode::<Vec<String>>(&bytes));
    assert_eq!(decoded.unwrap(), strings);
    let exact = 400_000 * size_of::<String>();
    assert!(
        peak <= exact + 1024,
        "held {peak} bytes for {exact} of strings"
    );
    let nested = vec![Vec::<u8>::new(); 100_000];
    let bytes = codec::encode(&nested);
    let (decoded, peak) = peak_memory(|| codec::decode::<Vec<Vec<u8>>>(&bytes));
    assert_eq!(decoded.unwrap(), nested);
    assert!(peak <= 100_000 * size_of::<Vec<u8>>() + 1024, "held {peak}");
}
