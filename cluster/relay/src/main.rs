//! mw-relay: the delay of the cluster in a box (`cluster/mw-cluster up N --delay MS`) on a
//! kernel without `netem`. It opens one tap device per host of the box (the head and each
//! node; `mw-cluster` moves each node's into the node's network namespace as its `eth0`) and
//! switches the frames between them as a learning Ethernet switch does, holding each one the
//! delay before it goes out, woken by a high-resolution timer, and sending no faster than the
//! link's rate into a node. Commands `down K` and `up K` on the control FIFO pull node K's
//! cable out and plug it back. See cluster/README.md.

mod switch;
mod sys;

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use switch::Switch;

/// Frames read from one port before the others and the timer get their turn.
const READ_BURST: usize = 64;

#[derive(Debug, Parser)]
#[command(
    name = "mw-relay",
    about = "A learning Ethernet switch between tap devices that holds every frame a set time: \
             the delay of cluster/mw-cluster where the kernel has no netem"
)]
struct Args {
    /// Time each frame is held before it goes out, ms (e.g. 0.1).
    #[arg(long, value_name = "MS")]
    delay: f64,
    /// Rate of each node's port, Mbit/s: frames go out to a node no faster (the head's port is
    /// not paced).
    #[arg(long, value_name = "MBIT")]
    rate: Option<f64>,
    /// The head's tap device (port 0).
    #[arg(long, value_name = "TAP")]
    head: String,
    /// A FIFO (made by the caller) of commands `down K` / `up K`: node K's cable out, or back.
    #[arg(long, value_name = "FIFO")]
    control: PathBuf,
    /// Written with the relay's pid once every tap device is open.
    #[arg(long, value_name = "FILE")]
    pid_file: PathBuf,
    /// Run under the real-time FIFO scheduling policy, so that the ranks of the box do not
    /// delay the relay's wake-ups.
    #[arg(long)]
    realtime: bool,
    /// The nodes' tap devices: node K is the K-th (port K).
    #[arg(required = true, value_name = "TAP")]
    nodes: Vec<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mw-relay: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    if !(args.delay.is_finite() && args.delay > 0.0) {
        return Err(format!(
            "--delay is in ms, a positive number: `{}`",
            args.delay
        ));
    }
    if let Some(rate) = args.rate
        && !(rate.is_finite() && rate > 0.0)
    {
        return Err(format!("--rate is in Mbit/s, a positive number: `{rate}`"));
    }
    let names: Vec<&str> = std::iter::once(args.head.as_str())
        .chain(args.nodes.iter().map(String::as_str))
        .collect();
    let mut taps = names
        .iter()
        .map(|name| sys::open_tap(name).map_err(|e| e.to_string()))
        .collect::<Result<Vec<File>, String>>()?;
    let mut control = OpenOptions::new()
        // Open for writing too, so that the FIFO never reads as closed between two commands.
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&args.control)
        .map_err(|e| format!("control FIFO `{}`: {e}", args.control.display()))?;
    let timer = sys::Timer::new().map_err(|e| format!("timerfd: {e}"))?;
    sys::fine_timers();
    if args.realtime {
        sys::realtime().map_err(|e| format!("real-time scheduling: {e}"))?;
    }
    let paced: Vec<bool> = (0..names.len()).map(|port| port > 0).collect();
    let mut switch = Switch::new((args.delay * 1e6).round() as u64, args.rate, &paced);
    std::fs::write(&args.pid_file, format!("{}\n", std::process::id()))
        .map_err(|e| format!("pid file `{}`: {e}", args.pid_file.display()))?;
    eprintln!(
        "mw-relay: {} ports ({}), delay {} ms, rate {}",
        names.len(),
        names.join(" "),
        args.delay,
        args.rate.map_or("unpaced".to_string(), |r| format!(
            "{r} Mbit/s into each node"
        ))
    );

    let mut fds: Vec<libc::pollfd> = taps
        .iter()
        .map(|f| f.as_raw_fd())
        .chain([control.as_raw_fd(), timer.fd()])
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let mut commands = String::new();
    let mut buffer = vec![0u8; 65536];
    let mut wake = Wake::default();
    // The expiry of the timer as set, when it was set for a time still to come.
    let mut timed = None;
    loop {
        let slept_from = sys::now_ns();
        sys::poll(&mut fds).map_err(|e| format!("poll: {e}"))?;
        let woke = sys::now_ns();
        if fds[taps.len() + 1].revents & libc::POLLIN != 0 {
            timer.acknowledge();
        }
        if fds[taps.len()].revents & libc::POLLIN != 0 {
            read_commands(&mut control, &mut commands, &mut switch)?;
        }
        for (port, tap) in taps.iter_mut().enumerate() {
            let revents = fds[port].revents;
            if revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
                // Deleted (`ip link del` in its namespace): the port is cut off for good, the
                // others go on.
                eprintln!(
                    "mw-relay: tap `{}` is gone: its port is cut off",
                    names[port]
                );
                switch.cut(port, true);
                fds[port].fd = -1;
                continue;
            }
            if revents & libc::POLLIN == 0 {
                continue;
            }
            for read in 0..READ_BURST {
                match tap.read(&mut buffer) {
                    Ok(len) => {
                        let came_in = if read == 0 {
                            wake.came_in(slept_from, woke)
                        } else {
                            sys::now_ns()
                        };
                        switch.arrive(port, buffer[..len].to_vec(), came_in);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(format!("reading tap `{}`: {e}", names[port])),
                }
            }
        }
        if fds[taps.len() + 1].revents & libc::POLLIN != 0
            && let Some(armed) = timed
        {
            wake.woke(armed, woke);
        }
        let mut now = sys::now_ns();
        // A frame due within the timer's usual lateness is waited for here, on the clock:
        // the timer would wake the relay after it is due.
        if let Some(due) = switch.next_due()
            && due > now
            && due - now <= wake.lateness_ns()
        {
            now = sys::spin_until(due);
        }
        for (port, tap) in taps.iter_mut().enumerate() {
            while let Some(frame) = switch.due(port, now) {
                // A tap whose link is down (EIO) or full loses the frame, as a wire would.
                let _ = tap.write(&frame);
            }
        }
        let armed = switch.next_due().map(|due| wake.arm_for(due));
        timer
            .expire_at(armed)
            .map_err(|e| format!("timerfd: {e}"))?;
        // A timer set for a time already past expires at once: its wake-up says nothing of
        // the lateness.
        timed = armed.filter(|&at| at > sys::now_ns());
    }
}

