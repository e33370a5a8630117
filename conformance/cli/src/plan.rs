//! `compaction`: a session's compaction plan, for people (document 004, "Compaction").
//!
//! What would be summarised, what kept, where the cut falls and which files the summary would
//! list, planned by the reference as the `compaction` operation plans it, with a placeholder
//! for the model's summary. The file is not changed.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{json, Value};
use session_reference::compaction::Rules;
use session_reference::model::{Entry, Profile};
use session_reference::tree::Tree;

use crate::inspect::{self, InspectError};
use session_conformance::execute::compaction::{plan, planning_tree};
use session_conformance::guard::printable;

/// What the command plans with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanOptions {
    /// The model's context window.
    pub context_window: i64,
    /// Plan at this entry instead of the leaf.
    pub leaf: Option<String>,
    /// `keepRecentTokens`, when not the profile's default.
    pub keep_recent_tokens: Option<i64>,
    /// `reserveTokens`, when not the profile's default.
    pub reserve_tokens: Option<i64>,
}

/// The placeholder the plan uses for the model's summary.
pub const SUMMARY_PLACEHOLDER: &str = "(summary)";

/// The plan as the `compaction` operation's JSON output.
pub fn compaction_json(
    file: &Path,
    profile: impl Into<Option<Profile>>,
    options: &PlanOptions,
) -> Result<Value, InspectError> {
    Ok(planned(file, profile, options)?.plan)
}

/// The plan as text: the context's size against the threshold, the cut, what is summarised
/// and kept, the file lists and the model requests.
pub fn compaction_text(
    file: &Path,
    profile: impl Into<Option<Profile>>,
    options: &PlanOptions,
) -> Result<String, InspectError> {
    let Planned {
        tree,
        leaf,
        profile,
        plan: out,
    } = planned(file, profile, options)?;
    let path = leaf
        .as_deref()
        .map(|l| tree.branch_path(Some(l)))
        .unwrap_or_default();
    let mut text = String::new();
    let _ = writeln!(
        text,
        "{} ({}), {} entries on the path",
        printable(&file.display().to_string()),
        profile.name(),
        path.len()
    );
    let verdict = if out["shouldCompact"] == true {
        "compaction due"
    } else {
        "no compaction needed"
    };
    let _ = writeln!(
        text,
        "context: {} tokens, window {}: {verdict}",
        out["contextTokens"], options.context_window
    );
    let Some(prep) = out["preparation"].as_object() else {
        text.push_str("nothing to compact\n");
        return Ok(text);
    };
    let cut = &out["cutPoint"];
    let at = cut["firstKeptEntryIndex"]
        .as_u64()
        .and_then(|i| usize::try_from(i).ok())
        .unwrap_or(0);
    let _ = writeln!(text, "keep from: {}", describe(path.get(at).copied(), at));
    if prep["isSplitTurn"] == true {
        let turn = cut["turnStartIndex"]
            .as_u64()
            .and_then(|i| usize::try_from(i).ok())
            .unwrap_or(0);
        let _ = writeln!(
            text,
            "split turn, started at {}",
            describe(path.get(turn).copied(), turn)
        );
    }
    let count = |key: &str| prep.get(key).and_then(Value::as_array).map_or(0, Vec::len);
    let _ = writeln!(text, "summarise: {} messages", count("messagesToSummarize"));
    if prep["isSplitTurn"] == true {
        let _ = writeln!(
            text,
            "turn prefix: {} messages",
            count("turnPrefixMessages")
        );
    }
    let _ = writeln!(text, "keep: {} entries", path.len().saturating_sub(at));
    let _ = writeln!(text, "tokens before: {}", prep["tokensBefore"]);
    if let Some(previous) = prep.get("previousSummary").and_then(Value::as_str) {
        let _ = writeln!(
            text,
            "previous summary: {} characters (update prompt)",
            previous.chars().count()
        );
    }
    let details = &out["result"]["details"];
    write_files(&mut text, "read files", &details["readFiles"]);
    write_files(&mut text, "modified files", &details["modifiedFiles"]);
    for request in out["request"].as_array().into_iter().flatten() {
        let conversation = request["conversation"].as_str().unwrap_or("");
        let _ = writeln!(
            text,
            "request: {} prompt, {} characters of conversation, maxTokens {}",
            printable(request["prompt"].as_str().unwrap_or("?")),
            conversation.chars().count(),
            request["maxTokens"]
        );
    }
    Ok(text)
}

fn args(options: &PlanOptions) -> Value {
    let mut settings = serde_json::Map::new();
    if let Some(keep) = options.keep_recent_tokens {
        settings.insert("keepRecentTokens".into(), keep.into());
    }
    if let Some(reserve) = options.reserve_tokens {
        settings.insert("reserveTokens".into(), reserve.into());
    }
    json!({"settings": settings, "contextWindow": options.context_window, "stubSummary": SUMMARY_PLACEHOLDER})
}

/// A file planned: its entries as planning reads them, the leaf planned at (the option's,
/// else the session's), the profile it was read in, and the `compaction` output.
struct Planned {
    tree: Tree,
    leaf: Option<String>,
    profile: Profile,
    plan: Value,
}

fn planned(
    file: &Path,
    profile: impl Into<Option<Profile>>,
    options: &PlanOptions,
) -> Result<Planned, InspectError> {
    let (tree, leaf, profile) = read(file, profile)?;
    let leaf = options.leaf.clone().or(leaf);
    let plan = plan(
        &tree,
        leaf.as_deref(),
        &args(options),
        &Rules::for_profile(profile),
    );
    Ok(Planned {
        tree,
        leaf,
        profile,
        plan,
    })
}

/// The file's entries as planning reads them, its leaf, and the profile it was read in.
fn read(
    file: &Path,
    profile: impl Into<Option<Profile>>,
) -> Result<(Tree, Option<String>, Profile), InspectError> {
    let sm = inspect::open(file, profile)?;
    Ok((
        planning_tree(&sm),
        sm.leaf_id().map(str::to_owned),
        sm.profile(),
    ))
}

/// `#4 e0000005 (message, assistant)`.
fn describe(entry: Option<&Entry>, index: usize) -> String {
    let Some(entry) = entry else {
        return format!("#{index}");
    };
    let kind = match entry.role().filter(|r| !r.is_empty()) {
        Some(role) => format!("message, {}", printable(&role)),
        None => printable(&entry.type_name()).into_owned(),
    };
    format!(
        "#{index} {} ({kind})",
        printable(entry.id.as_deref().unwrap_or("?"))
    )
}

fn write_files(text: &mut String, label: &str, files: &Value) {
    let names: Vec<std::borrow::Cow<'_, str>> = files
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(printable)
        .collect();
    if !names.is_empty() {
        let _ = writeln!(text, "{label}: {}", names.join(", "));
    }
}
