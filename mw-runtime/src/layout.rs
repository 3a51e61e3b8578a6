//! Where the workers run: the nodes, their cores, and the node of each worker. A transport
//! learns it (threads of one process, or the ranks' hosts under MPI), the tuner's model of the
//! machine reads it.

use std::collections::HashMap;

/// Where the workers run: the cores of each node, and the node of each worker of the pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Cores per node.
    pub(crate) cores: Vec<usize>,
    /// The node of worker `i`; empty when every worker, however many, shares node 0.
    pub(crate) node_of: Vec<usize>,
}

impl Layout {
    /// Every worker on one machine of `cores` cores (threads of one process).
    pub fn one_node(cores: usize) -> Layout {
        Layout {
            cores: vec![cores.max(1)],
            node_of: Vec::new(),
        }
    }

    /// From what each worker of the pool says of its node, in worker order: the node's name
    /// and the cores it sees. Workers naming the same node share its cores (the most any of
    /// them saw).
    pub fn from_workers<'a>(workers: impl IntoIterator<Item = (&'a str, usize)>) -> Layout {
        let mut index: HashMap<&str, usize> = HashMap::new();
        let mut cores = Vec::new();
        let mut node_of = Vec::new();
        for (name, seen) in workers {
            let node = *index.entry(name).or_insert_with(|| {
                cores.push(0);
                cores.len() - 1
            });
            cores[node] = cores[node].max(seen.max(1));
            node_of.push(node);
        }
        if cores.is_empty() {
            cores.push(1);
        }
        Layout { cores, node_of }
    }

    /// Nodes the workers run on.
    pub fn nodes(&self) -> usize {
        self.cores.len()
    }

    /// Cores of all those nodes.
    pub fn cores(&self) -> usize {
        self.cores.iter().sum()
    }

    /// Per node, its cores and how many of the first `n` workers run there.
    pub(crate) fn occupancy(&self, n: usize) -> Vec<(f64, f64)> {
        let mut counts = vec![0usize; self.cores.len()];
        if self.node_of.is_empty() {
            counts[0] = n;
        } else {
            for &node in self.node_of.iter().take(n) {
                counts[node] += 1;
            }
        }
        self.cores
            .iter()
            .zip(counts)
            .filter(|&(_, k)| k > 0)
            .map(|(&c, k)| (c as f64, k as f64))
            .collect()
    }

    /// The most workers a model can place: any number on one node, else the pool.
    pub(crate) fn capacity(&self) -> usize {
        if self.node_of.is_empty() {
            usize::MAX
        } else {
            self.node_of.len()
        }
    }
}
