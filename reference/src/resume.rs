//! Picking a session up again: `--resume <value>` resolution and `--continue`.
//!
//! Seed 001 "Startup-time resume target resolution" and "--continue resolution and
//! terminal breadcrumb preference"; clauses stores.10–stores.15.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::listing::{find_most_recent, list, list_all, list_project, SessionInfo};
use crate::locations::{
    self, is_path_like, normalize_path, read_breadcrumb, write_breadcrumb, Breadcrumb, Store,
};
use crate::model::Profile;
use crate::session::{Options, SessionError, SessionManager};
use crate::storage::Storage;

/// The per-profile rules of resuming (001; clauses stores.10–stores.15). 003 is silent:
/// operator resumes as pi.
#[derive(Debug, Clone, Copy)]
#[allow(clippy::struct_excessive_bools)] // each flag is one rule of one implementation
pub struct Rules {
    /// A forced session directory keeps `--resume` from searching other projects (omp).
    pub session_dir_is_the_only_scope: bool,
    /// A global match asks to fork only when its cwd differs (omp); else always (pi).
    pub forks_only_from_other_cwd: bool,
    /// `--continue` prefers this terminal's breadcrumb, and opening a session points it
    /// there (omp).
    pub uses_breadcrumbs: bool,
    /// `--resume` without a value stops with `No sessions found` on an empty list (omp);
    /// else the picker opens, empty or not (pi).
    pub picker_stops_when_empty: bool,
    /// The message of a `--resume` value that matched nothing.
    pub not_found: fn(&str) -> String,
    /// What a refused fork prints, and whether it is an error: `(value, cwd)`.
    pub refused_fork: fn(&str, &str) -> (String, bool),
}

impl Rules {
    /// The rules of `profile`.
    pub fn for_profile(profile: Profile) -> Rules {
        match profile {
            Profile::Pi | Profile::Operator => Rules {
                session_dir_is_the_only_scope: false,
                forks_only_from_other_cwd: false,
                uses_breadcrumbs: false,
                picker_stops_when_empty: false,
                not_found: |value| format!("No session found matching '{value}'"),
                refused_fork: |_, _| ("Aborted.".to_owned(), false),
            },
            Profile::Omp => Rules {
                session_dir_is_the_only_scope: true,
                forks_only_from_other_cwd: true,
                uses_breadcrumbs: true,
                picker_stops_when_empty: true,
                not_found: |value| format!("Session \"{value}\" not found."),
                refused_fork: |value, cwd| {
                    (
                        format!("Session \"{value}\" is in another project ({cwd})."),
                        true,
                    )
                },
            },
        }
    }
}

/// What a `--resume` value matched.
#[derive(Debug, Clone, PartialEq)]
pub enum Match {
    /// A path-like value, opened as given.
    Path(PathBuf),
    /// The first session of this project's list whose id starts with the value.
    Local(SessionInfo),
    /// The first session of the list of all projects whose id starts with the value.
    Global(SessionInfo),
    /// Nothing matched.
    None,
}

/// Where resolution looks.
#[derive(Debug, Clone)]
pub struct Scope<'a> {
    /// The files (000's `SessionStorage`): the disk, or memory.
    pub storage: &'a dyn Storage,
    /// The store (its sessions root is what `listAll` scans).
    pub store: &'a Store,
    /// The current working directory.
    pub cwd: &'a str,
    /// A forced session directory (`--session-dir`); else the project's default one.
    pub session_dir: Option<&'a Path>,
    /// The profile.
    pub profile: Profile,
}

impl Scope<'_> {
    /// The directory this project's sessions are listed from (in a flat store, 003, the
    /// sessions root: `get_default_session_dir()` takes no cwd).
    pub fn local_dir(&self) -> PathBuf {
        self.session_dir.map_or_else(
            || {
                if locations::Rules::for_profile(self.profile).flat_sessions {
                    self.store.sessions_root()
                } else {
                    self.store.session_dir(self.cwd)
                }
            },
            Path::to_path_buf,
        )
    }

    /// This project's sessions: the local directory's, in a flat store only those whose header's cwd is this one.
    pub fn local_sessions(&self) -> Vec<SessionInfo> {
        if self.session_dir.is_some() {
            return list(self.storage, &self.local_dir(), self.profile);
        }
        list_project(self.storage, &self.local_dir(), self.cwd, self.profile)
    }
}

