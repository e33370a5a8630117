//! `session-conformance sessions`: look at a real session store with the reference:
//! list its sessions, show one, explain what `--resume VALUE` would open.
//!
//! Nothing here writes to the store, all the way down: every file is listed and read
//! through [`ReadOnlyStorage`] (the reference's file storage removes dead writers' temp
//! files as it reads a session, which a shared store must not see an inspection do),
//! and `resolve` reports the decision instead of forking.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use session_reference::listing::{self, SessionInfo};
use session_reference::locations::Store;
use session_reference::model::Profile;
use session_reference::recent::{self, RecentSession};
use session_reference::resume::{decide, find, find_counted, Match, Outcome, Scope};

use crate::inspect::{self, InspectError, InspectErrorKind};
use session_conformance::guard::printable;
use session_conformance::read_only::ReadOnlyStorage;

/// Where the `sessions` commands look.
#[derive(Debug, Clone)]
pub struct Place {
    /// The agent directory.
    pub store: Store,
    /// The dialect.
    pub profile: Profile,
    /// The working directory whose project is "this project".
    pub cwd: String,
    /// A forced session directory (`--dir`), instead of the project's default one.
    pub session_dir: Option<PathBuf>,
    /// What every file is read through: nothing is written or removed.
    storage: ReadOnlyStorage,
}

impl Place {
    /// The default store for `profile` (`auto`: omp when only `~/.omp/agent/sessions`
    /// exists, operator when only `~/.operator/profiles/<name>/sessions` does, else pi),
    /// overridden by `agent_dir`.
    pub fn new(
        profile: Option<Profile>,
        agent_dir: Option<PathBuf>,
        cwd: String,
        session_dir: Option<PathBuf>,
    ) -> Place {
        let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
        let env = |name: &str| std::env::var(name).ok();
        let profile = profile.unwrap_or_else(|| {
            let has = |p| Store::default_for(p, &home, &env).sessions_root().is_dir();
            if has(Profile::Omp) && !has(Profile::Pi) {
                Profile::Omp
            } else if has(Profile::Operator) && !has(Profile::Pi) {
                Profile::Operator
            } else {
                Profile::Pi
            }
        });
        let store = agent_dir.map_or_else(|| Store::default_for(profile, &home, &env), Store::new);
        Place {
            store,
            profile,
            cwd,
            session_dir,
            storage: ReadOnlyStorage::default(),
        }
    }

    /// The resolution scope.
    pub fn scope(&self) -> Scope<'_> {
        Scope {
            storage: &self.storage,
            store: &self.store,
            cwd: &self.cwd,
            session_dir: self.session_dir.as_deref(),
            profile: self.profile,
        }
    }

    /// For an empty listing, where it looked: `(none in DIR)`.
    fn nothing_found(&self, all: bool, empty: bool) -> String {
        if !empty {
            return String::new();
        }
        let dir = if all
            && !session_reference::locations::Rules::for_profile(self.profile).flat_sessions
        {
            self.store.sessions_root()
        } else {
            self.scope().local_dir()
        };
        format!("(none in {})\n", printable(&dir.display().to_string()))
    }

    /// The session files `list` reads: this project's, or every project's.
    pub fn files(&self, all: bool) -> Vec<PathBuf> {
        if session_reference::locations::Rules::for_profile(self.profile).flat_sessions {
            // 003: one flat directory; `list_full` filters a project by the header's cwd.
            listing::session_files(&self.storage, &self.scope().local_dir())
        } else if all {
            listing::project_files(&self.storage, &self.store.sessions_root())
        } else {
            listing::session_files(&self.storage, &self.scope().local_dir())
        }
    }
}

/// A folder of the store that `list` could not read: it is skipped, the rest listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadableFolder {
    /// The folder.
    pub path: PathBuf,
    /// The system's message.
    pub message: String,
}

impl std::fmt::Display for UnreadableFolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: cannot read: {}; its sessions are not listed",
            printable(&self.path.display().to_string()),
            self.message
        )
    }
}

