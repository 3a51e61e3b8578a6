//! `Message` for the standard types: numbers, `bool`, `char`, `String`, `Vec`, arrays, `Option`,
//! `Box`, `()` and tuples.

use super::{DecodeError, DecodeErrorKind, Message, Reader, varint_len, write_varint};

/// Plain numbers: fixed-width little-endian, and slices of them as one bulk copy.
macro_rules! plain_numbers {
    ($($t:ty),*) => {$(
        impl Message for $t {
            const MIN_ENCODED_LEN: usize = size_of::<$t>();
            const FIXED_ENCODED_LEN: Option<usize> = Some(size_of::<$t>());

            #[inline]
            fn encoded_len(&self) -> usize {
                size_of::<$t>()
            }

            #[inline]
            fn encode(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }

            #[inline]
            fn decode(input: &mut Reader<'_>) -> Result<Self, DecodeError> {
                input.take_array(stringify!($t)).map(<$t>::from_le_bytes)
            }

            #[inline]
            fn encode_slice(items: &[Self], out: &mut Vec<u8>) {
                if cfg!(target_endian = "little") {
                    out.extend_from_slice(bytemuck::cast_slice(items));
                } else {
                    out.reserve(size_of_val(items));
                    items.iter().for_each(|x| x.encode(out));
                }
            }

            fn decode_vec(input: &mut Reader<'_>, len: usize) -> Result<Vec<Self>, DecodeError> {
                let bytes = match len.checked_mul(size_of::<$t>()) {
                    Some(n) => input.take(n, stringify!($t))?,
                    None => return Err(input.error(
                        DecodeErrorKind::LengthTooLarge { len: len as u64, available: input.remaining() },
                        stringify!($t),
                    )),
                };
                input.allocate(bytes.len(), stringify!($t))?;
                if len <= SHORT {
                    // A zeroed allocation and a copy cost more than they save on a few values.
                    return Ok(bytes.chunks_exact(size_of::<$t>()).map(|chunk| {
                        let mut a = [0; size_of::<$t>()];
                        a.copy_from_slice(chunk);
                        <$t>::from_le_bytes(a)
                    }).collect());
                }
                let mut items: Vec<$t> = vec![0 as $t; len];
                <$t as FromLeBytes>::fill(&mut items, bytes);
                Ok(items)
            }

            fn decode_array<const N: usize>(input: &mut Reader<'_>) -> Result<[Self; N], DecodeError> {
                let bytes = input.take(size_of::<[$t; N]>(), stringify!($t))?;
                let mut items = [0 as $t; N];
                <$t as FromLeBytes>::fill(&mut items, bytes);
                Ok(items)
            }

            fn decode_array_vec<const N: usize>(
                input: &mut Reader<'_>,
                len: usize,
            ) -> Result<Vec<[Self; N]>, DecodeError> {
                let bytes = match len.checked_mul(size_of::<[$t; N]>()) {
                    Some(n) => input.take(n, stringify!($t))?,
                    None => return Err(input.error(
                        DecodeErrorKind::LengthTooLarge { len: len as u64, available: input.remaining() },
                        stringify!($t),
                    )),
                };
                input.allocate(bytes.len(), stringify!($t))?;
                let mut items: Vec<[$t; N]> = vec![[0 as $t; N]; len];
                <$t as FromLeBytes>::fill(items.as_flattened_mut(), bytes);
                Ok(items)
            }
        }

        impl FromLeBytes for $t {
            fn fill(items: &mut [Self], bytes: &[u8]) {
                if cfg!(target_endian = "little") {
                    bytemuck::cast_slice_mut::<$t, u8>(items).copy_from_slice(bytes);
                } else {
                    for (item, chunk) in items.iter_mut().zip(bytes.chunks_exact(size_of::<$t>())) {
                        let mut a = [0; size_of::<$t>()];
                        a.copy_from_slice(chunk);
                        *item = <$t>::from_le_bytes(a);
                    }
                }
            }
        }
    )*};
}

/// Vectors of plain numbers up to this length decode value by value; longer ones in one copy.
const SHORT: usize = 16;

