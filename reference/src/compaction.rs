//! Compaction planning: document 004, "pi-agent Analysis" → "Compaction" and "File Operation Tracking".
//!
//! A session that grows past its model's context window is compacted: the older part of the
//! path is summarised by a model and the recent part is kept. Everything but the model call is
//! deterministic, and that is what this module plans:
//!
//! 1. how many tokens the context holds ([`tokens`]: chars/4 per message, or the last
//!    assistant's usage plus estimates for what follows it);
//! 2. whether to compact ([`should_compact`]: `contextTokens > contextWindow − reserveTokens`);
//! 3. where to cut ([`cut`]: walk back until `keepRecentTokens`, only at a valid cut point);
//! 4. what to summarise and carry over ([`prepare`]: the messages, a split turn's prefix, the
//!    previous summary, the file operations);
//! 5. what the model is asked and what the compaction entry gets ([`summary`]).
//!
//! Planning reads a path of the session's entries ([`Entry`], walked by
//! [`crate::tree::Tree::branch_path`]) in camelCase keys, as pi and omp write them; the
//! messages it weighs and sends are JSON values. The two profiles differ in a handful of rules, gathered in [`Rules`]; a new profile is a new
//! [`Rules::for_profile`] arm.
//!
//! The choice 004 leaves open: 004 says a cut point "must be user or assistant message (never
//! tool result)", while pi-mono 0.73.1 and omp 13.19.0 also cut at bash executions, custom
//! messages, branch summaries and `custom_message` entries. Both profiles follow their
//! implementation ([`CutRule::AnyButToolResult`]); the document's strict reading is
//! [`CutRule::UserOrAssistant`], kept for a profile that wants it.

use serde_json::{Map, Value};

use crate::context;
use crate::model::{Entry, EntryKind, Profile};
use crate::persisted_form::utf16_len;
use crate::raw::parse_value;

pub mod conversation;
pub mod cut;
pub mod messages;
pub mod prepare;
pub mod prune;
pub mod summary;
pub mod tokens;

pub use cut::{find_cut_point, find_turn_start_index, CutPoint};
pub use prepare::{prepare_compaction, FileOps, Preparation};
pub use tokens::{estimate_context_tokens, estimate_tokens, should_compact, ContextTokens};

/// `CompactionSettings` (004): whether compaction runs and its two token budgets, plus omp's
/// threshold overrides.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `enabled`: when false, [`should_compact`] is always false.
    pub enabled: bool,
    /// `reserveTokens`: room left for the prompt and the summary (004: 16384).
    pub reserve_tokens: i64,
    /// `keepRecentTokens`: how much recent context the cut keeps (004: 20000).
    pub keep_recent_tokens: i64,
    /// omp `strategy`: `"off"` disables compaction like `enabled: false`.
    pub strategy: Option<String>,
    /// omp `thresholdPercent`: a percentage of the window, used when positive.
    pub threshold_percent: Option<f64>,
    /// omp `thresholdTokens`: a fixed threshold, used first when positive.
    pub threshold_tokens: Option<f64>,
}

impl Settings {
    /// The profile's `DEFAULT_COMPACTION_SETTINGS`.
    /// Clauses: compaction.1.
    pub fn defaults(profile: Profile) -> Settings {
        let omp = profile == Profile::Omp;
        Settings {
            enabled: true,
            reserve_tokens: 16384,
            keep_recent_tokens: 20000,
            strategy: omp.then(|| "context-full".to_owned()),
            threshold_percent: omp.then_some(-1.0),
            threshold_tokens: omp.then_some(-1.0),
        }
    }