/// The folders `list` reads that cannot be read (a missing one is no error): this
/// project's folder, or with `all` the sessions root and each project folder in it
/// (links to folders are not followed, as the listing does not follow them).
pub fn unreadable_folders(place: &Place, all: bool) -> Vec<UnreadableFolder> {
    let root =
        if all && !session_reference::locations::Rules::for_profile(place.profile).flat_sessions {
            place.store.sessions_root()
        } else {
            return unreadable(&place.scope().local_dir()).into_iter().collect();
        };
    let items = match std::fs::read_dir(&root) {
        Ok(items) => items,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            return vec![UnreadableFolder {
                path: root,
                message: e.to_string(),
            }]
        }
    };
    let mut folders: Vec<UnreadableFolder> = items
        .flatten()
        .filter(|item| item.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|item| unreadable(&item.path()))
        .collect();
    folders.sort_by(|a, b| a.path.cmp(&b.path));
    folders
}

/// `dir` when it exists and cannot be listed, with the reason.
fn unreadable(dir: &Path) -> Option<UnreadableFolder> {
    match std::fs::read_dir(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Some(UnreadableFolder {
            path: dir.to_owned(),
            message: e.to_string(),
        }),
        _ => None,
    }
}

/// `sessions list` from 4 KB prefixes: a table (id, name, messages, modified) or JSON.
/// A message count read from a prefix that did not hold the whole file ends in `+`.
pub fn list_quick(place: &Place, all: bool, json: bool) -> String {
    if session_reference::locations::Rules::for_profile(place.profile).flat_sessions {
        // A flat store (003) is told apart by each header's cwd: the whole-file listing reads it.
        return list_full(place, all, json);
    }
    let files = place.files(all);
    let sessions = recent::summaries(&place.storage, &files);
    if json {
        let rows: Vec<Value> = sessions.iter().map(summary_json).collect();
        return format!("{}\n", Value::Array(rows));
    }
    let rows: Vec<[String; 4]> = sessions
        .iter()
        .map(|s| {
            let plus = if s.complete { "" } else { "+" };
            [
                printable(&s.id).into_owned(),
                printable(&s.name).into_owned(),
                format!("{}{plus}", s.messages),
                printable(&s.mtime).into_owned(),
            ]
        })
        .collect();
    // The quick view's name and time are the welcome screen's (omp getRecentSessions).
    let head = [
        "ID",
        "NAME (title or first prompt)",
        "MESSAGES",
        "FILE MODIFIED",
    ];
    table(head, &rows) + &place.nothing_found(all, rows.is_empty())
}

fn summary_json(s: &RecentSession) -> Value {
    json!({
        "path": s.path, "id": s.id, "cwd": s.cwd, "name": s.name,
        "messages": s.messages, "complete": s.complete, "modified": s.mtime,
    })
}

/// `sessions list --full`: whole files, the profile's `SessionInfo` (what the resume picker shows).
pub fn list_full(place: &Place, all: bool, json: bool) -> String {
    let sessions = if all {
        listing::list_all(&place.storage, &place.store.sessions_root(), place.profile)
    } else {
        place.scope().local_sessions()
    };
    if json {
        return format!("{}\n", json!(sessions));
    }
    let rows: Vec<[String; 4]> = sessions
        .iter()
        .map(|s| {
            [
                printable(s.id.as_deref().unwrap_or_default()).into_owned(),
                printable(&display_name(s)).into_owned(),
                s.message_count.to_string(),
                printable(&s.modified).into_owned(),
            ]
        })
        .collect();
    // The resume picker's name and time (SessionInfo): pi's time is the last activity.
    let modified = if place.profile == Profile::Pi {
        "LAST MESSAGE (else created)"
    } else {
        "FILE MODIFIED"
    };
    let head = [
        "ID",
        "NAME (name, title or first message)",
        "MESSAGES",
        modified,
    ];
    table(head, &rows) + &place.nothing_found(all, rows.is_empty())
}

/// A SessionInfo's name for the table: name, title, first message, on one line.
fn display_name(info: &SessionInfo) -> String {
    let title = info.title.as_ref().and_then(Value::as_str);
    let chosen = info
        .name
        .as_deref()
        .or(title)
        .unwrap_or(&info.first_message);
    recent::truncate_name(&recent::sanitize_name(chosen).unwrap_or_default())
}

