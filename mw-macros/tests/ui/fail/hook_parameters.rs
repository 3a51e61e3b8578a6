use mw::prelude::*;

struct Fire;

#[mw::master]
impl Fire {
    fn initialize(&mut self, _setup: &Setup) -> mw::Result<()> {
        Ok(())
    }

    fn partition(&mut self) -> Work<(), u32> {
        Work::done()
    }

    fn recover(&mut self, _task: usize, _result: &u32) {}

    fn end_iteration(&mut self, _iteration: &Iteration) -> bool {
        false
    }
}

fn main() {}
