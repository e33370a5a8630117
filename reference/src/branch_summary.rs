//! Branch summaries: document 004, "Compaction" and "File Operation Tracking" applied to the
//! tree (pi-mono `collectEntriesForBranchSummary`, `prepareBranchEntries`,
//! `generateBranchSummary`).
//!
//! Leaving a branch for another point of the tree, the agent summarises the entries between
//! the old leaf and the common ancestor, newest first within a token budget, and carries the
//! file operations of those entries and of the branch summaries among them.

use std::collections::HashSet;

use serde_json::{json, Value};

use crate::compaction::conversation::serialize_conversation;
use crate::compaction::messages::{
    branch_summary_message, compaction_summary_message, custom_message,
};
use crate::compaction::prepare::FileOps;
use crate::compaction::summary::{append_file_lists, ModelRequest, PromptKind};
use crate::compaction::tokens::estimate_tokens;
use crate::compaction::{field, message_of, Rules};
use crate::model::{Entry, EntryKind};
use crate::raw::is_truthy;
use crate::tree::Tree;

/// The `maxTokens` of a branch summary request.
pub const BRANCH_MAX_TOKENS: i64 = 2048;

/// What `collectEntriesForBranchSummary` returns.
#[derive(Debug, Clone)]
pub struct Collected<'a> {
    /// The entries from just below the common ancestor to the old leaf, oldest first.
    pub entries: Vec<&'a Entry>,
    /// The deepest entry on both paths, if any.
    pub common_ancestor_id: Option<String>,
}

/// `collectEntriesForBranchSummary(session, oldLeafId, targetId)`: nothing without an old
/// leaf; else the entries walked from the old leaf up to (not including) the deepest entry
/// of the target's path that is also on the old leaf's path (an id that names no entry has
/// the empty path).
/// Clauses: compaction.16.
pub fn collect_entries<'a>(tree: &'a Tree, old_leaf: Option<&str>, target: &str) -> Collected<'a> {
    let Some(old_leaf) = old_leaf.filter(|l| !l.is_empty()) else {
        return Collected {
            entries: Vec::new(),
            common_ancestor_id: None,
        };
    };
    let old_path = tree.branch_path(Some(old_leaf));
    let old_ids: HashSet<&str> = old_path.iter().filter_map(|e| e.id.as_deref()).collect();
    let common = tree
        .branch_path(Some(target))
        .iter()
        .rev()
        .filter_map(|e| e.id.as_deref())
        .find(|id| old_ids.contains(id))
        .map(str::to_owned);
    let mut collected: Vec<&Entry> = old_path
        .into_iter()
        .rev()
        .take_while(|e| e.id != common)
        .collect();
    collected.reverse();
    Collected {
        entries: collected,
        common_ancestor_id: common,
    }
}

/// What `prepareBranchEntries` returns.
#[derive(Debug, Clone, PartialEq)]
pub struct BranchPreparation {
    /// The messages summarised, oldest first.
    pub messages: Vec<Value>,
    /// File operations of every entry's tool calls and earlier branch summaries' details.
    pub file_ops: FileOps,
    /// The estimate of the messages kept.
    pub total_tokens: i64,
}

impl BranchPreparation {
    /// `{messages, fileOps, totalTokens}`.
    pub fn to_json(&self) -> Value {
        json!({"messages": self.messages, "fileOps": self.file_ops.to_json(), "totalTokens": self.total_tokens})
    }
}

/// `prepareBranchEntries(entries, tokenBudget)`: file operations from every branch summary's
/// details (not an extension's), then messages from the newest back while they fit the
/// budget (0: no limit); a summary that does not fit is still taken while under 90% of it.
/// Clauses: compaction.17.
pub fn prepare_branch_entries(
    entries: &[&Entry],
    token_budget: i64,
    rules: &Rules,
) -> BranchPreparation {
    let mut file_ops = FileOps::default();
    let extension_key = if rules.short_summary {
        "fromExtension"
    } else {
        "fromHook"
    };
    for entry in entries
        .iter()
        .filter(|e| e.kind == EntryKind::BranchSummary)
    {
        let obj = entry.object();
        if !is_truthy(obj.get(extension_key)) && is_truthy(obj.get("details")) {
            file_ops.add_details(&field(entry, "details").unwrap_or_default());
        }
    }
    let mut messages: Vec<Value> = Vec::new();
    let mut total_tokens = 0;
    for entry in entries.iter().rev() {
        let Some(message) = branch_message(entry, rules) else {
            continue;
        };
        file_ops.add_message(&message);
        let tokens = estimate_tokens(&message, rules);
        if token_budget > 0 && total_tokens + tokens > token_budget {
            let summary = matches!(entry.kind, EntryKind::Compaction | EntryKind::BranchSummary);
            #[allow(clippy::cast_precision_loss)]
            let room = (total_tokens as f64) < token_budget as f64 * 0.9;
            if summary && room {
                messages.push(message);
                total_tokens += tokens;
            }
            break;
        }
        messages.push(message);
        total_tokens += tokens;
    }
    messages.reverse();
    BranchPreparation {
        messages,
        file_ops,
        total_tokens,
    }
}

