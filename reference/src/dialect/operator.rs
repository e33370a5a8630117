//! The `operator` dialect: document 003, a port with snake_case fields, a
//! `session_header` line, durable `leaf` navigation entries and one flat session
//! directory. It has no published implementation: where 003 is silent, this dialect
//! follows `pi` (each such choice is marked "003 is silent" below and listed in
//! docs/ARCHITECTURE.md).

use std::path::{Path, PathBuf};

use super::Keys;
use super::{Dialect, Env, ForkParent, Settings};
use crate::ids::uuid;
use crate::listing::SessionInfo;
use crate::model::{Entry, EntryKind};
use crate::raw::to_raw;
use crate::store::expand_home;

/// 003 "Storage format": every field is snake_case; the header's type is
/// `session_header` and it has no `version`; `branch` is the BranchEntry and
/// `custom_info` the CustomInfoEntry; `leaf` entries move the leaf.
pub static KEYS: Keys = Keys {
    renames: &[
        ("session", "session_header"),
        ("parentId", "parent_id"),
        ("parentSession", "parent_session"),
        ("firstKeptEntryId", "first_kept_entry_id"),
        ("tokensBefore", "tokens_before"),
        ("targetId", "target_id"),
        ("fromId", "from_id"),
        ("thinkingLevel", "thinking_level"),
        ("modelId", "model_id"),
        ("customType", "custom_type"),
        ("fromHook", "from_hook"),
        ("branch_summary", "branch"),
        ("custom", "custom_info"),
    ],
    versioned: false,
    leaf_type: Some("leaf"),
};

/// Document 003.
pub static OPERATOR: Dialect = Dialect {
    keys: &KEYS,

    // Loading: "loading is lenient, as in the other profiles"; 003 is silent on lines
    // with trailing data and on blobs: as pi.
    keeps_value_before_trailing_data: false,
    has_blob_refs: false,

    // Writing (003 "Lazy persistence"): nothing is written before the first assistant
    // message (`flushed`), then the whole session, then one append per entry. Session
    // ids are UUIDs (003 "<uuid>"; 003 is silent on the version: v7, as pi). A loaded
    // file, a missing file and forks: 003 is silent, as pi.
    new_session_id: uuid,
    writes_missing_file_on_open: false,
    appends_to_loaded_file_at_once: false,
    queues_writes: false,
    prepares_entries: false,
    branch_appends_leaf_entry: true,
    file_name,
    fork_parent: ForkParent::SourcePath,

    // Context (003 "Context reconstruction"): messages and branch entries in path
    // order; the compaction summary first, as a `compactionSummary` message (003
    // "CompactionSummaryMessage", a synthetic user message; its fields as pi's, in
    // snake_case); the newest thinking level and model over all entries.
    custom_message_fields: &["custom_type", "content", "display", "details", "timestamp"],
    compaction_summary_fields: &["summary", "tokens_before", "timestamp"],
    branch_summary_fields: &["summary", "from_id", "timestamp"],
    custom_messages_in_context: false,
    settings,
    settings_over_all_entries: true,
    unknown_leaf_is_empty: true,

    // Store (003 "Session directory layout"): one flat directory; listing filters by
    // the header's cwd. Everything else about listing and resuming: 003 is silent, as pi.
    agent_dir,
    flat_sessions: true,
    lists_need_header_id: false,
    counts_empty_messages: true,
    lists_sessions_without_messages: true,
    finish_info,
    header_window: 512,
    header_on_first_line: true,
    session_dir_is_the_only_scope: false,
    forks_only_from_other_cwd: false,
    uses_breadcrumbs: false,
    not_found: |value| format!("No session found matching '{value}'"),
    refused_fork: |_, _| ("Aborted.".to_owned(), false),
    picker_stops_when_empty: false,
    default_thinking_level: "medium",
    thinking_level_needs_messages: true,
};

