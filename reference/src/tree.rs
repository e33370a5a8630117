//! The entry tree: index by id, parents, children, labels and the leaf (000 "Tree semantics"; 002 "Tree Structure"; pi-mono §4).
//!
//! Invariant: no walk follows the input's depth with recursion, and no walk can
//! loop. A parent chain that returns to an entry it has passed stops there, so a
//! cycle `X→Y→X` gives the path `[X, Y]` (what omp 18.2.3 does; pi-mono and omp
//! 13.19.0 hang). [`Tree::tree`] lists every id exactly once: a cycle with no root
//! is cut where the walk from its first entry in file order closes it.
//!
//! Duplicate ids: the later entry wins for lookups (as `Map.set` does), and keeps
//! the first one's position in listings.

use smallvec::SmallVec;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use crate::model::{Entry, EntryKind};

/// An index over a session's entries.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    entries: Vec<Entry>,
    by_id: HashMap<Box<str>, Node>,
    /// For each entry, the index its `parentId` names now (what `by_id` says;
    /// [`NONE`] for none), so that walks look nothing up.
    parents: Vec<Node>,
    /// Parent ids that name no entry (yet): an entry that takes one changes the
    /// parent of the entries that name it.
    dangling: HashSet<String>,
    /// Whether some id was indexed twice.
    repeated_ids: bool,
    /// How many entries are not tree nodes (no id, or a second header line).
    unindexed: usize,
    labels: HashMap<String, Label>,
    label_seq: u64,
    leaf: Option<String>,
}

/// A label currently set on an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    /// The label text, verbatim (a non-string value as its JSON text).
    pub text: String,
    /// The label value as written (JSON).
    pub value: String,
    /// The timestamp of the label entry that set it.
    pub timestamp: Option<String>,
    seq: u64,
}

/// One node of [`Tree::tree`], flat: the entry, its label, and its children.
/// Everything is borrowed from the tree, so listing a large session copies no text,
/// and building the list reads no entry but siblings' timestamps (see [`Tree::tree`]).
#[derive(Debug, Clone)]
pub struct TreeNode<'a> {
    /// The entry (the last one written, when an id is repeated).
    pub entry: &'a Entry,
    /// The current label of the entry.
    pub label: Option<&'a Label>,
    /// The child entries, sorted by timestamp (stable; unparseable timestamps
    /// first). Held inline when there is at most one, as for nearly every node of a
    /// session.
    pub children: SmallVec<[&'a Entry; 1]>,
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
    pub fn entry_type(&self) -> &'a str {
        self.entry.kind.type_name()
    }
}

/// An operation named an entry that does not exist (`Entry <id> not found`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotFound(pub String);

impl std::fmt::Display for NotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Entry {} not found", self.0)
    }
}

impl std::error::Error for NotFound {}

impl Tree {
    /// Indexes loaded entries; the leaf is the last entry (in file order) that has an id.
    pub fn new(entries: Vec<Entry>) -> Tree {
        let mut tree = Tree {
            by_id: HashMap::with_capacity(entries.len()),
            entries,
            ..Tree::default()
        };
        for index in 0..tree.entries.len() {
            tree.index(index);
        }
        tree.resolve_parents();
        tree.leaf = tree
            .entries
            .iter()
            .rev()
            .filter(|e| e.kind != EntryKind::ExtraHeader)
            .find_map(|e| e.id.clone());
        tree
    }

    /// Adds an entry at the end and makes it the leaf (when it has an id).
    pub fn push(&mut self, entry: Entry) {
        // A repeated id, or one that entries already name, moves other entries' parents.
        let moves_parents = indexed_id(&entry)
            .is_some_and(|id| self.by_id.contains_key(id) || self.dangling.contains(id));
        self.entries.push(entry);
        let index = self.entries.len() - 1;
        self.index(index);
        if moves_parents {
            self.resolve_parents();
        } else {
            let parent = self.resolve_parent(index);
            self.parents.push(parent.map_or(NONE, node));
            if let (None, Some(id)) = (parent, &self.entries[index].parent_id) {
                self.dangling.insert(id.clone());
            }
        }
        if let Some(id) = self.entries[index].id.as_ref() {
            if self.entries[index].kind != EntryKind::ExtraHeader {
                self.leaf = Some(id.clone());
            }
        }
    }

