//! The messages entries give a compaction: document 004, "Context Building" (compaction
//! entries, branch summaries and custom messages as messages) as pi-mono's
//! `getMessageFromEntry` and `buildSessionContext` make them.

use serde_json::Value;

use super::{entry_of, entry_type, Rules};
use crate::context::{self, build_context, LeafChoice};
use crate::model::Profile;
use crate::raw::{parse_value, RawObject};
use crate::tree::Tree;

/// The message an entry gives a compaction: a message entry's message, a `custom_message`'s
/// custom message, a `branch_summary`'s summary message; compactions and the rest give none.
pub fn compaction_message(entry: &Value, rules: &Rules) -> Option<Value> {
    match entry_type(entry) {
        "message" => Some(entry["message"].clone()),
        "custom_message" => Some(custom_message(entry, rules)),
        "branch_summary" => Some(branch_summary_message(entry, rules)),
        _ => None,
    }
}

/// `createCustomMessage` for a `custom_message` entry, as the context builds it.
pub fn custom_message(entry: &Value, rules: &Rules) -> Value {
    synthetic(entry, "custom", rules.messages().custom_message_fields)
}

/// `createBranchSummaryMessage` for a `branch_summary` entry, as the context builds it.
pub fn branch_summary_message(entry: &Value, rules: &Rules) -> Value {
    synthetic(
        entry,
        "branchSummary",
        rules.messages().branch_summary_fields,
    )
}

/// A compaction's summary message, as the context builds it (omp's carries `shortSummary`).
pub fn compaction_summary_message(entry: &Value, rules: &Rules) -> Value {
    synthetic(
        entry,
        "compactionSummary",
        rules.messages().compaction_summary_fields,
    )
}

/// [`context::synthetic_message`] for an entry held as a JSON value.
fn synthetic(entry: &Value, role: &str, fields: &[&str]) -> Value {
    let text = entry.to_string();
    let obj = RawObject::parse(&text).unwrap_or_default();
    let message = context::synthetic_message(&obj, role, fields);
    parse_value(message.get()).unwrap_or(Value::Null)
}

/// The messages of `buildSessionContext(pathEntries)` (pi), which pi estimates for
/// `tokensBefore`: [`context::build_context`] over the path.
pub fn context_messages(path: &[&Value]) -> Vec<Value> {
    let tree = Tree::new(path.iter().map(|e| entry_of(e)).collect());
    build_context(&tree, LeafChoice::Last, Profile::Pi)
        .messages
        .iter()
        .map(|m| parse_value(m.get()).unwrap_or(Value::Null))
        .collect()
}
