use mw::prelude::*;

struct Walker;

#[mw::worker]
impl Walker {
    fn do_work(&mut self, _shared: (), task: &mut u32) -> u32 {
        *task
    }
}

fn main() {}
