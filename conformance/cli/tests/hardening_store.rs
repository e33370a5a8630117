//! Issue #41 (the second attack run), the items about stores, `serve` and inspection:
//! each test reproduces what the attack found and fails without its fix.

use std::fs;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use snapbox::cmd::Command;

fn cli() -> Command {
    Command::new(snapbox::cmd::cargo_bin!("session-conformance"))
        .env_remove("CI")
        .timeout(Duration::from_mins(1))
}

const HEADER: &str = r#"{"type":"session","version":3,"id":"7f3a0000-0000-4000-8000-000000000001","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/proj"}"#;
const USER: &str = r#"{"type":"message","id":"aaaa0001","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#;

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().expect("parent")).expect("folders");
    fs::write(path, text).expect("write");
}

/// A store `agent/` with one session of the project `/proj`; returns the session file.
fn store(root: &Path) -> std::path::PathBuf {
    let file = root.join("agent/sessions/--proj--/2026-01-01T00-00-00-000Z_7f3a.jsonl");
    write(&file, &format!("{HEADER}\n{USER}\n"));
    file
}

fn mkfifo(path: &Path) {
    fs::create_dir_all(path.parent().expect("parent")).expect("folders");
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo");
    assert!(made.success());
}

/// Item 2: the `sessions` commands that open whole sessions leave a temp file of a
/// writer they cannot see alone (its PID is not alive here, but the store may be shared).
#[test]
fn sessions_commands_delete_nothing() {
    let root = tempfile::tempdir().expect("dir");
    let file = store(root.path());
    let temp = file.with_file_name(".2026-01-01T00-00-00-000Z_7f3a.jsonl.4000000000.tmp");
    write(&temp, "a rewrite in progress\n");
    let agent = root.path().join("agent");
    let agent = agent.to_str().expect("utf-8");
    let runs: [&[&str]; 5] = [
        &["list", "--full"],
        &["list", "--full", "--all"],
        &["resolve", "7f3a"],
        &["show", "7f3a"],
        &["list"],
    ];
    for args in runs {
        cli()
            .args([
                "sessions",
                "--profile",
                "pi",
                "--agent-dir",
                agent,
                "--cwd",
                "/proj",
            ])
            .args(args)
            .assert()
            .success();
        assert!(
            temp.exists(),
            "sessions {args:?} removed {}",
            temp.display()
        );
    }
    for command in ["load", "context", "tree", "validate"] {
        let _ = cli()
            .arg(command)
            .arg(&file)
            .args(["--profile", "pi"])
            .assert();
        assert!(temp.exists(), "{command} removed {}", temp.display());
    }
}

/// Item 8: one project folder that cannot be read hides only its own sessions; it is
/// named on stderr and the exit status says the listing is incomplete. Root reads any
/// folder, so the command then runs as `nobody`.
#[test]
fn an_unreadable_project_folder_is_reported_and_the_rest_listed() {
    let root = tempfile::tempdir().expect("dir");
    store(root.path());
    let closed = root.path().join("agent/sessions/--closed--");
    write(&closed.join("x.jsonl"), &format!("{HEADER}\n{USER}\n"));
    for dir in [
        root.path(),
        &root.path().join("agent"),
        &root.path().join("agent/sessions"),
    ] {
        set_mode(dir, 0o755);
    }
    set_mode(&root.path().join("agent/sessions/--proj--"), 0o755);
    for file in fs::read_dir(root.path().join("agent/sessions/--proj--")).expect("dir") {
        set_mode(&file.expect("entry").path(), 0o644);
    }
    set_mode(&closed, 0o000);
    let bin = snapbox::cmd::cargo_bin!("session-conformance");
    let agent = root.path().join("agent");
    for full in [false, true] {
        let mut command = if is_root() {
            Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(bin)
        } else {
            Command::new(bin)
        };
        command = command
            .args([
                "sessions",
                "list",
                "--all",
                "--profile",
                "pi",
                "--agent-dir",
            ])
            .arg(&agent)
            .env_remove("CI")
            .timeout(Duration::from_mins(1));
        if full {
            command = command.arg("--full");
        }
        let output = command.assert().code(1).get_output().clone();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stdout.contains("1 session(s)"), "--full {full}: {stdout}");
        assert!(
            stderr.contains("--closed--: cannot read"),
            "--full {full}: {stderr}"
        );
    }
    set_mode(&closed, 0o755);
}

