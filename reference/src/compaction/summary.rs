//! What the model is asked and what the compaction entry gets: document 004, "Compaction"
//! steps 2–5 (`generateSummary` with the initial or the update prompt, the turn prefix of a
//! split turn, the file lists appended to the summary, `CompactionResult`), and "File
//! Operation Tracking" (appended to the summary text so the model knows what files exist).
//!
//! The model itself stays outside: a [`ModelRequest`] records what would be sent, and the
//! caller's fixed stub summary stands for every answer.

use serde_json::{json, Value};

use super::conversation::serialize_conversation;
use super::prepare::Preparation;
use super::{object, Rules};

/// omp writes at most this many file names per list.
pub const FILE_LIST_LIMIT: usize = 20;

/// Which prompt a request uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptKind {
    /// The initial structured summary (Goal, Constraints, Progress, …).
    Summary,
    /// `UPDATE_SUMMARIZATION_PROMPT`: merge new messages into `<previous-summary>`.
    Update,
    /// The prefix of a split turn.
    TurnPrefix,
    /// omp: the short summary of the kept messages.
    ShortSummary,
    /// A branch summary (`generateBranchSummary`).
    Branch,
    /// omp: a branch summary whose custom instructions replace the prompt.
    Custom,
}

impl PromptKind {
    /// The protocol's name for the prompt.
    pub fn name(self) -> &'static str {
        match self {
            PromptKind::Summary => "summary",
            PromptKind::Update => "update",
            PromptKind::TurnPrefix => "turnPrefix",
            PromptKind::ShortSummary => "shortSummary",
            PromptKind::Branch => "branch",
            PromptKind::Custom => "custom",
        }
    }
}

/// One model call: its prompt, the serialised conversation, the previous summary and custom
/// instructions it carries, and its `maxTokens`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRequest {
    /// The prompt chosen.
    pub prompt: PromptKind,
    /// The conversation inside `<conversation>` tags.
    pub conversation: String,
    /// The text inside `<previous-summary>` tags, when there is one.
    pub previous_summary: Option<String>,
    /// The custom instructions (`Additional focus: …`), when given.
    pub custom_instructions: Option<String>,
    /// `maxTokens`.
    pub max_tokens: i64,
}

impl ModelRequest {
    /// `{prompt, conversation, previousSummary?, customInstructions?, maxTokens}`.
    pub fn to_json(&self) -> Value {
        object([
            ("prompt", Some(self.prompt.name().into())),
            ("conversation", Some(self.conversation.clone().into())),
            (
                "previousSummary",
                self.previous_summary.clone().map(Value::from),
            ),
            (
                "customInstructions",
                self.custom_instructions.clone().map(Value::from),
            ),
            ("maxTokens", Some(self.max_tokens.into())),
        ])
    }
}

/// `compact(preparation, model, …)` with a model that answers `stub` to every request: the
/// requests made, in order, and the `CompactionResult`.
/// Clauses: compaction.8, compaction.11, compaction.13, compaction.19.
pub fn compact(
    prep: &Preparation,
    reserve_tokens: i64,
    custom: Option<&str>,
    stub: &str,
    rules: &Rules,
) -> (Vec<ModelRequest>, Value) {
    let mut requests = Vec::new();
    let has_history = !prep.messages_to_summarize.is_empty();
    let history = |requests: &mut Vec<ModelRequest>| {
        let previous = prep.previous_summary.clone().filter(|s| !s.is_empty());
        requests.push(ModelRequest {
            prompt: if previous.is_some() {
                PromptKind::Update
            } else {
                PromptKind::Summary
            },
            conversation: serialize_conversation(&prep.messages_to_summarize, rules),
            previous_summary: previous,
            custom_instructions: custom.filter(|c| !c.is_empty()).map(str::to_owned),
            max_tokens: fraction(0.8, reserve_tokens),
        });
    };
    let mut summary = if prep.cut.is_split_turn && !prep.turn_prefix_messages.is_empty() {
        if has_history {
            history(&mut requests);
        }
        requests.push(ModelRequest {
            prompt: PromptKind::TurnPrefix,
            conversation: serialize_conversation(&prep.turn_prefix_messages, rules),
            previous_summary: None,
            custom_instructions: None,
            max_tokens: fraction(0.5, reserve_tokens),
        });
        let head = if has_history {
            stub
        } else {
            "No prior history."
        };
        format!("{head}\n\n---\n\n**Turn Context (split turn):**\n\n{stub}")
    } else if has_history || !rules.short_summary {
        history(&mut requests);
        stub.to_owned()
    } else {
        prep.previous_summary
            .clone()
            .unwrap_or_else(|| "No prior history.".to_owned())
    };
    if rules.short_summary {
        requests.push(ModelRequest {
            prompt: PromptKind::ShortSummary,
            conversation: serialize_conversation(
                prep.recent_messages.as_deref().unwrap_or_default(),
                rules,
            ),
            previous_summary: Some(summary.clone()).filter(|s| !s.is_empty()),
            custom_instructions: None,
            max_tokens: fraction(0.2, reserve_tokens).min(512),
        });
    }
    let (read, modified) = prep.file_ops.file_lists();
    summary = append_file_lists(&summary, &read, &modified, rules);
    let result = object([
        ("summary", Some(summary.into())),
        ("shortSummary", rules.short_summary.then(|| stub.into())),
        (
            "firstKeptEntryId",
            Some(prep.first_kept_entry_id.clone().into()),
        ),
        ("tokensBefore", Some(prep.tokens_before.into())),
        (
            "details",
            Some(json!({"readFiles": read, "modifiedFiles": modified})),
        ),
    ]);
    (requests, result)
}

