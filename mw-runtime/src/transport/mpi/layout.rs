//! Where the ranks run: every rank tells rank 0 its node's name and the cores it sees, once per
//! run, so that the tuner knows which workers share a node's cores.

use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::Root;

use crate::tuning::Layout;

/// Bytes of a node's name kept (MPI's own limit on most implementations).
const NAME: usize = 256;
/// A rank's report: the name, zero-padded, then its cores as a little-endian `u64`.
const REPORT: usize = NAME + 8;

/// Collective over `world`: on rank 0, the layout of ranks `1..size` (the workers); on the
/// others, `None`.
pub(crate) fn gather(world: &SimpleCommunicator) -> Option<Layout> {
    let name = mpi::environment::processor_name().unwrap_or_default();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let mut mine = [0u8; REPORT];
    let len = name.len().min(NAME);
    mine[..len].copy_from_slice(&name.as_bytes()[..len]);
    mine[NAME..].copy_from_slice(&(cores as u64).to_le_bytes());
    let root = world.process_at_rank(0);
    if world.rank() != 0 {
        root.gather_into(&mine[..]);
        return None;
    }
    let mut all = vec![0u8; REPORT * world.size() as usize];
    root.gather_into_root(&mine[..], &mut all[..]);
    Some(parse(&all))
}

/// The workers' layout from the reports of all ranks, rank 0's first.
fn parse(all: &[u8]) -> Layout {
    let reports: Vec<(String, usize)> = all
        .chunks_exact(REPORT)
        .skip(1)
        .map(|report| {
            let name = &report[..NAME];
            let end = name.iter().position(|&b| b == 0).unwrap_or(NAME);
            let mut cores = [0u8; 8];
            cores.copy_from_slice(&report[NAME..]);
            (
                String::from_utf8_lossy(&name[..end]).into_owned(),
                u64::from_le_bytes(cores) as usize,
            )
        })
        .collect();
    Layout::from_workers(reports.iter().map(|(name, cores)| (name.as_str(), *cores)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(name: &str, cores: u64) -> Vec<u8> {
        let mut r = vec![0u8; REPORT];
        r[..name.len()].copy_from_slice(name.as_bytes());
        r[NAME..].copy_from_slice(&cores.to_le_bytes());
        r
    }

    #[test]
    fn ranks_naming_one_node_share_it() {
        let all: Vec<u8> = [("n0", 8), ("n0", 8), ("n1", 4), ("n0", 8)]
            .iter()
            .flat_map(|&(name, cores)| report(name, cores))
            .collect();
        // Rank 0 (the master) is left out: workers on n0, n1, n0.
        let layout = parse(&all);
        assert_eq!(layout.nodes(), 2);
        assert_eq!(layout.cores(), 12);
        assert_eq!(
            layout,
            Layout::from_workers([("n0", 8), ("n1", 4), ("n0", 8)])
        );
    }
}
