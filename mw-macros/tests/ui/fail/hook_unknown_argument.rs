use mw::prelude::*;

struct Walker;

#[mw::worker(name = "walker")]
impl Walker {
    fn do_work(&mut self, _shared: &(), task: &u32) -> u32 {
        *task
    }
}

fn main() {}
