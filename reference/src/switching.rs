//! Taking up a session from the store: open, create, fork or switch to one, pointing this
//! terminal's breadcrumb at its file (omp), and, on a switch, recording the thinking level
//! when the branch has none.
//!
//! Seed 001 "Runtime switch execution" steps 8 (`setSessionFile` writes the breadcrumb)
//! and 14 (the thinking level); clauses stores.19, stores.20 (13.19.0 `writeTerminalBreadcrumb` in
//! `setSessionFile` and `#newSessionSync`); pi-mono 0.73.1 writes no breadcrumbs and
//! appends the level in `createAgentSession` (`sdk.js`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::entries;
use crate::locations::{write_breadcrumb, Breadcrumb};
use crate::model::{EntryKind, Profile};
use crate::resume::{self, Scope};
use crate::session::{Options, SessionError, SessionManager};

/// The per-profile rules of a switch's thinking level (001 step 14). 003 is silent:
/// operator switches as pi. (Whether a switch points a breadcrumb is
/// [`resume::Rules::uses_breadcrumbs`].)
/// Clauses: stores.20.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// The settings' default thinking level (`defaultThinkingLevel`) a switch records
    /// when the branch has none: pi-mono `"medium"`, omp `"high"`.
    pub default_thinking_level: &'static str,
    /// A switch records the thinking level only when the session has messages (pi-mono's
    /// `createAgentSession`); else whenever the branch has no `thinking_level_change` (omp, 001).
    pub thinking_level_needs_messages: bool,
}

impl Rules {
    /// The rules of `profile`.
    /// Clauses: stores.20.
    pub fn for_profile(profile: Profile) -> Rules {
        match profile {
            Profile::Pi | Profile::Operator => Rules {
                default_thinking_level: "medium",
                thinking_level_needs_messages: true,
            },
            Profile::Omp => Rules {
                default_thinking_level: "high",
                thinking_level_needs_messages: false,
            },
        }
    }
}

