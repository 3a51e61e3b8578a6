//! The worker: processes one task at a time. The runtime builds one worker per thread (or per
//! MPI rank) and sends each the tasks the distribution policy gives it.

use crate::messages::{Params, Point, Value};

/// A worker's state: built by `PointsWorker::default` when the worker starts.
#[derive(Debug, Default)]
pub struct PointsWorker;

#[mw::worker]
impl PointsWorker {
    /// Computes the result of one task.
    ///
    /// TODO: the real computation. As generated, the result copies the fields it shares with
    /// the task (same name and type) and leaves the others empty.
    fn do_work(&mut self, _shared: &Params, task: &Point) -> Value {
        Value {
            index: task.index,
            v: 0.0,
        }
    }
}