/// Resolves a `--resume` value: a path-like value is a path; otherwise an id prefix,
/// matched first in this project's list, then (omp: unless the session directory is
/// forced) across all projects. The first match in list order wins, so an ambiguous
/// prefix picks the most recently active session, without asking (seed 001).
/// Clauses: stores.13.
pub fn find(value: &str, scope: &Scope<'_>) -> Match {
    find_counted(value, scope).0
}

/// [`find`], and how many sessions of the list it matched in start with `value`
/// (more than one: the prefix was ambiguous). Each list is read once.
pub fn find_counted(value: &str, scope: &Scope<'_>) -> (Match, usize) {
    if is_path_like(value) {
        return (Match::Path(PathBuf::from(value)), 0);
    }
    if let (Some(local), n) = first_and_count(scope.local_sessions(), value) {
        return (Match::Local(local), n);
    }
    if Rules::for_profile(scope.profile).session_dir_is_the_only_scope
        && scope.session_dir.is_some()
    {
        return (Match::None, 0);
    }
    let (global, n) = first_and_count(
        list_all(scope.storage, &scope.store.sessions_root(), scope.profile),
        value,
    );
    (global.map_or(Match::None, Match::Global), n)
}

/// The first session of `infos` whose id starts with `prefix`, and how many do.
fn first_and_count(infos: Vec<SessionInfo>, prefix: &str) -> (Option<SessionInfo>, usize) {
    let mut matching = infos
        .into_iter()
        .filter(|info| info.id.as_deref().is_some_and(|id| id.starts_with(prefix)));
    let first = matching.next();
    let count = usize::from(first.is_some()) + matching.count();
    (first, count)
}

/// What the CLI does with a [`Match`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Outcome {
    /// Open this file.
    Open {
        /// The session file.
        path: PathBuf,
    },
    /// Fork this file into the current project (`forkFrom`).
    Fork {
        /// The source session file.
        path: PathBuf,
    },
    /// Open the session picker on these sessions, in list order (`--resume` without a value).
    Pick {
        /// The session files the picker offers.
        sessions: Vec<PathBuf>,
    },
    /// Stop with this message: a refused fork, no match, or nothing to pick.
    Stop {
        /// The text the CLI prints (seed 001 for omp, pi-mono's for pi).
        message: String,
        /// Whether it is an error (exit 1) rather than a cancellation (exit 0).
        error: bool,
    },
}

/// Decides what to do with a match. A match in another project asks `fork` (the user's
/// answer): omp asks only when the session's cwd differs from `cwd`, pi for every global match.
/// Clauses: stores.13, stores.14.
pub fn decide(value: &str, found: Match, cwd: &str, profile: Profile, fork: bool) -> Outcome {
    match found {
        Match::Path(path) | Match::Local(SessionInfo { path, .. }) => Outcome::Open { path },
        Match::Global(info) => {
            let elsewhere = !Rules::for_profile(profile).forks_only_from_other_cwd
                || normalize_path(&info.cwd) != normalize_path(cwd);
            if !elsewhere {
                Outcome::Open { path: info.path }
            } else if fork {
                Outcome::Fork { path: info.path }
            } else {
                refused(value, &info.cwd, profile)
            }
        }
        Match::None => Outcome::Stop {
            message: (Rules::for_profile(profile).not_found)(value),
            error: true,
        },
    }
}

/// `--resume` without a value (seed 001 "--resume (no value)"): the picker on this
/// project's list (`SessionManager.list(cwd, sessionDir)`); omp stops with
/// `No sessions found` (not an error: exit 0) when the list is empty, pi opens it anyway.
/// Clauses: stores.15, stores.18.
pub fn picker(scope: &Scope<'_>) -> Outcome {
    let sessions: Vec<PathBuf> = scope
        .local_sessions()
        .into_iter()
        .map(|info| info.path)
        .collect();
    if sessions.is_empty() && Rules::for_profile(scope.profile).picker_stops_when_empty {
        return Outcome::Stop {
            message: "No sessions found".to_owned(),
            error: false,
        };
    }
    Outcome::Pick { sessions }
}

