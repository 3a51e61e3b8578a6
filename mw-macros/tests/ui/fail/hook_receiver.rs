use mw::prelude::*;

struct Walker;

#[mw::worker]
impl Walker {
    fn do_work(&self, _shared: &(), task: &u32) -> u32 {
        *task
    }

    fn final_work() -> mw::Result<()> {
        Ok(())
    }
}

fn main() {}
