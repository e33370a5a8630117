//! The protocol's operations (PROTOCOL.md "Operations"), profile `pi`, on pi_agent_rust's
//! `session::Session` (src/session.rs of the crate, 0.8.0; line numbers below are that file's).
//!
//! The crate's session layer differs from pi-mono's SessionManager in ways that shape this file:
//! - appends only change memory and queue an autosave mutation; nothing is written before
//!   `save()`/`flush_autosave()` (session.rs 4494, 4510). The adapter flushes where the protocol
//!   says so: a `flush` step, `reopen`, the end of `apply`, `persist`;
//! - `Session::open` (3773) refuses what pi-mono recovers: a missing file, an empty file, a header
//!   that does not parse or whose version is not 3 (no migration of v1/v2 files), duplicate ids,
//!   parent cycles. Lines that do not parse as one of its typed entries are skipped;
//! - it has no `buildSessionContext(entries, leafId)`, no `getTree`, no label lookup, no
//!   `createBranchedSession`, no `forkFrom`, no `newSession`: see each operation below.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use pi::model::{CustomMessage, Message, UserContent};
use pi::session::{AutosaveFlushTrigger, Session, SessionEntry, SessionMessage};
use serde_json::{Map, Value, json};

use crate::Out;
use crate::util::{
    Failure, OpError, leaf_value, now_millis, open_failure, opt_bool, opt_string, opt_value,
    req_string, req_u64, show, substitute_results, to_json,
};

/// One request's environment.
pub struct Ctx {
    /// The request's `case`, echoed in ack lines.
    pub case: Value,
    /// The case directory (the process's working directory for this request).
    pub dir: PathBuf,
    /// `<dir>/sessions`: the session directory new sessions are created under.
    pub sessions_dir: PathBuf,
}

/// Runs one operation; `OpError::Unsupported` for what this adapter does not serve.
pub async fn run(
    op: &str,
    ctx: &Ctx,
    args: &Map<String, Value>,
    out: &Out,
) -> Result<Value, OpError> {
    match op {
        "load" => op_load(ctx, args).await,
        "context" => op_context(ctx, args).await,
        "tree" => op_tree(ctx, args).await,
        "apply" => op_apply(ctx, args, out).await,
        "persist" => op_persist(ctx, args).await,
        _ => Err(OpError::Unsupported),
    }
}

// ---------------------------------------------------------------------------
// Opening a session the way the port's CLI resumes one
// ---------------------------------------------------------------------------

/// `pi --session <path> --session-dir <dir>/sessions`: the port's `Session::new` (session.rs
/// 3451-3491) with `cli.session = path`, `cli.session_dir = <dir>/sessions`:
/// - an existing path: `Session::open(path)` (3773), then `session_dir` set to the session dir;
/// - a missing path: `Session::create_with_dir(session_dir)` (3737) with `path` set to it (a new
///   session that will be written there), its parent folder created.
///
/// `Session::new` itself needs a clap `Cli` and a `Config`; these are the public calls it makes.
async fn open_path(ctx: &Ctx, path: &Path) -> Result<Session, Failure> {
    let exists = path
        .try_exists()
        .map_err(|err| Failure::exception(format!("cannot open {}: {err}", path.display())))?;
    if !exists {
        let mut session = Session::create_with_dir(Some(ctx.sessions_dir.clone()));
        if let Some(parent) = path.parent() {
            if !parent.as_os_str().is_empty() && !parent.exists() {
                let _ = std::fs::create_dir_all(parent);
            }
        }
        session.path = Some(path.to_path_buf());
        return Ok(session);
    }
    let text = path.to_string_lossy().into_owned();
    // `Session::open` (3773) is `open_with_diagnostics` with the diagnostics logged as warnings;
    // the adapter logs them on stderr (and to $PI_AGENT_RUST_ADAPTER_LOG when set), which is how
    // the divergence list's reasons were checked.
    let (mut session, diagnostics) = Session::open_with_diagnostics(&text)
        .await
        .map_err(|err| open_failure(&err))?;
    for skipped in &diagnostics.skipped_entries {
        log_diagnostic(
            ctx,
            &format!(
                "open: skipped line {}: {}",
                skipped.line_number, skipped.error
            ),
        );
    }
    for orphan in &diagnostics.orphaned_parent_links {
        log_diagnostic(
            ctx,
            &format!(
                "open: entry {} references missing parent {}",
                orphan.entry_id, orphan.missing_parent_id
            ),
        );
    }
    session.session_dir = Some(ctx.sessions_dir.clone());
    Ok(session)
}

