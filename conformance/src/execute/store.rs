//! The reference's answers to the session-store operations: `list`, `recent`, `continue`,
//! `resolve`, `history`, `switch` and `search` (`PROTOCOL.md` "Session stores").
//!
//! Every operation names an agent directory inside the case directory (`agent_dir`,
//! default `agent`; `null`: the profile's default store under `home/`), a virtual working
//! directory (`cwd`), optionally a forced session directory (`session_dir`, relative to
//! the case directory), the terminal's variables (`env`) and its TTY path (`tty`).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
#[cfg(feature = "history")]
use session_reference::history::History;
use session_reference::ids::parse_iso_ms;
use session_reference::listing::{list_all, SessionInfo};
use session_reference::locations::{terminal_id, Store, AGENT_DIR_ENV};
use session_reference::model::Profile;
use session_reference::recent::recent;
use session_reference::resume::{
    choose, continue_recent, decide, find, picker, Match, Outcome, Scope,
};
use session_reference::search::search;
use session_reference::session::{Options, SessionError, SessionManager};
use session_reference::storage::FileStorage;
use session_reference::switching::{start, Start};

/// What every store operation reads from its arguments.
struct Place {
    store: Store,
    cwd: String,
    session_dir: Option<PathBuf>,
}

impl Place {
    /// The place the arguments name; `agent_dir` and `session_dir` must stay inside the
    /// case directory.
    fn of(dir: &Path, args: &Value, profile: Profile) -> Result<Place, SessionError> {
        let agent = match args.get("agent_dir") {
            Some(Value::Null) => default_agent_dir(args, profile),
            _ => args["agent_dir"].as_str().unwrap_or("agent").to_owned(),
        };
        let session_dir = match args["session_dir"].as_str() {
            Some(d) => Some(super::inside(dir, d)?),
            None => None,
        };
        Ok(Place {
            store: Store::new(super::inside(dir, &agent)?),
            cwd: args["cwd"].as_str().unwrap_or("/").to_owned(),
            session_dir,
        })
    }

    /// Options for a session of this place: its cwd, and its local session directory.
    fn options(&self, dir: &Path, profile: Profile) -> Options {
        let mut options = super::options(dir, profile);
        options.cwd.clone_from(&self.cwd);
        options.session_dir = self.scope(profile).local_dir();
        options
    }

    fn scope(&self, profile: Profile) -> Scope<'_> {
        Scope {
            storage: &FileStorage,
            store: &self.store,
            cwd: &self.cwd,
            session_dir: self.session_dir.as_deref(),
            profile,
        }
    }
}

/// The profile's default agent directory under the case's `home/`, relative to the case
/// directory, as the terminal's `env` sets it (`PI_CONFIG_DIR`; `PI_CODING_AGENT_DIR` is
/// the `agent_dir` argument's business and is not read).
fn default_agent_dir(args: &Value, profile: Profile) -> String {
    let env = |name: &str| {
        (name != AGENT_DIR_ENV)
            .then(|| args["env"][name].as_str().map(str::to_owned))
            .flatten()
    };
    Store::default_for(profile, Path::new("home"), &env)
        .agent_dir
        .to_string_lossy()
        .into_owned()
}

/// The terminal id of the request's `tty` and `env`.
fn terminal(args: &Value) -> Option<String> {
    let env = |name: &str| args["env"][name].as_str().map(str::to_owned);
    terminal_id(args["tty"].as_str(), &env)
}

#[cfg(feature = "history")]
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
    let place = Place::of(dir, args, profile)?;
    let sessions: Vec<SessionInfo> = if args["all"].as_bool() == Some(true) {
        list_all(&FileStorage, &place.store.sessions_root(), profile)
    } else {
        place.scope(profile).local_sessions()
    };
    serde_json::to_value(json!({ "sessions": sessions })).map_err(|e| exception(e.to_string()))
}

/// `recent`: `{sessions: [{path, mtime, name, fullName, timeAgo?}…]}`, the `limit`
/// (default 3) newest; `timeAgo` when `now` (an ISO time: the clock) is given.
pub fn recent_op(dir: &Path, args: &Value) -> Result<Value, SessionError> {
    let place = Place::of(dir, args, Profile::Omp)?;
    let limit = args["limit"]
        .as_u64()
        .and_then(|l| usize::try_from(l).ok())
        .unwrap_or(3);
    let now = match args["now"].as_str() {
        Some(text) => Some(
            parse_iso_ms(text).ok_or_else(|| exception(format!("now: not an ISO time: {text}")))?,
        ),
        None => None,
    };
    let sessions = recent(
        &FileStorage,
        &place.scope(Profile::Omp).local_dir(),
        limit,
        now,
    );
    Ok(json!({ "sessions": sessions }))
}