/// How late the relay wakes up, learnt as it goes from its timer, so that the timer is set that
/// much before a frame is due and the rest waited for on the clock, and so that the frame that
/// wakes it is taken to have come in that much before: a sleeping process runs tens of µs after
/// what wakes it (more in a virtual machine), a good part of a 0.1 ms delay.
#[derive(Debug, Default)]
struct Wake {
    /// A moving average of the lateness, ns.
    lateness: f64,
}

impl Wake {
    /// The most the relay waits on the clock (and the most lateness it learns).
    const MOST_NS: f64 = 50_000.0;

    fn lateness_ns(&self) -> u64 {
        self.lateness as u64
    }

    /// When to set the timer for a frame due at `due`.
    fn arm_for(&self, due: u64) -> u64 {
        due.saturating_sub(self.lateness_ns())
    }

    /// When the first frame read after a wait in poll from `slept_from` to `woke` came in: the
    /// wake-up's lateness before `woke`, not before the wait began.
    fn came_in(&self, slept_from: u64, woke: u64) -> u64 {
        woke.saturating_sub(self.lateness_ns()).max(slept_from)
    }

    /// The timer set for `armed` woke the relay at `now`.
    fn woke(&mut self, armed: u64, now: u64) {
        let late = now.saturating_sub(armed) as f64;
        self.lateness = 0.9 * self.lateness + 0.1 * late.min(Self::MOST_NS);
    }
}

/// Apply the complete lines the control FIFO has for us: `down K`, `up K`.
fn read_commands(
    control: &mut File,
    pending: &mut String,
    switch: &mut Switch,
) -> Result<(), String> {
    let mut bytes = [0u8; 512];
    loop {
        match control.read(&mut bytes) {
            Ok(0) => break,
            Ok(n) => pending.push_str(&String::from_utf8_lossy(&bytes[..n])),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("control FIFO: {e}")),
        }
    }
    while let Some(end) = pending.find('\n') {
        let line: String = pending.drain(..=end).collect();
        let words: Vec<&str> = line.split_whitespace().collect();
        let node = words.get(1).and_then(|k| k.parse::<usize>().ok());
        match (words.first(), node) {
            (Some(&state @ ("down" | "up")), Some(k)) if (1..switch.ports()).contains(&k) => {
                switch.cut(k, state == "down");
                eprintln!("mw-relay: node {k}: cable {state}");
            }
            _ => eprintln!("mw-relay: ignored control line `{}`", line.trim()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        Args::command().debug_assert();
    }

    #[test]
    fn the_wake_up_learns_the_timers_lateness_and_sets_it_that_much_early() {
        let mut wake = Wake::default();
        for _ in 0..200 {
            wake.woke(1_000_000, 1_020_000);
        }
        assert!((19_900..=20_000).contains(&wake.lateness_ns()), "{wake:?}");
        assert_eq!(wake.arm_for(5_000_000), 5_000_000 - wake.lateness_ns());
        // A wake-up hours late (a stopped process) teaches no more than the bound.
        for _ in 0..200 {
            wake.woke(0, u64::MAX / 2);
        }
        assert!(wake.lateness_ns() <= Wake::MOST_NS as u64);
    }

    #[test]
    fn the_frame_that_wakes_the_relay_came_in_before_it_but_not_before_the_wait() {
        let mut wake = Wake::default();
        for _ in 0..200 {
            wake.woke(0, 20_000);
        }
        let late = wake.lateness_ns();
        assert_eq!(wake.came_in(0, 1_000_000), 1_000_000 - late);
        assert_eq!(wake.came_in(995_000, 1_000_000), 995_000);
    }
}
