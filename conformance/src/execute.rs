//! The reference as an adapter: runs one protocol request with `session-reference`, in process.
//!
//! `serve` wraps this in the protocol loop; `run --adapter reference` calls it directly.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use session_reference::context::LeafChoice;
use session_reference::entries;
use session_reference::locations::Store;
use session_reference::model::Profile;
use session_reference::session::{NewSession, Options, SessionError, SessionManager};

pub use self::call::Call;
use crate::faults::{Fault, FaultyStorage};
use crate::normalize::object;
use crate::protocol::{Capability, Hello, Operation, Request, Response};

mod call;
pub mod compaction;
pub mod serve;
mod store;

/// The reference's hello for `profile`.
pub fn hello(profile: Profile) -> Hello {
    Hello {
        kind: "hello".into(),
        implementation: "session-reference".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        profile: profile.name().into(),
        operations: Operation::ALL
            .into_iter()
            .filter(|op| profile == Profile::Omp || !op.is_omp_only())
            .collect(),
        capabilities: vec![
            Capability::Diagnostics,
            Capability::Faults,
            Capability::Journal,
        ],
    }
}

/// Runs one request against the reference.
pub fn execute(request: Request) -> Response {
    let case = request.case.as_str();
    let profile = match request.profile.parse::<Profile>() {
        Ok(p) => p,
        Err(e) => return Response::error(case, "exception", e),
    };
    let dir = PathBuf::from(&request.dir);
    if let Err(e) = case_dir(&dir) {
        return Response::error(case, "exception", e);
    }
    // Arguments nested past the limit are refused before they become a value.
    if request.args.text_len().is_some() {
        if let Err(e) = crate::guard::check_nesting(&request.args.text()) {
            return Response::error(case, "exception", format!("args {e}"));
        }
    }
    let mut args = request.args.into_value();
    let result = match request.op {
        Operation::Load => load(&dir, &args, profile),
        Operation::Context => context(&dir, &args, profile),
        Operation::Tree => tree(&dir, &args, profile),
        Operation::Apply => apply(&dir, &args, profile, &request.faults),
        Operation::Persist => persist(&dir, args["message"].take(), profile, &request.faults),
        ref op if profile != Profile::Omp && op.is_omp_only() => {
            return Response::unsupported(case)
        }
        Operation::List => store::list_op(&dir, &args, profile),
        Operation::Recent => store::recent_op(&dir, &args),
        Operation::Continue => store::continue_op(&dir, &args, profile),
        Operation::Resolve => store::resolve_op(&dir, &args, profile),
        Operation::History => store::history_op(&dir, &args),
        Operation::Switch => store::switch_op(&dir, &args, profile),
        Operation::Search => store::search_op(&dir, &args, profile),
        Operation::Compaction => compaction::compaction_op(&dir, &args, profile),
        Operation::BranchSummary => compaction::branch_summary_op(&dir, &args, profile),
        Operation::Other(_) => return Response::unsupported(case),
    };
    match result {
        Ok(value) => Response::ok(case, value),
        Err(e) => Response::error(case, error_kind(&e), e.to_string()),
    }
}

/// The protocol's error kind for a session error.
pub fn error_kind(error: &SessionError) -> &'static str {
    match error {
        SessionError::NotFound(_) => "not_found",
        SessionError::InvalidSource(_) => "invalid_source",
        SessionError::Persistence { .. } => "persistence",
        SessionError::InvalidName(_) => "invalid_name",
        _ => "exception",
    }
}

/// Session options for a case directory: cwd `dir`, sessions in `dir/sessions`, blobs in `dir/home/.omp/agent/blobs`.
pub fn options(dir: &Path, profile: Profile) -> Options {
    let mut options = Options::new(profile, dir.to_string_lossy(), dir.join("sessions"));
    options.blob_dir = dir.join("home/.omp/agent/blobs");
    options
}

