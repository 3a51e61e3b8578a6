//! The switch: a learning Ethernet switch whose ports are delay lines. A frame that comes in on
//! one port goes out on the port its destination address was last seen on (on every other port
//! when the address is a broadcast, a multicast or not seen yet), each copy `delay` later, and
//! no sooner than the port's rate lets it leave after the frame before it. Times are ns of the
//! monotonic clock; the switch reads no clock itself, so that it can be tested with made-up
//! times.

use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

/// The longest a frame may wait for its port's rate beyond the delay before it is dropped, as
/// the box's token buckets drop what waits longer than their `latency 100ms`.
pub const BACKLOG_NS: u64 = 100_000_000;

type Mac = [u8; 6];

#[derive(Debug, Default)]
struct Port {
    /// Frames waiting to go out, due times in order.
    queue: VecDeque<(u64, Rc<[u8]>)>,
    /// When the port's line is free again after the last frame queued, at its rate.
    free_at: u64,
    /// Whether the port's rate applies to what it sends out.
    paced: bool,
    /// A port whose cable is out: what comes in on it is dropped, nothing goes out.
    cut: bool,
}

#[derive(Debug)]
pub struct Switch {
    delay_ns: u64,
    /// ns a byte takes on a paced port's line; 0 without a rate.
    byte_ns: f64,
    ports: Vec<Port>,
    learned: HashMap<Mac, usize>,
}

impl Switch {
    /// A switch of `paced.len()` ports, each frame held `delay_ns`; the ports marked in `paced`
    /// send no faster than `rate_mbit` (when given).
    pub fn new(delay_ns: u64, rate_mbit: Option<f64>, paced: &[bool]) -> Self {
        Switch {
            delay_ns,
            byte_ns: rate_mbit.map_or(0.0, |mbit| 8_000.0 / mbit),
            ports: paced
                .iter()
                .map(|&paced| Port {
                    paced,
                    ..Port::default()
                })
                .collect(),
            learned: HashMap::new(),
        }
    }

    /// `frame` came in on port `from` at `now`: queue it on the port(s) it goes out on.
    pub fn arrive(&mut self, from: usize, frame: Vec<u8>, now: u64) {
        if frame.len() < 14 || self.ports[from].cut {
            return;
        }
        let (mut destination, mut source): (Mac, Mac) = ([0; 6], [0; 6]);
        destination.copy_from_slice(&frame[0..6]);
        source.copy_from_slice(&frame[6..12]);
        if !is_group(&source) {
            self.learned.insert(source, from);
        }
        let frame: Rc<[u8]> = frame.into();
        match self.learned.get(&destination) {
            Some(&to) if !is_group(&destination) => {
                if to != from {
                    self.queue(to, &frame, now);
                }
            }
            _ => {
                for to in (0..self.ports.len()).filter(|&to| to != from) {
                    self.queue(to, &frame, now);
                }
            }
        }
    }

    fn queue(&mut self, to: usize, frame: &Rc<[u8]>, now: u64) {
        let held = now + self.delay_ns;
        let port = &mut self.ports[to];
        if port.cut {
            return;
        }
        let due = if port.paced && self.byte_ns > 0.0 {
            let due = held.max(port.free_at);
            if due - held > BACKLOG_NS {
                return;
            }
            port.free_at = due + (frame.len() as f64 * self.byte_ns) as u64;
            due
        } else {
            held
        };
        port.queue.push_back((due, Rc::clone(frame)));
    }

    /// The next frame port `to` sends out by `now`, if one is due.
    pub fn due(&mut self, to: usize, now: u64) -> Option<Rc<[u8]>> {
        let queue = &mut self.ports[to].queue;
        match queue.front() {
            Some(&(due, _)) if due <= now => queue.pop_front().map(|(_, frame)| frame),
            _ => None,
        }
    }

    /// When the next frame is due on any port.
    pub fn next_due(&self) -> Option<u64> {
        self.ports
            .iter()
            .filter_map(|port| port.queue.front().map(|&(due, _)| due))
            .min()
    }

    /// Pull port `port`'s cable out (`true`) or plug it back: frames on the way to it are lost.
    pub fn cut(&mut self, port: usize, cut: bool) {
        let port = &mut self.ports[port];
        port.cut = cut;
        if cut {
            port.queue.clear();
        }
    }

