//! Moving the leaf and branching: `branch`, `resetLeaf`, `branchWithSummary`,
//! `createBranchedSession` (000 "Tree semantics"; 002 "Tree Structure"; pi-mono §4).

use std::path::PathBuf;

use serde_json::Value;

use super::{OnDisk, Rules, SessionError, SessionManager};
use crate::entries;
use crate::model::Entry;
use crate::tree::Tree;

impl SessionManager {
    /// Moves the leaf to `id`; a dialect with durable navigation (003 `branch`) appends
    /// a `leaf` entry (parent: the current leaf, target: `id`) that moves it.
    /// Clauses: tree.4.
    pub fn branch(&mut self, id: &str) -> Result<(), SessionError> {
        if !Rules::for_profile(self.profile).branch_appends_leaf_entry {
            return Ok(self.tree.branch(id)?);
        }
        if !self.tree.contains(id) {
            return Err(SessionError::NotFound(id.to_owned()));
        }
        self.append(&entries::Leaf {
            target_id: id.to_owned(),
        })?;
        Ok(())
    }

    /// Sets the leaf to none; the next append is a new root.
    /// Clauses: tree.5.
    pub fn reset_leaf(&mut self) {
        self.tree.reset_leaf();
    }

    /// Moves the leaf to `from` (`None`: before the root) and appends `summary`, its
    /// `fromId` set to `from` or `"root"`.
    /// Clauses: tree.6.
    pub fn branch_with_summary(
        &mut self,
        from: Option<&str>,
        mut summary: entries::BranchSummary,
    ) -> Result<String, SessionError> {
        match from {
            Some(id) => self.tree.branch(id)?,
            None => self.tree.reset_leaf(),
        }
        from.unwrap_or("root").clone_into(&mut summary.from_id);
        self.append(&summary)
    }

    /// Starts a new session holding only the root→`leaf` path (default: the current
    /// leaf), labels re-applied after it; returns the new file (`None` in memory).
    /// Clauses: tree.12.
    pub fn create_branched_session(
        &mut self,
        leaf: Option<&str>,
    ) -> Result<Option<PathBuf>, SessionError> {
        let path: Vec<Entry> = self
            .tree
            .branch_path(leaf)
            .into_iter()
            .filter(|e| e.kind != crate::model::EntryKind::Label)
            .cloned()
            .collect();
        if path.is_empty() {
            return Err(SessionError::NotFound(
                leaf.or(self.tree.leaf()).unwrap_or_default().to_owned(),
            ));
        }
        let labels: Vec<(String, String, Option<String>)> = self
            .tree
            .labels_in_order()
            .into_iter()
            .filter(|(target, _)| path.iter().any(|e| e.id.as_deref() == Some(*target)))
            .map(|(target, label)| {
                (
                    target.to_owned(),
                    label.text.clone(),
                    label.timestamp.clone(),
                )
            })
            .collect();
        let parent = self.file.as_ref().map(|f| f.to_string_lossy().into_owned());
        let persisted = self.file.is_some();
        self.header = self.make_header(parent.as_deref());
        self.has_assistant = path.iter().any(Entry::is_assistant);
        self.tree = Tree::new(path);
        self.on_disk = OnDisk::default();
        self.file = persisted.then(|| self.default_file());
        for (target, text, timestamp) in labels {
            let label = entries::Label {
                target_id: target,
                label: Some(Value::from(text)),
            };
            let entry = self.make_entry(&label, timestamp);
            self.tree.push(entry);
        }
        if self.has_assistant {
            self.write_all()?;
        }
        Ok(self.file.clone())
    }
}
