//! The worker: advances its range of bodies by one step.

use mw::prelude::*;

use crate::messages::{Body, Moved, Range};
use crate::physics;

#[derive(Debug, Default)]
pub struct NBodyWorker;

impl Worker for NBodyWorker {
    type Task = Range;
    type Result = Moved;
    type Shared = Vec<Body>;

    fn do_work(&mut self, bodies: &Vec<Body>, range: &Range) -> Moved {
        let first = range.first as usize;
        let bodies = (first..first + range.count as usize)
            .map(|i| physics::advance(bodies, i))
            .collect();
        Moved { bodies }
    }
}
