//! `prepareCompaction`: document 004, "Compaction" step 1 (identify the messages to summarise,
//! extract file operations) and "File Operation Tracking" (read and modified files, carried
//! across compactions through the previous compaction's `details`).

use serde_json::{json, Value};

use super::cut::{find_cut_point, CutPoint};
use super::messages::{compaction_message, context_messages};
use super::tokens::{
    calculate_context_tokens, calculate_prompt_tokens, estimate_context_tokens, estimate_tokens,
    last_assistant_usage,
};
use super::{field, object, Boundary, Rules, Settings};
use crate::model::{Entry, EntryKind};
use crate::raw::is_truthy;

/// File operations taken from tool calls, each list in first-seen order without repeats
/// (JavaScript `Set`s).
/// Clauses: compaction.12.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileOps {
    /// Paths of `read` tool calls.
    pub read: Vec<String>,
    /// Paths of `write` tool calls.
    pub written: Vec<String>,
    /// Paths of `edit` tool calls (and a previous summary's modified files).
    pub edited: Vec<String>,
}

impl FileOps {
    /// `extractFileOpsFromMessage`: the string `path` argument of each `read`, `write` and
    /// `edit` tool call of an assistant message.
    pub fn add_message(&mut self, message: &Value) {
        if message.get("role").and_then(Value::as_str) != Some("assistant") {
            return;
        }
        for block in super::tokens::blocks(&message["content"]) {
            if block.get("type").and_then(Value::as_str) != Some("toolCall") {
                continue;
            }
            let Some(path) = block["arguments"]
                .get("path")
                .and_then(Value::as_str)
                .filter(|p| !p.is_empty())
            else {
                continue;
            };
            match block.get("name").and_then(Value::as_str) {
                Some("read") => add(&mut self.read, path),
                Some("write") => add(&mut self.written, path),
                Some("edit") => add(&mut self.edited, path),
                _ => {}
            }
        }
    }

    /// Carries an earlier summary's `details`: `readFiles` into read, `modifiedFiles` into
    /// edited, when each is an array (of strings; other items are skipped).
    pub fn add_details(&mut self, details: &Value) {
        for file in strings(&details["readFiles"]) {
            add(&mut self.read, file);
        }
        for file in strings(&details["modifiedFiles"]) {
            add(&mut self.edited, file);
        }
    }

    /// `computeFileLists`: `(readFiles, modifiedFiles)`: the files only read, and the files
    /// edited or written, each sorted (by UTF-16 code units, as JavaScript sorts).
    pub fn file_lists(&self) -> (Vec<String>, Vec<String>) {
        let mut modified: Vec<String> = Vec::new();
        for file in self.edited.iter().chain(&self.written) {
            add(&mut modified, file);
        }
        let mut read: Vec<String> = self
            .read
            .iter()
            .filter(|f| !modified.contains(f))
            .cloned()
            .collect();
        read.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
        modified.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
        (read, modified)
    }

    /// `{read, written, edited}` as JSON arrays.
    pub fn to_json(&self) -> Value {
        json!({"read": self.read, "written": self.written, "edited": self.edited})
    }
}

/// `CompactionPreparation`: what a compaction summarises and keeps.
#[derive(Debug, Clone, PartialEq)]
pub struct Preparation {
    /// The cut found for the path.
    pub cut: CutPoint,
    /// `firstKeptEntryId`.
    pub first_kept_entry_id: String,
    /// `messagesToSummarize`: from the boundary to the cut (to the turn start when split).
    pub messages_to_summarize: Vec<Value>,
    /// `turnPrefixMessages`: a split turn's messages before the cut.
    pub turn_prefix_messages: Vec<Value>,
    /// omp `recentMessages`: the messages kept (from the cut to the end).
    pub recent_messages: Option<Vec<Value>>,
    /// `tokensBefore`: pi the estimated context; omp the last usage's context tokens.
    pub tokens_before: i64,
    /// `previousSummary`: the previous compaction's summary, for the iterative update.
    pub previous_summary: Option<String>,
    /// `fileOps`.
    pub file_ops: FileOps,
}

