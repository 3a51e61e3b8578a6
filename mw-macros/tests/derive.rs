//! `#[derive(Message)]` on every supported shape, used as generated projects use it (the runtime
//! renamed to `mw`): exact constants and `encoded_len`, round trips, and hostile input that gives
//! errors naming the type and the field.

use std::marker::PhantomData;

use mw::Message;
use mw::codec::{self, DecodeError, DecodeErrorKind, Segment};
use proptest::prelude::*;

#[derive(Message, Debug, Clone, Copy, PartialEq)]
struct Body {
    m: f64,
    x: f64,
    y: f64,
    vx: f64,
    vy: f64,
}

#[derive(Message, Debug, Clone, PartialEq)]
struct Pair(u32, String);

#[derive(Message, Debug, Clone, PartialEq)]
struct Marker;

#[derive(Message, Debug, Clone, PartialEq)]
struct Empty {}

#[derive(Message, Debug, Clone, PartialEq)]
enum Shape {
    Circle { center: [f64; 2], radius: f64 },
    Polygon(Vec<[f64; 2]>),
    Label(String, Option<char>),
    Nothing,
}

/// Every variant comes to 5 bytes: fixed size.
#[derive(Message, Debug, Clone, Copy, PartialEq)]
enum Op {
    Add(u32),
    Scale { by: f32 },
    Flip([u8; 4]),
}

#[derive(Message, Debug, Clone, PartialEq)]
struct Tagged<T> {
    id: u64,
    value: T,
}

#[derive(Message, Debug, Clone, PartialEq)]
enum Either<L, R> {
    Left(L),
    Right(R),
}

/// Type parameters used only in a skipped field need no `Message`.
#[derive(Message, Debug, Clone, PartialEq)]
struct Typed<T, U> {
    values: Vec<T>,
    #[mw(skip)]
    unit: PhantomData<U>,
}

/// Not a `Message`: only usable where skipped.
#[derive(Debug, Clone, PartialEq, Default)]
struct Cache(Vec<u8>);

#[derive(Message, Debug, Clone, PartialEq)]
struct Cached {
    value: u32,
    #[mw(skip)]
    cache: Cache,
    flag: bool,
}

/// Everything the codec supports, nested.
#[derive(Message, Debug, Clone, PartialEq)]
struct Scene {
    bodies: Vec<Body>,
    shapes: Vec<Shape>,
    name: String,
    tag: Option<char>,
    flags: [bool; 3],
    boxed: Box<Body>,
    pair: (u8, i64),
    size: usize,
    offset: isize,
    wide: (u128, i128, i16, u16, i8),
    nested: Tagged<Either<Pair, Marker>>,
    ops: Vec<Op>,
    unit: (),
}

/// Directly recursive through `Box`.
#[derive(Message, Debug, Clone, PartialEq)]
enum Expr {
    Num(f64),
    Neg(Box<Expr>),
    Add(Box<Self>, Box<Expr>),
}