/// `continue`: `{file, new}`: the session `--continue` opened (or the new one it started).
/// `env` holds the terminal variables (`KITTY_WINDOW_ID`, …); `tty` a TTY path.
pub fn continue_op(dir: &Path, args: &Value, profile: Profile) -> Result<Value, SessionError> {
    let place = Place::of(dir, args, profile)?;
    let terminal = terminal(args);
    let options = place.options(dir, profile);
    let (manager, target) = continue_recent(&place.scope(profile), terminal.as_deref(), options)?;
    Ok(json!({
        "file": manager.session_file(),
        "new": target == session_reference::resume::ContinueTarget::New,
    }))
}

/// `resolve`: what `--resume VALUE` does: `{match, action, path?, file?, message?, error?}`.
/// `fork` is the answer to the fork question (default `false`); on yes the session is forked
/// into this project and `file` is the new session file. Without `value` (`--resume`
/// alone): `{match: "picker", action: "pick", sessions: [path…]}`, or the stop on an
/// empty list; with `pick`, what the user did in the picker ([`picked`]).
pub fn resolve_op(dir: &Path, args: &Value, profile: Profile) -> Result<Value, SessionError> {
    let place = Place::of(dir, args, profile)?;
    let Some(value) = args["value"].as_str() else {
        let (kind, outcome) = match (picker(&place.scope(profile)), args.get("pick")) {
            (Outcome::Pick { sessions }, Some(pick)) => ("picker", picked(&sessions, pick)?),
            (outcome @ Outcome::Pick { .. }, None) => ("picker", outcome),
            // omp stops on an empty list before any picker opens.
            (outcome, _) => ("none", outcome),
        };
        let mut out = serde_json::to_value(&outcome).map_err(|e| exception(e.to_string()))?;
        out["match"] = json!(kind);
        return Ok(out);
    };
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
        let forked = SessionManager::fork_from(path, &place.cwd, place.options(dir, profile))?;
        out["file"] = json!(forked.session_file());
    }
    Ok(out)
}

/// The picker's outcome for `pick` (`PROTOCOL.md`, `resolve`): `null` cancels it, a whole
/// number `n` chooses the `n`-th session it offers (from 0); anything else, or a place past
/// the end of the list, is an `exception`.
fn picked(sessions: &[PathBuf], pick: &Value) -> Result<Outcome, SessionError> {
    let choice = match pick {
        Value::Null => None,
        other => Some(
            other
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| exception(format!("pick: not null or a whole number: {other}")))?,
        ),
    };
    choose(sessions, choice).ok_or_else(|| {
        exception(format!(
            "pick {pick}: the picker offers {} session(s)",
            sessions.len()
        ))
    })
}

/// `history` (the `history` feature): runs `steps` (`{add, cwd?}`, `{recent}`, `{search, limit?}`) against
/// `<agent>/history.db` and answers `{results: [[{id, prompt, cwd?}…]…], schema}`:
/// one list per query step, and the database's tables, indexes and triggers.
#[cfg(feature = "history")]
pub fn history_op(dir: &Path, args: &Value) -> Result<Value, SessionError> {
    let place = Place::of(dir, args, Profile::Omp)?;
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

/// `switch`: takes up a session as `start` says (`open`, `create`, `fork`, `switch`; the
/// `file` to open, fork from or switch to) and answers `{file, thinkingLevelAppended}`:
/// the session file, and whether step 14 appended a `thinking_level_change` of
/// `thinkingLevel` (default: the profile's settings default). The breadcrumb it points
/// is in the case's files.
pub fn switch_op(dir: &Path, args: &Value, profile: Profile) -> Result<Value, SessionError> {
    let place = Place::of(dir, args, profile)?;
    let file = match args["file"].as_str() {
        Some(name) => Some(super::inside(dir, name)?),
        None => None,
    };
    let how = match (args["start"].as_str(), file.as_deref()) {
        (Some("create"), _) => Start::Create,
        (Some("open"), Some(f)) => Start::Open(f),
        (Some("fork"), Some(f)) => Start::Fork(f),
        (Some("switch"), Some(f)) => Start::Switch(f),
        (other, _) => {
            return Err(exception(format!(
                "switch: start {other:?} needs one of open, create, fork, switch (and a file but for create)"
            )))
        }
    };
    let level = args["thinkingLevel"].as_str().unwrap_or(
        session_reference::switching::Rules::for_profile(profile).default_thinking_level,
    );
    let terminal = terminal(args);
    let started = start(
        &place.scope(profile),
        terminal.as_deref(),
        how,
        place.options(dir, profile),
        level,
    )?;
    Ok(json!({
        "file": started.manager.session_file(),
        "thinkingLevelAppended": started.thinking_level_change.is_some(),
    }))
}

/// `search`: the sessions of this project's list (`list`) that the picker's search keeps
/// for `query`, best first: `{sessions: [path…]}`.
pub fn search_op(dir: &Path, args: &Value, profile: Profile) -> Result<Value, SessionError> {
    let place = Place::of(dir, args, profile)?;
    let sessions = place.scope(profile).local_sessions();
    let query = args["query"].as_str().unwrap_or_default();
    let paths: Vec<&Path> = search(&sessions, query)
        .into_iter()
        .map(|info| info.path.as_path())
        .collect();
    Ok(json!({ "sessions": paths }))
}
