use mw::prelude::*;

type Tasks = Work<(), u32>;

struct Fire;

#[mw::master]
impl Fire {
    fn partition(&mut self, _iteration: &Iteration) -> Tasks {
        Work::done()
    }

    fn recover(&mut self, _task: TaskId, _result: u32) {}
}

fn main() {}