/// A line of the crate's open diagnostics or a step's error, on stderr and in `$PI_AGENT_RUST_ADAPTER_LOG`.
fn log_diagnostic(ctx: &Ctx, warning: &str) {
    let line = format!("case {}: {warning}", ctx.case);
    eprintln!("pi_agent_rust adapter: {line}");
    if let Some(log) = std::env::var_os("PI_AGENT_RUST_ADAPTER_LOG") {
        use std::io::Write as _;
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
        {
            let _ = writeln!(file, "{line}");
        }
    }
}

async fn open_file_arg(ctx: &Ctx, args: &Map<String, Value>, op: &str) -> Result<Session, Failure> {
    let file = req_string(args, op, "file")?;
    open_path(ctx, &ctx.dir.join(file)).await
}

// ---------------------------------------------------------------------------
// load, context, tree
// ---------------------------------------------------------------------------

/// `load`: `header`, `entries` (each serialised as the crate writes it) and `leaf_id()`.
async fn op_load(ctx: &Ctx, args: &Map<String, Value>) -> Result<Value, OpError> {
    let session = open_file_arg(ctx, args, "load").await?;
    let mut output = Map::new();
    output.insert("header".to_string(), to_json!(&session.header)?);
    output.insert("entries".to_string(), entries_json(session.entries.iter())?);
    output.insert("leafId".to_string(), leaf_value(session.leaf_id()));
    Ok(Value::Object(output))
}

/// `context`: the crate's context functions take the session at its own leaf
/// (`to_messages_for_current_path`, 6075), so the leaf is moved first (PROTOCOL.md "No two-argument
/// buildSessionContext"): a string with `navigate_to` (5847; an unknown id is `not_found`, the
/// crate having no fallback to the last entry), `null` with `reset_leaf` (6002).
async fn op_context(ctx: &Ctx, args: &Map<String, Value>) -> Result<Value, OpError> {
    let mut session = open_file_arg(ctx, args, "context").await?;
    match args.get("leafId") {
        None => {}
        Some(Value::Null) => session.reset_leaf(),
        Some(Value::String(id)) => {
            if !session.navigate_to(id) {
                return Err(Failure::not_found(id).into());
            }
        }
        Some(other) => {
            return Err(Failure::exception(format!(
                "context: leafId must be a string or null, got {}",
                show(Some(other))
            ))
            .into());
        }
    }
    Ok(context_value(&session)?)
}

/// `tree`: see `tree_nodes`.
async fn op_tree(ctx: &Ctx, args: &Map<String, Value>) -> Result<Value, OpError> {
    let session = open_file_arg(ctx, args, "tree").await?;
    Ok(json!({ "nodes": tree_nodes(&session) }))
}

/// The context at the session's leaf in pi's shape `{messages, thinkingLevel, model}`, from the
/// crate's three current-path functions: `to_messages_for_current_path` (6075: the model messages
/// it sends a provider, compaction and branch summaries as user messages), and
/// `effective_thinking_level_for_current_path` (5105; `"off"` when none, as its
/// `ExtensionSession::get_state` reports, 2343) and `effective_model_for_current_path` (5083).
fn context_value(session: &Session) -> Result<Value, Failure> {
    let mut messages = Vec::new();
    for message in session.to_messages_for_current_path() {
        messages.push(to_json!(&message)?);
    }
    let thinking_level = session
        .effective_thinking_level_for_current_path()
        .unwrap_or_else(|| "off".to_string());
    let model = match session.effective_model_for_current_path() {
        Some((provider, model_id)) => json!({ "provider": provider, "modelId": model_id }),
        None => Value::Null,
    };
    Ok(json!({ "messages": messages, "thinkingLevel": thinking_level, "model": model }))
}

