//! The messages entries give a compaction: document 004, "Context Building" (compaction
//! entries, branch summaries and custom messages as messages) as pi-mono's
//! `getMessageFromEntry` and `buildSessionContext` make them.

use serde_json::Value;

use super::{entry_type, object, Rules};
use crate::ids::parse_iso_ms;

/// The message an entry gives a compaction: a message entry's message, a `custom_message`'s
/// custom message, a `branch_summary`'s summary message; compactions and the rest give none.
pub fn compaction_message(entry: &Value, rules: &Rules) -> Option<Value> {
    match entry_type(entry) {
        "message" => Some(entry["message"].clone()),
        "custom_message" => Some(custom_message(entry, rules)),
        "branch_summary" => Some(branch_summary_message(entry)),
        _ => None,
    }
}

/// `createCustomMessage` for a `custom_message` entry (omp also carries `attribution`).
pub fn custom_message(entry: &Value, rules: &Rules) -> Value {
    let attribution = rules
        .short_summary
        .then(|| entry.get("attribution").cloned())
        .flatten();
    object([
        ("role", Some("custom".into())),
        ("customType", entry.get("customType").cloned()),
        ("content", entry.get("content").cloned()),
        ("display", entry.get("display").cloned()),
        ("details", entry.get("details").cloned()),
        ("attribution", attribution),
        ("timestamp", Some(time_ms(entry))),
    ])
}

/// `createBranchSummaryMessage` for a `branch_summary` entry.
pub fn branch_summary_message(entry: &Value) -> Value {
    object([
        ("role", Some("branchSummary".into())),
        ("summary", entry.get("summary").cloned()),
        ("fromId", entry.get("fromId").cloned()),
        ("timestamp", Some(time_ms(entry))),
    ])
}

/// `new Date(entry.timestamp).getTime()`; `null` (JSON's NaN) when it is not an ISO time.
pub fn time_ms(entry: &Value) -> Value {
    entry
        .get("timestamp")
        .and_then(Value::as_str)
        .and_then(parse_iso_ms)
        .map_or(Value::Null, Value::from)
}

/// The messages of `buildSessionContext(pathEntries)` (pi), which pi estimates for
/// `tokensBefore`: the latest compaction's summary, the entries from its first kept entry,
/// then everything after it. pi leaves out a branch summary whose `summary` is falsy; here
/// it stays, as its estimate is 0 tokens either way.
pub fn context_messages(path: &[&Value]) -> Vec<Value> {
    let rules = Rules::for_profile(crate::model::Profile::Pi);
    let messages = |entries: &[&Value]| -> Vec<Value> {
        entries
            .iter()
            .filter_map(|e| compaction_message(e, &rules))
            .collect()
    };
    let Some(at) = path.iter().rposition(|e| entry_type(e) == "compaction") else {
        return messages(path);
    };
    let compaction = path[at];
    let summary = object([
        ("role", Some("compactionSummary".into())),
        ("summary", compaction.get("summary").cloned()),
        ("tokensBefore", compaction.get("tokensBefore").cloned()),
        ("timestamp", Some(time_ms(compaction))),
    ]);
    let first_kept = compaction.get("firstKeptEntryId");
    let kept_from = path[..at]
        .iter()
        .position(|e| e.get("id").is_some() && e.get("id") == first_kept);
    // Compactions give no message, so the kept entries run on through this one.
    let kept = &path[kept_from.unwrap_or(at)..];
    std::iter::once(summary).chain(messages(kept)).collect()
}

/// JavaScript truthiness of a JSON value.
pub(crate) fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}
