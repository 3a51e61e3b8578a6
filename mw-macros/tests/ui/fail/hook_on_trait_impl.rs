use mw::prelude::*;

struct Walker;

#[mw::worker]
impl Worker for Walker {
    type Task = u32;
    type Result = u32;
    type Shared = ();

    fn do_work(&mut self, _shared: &(), task: &u32) -> u32 {
        *task
    }
}

fn main() {}