/// `floor(share × reserveTokens)`, computed in doubles as JavaScript does.
#[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
pub fn fraction(share: f64, reserve_tokens: i64) -> i64 {
    (share * reserve_tokens as f64).floor() as i64
}

/// The summary with its file lists: pi appends `formatFileOperations`; omp replaces any
/// lists already in it (`upsertFileOperations`).
/// Clauses: compaction.12.
pub fn append_file_lists(
    summary: &str,
    read: &[String],
    modified: &[String],
    rules: &Rules,
) -> String {
    if !rules.upsert_file_lists {
        return format!("{summary}{}", pi_file_operations(read, modified));
    }
    let base = strip_tag(&strip_tag(summary, "read-files"), "modified-files");
    let base = base.trim_end();
    let lists = omp_file_operations(read, modified);
    match (base.is_empty(), lists.is_empty()) {
        (_, true) => base.to_owned(),
        (true, false) => lists,
        (false, false) => format!("{base}\n\n{lists}"),
    }
}

/// pi `formatFileOperations`: `\n\n<read-files>\n…\n</read-files>\n\n<modified-files>…`, or
/// nothing.
pub fn pi_file_operations(read: &[String], modified: &[String]) -> String {
    let sections: Vec<String> = [("read-files", read), ("modified-files", modified)]
        .iter()
        .filter(|(_, files)| !files.is_empty())
        .map(|(tag, files)| format!("<{tag}>\n{}\n</{tag}>", files.join("\n")))
        .collect();
    if sections.is_empty() {
        return String::new();
    }
    format!("\n\n{}", sections.join("\n\n"))
}

/// omp's `file-operations.md` template: each non-empty list in its tag, at most
/// [`FILE_LIST_LIMIT`] names then `… (N more files omitted)`, the sections written one after
/// the other. Its `{{join files "\n"}}` receives the two characters `\` `n`, so the names are
/// joined by a backslash and an `n`, not by a line break (omp 13.19.0 as it ships).
/// Clauses: compaction.12.
pub fn omp_file_operations(read: &[String], modified: &[String]) -> String {
    let section = |tag: &str, files: &[String]| {
        if files.is_empty() {
            return String::new();
        }
        let mut names: Vec<String> = files.iter().take(FILE_LIST_LIMIT).cloned().collect();
        if files.len() > FILE_LIST_LIMIT {
            names.push(format!(
                "… ({} more files omitted)",
                files.len() - FILE_LIST_LIMIT
            ));
        }
        format!("<{tag}>\n{}\n</{tag}>", names.join("\\n"))
    };
    format!(
        "{}{}",
        section("read-files", read),
        section("modified-files", modified)
    )
}

/// Removes every `<tag>…</tag>` and the white space after it (the regex
/// `<tag>[\s\S]*?</tag>\s*`).
fn strip_tag(text: &str, tag: &str) -> String {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find(&open) {
        let Some(len) = rest[start + open.len()..].find(&close) else {
            break;
        };
        out.push_str(&rest[..start]);
        rest = rest[start + open.len() + len + close.len()..].trim_start();
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Profile;

    #[test]
    fn file_lists_per_profile() {
        let (r, m) = (vec!["a".to_owned(), "b".to_owned()], vec!["c".to_owned()]);
        let pi = Rules::for_profile(Profile::Pi);
        let omp = Rules::for_profile(Profile::Omp);
        assert_eq!(
            append_file_lists("S", &r, &m, &pi),
            "S\n\n<read-files>\na\nb\n</read-files>\n\n<modified-files>\nc\n</modified-files>"
        );
        assert_eq!(
            append_file_lists("S\n<read-files>\nq\n</read-files>\n\nT", &r[..1], &[], &omp),
            "S\nT\n\n<read-files>\na\n</read-files>"
        );
        assert_eq!(append_file_lists("S", &[], &[], &omp), "S");
    }
}