/// The `sessions list` table: one row per session, columns padded, a count last.
fn table(head: [&str; 4], rows: &[[String; 4]]) -> String {
    let mut widths = head.map(str::len);
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: [&str; 4]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", padded.join("  ").trim_end());
    };
    line(head);
    for row in rows {
        line([&row[0], &row[1], &row[2], &row[3]]);
    }
    let _ = writeln!(out, "{} session(s)", rows.len());
    out
}

/// `sessions resolve VALUE`: what `--resume VALUE` would open, and why.
pub fn resolve(place: &Place, value: &str) -> String {
    let scope = place.scope();
    let (found, n) = find_counted(value, &scope);
    let mut out = String::new();
    let why = match &found {
        Match::Path(path) => format!("{value:?} looks like a path (it holds / or \\ or ends in .jsonl): {} is opened as given", path.display()),
        Match::None => format!("no session id starts with {value:?}, in this project ({}) or any other", scope.local_dir().display()),
        Match::Local(info) | Match::Global(info) => {
            let scope_name = if matches!(found, Match::Local(_)) {
                "this project"
            } else {
                "another project"
            };
            let mut why = format!(
                "{} (id {}, cwd {}) in {scope_name}",
                info.path.display(),
                info.id.as_deref().unwrap_or("?"),
                info.cwd
            );
            if n > 1 {
                let _ = write!(why, "; {n} sessions start with {value:?}: the first in list order (the most recently active) is taken, without asking");
            }
            why
        }
    };
    let _ = writeln!(out, "match: {}", printable(&why));
    let outcome = |fork| decide(value, found.clone(), &place.cwd, place.profile, fork);
    match outcome(false) {
        Outcome::Open { path } => {
            let _ = writeln!(out, "action: open {}", shown(&path));
        }
        Outcome::Stop { message, .. } if matches!(found, Match::Global(_)) => {
            let _ = writeln!(
                out,
                "action: asks whether to fork it into {}",
                printable(&place.cwd)
            );
            let _ = writeln!(out, "  yes: fork into this project's session directory");
            let _ = writeln!(out, "  no: {}", printable(&message));
        }
        Outcome::Stop { message, .. } => {
            let _ = writeln!(out, "action: stop: {}", printable(&message));
        }
        Outcome::Fork { path } => {
            let _ = writeln!(out, "action: fork {}", shown(&path));
        }
        // `decide` never picks: the picker is `--resume` without a value.
        Outcome::Pick { sessions } => {
            let _ = writeln!(out, "action: pick one of {} sessions", sessions.len());
        }
    }
    out
}

/// `sessions show ID-OR-PATH`: the file, the tree picture and a summary of the context at the leaf.
pub fn show(place: &Place, value: &str) -> Result<String, InspectError> {
    let file = match find(value, &place.scope()) {
        Match::Path(path) => path,
        Match::Local(info) | Match::Global(info) => info.path,
        Match::None => {
            return Err(InspectError {
                file: value.to_owned(),
                kind: InspectErrorKind::NoMatch,
            })
        }
    };
    // A session of the store is a regular file: a FIFO or a device is named, not opened.
    let meta = std::fs::metadata(&file).map_err(|e| InspectError {
        file: shown(&file),
        kind: InspectErrorKind::Io(e.to_string()),
    })?;
    if !meta.is_file() {
        return Err(InspectError {
            file: shown(&file),
            kind: InspectErrorKind::NotRegular(session_conformance::guard::kind_name(
                meta.file_type(),
            )),
        });
    }
    let mut out = String::new();
    let _ = writeln!(out, "file: {}", shown(&file));
    let loaded = inspect::load(&file, place.profile)?;
    let _ = writeln!(
        out,
        "session: {} (cwd {})",
        printable(loaded["header"]["id"].as_str().unwrap_or("?")),
        printable(loaded["header"]["cwd"].as_str().unwrap_or("?"))
    );
    let _ = writeln!(out, "\n{}", inspect::tree_text(&file, place.profile)?);
    let context = inspect::context(&file, place.profile, None)?;
    let _ = writeln!(out, "context at the leaf: {}", context_summary(&context));
    Ok(out)
}

