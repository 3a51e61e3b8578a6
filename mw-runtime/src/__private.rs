//! What the code written by `#[derive(Message)]`, `#[master]` and `#[worker]` refers to. Not a
//! public API: names here change without notice.

pub use std::vec::Vec;

pub use crate::app::{
    Flow, Iteration, Master, Setup, TaskError, TaskId, Work, Worker, WorkerSetup,
};
pub use crate::codec::{DecodeError, DecodeErrorKind, Message, Reader, varint_len, write_varint};
pub use crate::error::Result;

/// `FIXED_ENCODED_LEN` of a struct: the sum of its fields', when every field has one.
pub const fn fixed_sum(fields: &[Option<usize>]) -> Option<usize> {
    let mut total = 0;
    let mut i = 0;
    while i < fields.len() {
        match fields[i] {
            Some(len) => total += len,
            None => return None,
        }
        i += 1;
    }
    Some(total)
}

/// `MIN_ENCODED_LEN` of an enum whose variant `i` has fields of at least `variants[i]` bytes:
/// the shortest tag-plus-fields over the variants (the tag of variant `i` is the varint `i`).
/// An enum with no variants has no values; 1 keeps length checks strict.
pub const fn enum_min(variants: &[usize]) -> usize {
    let mut min = usize::MAX;
    let mut i = 0;
    while i < variants.len() {
        let len = varint_len(i as u64) + variants[i];
        if len < min {
            min = len;
        }
        i += 1;
    }
    if variants.is_empty() { 1 } else { min }
}

/// `FIXED_ENCODED_LEN` of an enum whose variant `i` has fields of `variants[i]` bytes: only when
/// tag plus fields comes to the same size for every variant (so never when some variant has no
/// fixed size, and not past 128 variants unless the fields make up for the longer tags).
pub const fn enum_fixed(variants: &[Option<usize>]) -> Option<usize> {
    let mut fixed = None;
    let mut i = 0;
    while i < variants.len() {
        let len = match variants[i] {
            Some(fields) => varint_len(i as u64) + fields,
            None => return None,
        };
        match fixed {
            Some(other) if other != len => return None,
            _ => fixed = Some(len),
        }
        i += 1;
    }
    fixed
}

/// `decode_vec` for a type of fixed encoded size `fixed`: checks once that the input holds all
/// `len` values, then decodes each from a window of exactly `fixed` bytes, where the bounds
/// checks of its fields are known to pass and compile away.
///
/// # Errors
/// When the input is shorter than `len · fixed` bytes, or a value is invalid (a `bool` byte
/// other than 0/1, ...).
#[inline]
pub fn decode_fixed_vec<T: Message>(
    input: &mut Reader<'_>,
    len: usize,
    fixed: usize,
    ty: &'static str,
) -> Result<Vec<T>, DecodeError> {
    let Some(total) = len.checked_mul(fixed) else {
        let kind = DecodeErrorKind::LengthTooLarge {
            len: len as u64,
            available: input.remaining(),
        };
        return Err(input.error(kind, ty));
    };
    let mut block = input.take_reader(total, ty)?;
    let mut items = block.allocate_vec(len, ty)?;
    for index in 0..len {
        let mut window = block.take_reader(fixed, ty)?;
        items.push(T::decode(&mut window).map_err(|e| e.at_index(index))?);
        // A fixed-size value may still hold a `Box`.
        block.rejoin(&window);
    }
    input.rejoin(&block);
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn struct_sizes() {
        assert_eq!(fixed_sum(&[]), Some(0));
        assert_eq!(fixed_sum(&[Some(8), Some(4)]), Some(12));
        assert_eq!(fixed_sum(&[Some(8), None]), None);
    }

    #[test]
    fn enum_sizes() {
        assert_eq!(enum_min(&[]), 1);
        assert_eq!(enum_min(&[8, 0, 4]), 1);
        assert_eq!(enum_fixed(&[]), None);
        assert_eq!(enum_fixed(&[Some(4), Some(4)]), Some(5));
        assert_eq!(enum_fixed(&[Some(4), Some(0)]), None);
        assert_eq!(enum_fixed(&[Some(4), None]), None);
        // 129 variants: tag 128 takes two bytes.
        let mut sizes = [Some(0); 129];
        assert_eq!(enum_fixed(&sizes), None);
        assert_eq!(enum_min(&[0; 129]), 1);
        sizes[128] = None;
        assert_eq!(enum_fixed(&sizes[..128]), Some(1));
        let mut mins = [5; 129];
        mins[128] = 0;
        assert_eq!(enum_min(&mins), 2);
    }
}