    /// Looks up every entry's parent again.
    fn resolve_parents(&mut self) {
        self.parents = (0..self.entries.len())
            .map(|i| self.resolve_parent(i).map_or(NONE, node))
            .collect();
        self.dangling = self
            .entries
            .iter()
            .zip(&self.parents)
            .filter(|(_, &parent)| parent == NONE)
            .filter_map(|(entry, _)| entry.parent_id.clone())
            .collect();
    }

    fn resolve_parent(&self, index: usize) -> Option<usize> {
        self.entries[index]
            .parent_id
            .as_deref()
            .and_then(|p| self.index_of(p))
    }

    /// Indexes the entry at `index`: its id and the label it sets.
    fn index(&mut self, index: usize) {
        let entry = &self.entries[index];
        if let EntryKind::Label {
            target_id: Some(target),
            label,
        } = &entry.kind
        {
            match label {
                Some(text) => {
                    self.label_seq += 1;
                    let value = entry
                        .object()
                        .get("label")
                        .map_or_else(|| "null".to_owned(), |v| v.get().to_owned());
                    let label = Label {
                        text: text.clone(),
                        value,
                        timestamp: entry.timestamp.clone(),
                        seq: self.label_seq,
                    };
                    self.labels.insert(target.clone(), label);
                }
                None => {
                    self.labels.remove(target);
                }
            }
        }
        if let Some(id) = indexed_id(entry) {
            let earlier = self.by_id.insert(id.into(), node(index));
            self.repeated_ids |= earlier.is_some();
        } else {
            self.unindexed += 1;
        }
    }

    /// All entries in file and append order, duplicates included.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Gives the entries back.
    pub fn into_entries(self) -> Vec<Entry> {
        self.entries
    }

    /// The entry with `id` (the last one when ids repeat).
    pub fn get(&self, id: &str) -> Option<&Entry> {
        self.index_of(id).map(|i| &self.entries[i])
    }

