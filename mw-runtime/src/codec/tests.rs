use super::*;

#[test]
fn varints_round_trip_at_every_width() {
    for value in [
        0,
        1,
        127,
        128,
        300,
        16_383,
        16_384,
        u64::from(u32::MAX),
        u64::MAX,
    ] {
        let mut out = Vec::new();
        write_varint(&mut out, value);
        assert_eq!(out.len(), varint_len(value), "{value}");
        let mut input = Reader::new(&out);
        assert_eq!(input.read_varint("test").unwrap(), value);
        assert_eq!(input.remaining(), 0);
    }
}

#[test]
fn varint_past_64_bits_is_refused() {
    let eleven = [0xff; 11];
    let err = Reader::new(&eleven).read_varint("Vec").unwrap_err();
    assert_eq!(err.kind(), &DecodeErrorKind::InvalidVarint);
    let overflow = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
    let err = Reader::new(&overflow).read_varint("Vec").unwrap_err();
    assert_eq!(err.kind(), &DecodeErrorKind::InvalidVarint);
}

#[test]
fn plain_vectors_encode_as_little_endian_bytes() {
    let v = vec![1.5f64, -2.0];
    let bytes = encode(&v);
    assert_eq!(bytes[0], 2);
    assert_eq!(&bytes[1..9], &1.5f64.to_le_bytes());
    assert_eq!(&bytes[9..], &(-2.0f64).to_le_bytes());
    assert_eq!(decode::<Vec<f64>>(&bytes).unwrap(), v);
}

#[test]
fn huge_length_prefix_is_refused_before_allocating() {
    let mut bytes = Vec::new();
    write_varint(&mut bytes, u64::MAX / 2);
    bytes.extend_from_slice(&[0; 16]);
    let err = decode::<Vec<f64>>(&bytes).unwrap_err();
    assert!(matches!(
        err.kind(),
        DecodeErrorKind::LengthTooLarge { available: 16, .. }
    ));
    let err = decode::<String>(&bytes).unwrap_err();
    assert!(matches!(err.kind(), DecodeErrorKind::LengthTooLarge { .. }));
    let err = decode::<Vec<Vec<String>>>(&bytes).unwrap_err();
    assert!(matches!(err.kind(), DecodeErrorKind::LengthTooLarge { .. }));
}

#[test]
fn zero_size_elements_are_capped() {
    let mut bytes = Vec::new();
    write_varint(&mut bytes, MAX_EMPTY_ELEMENTS + 1);
    let err = decode::<Vec<()>>(&bytes).unwrap_err();
    assert!(matches!(err.kind(), DecodeErrorKind::LengthTooLarge { .. }));
    let ok = encode(&vec![(); 1000]);
    assert_eq!(decode::<Vec<()>>(&ok).unwrap().len(), 1000);
}

#[test]
fn invalid_values_are_named() {
    assert_eq!(
        decode::<bool>(&[2]).unwrap_err().kind(),
        &DecodeErrorKind::InvalidBool(2)
    );
    assert_eq!(
        decode::<Option<u8>>(&[7, 0]).unwrap_err().kind(),
        &DecodeErrorKind::InvalidOptionTag(7)
    );
    assert_eq!(
        decode::<char>(&0xD800u32.to_le_bytes()).unwrap_err().kind(),
        &DecodeErrorKind::InvalidChar(0xD800)
    );
    let err = decode::<String>(&[2, 0xC3, 0x28]).unwrap_err();
    assert_eq!(err.kind(), &DecodeErrorKind::InvalidUtf8);
    assert_eq!(err.offset(), 1);
    assert_eq!(
        decode::<u8>(&[1, 2]).unwrap_err().kind(),
        &DecodeErrorKind::TrailingBytes(1)
    );
}

#[test]
fn errors_say_where() {
    let bytes = encode(&(1u32, 2.5f64));
    let text = decode::<(u32, f64)>(&bytes[..bytes.len() - 3])
        .unwrap_err()
        .to_string();
    assert!(text.contains("`f64` at `tuple.1`"), "{text}");
    assert!(
        text.contains("input ended: needed 8 more bytes, 5 left"),
        "{text}"
    );

    let bytes = encode(&(1u32, vec![1.0f64, 2.0]));
    let text = decode::<(u32, Vec<f64>)>(&bytes[..bytes.len() - 3])
        .unwrap_err()
        .to_string();
    assert!(text.contains("`Vec` at `tuple.1`"), "{text}");
    assert!(
        text.contains("length prefix 2 is larger than the 13 bytes left"),
        "{text}"
    );

    let strings = encode(&vec![String::from("ok"), String::from("bad")]);
    let mut broken = strings.clone();
    let last = broken.len() - 1;
    broken[last] = 0xff;
    let text = decode::<Vec<String>>(&broken).unwrap_err().to_string();
    assert!(text.contains("[1]"), "{text}");
    assert!(text.contains("UTF-8"), "{text}");
}

#[test]
fn deep_nesting_is_refused() {
    type Deep = Option<Box<Option<Box<Option<Box<u8>>>>>>;
    // Legitimate nesting decodes...
    let v: Deep = Some(Box::new(Some(Box::new(Some(Box::new(7))))));
    assert_eq!(decode::<Deep>(&encode(&v)).unwrap(), v);
    // ...but a hostile run of `Some` tags for a recursive type stops at MAX_DEPTH.
    #[derive(Debug)]
    struct List(Option<Box<List>>);
    impl Message for List {
        const MIN_ENCODED_LEN: usize = 1;
        fn encoded_len(&self) -> usize {
            self.0.encoded_len()
        }
        fn encode(&self, out: &mut Vec<u8>) {
            self.0.encode(out);
        }
        fn decode(input: &mut Reader<'_>) -> Result<Self, DecodeError> {
            Option::decode(input).map(List)
        }
    }
    let hostile = vec![1u8; 100_000];
    let err = decode::<List>(&hostile).unwrap_err();
    assert_eq!(err.kind(), &DecodeErrorKind::TooDeep);
}

#[test]
fn arrays_use_the_bulk_path_and_regroup() {
    let points: Vec<[f64; 2]> = (0..100).map(|i| [i as f64, -(i as f64)]).collect();
    let bytes = encode(&points);
    assert_eq!(bytes.len(), 1 + 100 * 16);
    assert_eq!(<Vec<[f64; 2]>>::FIXED_ENCODED_LEN, None);
    assert_eq!(<[f64; 2]>::FIXED_ENCODED_LEN, Some(16));
    assert_eq!(decode::<Vec<[f64; 2]>>(&bytes).unwrap(), points);
    let grid: [[u8; 3]; 2] = [[1, 2, 3], [4, 5, 6]];
    assert_eq!(encode(&grid), vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(decode::<[[u8; 3]; 2]>(&encode(&grid)).unwrap(), grid);
}

#[test]
fn word_sized_integers_travel_as_64_bits() {
    assert_eq!(encode(&5usize), 5u64.to_le_bytes().to_vec());
    assert_eq!(encode(&-5isize), (-5i64).to_le_bytes().to_vec());
}