/// 003 step 1: over `entries` (all of them, in file order), the newest
/// `thinking_level_change`'s `thinking_level` (`"off"` when there is none, as pi) and
/// the newest `model_change`'s `model_id` (`null` when there is none; 003 names no
/// fallback to the assistant message's model).
fn settings(entries: &[&Entry]) -> Settings {
    let mut thinking_level = Some(to_raw("off"));
    let mut model_id = to_raw(&());
    for entry in entries {
        match entry.kind {
            EntryKind::ThinkingLevelChange => {
                thinking_level = entry.object().get("thinking_level").map(ToOwned::to_owned);
            }
            EntryKind::ModelChange => {
                model_id = entry
                    .object()
                    .get("model_id")
                    .map_or_else(|| to_raw(&()), ToOwned::to_owned);
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    if let Some(level) = thinking_level {
        out.push(("thinking_level", level));
    }
    out.push(("model_id", model_id));
    out
}

/// `<YYYY-MM-DDTHH-MM-SS-ffffff>_<uuid>.jsonl` (003 "Session directory layout"): the
/// header's time to the microsecond (the clock keeps milliseconds: three zeros follow).
fn file_name(timestamp: &str, id: &str) -> String {
    let seconds: String = timestamp.chars().take(19).collect();
    let millis: String = timestamp
        .get(20..23)
        .filter(|m| m.bytes().all(|b| b.is_ascii_digit()))
        .unwrap_or("000")
        .to_owned();
    format!("{}-{millis}000_{id}.jsonl", seconds.replace(':', "-"))
}

/// `$PI_CODING_AGENT_DIR` with `~` expanded (the kit's override), else
/// `<home>/.operator/profiles/<$OPERATOR_PROFILE or "default">` (003 names the
/// folder `profiles/<name>`; 003 is silent on how the name is chosen).
fn agent_dir(set: Option<&str>, home: &Path, env: &Env<'_>) -> PathBuf {
    if let Some(dir) = set {
        return expand_home(dir, home);
    }
    let name = env("OPERATOR_PROFILE")
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".to_owned());
    home.join(".operator").join("profiles").join(name)
}

/// 003: "SessionInfo objects sorted by last modification time": the file's time; no title.
fn finish_info(info: &mut SessionInfo, _last: Option<f64>, _short: Option<serde_json::Value>) {
    info.title = None;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Entry;

    fn entry(text: &str) -> Entry {
        Entry::from_text(text.to_owned(), 1, crate::model::Profile::Operator)
    }

    #[test]
    fn file_names_keep_microseconds() {
        assert_eq!(
            file_name("2024-01-15T10:30:00.123Z", "u"),
            "2024-01-15T10-30-00-123000_u.jsonl"
        );
    }

    #[test]
    fn snake_case_keys_are_read() {
        let e = entry(
            r#"{"type":"compaction","id":"c","parent_id":"a","first_kept_entry_id":"a","parentId":"x"}"#,
        );
        assert_eq!(e.parent_id.as_deref(), Some("a"));
        assert_eq!(e.first_kept_entry_id().as_deref(), Some("a"));
        let leaf = entry(r#"{"type":"leaf","id":"l","parent_id":"c","target_id":"a"}"#);
        assert_eq!(leaf.kind, EntryKind::Leaf);
        assert_eq!(leaf.leaf_target(), Some(Some("a".to_owned())));
        assert_eq!(
            entry(r#"{"type":"branch","id":"b"}"#).kind,
            EntryKind::BranchSummary
        );
        assert_eq!(
            entry(r#"{"type":"branch_summary","id":"b"}"#).kind,
            EntryKind::Unknown
        );
        assert_eq!(
            entry(r#"{"type":"custom_info","id":"b"}"#).type_name(),
            "custom_info"
        );
    }

    #[test]
    fn settings_take_the_newest_change() {
        let a = entry(r#"{"type":"thinking_level_change","id":"t","thinking_level":"high"}"#);
        let b = entry(r#"{"type":"model_change","id":"m","model_id":"gpt"}"#);
        let out = settings(&[&a, &b]);
        let text: Vec<String> = out
            .iter()
            .map(|(k, v)| format!("{k}={}", v.get()))
            .collect();
        assert_eq!(text, ["thinking_level=\"high\"", "model_id=\"gpt\""]);
        let none = settings(&[]);
        assert_eq!(none[1].1.get(), "null");
    }
}