    /// Index of the entry with `id` in [`Tree::entries`].
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).map(|&i| i as usize)
    }

    /// Whether `id` names an entry.
    pub fn contains(&self, id: &str) -> bool {
        self.by_id.contains_key(id)
    }

    /// The current leaf id (`None` after [`Tree::reset_leaf`] or for an empty session).
    pub fn leaf(&self) -> Option<&str> {
        self.leaf.as_deref()
    }

    /// Moves the leaf to `id`; entries are not touched.
    pub fn branch(&mut self, id: &str) -> Result<(), NotFound> {
        if !self.contains(id) {
            return Err(NotFound(id.to_owned()));
        }
        self.leaf = Some(id.to_owned());
        Ok(())
    }

    /// Sets the leaf to none: the next append is a new root.
    pub fn reset_leaf(&mut self) {
        self.leaf = None;
    }

    /// The current label of `id`.
    pub fn label(&self, id: &str) -> Option<&str> {
        self.labels.get(id).map(|l| l.text.as_str())
    }

    /// The current label of `id` as JSON text (a label need not be a string).
    pub fn label_json(&self, id: &str) -> Option<&str> {
        self.labels.get(id).map(|l| l.value.as_str())
    }

    /// Labels in the order they were (last) set: `(target, label)`.
    pub fn labels_in_order(&self) -> Vec<(&str, &Label)> {
        let mut labels: Vec<_> = self.labels.iter().map(|(k, v)| (k.as_str(), v)).collect();
        labels.sort_by_key(|(_, l)| l.seq);
        labels
    }

    /// Entries whose `parentId` is `parent` (`None`: the `parentId:null` roots), in first-appearance order.
    pub fn children(&self, parent: Option<&str>) -> Vec<&Entry> {
        let mut seen = HashSet::new();
        self.entries
            .iter()
            .filter_map(|e| {
                let id = e.id.as_deref()?;
                seen.insert(id)
                    .then(|| &self.entries[self.by_id[id] as usize])
            })
            .filter(|e| match parent {
                Some(p) => e.parent_id.as_deref() == Some(p),
                None => is_null_parent(e),
            })
            .collect()
    }

    /// The index of the entry that entry `index`'s `parentId` names.
    fn parent_of(&self, index: usize) -> Option<usize> {
        match self.parents[index] {
            NONE => None,
            parent => Some(parent as usize),
        }
    }

    /// Indices of the root→`start` path; stops at a missing parent or a repeated entry.
    pub fn path_from_index(&self, start: usize) -> Vec<usize> {
        let mut path = vec![start];
        let mut seen = vec![false; self.entries.len()];
        seen[start] = true;
        let mut current = start;
        while let Some(parent) = self.parent_of(current) {
            if std::mem::replace(&mut seen[parent], true) {
                break;
            }
            path.push(parent);
            current = parent;
        }
        path.reverse();
        path
    }

    /// The root→`from` path (`from` defaults to the leaf); empty for an unknown id or no leaf.
    pub fn branch_path(&self, from: Option<&str>) -> Vec<&Entry> {
        let Some(start) = from.or(self.leaf()).and_then(|id| self.index_of(id)) else {
            return Vec::new();
        };
        self.path_from_index(start)
            .into_iter()
            .map(|i| &self.entries[i])
            .collect()
    }

    /// The whole tree as a flat pre-order list of nodes; every id exactly once.
    ///
    /// The walk works on node numbers and reads no entry but the timestamps of
    /// siblings, so its cost follows the node count and not the entries' size in
    /// memory (at 100 MB, 16 MB of `Entry` that no cache holds).
    pub fn tree(&self) -> Vec<TreeNode<'_>> {
        let nodes = self.nodes();
        let entry = |n: Node| &self.entries[nodes.entry(n)];
        let labels = self.labels_by_node(&nodes);
        let (roots, mut children) = Children::group(&self.node_parents(&nodes));
        for n in 0..node(nodes.len()) {
            // By timestamp; an unparseable one sorts first (see `Entry::time_ms`).
            children.of_mut(n).sort_by_key(|&c| entry(c).time_ms);
        }
        let mut out = Vec::with_capacity(nodes.len());
        let mut stack: Vec<Node> = roots.into_iter().rev().collect();
        while let Some(n) = stack.pop() {
            let below = children.of(n);
            out.push(TreeNode {
                entry: entry(n),
                label: labels.get(&n).copied(),
                children: match below {
                    // Nearly every node: built in place, not through `collect`.
                    &[only] => SmallVec::from_buf([entry(only)]),
                    _ => below.iter().map(|&c| entry(c)).collect(),
                },
            });
            stack.extend(below.iter().rev());
        }
        out
    }

    /// Whether every entry is a tree node, once: no entry without an id, no id twice.
    fn every_entry_once(&self) -> bool {
        !self.repeated_ids && self.unindexed == 0
    }

    /// The tree's nodes: for each distinct id, the entry that wins (the last), in
    /// first-appearance order.
    fn nodes(&self) -> Nodes {
        if self.every_entry_once() {
            return Nodes::EveryEntry(self.entries.len());
        }
        let listed: Vec<usize> = if self.repeated_ids {
            let mut seen = vec![false; self.entries.len()];
            self.entries
                .iter()
                .filter(|e| e.kind != EntryKind::ExtraHeader)
                .filter_map(|e| e.id.as_deref())
                .filter_map(|id| self.index_of(id))
                .filter(|&winner| !std::mem::replace(&mut seen[winner], true))
                .collect()
        } else {
            (0..self.entries.len())
                .filter(|&i| indexed_id(&self.entries[i]).is_some())
                .collect()
        };
        let mut node_of = vec![NONE; self.entries.len()];
        for (n, &i) in listed.iter().enumerate() {
            node_of[i] = node(n);
        }
        Nodes::Listed { listed, node_of }
    }

    /// The current label of each labelled node (labels of ids with no entry are not nodes).
    fn labels_by_node(&self, nodes: &Nodes) -> HashMap<Node, &Label> {
        self.labels
            .iter()
            .filter_map(|(target, label)| {
                let index = self.index_of(target)?;
                Some((nodes.node_of(index), label))
            })
            .collect()
    }

    /// Each node's parent node ([`NONE`] for a root), every chain of parents ending
    /// at a root: an entry that names itself is a root, and a cycle is cut.
    ///
    /// When every entry is a node and names an entry before it (as appending
    /// makes them), that is the tree's own `parents`, borrowed: no chain can close.
    fn node_parents(&self, nodes: &Nodes) -> Cow<'_, [Node]> {
        if matches!(nodes, Nodes::EveryEntry(_)) && parents_come_first(&self.parents) {
            Cow::Borrowed(&self.parents)
        } else {
            Cow::Owned(self.cut_node_parents(nodes))
        }
    }

    /// [`Tree::node_parents`] worked out for any tree: parents mapped to node
    /// numbers, then cycles cut.
    fn cut_node_parents(&self, nodes: &Nodes) -> Vec<Node> {
        let parents = (0..node(nodes.len()))
            .map(|n| {
                let parent = self
                    .parent_of(nodes.entry(n))
                    .map_or(NONE, |i| nodes.node_of(i));
                if parent == n {
                    NONE
                } else {
                    parent
                }
            })
            .collect();
        cut_cycles(parents)
    }
}