/// The `type` the crate writes for an entry (`#[serde(tag = "type", rename_all = "snake_case")]`
/// on `SessionEntry`, 6763).
const fn entry_type(entry: &SessionEntry) -> &'static str {
    match entry {
        SessionEntry::Message(_) => "message",
        SessionEntry::ModelChange(_) => "model_change",
        SessionEntry::ThinkingLevelChange(_) => "thinking_level_change",
        SessionEntry::Compaction(_) => "compaction",
        SessionEntry::BranchSummary(_) => "branch_summary",
        SessionEntry::Label(_) => "label",
        SessionEntry::SessionInfo(_) => "session_info",
        SessionEntry::Custom(_) => "custom",
    }
}

/// Each entry's current label. The crate has no public label lookup; this replays the label
/// entries in file order as its tree view does (src/interactive/tree.rs 793-799: `Some` sets the
/// label, `None` clears it; an empty string is a label).
fn current_labels(entries: &[SessionEntry]) -> HashMap<String, String> {
    let mut labels = HashMap::new();
    for entry in entries {
        if let SessionEntry::Label(label_entry) = entry {
            match &label_entry.label {
                Some(label) => {
                    labels.insert(label_entry.target_id.clone(), label.clone());
                }
                None => {
                    labels.remove(&label_entry.target_id);
                }
            }
        }
    }
    labels
}

/// The tree, flattened in pre-order (PROTOCOL.md `tree`). The crate has no `getTree`; its own
/// tree view (`/tree`, src/interactive/tree.rs `build_tree_selector_rows`, 771-833) groups the
/// entries by `parent_id` in file order and then sorts every child list, the roots included, by
/// the entry's `timestamp` *string* (`ta.cmp(tb)`, 804-815: a stable sort, so equal strings keep
/// file order; no date parsing). The nodes follow that order. Every entry is a node (PROTOCOL.md
/// "No getTree"): an entry whose parent does not exist (the view leaves it out, under a parent it
/// never reaches) is taken as a root, sorted among the roots the same way.
/// The crate refuses duplicate ids and parent cycles at open; `seen` guards the walk regardless.
fn tree_nodes(session: &Session) -> Vec<Value> {
    let labels = current_labels(&session.entries);
    let ids: HashSet<&str> = session
        .entries
        .iter()
        .filter_map(|entry| entry.base_id().map(String::as_str))
        .collect();
    let mut roots: Vec<&SessionEntry> = Vec::new();
    let mut children: HashMap<&str, Vec<&SessionEntry>> = HashMap::new();
    for entry in &session.entries {
        let Some(id) = entry.base_id() else {
            continue;
        };
        match entry.base().parent_id.as_deref() {
            Some(parent) if parent != id.as_str() && ids.contains(parent) => {
                children.entry(parent).or_default().push(entry);
            }
            _ => roots.push(entry),
        }
    }

    // tree.rs 804-815: children (and roots) by timestamp string, stable.
    let by_timestamp = |a: &&SessionEntry, b: &&SessionEntry| {
        a.base().timestamp.as_str().cmp(b.base().timestamp.as_str())
    };
    roots.sort_by(by_timestamp);
    for list in children.values_mut() {
        list.sort_by(by_timestamp);
    }

    let mut nodes = Vec::with_capacity(session.entries.len());
    let mut seen: HashSet<&str> = HashSet::new();
    let mut stack: Vec<&SessionEntry> = roots.into_iter().rev().collect();
    while let Some(entry) = stack.pop() {
        let Some(id) = entry.base_id() else {
            continue;
        };
        if !seen.insert(id.as_str()) {
            continue;
        }
        let kids: &[&SessionEntry] = match children.get(id.as_str()) {
            Some(list) => list.as_slice(),
            None => &[],
        };
        let child_ids: Vec<Value> = kids
            .iter()
            .filter_map(|kid| kid.base_id())
            .map(|kid_id| Value::String(kid_id.clone()))
            .collect();
        let parent_id = match &entry.base().parent_id {
            Some(parent) => Value::String(parent.clone()),
            None => Value::Null,
        };
        let label = match labels.get(id.as_str()) {
            Some(label) => Value::String(label.clone()),
            None => Value::Null,
        };
        nodes.push(json!({
            "id": id,
            "parentId": parent_id,
            "type": entry_type(entry),
            "label": label,
            "children": child_ids,
        }));
        for kid in kids.iter().rev() {
            stack.push(*kid);
        }
    }
    nodes
}

