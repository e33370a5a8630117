//! The reference's answers to `compaction` and `branch_summary` (`PROTOCOL.md`, "Compaction
//! planning"; document 004, "Compaction").
//!
//! Both load the session as `load` does, take its entries as planning reads them
//! ([`planning_tree`]), and plan with `session_reference::compaction`; the model is a stub
//! that answers `stubSummary` to every request.

use std::path::Path;

use serde_json::{json, Value};
use session_reference::branch_summary::{collect_entries, generate_branch_summary};
use session_reference::compaction::messages::context_messages;
use session_reference::compaction::prune::{prune_tool_outputs, PruneConfig};
use session_reference::compaction::summary::{compact, ModelRequest};
use session_reference::compaction::tokens::{calculate_context_tokens, last_assistant_usage};
use session_reference::compaction::{
    estimate_context_tokens, find_cut_point, prepare_compaction, should_compact, CutPoint, Rules,
    Settings,
};
use session_reference::model::{Entry, EntryKind, Profile};
use session_reference::session::{SessionError, SessionManager};
use session_reference::tree::Tree;

use super::options;

/// A loaded session: its entries as planning reads them, and its leaf.
struct Loaded {
    tree: Tree,
    leaf: Option<String>,
}

fn load(dir: &Path, args: &Value, profile: Profile) -> Result<Loaded, SessionError> {
    let file = args["file"].as_str().unwrap_or("session.jsonl");
    let sm = SessionManager::open(&super::inside(dir, file)?, options(dir, profile))?;
    super::shallow(&sm)?;
    Ok(Loaded {
        tree: planning_tree(&sm),
        leaf: sm.leaf_id().map(str::to_owned),
    })
}

/// The session's entries as compaction planning reads them, in a tree: each as the JSON
/// object the implementation holds (omp's blob references resolved, `JSON.parse`'s values),
/// its keys and types in camelCase (003's renamed by [`session_reference::model::Keys`]),
/// read as a camelCase dialect's entry.
pub fn planning_tree(sm: &SessionManager) -> Tree {
    let profile = sm.profile();
    let keys = profile.keys();
    let camel = if profile == Profile::Omp {
        Profile::Omp
    } else {
        Profile::Pi
    };
    let entries = sm.entries().iter().map(|e| {
        let value = keys.camel_entry(sm.resolved(e));
        Entry::from_text(value.to_string(), e.ordinal, camel)
    });
    Tree::new(entries.collect())
}

/// `getBranch(id)`: the path to `id`, empty when `id` is no entry (or `None`).
fn branch<'a>(tree: &'a Tree, id: Option<&str>) -> Vec<&'a Entry> {
    id.map(|id| tree.branch_path(Some(id))).unwrap_or_default()
}

/// `compaction`: `{file, leafId?, settings?, contextWindow, stubSummary, customInstructions?}`
/// → `{contextTokens, shouldCompact, cutPoint, preparation, request, result}` (omp also
/// `pruning`).
pub fn compaction_op(dir: &Path, args: &Value, profile: Profile) -> Result<Value, SessionError> {
    compaction_under(dir, args, &Rules::for_profile(profile))
}

/// `compaction` planned under `rules`: a profile's ([`Rules::for_profile`]), or a variant of
/// them (the corpus's tests plan each case under 004's strict cut rule too, to find the
/// cases tagged `cut-at-other-role`).
pub fn compaction_under(dir: &Path, args: &Value, rules: &Rules) -> Result<Value, SessionError> {
    let loaded = load(dir, args, rules.profile)?;
    let leaf = match args.get("leafId") {
        None => loaded.leaf.clone(),
        Some(v) => v.as_str().map(str::to_owned),
    };
    Ok(plan(&loaded.tree, leaf.as_deref(), args, rules))
}