    /// The defaults with the fields `overrides` names replaced (`{"enabled": false}`, …);
    /// fields of the wrong type are ignored.
    /// Clauses: compaction.1.
    pub fn with_overrides(profile: Profile, overrides: &Value) -> Settings {
        let mut settings = Settings::defaults(profile);
        if let Some(v) = overrides.get("enabled").and_then(Value::as_bool) {
            settings.enabled = v;
        }
        if let Some(v) = overrides.get("reserveTokens").and_then(Value::as_i64) {
            settings.reserve_tokens = v;
        }
        if let Some(v) = overrides.get("keepRecentTokens").and_then(Value::as_i64) {
            settings.keep_recent_tokens = v;
        }
        if let Some(v) = overrides.get("strategy").and_then(Value::as_str) {
            settings.strategy = Some(v.to_owned());
        }
        if let Some(v) = overrides.get("thresholdPercent").and_then(Value::as_f64) {
            settings.threshold_percent = Some(v);
        }
        if let Some(v) = overrides.get("thresholdTokens").and_then(Value::as_f64) {
            settings.threshold_tokens = Some(v);
        }
        settings
    }
}

/// Which entries a cut may start at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutRule {
    /// pi-mono and omp: any message but a tool result, and `branch_summary` and
    /// `custom_message` entries.
    AnyButToolResult,
    /// Document 004 read strictly: user or assistant messages only.
    UserOrAssistant,
}

/// Where `prepareCompaction` starts when the path holds an earlier compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Boundary {
    /// pi-mono: at the previous compaction's first kept entry (else just after it), so the
    /// kept messages are summarised again.
    PreviousFirstKept,
    /// omp: just after the previous compaction.
    AfterPreviousCompaction,
}

/// The per-profile rules of compaction planning.
// Each flag is one rule of one implementation, named after it; enums would only rename them.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// The profile these rules are for.
    pub profile: Profile,
    /// The role `estimateTokens` counts like a tool result: pi `custom`, omp `hookMessage`
    /// (omp counts `custom` messages as 0 tokens).
    pub custom_role: &'static str,
    /// Valid cut points.
    pub cut_rule: CutRule,
    /// Where preparation starts after an earlier compaction.
    pub boundary: Boundary,
    /// omp: `tokensBefore` is the last usage, `keepRecentTokens` is scaled by the ratio of
    /// real to estimated tokens, and a plan with nothing to summarise is no plan.
    pub usage_scaled: bool,
    /// omp: `shouldCompact` reserves `max(15% of the window, reserveTokens)`, and honours
    /// `strategy` and the thresholds.
    pub effective_reserve: bool,
    /// omp: a compaction also asks for a short summary of the kept messages.
    pub short_summary: bool,
    /// omp: the file lists are written by its template (at most 20 names each) and replace
    /// any lists already in the summary (`upsertFileOperations`).
    pub upsert_file_lists: bool,
    /// omp: a Python execution is sent as text (`pythonExecutionToText`).
    pub sends_python_executions: bool,
    /// pi: a truncated bash output names the file its full output was kept in.
    pub names_full_output: bool,
    /// The text around a branch summary and a compaction summary sent as user messages
    /// (pi `BRANCH_SUMMARY_PREFIX`…; omp's `branch-summary-context.md` and
    /// `compaction-summary-context.md`).
    pub summary_frames: (Frame, Frame),
    /// The text put before a branch summary. omp renders its `branch-summary-preamble.md`,
    /// and the renderer trims the blank line at its end: the summary follows
    /// `exploration:` directly (omp 13.19.0 as it ships).
    pub branch_preamble: &'static str,
}

/// The text before and after a summary.
pub type Frame = (&'static str, &'static str);

const BRANCH_FRAME: Frame = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n",
    "</summary>",
);

/// omp's compaction summary frame (`compaction-summary-context.md`).
const OMP_COMPACTION_CONTEXT: &str = "Another language model started to solve this problem and produced a summary of its thinking process. You also have access to the state of the tools that were used by that language model. You **MUST** use this to build on the work that has already been done and **MUST NOT** duplicate work. Here is the summary produced by the other language model; you **MUST** use the information in this summary to assist with your own analysis:\n\n<summary>\n";

impl Rules {
    /// The context's rules for the messages planning makes up from entries: omp's, else
    /// pi's (planning reads entries in camelCase, operator's renamed first).
    pub fn messages(&self) -> context::Rules {
        let profile = if self.profile == Profile::Omp {
            Profile::Omp
        } else {
            Profile::Pi
        };
        context::Rules::for_profile(profile)
    }

