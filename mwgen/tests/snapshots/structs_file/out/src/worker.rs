//! The worker: processes one task at a time. The runtime builds one worker per thread (or per
//! MPI rank) and sends each the tasks the distribution policy gives it.

use crate::messages::{Job, Result};

/// A worker's state: built by `CalcWorker::default` when the worker starts.
#[derive(Debug, Default)]
pub struct CalcWorker;

#[mw::worker]
impl CalcWorker {
    /// Computes the result of one task.
    ///
    /// TODO: the real computation. As generated, the result is empty.
    fn do_work(&mut self, _shared: &(), _task: &Job) -> Result {
        Result {
            value: None,
            error: None,
            received_at: Default::default(),
        }
    }
}
