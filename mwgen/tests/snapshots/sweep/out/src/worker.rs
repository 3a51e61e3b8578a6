//! The worker: processes one task at a time. The runtime builds one worker per thread (or per
//! MPI rank) and sends each the tasks the distribution policy gives it.

use crate::messages::{Answer, Task};

/// A worker's state: built by `BagWorker::default` when the worker starts.
#[derive(Debug, Default)]
pub struct BagWorker;

#[mw::worker]
impl BagWorker {
    /// Sums the squares of the task's numbers.
    fn do_work(&mut self, _shared: &(), task: &Task) -> Answer {
        let sum = (task.first..task.first + task.count).map(|n| n * n).sum();
        Answer { sum }
    }
}
