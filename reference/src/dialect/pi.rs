//! The `pi` dialect: pi-mono (`@mariozechner/pi-coding-agent` 0.73.1), with document
//! 002 for the shapes of entries and the SessionManager API.

use std::path::{Path, PathBuf};

use super::Keys;
use super::{iso_file_name, Dialect, Env, ForkParent, Settings};
use crate::context::{message_of, object};
use crate::ids::{parse_iso_ms, uuid};
use crate::listing::SessionInfo;
use crate::model::{Entry, EntryKind};
use crate::raw::to_raw;
use crate::store::expand_home;

/// pi-mono 0.73.1.
pub static PI: Dialect = Dialect {
    // Format: camelCase keys, a versioned `session` header, no `leaf` entries.
    keys: &Keys::CAMEL,

    // Loading: `parseSessionEntries` runs `JSON.parse` on each line and skips what throws.
    keeps_value_before_trailing_data: false,
    has_blob_refs: false,

    // Writing: session ids are UUIDv7; nothing is written before the first assistant
    // message, whether the session is new or loaded (pi-mono §6).
    new_session_id: uuid,
    writes_missing_file_on_open: false,
    appends_to_loaded_file_at_once: false,
    queues_writes: false,
    prepares_entries: false,
    branch_appends_leaf_entry: false,
    file_name: iso_file_name,
    fork_parent: ForkParent::SourcePath,

    // Context (002 "Context Building"): `{messages, thinkingLevel, model}`.
    custom_message_fields: &["customType", "content", "display", "details", "timestamp"],
    compaction_summary_fields: &["summary", "tokensBefore", "timestamp"],
    branch_summary_fields: &["summary", "fromId", "timestamp"],
    custom_messages_in_context: true,
    settings,
    settings_over_all_entries: false,
    unknown_leaf_is_empty: false,

    // Store and listing (001; pi-mono 7.1–7.8).
    agent_dir,
    flat_sessions: false,
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

/// `thinkingLevel` (the last change's, verbatim; `"off"` when there is none) and
/// `model`: the last model change's `{provider, modelId}`, or the last assistant
/// message's `{provider, model}` renamed, whichever comes later; `null` when neither.
fn settings(path: &[&Entry]) -> Settings {
    let mut thinking_level = Some(to_raw("off"));
    for entry in path {
        if entry.kind == EntryKind::ThinkingLevelChange {
            thinking_level = entry.object().get("thinkingLevel").map(ToOwned::to_owned);
        }
    }
    let model_source = path
        .iter()
        .rev()
        .find(|e| e.kind == EntryKind::ModelChange || e.is_assistant());
    let model = model_source.map_or_else(
        || to_raw(&()),
        |entry| {
            let obj = entry.object();
            let (source, model_key) = if entry.kind == EntryKind::ModelChange {
                (obj.clone(), "modelId")
            } else {
                (message_of(&obj), "model")
            };
            object(&[
                ("provider", source.get("provider").map(ToOwned::to_owned)),
                ("modelId", source.get(model_key).map(ToOwned::to_owned)),
            ])
        },
    );
    let mut out = Vec::new();
    if let Some(level) = thinking_level {
        out.push(("thinkingLevel", level));
    }
    out.push(("model", model));
    out
}

/// `$PI_CODING_AGENT_DIR` with `~` expanded, else `<home>/.pi/agent`.
fn agent_dir(set: Option<&str>, home: &Path, _env: &Env<'_>) -> PathBuf {
    match set {
        Some(dir) => expand_home(dir, home),
        None => home.join(".pi").join("agent"),
    }
}

/// pi lists no title, and orders by the last message's time (pi-mono 7.5).
fn finish_info(
    info: &mut SessionInfo,
    last_activity: Option<f64>,
    _short: Option<serde_json::Value>,
) {
    info.title = None;
    info.modified_ms = modified(last_activity, info.created.as_deref(), info.modified_ms);
}

/// pi's `modified`: the latest message time when it is above 0, else the header time, else the file time.
#[allow(clippy::cast_possible_truncation)] // JavaScript's Date keeps whole milliseconds
fn modified(last_activity: Option<f64>, created: Option<&str>, file_ms: i64) -> i64 {
    match last_activity {
        Some(at) if at > 0.0 && at.is_finite() => at as i64,
        _ => created.and_then(parse_iso_ms).unwrap_or(file_ms),
    }
}