/// What the user does in the picker `sessions` (001 "--resume (no value)", "Cancellation
/// paths"): `Some(n)` chooses the `n`-th session offered (from 0), which is opened; `None`
/// cancels it (Esc), which stops with `No session selected`, not an error (exit 0). `None`
/// back when `n` is past the end of the list: there is nothing there to choose.
/// Clauses: stores.15, stores.18.
pub fn choose(sessions: &[PathBuf], choice: Option<usize>) -> Option<Outcome> {
    match choice {
        None => Some(Outcome::Stop {
            message: "No session selected".to_owned(),
            error: false,
        }),
        Some(n) => sessions
            .get(n)
            .map(|path| Outcome::Open { path: path.clone() }),
    }
}

fn refused(value: &str, cwd: &str, profile: Profile) -> Outcome {
    let (message, error) = (Rules::for_profile(profile).refused_fork)(value, cwd);
    Outcome::Stop { message, error }
}

/// Which file `--continue` chose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "via", content = "path", rename_all = "snake_case")]
pub enum ContinueTarget {
    /// This terminal's breadcrumb (omp): same cwd, file still there.
    Breadcrumb(PathBuf),
    /// The newest valid file of the session directory.
    Newest(PathBuf),
    /// Nothing found: a new session.
    New,
}

/// Chooses the file `--continue` opens: the terminal's breadcrumb when `terminal` is known
/// and the breadcrumb is valid for `cwd` (omp only), else the newest file of the session
/// directory, else a new session (seed 001).
/// Clauses: stores.11.
pub fn continue_target(scope: &Scope<'_>, terminal: Option<&str>) -> ContinueTarget {
    if Rules::for_profile(scope.profile).uses_breadcrumbs {
        let crumb = terminal.and_then(|t| read_breadcrumb(scope.store, t));
        if let Some(crumb) = crumb.filter(|c| c.valid_for(scope.cwd)) {
            return ContinueTarget::Breadcrumb(crumb.file);
        }
    }
    find_most_recent(scope.storage, &scope.local_dir(), scope.profile)
        .map_or(ContinueTarget::New, ContinueTarget::Newest)
}