    pub fn ports(&self) -> usize {
        self.ports.len()
    }
}

/// A broadcast or multicast address (the group bit of the first byte).
fn is_group(mac: &Mac) -> bool {
    mac[0] & 1 == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn frame(to: u8, from: u8, len: usize) -> Vec<u8> {
        let mut f = vec![0u8; len];
        f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, to]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, from]);
        f
    }

    fn broadcast(from: u8) -> Vec<u8> {
        let mut f = frame(0, from, 60);
        f[0..6].copy_from_slice(&[0xff; 6]);
        f
    }

    fn drain(s: &mut Switch, port: usize, now: u64) -> usize {
        std::iter::from_fn(|| s.due(port, now)).count()
    }

    #[test]
    fn a_frame_leaves_after_the_delay_and_not_before() {
        let mut s = Switch::new(MS / 10, None, &[false, false]);
        s.arrive(0, broadcast(1), 5 * MS);
        assert_eq!(s.next_due(), Some(5 * MS + MS / 10));
        assert!(s.due(1, 5 * MS + MS / 10 - 1).is_none());
        assert!(s.due(1, 5 * MS + MS / 10).is_some());
        assert_eq!(s.next_due(), None);
    }

    /// The frames each of three ports sends out at time 0.
    fn drain_all(s: &mut Switch) -> [usize; 3] {
        [0, 1, 2].map(|port| drain(s, port, 0))
    }

    #[test]
    fn unknown_and_broadcast_flood_then_learned_addresses_go_to_one_port() {
        let mut s = Switch::new(0, None, &[false, false, false]);
        s.arrive(1, broadcast(1), 0);
        assert_eq!(drain_all(&mut s), [1, 0, 1]);
        // Port 1's address is known now; port 2's is not yet.
        s.arrive(2, frame(1, 2, 60), 0);
        assert_eq!(drain_all(&mut s), [0, 1, 0]);
        s.arrive(0, frame(2, 0, 60), 0);
        assert_eq!(drain_all(&mut s), [0, 0, 1]);
    }

    #[test]
    fn a_paced_port_sends_no_faster_than_its_rate() {
        // 100 Mbit/s: 1,250 bytes take 100 µs.
        let mut s = Switch::new(MS / 10, Some(100.0), &[false, true]);
        s.arrive(1, broadcast(1), 0); // learn port 1
        drain(&mut s, 0, MS);
        for _ in 0..3 {
            s.arrive(0, frame(1, 0, 1250), 0);
        }
        let dues: Vec<u64> = std::iter::from_fn(|| {
            let due = s.next_due()?;
            s.due(1, due).map(|_| due)
        })
        .collect();
        assert_eq!(dues, [MS / 10, 2 * MS / 10, 3 * MS / 10]);
    }

    #[test]
    fn a_port_backlogged_past_the_limit_drops() {
        // 1 Mbit/s: 1,250 bytes take 10 ms; the eleventh would wait more than 100 ms.
        let mut s = Switch::new(0, Some(1.0), &[false, true]);
        s.arrive(1, broadcast(1), 0);
        for _ in 0..20 {
            s.arrive(0, frame(1, 0, 1250), 0);
        }
        assert_eq!(drain(&mut s, 1, u64::MAX), 11);
    }

    #[test]
    fn a_cut_port_neither_sends_nor_receives_until_plugged_back() {
        let mut s = Switch::new(MS, None, &[false, false]);
        s.arrive(0, broadcast(0), 0);
        s.cut(1, true);
        assert_eq!(
            s.next_due(),
            None,
            "frames on their way to a cut port are lost"
        );
        s.arrive(0, broadcast(0), 0);
        s.arrive(1, broadcast(1), 0);
        assert_eq!(s.next_due(), None);
        s.cut(1, false);
        s.arrive(1, broadcast(1), 0);
        assert_eq!(drain(&mut s, 0, MS), 1);
    }

    #[test]
    fn runts_are_dropped() {
        let mut s = Switch::new(0, None, &[false, false]);
        s.arrive(0, vec![0xff; 13], 0);
        assert_eq!(s.next_due(), None);
    }
}