/// Checks a request's `dir` as `PROTOCOL.md` states it: an absolute path of a folder
/// that exists (not a link to one). The reference never creates it, so a request cannot
/// make it write where the runner did not make room.
fn case_dir(dir: &Path) -> Result<(), String> {
    if !dir.is_absolute() {
        return Err(format!(
            "dir {:?} is not an absolute path; the runner makes a fresh folder for each case",
            dir.display()
        ));
    }
    // Without a trailing `/`, which would make the look follow a link.
    let dir: PathBuf = dir.components().collect();
    match std::fs::symlink_metadata(&dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(meta) => Err(format!(
            "dir {:?} is a {}, not a folder",
            dir.display(),
            crate::guard::kind_name(meta.file_type())
        )),
        Err(e) => Err(format!("dir {:?}: {e}", dir.display())),
    }
}

/// [`options`] whose storage raises `faults` (`PROTOCOL.md` "Faults"): one
/// [`FaultyStorage`] over the file storage, shared by every session the request opens.
fn options_with(dir: &Path, profile: Profile, faults: Option<&FaultyStorage>) -> Options {
    let mut options = options(dir, profile);
    if let Some(storage) = faults {
        options.storage = Box::new(storage.clone());
    }
    options
}

/// The faulty storage of a request's faults; `None` when it has none.
fn faulty(dir: &Path, faults: &[Fault]) -> Option<FaultyStorage> {
    (!faults.is_empty()).then(|| FaultyStorage::new(dir, faults))
}

/// `name` inside the case directory `dir`: a path that is absolute or climbs out with
/// `..` is refused, so no request makes the reference touch a file outside its case.
pub fn inside(dir: &Path, name: &str) -> Result<PathBuf, SessionError> {
    crate::guard::inside(dir, name).map_err(|e| SessionError::Io {
        path: PathBuf::from(name),
        message: e.to_string(),
    })
}

/// Opens the session `args.file` (default `session.jsonl`) of the case directory.
fn open(dir: &Path, args: &Value, profile: Profile) -> Result<SessionManager, SessionError> {
    let file = args["file"].as_str().unwrap_or("session.jsonl");
    let sm = SessionManager::open(&inside(dir, file)?, options(dir, profile))?;
    shallow(&sm)?;
    Ok(sm)
}

/// Refuses a session with a line nested past [`crate::guard::MAX_NESTING`]: its entries
/// become JSON values, which the harness walks with recursive code.
pub fn shallow(sm: &SessionManager) -> Result<(), SessionError> {
    let lines =
        std::iter::once(sm.header().raw.get()).chain(sm.entries().iter().map(|e| e.raw.get()));
    for text in lines {
        crate::guard::check_nesting(text).map_err(|message| SessionError::Io {
            path: sm.session_file().map(Path::to_path_buf).unwrap_or_default(),
            message: format!("an entry is {message}"),
        })?;
    }
    Ok(())
}

fn load(dir: &Path, args: &Value, profile: Profile) -> Result<Value, SessionError> {
    let sm = open(dir, args, profile)?;
    Ok(load_output(&sm))
}

/// `{header, entries, leafId, diagnostics, migrated}` for an opened session, and
/// `unlistedDiagnostics` (kind → count) when it has more diagnostics than it lists
/// (`session_reference::parse::MAX_LISTED_DIAGNOSTICS`).
pub fn load_output(sm: &SessionManager) -> Value {
    let mut output = load_summary(sm);
    let entries: Vec<Value> = sm.entries().iter().map(|e| sm.resolved(e)).collect();
    output["entries"] = Value::Array(entries);
    output
}

