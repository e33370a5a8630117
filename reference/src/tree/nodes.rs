//! `getTree`: the whole tree as a flat pre-order list of nodes, and the cycles it cuts
//! (000 "Tree semantics"; 002 "Tree Structure"; pi-mono §4 `getTree`).

use std::collections::{HashMap, HashSet};

use super::{id_of, indexed_id, Label, Tree};
use crate::model::Entry;

/// One node of [`Tree::tree`], flat: the entry, its label, and its children, all
/// borrowed from the tree.
#[derive(Debug, Clone)]
pub struct TreeNode<'a> {
    /// The entry (the last one written, when an id is repeated).
    pub entry: &'a Entry,
    /// The current label of the entry.
    pub label: Option<&'a Label>,
    /// The child entries, sorted by timestamp (stable; unparseable timestamps first).
    pub children: Vec<&'a Entry>,
}

impl<'a> TreeNode<'a> {
    /// The entry id.
    pub fn id(&self) -> &'a str {
        id_of(self.entry)
    }

    /// The children's ids, in order.
    pub fn child_ids(&self) -> impl ExactSizeIterator<Item = &'a str> + '_ {
        self.children.iter().map(|&c| id_of(c))
    }

    /// The entry's `parentId` as written (it may be missing from the session).
    pub fn parent_id(&self) -> Option<&'a str> {
        self.entry.parent_id.as_deref()
    }

    /// The entry's `type`.
    pub fn entry_type(&self) -> String {
        self.entry.type_name()
    }
}

impl Tree {
    /// The whole tree as a flat pre-order list of nodes; every id exactly once.
    ///
    /// Nodes are the distinct ids in first-appearance order, each standing for the
    /// entry that wins its id. Roots keep that order; children are sorted by time.
    pub fn tree(&self) -> Vec<TreeNode<'_>> {
        let (nodes, node_of, parents) = self.node_parents();
        // An entry that names itself is a root.
        let parents = parents
            .iter()
            .enumerate()
            .map(|(n, p)| p.filter(|&p| p != n))
            .collect();
        let parents = cut_cycles(parents);
        let mut roots = Vec::new();
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
        for (n, parent) in parents.iter().enumerate() {
            match parent {
                Some(p) => children[*p].push(n),
                None => roots.push(n),
            }
        }
        let entry = |n: usize| &self.entries[nodes[n]];
        for list in &mut children {
            // By timestamp; an unparseable one sorts first (see `Entry::time_ms`).
            list.sort_by_key(|&c| entry(c).time_ms);
        }
        let labels: HashMap<usize, &Label> = self
            .labels
            .iter()
            .filter_map(|(target, label)| Some((node_of[&self.index_of(target)?], label)))
            .collect();
        let mut out = Vec::with_capacity(nodes.len());
        let mut stack: Vec<usize> = roots.into_iter().rev().collect();
        while let Some(n) = stack.pop() {
            out.push(TreeNode {
                entry: entry(n),
                label: labels.get(&n).copied(),
                children: children[n].iter().map(|&c| entry(c)).collect(),
            });
            stack.extend(children[n].iter().rev());
        }
        out
    }

    /// The entries whose parent chain comes back to them: each cycle once, named by its
    /// entry that comes first in the file (an entry that names itself is one). [`Tree::tree`]
    /// and [`Tree::branch_path`] stop where such a chain closes.
    pub fn cycles(&self) -> Vec<&Entry> {
        let (nodes, _, parents) = self.node_parents();
        let cut = cut_cycles(parents.clone());
        let mut found = Vec::new();
        for (n, (before, after)) in parents.iter().zip(&cut).enumerate() {
            let Some(mut current) = before.filter(|_| after.is_none()) else {
                continue;
            };
            // The cut node closes the cycle n → … → n; name the cycle by its first node.
            let mut first = n;
            for _ in 0..nodes.len() {
                if current == n {
                    break;
                }
                first = first.min(current);
                let Some(next) = parents[current] else { break };
                current = next;
            }
            found.push(&self.entries[nodes[first]]);
        }
        found
    }

    /// The distinct ids as nodes ([`Tree::nodes`]), each entry index's node, and each
    /// node's parent node.
    fn node_parents(&self) -> (Vec<usize>, HashMap<usize, usize>, Vec<Option<usize>>) {
        let nodes = self.nodes();
        let node_of: HashMap<usize, usize> =
            nodes.iter().enumerate().map(|(n, &i)| (i, n)).collect();
        let parents = nodes
            .iter()
            .map(|&i| self.parent_of(i).map(|p| node_of[&p]))
            .collect();
        (nodes, node_of, parents)
    }

    /// For each distinct id, in first-appearance order, the index of the entry that wins it.
    fn nodes(&self) -> Vec<usize> {
        let mut seen = HashSet::new();
        self.entries
            .iter()
            .filter_map(indexed_id)
            .filter(|id| seen.insert(*id))
            .filter_map(|id| self.index_of(id))
            .collect()
    }
}

/// Makes every node reach a root: where a parent chain closes on itself, the node
/// at which it closes becomes a root. Iterative; each node is resolved once.
fn cut_cycles(mut parent: Vec<Option<usize>>) -> Vec<Option<usize>> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Unvisited,
        OnPath,
        Done,
    }
    let mut state = vec![State::Unvisited; parent.len()];
    let mut path = Vec::new();
    for start in 0..parent.len() {
        let mut current = start;
        loop {
            match state[current] {
                State::Done => break,
                State::OnPath => {
                    parent[current] = None;
                    break;
                }
                State::Unvisited => {
                    state[current] = State::OnPath;
                    path.push(current);
                    match parent[current] {
                        None => break,
                        Some(p) => current = p,
                    }
                }
            }
        }
        for n in path.drain(..) {
            state[n] = State::Done;
        }
    }
    parent
}