    /// The rules of `profile`. Document 003 says nothing of planning: `operator` plans as pi.
    /// Clauses: compaction.14, compaction.18.
    pub fn for_profile(profile: Profile) -> Rules {
        match profile {
            Profile::Pi | Profile::Operator => Rules {
                profile,
                custom_role: "custom",
                cut_rule: CutRule::AnyButToolResult,
                boundary: Boundary::PreviousFirstKept,
                usage_scaled: false,
                effective_reserve: false,
                short_summary: false,
                upsert_file_lists: false,
                sends_python_executions: false,
                names_full_output: true,
                summary_frames: (
                    BRANCH_FRAME,
                    ("The conversation history before this point was compacted into the following summary:\n\n<summary>\n", "\n</summary>"),
                ),
                branch_preamble: "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n",
            },
            Profile::Omp => Rules {
                profile,
                custom_role: "hookMessage",
                cut_rule: CutRule::AnyButToolResult,
                boundary: Boundary::AfterPreviousCompaction,
                usage_scaled: true,
                effective_reserve: true,
                short_summary: true,
                upsert_file_lists: true,
                sends_python_executions: true,
                names_full_output: false,
                summary_frames: (
                    (BRANCH_FRAME.0, "\n</summary>"),
                    (OMP_COMPACTION_CONTEXT, "\n</summary>"),
                ),
                branch_preamble: "The user explored a different conversation branch before returning here.\nSummary of that exploration:",
            },
        }
    }
}

/// A message entry's `message` as a JSON value (`null` when it has none); `None` for the
/// other entries.
pub fn message_of(entry: &Entry) -> Option<Value> {
    (entry.kind == EntryKind::Message).then(|| field(entry, "message").unwrap_or(Value::Null))
}

/// An entry's field `key` as a JSON value, when present.
pub fn field(entry: &Entry, key: &str) -> Option<Value> {
    entry
        .object()
        .get(key)
        .map(|v| parse_value(v.get()).unwrap_or(Value::Null))
}

/// A JSON object from key-value pairs, leaving out the `None` values (JavaScript drops
/// `undefined` fields when it writes JSON).
pub(crate) fn object<const N: usize>(fields: [(&str, Option<Value>); N]) -> Value {
    let mut map = Map::new();
    for (key, value) in fields {
        if let Some(value) = value {
            map.insert(key.to_owned(), value);
        }
    }
    Value::Object(map)
}

/// A string's length as JavaScript counts it: UTF-16 code units.
pub(crate) fn js_len(text: &str) -> i64 {
    i64::try_from(utf16_len(text)).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn message_of_reads_message_entries_only() {
        let entry = |text: &str| Entry::from_text(text.to_owned(), 1, Profile::Pi);
        let m = entry(r#"{"type":"message","id":"a","message":{"role":"user"}}"#);
        assert_eq!(message_of(&m), Some(json!({"role":"user"})));
        let bare = entry(r#"{"type":"message","id":"a"}"#);
        assert_eq!(message_of(&bare), Some(Value::Null));
        let label = entry(r#"{"type":"label","id":"a","message":{"role":"user"}}"#);
        assert_eq!(message_of(&label), None);
        assert_eq!(field(&m, "id"), Some(json!("a")));
    }

    #[test]
    fn omp_defaults_carry_its_strategy_and_thresholds() {
        let s = Settings::defaults(Profile::Omp);
        assert_eq!(s.strategy.as_deref(), Some("context-full"));
        assert_eq!((s.reserve_tokens, s.keep_recent_tokens), (16384, 20000));
        let s = Settings::with_overrides(
            Profile::Pi,
            &json!({"enabled": false, "keepRecentTokens": 5}),
        );
        assert!(!s.enabled);
        assert_eq!(s.keep_recent_tokens, 5);
    }

    #[test]
    fn js_len_counts_utf16_units() {
        assert_eq!(js_len("a😀"), 3);
    }
}
