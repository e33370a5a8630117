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

use std::collections::{HashMap, HashSet};

use crate::model::{Entry, EntryKind};

mod nodes;
pub use nodes::TreeNode;

/// An index over a session's entries.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    /// Every entry in file and append order, duplicates included.
    entries: Vec<Entry>,
    /// Id → index in `entries`; a repeated id names the later entry (`Map.set`).
    by_id: HashMap<Box<str>, usize>,
    /// Target id → the label set on it now.
    labels: HashMap<String, Label>,
    /// How many labels were set, to order them by when they were (last) set.
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
    /// Clauses: tree.1, tree.2, tree.15.
    pub fn new(entries: Vec<Entry>) -> Tree {
        let mut tree = Tree {
            by_id: HashMap::with_capacity(entries.len()),
            entries,
            ..Tree::default()
        };
        for index in 0..tree.entries.len() {
            tree.index(index);
        }
        tree
    }

    /// Adds an entry at the end and makes it the leaf (when it has an id).
    /// Clauses: tree.1.
    pub fn push(&mut self, entry: Entry) {
        self.entries.push(entry);
        self.index(self.entries.len() - 1);
    }

    /// Indexes the entry at `index`: its id (which becomes the leaf; a `leaf` entry's
    /// target does instead, 003 "In-memory index") and the label it sets.
    fn index(&mut self, index: usize) {
        let entry = &self.entries[index];
        let label = label_change(entry);
        let moves_leaf = entry.kind == EntryKind::Leaf;
        let target = entry.leaf_target();
        if let Some(id) = indexed_id(entry) {
            self.by_id.insert(id.into(), index);
            self.leaf = Some(id.to_owned());
        }
        if moves_leaf {
            self.leaf = target;
        }
        if let Some((target, label)) = label {
            match label {
                Some(label) => {
                    self.label_seq += 1;
                    self.labels.insert(
                        target,
                        Label {
                            seq: self.label_seq,
                            ..label
                        },
                    );
                }
                None => {
                    self.labels.remove(&target);
                }
            }
        }
    }

    /// All entries in file and append order, duplicates included.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entry with `id` (the last one when ids repeat).
    pub fn get(&self, id: &str) -> Option<&Entry> {
        self.index_of(id).map(|i| &self.entries[i])
    }

    /// Index of the entry with `id` in [`Tree::entries`].
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
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
    /// Clauses: tree.4.
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
    /// Clauses: tree.11.
    pub fn label(&self, id: &str) -> Option<&str> {
        self.labels.get(id).map(|l| l.text.as_str())
    }

    /// Labels in the order they were (last) set: `(target, label)`.
    /// Clauses: tree.11.
    pub fn labels_in_order(&self) -> Vec<(&str, &Label)> {
        let mut labels: Vec<_> = self.labels.iter().map(|(k, v)| (k.as_str(), v)).collect();
        labels.sort_by_key(|(_, l)| l.seq);
        labels
    }

    /// Entries whose `parentId` is `parent` (`None`: the `parentId:null` roots), in first-appearance order.
    /// Clauses: tree.9.
    pub fn children(&self, parent: Option<&str>) -> Vec<&Entry> {
        let mut seen = HashSet::new();
        self.entries
            .iter()
            .filter_map(|e| {
                let id = e.id.as_deref()?;
                seen.insert(id).then(|| self.get(id)).flatten()
            })
            .filter(|e| parent_is(e, parent))
            .collect()
    }

    /// The index of the entry that entry `index`'s `parentId` names.
    fn parent_of(&self, index: usize) -> Option<usize> {
        self.entries[index]
            .parent_id
            .as_deref()
            .and_then(|p| self.index_of(p))
    }

    /// Indices of the root→`start` path; stops at a missing parent or a repeated entry.
    /// Clauses: tree.7.
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
    /// Clauses: tree.7.
    pub fn branch_path(&self, from: Option<&str>) -> Vec<&Entry> {
        let Some(start) = from.or(self.leaf()).and_then(|id| self.index_of(id)) else {
            return Vec::new();
        };
        self.path_from_index(start)
            .into_iter()
            .map(|i| &self.entries[i])
            .collect()
    }
}

/// What a `label` entry does: `(target, Some(label))` sets the target's label,
/// `(target, None)` clears it (a falsy label). `None` for any other entry.
fn label_change(entry: &Entry) -> Option<(String, Option<Label>)> {
    let (target, label) = entry.label_change()?;
    let label = label.as_ref().map(|text| Label {
        text: text.clone(),
        value: entry
            .object()
            .get("label")
            .map_or_else(|| "null".to_owned(), |v| v.get().to_owned()),
        timestamp: entry.timestamp(),
        seq: 0,
    });
    Some((target, label))
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

/// Whether the entry's `parentId` is written as exactly `parent` (`None`: `null`), as
/// JavaScript's `===` compares it: an absent field matches neither, and the empty string,
/// which the tree treats as no parent, is still matched by `getChildren("")`.
fn parent_is(entry: &Entry, parent: Option<&str>) -> bool {
    let written = match parent {
        Some("") => r#""""#,
        Some(p) => return entry.parent_id.as_deref() == Some(p),
        None => "null",
    };
    // `null` and `""` are both no parent to the tree: compare the field's JSON text.
    entry.parent_id.is_none()
        && entry
            .object()
            .get("parentId")
            .is_some_and(|v| v.get() == written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, parent: Option<&str>, ts: &str) -> Entry {
        let text = serde_json::json!({"type":"message","id":id,"parentId":parent,"timestamp":ts,"message":{"role":"user"}}).to_string();
        Entry::from_text(text, 0, crate::model::Profile::Omp)
    }

    fn label(id: &str, target: &str, text: Option<&str>) -> Entry {
        let text = serde_json::json!({"type":"label","id":id,"parentId":null,"timestamp":"t","targetId":target,"label":text}).to_string();
        Entry::from_text(text, 0, crate::model::Profile::Omp)
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
        assert_eq!(tree.get("d").unwrap().timestamp().as_deref(), Some("t2"));
        assert_eq!(tree.tree().len(), 2);
        assert_eq!(tree.branch(""), Err(NotFound(String::new())));
    }

    #[test]
    fn each_cycle_is_named_once_by_its_first_entry() {
        type Case<'a> = (&'a [(&'a str, Option<&'a str>)], &'a [&'a str]);
        let t = "2024-01-01T00:00:00Z";
        let table: &[Case] = &[
            (&[("a", None), ("b", Some("a"))], &[]),
            (&[("s", Some("s"))], &["s"]),
            (&[("x", Some("y")), ("y", Some("x"))], &["x"]),
            // The walk from the tail enters the cycle at y; the cycle is still named by x.
            (
                &[("z", Some("y")), ("x", Some("y")), ("y", Some("x"))],
                &["x"],
            ),
            (
                &[("p", Some("q")), ("q", Some("p")), ("r", Some("r"))],
                &["p", "r"],
            ),
        ];
        for (entries, want) in table {
            let tree = Tree::new(entries.iter().map(|(id, p)| entry(id, *p, t)).collect());
            let got: Vec<_> = tree
                .cycles()
                .iter()
                .map(|e| e.id.clone().unwrap())
                .collect();
            assert_eq!(got, *want, "{entries:?}");
        }
    }
}
