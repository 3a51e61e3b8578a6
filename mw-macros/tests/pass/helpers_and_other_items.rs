//! Methods that are not hooks (even with hook-like names once the hook exists) stay, as do
//! constants; hooks may name the runtime's types by any path.
use mw::prelude::*;

struct Fire {
    left: u32,
}

#[mw::master]
impl Fire {
    const START: u32 = 3;

    fn new() -> Self {
        Fire { left: Self::START }
    }

    fn partition(&mut self, _iteration: &mw::Iteration) -> mw::Work<(), u32> {
        self.left = self.left.saturating_sub(1);
        Work::tasks(self.tasks())
    }

    fn partitions(&self) -> u32 {
        self.left
    }

    fn tasks(&self) -> Vec<u32> {
        (0..self.left).collect()
    }

    fn recover(&mut self, _task: mw::TaskId, _result: Vec<u8>) {}
}

#[derive(Default)]
struct Walker;

#[mw::worker]
impl Walker {
    fn do_work(&mut self, _shared: &(), task: &u32) -> Vec<u8> {
        vec![0; *task as usize]
    }

    fn work(&self) {}
}

pub fn run() {
    let fire = Fire::new();
    assert_eq!(fire.partitions(), 3);
    let args = RunArgs {
        workers: Some(1),
        backend: Some(BackendChoice::Local),
        ..RunArgs::default()
    };
    mw::run_with(&args, Fire::new, Walker::default).unwrap();
}
