//! The check that a master and a worker exchange the same messages.
//!
//! [`run`](crate::run) and its siblings require the worker's `Task`, `Result` and `Shared` to be
//! the master's. They state it with the traits of this module rather than with
//! `W: Worker<Task = M::Task, ...>` so that a mismatch is reported as one error that names the
//! master, the worker and both types, instead of a bare "type mismatch resolving
//! `<W as Worker>::Task == ...`". Each trait holds between a type and itself (and between a
//! type and [`Elsewhere`] of it, which no program uses: that second impl keeps the compiler
//! from committing to the first before both types are known, which would turn a mismatch back
//! into a bare "type mismatch resolving ...").

use std::marker::PhantomData;

use crate::app::{Master, Worker, WorkerSetup};

/// Not a message type: the other side of the second impl of each trait of this module.
#[derive(Debug)]
pub struct Elsewhere<T>(T);

/// The worker `W`'s task type (`Self`) is the master `M`'s (`T`).
#[diagnostic::on_unimplemented(
    message = "the master `{M}` and the worker `{W}` do not agree on the task type",
    label = "`{M}` sends tasks of type `{T}`, `{W}` takes `{Self}`",
    note = "`Master::Task` of `{M}` and `Worker::Task` of `{W}` must be the same type: with \
            `#[mw::master]`/`#[mw::worker]`, the `Task` of `partition`'s `Work<Shared, Task>` \
            and the type of `do_work`'s `task`"
)]
pub trait SameTask<T, M, W> {
    /// The master's task, seen as the worker's (the same value).
    fn from_master(task: &T) -> &Self;
}

impl<T, M, W> SameTask<T, M, W> for T {
    #[inline]
    fn from_master(task: &T) -> &T {
        task
    }
}

impl<T, M, W> SameTask<Elsewhere<T>, M, W> for T {
    fn from_master(task: &Elsewhere<T>) -> &T {
        &task.0
    }
}

/// The worker `W`'s result type (`Self`) is the master `M`'s (`T`).
#[diagnostic::on_unimplemented(
    message = "the master `{M}` and the worker `{W}` do not agree on the result type",
    label = "`{W}` returns `{Self}`, `{M}` recovers `{T}`",
    note = "`Master::Result` of `{M}` and `Worker::Result` of `{W}` must be the same type: with \
            `#[mw::master]`/`#[mw::worker]`, the type of `recover`'s `result` and the return \
            type of `do_work`"
)]
pub trait SameResult<T, M, W> {
    /// The worker's result, handed to the master (the same value).
    fn into_master(self) -> T;
}

impl<T, M, W> SameResult<T, M, W> for T {
    #[inline]
    fn into_master(self) -> T {
        self
    }
}

impl<T, M, W> SameResult<Elsewhere<T>, M, W> for T {
    fn into_master(self) -> Elsewhere<T> {
        Elsewhere(self)
    }
}

/// The worker `W`'s shared type (`Self`) is the master `M`'s (`T`).
#[diagnostic::on_unimplemented(
    message = "the master `{M}` and the worker `{W}` do not agree on the shared type",
    label = "`{M}` shares `{T}`, `{W}` expects `{Self}`",
    note = "`Master::Shared` of `{M}` and `Worker::Shared` of `{W}` must be the same type: with \
            `#[mw::master]`/`#[mw::worker]`, the `Shared` of `partition`'s \
            `Work<Shared, Task>` and the type of `do_work`'s `shared`"
)]
pub trait SameShared<T, M, W> {
    /// The master's shared data, seen as the worker's (the same value).
    fn from_master(shared: &T) -> &Self;
}

impl<T, M, W> SameShared<T, M, W> for T {
    #[inline]
    fn from_master(shared: &T) -> &T {
        shared
    }
}

impl<T, M, W> SameShared<Elsewhere<T>, M, W> for T {
    fn from_master(shared: &Elsewhere<T>) -> &T {
        &shared.0
    }
}

/// The worker `W` with the master `M`'s message types, which the traits above prove equal.
pub(crate) struct Agreed<M, W> {
    worker: W,
    master: PhantomData<fn() -> M>,
}

impl<M, W> Agreed<M, W> {
    pub(crate) fn new(worker: W) -> Self {
        Agreed {
            worker,
            master: PhantomData,
        }
    }
}

impl<M, W> Worker for Agreed<M, W>
where
    M: Master,
    W: Worker,
    W::Task: SameTask<M::Task, M, W>,
    W::Result: SameResult<M::Result, M, W>,
    W::Shared: SameShared<M::Shared, M, W>,
{
    type Task = M::Task;
    type Result = M::Result;
    type Shared = M::Shared;

    fn initialize(&mut self, setup: &WorkerSetup) -> crate::Result<()> {
        self.worker.initialize(setup)
    }

    #[inline]
    fn do_work(&mut self, shared: &M::Shared, task: &M::Task) -> M::Result {
        let shared = <W::Shared as SameShared<_, M, W>>::from_master(shared);
        let task = <W::Task as SameTask<_, M, W>>::from_master(task);
        self.worker.do_work(shared, task).into_master()
    }

    #[inline]
    fn try_work(
        &mut self,
        shared: &M::Shared,
        task: &M::Task,
    ) -> std::result::Result<M::Result, crate::app::TaskError> {
        let shared = <W::Shared as SameShared<_, M, W>>::from_master(shared);
        let task = <W::Task as SameTask<_, M, W>>::from_master(task);
        self.worker.try_work(shared, task).map(|r| r.into_master())
    }

    fn final_work(&mut self) -> crate::Result<()> {
        self.worker.final_work()
    }
}
