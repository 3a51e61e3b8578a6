use mw::prelude::*;

struct Sweep;

#[mw::master]
impl Sweep {
    fn partition(&mut self, _iteration: &Iteration) -> Work<(), u32> {
        Work::done()
    }

    fn more_tasks(&mut self, _iteration: Iteration, _room: u32) -> Option<u32> {
        None
    }

    fn recover(&mut self, _task: TaskId, _result: u32) {}
}

struct Wrong;

#[mw::master]
impl Wrong {
    fn partition(&mut self, _iteration: &Iteration) -> Work<(), u32> {
        Work::done()
    }

    fn more_task(&mut self, _iteration: &Iteration, _room: usize) -> Vec<u32> {
        Vec::new()
    }

    fn recover(&mut self, _task: TaskId, _result: u32) {}
}

fn main() {}