/// Mutually recursive through `Box`: one side is marked.
#[derive(Message, Debug, Clone, PartialEq)]
enum Ping {
    Pong(#[mw(recursive)] Box<Pong>),
    Stop,
}

#[derive(Message, Debug, Clone, PartialEq)]
struct Pong {
    count: u16,
    next: Box<Ping>,
}

/// A tree through `Vec` and `Option`: no marker needed.
#[derive(Message, Debug, Clone, PartialEq)]
struct Tree {
    value: i32,
    children: Vec<Tree>,
    parent: Option<Box<Tree>>,
}

#[derive(Message, Debug)]
enum Never {}

/// With an explicit bound instead of the inferred one.
#[derive(Message, Debug, Clone, PartialEq)]
#[mw(bound = "T: mw::Message + Clone")]
struct Bounded<T> {
    items: Vec<T>,
}

/// A parameter reached through an associated type.
trait Carrier {
    type Load;
}

struct Bytes;

impl Carrier for Bytes {
    type Load = Vec<u8>;
}

#[derive(Message)]
struct Cargo<C: Carrier> {
    load: C::Load,
}

fn round_trip<T: Message + PartialEq + std::fmt::Debug>(value: &T) {
    let bytes = codec::encode(value);
    assert_eq!(bytes.len(), value.encoded_len(), "encoded_len of {value:?}");
    assert_eq!(&codec::decode::<T>(&bytes).expect("decodes"), value);
}

#[test]
fn constants_are_exact() {
    assert_eq!(Body::MIN_ENCODED_LEN, 40);
    assert_eq!(Body::FIXED_ENCODED_LEN, Some(40));
    assert_eq!(Pair::MIN_ENCODED_LEN, 5);
    assert_eq!(Pair::FIXED_ENCODED_LEN, None);
    assert_eq!(Marker::FIXED_ENCODED_LEN, Some(0));
    assert_eq!(Empty::FIXED_ENCODED_LEN, Some(0));
    // The shortest variant is `Nothing`: its tag alone.
    assert_eq!(Shape::MIN_ENCODED_LEN, 1);
    assert_eq!(Shape::FIXED_ENCODED_LEN, None);
    assert_eq!(Op::MIN_ENCODED_LEN, 5);
    assert_eq!(Op::FIXED_ENCODED_LEN, Some(5));
    assert_eq!(<Tagged<u32>>::FIXED_ENCODED_LEN, Some(12));
    assert_eq!(<Tagged<String>>::MIN_ENCODED_LEN, 9);
    assert_eq!(<Tagged<String>>::FIXED_ENCODED_LEN, None);
    assert_eq!(<Either<u8, u8>>::FIXED_ENCODED_LEN, Some(2));
    assert_eq!(<Either<u8, u16>>::FIXED_ENCODED_LEN, None);
    assert_eq!(<Either<u8, u16>>::MIN_ENCODED_LEN, 2);
    assert_eq!(<Typed<u8, Cache>>::MIN_ENCODED_LEN, 1);
    assert_eq!(Cached::FIXED_ENCODED_LEN, Some(5));
    assert_eq!(Expr::MIN_ENCODED_LEN, 1);
    assert_eq!(Expr::FIXED_ENCODED_LEN, None);
    assert_eq!(Pong::MIN_ENCODED_LEN, 3);
    assert_eq!(Tree::MIN_ENCODED_LEN, 4 + 1 + 1);
    assert_eq!(Never::MIN_ENCODED_LEN, 1);
    assert_eq!(Never::FIXED_ENCODED_LEN, None);
    assert_eq!(<Cargo<Bytes>>::MIN_ENCODED_LEN, 1);
}

#[test]
fn examples_round_trip() {
    round_trip(&Marker);
    round_trip(&Empty {});
    round_trip(&Pair(7, "seven".into()));
    round_trip(&Shape::Nothing);
    round_trip(&Shape::Label("a".into(), Some('é')));
    round_trip(&Op::Flip([1, 2, 3, 4]));
    round_trip(&Typed::<u16, Cache> {
        values: vec![1, 2],
        unit: PhantomData,
    });
    round_trip(&Bounded {
        items: vec![1u8, 2],
    });
    round_trip(&Expr::Add(
        Box::new(Expr::Num(1.0)),
        Box::new(Expr::Neg(Box::new(Expr::Num(2.0)))),
    ));
    round_trip(&Ping::Pong(Box::new(Pong {
        count: 2,
        next: Box::new(Ping::Stop),
    })));
    round_trip(&Tree {
        value: 1,
        children: vec![Tree {
            value: 2,
            children: vec![],
            parent: None,
        }],
        parent: Some(Box::new(Tree {
            value: 0,
            children: vec![],
            parent: None,
        })),
    });
    let cargo = Cargo::<Bytes> {
        load: vec![1, 2, 3],
    };
    let bytes = codec::encode(&cargo);
    assert_eq!(
        codec::decode::<Cargo<Bytes>>(&bytes).expect("decodes").load,
        [1, 2, 3]
    );
}

#[test]
fn layout_is_fields_in_order() {
    let body = Body {
        m: 1.0,
        x: 2.0,
        y: 3.0,
        vx: 4.0,
        vy: 5.0,
    };
    let expected: Vec<u8> = [1.0f64, 2.0, 3.0, 4.0, 5.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    assert_eq!(codec::encode(&body), expected);
    // Tag (varint of the variant index), then the fields.
    assert_eq!(codec::encode(&Op::Add(1)), [0, 1, 0, 0, 0]);
    assert_eq!(codec::encode(&Shape::Nothing), [3]);
    assert_eq!(
        codec::encode(&Pair(1, "ab".into())),
        [1, 0, 0, 0, 2, b'a', b'b']
    );
}

#[test]
fn skipped_fields_are_not_sent_and_decode_to_default() {
    let value = Cached {
        value: 9,
        cache: Cache(vec![1, 2, 3]),
        flag: true,
    };
    let bytes = codec::encode(&value);
    assert_eq!(bytes, [9, 0, 0, 0, 1]);
    let back: Cached = codec::decode(&bytes).expect("decodes");
    assert_eq!(back.cache, Cache::default());
    assert_eq!((back.value, back.flag), (9, true));
}

#[test]
fn fixed_structs_in_bulk() {
    let bodies: Vec<Body> = (0..1000)
        .map(|i| {
            let f = f64::from(i);
            Body {
                m: f,
                x: -f,
                y: f * 0.5,
                vx: 1.0 / (f + 1.0),
                vy: f64::NAN,
            }
        })
        .collect();
    let bytes = codec::encode(&bodies);
    assert_eq!(bytes.len(), bodies.encoded_len());
    assert_eq!(bytes.len(), 2 + 40 * 1000);
    let back: Vec<Body> = codec::decode(&bytes).expect("decodes");
    assert_eq!(codec::encode(&back), bytes);
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        (any::<[f64; 2]>(), any::<f64>())
            .prop_map(|(center, radius)| Shape::Circle { center, radius }),
        prop::collection::vec(any::<[f64; 2]>(), 0..8).prop_map(Shape::Polygon),
        (".{0,8}", any::<Option<char>>()).prop_map(|(s, c)| Shape::Label(s, c)),
        Just(Shape::Nothing),
    ]
}

fn body() -> impl Strategy<Value = Body> {
    any::<[f64; 5]>().prop_map(|[m, x, y, vx, vy]| Body { m, x, y, vx, vy })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        any::<u32>().prop_map(Op::Add),
        any::<f32>().prop_map(|by| Op::Scale { by }),
        any::<[u8; 4]>().prop_map(Op::Flip),
    ]
}