/// The message an entry gives a branch summary: as for a compaction, but tool results are
/// left out and a compaction gives its summary message.
/// Clauses: compaction.17.
pub fn branch_message(entry: &Entry, rules: &Rules) -> Option<Value> {
    match entry.kind {
        EntryKind::Message if entry.role().as_deref() == Some("toolResult") => None,
        EntryKind::Message => message_of(entry),
        EntryKind::CustomMessage => Some(custom_message(entry, rules)),
        EntryKind::BranchSummary => Some(branch_summary_message(entry, rules)),
        EntryKind::Compaction => Some(compaction_summary_message(entry, rules)),
        _ => None,
    }
}

/// `generateBranchSummary(entries, {model, customInstructions, replaceInstructions,
/// reserveTokens})` with a model of `context_window` (0: 128,000) that answers `stub`: the
/// preparation, the request made (none when no message fits) and the result.
/// Clauses: compaction.18.
pub fn generate_branch_summary(
    entries: &[&Entry],
    context_window: i64,
    reserve_tokens: i64,
    custom: Option<&str>,
    stub: &str,
    rules: &Rules,
) -> (BranchPreparation, Option<ModelRequest>, Value) {
    let window = if context_window == 0 {
        128_000
    } else {
        context_window
    };
    let prep = prepare_branch_entries(entries, window.saturating_sub(reserve_tokens), rules);
    if prep.messages.is_empty() {
        return (prep, None, json!({"summary": "No content to summarize"}));
    }
    let custom = custom.filter(|c| !c.is_empty());
    let request = ModelRequest {
        prompt: if rules.short_summary && custom.is_some() {
            PromptKind::Custom
        } else {
            PromptKind::Branch
        },
        conversation: serialize_conversation(&prep.messages, rules),
        previous_summary: None,
        custom_instructions: custom.map(str::to_owned),
        max_tokens: BRANCH_MAX_TOKENS,
    };
    let (read, modified) = prep.file_ops.file_lists();
    let preamble = rules.branch_preamble;
    let summary = append_file_lists(&format!("{preamble}{stub}"), &read, &modified, rules);
    let result = json!({"summary": summary, "readFiles": read, "modifiedFiles": modified});
    (prep, Some(request), result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Profile;

    fn entry(id: &str, parent: Option<&str>, role: &str, text: &str) -> Entry {
        let value = json!({"type":"message","id":id,"parentId":parent,"message":{"role":role,"content":text}});
        Entry::from_text(value.to_string(), 1, Profile::Pi)
    }

    #[test]
    fn collects_back_to_the_common_ancestor() {
        let tree = Tree::new(vec![
            entry("a", None, "user", "root"),
            entry("b", Some("a"), "user", "left"),
            entry("c", Some("b"), "user", "left 2"),
            entry("d", Some("a"), "user", "right"),
        ]);
        let c = collect_entries(&tree, Some("c"), "d");
        assert_eq!(c.common_ancestor_id.as_deref(), Some("a"));
        let ids: Vec<_> = c.entries.iter().filter_map(|e| e.id.as_deref()).collect();
        assert_eq!(ids, ["b", "c"]);
        assert!(collect_entries(&tree, None, "d").entries.is_empty());
    }

    #[test]
    fn the_budget_keeps_the_newest_messages() {
        let values = [
            entry("a", None, "user", &"x".repeat(40)),
            entry("b", Some("a"), "user", &"y".repeat(40)),
        ];
        let refs: Vec<&Entry> = values.iter().collect();
        let p = prepare_branch_entries(&refs, 15, &Rules::for_profile(Profile::Pi));
        assert_eq!(p.messages.len(), 1);
        assert_eq!(p.total_tokens, 10);
    }
}