impl Preparation {
    /// The preparation as the protocol writes it (camelCase, `fileOps` as arrays).
    pub fn to_json(&self) -> Value {
        object([
            (
                "firstKeptEntryId",
                Some(self.first_kept_entry_id.clone().into()),
            ),
            (
                "messagesToSummarize",
                Some(self.messages_to_summarize.clone().into()),
            ),
            (
                "turnPrefixMessages",
                Some(self.turn_prefix_messages.clone().into()),
            ),
            (
                "recentMessages",
                self.recent_messages.clone().map(Value::from),
            ),
            ("isSplitTurn", Some(self.cut.is_split_turn.into())),
            ("tokensBefore", Some(self.tokens_before.into())),
            (
                "previousSummary",
                self.previous_summary.clone().map(Value::from),
            ),
            ("fileOps", Some(self.file_ops.to_json())),
        ])
    }
}

/// `prepareCompaction(pathEntries, settings)`; `None` when the path ends in a compaction, when
/// the first kept entry has no id, and (omp) when there is nothing to summarise.
/// Clauses: compaction.9, compaction.11.
pub fn prepare_compaction(
    path: &[&Entry],
    settings: &Settings,
    rules: &Rules,
) -> Option<Preparation> {
    if path.last().is_some_and(|e| e.kind == EntryKind::Compaction) {
        return None;
    }
    let previous = path.iter().rposition(|e| e.kind == EntryKind::Compaction);
    let start = boundary_start(path, previous, rules);
    let (tokens_before, keep_recent) = if rules.usage_scaled {
        let usage = last_assistant_usage(path);
        let keep = scaled_keep_recent(
            path,
            start,
            usage.as_ref(),
            settings.keep_recent_tokens,
            rules,
        );
        (usage.as_ref().map_or(0, calculate_context_tokens), keep)
    } else {
        let messages = context_messages(path);
        (
            estimate_context_tokens(&messages, rules).tokens,
            settings.keep_recent_tokens,
        )
    };
    let cut = find_cut_point(path, start, path.len(), keep_recent, rules);
    let first_kept_entry_id = path.get(cut.first_kept_entry_index)?.id.clone()?;
    let history_end = if cut.is_split_turn {
        cut.turn_start_index.unwrap_or(0)
    } else {
        cut.first_kept_entry_index
    };
    let messages_to_summarize = compaction_messages(&path[start..history_end.max(start)], rules);
    let turn_prefix_messages = match cut.turn_start_index.filter(|_| cut.is_split_turn) {
        Some(turn) => compaction_messages(&path[turn..cut.first_kept_entry_index], rules),
        None => Vec::new(),
    };
    if rules.usage_scaled && messages_to_summarize.is_empty() && turn_prefix_messages.is_empty() {
        return None;
    }
    let recent_messages = rules
        .usage_scaled
        .then(|| compaction_messages(&path[cut.first_kept_entry_index..], rules));
    let previous_entry = previous.map(|i| path[i]);
    let mut file_ops = FileOps::default();
    if let Some(entry) = previous_entry.filter(|e| !carried_from_extension(e, rules)) {
        file_ops.add_details(&field(entry, "details").unwrap_or_default());
    }
    for message in messages_to_summarize.iter().chain(&turn_prefix_messages) {
        file_ops.add_message(message);
    }
    Some(Preparation {
        cut,
        first_kept_entry_id,
        messages_to_summarize,
        turn_prefix_messages,
        recent_messages,
        tokens_before,
        previous_summary: previous_entry.and_then(|e| e.object().str("summary")),
        file_ops,
    })
}

/// Where preparation starts: after the previous compaction (omp), or at its first kept entry
/// when that entry is on the path (pi).
/// (JavaScript's `===`: an id of any JSON type matches.)
/// Clauses: compaction.9.
fn boundary_start(path: &[&Entry], previous: Option<usize>, rules: &Rules) -> usize {
    let Some(at) = previous else { return 0 };
    if rules.boundary == Boundary::AfterPreviousCompaction {
        return at + 1;
    }
    let first_kept = field(path[at], "firstKeptEntryId");
    path.iter()
        .position(|e| first_kept.is_some() && field(e, "id") == first_kept)
        .unwrap_or(at + 1)
}