fn entries_json<'a>(entries: impl Iterator<Item = &'a SessionEntry>) -> Result<Value, Failure> {
    let mut list = Vec::new();
    for entry in entries {
        list.push(to_json!(entry)?);
    }
    Ok(Value::Array(list))
}

/// `getBranch(fromId?)`: `get_path_to_entry` (5773) from `fromId`, else from the leaf (none: `[]`).
fn branch_json(session: &Session, from: Option<&str>) -> Result<Value, Failure> {
    let Some(start) = from.or(session.leaf_id()) else {
        return Ok(Value::Array(Vec::new()));
    };
    let path = session.get_path_to_entry(start);
    let mut list = Vec::with_capacity(path.len());
    for id in &path {
        if let Some(entry) = session.get_entry(id) {
            list.push(to_json!(entry)?);
        }
    }
    Ok(Value::Array(list))
}

// ---------------------------------------------------------------------------
// apply
// ---------------------------------------------------------------------------

/// The session an `apply` runs on.
struct Applied {
    session: Session,
    /// `Session::in_memory()` (3704): never saved (its `save` would write under the user's
    /// default session folder, so the adapter never calls it, as the port's `--no-session` never does).
    in_memory: bool,
}

/// The calls pi's SessionManager has and the crate has no counterpart for (PROTOCOL.md
/// "A call the implementation has no counterpart for"):
/// - `createBranchedSession(leafId)`: the crate's fork (`plan_fork_from_user_message`, 5657, with
///   `init_from_fork_plan`, 5878) forks at a *user message* and keeps the path to its parent only;
///   there is no call that writes the path to an arbitrary entry as a new session file;
/// - `newSession`: a `Session` cannot start over in place; the crate makes a new `Session`, whose
///   file name is only chosen at its first save, so there is no new file to return;
/// - the omp calls (`fork`, `setSessionName`, `rewriteEntries`, `moveTo`, `appendTtsrInjection`,
///   `appendSessionInit`, `appendModeChange`), which pi has neither.
const NO_COUNTERPART: [&str; 9] = [
    "createBranchedSession",
    "newSession",
    "fork",
    "setSessionName",
    "rewriteEntries",
    "moveTo",
    "appendTtsrInjection",
    "appendSessionInit",
    "appendModeChange",
];

/// `apply`: start (`open` → `open_path`; `open: null` → `Session::create_with_dir(<dir>/sessions)`
/// or, with `inMemory`, `Session::in_memory()`, the header's `cwd` set to `args.cwd`), run the
/// steps, then flush with `flush_autosave(Shutdown)` (4510), the port's write of everything
/// queued. `fork_from` is answered `unsupported`: the crate has no `forkFrom`.
async fn op_apply(ctx: &Ctx, args: &Map<String, Value>, out: &Out) -> Result<Value, OpError> {
    if args
        .get("fork_from")
        .is_some_and(|source| !source.is_null())
    {
        return Err(OpError::Unsupported);
    }
    let ack = args.get("ack") == Some(&Value::Bool(true));
    let steps: Vec<Value> = match args.get("steps") {
        Some(Value::Array(items)) => items.clone(),
        None | Some(Value::Null) => Vec::new(),
        Some(other) => {
            return Err(Failure::exception(format!(
                "apply: steps must be an array, got {}",
                show(Some(other))
            ))
            .into());
        }
    };

    let mut state = match args.get("open") {
        Some(Value::String(file)) => Applied {
            session: open_path(ctx, &ctx.dir.join(file)).await?,
            in_memory: false,
        },
        None | Some(Value::Null) => {
            let in_memory = args.get("inMemory") == Some(&Value::Bool(true));
            let mut session = if in_memory {
                Session::in_memory()
            } else {
                Session::create_with_dir(Some(ctx.sessions_dir.clone()))
            };
            // The header's cwd is the process's at creation (SessionHeader::new, 6668); the
            // protocol's cwd is a virtual folder that need not exist, so it is set on the header.
            if let Some(cwd) = opt_string(args, "apply", "cwd")? {
                session.header.cwd = cwd;
            }
            Applied { session, in_memory }
        }
        Some(other) => {
            return Err(Failure::exception(format!(
                "apply: open must be a file name or null, got {}",
                show(Some(other))
            ))
            .into());
        }
    };
    if ack {
        out.line(&ack_line(ctx, &state, Value::Null, &Value::Null));
    }

    let mut results: Vec<Value> = Vec::with_capacity(steps.len());
    let mut returns: Vec<Value> = Vec::with_capacity(steps.len());
    for (index, raw_step) in steps.iter().enumerate() {
        let outcome = match substitute_results(raw_step, &returns) {
            Ok(Value::Object(step)) => run_step(ctx, &mut state, &step).await,
            Ok(other) => Err(Failure::exception(format!(
                "step {index} is not an object: {}",
                show(Some(&other))
            ))),
            Err(failure) => Err(failure),
        };
        let (result, returned) = match outcome {
            Ok(value) => (value.clone(), value),
            Err(failure) => {
                log_diagnostic(
                    ctx,
                    &format!("step {index}: {}: {}", failure.kind, failure.message),
                );
                (json!({ "error": failure.to_json() }), Value::Null)
            }
        };
        if ack {
            out.line(&ack_line(ctx, &state, json!(index), &result));
        }
        results.push(result);
        returns.push(returned);
    }

    let mut output = Map::new();
    output.insert("results".to_string(), Value::Array(results));
    if !state.in_memory {
        if let Err(err) = state
            .session
            .flush_autosave(AutosaveFlushTrigger::Shutdown)
            .await
        {
            output.insert(
                "flushError".to_string(),
                Failure::persistence(&err).to_json(),
            );
        }
    }
    output.insert("leafId".to_string(), leaf_value(state.session.leaf_id()));
    Ok(Value::Object(output))
}

