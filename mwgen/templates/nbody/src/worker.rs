//! The worker: advances its range of bodies by one step.

use crate::messages::{Bodies, Moved, Range};
use crate::physics;

#[derive(Debug, Default)]
pub struct NBodyWorker;

#[mw::worker]
impl NBodyWorker {
    fn do_work(&mut self, bodies: &Bodies, range: &Range) -> Moved {
        Moved {
            bodies: physics::advance_range(&bodies.all, range),
        }
    }
}