/// Whether every parent comes before its child, so that no chain of parents can
/// return to where it started.
fn parents_come_first(parent: &[Node]) -> bool {
    parent
        .iter()
        .enumerate()
        .all(|(n, &p)| p == NONE || (p as usize) < n)
}

/// An entry's index, or a node's number in [`Tree::tree`], in four bytes: the tree
/// keeps a few per entry, and a session of 2^32 entries would need hundreds of
/// gigabytes of memory to load.
type Node = u32;

/// No entry or node: a root's parent, or an entry that is not a node.
const NONE: Node = Node::MAX;

/// The four-byte form of index `n`, which is less than the entry count.
fn node(n: usize) -> Node {
    Node::try_from(n)
        .ok()
        .filter(|&n| n != NONE)
        .expect("fewer than 2^32 - 1 entries")
}

/// Which entry each node of [`Tree::tree`] is, and which node each entry is.
enum Nodes {
    /// Every entry is a node once (the common case): node `n` is entry `n`, and
    /// nothing needs to be stored.
    EveryEntry(usize),
    /// Node `n` is entry `listed[n]`; entry `i` is node `node_of[i]` ([`NONE`] if none).
    Listed {
        listed: Vec<usize>,
        node_of: Vec<Node>,
    },
}

impl Nodes {
    fn len(&self) -> usize {
        match self {
            Nodes::EveryEntry(len) => *len,
            Nodes::Listed { listed, .. } => listed.len(),
        }
    }

    fn entry(&self, n: Node) -> usize {
        match self {
            Nodes::EveryEntry(_) => n as usize,
            Nodes::Listed { listed, .. } => listed[n as usize],
        }
    }

    fn node_of(&self, entry: usize) -> Node {
        match self {
            Nodes::EveryEntry(_) => node(entry),
            Nodes::Listed { node_of, .. } => node_of[entry],
        }
    }
}

/// The id under which an entry is found (a second header line is not).
fn indexed_id(entry: &Entry) -> Option<&str> {
    entry
        .id
        .as_deref()
        .filter(|_| entry.kind != EntryKind::ExtraHeader)
}

fn id_of(entry: &Entry) -> &str {
    entry.id.as_deref().unwrap_or_default()
}

/// Whether the entry's `parentId` is exactly `null` (what `getChildren(null)` matches).
fn is_null_parent(entry: &Entry) -> bool {
    entry.parent_id.is_none()
        && entry
            .object()
            .get("parentId")
            .is_some_and(|v| v.get() == "null")
}

/// Every node's children in one list, grouped by parent (no list per node).
struct Children {
    /// `list[start[n]..start[n + 1]]` are the children of node `n`, in node order.
    start: Vec<u32>,
    list: Vec<Node>,
}

