use mw::prelude::*;

struct Fire;

#[mw::master]
impl Fire {
    fn partition(&mut self, _iteration: &Iteration) -> Work<(), u32> {
        Work::done()
    }
}

struct Walker;

#[mw::worker]
impl Walker {
    fn initialize(&mut self, _setup: &WorkerSetup) -> mw::Result<()> {
        Ok(())
    }
}

fn main() {}
