//! Faults on purpose, to watch the runtime survive them: a worker that dies the way a process
//! does. Tests and the synthetic example's `--inject` use it.

use std::cell::Cell;

/// The payload that carries a worker thread's emulated death out of its task.
struct Exit;

thread_local! {
    /// The backend of the worker on this thread, if it is one.
    static BACKEND: Cell<Option<&'static str>> = const { Cell::new(None) };
    /// The worker on this thread died the emulated death.
    static EXITED: Cell<bool> = const { Cell::new(false) };
}

/// This thread is a worker's, on `backend`.
pub(crate) fn serving(backend: &'static str) {
    BACKEND.with(|b| b.set(Some(backend)));
}

/// Ends the calling worker abruptly, as a crash of its process would, without answering the
/// chunk it holds. Under MPI the process aborts (`SIGABRT`); on threads the worker's thread
/// ends, and the master, told by the transport that the worker is lost, runs its chunks
/// elsewhere. Called from [`Worker::do_work`](crate::Worker::do_work) only; elsewhere (on the
/// master's thread, say) the process aborts.
pub fn exit_worker() -> ! {
    match BACKEND.with(Cell::get) {
        Some("local") => {
            EXITED.with(|e| e.set(true));
            std::panic::resume_unwind(Box::new(Exit))
        }
        _ => std::process::abort(),
    }
}

/// Whether the worker on this thread died the emulated death: the emulation layer
/// (`emulate/`) then runs nothing more of it and keeps its answers from the master.
pub(crate) fn exited() -> bool {
    EXITED.with(Cell::get)
}
