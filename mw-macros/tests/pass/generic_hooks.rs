//! Hooks on generic types, with the message types depending on the parameters.
use std::marker::PhantomData;

use mw::prelude::*;

struct Mapper<T> {
    items: Vec<T>,
}

#[mw::master]
impl<T: Message + Clone + Send + Sync + 'static> Mapper<T> {
    fn partition(&mut self, iteration: &Iteration) -> Work<Vec<T>, u32> {
        if iteration.index == 0 {
            Work::new(self.items.clone(), (0..self.items.len() as u32).collect())
        } else {
            Work::done()
        }
    }

    fn recover(&mut self, _task: TaskId, _result: Option<T>) {}
}

struct Picker<T>(PhantomData<T>);

#[mw::worker]
impl<T> Picker<T>
where
    T: Message + Clone + Send + Sync + 'static,
{
    fn do_work(&mut self, shared: &Vec<T>, task: u32) -> Option<T> {
        shared.get(task as usize).cloned()
    }
}

pub fn run() {
    let args = RunArgs {
        workers: Some(2),
        backend: Some(BackendChoice::Local),
        ..RunArgs::default()
    };
    mw::run_with(
        &args,
        || Mapper {
            items: vec![1.5f32, 2.5],
        },
        || Picker::<f32>(PhantomData),
    )
    .unwrap();
}
