//! What travels between master and workers.

use mw::codec::{DecodeError, Message, Reader};

/// One body: position, velocity, mass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Body {
    pub x: f64,
    pub y: f64,
    pub vx: f64,
    pub vy: f64,
    pub m: f64,
}

/// A task: bodies `first..first + count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub first: u32,
    pub count: u32,
}

/// A result: the task's bodies after one step.
#[derive(Debug, Clone, PartialEq)]
pub struct Moved {
    pub bodies: Vec<Body>,
}

impl Message for Body {
    const MIN_ENCODED_LEN: usize = 40;
    const FIXED_ENCODED_LEN: Option<usize> = Some(40);

    fn encoded_len(&self) -> usize {
        40
    }

    fn encode(&self, out: &mut Vec<u8>) {
        for v in [self.x, self.y, self.vx, self.vy, self.m] {
            v.encode(out);
        }
    }

    fn decode(input: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let [x, y, vx, vy, m] = <[f64; 5]>::decode(input).map_err(|e| e.in_field("Body", "x"))?;
        Ok(Body { x, y, vx, vy, m })
    }
}

impl Message for Range {
    const MIN_ENCODED_LEN: usize = 8;
    const FIXED_ENCODED_LEN: Option<usize> = Some(8);

    fn encoded_len(&self) -> usize {
        8
    }

    fn encode(&self, out: &mut Vec<u8>) {
        self.first.encode(out);
        self.count.encode(out);
    }

    fn decode(input: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Range {
            first: u32::decode(input).map_err(|e| e.in_field("Range", "first"))?,
            count: u32::decode(input).map_err(|e| e.in_field("Range", "count"))?,
        })
    }
}

impl Message for Moved {
    const MIN_ENCODED_LEN: usize = 1;

    fn encoded_len(&self) -> usize {
        self.bodies.encoded_len()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        self.bodies.encode(out);
    }

    fn decode(input: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Moved {
            bodies: Vec::decode(input).map_err(|e| e.in_field("Moved", "bodies"))?,
        })
    }
}
