//! The worker: processes one task at a time. The runtime builds one worker per thread (or per
//! MPI rank) and sends each the tasks the distribution policy gives it.

use crate::messages::{Block, Plate, Rows};

/// A worker's state: built by `HeatMapWorker::default` when the worker starts.
#[derive(Debug, Default)]
pub struct HeatMapWorker;

#[mw::worker]
impl HeatMapWorker {
    /// Computes the result of one task.
    ///
    /// TODO: the real computation. As generated, the result is empty.
    fn do_work(&mut self, _shared: &Plate, _task: &Rows) -> Block {
        Block(0, Vec::new())
    }
}
