//! The messages entries give a compaction: document 004, "Context Building" (compaction
//! entries, branch summaries and custom messages as messages) as pi-mono's
//! `getMessageFromEntry` and `buildSessionContext` make them.

use serde_json::Value;

use super::{message_of, Rules};
use crate::context;
use crate::model::{Entry, EntryKind, Profile};
use crate::raw::parse_value;

/// The message an entry gives a compaction: a message entry's message, a `custom_message`'s
/// custom message, a `branch_summary`'s summary message; compactions and the rest give none.
pub fn compaction_message(entry: &Entry, rules: &Rules) -> Option<Value> {
    match entry.kind {
        EntryKind::Message => message_of(entry),
        EntryKind::CustomMessage => Some(custom_message(entry, rules)),
        EntryKind::BranchSummary => Some(branch_summary_message(entry, rules)),
        _ => None,
    }
}

/// `createCustomMessage` for a `custom_message` entry, as the context builds it.
pub fn custom_message(entry: &Entry, rules: &Rules) -> Value {
    synthetic(entry, "custom", rules.messages().custom_message_fields)
}

/// `createBranchSummaryMessage` for a `branch_summary` entry, as the context builds it.
pub fn branch_summary_message(entry: &Entry, rules: &Rules) -> Value {
    synthetic(
        entry,
        "branchSummary",
        rules.messages().branch_summary_fields,
    )
}

/// A compaction's summary message, as the context builds it (omp's carries `shortSummary`).
pub fn compaction_summary_message(entry: &Entry, rules: &Rules) -> Value {
    synthetic(
        entry,
        "compactionSummary",
        rules.messages().compaction_summary_fields,
    )
}

/// [`context::synthetic_message`] as a JSON value.
fn synthetic(entry: &Entry, role: &str, fields: &[&str]) -> Value {
    let message = context::synthetic_message(&entry.object(), role, fields);
    parse_value(message.get()).unwrap_or(Value::Null)
}

/// The messages of `buildSessionContext(pathEntries)` (pi), which pi estimates for
/// `tokensBefore`: [`context::messages`] of the path.
pub fn context_messages(path: &[&Entry]) -> Vec<Value> {
    context::messages(path, &context::Rules::for_profile(Profile::Pi))
        .iter()
        .map(|m| parse_value(m.get()).unwrap_or(Value::Null))
        .collect()
}