/// The `compaction` output for `tree` ([`planning_tree`]) planned under `rules` at `leaf`
/// (`None` or unknown: an empty path), with the request's `settings`, `contextWindow`,
/// `stubSummary` and `customInstructions`.
pub fn plan(tree: &Tree, leaf: Option<&str>, args: &Value, rules: &Rules) -> Value {
    let path = branch(tree, leaf);
    let settings = Settings::with_overrides(rules.profile, &args["settings"]);
    let window = args["contextWindow"].as_i64().unwrap_or(0);
    let stub = args["stubSummary"].as_str().unwrap_or("");
    let custom = args["customInstructions"].as_str();

    let mut output = serde_json::Map::new();
    let context_tokens = if rules.usage_scaled {
        let pruning = prune_tool_outputs(&path, &PruneConfig::default(), rules);
        output.insert(
            "pruning".into(),
            json!({"prunedCount": pruning.pruned_count, "tokensSaved": pruning.tokens_saved}),
        );
        let usage = last_assistant_usage(&path).map_or(0, |u| calculate_context_tokens(&u));
        usage.saturating_sub(pruning.tokens_saved).max(0)
    } else {
        estimate_context_tokens(&context_messages(&path), rules).tokens
    };
    let start = path
        .iter()
        .rposition(|e| e.kind == EntryKind::Compaction)
        .map_or(0, |i| i + 1);
    let cut = find_cut_point(&path, start, path.len(), settings.keep_recent_tokens, rules);
    let preparation = prepare_compaction(&path, &settings, rules);
    let (requests, result) = match &preparation {
        Some(prep) => {
            let (requests, result) = compact(prep, settings.reserve_tokens, custom, stub, rules);
            (requests.iter().map(ModelRequest::to_json).collect(), result)
        }
        None => (Vec::new(), Value::Null),
    };
    output.insert("contextTokens".into(), context_tokens.into());
    output.insert(
        "shouldCompact".into(),
        should_compact(context_tokens, window, &settings, rules).into(),
    );
    output.insert("cutPoint".into(), cut_point_json(&cut));
    output.insert(
        "preparation".into(),
        preparation.map_or(Value::Null, |p| p.to_json()),
    );
    output.insert("request".into(), Value::Array(requests));
    output.insert("result".into(), result);
    Value::Object(output)
}

/// `CutPointResult` as JavaScript writes it (`turnStartIndex` −1 for none).
fn cut_point_json(cut: &CutPoint) -> Value {
    json!({
        "firstKeptEntryIndex": cut.first_kept_entry_index,
        "turnStartIndex": cut.turn_start_index.map_or(-1, |i| i64::try_from(i).unwrap_or(-1)),
        "isSplitTurn": cut.is_split_turn,
    })
}

/// `branch_summary`: `{file, oldLeafId?, targetId, contextWindow?, reserveTokens?,
/// customInstructions?, stubSummary}` → `{entries, commonAncestorId, preparation, request,
/// result}`.
pub fn branch_summary_op(
    dir: &Path,
    args: &Value,
    profile: Profile,
) -> Result<Value, SessionError> {
    let loaded = load(dir, args, profile)?;
    let old_leaf = match args.get("oldLeafId") {
        None => loaded.leaf.clone(),
        Some(v) => v.as_str().map(str::to_owned),
    };
    let target = args["targetId"].as_str().unwrap_or("");
    let rules = Rules::for_profile(profile);
    let collected = collect_entries(&loaded.tree, old_leaf.as_deref(), target);
    let (prep, request, result) = generate_branch_summary(
        &collected.entries,
        args["contextWindow"].as_i64().unwrap_or(0),
        args["reserveTokens"].as_i64().unwrap_or(16384),
        args["customInstructions"].as_str(),
        args["stubSummary"].as_str().unwrap_or(""),
        &rules,
    );
    let ids: Vec<Value> = collected
        .entries
        .iter()
        .map(|e| e.id.clone().map_or(Value::Null, Value::from))
        .collect();
    Ok(json!({
        "entries": ids,
        "commonAncestorId": collected.common_ancestor_id,
        "preparation": prep.to_json(),
        "request": request.iter().map(ModelRequest::to_json).collect::<Vec<_>>(),
        "result": result,
    }))
}
