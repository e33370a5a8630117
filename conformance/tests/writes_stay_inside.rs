//! The reference adapter writes only inside the case directory (issue 45): whatever
//! path the reference works out for a session, a blob or a temp file, its
//! [`execute::options`] refuse a write outside the case folder. A run of `cargo mutants`
//! once turned `Scope::local_dir` into an empty path, and every forked session of the
//! store cases was written into the test's working directory (`conformance/cli/`).

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::json;
use session_conformance::execute;
use session_reference::model::Profile;
use session_reference::session::{Options, SessionManager};

/// A session file the fork reads, in the profile's header form.
fn source_text(profile: Profile) -> String {
    let header = match profile {
        Profile::Operator => {
            json!({"type": "session_header", "id": "01a221f4-e2a6-7890-9570-9c681f116832",
            "timestamp": "2026-03-02T12:00:00.000Z", "cwd": "/other"})
        }
        _ => json!({"type": "session", "version": 3, "id": "01a221f4-e2a6-7890-9570-9c681f116832",
            "timestamp": "2026-03-02T12:00:00.000Z", "cwd": "/other"}),
    };
    format!("{header}\n")
}

/// What the reference is asked to do with a session directory it was given.
type Write = fn(&Path, Profile, Options) -> Result<(), String>;

fn fork(case: &Path, _: Profile, options: Options) -> Result<(), String> {
    SessionManager::fork_from(&case.join("source.jsonl"), "/proj", options)
        .map(drop)
        .map_err(|e| e.to_string())
}

fn create_and_flush(_: &Path, _: Profile, options: Options) -> Result<(), String> {
    let mut sm = SessionManager::create(options);
    let user = json!({"role": "user", "content": "hi", "timestamp": 1});
    let assistant = json!({"role": "assistant", "content": [], "timestamp": 2,
        "provider": "p", "model": "m", "stopReason": "stop", "api": "a",
        "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}});
    sm.append_message(user).map_err(|e| e.to_string())?;
    sm.append_message(assistant).map_err(|e| e.to_string())?;
    sm.flush().map_err(|e| e.to_string())
}

/// The names of the files under `dir` (none when it does not exist).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    walk(dir).into_iter().filter(|p| p.is_file()).collect()
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for item in fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = item.path();
            if item.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path.clone());
            }
            out.push(path);
        }
    }
    out
}

#[test]
fn the_reference_adapter_never_writes_outside_the_case_directory() {
    let outside = tempfile::tempdir().expect("temp dir");
    // A relative folder resolves against the process's working directory: the crate
    // folder under `cargo test`, where the stray sessions of issue 45 landed.
    let relative = PathBuf::from(format!("sc-writes-stay-inside-{}", std::process::id()));
    let writes: [(&str, Write); 2] = [("fork", fork), ("create and flush", create_and_flush)];
    let places = [
        ("an empty path (the working directory)", PathBuf::new()),
        ("a relative folder", relative.clone()),
        ("a folder outside", outside.path().join("sessions")),
    ];
    for profile in Profile::ALL {
        for (what, write) in writes {
            for (place, session_dir) in &places {
                let case = tempfile::tempdir().expect("case dir");
                fs::write(case.path().join("source.jsonl"), source_text(profile)).expect("source");
                let cwd_before: Vec<PathBuf> = fs::read_dir(".")
                    .expect("cwd")
                    .flatten()
                    .map(|e| e.path())
                    .collect();
                let mut options = execute::options(case.path(), profile);
                options.session_dir.clone_from(session_dir);
                let result = write(case.path(), profile, options);
                let cwd_after: Vec<PathBuf> = fs::read_dir(".")
                    .expect("cwd")
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| !cwd_before.contains(p))
                    .collect();
                let written_outside = files_under(outside.path());
                // Clean up before asserting, so a failure leaves no stray files behind.
                for path in &cwd_after {
                    let _ = fs::remove_file(path);
                    let _ = fs::remove_dir_all(path);
                }
                let _ = fs::remove_dir_all(outside.path().join("sessions"));
                let label = format!("{profile:?} {what} into {place}");
                assert_eq!(
                    cwd_after,
                    Vec::<PathBuf>::new(),
                    "{label}: wrote into the cwd"
                );
                assert_eq!(
                    written_outside,
                    Vec::<PathBuf>::new(),
                    "{label}: wrote outside"
                );
                let error = result.expect_err(&label);
                assert!(
                    error.contains("outside the case directory"),
                    "{label}: {error}"
                );
            }
        }
    }
}
