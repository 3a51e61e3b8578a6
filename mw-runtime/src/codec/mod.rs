//! The message codec: a compact binary encoding for the values that travel between master and
//! workers.
//!
//! # Format
//! - Scalars are fixed-width little-endian (`usize`/`isize` travel as 64 bits, `bool` as one
//!   byte 0/1, `char` as its 32-bit scalar value).
//! - Lengths (of `String`, `Vec`) and enum tags are unsigned LEB128 varints: one byte below 128.
//! - `Option` is a tag byte 0/1 followed by the value; `Box<T>` is `T`; arrays and tuples are their
//!   elements in order; structs are their fields in declaration order.
//! - Slices of plain numbers are one bulk copy of their little-endian bytes, so a `Vec<f64>` of a
//!   million elements encodes and decodes at memory-copy speed.
//!
//! # Memory
//! Decoding never panics, and the memory a decode allocates is bounded by its input: at most
//! [`MAX_EXPANSION`] bytes per input byte, plus [`BASE_ALLOCATION`]. Every length prefix is
//! checked against the bytes left (at the element type's smallest encoding) before anything
//! is allocated; a vector is then allocated once, at its exact length, and its bytes, like a
//! `String`'s and a `Box`'s, are counted against the message's allowance. A valid message whose
//! values take far more room in memory than on the wire (a `Vec` of an enum's one-byte variant
//! where another variant holds `[f64; 1000]`: 8 KB each) is refused with
//! [`DecodeErrorKind::TooMuchMemory`] instead of growing to hundreds of times its size. The
//! allowance fits the standard types at their worst: a `Vec` of empty `String`s or `Vec`s takes
//! 24 bytes for each byte on the wire.

mod error;
mod std_impls;

pub use error::{DecodeError, DecodeErrorKind, Segment};

/// How deeply boxed, optional and sequence values may nest before decoding gives up; guards the
/// stack against hostile input for recursive types.
pub const MAX_DEPTH: u32 = 512;

/// Sequences of values that encode to zero bytes (`()`, unit structs) cannot be bounded by the
/// input size, so their length is capped here instead.
pub const MAX_EMPTY_ELEMENTS: u64 = 1 << 20;

/// Bytes of memory a decode may allocate for each byte of its input (see [Memory](self#memory)).
pub const MAX_EXPANSION: usize = 32;

/// Bytes of memory any decode may allocate, however short its input: room for a few boxed
/// values of large types.
pub const BASE_ALLOCATION: usize = 1 << 20;

/// A value that can travel between master and workers.
///
/// Implemented for the primitive numbers, `bool`, `char`, `String`, `Vec<T>`, `[T; N]`,
/// `Option<T>`, `Box<T>`, `()` and tuples of up to twelve elements. `#[derive(Message)]` writes it
/// for your own structs and enums.
///
/// # Examples
/// ```
/// use mw_runtime::codec::{self, Message};
///
/// let points: Vec<[f64; 2]> = vec![[0.0, 1.0], [2.5, -3.0]];
/// let bytes = codec::encode(&points);
/// assert_eq!(bytes.len(), points.encoded_len());
/// assert_eq!(codec::decode::<Vec<[f64; 2]>>(&bytes)?, points);
/// # Ok::<(), mw_runtime::codec::DecodeError>(())
/// ```
pub trait Message: Sized {
    /// The fewest bytes any value of this type encodes to. Decoders compare length prefixes
    /// against it to refuse lengths the remaining input cannot hold.
    const MIN_ENCODED_LEN: usize;

    /// The encoded size, when every value of the type encodes to the same number of bytes; it makes
    /// `encoded_len` of a `Vec` of such values O(1).
    const FIXED_ENCODED_LEN: Option<usize> = None;

    /// Exact number of bytes [`encode`](Message::encode) appends.
    fn encoded_len(&self) -> usize;

    /// Appends the encoding of `self` to `out`.
    fn encode(&self, out: &mut Vec<u8>);

