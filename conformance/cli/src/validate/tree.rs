//! The tree checks of `validate`, asked of the reference's [`Tree`]: a label's target, a
//! compaction's kept entry among its ancestors (from one depth-first walk, [`Ancestry`]),
//! a branch summary's branch point.

use session_reference::model::Keys;
use session_reference::model::{Entry, EntryKind};
use session_reference::tree::Tree;

use super::findings::{Findings, Level};

/// The checks of one entry against the tree: a label's target, a compaction's kept
/// entry among its ancestors, a branch summary's branch point.
pub(super) fn tree_rules(
    tree: &Tree,
    ancestry: &Ancestry,
    index: usize,
    entry: &Entry,
    keys: &Keys,
    line: usize,
    findings: &mut Findings,
) {
    let id = entry.id.clone();
    if let Some((target, _)) = entry.label_change().filter(|(t, _)| !tree.contains(t)) {
        let pointer = format!("/{}", keys.name("targetId"));
        findings.add(
            line,
            Level::Warning,
            format!("label on {target:?}, which is not an entry of this session"),
            id,
            Some(pointer),
        );
        return;
    }
    if let Some(first) = entry.first_kept_entry_id() {
        let kept = tree.index_of(&first);
        // An entry on a cycle is on no path from a root; the cycle is reported itself.
        if ancestry.reached(index) && !kept.is_some_and(|k| ancestry.is_ancestor(k, index)) {
            let pointer = format!("/{}", keys.name("firstKeptEntryId"));
            findings.add(line, Level::Warning, format!("firstKeptEntryId {first:?} is not an ancestor of this compaction; nothing before it is kept"), id, Some(pointer));
        }
        return;
    }
    if entry.kind == EntryKind::BranchSummary {
        let key = keys.name("fromId");
        if let Some(from) = entry
            .object()
            .str(key)
            .filter(|f| f != "root" && !tree.contains(f))
        {
            findings.add(
                line,
                Level::Warning,
                format!("fromId {from:?} is not an entry of this session"),
                id,
                Some(format!("/{key}")),
            );
        }
    }
}

/// Which entries are ancestors of which, from the times a depth-first walk from the
/// roots enters and leaves each entry: `a` is an ancestor of `c` when the walk enters
/// `c` after `a` and leaves it no later. One walk for the whole file, so a question costs
/// the same however long the path (a path of 50,000 compactions is asked 50,000 times).
/// The walk keeps its own stack: nothing recurses on the tree's depth.
pub(super) struct Ancestry {
    /// When the walk entered each entry; `usize::MAX` for an entry it never reached
    /// (on a cycle, with no root above it).
    enter: Vec<usize>,
    /// When the walk left each entry.
    exit: Vec<usize>,
}

impl Ancestry {
    pub(super) fn new(tree: &Tree) -> Ancestry {
        let entries = tree.entries();
        let mut children = vec![Vec::new(); entries.len()];
        let mut roots = Vec::new();
        for (index, entry) in entries.iter().enumerate() {
            match entry.parent_id.as_deref().and_then(|p| tree.index_of(p)) {
                Some(parent) => children[parent].push(index),
                None => roots.push(index),
            }
        }
        let mut ancestry = Ancestry {
            enter: vec![usize::MAX; entries.len()],
            exit: vec![usize::MAX; entries.len()],
        };
        let mut clock = 0;
        let mut stack: Vec<(usize, usize)> = Vec::new();
        for root in roots {
            ancestry.enter[root] = clock;
            clock += 1;
            stack.push((root, 0));
            while let Some((node, next)) = stack.pop() {
                if let Some(&child) = children[node].get(next) {
                    stack.push((node, next + 1));
                    ancestry.enter[child] = clock;
                    stack.push((child, 0));
                } else {
                    ancestry.exit[node] = clock;
                }
                clock += 1;
            }
        }
        ancestry
    }

    /// Whether the walk reached `index` from a root.
    pub(super) fn reached(&self, index: usize) -> bool {
        self.enter[index] != usize::MAX
    }

    /// Whether `a` is a proper ancestor of `c` (both reached from a root).
    pub(super) fn is_ancestor(&self, a: usize, c: usize) -> bool {
        a != c && self.reached(a) && self.enter[a] < self.enter[c] && self.exit[c] <= self.exit[a]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::tests::H;
    use session_reference::model::Profile;
    use session_reference::parse::parse;

    /// Whether `a` is on the root→`c` path, from the path itself (what `Ancestry` answers
    /// in constant time).
    fn on_path(tree: &Tree, a: usize, c: usize) -> bool {
        let path = tree.path_from_index(c);
        path[..path.len() - 1].contains(&a)
    }

    #[test]
    fn ancestry_agrees_with_the_paths() {
        // Parents by index (`None`: a root; an index past the end: a missing parent),
        // with branches, a missing parent and a self-parent with children under it.
        let parents: &[Option<usize>] = &[
            None,
            Some(0),
            Some(1),
            Some(1),
            Some(3),
            Some(0),
            None,
            Some(6),
            Some(8),
            Some(9),
            Some(8),
            Some(99),
        ];
        let lines: Vec<String> = parents
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let parent = p.map_or("null".to_owned(), |p| format!("\"e{p}\""));
                format!(r#"{{"type":"message","id":"e{i}","parentId":{parent},"timestamp":"t","message":{{"role":"user","content":"x"}}}}"#)
            })
            .collect();
        let text = format!("{H}\n{}\n", lines.join("\n"));
        let tree = Tree::new(parse(text.as_bytes(), Profile::Pi).entries);
        let ancestry = Ancestry::new(&tree);
        let on_a_cycle = [8, 9, 10];
        for c in 0..parents.len() {
            assert_eq!(ancestry.reached(c), !on_a_cycle.contains(&c), "e{c}");
            for a in 0..parents.len() {
                if ancestry.reached(c) {
                    assert_eq!(
                        ancestry.is_ancestor(a, c),
                        on_path(&tree, a, c),
                        "e{a} of e{c}"
                    );
                }
            }
        }
    }
}