/// Plain numbers that can be filled from their little-endian bytes in one copy.
trait FromLeBytes: Sized {
    /// `bytes` holds exactly `items.len()` little-endian values.
    fn fill(items: &mut [Self], bytes: &[u8]);
}

plain_numbers!(u8, u16, u32, u64, u128, i8, i16, i32, i64, i128, f32, f64);

/// `usize`/`isize` travel as 64 bits so that 32- and 64-bit peers agree.
macro_rules! word_sized {
    ($($t:ty => $wire:ty),*) => {$(
        impl Message for $t {
            const MIN_ENCODED_LEN: usize = 8;
            const FIXED_ENCODED_LEN: Option<usize> = Some(8);

            #[inline]
            fn encoded_len(&self) -> usize {
                8
            }

            #[inline]
            fn encode(&self, out: &mut Vec<u8>) {
                (*self as $wire).encode(out);
            }

            fn decode(input: &mut Reader<'_>) -> Result<Self, DecodeError> {
                let start = input.position();
                let wire = <$wire>::decode(input)?;
                <$t>::try_from(wire).map_err(|_| {
                    DecodeError::new(DecodeErrorKind::OutOfRange(wire as u64), stringify!($t), start)
                })
            }
        }
    )*};
}

word_sized!(usize => u64, isize => i64);

impl Message for bool {
    const MIN_ENCODED_LEN: usize = 1;
    const FIXED_ENCODED_LEN: Option<usize> = Some(1);

    fn encoded_len(&self) -> usize {
        1
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.push(u8::from(*self));
    }

    fn decode(input: &mut Reader<'_>) -> Result<Self, DecodeError> {
        match input.take_array::<1>("bool")? {
            [0] => Ok(false),
            [1] => Ok(true),
            [b] => Err(DecodeError::new(
                DecodeErrorKind::InvalidBool(b),
                "bool",
                input.position() - 1,
            )),
        }
    }
}

impl Message for char {
    const MIN_ENCODED_LEN: usize = 4;
    const FIXED_ENCODED_LEN: Option<usize> = Some(4);

    fn encoded_len(&self) -> usize {
        4
    }

    fn encode(&self, out: &mut Vec<u8>) {
        u32::from(*self).encode(out);
    }

    fn decode(input: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let start = input.position();
        let scalar = u32::decode(input)?;
        char::from_u32(scalar)
            .ok_or_else(|| DecodeError::new(DecodeErrorKind::InvalidChar(scalar), "char", start))
    }
}

impl Message for () {
    const MIN_ENCODED_LEN: usize = 0;
    const FIXED_ENCODED_LEN: Option<usize> = Some(0);

    fn encoded_len(&self) -> usize {
        0
    }

    fn encode(&self, _: &mut Vec<u8>) {}

    fn decode(_: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(())
    }
}

impl Message for String {
    const MIN_ENCODED_LEN: usize = 1;

    fn encoded_len(&self) -> usize {
        varint_len(self.len() as u64) + self.len()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        write_varint(out, self.len() as u64);
        out.extend_from_slice(self.as_bytes());
    }

    fn decode(input: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let len = input.read_len::<u8>("String")?;
        let start = input.position();
        let bytes = input.take(len, "String")?;
        input.allocate(len, "String")?;
        match std::str::from_utf8(bytes) {
            Ok(text) => Ok(text.to_owned()),
            Err(e) => Err(DecodeError::new(
                DecodeErrorKind::InvalidUtf8,
                "String",
                start + e.valid_up_to(),
            )),
        }
    }
}

impl<T: Message> Message for Vec<T> {
    const MIN_ENCODED_LEN: usize = 1;

    fn encoded_len(&self) -> usize {
        varint_len(self.len() as u64) + T::slice_encoded_len(self)
    }

    fn encode(&self, out: &mut Vec<u8>) {
        write_varint(out, self.len() as u64);
        T::encode_slice(self, out);
    }

    fn decode(input: &mut Reader<'_>) -> Result<Self, DecodeError> {
        input.nested("Vec", |input| {
            let len = input.read_len::<T>("Vec")?;
            T::decode_vec(input, len)
        })
    }
}