impl Children {
    /// The roots, and the children of each node, both in node order.
    fn group(parent: &[Node]) -> (Vec<Node>, Children) {
        // Count each node's children, add the counts up so that `start[p]` is where
        // p's children end, then place them from the last node back, moving
        // `start[p]` down to where they begin.
        let mut start = vec![0u32; parent.len() + 1];
        for &p in parent.iter().filter(|&&p| p != NONE) {
            start[p as usize] += 1;
        }
        let mut sum = 0;
        for count in &mut start {
            sum += *count;
            *count = sum;
        }
        let mut list = vec![NONE; sum as usize];
        let mut roots = Vec::new();
        for (n, &p) in parent.iter().enumerate().rev() {
            if p == NONE {
                roots.push(node(n));
            } else {
                start[p as usize] -= 1;
                list[start[p as usize] as usize] = node(n);
            }
        }
        roots.reverse();
        (roots, Children { start, list })
    }

    fn range(&self, n: Node) -> std::ops::Range<usize> {
        self.start[n as usize] as usize..self.start[n as usize + 1] as usize
    }

    fn of(&self, n: Node) -> &[Node] {
        &self.list[self.range(n)]
    }

    fn of_mut(&mut self, n: Node) -> &mut [Node] {
        let range = self.range(n);
        &mut self.list[range]
    }
}

