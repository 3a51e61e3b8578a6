use mw::prelude::*;

struct Fire;

#[mw::master]
impl Fire {
    fn partition(&mut self, _iteration: &Iteration) -> Work<Vec<f64>, u32> {
        Work::done()
    }

    fn recover(&mut self, _task: TaskId, _result: u64) {}
}

#[derive(Default)]
struct Walker;

#[mw::worker]
impl Walker {
    fn do_work(&mut self, _shared: &Vec<f64>, task: &String) -> u32 {
        task.len() as u32
    }
}

fn main() -> mw::Result<()> {
    mw::run(|| Fire, Walker::default)
}
