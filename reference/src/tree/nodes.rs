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
    /// Clauses: tree.8.
    pub fn tree(&self) -> Vec<TreeNode<'_>> {
        let nodes = self.nodes();
        let mut roots = Vec::new();
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); self.entries.len()];
        for &i in &nodes.order {
            match nodes.parent[i] {
                Some(p) => children[p].push(i),
                None => roots.push(i),
            }
        }
        for list in &mut children {
            // By timestamp; an unparseable one sorts first (see `Entry::time_ms`).
            list.sort_by_key(|&c| self.entries[c].time_ms);
        }
        let labels: HashMap<usize, &Label> = self
            .labels
            .iter()
            .filter_map(|(target, label)| Some((self.index_of(target)?, label)))
            .collect();
        let mut out = Vec::with_capacity(nodes.order.len());
        let mut stack: Vec<usize> = roots.into_iter().rev().collect();
        while let Some(i) = stack.pop() {
            out.push(TreeNode {
                entry: &self.entries[i],
                label: labels.get(&i).copied(),
                children: children[i].iter().map(|&c| &self.entries[c]).collect(),
            });
            stack.extend(children[i].iter().rev());
        }
        out
    }

    /// The entries whose parent chain comes back to them: each cycle once, named by its
    /// entry whose id comes first in the file (an entry that names itself is one), in the
    /// order of the ids where [`Tree::tree`] cuts them. [`Tree::tree`] and
    /// [`Tree::branch_path`] stop where such a chain closes.
    pub fn cycles(&self) -> Vec<&Entry> {
        self.nodes()
            .cycles
            .into_iter()
            .map(|i| &self.entries[i])
            .collect()
    }

    /// `getTree`'s nodes, all named by their entry's index: the entries that win their
    /// ids in first-appearance order of the ids, and each one's parent with the cycles cut
    /// in one pass. From each node in order, the parent chain is followed until it reaches
    /// a node already resolved, a root, or a node of this very walk: there the chain
    /// closes, and that node becomes a root. Each node is walked once.
    /// Clauses: tree.8.
    fn nodes(&self) -> Nodes {
        let mut seen = HashSet::new();
        let order: Vec<usize> = self
            .entries
            .iter()
            .filter_map(indexed_id)
            .filter(|id| seen.insert(*id))
            .filter_map(|id| self.index_of(id))
            .collect();
        let mut rank = vec![usize::MAX; self.entries.len()];
        for (r, &i) in order.iter().enumerate() {
            rank[i] = r;
        }
        let mut parent: Vec<Option<usize>> =
            (0..self.entries.len()).map(|i| self.parent_of(i)).collect();
        let mut cut = Vec::new();
        let mut state = vec![State::Unvisited; self.entries.len()];
        let mut walk: Vec<usize> = Vec::new();
        for &start in &order {
            let mut current = start;
            loop {
                match state[current] {
                    State::Done => break,
                    State::OnWalk(at) => {
                        // walk[at..] is the cycle; it is named by its first id.
                        let name = walk[at..].iter().copied().min_by_key(|&n| rank[n]);
                        cut.push((rank[current], name.unwrap_or(current)));
                        parent[current] = None;
                        break;
                    }
                    State::Unvisited => {
                        state[current] = State::OnWalk(walk.len());
                        walk.push(current);
                        match parent[current] {
                            None => break,
                            Some(p) => current = p,
                        }
                    }
                }
            }
            for n in walk.drain(..) {
                state[n] = State::Done;
            }
        }
        cut.sort_unstable();
        Nodes {
            order,
            parent,
            cycles: cut.into_iter().map(|(_, name)| name).collect(),
        }
    }
}

/// [`Tree::nodes`]: entry indices throughout.
struct Nodes {
    /// The entries that win their ids, in first-appearance order of the ids.
    order: Vec<usize>,
    /// Each entry's parent entry, cycles cut (`None`: a root).
    parent: Vec<Option<usize>>,
    /// The entry naming each cycle cut, in the order of the entries cut.
    cycles: Vec<usize>,
}

/// Where the cycle cut has got to with an entry.
#[derive(Clone, Copy, PartialEq)]
enum State {
    Unvisited,
    /// On the current walk, at this position.
    OnWalk(usize),
    Done,
}
