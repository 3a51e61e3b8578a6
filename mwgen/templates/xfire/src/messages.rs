//! What travels between master and workers: the step (shared), fire-line segments (tasks) and
//! their advanced points (results).
//!
//! The `Message` impls are written by hand, field by field in declaration order, exactly as
//! `#[derive(Message)]` will generate them; they can be replaced by the derive unchanged.

use mw::Message;
use mw::codec::{DecodeError, Reader};

use crate::front::Point;

/// Sent once per iteration to every worker.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Step {
    /// Step number, from 0.
    pub index: u64,
    /// Time step, min.
    pub dt_min: f64,
}

/// A task: a contiguous run of fire-line points, with the neighbours needed for their normals.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// Index of `points[0]` in the fire line.
    pub first: u64,
    /// The point before `points[0]` (the line is closed).
    pub before: Point,
    /// The points to advance.
    pub points: Vec<Point>,
    /// The point after the last of `points`.
    pub after: Point,
}

/// A result: the segment's points after the step.
#[derive(Debug, Clone, PartialEq)]
pub struct Advanced {
    /// Index of `points[0]` in the fire line.
    pub first: u64,
    /// The advanced points, in order.
    pub points: Vec<Point>,
    /// How many of them a non-burnable cell stopped.
    pub blocked: u32,
}

impl Message for Step {
    const MIN_ENCODED_LEN: usize = u64::MIN_ENCODED_LEN + f64::MIN_ENCODED_LEN;
    const FIXED_ENCODED_LEN: Option<usize> = Some(16);

    fn encoded_len(&self) -> usize {
        self.index.encoded_len() + self.dt_min.encoded_len()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        self.index.encode(out);
        self.dt_min.encode(out);
    }

    fn decode(input: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Step {
            index: u64::decode(input).map_err(|e| e.in_field("Step", "index"))?,
            dt_min: f64::decode(input).map_err(|e| e.in_field("Step", "dt_min"))?,
        })
    }
}

impl Message for Segment {
    const MIN_ENCODED_LEN: usize = u64::MIN_ENCODED_LEN
        + Point::MIN_ENCODED_LEN
        + Vec::<Point>::MIN_ENCODED_LEN
        + Point::MIN_ENCODED_LEN;

    fn encoded_len(&self) -> usize {
        self.first.encoded_len()
            + self.before.encoded_len()
            + self.points.encoded_len()
            + self.after.encoded_len()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        self.first.encode(out);
        self.before.encode(out);
        self.points.encode(out);
        self.after.encode(out);
    }

    fn decode(input: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Segment {
            first: u64::decode(input).map_err(|e| e.in_field("Segment", "first"))?,
            before: Point::decode(input).map_err(|e| e.in_field("Segment", "before"))?,
            points: Vec::decode(input).map_err(|e| e.in_field("Segment", "points"))?,
            after: Point::decode(input).map_err(|e| e.in_field("Segment", "after"))?,
        })
    }
}

impl Message for Advanced {
    const MIN_ENCODED_LEN: usize =
        u64::MIN_ENCODED_LEN + Vec::<Point>::MIN_ENCODED_LEN + u32::MIN_ENCODED_LEN;

    fn encoded_len(&self) -> usize {
        self.first.encoded_len() + self.points.encoded_len() + self.blocked.encoded_len()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        self.first.encode(out);
        self.points.encode(out);
        self.blocked.encode(out);
    }

    fn decode(input: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Advanced {
            first: u64::decode(input).map_err(|e| e.in_field("Advanced", "first"))?,
            points: Vec::decode(input).map_err(|e| e.in_field("Advanced", "points"))?,
            blocked: u32::decode(input).map_err(|e| e.in_field("Advanced", "blocked"))?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mw::codec;

    #[test]
    fn round_trips_with_exact_lengths() {
        let step = Step {
            index: 7,
            dt_min: 2.5,
        };
        let segment = Segment {
            first: 64,
            before: [1.0, 2.0],
            points: vec![[3.0, 4.0], [5.0, 6.0]],
            after: [7.0, 8.0],
        };
        let advanced = Advanced {
            first: 64,
            points: vec![[3.5, 4.5]],
            blocked: 1,
        };
        let bytes = codec::encode(&step);
        assert_eq!(bytes.len(), step.encoded_len());
        assert_eq!(codec::decode::<Step>(&bytes).unwrap(), step);
        let bytes = codec::encode(&segment);
        assert_eq!(bytes.len(), segment.encoded_len());
        assert_eq!(codec::decode::<Segment>(&bytes).unwrap(), segment);
        let bytes = codec::encode(&advanced);
        assert_eq!(bytes.len(), advanced.encoded_len());
        assert_eq!(codec::decode::<Advanced>(&bytes).unwrap(), advanced);
    }

    #[test]
    fn truncated_input_names_the_field() {
        let segment = Segment {
            first: 0,
            before: [0.0; 2],
            points: vec![[1.0, 1.0]; 3],
            after: [0.0; 2],
        };
        let bytes = codec::encode(&segment);
        let err = codec::decode::<Segment>(&bytes[..bytes.len() - 20]).unwrap_err();
        assert!(err.to_string().contains("Segment.points"), "{err}");
    }
}