impl<T: Message, const N: usize> Message for [T; N] {
    const MIN_ENCODED_LEN: usize = T::MIN_ENCODED_LEN * N;
    const FIXED_ENCODED_LEN: Option<usize> = match T::FIXED_ENCODED_LEN {
        Some(len) => Some(len * N),
        None => None,
    };

    fn encoded_len(&self) -> usize {
        T::slice_encoded_len(self)
    }

    fn encode(&self, out: &mut Vec<u8>) {
        T::encode_slice(self, out);
    }

    fn decode(input: &mut Reader<'_>) -> Result<Self, DecodeError> {
        T::decode_array::<N>(input)
    }

    fn encode_slice(items: &[Self], out: &mut Vec<u8>) {
        T::encode_slice(items.as_flattened(), out);
    }

    fn slice_encoded_len(items: &[Self]) -> usize {
        T::slice_encoded_len(items.as_flattened())
    }

    fn decode_vec(input: &mut Reader<'_>, len: usize) -> Result<Vec<Self>, DecodeError> {
        // Plain numbers decode a whole `Vec<[T; N]>` with one copy; other element types one array
        // at a time, with no intermediate flat vector.
        T::decode_array_vec::<N>(input, len)
    }
}

impl<T: Message> Message for Option<T> {
    const MIN_ENCODED_LEN: usize = 1;

    fn encoded_len(&self) -> usize {
        1 + self.as_ref().map_or(0, Message::encoded_len)
    }

    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            None => out.push(0),
            Some(value) => {
                out.push(1);
                value.encode(out);
            }
        }
    }

    fn decode(input: &mut Reader<'_>) -> Result<Self, DecodeError> {
        match input.take_array::<1>("Option")? {
            [0] => Ok(None),
            [1] => input.nested("Option", T::decode).map(Some),
            [tag] => Err(DecodeError::new(
                DecodeErrorKind::InvalidOptionTag(tag),
                "Option",
                input.position() - 1,
            )),
        }
    }
}

impl<T: Message> Message for Box<T> {
    const MIN_ENCODED_LEN: usize = T::MIN_ENCODED_LEN;
    const FIXED_ENCODED_LEN: Option<usize> = T::FIXED_ENCODED_LEN;

    fn encoded_len(&self) -> usize {
        (**self).encoded_len()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        (**self).encode(out);
    }

    fn decode(input: &mut Reader<'_>) -> Result<Self, DecodeError> {
        input.allocate(size_of::<T>(), "Box")?;
        input.nested("Box", T::decode).map(Box::new)
    }
}

macro_rules! tuples {
    ($( ($($name:ident . $index:tt),+) )*) => {$(
        impl<$($name: Message),+> Message for ($($name,)+) {
            const MIN_ENCODED_LEN: usize = 0 $(+ $name::MIN_ENCODED_LEN)+;
            const FIXED_ENCODED_LEN: Option<usize> = {
                let mut total = Some(0);
                $(
                    total = match (total, $name::FIXED_ENCODED_LEN) {
                        (Some(a), Some(b)) => Some(a + b),
                        _ => None,
                    };
                )+
                total
            };

            fn encoded_len(&self) -> usize {
                0 $(+ self.$index.encoded_len())+
            }

            fn encode(&self, out: &mut Vec<u8>) {
                $(self.$index.encode(out);)+
            }

            fn decode(input: &mut Reader<'_>) -> Result<Self, DecodeError> {
                Ok(($(
                    $name::decode(input)
                        .map_err(|e| e.in_field("tuple", stringify!($index)))?,
                )+))
            }
        }
    )*};
}

tuples! {
    (A.0)
    (A.0, B.1)
    (A.0, B.1, C.2)
    (A.0, B.1, C.2, D.3)
    (A.0, B.1, C.2, D.3, E.4)
    (A.0, B.1, C.2, D.3, E.4, F.5)
    (A.0, B.1, C.2, D.3, E.4, F.5, G.6)
    (A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7)
    (A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8)
    (A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9)
    (A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9, K.10)
    (A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9, K.10, L.11)
}
