//! The writing operations, `apply` and `persist`: the session an `apply` starts from, its
//! steps run in turn (with `reopen`), and `apply` in ack mode for `crash`, whose
//! acknowledgements and journal lines go out as each step returns.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use session_reference::model::Profile;
use session_reference::session::{SessionError, SessionManager};

use super::setup::{error_kind, faulty, inside, options_with};
use super::steps::{run_step, substitute};
use crate::faults::{Fault, FaultyStorage};
use crate::protocol::{Request, Response};

pub(super) fn apply(
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
pub(super) fn persist(
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

/// `apply` in ack mode (`PROTOCOL.md` "Ack mode", `session-conformance crash`): runs
/// `request` as [`execute`](super::execute) does, and calls `ack` with an acknowledgement after the open
/// and after each step returns, before the next one starts. `None` when the request is
/// not an `apply` with `"ack": true` (then [`execute`](super::execute) answers it).
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
