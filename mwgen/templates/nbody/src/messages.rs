//! What travels between master and workers: all bodies (shared, every step), index ranges
//! (tasks) and the moved bodies of a range (results). The codecs are derived: fields in
//! declaration order, so a `Body` is 40 bytes and a `Vec<Body>` moves as one block.

use mw::Message;

/// One body: position, velocity, mass.
#[derive(Message, Debug, Clone, Copy, PartialEq)]
pub struct Body {
    pub x: f64,
    pub y: f64,
    pub vx: f64,
    pub vy: f64,
    pub m: f64,
}

/// The shared part of a step: every body, as the step starts.
#[derive(Message, Debug, Clone, PartialEq, Default)]
pub struct Bodies {
    pub all: Vec<Body>,
}

/// A task: bodies `first..first + count`.
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub first: u32,
    pub count: u32,
}

/// A result: the task's bodies after one step.
#[derive(Message, Debug, Clone, PartialEq)]
pub struct Moved {
    pub bodies: Vec<Body>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use mw::codec;

    #[test]
    fn bodies_are_forty_bytes_in_field_order() {
        let body = Body {
            x: 1.0,
            y: 2.0,
            vx: 3.0,
            vy: 4.0,
            m: 5.0,
        };
        assert_eq!(Body::FIXED_ENCODED_LEN, Some(40));
        let bytes = codec::encode(&body);
        let fields: Vec<f64> = bytes
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(fields, [1.0, 2.0, 3.0, 4.0, 5.0]);
        let moved = Moved {
            bodies: vec![body; 3],
        };
        let bytes = codec::encode(&moved);
        assert_eq!(bytes.len(), moved.encoded_len());
        assert_eq!(codec::decode::<Moved>(&bytes).unwrap(), moved);
        assert!(codec::decode::<Moved>(&bytes[..bytes.len() - 1]).is_err());
        assert_eq!(codec::encode(&Range { first: 1, count: 2 }).len(), 8);
    }
}
