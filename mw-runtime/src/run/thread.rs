//! Starting the worker threads of the threads backend, one at a time.
//!
//! Near a limit on address space (`ulimit -v`), a new thread can be created and then fail in its
//! own start-up: the standard library maps the thread's signal stack from inside the new thread
//! and aborts the whole process when that mapping fails ("failed to allocate an alternative
//! stack"), which no caller of `spawn` can catch. That happens when the main thread's next
//! `pthread_create` takes the memory first. So a thread is started only after the last one has
//! finished its start-up, and only when a mapping of `ROOM` bytes (its stack, guard and signal
//! stack with a wide margin) can be made just before: a thread that would not fit is refused
//! with an error the caller reports, never an abort.

use std::io;
use std::sync::mpsc;
use std::thread::{Builder, JoinHandle};

/// Address space asked for before each thread: the standard library's default stack of 2 MiB,
/// its guard page and signal stack, with room to spare for what the platform adds.
const ROOM: usize = 4 << 20;

/// Starts `body` on a thread named `name` once there is room for it, and returns after the
/// thread has started, or the reason it could not.
pub(super) fn start(
    name: String,
    body: impl FnOnce() + Send + 'static,
) -> io::Result<JoinHandle<()>> {
    room(ROOM)?;
    let (started, has_started) = mpsc::sync_channel(1);
    let thread = Builder::new().name(name).spawn(move || {
        // The signal stack is mapped by now (before this closure runs).
        let _ = started.send(());
        body();
    })?;
    // An error means the thread ended without a word, which it cannot do before `body` runs.
    let _ = has_started.recv();
    Ok(thread)
}

/// Whether `bytes` of address space can be mapped now: maps them, inaccessible and unbacked,
/// and gives them back.
#[cfg(unix)]
#[allow(unsafe_code)] // One mapping of our own, unmapped at once; nothing else touches it.
fn room(bytes: usize) -> io::Result<()> {
    use rustix::mm::{MapFlags, ProtFlags, mmap_anonymous, munmap};
    // SAFETY: a new private mapping at an address the kernel chooses aliases nothing; it is
    // unmapped with the same pointer and length before anyone else can see it.
    unsafe {
        let at = mmap_anonymous(
            std::ptr::null_mut(),
            bytes,
            ProtFlags::empty(),
            MapFlags::PRIVATE | MapFlags::NORESERVE,
        )?;
        munmap(at, bytes)?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn room(_: usize) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_started_thread_runs_its_body() {
        let (tx, rx) = mpsc::channel();
        let thread = start("t".to_owned(), move || tx.send(7).unwrap()).unwrap();
        thread.join().unwrap();
        assert_eq!(rx.recv().unwrap(), 7);
    }

    #[test]
    fn no_room_is_an_error_not_an_abort() {
        // More address space than any 64-bit process can map.
        let err = room((usize::MAX / 2) & !0xfff).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::OutOfMemory);
    }
}
