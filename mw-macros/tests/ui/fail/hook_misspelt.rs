use mw::prelude::*;

struct Fire;

#[mw::master]
impl Fire {
    fn partiton(&mut self, _iteration: &Iteration) -> Work<(), u32> {
        Work::done()
    }

    fn recover(&mut self, _task: TaskId, _result: u32) {}

    fn finalWork(&mut self) -> mw::Result<()> {
        Ok(())
    }
}

fn main() {}
