//! Issue 45: what `corpus check` and the corpus loader take for a corpus and its cases.
//! A `--corpus` that is not a folder, or a folder without cases, is an error naming it
//! (never a pass of 0 cases); a placeholder behind a BOM is found as the snapshot reads
//! it; a `dir_inputs` file that is not UTF-8 is a case error.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use session_conformance::corpus::{self, CaseProblem, CorpusProblem};
use snapbox::cmd::Command;

fn cli() -> Command {
    // The specification the binary carries is unpacked here, not in the user's cache.
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("corpus-folder-cache");
    Command::new(snapbox::cmd::cargo_bin!("session-conformance"))
        .env_remove("CI")
        .env("XDG_CACHE_HOME", cache)
        .timeout(Duration::from_mins(1))
}

const SESSION: &str = concat!(
    r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#,
    "\n",
);

fn write(path: &Path, bytes: &[u8]) {
    fs::create_dir_all(path.parent().expect("parent")).expect("folders");
    fs::write(path, bytes).expect("write");
}

/// A `load` case `g/NAME` of `session.jsonl`, with the fields of `extra`.
fn case(root: &Path, id: u32, name: &str, extra: &serde_json::Value) -> PathBuf {
    let dir = root.join("g").join(name);
    let mut file = json!({"id": id, "name": name, "profiles": ["pi"], "clauses": ["loading.1"],
        "op": "load", "args": {"file": "session.jsonl"}});
    for (k, v) in extra.as_object().expect("object") {
        file[k] = v.clone();
    }
    write(&dir.join("case.json"), file.to_string().as_bytes());
    write(&dir.join("input/session.jsonl"), SESSION.as_bytes());
    write(&dir.join("expected.json"), b"{}\n");
    dir
}

/// The refusal of the loaded case `g/NAME`.
fn refusal(root: &Path, name: &str) -> Option<corpus::CaseError> {
    corpus::load(root)
        .expect("the corpus loads")
        .into_iter()
        .find(|c| c.full_name() == format!("g/{name}"))
        .expect("the case is loaded")
        .refused
}

/// `corpus check --corpus PATH` on what is not a folder of cases exits 2 and names the
/// path and what it is; a FIFO is never opened (the run would wait on it for ever).
#[cfg(unix)]
#[test]
fn a_corpus_that_is_not_a_folder_of_cases_is_an_error() {
    let root = tempfile::tempdir().expect("dir");
    let at = |name: &str| root.path().join(name);
    write(&at("file"), b"not a corpus\n");
    let made = std::process::Command::new("mkfifo")
        .arg(at("fifo"))
        .status()
        .expect("mkfifo");
    assert!(made.success());
    fs::create_dir(at("empty")).expect("empty");
    write(&at("no-case/notes/readme.txt"), b"");
    // A case.json in the root itself is not a case folder.
    write(&at("root-only/case.json"), b"{}");
    // A case inside an input folder is an input, not a case.
    write(&at("inputs-only/g/c/input/x/case.json"), b"{}");
    let table: [(PathBuf, &str); 7] = [
        (at("file"), "is a regular file, not a corpus folder"),
        (at("fifo"), "is a fifo, not a corpus folder"),
        (
            PathBuf::from("/dev/zero"),
            "is a character device, not a corpus folder",
        ),
        (at("empty"), "no cases"),
        (at("no-case"), "no cases"),
        (at("root-only"), "no cases"),
        (at("inputs-only"), "no cases"),
    ];
    // Without `--spec`, a corpus of one's own need not cite every clause: 0 cases had
    // 0 problems, and passed.
    for (path, why) in &table {
        let out = cli()
            .args(["corpus", "check", "--corpus"])
            .arg(path)
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {stderr}", path.display());
        let named = format!("{}: {why}", path.display());
        assert!(stderr.contains(&named), "{named:?} in {stderr:?}");
        assert!(
            out.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let loaded = corpus::load(&at("fifo")).expect_err("a fifo");
    assert_eq!(loaded.kind, CorpusProblem::NotAFolder("fifo"));
    let loaded = corpus::load(&at("empty")).expect_err("no cases");
    assert_eq!(loaded.kind, CorpusProblem::NoCases);
    assert_eq!(loaded.path, at("empty"));
}

/// A placeholder behind a BOM on line 1, or in a line that reads only as the snapshot
/// reads it (bytes that are not UTF-8, a lone surrogate, a number past the double range),
/// is a case error as it is on a plain line.
#[test]
fn placeholders_the_snapshot_would_read_are_case_errors() {
    let lines: [(&str, &[u8]); 6] = [
        ("bom", b"\xef\xbb\xbf{\"type\":\"session\",\"version\":3,\"id\":\"\\u003ctime>\",\"cwd\":\"/p\"}\n"),
        ("bom-mark", b"\xef\xbb\xbf{\"\\u0024unparsed\":\"x\"}\n"),
        ("not-utf8", b"{\"a\":\"\\u003cid:1>\",\"b\":\"\xff\"}\n"),
        ("surrogate", b"{\"a\":\"\\u003ctime>\",\"b\":\"\\ud800\"}\n"),
        ("infinite", b"{\"a\":\"\\u003ctime>\",\"b\":1e400}\n"),
        ("good", b"\xef\xbb\xbf{\"type\":\"session\",\"version\":3,\"id\":\"\\u0041\",\"cwd\":\"/p\"}\n"),
    ];
    let root = tempfile::tempdir().expect("dir");
    for (i, (name, bytes)) in lines.iter().enumerate() {
        let dir = case(
            root.path(),
            u32::try_from(i).expect("few") + 1,
            name,
            &json!({}),
        );
        write(&dir.join("input/session.jsonl"), bytes);
    }
    for (name, _) in &lines[..lines.len() - 1] {
        let refused = refusal(root.path(), name).unwrap_or_else(|| panic!("{name} is refused"));
        assert!(
            matches!(refused.kind, CaseProblem::Placeholder(_)),
            "{name}: {refused}"
        );
        assert_eq!(refused.line, Some(1), "{name}");
    }
    assert_eq!(refusal(root.path(), "good"), None);
}

/// A `dir_inputs` file whose bytes are not UTF-8 is a case error naming the file, the
/// line and the byte: the runner's text replacement would change its other bytes.
#[test]
fn a_dir_inputs_file_that_is_not_utf8_is_a_case_error() {
    let root = tempfile::tempdir().expect("dir");
    let extra = json!({"dir_inputs": ["crumb"]});
    let bad = case(root.path(), 1, "bad", &extra);
    write(&bad.join("input/crumb"), b"/p\n<dir>/s\xe9.jsonl\n");
    let good = case(root.path(), 2, "good", &extra);
    write(
        &good.join("input/crumb"),
        "/p\n<dir>/s\u{e9}.jsonl\n".as_bytes(),
    );
    // Not listed in dir_inputs: its bytes reach the adapter as they are.
    let other = case(root.path(), 3, "other", &json!({}));
    write(&other.join("input/crumb"), b"\xe9\n");
    let refused = refusal(root.path(), "bad").expect("refused");
    assert_eq!(refused.kind, CaseProblem::DirInputNotUtf8(10));
    assert_eq!(refused.line, Some(2));
    assert_eq!(refused.path, bad.join("input/crumb"));
    let message = refused.to_string();
    assert!(
        message.contains("input/crumb: line 2: byte 10 is not UTF-8"),
        "{message}"
    );
    assert_eq!(refusal(root.path(), "good"), None);
    assert_eq!(refusal(root.path(), "other"), None);
}
