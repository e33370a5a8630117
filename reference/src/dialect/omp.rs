//! The `omp` dialect: oh-my-pi (`@oh-my-pi/pi-coding-agent` 13.19.0), whose session
//! document is document 000, the source of truth for this profile.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use super::Keys;
use super::{iso_file_name, Dialect, Env, ForkParent, Settings};
use crate::context::{js_string, message_of};
use crate::ids::IdSource;
use crate::listing::SessionInfo;
use crate::model::{Entry, EntryKind};
use crate::raw::{as_string, is_truthy, to_raw};
use crate::store::CONFIG_DIR_ENV;

/// oh-my-pi 13.19.0 (document 000).
pub static OMP: Dialect = Dialect {
    // Format: camelCase keys, a versioned `session` header, no `leaf` entries.
    keys: &Keys::CAMEL,

    // Loading (000 "Loading and compatibility"): Bun's JSONL reader keeps the first
    // value of a line with trailing data; images may be blob references.
    keeps_value_before_trailing_data: true,
    has_blob_refs: true,

    // Writing (000 "Persistence guarantees"): session ids are 16 hex digits; a file
    // that is opened exists from then on and takes every append; writes go through a
    // promise chain, so a failed one is rethrown by the next operation; entries are
    // prepared for persistence.
    new_session_id,
    writes_missing_file_on_open: true,
    appends_to_loaded_file_at_once: true,
    queues_writes: true,
    prepares_entries: true,
    branch_appends_leaf_entry: false,
    file_name: iso_file_name,
    fork_parent: ForkParent::SourceId,

    // Context (000 "Context reconstruction"):
    // `{messages, thinkingLevel, models, injectedTtsrRules, mode, modeData?}`.
    custom_message_fields: &[
        "customType",
        "content",
        "display",
        "details",
        "attribution",
        "timestamp",
    ],
    compaction_summary_fields: &["summary", "shortSummary", "tokensBefore", "timestamp"],
    branch_summary_fields: &["summary", "fromId", "timestamp"],
    custom_messages_in_context: true,
    settings,
    settings_over_all_entries: false,
    unknown_leaf_is_empty: false,

    // Store and listing (001; omp A, N, O).
    agent_dir,
    flat_sessions: false,
    lists_need_header_id: true,
    counts_empty_messages: false,
    lists_sessions_without_messages: false,
    finish_info,
    header_window: 4096,
    header_on_first_line: false,
    session_dir_is_the_only_scope: true,
    forks_only_from_other_cwd: true,
    uses_breadcrumbs: true,
    not_found: |value| format!("Session \"{value}\" not found."),
    refused_fork: |value, cwd| {
        (
            format!("Session \"{value}\" is in another project ({cwd})."),
            true,
        )
    },
    picker_stops_when_empty: true,
    default_thinking_level: "high",
    thinking_level_needs_messages: false,
};

/// 16 lowercase hex digits (omp 13.19.0's `Snowflake`-free session ids).
fn new_session_id(source: &mut dyn IdSource, _now_ms: i64) -> String {
    format!("{:016x}", source.next_u64())
}

/// The settings scanned along the path:
/// - `thinkingLevel`: the last change's (`"off"` by default or when `null`);
/// - `models`: per role (`role ?? "default"`), the last truthy `model`; `default`
///   falls back to the last assistant message's `provider/model`;
/// - `injectedTtsrRules`: every rule of every `ttsr_injection`, first-seen order, once;
/// - `mode` (`"none"` by default) and `modeData`: the last `mode_change`'s.
fn settings(path: &[&Entry]) -> Settings {
    let mut thinking_level = to_raw("off");
    let mut models = BTreeMap::new();
    let mut rules = Vec::new();
    let mut seen_rules = HashSet::new();
    let mut mode = to_raw("none");
    let mut mode_data = None;
    for entry in path {
        // Only the entries that set something are read again.
        if !matches!(
            entry.kind,
            EntryKind::ThinkingLevelChange
                | EntryKind::ModelChange
                | EntryKind::TtsrInjection
                | EntryKind::ModeChange
        ) {
            continue;
        }
        let obj = entry.object();
        match &entry.kind {
            EntryKind::ThinkingLevelChange => {
                thinking_level = obj
                    .get("thinkingLevel")
                    .filter(|v| v.get() != "null")
                    .map_or_else(|| to_raw("off"), ToOwned::to_owned);
            }
            EntryKind::ModelChange => {
                if let Some(model) = obj.get("model").filter(|v| is_truthy(Some(v))) {
                    let role = obj.str("role").unwrap_or_else(|| "default".to_owned());
                    let model = as_string(model).unwrap_or_else(|| model.get().to_owned());
                    models.insert(role, model);
                }
            }
            EntryKind::TtsrInjection => {
                let injected: Vec<serde_json::Value> = obj
                    .get("injectedRules")
                    .and_then(|v| serde_json::from_str(v.get()).ok())
                    .unwrap_or_default();
                for rule in injected.iter().filter_map(serde_json::Value::as_str) {
                    if seen_rules.insert(rule.to_owned()) {
                        rules.push(rule.to_owned());
                    }
                }
            }
            EntryKind::ModeChange => {
                mode = obj
                    .get("mode")
                    .map_or_else(|| to_raw(&()), ToOwned::to_owned);
                mode_data = obj.get("data").map(ToOwned::to_owned);
            }
            _ => {}
        }
    }
    if let Some(entry) = path.iter().rev().find(|e| e.is_assistant()) {
        let obj = entry.object();
        let message = message_of(&obj);
        let model = format!(
            "{}/{}",
            js_string(message.get("provider")),
            js_string(message.get("model"))
        );
        models.entry("default".to_owned()).or_insert(model);
    }
    let mut out = vec![
        ("thinkingLevel", thinking_level),
        ("models", to_raw(&models)),
        ("injectedTtsrRules", to_raw(&rules)),
        ("mode", mode),
    ];
    if let Some(data) = mode_data {
        out.push(("modeData", data));
    }
    out
}

/// `$PI_CODING_AGENT_DIR` as written, else `<home>/<$PI_CONFIG_DIR or .omp>/agent`.
/// (omp's XDG locations apply only after `omp config migrate`, and are not modelled.)
fn agent_dir(set: Option<&str>, home: &Path, env: &Env<'_>) -> PathBuf {
    if let Some(dir) = set {
        return PathBuf::from(dir);
    }
    let folder = env(CONFIG_DIR_ENV)
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| ".omp".to_owned());
    home.join(folder).join("agent")
}

/// omp lists the header's `title`, else the latest compaction's `shortSummary`, and no
/// `session_info` name; `modified` is the file's time.
fn finish_info(
    info: &mut SessionInfo,
    _last: Option<f64>,
    short_summary: Option<serde_json::Value>,
) {
    info.name = None;
    info.title = info.title.take().or(short_summary);
}