/// [`load_output`] written to `out` as canonical JSON (`crate::canonical`), numbers as
/// JavaScript writes them (`canonical::canonical_js`), one entry at a time: only one entry is a JSON value at once, so the output of
/// a file of millions of lines costs no memory beyond the session itself.
pub fn write_load_output(
    sm: &SessionManager,
    out: &mut impl std::io::Write,
) -> std::io::Result<()> {
    let mut summary = load_summary(sm);
    summary["entries"] = json!([]);
    let text = crate::canonical::canonical_js(&summary);
    // Top-level keys are the only lines indented by exactly two spaces.
    let marker = "\n  \"entries\": []";
    let at = text
        .find(marker)
        .map_or(text.len(), |at| at + marker.len() - 2);
    out.write_all(&text.as_bytes()[..at])?;
    let mut first = true;
    for entry in sm.entries() {
        let entry = crate::canonical::canonical_js(&sm.resolved(entry));
        out.write_all(if first { b"[\n    " } else { b",\n    " })?;
        out.write_all(entry.trim_end().replace('\n', "\n    ").as_bytes())?;
        first = false;
    }
    out.write_all(if first { b"[]" } else { b"\n  ]" })?;
    out.write_all(text[at..].get(2..).unwrap_or_default().as_bytes())
}

/// Every field of [`load_output`] but the entries.
fn load_summary(sm: &SessionManager) -> Value {
    let header: Value =
        session_reference::raw::parse_value(sm.header().raw.get()).unwrap_or(Value::Null);
    let report = sm.report();
    let diagnostics: Vec<Value> = report
        .diagnostics
        .iter()
        .map(|d| json!({"line": d.line, "kind": d.kind.name()}))
        .collect();
    let mut output = object([
        ("header", header),
        ("leafId", sm.leaf_id().into()),
        ("diagnostics", Value::Array(diagnostics)),
        ("migrated", (!report.migrated.is_empty()).into()),
    ]);
    if report.unlisted.total() > 0 {
        let counts: serde_json::Map<String, Value> = report
            .unlisted
            .0
            .iter()
            .map(|(kind, n)| (kind.name().to_owned(), Value::from(*n)))
            .collect();
        output["unlistedDiagnostics"] = Value::Object(counts);
    }
    output
}

fn context(dir: &Path, args: &Value, profile: Profile) -> Result<Value, SessionError> {
    let sm = open(dir, args, profile)?;
    let leaf = match args.get("leafId") {
        None => sm.leaf_id().map_or(LeafChoice::Null, LeafChoice::Id),
        Some(Value::Null) => LeafChoice::Null,
        Some(Value::String(id)) => LeafChoice::Id(id),
        Some(_) => LeafChoice::Last,
    };
    Ok(sm.context_json(leaf))
}

fn tree(dir: &Path, args: &Value, profile: Profile) -> Result<Value, SessionError> {
    let sm = open(dir, args, profile)?;
    Ok(tree_output(&sm))
}

/// `{nodes: [{id, parentId, type, label, children}]}` in pre-order.
pub fn tree_output(sm: &SessionManager) -> Value {
    let nodes: Vec<Value> = sm
        .get_tree()
        .into_iter()
        .map(|n| {
            // parentId and label as written, whatever their JSON type (a string
            // parentId is the one the entry holds already).
            let parent = match n.parent_id() {
                Some(id) => Value::from(id),
                None => n
                    .entry
                    .object()
                    .get(n.entry.keys().name("parentId"))
                    .and_then(|v| serde_json::from_str(v.get()).ok())
                    .unwrap_or(Value::Null),
            };
            let label = n
                .label
                .and_then(|l| serde_json::from_str(&l.value).ok())
                .unwrap_or(Value::Null);
            object([
                ("id", n.id().into()),
                ("parentId", parent),
                ("type", n.entry_type().into()),
                ("label", label),
                ("children", n.child_ids().collect::<Vec<_>>().into()),
            ])
        })
        .collect();
    object([("nodes", Value::Array(nodes))])
}

fn apply(
    dir: &Path,
    args: &Value,
    profile: Profile,
    faults: &[Fault],
) -> Result<Value, SessionError> {
    let faults = faulty(dir, faults);
    let mut sm = start(dir, args, profile, faults.as_ref())?;
    let mut results: Vec<Value> = Vec::new();
    for step in args["steps"].as_array().into_iter().flatten() {
        let step = substitute(step, &results);
        let result = if step["call"] == "reopen" {
            reopen(&mut sm, dir, profile, faults.as_ref())
        } else {
            run_step(&mut sm, &step, profile, dir)
        };
        let result = result.unwrap_or_else(
            |e| json!({"error": {"kind": error_kind(&e), "message": e.to_string()}}),
        );
        results.push(result);
    }
    let flushed = sm.flush();
    let mut output = json!({"results": results, "leafId": sm.leaf_id()});
    if let Err(e) = flushed {
        output["flushError"] = json!({"kind": error_kind(&e), "message": e.to_string()});
    }
    Ok(output)
}