/// Makes every node reach a root: where a parent chain closes on itself, the node
/// at which it closes becomes a root. Iterative; each node is resolved once.
fn cut_cycles(mut parent: Vec<Node>) -> Vec<Node> {
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
                    parent[current] = NONE;
                    break;
                }
                State::Unvisited => {
                    state[current] = State::OnPath;
                    path.push(current);
                    match parent[current] {
                        NONE => break,
                        p => current = p as usize,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, parent: Option<&str>, ts: &str) -> Entry {
        let text = serde_json::json!({"type":"message","id":id,"parentId":parent,"timestamp":ts,"message":{"role":"user"}}).to_string();
        Entry::from_text(text, 0)
    }

    fn label(id: &str, target: &str, text: Option<&str>) -> Entry {
        let text = serde_json::json!({"type":"label","id":id,"parentId":null,"timestamp":"t","targetId":target,"label":text}).to_string();
        Entry::from_text(text, 0)
    }

    /// A tree of `entries`, then the label entries appended one by one.
    fn labelled(entries: Vec<Entry>, labels: impl IntoIterator<Item = Entry>) -> Tree {
        let mut tree = Tree::new(entries);
        for l in labels {
            tree.push(l);
        }
        tree
    }

    fn ids<'a>(nodes: &[TreeNode<'a>]) -> Vec<&'a str> {
        nodes.iter().map(TreeNode::id).collect()
    }

    #[test]
    fn children_sort_by_time_and_roots_keep_file_order() {
        let tree = Tree::new(vec![
            entry("r2", None, "2026-01-01T00:00:00Z"),
            entry("r1", None, "2020-01-01T00:00:00Z"),
            entry("x", Some("r2"), "garbage"),
            entry("y", Some("r2"), "2025-01-01T00:00:00Z"),
            entry("z", Some("r2"), "2024-01-01T00:00:00Z"),
            entry("o", Some("missing"), "2024-01-01T00:00:00Z"),
            entry("s", Some("s"), "2024-01-01T00:00:00Z"),
        ]);
        let nodes = tree.tree();
        assert_eq!(ids(&nodes), ["r2", "x", "z", "y", "r1", "o", "s"]);
        assert!(nodes[0].child_ids().eq(["x", "z", "y"]));
        let roots: Vec<_> = tree
            .children(None)
            .iter()
            .map(|e| e.id.clone().unwrap())
            .collect();
        assert_eq!(roots, ["r2", "r1"]);
        assert_eq!(tree.leaf(), Some("s"));
    }

    #[test]
    fn cycles_terminate_and_list_every_id_once() {
        let tree = Tree::new(vec![
            entry("x", Some("y"), "t"),
            entry("y", Some("x"), "t"),
            entry("z", Some("y"), "t"),
        ]);
        let path: Vec<_> = tree
            .branch_path(Some("y"))
            .iter()
            .map(|e| e.id.clone().unwrap())
            .collect();
        assert_eq!(path, ["x", "y"]);
        let nodes = tree.tree();
        let mut listed = ids(&nodes);
        listed.sort_unstable();
        assert_eq!(listed, ["x", "y", "z"]);
    }

    #[test]
    fn million_entry_chain_needs_no_recursion() {
        let mut entries = Vec::with_capacity(1_000_000);
        entries.push(entry("e0", None, "t"));
        for i in 1..1_000_000 {
            entries.push(entry(&format!("e{i}"), Some(&format!("e{}", i - 1)), "t"));
        }
        let tree = Tree::new(entries);
        assert_eq!(tree.branch_path(None).len(), 1_000_000);
        assert_eq!(tree.tree().len(), 1_000_000);
    }

    #[test]
    fn parents_written_first_are_taken_as_they_are() {
        // (entries, whether every parent comes first): the shortcut must agree with
        // the general path wherever it is taken, and not be taken elsewhere.
        let cases = [
            (
                vec![
                    entry("a", None, "t"),
                    entry("b", Some("a"), "t"),
                    entry("c", Some("a"), "t"),
                    entry("d", Some("c"), "t"),
                    entry("e", Some("gone"), "t"),
                ],
                true,
            ),
            (
                vec![entry("x", Some("p"), "t"), entry("p", None, "t")],
                false,
            ),
            (
                vec![entry("s", Some("s"), "t"), entry("u", Some("s"), "t")],
                false,
            ),
            (
                vec![entry("x", Some("y"), "t"), entry("y", Some("x"), "t")],
                false,
            ),
        ];
        for (entries, first) in cases {
            let tree = Tree::new(entries);
            let nodes = tree.nodes();
            let parents = tree.node_parents(&nodes);
            assert_eq!(matches!(parents, Cow::Borrowed(_)), first);
            assert_eq!(*parents, tree.cut_node_parents(&nodes));
        }
    }

    #[test]
    fn nodes_carry_their_current_label() {
        let tree = labelled(
            vec![
                entry("a", None, "t"),
                entry("b", Some("a"), "t"),
                entry("b", Some("a"), "t2"),
            ],
            [
                label("l1", "b", Some("B")),
                label("l2", "a", Some("A")),
                label("l3", "a", None),
                label("l4", "ghost", Some("G")),
            ],
        );
        let labels: Vec<_> = tree
            .tree()
            .iter()
            .filter_map(|n| Some((n.id(), n.label?.text.as_str())))
            .collect();
        assert_eq!(labels, [("b", "B")]);
    }

    #[test]
    fn labels_set_clear_and_order() {
        let tree = labelled(
            vec![entry("a", None, "t"), entry("b", Some("a"), "t")],
            [
                label("l1", "b", Some("B1")),
                label("l2", "a", Some("A1")),
                label("l3", "b", None),
                label("l4", "b", Some("B2")),
                label("l5", "ghost", Some("boo")),
            ],
        );
        assert_eq!(tree.label("b"), Some("B2"));
        assert_eq!(tree.label("ghost"), Some("boo"));
        let order: Vec<_> = tree.labels_in_order().iter().map(|(t, _)| *t).collect();
        assert_eq!(order, ["a", "b", "ghost"]);
    }

    #[test]
    fn parents_follow_entries_pushed_later() {
        let ids = |tree: &Tree, from: &str| -> Vec<String> {
            let path = tree.branch_path(Some(from));
            path.iter().map(|e| e.id.clone().unwrap()).collect()
        };
        let mut tree = Tree::new(vec![entry("x", Some("p"), "t")]);
        assert_eq!(ids(&tree, "x"), ["x"]);
        tree.push(entry("p", None, "t"));
        assert_eq!(ids(&tree, "x"), ["p", "x"]);
        tree.push(entry("q", None, "t"));
        tree.push(entry("p", Some("q"), "t"));
        assert_eq!(ids(&tree, "x"), ["q", "p", "x"]);
    }

    #[test]
    fn duplicate_ids_later_wins() {
        let mut tree = Tree::new(vec![
            entry("r", None, "t"),
            entry("d", Some("r"), "t1"),
            entry("d", Some("r"), "t2"),
        ]);
        assert_eq!(tree.get("d").unwrap().timestamp.as_deref(), Some("t2"));
        assert_eq!(tree.tree().len(), 2);
        assert_eq!(tree.branch(""), Err(NotFound(String::new())));
    }
}
