//! The worker: processes one task at a time. The runtime builds one worker per thread (or per
//! MPI rank) and sends each the tasks the distribution policy gives it.

use crate::messages::{Advanced, Segment};

/// A worker's state: built by `FireWorker::default` when the worker starts.
#[derive(Debug, Default)]
pub struct FireWorker;

#[mw::worker]
impl FireWorker {
    /// Computes the result of one task.
    ///
    /// TODO: the real computation. As generated, the result copies the fields it shares with
    /// the task (same name and type) and leaves the others empty.
    fn do_work(&mut self, _shared: &(), task: &Segment) -> Advanced {
        Advanced {
            first: task.first,
            points: task.points.clone(),
        }
    }
}