/// The session an `apply` runs on: `SessionManager.inMemory(cwd)` for `inMemory: true`,
/// `open` of a file, 003's `fork_from` (`forkFrom` in every profile), or a new one.
fn start(
    dir: &Path,
    args: &Value,
    profile: Profile,
    faults: Option<&FaultyStorage>,
) -> Result<SessionManager, SessionError> {
    let mut options = options_with(dir, profile, faults);
    if let Some(file) = args["open"].as_str() {
        // `open` takes the header's (or the process's) cwd.
        return SessionManager::open(&inside(dir, file)?, options);
    }
    if let Some(source) = args["fork_from"].as_str() {
        let cwd = args["target_cwd"].as_str().unwrap_or("/proj").to_owned();
        return SessionManager::fork_from(&inside(dir, source)?, &cwd, options);
    }
    if let Some(cwd) = args["cwd"].as_str() {
        cwd.clone_into(&mut options.cwd);
    }
    Ok(if args["inMemory"] == true {
        SessionManager::in_memory(options)
    } else {
        SessionManager::create(options)
    })
}

/// The `reopen` step (`PROTOCOL.md` "Faults"): the session is flushed and dropped, its
/// writer closed, and its file opened again with the same storage, whose faults that
/// fired stay lifted; returns `null`, or the flush's (latched) error once the file is
/// open again. A session without a file is an error.
fn reopen(
    sm: &mut SessionManager,
    dir: &Path,
    profile: Profile,
    faults: Option<&FaultyStorage>,
) -> Result<Value, SessionError> {
    let file = sm
        .session_file()
        .map(Path::to_path_buf)
        .ok_or_else(|| SessionError::Io {
            path: PathBuf::new(),
            message: "reopen: the session has no file".into(),
        })?;
    let closed = sm.flush();
    let options = options_with(dir, profile, faults);
    // The old session goes first: its writer is closed before the file is read.
    *sm = SessionManager::in_memory(options_with(dir, profile, faults));
    *sm = SessionManager::open(&file, options)?;
    closed.map(|()| Value::Null)
}

/// `persist`: a user message, then `message` (moved: it may carry 500,000-character strings).
fn persist(
    dir: &Path,
    message: Value,
    profile: Profile,
    faults: &[Fault],
) -> Result<Value, SessionError> {
    let mut options = options_with(dir, profile, faulty(dir, faults).as_ref());
    "/proj".clone_into(&mut options.cwd);
    let mut sm = SessionManager::create(options);
    let first = sm.append_message(json!({"role":"user","content":"go","timestamp":1}))?;
    let second = sm.append_message(message)?;
    sm.flush()?;
    Ok(json!({"results": [first, second]}))
}

/// Replaces `{"$result": N}` by the value step N returned.
pub fn substitute(value: &Value, results: &[Value]) -> Value {
    match value {
        Value::Object(map) => {
            if let (1, Some(n)) = (map.len(), map.get("$result").and_then(Value::as_u64)) {
                return usize::try_from(n)
                    .ok()
                    .and_then(|n| results.get(n))
                    .cloned()
                    .unwrap_or(Value::Null);
            }
            Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), substitute(v, results)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, results)).collect()),
        other => other.clone(),
    }
}