/// omp: when the last usage's prompt tokens exceed the estimate of the entries after the
/// boundary, `keepRecentTokens` shrinks by that ratio (at least 1).
/// Clauses: compaction.10.
#[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
fn scaled_keep_recent(
    path: &[&Entry],
    start: usize,
    usage: Option<&Value>,
    keep: i64,
    rules: &Rules,
) -> i64 {
    let Some(usage) = usage else { return keep };
    let estimated: i64 = path[start..]
        .iter()
        .filter_map(|e| compaction_message(e, rules))
        .map(|m| estimate_tokens(&m, rules))
        .sum();
    // With no estimate the ratio is infinite (or NaN), and `keep` stands.
    let ratio = calculate_prompt_tokens(usage) as f64 / estimated as f64;
    if ratio.is_finite() && ratio > 1.0 {
        ((keep as f64 / ratio).floor() as i64).max(1)
    } else {
        keep
    }
}

fn compaction_messages(entries: &[&Entry], rules: &Rules) -> Vec<Value> {
    entries
        .iter()
        .filter_map(|e| compaction_message(e, rules))
        .collect()
}

/// A compaction written by an extension (pi `fromHook`, omp `fromExtension`) carries no
/// file lists forward.
fn carried_from_extension(entry: &Entry, rules: &Rules) -> bool {
    let key = if rules.short_summary {
        "fromExtension"
    } else {
        "fromHook"
    };
    is_truthy(entry.object().get(key))
}

fn add(set: &mut Vec<String>, item: &str) {
    if !set.iter().any(|s| s == item) {
        set.push(item.to_owned());
    }
}

fn strings(value: &Value) -> impl Iterator<Item = &str> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Profile;
    use serde_json::json;

    fn entry(value: &Value) -> Entry {
        Entry::from_text(value.to_string(), 1, Profile::Pi)
    }

    fn read(path: &str, id: &str, parent: &str) -> Entry {
        entry(
            &json!({"type":"message","id":id,"parentId":parent,"message":{"role":"assistant","content":[{"type":"toolCall","id":"t","name":"read","arguments":{"path":path}}]}}),
        )
    }

    #[test]
    fn file_lists_put_read_only_files_apart_from_modified_ones() {
        let ops = FileOps {
            read: vec!["b".into(), "a".into(), "c".into()],
            edited: vec!["c".into()],
            written: vec!["d".into(), "c".into()],
        };
        assert_eq!(
            ops.file_lists(),
            (
                vec!["a".to_owned(), "b".to_owned()],
                vec!["c".to_owned(), "d".to_owned()]
            )
        );
    }

    #[test]
    fn prepare_summarises_before_the_cut_and_carries_files() {
        let path_values = [
            entry(
                &json!({"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"x".repeat(400)}}),
            ),
            read("/a.rs", "a1", "u1"),
            entry(
                &json!({"type":"message","id":"u2","parentId":"a1","message":{"role":"user","content":"y".repeat(400)}}),
            ),
        ];
        let path: Vec<&Entry> = path_values.iter().collect();
        let mut settings = Settings::defaults(Profile::Pi);
        settings.keep_recent_tokens = 50;
        let p =
            prepare_compaction(&path, &settings, &Rules::for_profile(Profile::Pi)).expect("a plan");
        assert_eq!(p.first_kept_entry_id, "u2");
        assert_eq!(p.messages_to_summarize.len(), 2);
        assert_eq!(p.file_ops.read, ["/a.rs"]);
        // "read" and {"path":"/a.rs"}: 20 characters, 5 tokens.
        assert_eq!(p.tokens_before, 100 + 5 + 100);
    }

    #[test]
    fn nothing_after_a_compaction_is_no_plan() {
        let c = entry(
            &json!({"type":"compaction","id":"c","summary":"s","firstKeptEntryId":"c","tokensBefore":1}),
        );
        assert!(prepare_compaction(
            &[&c],
            &Settings::defaults(Profile::Pi),
            &Rules::for_profile(Profile::Pi)
        )
        .is_none());
    }
}