/// `SessionManager.continueRecent`: opens the [`continue_target`] with `options` (whose
/// cwd and session directory should be the scope's), or starts a new session. omp then
/// points the terminal's breadcrumb at the session file; a failed breadcrumb write is ignored.
/// Clauses: stores.10.
pub fn continue_recent(
    scope: &Scope<'_>,
    terminal: Option<&str>,
    options: Options,
) -> Result<(SessionManager, ContinueTarget), SessionError> {
    let target = continue_target(scope, terminal);
    let manager = match &target {
        ContinueTarget::Breadcrumb(path) | ContinueTarget::Newest(path) => {
            SessionManager::open(path, options)?
        }
        ContinueTarget::New => SessionManager::create(options),
    };
    let uses_breadcrumbs = Rules::for_profile(scope.profile).uses_breadcrumbs;
    if let (true, Some(terminal), Some(file)) = (uses_breadcrumbs, terminal, manager.session_file())
    {
        let crumb = Breadcrumb {
            cwd: scope.cwd.to_owned(),
            file: file.to_path_buf(),
        };
        // Best effort: a breadcrumb never fails the operation (seed 001).
        let _ = write_breadcrumb(scope.store, terminal, &crumb);
    }
    Ok((manager, target))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::FileStorage;
    use std::fs;
    use std::time::{Duration, SystemTime};

    fn session(dir: &Path, name: &str, id: &str, cwd: &str, mtime_s: u64) -> PathBuf {
        let path = dir.join(name);
        fs::create_dir_all(dir).expect("dir");
        let text = format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"{cwd}\"}}\n\
             {{\"type\":\"message\",\"id\":\"u1\",\"parentId\":null,\"timestamp\":\"2026-01-0{}T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"hi\"}}}}\n",
            mtime_s % 9 + 1
        );
        fs::write(&path, text).expect("write");
        fs::File::options()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(mtime_s)))
            .expect("mtime");
        path
    }

    #[test]
    fn the_picker_opens_a_choice_and_stops_on_a_cancel() {
        let offered = [PathBuf::from("new.jsonl"), PathBuf::from("old.jsonl")];
        let cancelled = Outcome::Stop {
            message: "No session selected".into(),
            error: false,
        };
        let cases: [(Option<usize>, Option<Outcome>); 4] = [
            (None, Some(cancelled)),
            (
                Some(0),
                Some(Outcome::Open {
                    path: offered[0].clone(),
                }),
            ),
            (
                Some(1),
                Some(Outcome::Open {
                    path: offered[1].clone(),
                }),
            ),
            (Some(2), None),
        ];
        for (choice, expected) in cases {
            assert_eq!(choose(&offered, choice), expected, "{choice:?}");
        }
    }

    #[test]
    fn resolution_goes_path_then_local_then_global() {
        let tmp = tempfile::tempdir().expect("dir");
        let store = Store::new(tmp.path());
        let here = store.session_dir("/here");
        let there = store.session_dir("/there");
        session(&here, "a.jsonl", "aaaa1111", "/here", 2);
        session(&here, "b.jsonl", "aaaa2222", "/here", 3);
        session(&there, "c.jsonl", "cccc3333", "/there", 1);
        for profile in [Profile::Pi, Profile::Omp] {
            let scope = Scope {
                storage: &FileStorage,
                store: &store,
                cwd: "/here",
                session_dir: None,
                profile,
            };
            let outcome = |v: &str, fork: bool| decide(v, find(v, &scope), "/here", profile, fork);
            assert_eq!(
                outcome("x/y.jsonl", false),
                Outcome::Open {
                    path: "x/y.jsonl".into()
                }
            );
            assert_eq!(
                outcome("aaaa", false),
                Outcome::Open {
                    path: here.join("b.jsonl")
                },
                "the most recent of an ambiguous prefix"
            );
            assert_eq!(
                outcome("cccc", true),
                Outcome::Fork {
                    path: there.join("c.jsonl")
                }
            );
            let refused = outcome("cccc", false);
            let not_found = outcome("zz", false);
            match profile {
                Profile::Pi | Profile::Operator => {
                    assert_eq!(
                        refused,
                        Outcome::Stop {
                            message: "Aborted.".into(),
                            error: false
                        }
                    );
                    assert_eq!(
                        not_found,
                        Outcome::Stop {
                            message: "No session found matching 'zz'".into(),
                            error: true
                        }
                    );
                }
                Profile::Omp => {
                    assert_eq!(
                        refused,
                        Outcome::Stop {
                            message: "Session \"cccc\" is in another project (/there).".into(),
                            error: true
                        }
                    );
                    assert_eq!(
                        not_found,
                        Outcome::Stop {
                            message: "Session \"zz\" not found.".into(),
                            error: true
                        }
                    );
                }
            }
        }
        let forced = Scope {
            storage: &FileStorage,
            store: &store,
            cwd: "/here",
            session_dir: Some(&here),
            profile: Profile::Omp,
        };
        assert_eq!(
            find("cccc", &forced),
            Match::None,
            "a forced dir is not searched globally"
        );
    }

    #[test]
    fn the_picker_offers_the_local_list_and_omp_stops_on_an_empty_one() {
        let tmp = tempfile::tempdir().expect("dir");
        let store = Store::new(tmp.path());
        let here = store.session_dir("/here");
        let older = session(&here, "a.jsonl", "aaaa1111", "/here", 2);
        let newer = session(&here, "b.jsonl", "bbbb2222", "/here", 3);
        session(&store.session_dir("/there"), "c.jsonl", "cccc", "/there", 4);
        for profile in [Profile::Pi, Profile::Omp] {
            let scope = |cwd| Scope {
                storage: &FileStorage,
                store: &store,
                cwd,
                session_dir: None,
                profile,
            };
            assert_eq!(
                picker(&scope("/here")),
                Outcome::Pick {
                    sessions: vec![newer.clone(), older.clone()]
                }
            );
            let empty = picker(&scope("/nowhere"));
            let want = if profile == Profile::Omp {
                Outcome::Stop {
                    message: "No sessions found".into(),
                    error: false,
                }
            } else {
                Outcome::Pick { sessions: vec![] }
            };
            assert_eq!(empty, want, "{profile:?}");
        }
    }

    #[test]
    fn continue_prefers_a_valid_breadcrumb_then_the_newest_file() {
        let tmp = tempfile::tempdir().expect("dir");
        let store = Store::new(tmp.path());
        let dir = store.session_dir("/p");
        let old = session(&dir, "old.jsonl", "s-old", "/p", 1);
        let new = session(&dir, "new.jsonl", "s-new", "/p", 2);
        let scope = Scope {
            storage: &FileStorage,
            store: &store,
            cwd: "/p",
            session_dir: None,
            profile: Profile::Omp,
        };
        assert_eq!(
            continue_target(&scope, Some("kitty-1")),
            ContinueTarget::Newest(new.clone())
        );
        let crumb = |cwd: &str, file: &Path| Breadcrumb {
            cwd: cwd.into(),
            file: file.into(),
        };
        write_breadcrumb(&store, "kitty-1", &crumb("/p", &old)).expect("crumb");
        assert_eq!(
            continue_target(&scope, Some("kitty-1")),
            ContinueTarget::Breadcrumb(old.clone())
        );
        assert_eq!(
            continue_target(&scope, None),
            ContinueTarget::Newest(new.clone()),
            "unknown terminal"
        );
        let pi = Scope {
            storage: &FileStorage,
            profile: Profile::Pi,
            ..scope.clone()
        };
        assert_eq!(
            continue_target(&pi, Some("kitty-1")),
            ContinueTarget::Newest(new.clone()),
            "pi has no breadcrumbs"
        );
        write_breadcrumb(&store, "kitty-1", &crumb("/elsewhere", &old)).expect("crumb");
        assert_eq!(
            continue_target(&scope, Some("kitty-1")),
            ContinueTarget::Newest(new.clone()),
            "wrong cwd"
        );
        write_breadcrumb(&store, "kitty-1", &crumb("/p", &dir.join("deleted.jsonl")))
            .expect("crumb");
        assert_eq!(
            continue_target(&scope, Some("kitty-1")),
            ContinueTarget::Newest(new.clone()),
            "deleted file"
        );
        let empty = Scope {
            storage: &FileStorage,
            cwd: "/empty",
            ..scope.clone()
        };
        assert_eq!(continue_target(&empty, None), ContinueTarget::New);

        let options = Options::new(Profile::Omp, "/p", &dir);
        let (manager, target) = continue_recent(&scope, Some("kitty-2"), options).expect("opens");
        assert_eq!(target, ContinueTarget::Newest(new.clone()));
        assert_eq!(manager.session_id(), "s-new");
        assert_eq!(read_breadcrumb(&store, "kitty-2"), Some(crumb("/p", &new)));
    }

    #[test]
    fn a_breadcrumb_that_cannot_be_written_does_not_fail_continue() {
        let tmp = tempfile::tempdir().expect("dir");
        let store = Store::new(tmp.path());
        fs::write(store.breadcrumbs_dir(), "a file where the folder should be").expect("block");
        let dir = store.session_dir("/p");
        session(&dir, "s.jsonl", "s1", "/p", 1);
        let scope = Scope {
            storage: &FileStorage,
            store: &store,
            cwd: "/p",
            session_dir: None,
            profile: Profile::Omp,
        };
        let options = Options::new(Profile::Omp, "/p", &dir);
        let (manager, _) = continue_recent(&scope, Some("kitty-1"), options).expect("still opens");
        assert_eq!(manager.session_id(), "s1");
    }
}