/// Runs one `apply` step (PROTOCOL.md's call table) on a session; returns the call's value.
///
/// `dir` is the case directory: `moveTo` moves the session into the project folder of
/// the store at `<dir>/home/.omp/agent`, where the omp adapter points the library.
pub fn run_step(
    sm: &mut SessionManager,
    step: &Value,
    profile: Profile,
    dir: &Path,
) -> Result<Value, SessionError> {
    // The operator dialect's calls are 003's snake_case names (PROTOCOL.md).
    let camel;
    let step = if profile == Profile::Operator {
        camel = camel_step(step);
        &camel
    } else {
        step
    };
    let arg = |name: &str| step.get(name).cloned().unwrap_or(Value::Null);
    let opt = |name: &str| step.get(name).cloned();
    let str_arg = |name: &str| {
        step.get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let id = |r: Result<String, SessionError>| r.map(Value::from);
    let call = step["call"].as_str().and_then(Call::from_name);
    match (call, profile) {
        (Some(Call::AppendMessage), _) => id(sm.append_message(arg("message"))),
        (Some(Call::AppendThinkingLevelChange), _) => {
            id(sm.append(&entries::ThinkingLevelChange {
                thinking_level: arg("thinkingLevel"),
            }))
        }
        (Some(Call::AppendModelChange), Profile::Pi) => id(sm.append(&entries::PiModelChange {
            provider: arg("provider"),
            model_id: arg("modelId"),
        })),
        (Some(Call::AppendModelChange), Profile::Operator) => {
            id(sm.append(&entries::ModelIdChange {
                provider: opt("provider"),
                model_id: arg("modelId"),
            }))
        }
        (Some(Call::AppendModelChange), Profile::Omp) => id(sm.append(&entries::OmpModelChange {
            model: arg("model"),
            role: opt("role"),
        })),
        (Some(Call::AppendCompaction), Profile::Pi | Profile::Operator) => {
            id(sm.append(&entries::PiCompaction {
                summary: arg("summary"),
                first_kept_entry_id: arg("firstKeptEntryId"),
                tokens_before: arg("tokensBefore"),
                details: opt("details"),
                from_hook: opt("fromHook"),
            }))
        }
        (Some(Call::AppendCompaction), Profile::Omp) => id(sm.append(&entries::OmpCompaction {
            summary: arg("summary"),
            short_summary: opt("shortSummary"),
            first_kept_entry_id: arg("firstKeptEntryId"),
            tokens_before: arg("tokensBefore"),
            details: opt("details"),
            preserve_data: opt("preserveData"),
            from_extension: opt("fromExtension"),
        })),
        (Some(Call::AppendCustomEntry), _) => id(sm.append(&entries::Custom {
            custom_type: arg("customType"),
            data: opt("data"),
        })),
        (Some(Call::AppendCustomMessageEntry), _) => id(sm.append(&entries::CustomMessage {
            custom_type: arg("customType"),
            content: arg("content"),
            display: arg("display"),
            details: opt("details"),
        })),
        (Some(Call::AppendLabelChange), _) => {
            id(sm.append_label_change(&str_arg("targetId"), opt("label")))
        }
        (Some(Call::AppendSessionInfo), Profile::Pi | Profile::Operator) => {
            id(sm.append_session_info(&str_arg("name")))
        }
        (Some(Call::AppendTtsrInjection), Profile::Omp) => id(sm.append(&entries::TtsrInjection {
            injected_rules: arg("injectedRules"),
        })),
        (Some(Call::AppendSessionInit), Profile::Omp) => id(sm.append(&entries::SessionInit {
            system_prompt: arg("systemPrompt"),
            task: arg("task"),
            tools: arg("tools"),
            output_schema: opt("outputSchema"),
        })),
        (Some(Call::AppendModeChange), Profile::Omp) => id(sm.append(&entries::ModeChange {
            mode: arg("mode"),
            data: opt("data"),
        })),
        (Some(Call::Branch), _) => sm.branch(&str_arg("id")).map(|()| Value::Null),
        (Some(Call::ResetLeaf), _) => {
            sm.reset_leaf();
            Ok(Value::Null)
        }
        (Some(Call::BranchWithSummary), _) => {
            let from = step
                .get("fromId")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let (from_hook, from_extension) = if profile == Profile::Omp {
                (None, opt("fromExtension"))
            } else {
                (opt("fromHook"), None)
            };
            let summary = entries::BranchSummary {
                from_id: String::new(),
                summary: arg("summary"),
                details: opt("details"),
                from_hook,
                from_extension,
            };
            id(sm.branch_with_summary(from.as_deref(), summary))
        }
        (Some(Call::CreateBranchedSession), _) => {
            let leaf = step
                .get("leafId")
                .and_then(Value::as_str)
                .map(str::to_owned);
            sm.create_branched_session(leaf.as_deref()).map(path_value)
        }
        (Some(Call::Flush), _) => sm.flush().map(|()| Value::Null),
        (Some(Call::NewSession), _) => {
            let options = NewSession {
                id: (profile == Profile::Pi).then(|| step["id"].as_str().map(str::to_owned)).flatten(),
                parent_session: step["parentSession"].as_str().map(str::to_owned),
            };
            sm.new_session(options).map(path_value)
        }
        (Some(Call::Fork), Profile::Omp) => Ok(sm.fork()?.map_or(Value::Null, |(old, new)| {
            json!({"oldSessionFile": path_value(Some(old)), "newSessionFile": path_value(Some(new))})
        })),
        (Some(Call::SetSessionName), Profile::Omp) => {
            sm.set_session_name(&str_arg("name")).map(|()| Value::Null)
        }
        (Some(Call::RewriteEntries), Profile::Omp) => sm.rewrite_entries().map(|()| Value::Null),
        (Some(Call::MoveTo), Profile::Omp) => {
            let cwd = str_arg("cwd");
            let store = Store::new(dir.join("home/.omp/agent"));
            sm.move_to(&cwd, store.session_dir(&cwd))
                .map(|()| Value::Null)
        }
        (call, _) => query(sm, call, step),
    }
}

/// A file a call returns, as a JSON string (`null` for none).
fn path_value(path: Option<PathBuf>) -> Value {
    path.map(|p| p.to_string_lossy().into_owned()).into()
}

/// The calls of 002 that read instead of write (PROTOCOL.md "Queries"): what the
/// session holds in memory at that step, written or not. An unknown call is an error.
fn query(sm: &SessionManager, call: Option<Call>, step: &Value) -> Result<Value, SessionError> {
    let entries = |list: Vec<&session_reference::model::Entry>| -> Value {
        list.into_iter().map(|e| sm.resolved(e)).collect()
    };
    let id = step.get("id").and_then(Value::as_str);
    match call {
        Some(Call::GetLeafId) => Ok(sm.leaf_id().into()),
        Some(Call::GetHeader) => {
            Ok(session_reference::raw::parse_value(sm.header().raw.get()).unwrap_or(Value::Null))
        }
        Some(Call::GetEntry) => Ok(id
            .and_then(|id| sm.get_entry(id))
            .map_or(Value::Null, |e| sm.resolved(e))),
        Some(Call::GetEntries) => Ok(entries(sm.entries().iter().collect())),
        Some(Call::GetBranch | Call::GetPath) => Ok(entries(
            sm.get_branch(step.get("fromId").and_then(Value::as_str)),
        )),
        Some(Call::GetChildren) => Ok(entries(
            sm.get_children(step.get("parentId").and_then(Value::as_str)),
        )),
        Some(Call::GetLabel) => Ok(id.and_then(|id| sm.get_label(id)).into()),
        Some(Call::GetTree) => Ok(tree_output(sm)["nodes"].take()),
        Some(Call::BuildSessionContext) => {
            Ok(sm.context_json(sm.leaf_id().map_or(LeafChoice::Null, LeafChoice::Id)))
        }
        _ => Err(SessionError::Io {
            path: PathBuf::new(),
            message: "unsupported call".into(),
        }),
    }
}

/// An operator `apply` step (PROTOCOL.md "The operator dialect's calls") in the
/// camelCase names of the call table: `append_message` → `appendMessage`, and each
/// snake_case argument (`first_kept_entry_id`, `target_id`, …) likewise.
fn camel_step(step: &Value) -> Value {
    let Some(map) = step.as_object() else {
        return step.clone();
    };
    map.iter()
        .map(|(key, value)| {
            // A camelCase call is not one of the dialect's names: left unknown.
            let value = if key == "call" {
                match value.as_str() {
                    Some(c) if c.contains(|ch: char| ch.is_ascii_uppercase()) => "".into(),
                    Some(c) => camel(c).into(),
                    None => value.clone(),
                }
            } else {
                value.clone()
            };
            (camel(key), value)
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// `snake_case` → `camelCase`.
fn camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `apply` in ack mode (`PROTOCOL.md` "Ack mode", `session-conformance crash`): runs
/// `request` as [`execute`] does, and calls `ack` with an acknowledgement after the open
/// and after each step returns, before the next one starts. `None` when the request is
/// not an `apply` with `"ack": true` (then [`execute`] answers it).
///
/// An acknowledgement is `durable` when the session file exists and holds an assistant
/// message: from then on the reference writes each entry before its call returns.
///
/// With `"journal": true` (`PROTOCOL.md` "Journal", `crash --power-loss`) the storage
/// keeps a journal of the calls that change files, and each of them is written as an
/// `fs` line, through `ack`, before the next acknowledgement (and before the response).
pub fn execute_acked(request: &Request, ack: &mut dyn FnMut(&Value)) -> Option<Response> {
    if request.op != "apply" {
        return None;
    }
    // Arguments nested past the limit are left to `execute`, which refuses them unread.
    if request.args.text_len().is_some()
        && crate::guard::check_nesting(&request.args.text()).is_err()
    {
        return None;
    }
    if request.args.value()["ack"] != Value::Bool(true) {
        return None;
    }
    let case = request.case.as_str();
    let profile = match request.profile.parse::<Profile>() {
        Ok(p) => p,
        Err(e) => return Some(Response::error(case, "exception", e)),
    };
    let dir = PathBuf::from(&request.dir);
    let args = request.args.value();
    let storage = if args["journal"] == Value::Bool(true) {
        Some(FaultyStorage::new(&dir, &request.faults).journaled())
    } else {
        faulty(&dir, &request.faults)
    };
    // Writes the journal's lines so far (none without a journal).
    let journal = |ack: &mut dyn FnMut(&Value)| {
        for mut line in storage.iter().flat_map(FaultyStorage::take_journal) {
            line["type"] = json!("fs");
            line["case"] = json!(case);
            ack(&line);
        }
    };
    let mut sm = match start(&dir, args, profile, storage.as_ref()) {
        Ok(sm) => sm,
        Err(e) => return Some(Response::error(case, error_kind(&e), e.to_string())),
    };
    journal(ack);
    let durable = |sm: &SessionManager| {
        sm.session_file().is_some_and(Path::is_file)
            && sm
                .entries()
                .iter()
                .any(|e| e.role().as_deref() == Some("assistant"))
    };
    ack(
        &json!({"type": "ack", "case": case, "step": null, "result": null, "durable": durable(&sm)}),
    );
    let mut results: Vec<Value> = Vec::new();
    for (n, step) in args["steps"].as_array().into_iter().flatten().enumerate() {
        let step = substitute(step, &results);
        let result = run_step(&mut sm, &step, profile, &dir).unwrap_or_else(
            |e| json!({"error": {"kind": error_kind(&e), "message": e.to_string()}}),
        );
        let mut line = json!({"type": "ack", "case": case, "step": n, "result": result, "durable": durable(&sm)});
        if let Some(entry) = result.as_str().and_then(|id| sm.get_entry(id)) {
            line["entry"] = sm.resolved(entry);
        }
        journal(ack);
        ack(&line);
        results.push(result);
    }
    let flushed = sm.flush();
    journal(ack);
    let mut output = json!({"results": results, "leafId": sm.leaf_id()});
    if let Err(e) = flushed {
        output["flushError"] = json!({"kind": error_kind(&e), "message": e.to_string()});
    }
    Some(Response::ok(case, output))
}