    /// Reads one value from `input`.
    ///
    /// # Errors
    /// A [`DecodeError`] naming the type, field and offset when the input is truncated or is not
    /// a valid encoding of `Self`.
    fn decode(input: &mut Reader<'_>) -> Result<Self, DecodeError>;

    /// Appends the encodings of all `items`. Types with a faster whole-slice form (plain numbers:
    /// one copy) override it; the result must equal encoding each item in turn.
    fn encode_slice(items: &[Self], out: &mut Vec<u8>) {
        out.reserve(Self::slice_encoded_len(items));
        for item in items {
            item.encode(out);
        }
    }

    /// Exact number of bytes [`encode_slice`](Message::encode_slice) appends.
    fn slice_encoded_len(items: &[Self]) -> usize {
        match Self::FIXED_ENCODED_LEN {
            Some(len) => len * items.len(),
            None => items.iter().map(Message::encoded_len).sum(),
        }
    }

    /// Reads `len` values written by [`encode_slice`](Message::encode_slice). `len` has already
    /// been checked against the remaining input with [`Reader::read_len`].
    ///
    /// # Errors
    /// As for [`decode`](Message::decode), with the failing element's index in the path.
    fn decode_vec(input: &mut Reader<'_>, len: usize) -> Result<Vec<Self>, DecodeError> {
        let mut items = input.allocate_vec(len, "Vec")?;
        for index in 0..len {
            items.push(Self::decode(input).map_err(|e| e.at_index(index))?);
        }
        Ok(items)
    }

    /// Reads one `[Self; N]`, the elements in order. Plain numbers override it with one copy.
    #[doc(hidden)]
    fn decode_array<const N: usize>(input: &mut Reader<'_>) -> Result<[Self; N], DecodeError> {
        let mut error = None;
        let items: [Option<Self>; N] = std::array::from_fn(|index| {
            if error.is_some() {
                return None;
            }
            Self::decode(input)
                .map_err(|e| error = Some(e.at_index(index)))
                .ok()
        });
        match error {
            Some(error) => Err(error),
            None => Ok(items.map(|item| item.expect("every element decoded"))),
        }
    }

    /// Reads `len` values of `[Self; N]` (a `Vec<[Self; N]>`); `len` was checked as for
    /// [`decode_vec`](Message::decode_vec). Plain numbers override it with one copy.
    #[doc(hidden)]
    fn decode_array_vec<const N: usize>(
        input: &mut Reader<'_>,
        len: usize,
    ) -> Result<Vec<[Self; N]>, DecodeError> {
        let mut items = input.allocate_vec(len, "Vec")?;
        for index in 0..len {
            items.push(Self::decode_array::<N>(input).map_err(|e| e.at_index(index))?);
        }
        Ok(items)
    }
}

/// Encodes `value` into a new buffer of exactly [`Message::encoded_len`] bytes.
pub fn encode<T: Message>(value: &T) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.encoded_len());
    value.encode(&mut out);
    out
}

/// Decodes a whole message: `bytes` must hold exactly one encoded `T`.
///
/// # Errors
/// A [`DecodeError`] when `bytes` is not a valid encoding of `T` or has bytes left over.
pub fn decode<T: Message>(bytes: &[u8]) -> Result<T, DecodeError> {
    let mut input = Reader::new(bytes);
    let value = T::decode(&mut input)?;
    input.finish(std::any::type_name::<T>())?;
    Ok(value)
}

