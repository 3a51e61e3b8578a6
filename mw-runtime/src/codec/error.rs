//! What went wrong while decoding, and where.

use std::fmt;

/// A message could not be decoded: the input was truncated, oversized or not a valid encoding.
///
/// The error names the type being decoded, the path of fields and elements that led to it
/// (`Body.points[3]`) and the byte offset in the input, so a corrupted message can be traced to
/// the field that went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    kind: DecodeErrorKind,
    ty: &'static str,
    offset: usize,
    /// Innermost segment first; reversed when displayed.
    path: Vec<Segment>,
}

/// The reason a message could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// The input ended before the value did.
    UnexpectedEnd { needed: usize, available: usize },
    /// A length prefix promises more elements than the rest of the input can hold.
    LengthTooLarge { len: u64, available: usize },
    /// A variable-length integer runs past 64 bits.
    InvalidVarint,
    /// A `String` holds bytes that are not UTF-8.
    InvalidUtf8,
    /// A `bool` byte other than 0 or 1.
    InvalidBool(u8),
    /// An `Option` tag other than 0 or 1.
    InvalidOptionTag(u8),
    /// A `char` that is not a Unicode scalar value.
    InvalidChar(u32),
    /// An enum tag that names no variant.
    UnknownVariant(u64),
    /// A `usize`/`isize` that does not fit this platform.
    OutOfRange(u64),
    /// Bytes left over after a complete message.
    TrailingBytes(usize),
    /// Values nested deeper than [`MAX_DEPTH`](super::MAX_DEPTH) (hostile recursive input).
    TooDeep,
    /// The decoded values would take more memory than the message may allocate:
    /// [`MAX_EXPANSION`](super::MAX_EXPANSION) bytes per input byte plus
    /// [`BASE_ALLOCATION`](super::BASE_ALLOCATION), `limit` in all.
    TooMuchMemory { needed: usize, limit: usize },
}

/// One step on the way from the outer message to the value that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// Field `field` of type `ty` (tuple fields are named by their index).
    Field {
        ty: &'static str,
        field: &'static str,
    },
    /// Element `index` of a sequence.
    Index(usize),
}

impl DecodeError {
    /// An error of `kind` while decoding a value of type `ty` at byte `offset`.
    pub fn new(kind: DecodeErrorKind, ty: &'static str, offset: usize) -> Self {
        DecodeError {
            kind,
            ty,
            offset,
            path: Vec::new(),
        }
    }

    /// Records that the failing value sits in field `field` of type `ty`.
    #[must_use]
    pub fn in_field(mut self, ty: &'static str, field: &'static str) -> Self {
        self.path.push(Segment::Field { ty, field });
        self
    }

    /// Records that the failing value is element `index` of a sequence.
    #[must_use]
    pub fn at_index(mut self, index: usize) -> Self {
        self.path.push(Segment::Index(index));
        self
    }

    /// Why decoding failed.
    pub fn kind(&self) -> &DecodeErrorKind {
        &self.kind
    }

    /// The type whose encoding was wrong (the innermost one).
    pub fn type_name(&self) -> &'static str {
        self.ty
    }

    /// Byte offset in the input where the failing value started or the problem was seen.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Path from the outer message to the failing value, outermost first.
    pub fn path(&self) -> impl Iterator<Item = &Segment> {
        self.path.iter().rev()
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot decode `{}`", self.ty)?;
        if !self.path.is_empty() {
            f.write_str(" at `")?;
            for (i, segment) in self.path().enumerate() {
                match segment {
                    Segment::Field { ty, field } if i == 0 => write!(f, "{ty}.{field}")?,
                    Segment::Field { field, .. } => write!(f, ".{field}")?,
                    Segment::Index(index) => write!(f, "[{index}]")?,
                }
            }
            f.write_str("`")?;
        }
        write!(f, " (byte {}): ", self.offset)?;
        match &self.kind {
            DecodeErrorKind::UnexpectedEnd { needed, available } => write!(
                f,
                "input ended: needed {needed} more bytes, {available} left"
            ),
            DecodeErrorKind::LengthTooLarge { len, available } => write!(
                f,
                "length prefix {len} is larger than the {available} bytes left can hold"
            ),
            DecodeErrorKind::InvalidVarint => f.write_str("length or tag runs past 64 bits"),
            DecodeErrorKind::InvalidUtf8 => f.write_str("string is not valid UTF-8"),
            DecodeErrorKind::InvalidBool(b) => write!(f, "bool byte is {b}, expected 0 or 1"),
            DecodeErrorKind::InvalidOptionTag(b) => {
                write!(f, "Option tag is {b}, expected 0 (None) or 1 (Some)")
            }
            DecodeErrorKind::InvalidChar(c) => write!(f, "{c:#x} is not a Unicode scalar value"),
            DecodeErrorKind::UnknownVariant(tag) => write!(f, "no variant has tag {tag}"),
            DecodeErrorKind::OutOfRange(v) => {
                write!(f, "value {v} does not fit this platform's word size")
            }
            DecodeErrorKind::TrailingBytes(n) => {
                write!(f, "{n} bytes left over after the message")
            }
            DecodeErrorKind::TooMuchMemory { needed, limit } => write!(
                f,
                "{needed} more bytes of memory would pass the {limit} bytes this message may \
                 decode into ({} per input byte)",
                super::MAX_EXPANSION
            ),
            DecodeErrorKind::TooDeep => write!(
                f,
                "values nested more than {} levels deep",
                super::MAX_DEPTH
            ),
        }
    }
}

impl std::error::Error for DecodeError {}