/// How the session is taken up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start<'a> {
    /// `SessionManager.open(file)`: the breadcrumb names the header's cwd.
    Open(&'a Path),
    /// `SessionManager.create(cwd)` (and `newSession`): a new file in the session directory.
    Create,
    /// `SessionManager.forkFrom(file, cwd)`: a new file holding the source's entries.
    Fork(&'a Path),
    /// `AgentSession.switchSession(file)` from a session of this cwd: `setSessionFile`,
    /// then step 14.
    Switch(&'a Path),
}

/// What [`start`] did.
pub struct Started {
    /// The session, open.
    pub manager: SessionManager,
    /// The id of the `thinking_level_change` a switch appended (step 14), if any.
    pub thinking_level_change: Option<String>,
}

/// Takes up a session as `how` says, with `options` (whose cwd and session directory
/// should be the scope's). In a profile with breadcrumbs, a known `terminal`'s breadcrumb
/// then names the session file and the session's cwd (a switch: the cwd switched from);
/// a failed breadcrumb write is ignored (seed 001: best effort). A switch then records
/// `thinking_level` (see [`restore_thinking_level`]).
/// Clauses: stores.19, stores.21.
pub fn start(
    scope: &Scope<'_>,
    terminal: Option<&str>,
    how: Start<'_>,
    options: Options,
    thinking_level: &str,
) -> Result<Started, SessionError> {
    let mut manager = match how {
        Start::Open(path) | Start::Switch(path) => SessionManager::open(path, options)?,
        Start::Create => SessionManager::create(options),
        Start::Fork(source) => SessionManager::fork_from(source, scope.cwd, options)?,
    };
    let crumb_cwd = match how {
        Start::Switch(_) => scope.cwd.to_owned(),
        _ => manager.cwd().to_owned(),
    };
    point_breadcrumb(scope, terminal, &crumb_cwd, manager.session_file());
    let thinking_level_change = match how {
        Start::Switch(_) => restore_thinking_level(&mut manager, thinking_level)?,
        _ => None,
    };
    Ok(Started {
        manager,
        thinking_level_change,
    })
}

/// omp's `writeTerminalBreadcrumb(cwd, file)`: `<agent>/terminal-sessions/<terminal>`
/// holds `cwd\nfile\n`. Nothing without breadcrumbs (pi), a terminal or a file; a write
/// error is ignored.
/// Clauses: stores.19, stores.22.
pub fn point_breadcrumb(scope: &Scope<'_>, terminal: Option<&str>, cwd: &str, file: Option<&Path>) {
    if !resume::Rules::for_profile(scope.profile).uses_breadcrumbs {
        return;
    }
    let (Some(terminal), Some(file)) = (terminal, file) else {
        return;
    };
    let crumb = Breadcrumb {
        cwd: cwd.to_owned(),
        file: absolute(file),
    };
    // Best effort: a breadcrumb never fails the operation (seed 001).
    let _ = write_breadcrumb(scope.store, terminal, &crumb);
}

/// Step 14 of the switch: when the branch has no `thinking_level_change`, append one with
/// `level` (the settings' default, clamped to the model by the caller) and flush. pi-mono
/// does so only for a session with messages. Returns the new entry's id.
/// Clauses: stores.20.
pub fn restore_thinking_level(
    manager: &mut SessionManager,
    level: &str,
) -> Result<Option<String>, SessionError> {
    let rules = Rules::for_profile(manager.profile());
    let has_level = manager
        .get_branch(None)
        .iter()
        .any(|e| e.kind == EntryKind::ThinkingLevelChange);
    let has_messages = !manager.build_context().messages.is_empty();
    if has_level || (rules.thinking_level_needs_messages && !has_messages) {
        return Ok(None);
    }
    let id = manager.append(&entries::ThinkingLevelChange {
        thinking_level: Value::String(level.to_owned()),
    })?;
    manager.flush()?;
    Ok(Some(id))
}

/// `path.resolve(file)` for a path the caller made absolute or left relative to the
/// process directory.
fn absolute(file: &Path) -> PathBuf {
    std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locations::{read_breadcrumb, Store};
    use crate::storage::FileStorage;
    use std::fs;

    const HEADER: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/old"}"#;
    const USER: &str = r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#;
    const ASSISTANT: &str = r#"{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[],"timestamp":2}}"#;
    const LEVEL: &str = r#"{"type":"thinking_level_change","id":"t1","parentId":"a1","timestamp":"2026-01-01T00:00:03.000Z","thinkingLevel":"low"}"#;

    fn setup(lines: &[&str]) -> (tempfile::TempDir, Store, PathBuf) {
        let tmp = tempfile::tempdir().expect("dir");
        let store = Store::new(tmp.path().join("agent"));
        let dir = store.session_dir("/p");
        fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("s.jsonl");
        fs::write(&file, format!("{}\n", lines.join("\n"))).expect("write");
        (tmp, store, file)
    }

    fn run(store: &Store, profile: Profile, how: Start<'_>) -> Started {
        let scope = Scope {
            storage: &FileStorage,
            store,
            cwd: "/p",
            session_dir: None,
            profile,
        };
        let options = Options::new(profile, "/p", store.session_dir("/p"));
        start(&scope, Some("wt-1"), how, options, "high").expect("starts")
    }

    #[test]
    fn every_start_points_the_omp_breadcrumb_at_the_file() {
        let (_tmp, store, file) = setup(&[HEADER, USER, ASSISTANT]);
        let crumb = |store: &Store| read_breadcrumb(store, "wt-1").expect("crumb");
        run(&store, Profile::Omp, Start::Open(&file));
        assert_eq!(crumb(&store).cwd, "/old", "open: the header's cwd");
        assert_eq!(crumb(&store).file, file);
        run(&store, Profile::Omp, Start::Switch(&file));
        assert_eq!(crumb(&store).cwd, "/p", "switch: the cwd switched from");
        let created = run(&store, Profile::Omp, Start::Create);
        assert_eq!(
            Some(crumb(&store).file.as_path()),
            created.manager.session_file()
        );
        let forked = run(&store, Profile::Omp, Start::Fork(&file));
        assert_eq!(
            Some(crumb(&store).file.as_path()),
            forked.manager.session_file()
        );
        assert_eq!(crumb(&store).cwd, "/p");
        fs::remove_dir_all(store.breadcrumbs_dir()).expect("clean");
        run(&store, Profile::Pi, Start::Switch(&file));
        assert!(!store.breadcrumbs_dir().exists(), "pi has no breadcrumbs");
    }

    #[test]
    fn a_switch_records_the_thinking_level_only_when_the_branch_has_none() {
        let table: [(&[&str], Profile, bool); 6] = [
            (&[HEADER, USER, ASSISTANT], Profile::Omp, true),
            (&[HEADER, USER, ASSISTANT], Profile::Pi, true),
            (&[HEADER, USER, ASSISTANT, LEVEL], Profile::Omp, false),
            (&[HEADER, USER, ASSISTANT, LEVEL], Profile::Pi, false),
            (&[HEADER], Profile::Omp, true),
            (&[HEADER], Profile::Pi, false),
        ];
        for (lines, profile, appended) in table {
            let (_tmp, store, file) = setup(lines);
            let started = run(&store, profile, Start::Switch(&file));
            assert_eq!(
                started.thinking_level_change.is_some(),
                appended,
                "{profile:?} {lines:?}"
            );
            let opened = run(&store, profile, Start::Open(&file));
            assert_eq!(
                opened.thinking_level_change, None,
                "only a switch records it"
            );
        }
    }
}