/// An ack line (PROTOCOL.md "Ack mode"). `durable`: the port writes nothing until a flush, so a
/// call's writes are complete only when no mutation is left queued (`autosave_metrics`, 4535).
fn ack_line(ctx: &Ctx, state: &Applied, step: Value, result: &Value) -> Value {
    let durable = !state.in_memory && state.session.autosave_metrics().pending_mutations == 0;
    let mut line = Map::new();
    line.insert("type".to_string(), Value::String("ack".to_string()));
    line.insert("case".to_string(), ctx.case.clone());
    line.insert("step".to_string(), step);
    line.insert("result".to_string(), result.clone());
    line.insert("durable".to_string(), Value::Bool(durable));
    if let Value::String(id) = result {
        if let Some(entry) = state.session.get_entry(id) {
            if let Ok(value) = serde_json::to_value(entry) {
                line.insert("entry".to_string(), value);
            }
        }
    }
    Value::Object(line)
}

/// One `apply` step: pi's SessionManager call mapped onto the crate's (PROTOCOL.md "apply calls").
#[allow(clippy::too_many_lines)]
async fn run_step(
    ctx: &Ctx,
    state: &mut Applied,
    step: &Map<String, Value>,
) -> Result<Value, Failure> {
    let call = match step.get("call") {
        Some(Value::String(call)) => call.as_str(),
        other => {
            return Err(Failure::exception(format!(
                "a step's call must be a string, got {}",
                show(other)
            )));
        }
    };
    let session = &mut state.session;
    match call {
        // append_message (5213): the message must be one the crate can hold (`SessionMessage`,
        // 6843: typed roles; an assistant message needs api, provider, model, usage, stopReason
        // and timestamp). Anything else is refused, with serde's reason.
        "appendMessage" => {
            let message = step.get("message").cloned().unwrap_or(Value::Null);
            let message: SessionMessage = serde_json::from_value(message).map_err(|err| {
                Failure::exception(format!(
                    "appendMessage: not a message pi_agent_rust can hold (SessionMessage): {err}"
                ))
            })?;
            Ok(Value::String(session.append_message(message)))
        }
        // append_thinking_level_change (5339).
        "appendThinkingLevelChange" => {
            let level = req_string(step, call, "thinkingLevel")?;
            Ok(Value::String(session.append_thinking_level_change(level)))
        }
        // append_model_change (5296).
        "appendModelChange" => {
            let provider = req_string(step, call, "provider")?;
            let model_id = req_string(step, call, "modelId")?;
            Ok(Value::String(
                session.append_model_change(provider, model_id),
            ))
        }
        // append_compaction (5441): summary, firstKeptEntryId, tokensBefore (u64), details, fromHook.
        "appendCompaction" => {
            let summary = req_string(step, call, "summary")?;
            let first_kept_entry_id = req_string(step, call, "firstKeptEntryId")?;
            let tokens_before = req_u64(step, call, "tokensBefore")?;
            let details = opt_value(step, "details");
            let from_hook = opt_bool(step, call, "fromHook")?;
            Ok(Value::String(session.append_compaction(
                summary,
                first_kept_entry_id,
                tokens_before,
                details,
                from_hook,
            )))
        }
        // append_custom_entry (5372): a `custom` entry, not in the context.
        "appendCustomEntry" => {
            let custom_type = req_string(step, call, "customType")?;
            let data = opt_value(step, "data");
            Ok(Value::String(
                session.append_custom_entry(custom_type, data),
            ))
        }
        // The crate has no `custom_message` entry: an extension's message that enters the
        // context is a `message` entry with role `custom` (its `sendMessage`: src/extensions.rs
        // 19310-19334 reads the fields, src/interactive/ext_session.rs 91-97 builds a
        // `CustomMessage` stamped now and appends it with `append_model_message`, 5237).
        // The fields are read as its sendMessage reads them: customType trimmed and required,
        // content a string (anything else pretty-printed as JSON), display a boolean (default true).
        "appendCustomMessageEntry" => {
            let custom_type = step
                .get("customType")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .trim()
                .to_string();
            if custom_type.is_empty() {
                return Err(Failure::exception(
                    "sendMessage: message.customType is required",
                ));
            }
            let content = match step.get("content") {
                Some(Value::String(text)) => text.clone(),
                Some(other) => {
                    serde_json::to_string_pretty(other).unwrap_or_else(|_| other.to_string())
                }
                None => String::new(),
            };
            let display = step.get("display").and_then(Value::as_bool).unwrap_or(true);
            let details = step.get("details").cloned();
            let message = Message::Custom(CustomMessage {
                content,
                custom_type,
                display,
                details,
                timestamp: now_millis(),
            });
            Ok(Value::String(session.append_model_message(message)))
        }
        // add_label (6343): `None` when the target does not exist; a label `None` clears.
        "appendLabelChange" => {
            let target_id = match step.get("targetId") {
                Some(Value::String(id)) => id.clone(),
                other => return Err(Failure::not_found(&show(other))),
            };
            let label = opt_string(step, call, "label")?;
            match session.add_label(&target_id, label) {
                Some(id) => Ok(Value::String(id)),
                None => Err(Failure::not_found(&target_id)),
            }
        }
        // append_session_info (5355); absent or null name is `None`.
        "appendSessionInfo" => {
            let name = opt_string(step, call, "name")?;
            Ok(Value::String(session.append_session_info(name)))
        }
        // navigate_to (5847): false when the entry does not exist.
        "branch" => match step.get("id") {
            Some(Value::String(id)) => {
                if session.navigate_to(id) {
                    Ok(Value::Null)
                } else {
                    Err(Failure::not_found(id))
                }
            }
            other => Err(Failure::not_found(&show(other))),
        },
        // reset_leaf (6002).
        "resetLeaf" => {
            session.reset_leaf();
            Ok(Value::Null)
        }
        // pi's branchWithSummary(fromId, …): the leaf moves to fromId (null: before the first
        // entry), then a branch summary is appended there with fromId (null: "root", the crate's
        // own name for it, src/interactive/tree.rs 843). The crate's tree navigation does the same
        // two calls (src/interactive/tree_ui.rs 76-91): navigate_to / reset_leaf, then
        // append_branch_summary (5468).
        "branchWithSummary" => {
            let from = match step.get("fromId") {
                Some(Value::Null) => None,
                Some(Value::String(id)) => Some(id.clone()),
                other => return Err(Failure::not_found(&show(other))),
            };
            if let Some(id) = &from {
                if session.get_entry(id).is_none() {
                    return Err(Failure::not_found(id));
                }
            }
            let summary = req_string(step, call, "summary")?;
            let details = opt_value(step, "details");
            let from_hook = opt_bool(step, call, "fromHook")?;
            match &from {
                Some(id) => {
                    if !session.navigate_to(id) {
                        return Err(Failure::not_found(id));
                    }
                }
                None => session.reset_leaf(),
            }
            let from_id = from.unwrap_or_else(|| "root".to_string());
            Ok(Value::String(session.append_branch_summary(
                from_id, summary, details, from_hook,
            )))
        }
        // flush_autosave(Manual) (4510): writes what is queued (nothing queued: no write).
        "flush" => {
            if state.in_memory {
                return Ok(Value::Null);
            }
            session
                .flush_autosave(AutosaveFlushTrigger::Manual)
                .await
                .map_err(|err| Failure::persistence(&err))?;
            Ok(Value::Null)
        }
        // PROTOCOL.md "Faults": flush and close, then open the same file again.
        "reopen" => {
            if state.in_memory {
                return Err(Failure::exception("reopen: the session has no file"));
            }
            let flushed = session.flush_autosave(AutosaveFlushTrigger::Shutdown).await;
            let Some(path) = session.path.clone() else {
                return Err(match flushed {
                    Err(err) => Failure::persistence(&err),
                    Ok(()) => Failure::exception("reopen: the session has no file"),
                });
            };
            let reopened = open_path(ctx, &path).await?;
            *session = reopened;
            match flushed {
                Ok(()) => Ok(Value::Null),
                Err(err) => Err(Failure::persistence(&err)),
            }
        }
        // Queries (PROTOCOL.md "Queries").
        "getLeafId" => Ok(leaf_value(session.leaf_id())),
        "getHeader" => to_json!(&session.header),
        "getEntry" => match step.get("id") {
            Some(Value::String(id)) => match session.get_entry(id) {
                Some(entry) => to_json!(entry),
                None => Ok(Value::Null),
            },
            _ => Ok(Value::Null),
        },
        "getEntries" => entries_json(session.entries.iter()),
        "getBranch" | "getPath" => match step.get("fromId") {
            None | Some(Value::Null) => branch_json(session, None),
            Some(Value::String(id)) => branch_json(session, Some(id.as_str())),
            Some(_) => Ok(Value::Array(Vec::new())),
        },
        // get_children (5809): the entries whose parent is parentId (null: the roots).
        "getChildren" => {
            let parent = match step.get("parentId") {
                None | Some(Value::Null) => None,
                Some(Value::String(id)) => Some(id.as_str()),
                Some(_) => return Ok(Value::Array(Vec::new())),
            };
            let ids = session.get_children(parent);
            let mut list = Vec::with_capacity(ids.len());
            for id in &ids {
                if let Some(entry) = session.get_entry(id) {
                    list.push(to_json!(entry)?);
                }
            }
            Ok(Value::Array(list))
        }
        "getLabel" => match step.get("id") {
            Some(Value::String(id)) => Ok(current_labels(&session.entries)
                .get(id.as_str())
                .map_or(Value::Null, |label| Value::String(label.clone()))),
            _ => Ok(Value::Null),
        },
        "getTree" => Ok(Value::Array(tree_nodes(session))),
        "buildSessionContext" => context_value(session),
        other if NO_COUNTERPART.contains(&other) => Err(Failure::exception(format!(
            "no such call: {other} (pi_agent_rust has no counterpart)"
        ))),
        other => Err(Failure::exception(format!(
            "no such call: {other} (not a call of the protocol)"
        ))),
    }
}

// ---------------------------------------------------------------------------
// persist
// ---------------------------------------------------------------------------

/// `persist`: a new session (cwd `/proj`) under `<dir>/sessions`, the user message
/// `{"role":"user","content":"go","timestamp":1}`, then `message`, then `flush_autosave(Shutdown)`.
async fn op_persist(ctx: &Ctx, args: &Map<String, Value>) -> Result<Value, OpError> {
    let mut session = Session::create_with_dir(Some(ctx.sessions_dir.clone()));
    session.header.cwd = "/proj".to_string();
    let first = session.append_message(SessionMessage::User {
        content: UserContent::Text("go".to_string()),
        timestamp: Some(1),
    });
    let message = args.get("message").cloned().unwrap_or(Value::Null);
    let message: SessionMessage = serde_json::from_value(message).map_err(|err| {
        Failure::exception(format!(
            "persist: not a message pi_agent_rust can hold (SessionMessage): {err}"
        ))
    })?;
    let second = session.append_message(message);
    session
        .flush_autosave(AutosaveFlushTrigger::Shutdown)
        .await
        .map_err(|err| Failure::persistence(&err))?;
    Ok(json!({ "results": [first, second] }))
}
