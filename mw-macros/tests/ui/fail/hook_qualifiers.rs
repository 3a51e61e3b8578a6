use mw::prelude::*;

struct Walker;

#[mw::worker]
impl Walker {
    async fn do_work(&mut self, _shared: &(), task: &u32) -> u32 {
        *task
    }

    fn final_work<E>(&mut self) -> mw::Result<()> {
        Ok(())
    }
}

fn main() {}