fn either() -> impl Strategy<Value = Either<Pair, Marker>> {
    prop_oneof![
        (any::<u32>(), ".{0,6}").prop_map(|(n, s)| Either::Left(Pair(n, s))),
        Just(Either::Right(Marker)),
    ]
}

fn scene() -> impl Strategy<Value = Scene> {
    (
        (
            prop::collection::vec(body(), 0..10),
            prop::collection::vec(shape(), 0..6),
            ".{0,12}",
            any::<Option<char>>(),
            any::<[bool; 3]>(),
            body().prop_map(Box::new),
        ),
        (
            any::<(u8, i64)>(),
            any::<usize>(),
            any::<isize>(),
            any::<(u128, i128, i16, u16, i8)>(),
            (any::<u64>(), either()).prop_map(|(id, value)| Tagged { id, value }),
            prop::collection::vec(op(), 0..6),
        ),
    )
        .prop_map(
            |(
                (bodies, shapes, name, tag, flags, boxed),
                (pair, size, offset, wide, nested, ops),
            )| {
                Scene {
                    bodies,
                    shapes,
                    name,
                    tag,
                    flags,
                    boxed,
                    pair,
                    size,
                    offset,
                    wide,
                    nested,
                    ops,
                    unit: (),
                }
            },
        )
}