/// A cursor over the bytes of a message being decoded.
#[derive(Debug)]
pub struct Reader<'a> {
    input: &'a [u8],
    pos: usize,
    depth: u32,
    /// Offset of `input` in the whole message (non-zero for readers made by `take_reader`), so
    /// that positions and error offsets always count from the start of the message.
    base: usize,
    /// Bytes of memory the decode may still allocate.
    allowance: usize,
    /// The whole message's allowance, for the error.
    limit: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `input`.
    pub fn new(input: &'a [u8]) -> Self {
        let limit = input
            .len()
            .saturating_mul(MAX_EXPANSION)
            .saturating_add(BASE_ALLOCATION);
        Reader {
            input,
            pos: 0,
            depth: 0,
            base: 0,
            allowance: limit,
            limit,
        }
    }

    /// Bytes not yet read.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.input.len() - self.pos
    }

    /// Bytes read so far.
    #[inline]
    pub fn position(&self) -> usize {
        self.base + self.pos
    }

    /// An error of `kind` for type `ty` at the current position.
    pub fn error(&self, kind: DecodeErrorKind, ty: &'static str) -> DecodeError {
        DecodeError::new(kind, ty, self.position())
    }

    /// Takes the next `n` bytes.
    ///
    /// # Errors
    /// [`DecodeErrorKind::UnexpectedEnd`] when fewer than `n` bytes are left.
    #[inline]
    pub fn take(&mut self, n: usize, ty: &'static str) -> Result<&'a [u8], DecodeError> {
        let rest = &self.input[self.pos..];
        match rest.get(..n) {
            Some(bytes) => {
                self.pos += n;
                Ok(bytes)
            }
            None => Err(self.error(
                DecodeErrorKind::UnexpectedEnd {
                    needed: n,
                    available: rest.len(),
                },
                ty,
            )),
        }
    }

    /// Takes the next `n` bytes as a reader of their own: decoding from it cannot run past them,
    /// and its positions (so its error offsets) still count from the start of the message.
    /// Decoders of fixed-size values use it to check the length of a whole run of values once.
    /// It starts with this reader's memory allowance; hand what it left back with
    /// [`rejoin`](Reader::rejoin) once done with it.
    ///
    /// # Errors
    /// [`DecodeErrorKind::UnexpectedEnd`] when fewer than `n` bytes are left.
    #[inline]
    pub fn take_reader(&mut self, n: usize, ty: &'static str) -> Result<Reader<'a>, DecodeError> {
        let base = self.position();
        let input = self.take(n, ty)?;
        Ok(Reader {
            input,
            pos: 0,
            depth: self.depth,
            base,
            allowance: self.allowance,
            limit: self.limit,
        })
    }

    /// Takes back the memory allowance a reader made by [`take_reader`](Reader::take_reader)
    /// has left, so that what it allocated counts for the whole message.
    #[inline]
    pub fn rejoin(&mut self, part: &Reader<'a>) {
        self.allowance = part.allowance;
    }

    /// Counts `bytes` of memory about to be allocated for a decoded value against the message's
    /// allowance (see [Memory](self#memory)).
    ///
    /// # Errors
    /// [`DecodeErrorKind::TooMuchMemory`] when the allowance is spent; nothing is counted then.
    #[inline]
    pub fn allocate(&mut self, bytes: usize, ty: &'static str) -> Result<(), DecodeError> {
        match self.allowance.checked_sub(bytes) {
            Some(left) => {
                self.allowance = left;
                Ok(())
            }
            None => Err(self.error(
                DecodeErrorKind::TooMuchMemory {
                    needed: bytes,
                    limit: self.limit,
                },
                ty,
            )),
        }
    }

    /// An empty vector with room for exactly `len` values of `T`, counted against the
    /// allowance; `len` comes from [`read_len`](Reader::read_len), so the input can hold them.
    ///
    /// # Errors
    /// [`DecodeErrorKind::TooMuchMemory`] when `len` values of `T` take more memory than the
    /// message may allocate.
    #[inline]
    pub fn allocate_vec<T>(&mut self, len: usize, ty: &'static str) -> Result<Vec<T>, DecodeError> {
        self.allocate(len.saturating_mul(size_of::<T>()), ty)?;
        Ok(Vec::with_capacity(len))
    }

    /// Takes the next `N` bytes as an array.
    ///
    /// # Errors
    /// [`DecodeErrorKind::UnexpectedEnd`] when fewer than `N` bytes are left.
    pub fn take_array<const N: usize>(&mut self, ty: &'static str) -> Result<[u8; N], DecodeError> {
        let bytes = self.take(N, ty)?;
        let mut array = [0; N];
        array.copy_from_slice(bytes);
        Ok(array)
    }

    /// Reads an unsigned LEB128 varint (lengths and enum tags).
    ///
    /// # Errors
    /// When the input ends inside the varint or it runs past 64 bits.
    #[inline]
    pub fn read_varint(&mut self, ty: &'static str) -> Result<u64, DecodeError> {
        let start = self.position();
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let [byte] = self.take_array::<1>(ty)?;
            let bits = u64::from(byte & 0x7f);
            if shift == 63 && bits > 1 {
                break;
            }
            value |= bits << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(DecodeError::new(DecodeErrorKind::InvalidVarint, ty, start))
    }

    /// Reads a sequence length and checks that the rest of the input can hold that many values of
    /// `T` (at [`Message::MIN_ENCODED_LEN`] bytes each) before anything is allocated.
    ///
    /// # Errors
    /// When the varint is malformed or the length is more than the input can hold.
    #[inline]
    pub fn read_len<T: Message>(&mut self, ty: &'static str) -> Result<usize, DecodeError> {
        let start = self.position();
        let len = self.read_varint(ty)?;
        let available = self.remaining();
        let fits = match T::MIN_ENCODED_LEN as u64 {
            0 => len <= MAX_EMPTY_ELEMENTS,
            min => len
                .checked_mul(min)
                .is_some_and(|bytes| bytes <= available as u64),
        };
        match usize::try_from(len) {
            Ok(len) if fits => Ok(len),
            _ => Err(DecodeError::new(
                DecodeErrorKind::LengthTooLarge { len, available },
                ty,
                start,
            )),
        }
    }

    /// Runs `decode` one nesting level deeper, refusing input nested past [`MAX_DEPTH`].
    ///
    /// # Errors
    /// [`DecodeErrorKind::TooDeep`], or whatever `decode` returns.
    #[inline]
    pub fn nested<T>(
        &mut self,
        ty: &'static str,
        decode: impl FnOnce(&mut Self) -> Result<T, DecodeError>,
    ) -> Result<T, DecodeError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.error(DecodeErrorKind::TooDeep, ty));
        }
        self.depth += 1;
        let result = decode(self);
        self.depth -= 1;
        result
    }

    /// Checks that the whole input was consumed.
    ///
    /// # Errors
    /// [`DecodeErrorKind::TrailingBytes`] when bytes are left over.
    pub fn finish(self, ty: &'static str) -> Result<(), DecodeError> {
        match self.remaining() {
            0 => Ok(()),
            n => Err(self.error(DecodeErrorKind::TrailingBytes(n), ty)),
        }
    }
}

/// Number of bytes [`write_varint`] uses for `value`.
pub const fn varint_len(value: u64) -> usize {
    let bits = 64 - (value | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Appends `value` as an unsigned LEB128 varint.
#[inline]
pub fn write_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

#[cfg(test)]
mod tests;
