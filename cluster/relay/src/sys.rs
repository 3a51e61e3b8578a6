//! The few system calls the relay needs that the standard library does not wrap: a tap
//! device, the monotonic clock in nanoseconds, an absolute timer that can be polled, poll
//! itself, and the scheduler's settings. Every `unsafe` block of the crate is here.
#![allow(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;

/// A new tap device `name` (an Ethernet device whose frames this process reads and writes),
/// without the packet-information header, non-blocking. It lives as long as the file is open.
pub fn open_tap(name: &str) -> io::Result<File> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains('\0') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{name}` is no interface name (1 to 15 bytes)"),
        ));
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open("/dev/net/tun")
        .map_err(|e| io::Error::new(e.kind(), format!("/dev/net/tun: {e}")))?;
    // SAFETY: ifreq is plain data, all zeroes is a valid value of it.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (to, from) in request.ifr_name.iter_mut().zip(name.bytes()) {
        *to = from as libc::c_char;
    }
    request.ifr_ifru.ifru_flags = (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: TUNSETIFF reads and writes an ifreq, which `request` is, for the duration of the
    // call; the descriptor is open.
    let done = unsafe { libc::ioctl(file.as_raw_fd(), libc::TUNSETIFF, &mut request) };
    if done < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("tap `{name}`: {e}")));
    }
    Ok(file)
}

/// The monotonic clock, ns (the clock the timer counts in).
pub fn now_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Wait on the clock until `at` ns (a short wait: the caller bounds it); the time then.
pub fn spin_until(at: u64) -> u64 {
    loop {
        let now = now_ns();
        if now >= at {
            return now;
        }
        std::hint::spin_loop();
    }
}

/// A timer on the monotonic clock that expires at an absolute time, with the kernel's
/// high-resolution timers (no slack), and whose descriptor becomes readable when it does.
#[derive(Debug)]
pub struct Timer(OwnedFd);

impl Timer {
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain system call; the descriptor it returns is ours alone.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and is owned by nothing else.
        Ok(Timer(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Expire at `at` ns of the monotonic clock (at once when that has passed), or never.
    pub fn expire_at(&self, at: Option<u64>) -> io::Result<()> {
        let time = |ns: u64| libc::timespec {
            tv_sec: (ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (ns % 1_000_000_000) as libc::c_long,
        };
        let spec = libc::itimerspec {
            it_interval: time(0),
            // Zero disarms the timer: an expiry due at time 0 is asked for as 1 ns.
            it_value: time(at.map_or(0, |ns| ns.max(1))),
        };
        // SAFETY: `spec` is a valid itimerspec; the old value is not asked for.
        let done = unsafe {
            libc::timerfd_settime(
                self.0.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        if done < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Take the expiry the descriptor reports, so that it stops being readable.
    pub fn acknowledge(&self) {
        let mut count = 0u64;
        // SAFETY: reads at most 8 bytes into `count`; a timer not expired says EAGAIN, which
        // needs nothing done.
        unsafe { libc::read(self.0.as_raw_fd(), (&raw mut count).cast(), 8) };
    }

    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// Wait until one of `fds` is ready (no timeout: the timer is one of them). A signal that
/// interrupts the wait counts as a wake-up with nothing ready.
pub fn poll(fds: &mut [libc::pollfd]) -> io::Result<()> {
    // SAFETY: `fds` is a valid slice of pollfd of that length for the duration of the call.
    let done = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
    if done < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
        fds.iter_mut().for_each(|fd| fd.revents = 0);
    }
    Ok(())
}

/// Run this process under the real-time FIFO policy at the lowest priority, so that a frame
/// due is sent when its timer fires rather than when the ranks of the box let the relay have
/// a core; and ask for timers without slack.
pub fn realtime() -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: `param` is a valid sched_param; 0 is this process.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Timers of this process without the default 50 µs of slack.
pub fn fine_timers() {
    // SAFETY: PR_SET_TIMERSLACK takes a number of ns; 1 is the smallest the kernel accepts.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
}