fn expr() -> impl Strategy<Value = Expr> {
    any::<f64>()
        .prop_map(Expr::Num)
        .prop_recursive(6, 40, 2, |inner| {
            prop_oneof![
                inner.clone().prop_map(|e| Expr::Neg(Box::new(e))),
                (inner.clone(), inner).prop_map(|(a, b)| Expr::Add(Box::new(a), Box::new(b))),
            ]
        })
}

/// Same value through the encoding (NaN equals itself).
fn check_round_trip<T: Message>(value: &T) -> Result<(), TestCaseError> {
    let bytes = codec::encode(value);
    prop_assert_eq!(bytes.len(), value.encoded_len());
    let back: T = codec::decode(&bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(codec::encode(&back), bytes);
    Ok(())
}

/// Every proper prefix of a valid encoding is an error (never a panic) that names `ty`.
fn check_truncations<T: Message>(value: &T, ty: &str) -> Result<(), TestCaseError> {
    let bytes = codec::encode(value);
    for end in 0..bytes.len() {
        let error = match codec::decode::<T>(&bytes[..end]) {
            Ok(_) => {
                return Err(TestCaseError::fail(format!(
                    "prefix of {end} bytes decoded"
                )));
            }
            Err(error) => error,
        };
        let outer = outer_type(&error);
        prop_assert!(
            outer.as_deref() == Some(ty) || (end == 0 && error.type_name() == ty),
            "{error}"
        );
    }
    Ok(())
}

/// The type of the outermost field in the error's path.
fn outer_type(error: &DecodeError) -> Option<String> {
    error.path().find_map(|segment| match segment {
        Segment::Field { ty, .. } => Some((*ty).to_owned()),
        Segment::Index(_) => None,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn scenes_round_trip(scene in scene()) {
        check_round_trip(&scene)?;
    }

    #[test]
    fn enums_and_generics_round_trip(
        shapes in prop::collection::vec(shape(), 0..10),
        ops in prop::collection::vec(op(), 0..10),
        tagged in (any::<u64>(), prop::collection::vec(any::<u16>(), 0..10))
            .prop_map(|(id, value)| Tagged { id, value }),
        either in prop_oneof![
            any::<u8>().prop_map(Either::<u8, String>::Left),
            ".{0,5}".prop_map(Either::<u8, String>::Right),
        ],
    ) {
        check_round_trip(&shapes)?;
        check_round_trip(&ops)?;
        check_round_trip(&tagged)?;
        check_round_trip(&either)?;
    }

    #[test]
    fn recursive_types_round_trip(expr in expr()) {
        check_round_trip(&expr)?;
    }

    #[test]
    fn truncated_scenes_are_errors_naming_the_field(scene in scene()) {
        check_truncations(&scene, "Scene")?;
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = codec::decode::<Scene>(&bytes);
        let _ = codec::decode::<Vec<Shape>>(&bytes);
        let _ = codec::decode::<Expr>(&bytes);
        let _ = codec::decode::<Vec<Body>>(&bytes);
    }
}

#[test]
fn truncated_struct_names_type_and_field() {
    let body = Body {
        m: 1.0,
        x: 2.0,
        y: 3.0,
        vx: 4.0,
        vy: 5.0,
    };
    let bytes = codec::encode(&body);
    let error = codec::decode::<Body>(&bytes[..20]).unwrap_err();
    assert!(matches!(
        error.kind(),
        DecodeErrorKind::UnexpectedEnd { .. }
    ));
    assert_eq!(error.offset(), 16);
    assert!(error.to_string().contains("`Body.y`"), "{error}");

    let error = codec::decode::<Pair>(&[1, 0, 0, 0, 3, b'a']).unwrap_err();
    assert!(error.to_string().contains("`Pair.1`"), "{error}");
}

#[test]
fn unknown_tag_names_the_enum() {
    let error = codec::decode::<Shape>(&[4]).unwrap_err();
    assert_eq!(error.kind(), &DecodeErrorKind::UnknownVariant(4));
    assert_eq!(error.type_name(), "Shape");
    assert_eq!(error.offset(), 0);

    // A multi-byte tag far out of range.
    let error = codec::decode::<Op>(&[0x80, 0x01, 0, 0, 0, 0]).unwrap_err();
    assert_eq!(error.kind(), &DecodeErrorKind::UnknownVariant(128));

    let error = codec::decode::<Never>(&[0]).unwrap_err();
    assert_eq!(error.kind(), &DecodeErrorKind::UnknownVariant(0));

    // Inside a vector: the element's index comes first.
    let mut bytes = codec::encode(&vec![Shape::Nothing, Shape::Nothing]);
    bytes[2] = 9;
    let error = codec::decode::<Vec<Shape>>(&bytes).unwrap_err();
    assert_eq!(error.kind(), &DecodeErrorKind::UnknownVariant(9));
    assert_eq!(error.offset(), 2);
}

#[test]
fn enum_fields_are_named_with_their_variant() {
    let bytes = codec::encode(&Shape::Circle {
        center: [1.0, 2.0],
        radius: 3.0,
    });
    let error = codec::decode::<Shape>(&bytes[..20]).unwrap_err();
    assert!(
        error.to_string().contains("`Shape.Circle.radius`"),
        "{error}"
    );
    let error = codec::decode::<Shape>(&[2, 1, b'x', 7]).unwrap_err();
    assert_eq!(error.kind(), &DecodeErrorKind::InvalidOptionTag(7));
    assert!(error.to_string().contains("`Shape.Label.1`"), "{error}");
}

#[test]
fn nested_errors_give_the_whole_path() {
    let scene = Scene {
        bodies: vec![],
        shapes: vec![Shape::Nothing, Shape::Label("ab".into(), None)],
        name: String::new(),
        tag: None,
        flags: [false; 3],
        boxed: Box::new(Body {
            m: 0.0,
            x: 0.0,
            y: 0.0,
            vx: 0.0,
            vy: 0.0,
        }),
        pair: (0, 0),
        size: 0,
        offset: 0,
        wide: (0, 0, 0, 0, 0),
        nested: Tagged {
            id: 0,
            value: Either::Right(Marker),
        },
        ops: vec![],
        unit: (),
    };
    let mut bytes = codec::encode(&scene);
    // shapes[1] is Label("ab", None): tag 2, length 2, 'a', 'b', option tag. Break the UTF-8.
    let at = bytes
        .iter()
        .position(|&b| b == b'a')
        .expect("the label is there");
    bytes[at] = 0xff;
    let error = codec::decode::<Scene>(&bytes).unwrap_err();
    assert_eq!(error.kind(), &DecodeErrorKind::InvalidUtf8);
    assert_eq!(error.offset(), at);
    assert!(
        error.to_string().contains("`Scene.shapes[1].Label.0`"),
        "{error}"
    );
}

#[derive(Message, Debug, Clone, Copy, PartialEq)]
struct Flags {
    id: u32,
    on: bool,
}

#[test]
fn invalid_value_in_a_fixed_run_gives_its_index_and_offset() {
    let flags: Vec<Flags> = (0..10)
        .map(|id| Flags {
            id,
            on: id % 2 == 0,
        })
        .collect();
    let mut bytes = codec::encode(&flags);
    // Element 7's bool: after the length byte, 7 elements of 5 bytes, then the 4-byte id.
    let at = 1 + 7 * 5 + 4;
    bytes[at] = 2;
    let error = codec::decode::<Vec<Flags>>(&bytes).unwrap_err();
    assert_eq!(error.kind(), &DecodeErrorKind::InvalidBool(2));
    assert_eq!(error.offset(), at);
    assert!(error.to_string().contains("[7]"), "{error}");
    assert!(error.to_string().contains("on"), "{error}");

    // Too short for the promised run: refused before decoding any element.
    let error = codec::decode::<Vec<Flags>>(&bytes[..30]).unwrap_err();
    assert!(
        matches!(error.kind(), DecodeErrorKind::LengthTooLarge { .. }),
        "{error}"
    );
}