/// A path for the terminal: control characters escaped.
fn shown(path: &Path) -> String {
    printable(&path.display().to_string()).into_owned()
}

/// `N messages (user a, assistant b, …); thinking level; model`.
fn context_summary(context: &Value) -> String {
    let messages = context["messages"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let mut roles: Vec<(String, usize)> = Vec::new();
    for m in messages {
        let role = m["role"].as_str().unwrap_or("?").to_owned();
        match roles.iter_mut().find(|(r, _)| *r == role) {
            Some((_, n)) => *n += 1,
            None => roles.push((role, 1)),
        }
    }
    let roles: Vec<String> = roles
        .iter()
        .map(|(r, n)| format!("{} {n}", printable(r)))
        .collect();
    let model = context
        .get("model")
        .or_else(|| context.pointer("/models/default"))
        .filter(|m| !m.is_null())
        .map_or_else(|| "none".to_owned(), Value::to_string);
    format!(
        "{} message(s) ({}); thinking level {}; model {}",
        messages.len(),
        roles.join(", "),
        printable(context["thinkingLevel"].as_str().unwrap_or("none")),
        printable(&model)
    )
}

/// The sessions root `check` validates: `--dir`, else the whole store.
pub fn check_root(place: &Place) -> PathBuf {
    place
        .session_dir
        .clone()
        .unwrap_or_else(|| place.store.sessions_root())
}

/// A sessions folder that does not exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoSuchDirectory {
    /// The folder.
    pub path: PathBuf,
}

impl std::fmt::Display for NoSuchDirectory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: no such directory", self.path.display())
    }
}

impl std::error::Error for NoSuchDirectory {}

/// Whether `path` exists, for a clear error before a long walk.
pub fn exists(path: &Path) -> Result<(), NoSuchDirectory> {
    if path.exists() {
        Ok(())
    } else {
        Err(NoSuchDirectory {
            path: path.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn place(dir: &Path, profile: Profile) -> Place {
        Place::new(Some(profile), Some(dir.to_path_buf()), "/proj".into(), None)
    }

    fn write(path: &Path, id: &str, text: &str) {
        fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        let body = format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/proj\"}}\n\
             {{\"type\":\"message\",\"id\":\"a0000001\",\"parentId\":null,\"timestamp\":\"2026-01-02T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"{text}\"}}}}\n"
        );
        fs::write(path, body).expect("write");
    }

    #[test]
    fn list_show_and_resolve_a_small_store() {
        let tmp = tempfile::tempdir().expect("dir");
        let dir = tmp.path().join("sessions/--proj--");
        write(&dir.join("a.jsonl"), "aaaa1111", "first prompt");
        write(&dir.join("b.jsonl"), "aaaa2222", "second prompt");
        let p = place(tmp.path(), Profile::Pi);
        let quick = list_quick(&p, false, false);
        assert!(quick.starts_with("ID"), "{quick}");
        assert!(
            quick.contains("aaaa1111  first prompt                  1"),
            "{quick}"
        );
        assert!(quick.ends_with("2 session(s)\n"), "{quick}");
        let full: Value = serde_json::from_str(&list_full(&p, true, true)).expect("json");
        assert_eq!(full.as_array().map(Vec::len), Some(2));
        let why = resolve(&p, "aaaa");
        assert!(why.contains("2 sessions start with \"aaaa\""), "{why}");
        assert!(why.contains("action: open"), "{why}");
        assert!(resolve(&p, "zz").contains("No session found matching 'zz'"));
        let shown = show(&p, "aaaa1").expect("shows");
        assert!(shown.contains("session: aaaa1111"), "{shown}");
        assert!(shown.contains("1 message(s) (user 1)"), "{shown}");
        assert!(show(&p, "zz").is_err());
    }

    #[test]
    fn a_long_file_shows_a_partial_count() {
        let tmp = tempfile::tempdir().expect("dir");
        let dir = tmp.path().join("sessions/--proj--");
        write(&dir.join("long.jsonl"), "llll", &"x".repeat(5000));
        let quick = list_quick(&place(tmp.path(), Profile::Omp), false, false);
        assert!(quick.contains(" 0+ "), "{quick}");
    }
}
