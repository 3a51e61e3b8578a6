//! Where the ranks run: every rank tells rank 0 its node's name, the cores it sees and its
//! process id, once per run, so that the tuner knows which workers share a node's cores and the
//! master can end a worker's process that it gave up on.

use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::Root;

use crate::layout::Layout;

/// Bytes of a node's name kept (MPI's own limit on most implementations).
const NAME: usize = 256;
/// A rank's report: the name, zero-padded, then its cores and its process id as little-endian
/// `u64`s.
const REPORT: usize = NAME + 16;

/// Where a worker's process runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Place {
    pub node: String,
    pub pid: u32,
}

/// Collective over `world`: on rank 0, the layout of ranks `1..size` (the workers) and where
/// each runs; on the others, `None`.
pub(super) fn gather(world: &SimpleCommunicator, slots: usize) -> Option<(Layout, Vec<Place>)> {
    let name = mpi::environment::processor_name().unwrap_or_default();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let mut mine = [0u8; REPORT];
    let len = name.len().min(NAME);
    mine[..len].copy_from_slice(&name.as_bytes()[..len]);
    mine[NAME..NAME + 8].copy_from_slice(&(cores as u64).to_le_bytes());
    mine[NAME + 8..].copy_from_slice(&u64::from(std::process::id()).to_le_bytes());
    let root = world.process_at_rank(0);
    if world.rank() != 0 {
        root.gather_into(&mine[..]);
        return None;
    }
    let mut all = vec![0u8; REPORT * world.size() as usize];
    root.gather_into_root(&mine[..], &mut all[..]);
    Some(parse(&all, slots))
}

/// The workers' layout and places from the reports of all ranks, rank 0's first; `slots`
/// workers to be spawned count as on the master's node (where Open MPI puts them unless the
/// allocation spans more nodes).
fn parse(all: &[u8], slots: usize) -> (Layout, Vec<Place>) {
    let word = |bytes: &[u8]| {
        let mut word = [0u8; 8];
        word.copy_from_slice(bytes);
        u64::from_le_bytes(word)
    };
    let read = |report: &[u8]| {
        let name = &report[..NAME];
        let end = name.iter().position(|&b| b == 0).unwrap_or(NAME);
        let place = Place {
            node: String::from_utf8_lossy(&name[..end]).into_owned(),
            pid: u32::try_from(word(&report[NAME + 8..])).unwrap_or(0),
        };
        (place, word(&report[NAME..NAME + 8]) as usize)
    };
    let reports: Vec<(Place, usize)> = all.chunks_exact(REPORT).skip(1).map(read).collect();
    let master = all.chunks_exact(REPORT).next().map(read);
    let spawned = master.iter().cycle().take(slots);
    let layout = Layout::from_workers(
        reports
            .iter()
            .chain(spawned)
            .map(|(place, cores)| (place.node.as_str(), *cores)),
    );
    (
        layout,
        reports.into_iter().map(|(place, _)| place).collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(name: &str, cores: u64) -> Vec<u8> {
        let mut r = vec![0u8; REPORT];
        r[..name.len()].copy_from_slice(name.as_bytes());
        r[NAME..NAME + 8].copy_from_slice(&cores.to_le_bytes());
        r[NAME + 8..].copy_from_slice(&(100 + cores).to_le_bytes());
        r
    }

    #[test]
    fn ranks_naming_one_node_share_it() {
        let all: Vec<u8> = [("n0", 8), ("n0", 8), ("n1", 4), ("n0", 8)]
            .iter()
            .flat_map(|&(name, cores)| report(name, cores))
            .collect();
        // Rank 0 (the master) is left out: workers on n0, n1, n0.
        let (layout, places) = parse(&all, 0);
        let nodes: Vec<_> = places.iter().map(|p| (p.node.as_str(), p.pid)).collect();
        assert_eq!(nodes, [("n0", 108), ("n1", 104), ("n0", 108)]);
        assert_eq!(layout.nodes(), 2);
        assert_eq!(layout.cores(), 12);
        assert_eq!(
            layout,
            Layout::from_workers([("n0", 8), ("n1", 4), ("n0", 8)])
        );
    }
}
