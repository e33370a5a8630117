//! The reference's answers to the session-store operations: `list`, `recent`, `continue`,
//! `resolve` and `history` (`PROTOCOL.md` "Session stores").
//!
//! Every operation names an agent directory inside the case directory (`agent_dir`,
//! default `agent`), a virtual working directory (`cwd`), and optionally a forced session
//! directory (`session_dir`, relative to the case directory).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use session_reference::history::History;
use session_reference::listing::{list_all, SessionInfo};
use session_reference::model::Profile;
use session_reference::recent::recent;
use session_reference::resume::{continue_recent, decide, find, Match, Outcome, Scope};
use session_reference::session::{SessionError, SessionManager};
use session_reference::store::{terminal_id, Store};

/// What every store operation reads from its arguments.
struct Place {
    store: Store,
    cwd: String,
    session_dir: Option<PathBuf>,
}

impl Place {
    /// The place the arguments name; `agent_dir` and `session_dir` must stay inside the
    /// case directory.
    fn of(dir: &Path, args: &Value) -> Result<Place, SessionError> {
        let agent = args["agent_dir"].as_str().unwrap_or("agent");
        let session_dir = match args["session_dir"].as_str() {
            Some(d) => Some(super::inside(dir, d)?),
            None => None,
        };
        Ok(Place {
            store: Store::new(super::inside(dir, agent)?),
            cwd: args["cwd"].as_str().unwrap_or("/").to_owned(),
            session_dir,
        })
    }

    fn scope(&self, profile: Profile) -> Scope<'_> {
        Scope {
            store: &self.store,
            cwd: &self.cwd,
            session_dir: self.session_dir.as_deref(),
            profile,
        }
    }
}

fn sql(error: impl std::fmt::Display) -> SessionError {
    exception(format!("history: {error}"))
}

fn exception(message: impl Into<String>) -> SessionError {
    SessionError::Io {
        path: PathBuf::new(),
        message: message.into(),
    }
}

/// `list`: `{sessions: [SessionInfo…]}` of the project (or of every project with `all: true`).
pub fn list_op(dir: &Path, args: &Value, profile: Profile) -> Result<Value, SessionError> {
    let place = Place::of(dir, args)?;
    let sessions: Vec<SessionInfo> = if args["all"].as_bool() == Some(true) {
        list_all(&place.store.sessions_root(), profile)
    } else {
        place.scope(profile).local_sessions()
    };
    serde_json::to_value(json!({ "sessions": sessions })).map_err(|e| exception(e.to_string()))
}

/// `recent`: `{sessions: [{path, mtime, name, fullName}…]}`, the `limit` (default 3) newest.
pub fn recent_op(dir: &Path, args: &Value) -> Result<Value, SessionError> {
    let place = Place::of(dir, args)?;
    let limit = args["limit"]
        .as_u64()
        .and_then(|l| usize::try_from(l).ok())
        .unwrap_or(3);
    let sessions = recent(&place.scope(Profile::Omp).local_dir(), limit);
    Ok(json!({ "sessions": sessions }))
}

/// `continue`: `{file, new}`: the session `--continue` opened (or the new one it started).
/// `env` holds the terminal variables (`KITTY_WINDOW_ID`, …); `tty` a TTY path.
pub fn continue_op(dir: &Path, args: &Value, profile: Profile) -> Result<Value, SessionError> {
    let place = Place::of(dir, args)?;
    let env = |name: &str| args["env"][name].as_str().map(str::to_owned);
    let terminal = terminal_id(args["tty"].as_str(), &env);
    let scope = place.scope(profile);
    let mut options = super::options(dir, profile);
    options.cwd.clone_from(&place.cwd);
    options.session_dir = scope.local_dir();
    let (manager, target) = continue_recent(&scope, terminal.as_deref(), options)?;
    Ok(json!({
        "file": manager.session_file(),
        "new": target == session_reference::resume::ContinueTarget::New,
    }))
}

/// `resolve`: what `--resume VALUE` does: `{match, action, path?, file?, message?, error?}`.
/// `fork` is the answer to the fork question (default `false`); on yes the session is forked
/// into this project and `file` is the new session file.
pub fn resolve_op(dir: &Path, args: &Value, profile: Profile) -> Result<Value, SessionError> {
    let place = Place::of(dir, args)?;
    let value = args["value"].as_str().unwrap_or_default();
    let found = find(value, &place.scope(profile));
    let kind = match &found {
        Match::Path(_) => "path",
        Match::Local(_) => "local",
        Match::Global(_) => "global",
        Match::None => "none",
    };
    let outcome = decide(
        value,
        found,
        &place.cwd,
        profile,
        args["fork"].as_bool() == Some(true),
    );
    let mut out = serde_json::to_value(&outcome).map_err(|e| exception(e.to_string()))?;
    out["match"] = json!(kind);
    if let Outcome::Fork { path } = &outcome {
        // Yes to the fork question: `forkFrom` into this project's session directory.
        let scope = place.scope(profile);
        let mut options = super::options(dir, profile);
        options.cwd.clone_from(&place.cwd);
        options.session_dir = scope.local_dir();
        let forked = SessionManager::fork_from(path, &place.cwd, options)?;
        out["file"] = json!(forked.session_file());
    }
    Ok(out)
}

/// `history`: runs `steps` (`{add, cwd?}`, `{recent}`, `{search, limit?}`) against
/// `<agent>/history.db` and answers `{results: [[{id, prompt, cwd?}…]…], schema}`:
/// one list per query step, and the database's tables, indexes and triggers.
pub fn history_op(dir: &Path, args: &Value) -> Result<Value, SessionError> {
    let place = Place::of(dir, args)?;
    let mut history = History::open(&place.store.history_db()).map_err(sql)?;
    let mut results = Vec::new();
    let steps = args["steps"].as_array().map_or(&[][..], Vec::as_slice);
    for step in steps {
        let limit = step["limit"]
            .as_u64()
            .and_then(|l| usize::try_from(l).ok())
            .unwrap_or(100);
        let rows = if let Some(prompt) = step["add"].as_str() {
            history.add(prompt, step["cwd"].as_str()).map_err(sql)?;
            continue;
        } else if let Some(n) = step["recent"].as_u64() {
            history
                .recent(usize::try_from(n).unwrap_or(usize::MAX))
                .map_err(sql)?
        } else if let Some(query) = step["search"].as_str() {
            history.search(query, limit).map_err(sql)?
        } else {
            return Err(exception(format!("unknown history step {step}")));
        };
        let rows: Vec<Value> = rows
            .into_iter()
            .map(|r| {
                let mut row = json!({"id": r.id, "prompt": r.prompt});
                if let Some(cwd) = r.cwd {
                    row["cwd"] = json!(cwd);
                }
                row
            })
            .collect();
        results.push(Value::Array(rows));
    }
    let schema = history.schema_objects().map_err(sql)?;
    Ok(json!({ "results": results, "schema": schema }))
}