fn is_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
}

/// One request to `serve --profile omp` in `dir`, answered within the command's timeout.
fn serve(dir: &Path, op: &str, args: &Value) -> Value {
    let request = json!({"type": "request", "case": "c", "op": op, "profile": "omp",
        "dir": dir.to_str().expect("utf-8"), "args": args});
    let out = cli()
        .args(["serve", "--profile", "omp"])
        .stdin(format!("{request}\n"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).expect("one JSON answer")
}

/// How a breadcrumb that is not a regular file is made.
type Make = fn(&Path);

/// Item 4: a breadcrumb that is a FIFO or a link to `/dev/zero` is not waited on or
/// read without end; one that is a link is replaced, never written through.
#[test]
fn breadcrumbs_are_regular_files_only() {
    let continue_args =
        json!({"agent_dir": "agent", "cwd": "/proj", "env": {"KITTY_WINDOW_ID": "7"}});
    let places: [(&str, Make); 2] = [
        ("fifo", |crumb| mkfifo(crumb)),
        ("/dev/zero", |crumb| {
            std::os::unix::fs::symlink("/dev/zero", crumb).expect("link");
        }),
    ];
    for (what, make) in places {
        let root = tempfile::tempdir().expect("dir");
        store(root.path());
        let crumb = root.path().join("agent/terminal-sessions/kitty-7");
        fs::create_dir_all(crumb.parent().expect("parent")).expect("folders");
        make(&crumb);
        let answer = serve(root.path(), "continue", &continue_args);
        assert!(answer.get("ok").is_some(), "{what}: {answer}");
    }

    let root = tempfile::tempdir().expect("dir");
    let outside = tempfile::tempdir().expect("dir");
    let victim = outside.path().join("victim");
    fs::write(&victim, "keep me\n").expect("write");
    store(root.path());
    let crumb = root.path().join("agent/terminal-sessions/kitty-7");
    fs::create_dir_all(crumb.parent().expect("parent")).expect("folders");
    std::os::unix::fs::symlink(&victim, &crumb).expect("link");
    let switch = json!({"agent_dir": "agent", "cwd": "/proj", "start": "switch",
        "file": "agent/sessions/--proj--/2026-01-01T00-00-00-000Z_7f3a.jsonl",
        "env": {"KITTY_WINDOW_ID": "7"}});
    let answer = serve(root.path(), "switch", &switch);
    assert!(answer.get("ok").is_some(), "{answer}");
    assert_eq!(fs::read_to_string(&victim).expect("victim"), "keep me\n");
    let meta = fs::symlink_metadata(&crumb).expect("breadcrumb");
    assert!(meta.is_file(), "the link was replaced by the breadcrumb");
}

/// Item 5: a request line without end is answered with an error, and `serve` stops
/// with its memory bounded (it aborted on the allocation before).
#[test]
fn serve_caps_request_lines() {
    let output = std::process::Command::new(snapbox::cmd::cargo_bin!("session-conformance"))
        .args(["serve", "--profile", "pi"])
        .stdin(fs::File::open("/dev/zero").expect("/dev/zero"))
        .output()
        .expect("serve runs");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let answer: Value = serde_json::from_slice(&output.stdout).expect("one JSON answer");
    assert_eq!(answer["error"]["kind"], "exception", "{answer}");
}

/// Item 19: `dir` is an absolute path of a folder that exists; `serve` creates none.
#[test]
fn serve_refuses_a_dir_that_is_not_a_fresh_absolute_folder() {
    let root = tempfile::tempdir().expect("dir");
    let missing = root.path().join("missing/x");
    let file = root.path().join("file");
    fs::write(&file, "").expect("write");
    let link = root.path().join("link");
    std::os::unix::fs::symlink(root.path(), &link).expect("link");
    let steps = json!({"open": null, "cwd": "/p", "steps": [
        {"call": "appendMessage", "message": {"role": "user", "content": "u", "timestamp": 1}},
        {"call": "appendMessage", "message": {"role": "assistant", "content": [], "timestamp": 2}}]});
    for dir in [
        "relative/x".to_owned(),
        String::new(),
        missing.display().to_string(),
        file.display().to_string(),
        link.display().to_string(),
        format!("{}/", link.display()),
    ] {
        let request = json!({"type": "request", "case": "c", "op": "apply", "profile": "pi",
            "dir": dir, "args": steps});
        let out = cli()
            .current_dir(root.path())
            .args(["serve", "--profile", "pi"])
            .stdin(format!("{request}\n"))
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let answer: Value = serde_json::from_slice(&out).expect("one JSON answer");
        assert_eq!(answer["error"]["kind"], "exception", "{dir:?}: {answer}");
    }
    assert!(!root.path().join("relative").exists());
    assert!(!missing.exists());
    assert!(
        !root.path().join("sessions").exists(),
        "nothing through the link"
    );
}

/// Item 6: `load` writes its output an entry at a time; the text is the canonical
/// rendering of the whole value, with or without entries, and past the listed
/// diagnostics their counts by kind.
#[test]
fn load_streams_the_canonical_text() {
    let root = tempfile::tempdir().expect("dir");
    let many_blank = format!("{HEADER}\n{}{USER}\n{{}}\n", "\n".repeat(1_200));
    let files = [
        (
            "small.jsonl",
            fs::read_to_string("tests/fixtures/small.jsonl").expect("fixture"),
        ),
        ("header-only.jsonl", format!("{HEADER}\n")),
        (
            "numbers.jsonl",
            format!(
                "{HEADER}\n{}\n",
                USER.replace(
                    "\"timestamp\":1}",
                    "\"timestamp\":-0,\"n\":[1E-400,1.0,2.5]}"
                )
            ),
        ),
        ("blank.jsonl", many_blank),
    ];
    for (name, text) in files {
        let path = root.path().join(name);
        fs::write(&path, &text).expect("write");
        let whole =
            session_conformance_cli::inspect::load(&path, session_reference::model::Profile::Pi)
                .expect("loads");
        let out = cli()
            .arg("load")
            .arg(&path)
            .args(["--profile", "pi"])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        assert_eq!(
            String::from_utf8(out).expect("utf-8"),
            session_conformance::canonical::canonical_js(&whole),
            "{name}"
        );
        if name == "blank.jsonl" {
            assert_eq!(whole["diagnostics"].as_array().map(Vec::len), Some(1_000));
            assert_eq!(
                whole["unlistedDiagnostics"],
                json!({"blank_line": 200, "missing_id": 1})
            );
        }
    }
}

/// Item 6: memory follows the bytes. A file of more lines than the CLI reads (each
/// line the reference keeps costs about a hundred bytes beyond its text) is refused
/// with its line count by every command that reads a FILE, before it is parsed.
#[test]
fn a_file_of_more_lines_than_the_limit_is_refused() {
    let root = tempfile::tempdir().expect("dir");
    let path = root.path().join("many.jsonl");
    let lines = session_conformance::guard::MAX_INPUT_LINES;
    write(&path, &format!("{HEADER}\n{}", "{}\n".repeat(lines)));
    for command in ["load", "context", "tree", "validate"] {
        let output = cli()
            .arg(command)
            .arg(&path)
            .args(["--profile", "pi"])
            .assert()
            .failure()
            .get_output()
            .clone();
        let text =
            String::from_utf8_lossy(&output.stdout) + String::from_utf8_lossy(&output.stderr);
        assert!(
            text.contains(&format!(
                "{} lines, more than the limit of {lines}",
                lines + 1
            )),
            "{command}: {text}"
        );
    }
}

/// Item 17: a named pipe whose writer opens it after the command started is waited
/// for (within `guard::PIPE_IDLE_TIMEOUT`) and read, not taken for an empty file.
#[test]
fn a_fifo_whose_writer_comes_later_is_read() {
    let root = tempfile::tempdir().expect("dir");
    let fifo = root.path().join("later.jsonl");
    mkfifo(&fifo);
    let command = std::process::Command::new(snapbox::cmd::cargo_bin!("session-conformance"))
        .arg("load")
        .arg(&fifo)
        .args(["--profile", "pi"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("load starts");
    std::thread::sleep(Duration::from_millis(500));
    fs::write(&fifo, format!("{HEADER}\n{USER}\n")).expect("the writer opens and writes");
    let output = command.wait_with_output().expect("load ends");
    assert!(output.status.success(), "{output:?}");
    let value: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(value["leafId"], "aaaa0001", "{value}");
}

/// Item 21: numbers are printed as `JSON.stringify` prints them: `-0` and `1E-400`
/// (read as zero) as `0`, a whole `1.0` as `1`.
#[test]
fn load_prints_numbers_as_javascript_does() {
    let root = tempfile::tempdir().expect("dir");
    let path = root.path().join("numbers.jsonl");
    let user = USER.replace(
        "\"timestamp\":1}",
        "\"timestamp\":-0,\"n\":[1E-400,1.0,2.5,-0.0]}",
    );
    write(&path, &format!("{HEADER}\n{user}\n"));
    let out = cli()
        .arg("load")
        .arg(&path)
        .args(["--profile", "pi"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).expect("utf-8");
    let compact: String = text.split_whitespace().collect();
    assert!(compact.contains(r#""n":[0,1,2.5,0]"#), "{text}");
    assert!(compact.contains(r#""timestamp":0}"#), "{text}");
}

/// Item 22: `compaction`'s text escapes the control characters of ids, roles and file
/// names, as `tree`, `sessions` and `validate` do (an `ESC]0;…BEL` would retitle the
/// terminal).
#[test]
fn compaction_text_escapes_control_characters() {
    let root = tempfile::tempdir().expect("dir");
    let path = root.path().join("esc.jsonl");
    let mut lines = vec![HEADER.to_owned()];
    let mut parent = Value::Null;
    for i in 0..6 {
        let id = format!("e\u{1b}]0;pwned\u{7}{i}");
        let message = if i % 2 == 0 {
            json!({"role": "user", "content": "x".repeat(400), "timestamp": 1})
        } else {
            json!({"role": "assistant", "provider": "p", "model": "m", "stopReason": "toolUse", "timestamp": 2,
                "content": [{"type": "text", "text": "y".repeat(400)},
                    {"type": "toolCall", "id": format!("t{i}"), "name": "read", "arguments": {"path": format!("/f\u{1b}[2J{i}")}}],
                "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}})
        };
        lines.push(
            json!({"type": "message", "id": id, "parentId": parent,
            "timestamp": format!("2026-01-01T00:00:0{i}.000Z"), "message": message})
            .to_string(),
        );
        parent = Value::from(id);
    }
    write(&path, &format!("{}\n", lines.join("\n")));
    let out = cli()
        .arg("compaction")
        .arg(&path)
        .args([
            "--profile",
            "pi",
            "--context-window",
            "300",
            "--keep-recent-tokens",
            "50",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).expect("utf-8");
    assert!(
        text.contains(r"keep from: #5 e\u{1b}]0;pwned\u{7}5"),
        "{text}"
    );
    assert!(text.contains(r"read files: /f\u{1b}[2J1"), "{text}");
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "{text:?}"
    );
}
