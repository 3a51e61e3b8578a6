use mw::prelude::*;

struct Fire;

#[mw::master]
impl Fire {
    fn partition(&mut self, _iteration: &Iteration) -> Work<(), u32> {
        Work::done()
    }

    fn recover(&mut self, _task: TaskId, _result: u32) {}

    fn do_work(&mut self, _shared: &(), task: &u32) -> u32 {
        *task
    }
}

fn main() {}
