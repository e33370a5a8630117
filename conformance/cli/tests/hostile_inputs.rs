//! Property tests of the rule "no input makes the runner or the CLI panic, hang or leave
//! its root" (docs/ARCHITECTURE.md "Threat model"): generated deep, large and special
//! inputs fed to the CLI's readers, the validator, the snapshot and the runner's `produce`.
//! A stack overflow aborts the test process, a hang trips the time checks.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use serde_json::json;
use session_conformance::adapter::ReferenceAdapter;
use session_conformance::corpus;
use session_conformance::execute;
use session_conformance::normalize::{describe_file, snapshot};
use session_conformance::runner::produce;
use session_conformance_cli::inspect;
use session_conformance_cli::validate::{validate_reader, Options, Schemas};
use session_reference::model::Profile;

const HEADER: &str =
    r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#;

/// A JSON value nested `depth` levels (arrays and objects as `shape` says, level by
/// level), around a string that may be a blob reference, large, or hold control characters.
fn nested(depth: usize, shape: &[bool], inner: &str) -> String {
    let mut text = String::with_capacity(depth * 6 + inner.len());
    for level in 0..depth {
        text.push_str(if shape[level % shape.len()] {
            "["
        } else {
            "{\"k\":"
        });
    }
    text.push_str(inner);
    for level in (0..depth).rev() {
        text.push(if shape[level % shape.len()] { ']' } else { '}' });
    }
    text
}

fn inner() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("1".to_owned()),
        Just(format!("\"blob:sha256:{}\"", "0".repeat(64))),
        Just(r#"{"type":"image","data":"blob:sha256:../../etc/passwd"}"#.to_owned()),
        (1usize..2_000_000).prop_map(|n| format!("\"{}\"", "x".repeat(n))),
        Just("\"\\u001b[2J\\u0007\\ud800\"".to_owned()),
    ]
}

fn depth() -> impl Strategy<Value = usize> {
    prop_oneof![0usize..60, 990usize..1010, 5_000usize..120_000]
}

/// A session file: a header, one message holding the generated value, maybe a torn or
/// invalid-UTF-8 tail.
fn session() -> impl Strategy<Value = Vec<u8>> {
    (
        depth(),
        prop::collection::vec(any::<bool>(), 1..4),
        inner(),
        any::<bool>(),
    )
        .prop_map(|(depth, shape, inner, tail)| {
            let value = nested(depth, &shape, &inner);
            let mut text = format!(
                "{HEADER}\n{{\"type\":\"message\",\"id\":\"aaaa0001\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:01.000Z\",\"message\":{{\"role\":\"user\",\"content\":{value}}}}}\n"
            )
            .into_bytes();
            if tail {
                text.extend_from_slice(b"{\"type\":\"custom\",\"id\":\"\xff");
            }
            text
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// `load`, `context` and `tree` (JSON and text) in every profile, `validate` and the
    /// snapshot's description of a file return an answer or an error for any file.
    #[test]
    fn no_session_file_makes_a_reader_panic_or_overflow(bytes in session()) {
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("s.jsonl");
        fs::write(&file, &bytes).expect("write");
        for profile in Profile::ALL {
            let _ = inspect::load(&file, profile);
            let _ = inspect::context(&file, profile, None);
            let _ = inspect::tree_json(&file, profile);
            if let Ok(text) = inspect::tree_text(&file, profile) {
                prop_assert!(!text.contains('\x1b'), "an escape reached the terminal");
            }
        }
        let options = Options { profile: None, blob_dir: Some(dir.path().to_owned()) };
        let (findings, _) = validate_reader("s", bytes.as_slice(), &Schemas::new(), &options);
        prop_assert!(findings.iter().all(|f| f.line <= 3));
        let _ = describe_file("s.jsonl", &bytes);
    }

    /// The runner's `produce`, with the reference as the adapter, over a case whose input
    /// is any generated session and whose arguments name paths in and out of the case
    /// directory: an output or a case error, nothing written outside.
    #[test]
    fn no_case_makes_produce_panic_or_leave_its_root(
        bytes in session(),
        op in prop::sample::select(vec!["load", "context", "tree", "apply", "list"]),
        file in prop::sample::select(vec!["session.jsonl", "../session.jsonl", "/tmp/x.jsonl", "a/../../b.jsonl"]),
        profile in prop::sample::select(Profile::ALL.to_vec()),
    ) {
        let root = tempfile::tempdir().expect("dir");
        let case_dir = root.path().join("g/c");
        fs::create_dir_all(case_dir.join("input")).expect("dirs");
        fs::write(case_dir.join("input/session.jsonl"), &bytes).expect("write");
        let args = json!({"file": file, "open": file, "agent_dir": file, "steps": [
            {"call": "appendMessage", "message": {"role": "assistant", "content": "x"}}
        ]});
        let case_file = json!({"id": 1, "name": "c", "profiles": [profile.name()], "clauses": ["loading.1"], "op": op, "args": args});
        fs::write(case_dir.join("case.json"), case_file.to_string()).expect("write");
        let case = corpus::load_case(&case_dir).expect("loads");
        let outside: Vec<_> = fs::read_dir("/tmp").map(|d| d.flatten().map(|e| e.file_name()).collect()).unwrap_or_default();
        let start = Instant::now();
        let hello = execute::hello(profile);
        let result = produce(&case, profile, &mut ReferenceAdapter::new(profile), &hello, Duration::from_secs(30));
        prop_assert!(start.elapsed() < Duration::from_mins(1));
        if file != "session.jsonl" {
            prop_assert!(matches!(&result, Err((_, note)) if note.starts_with("case error")), "{:?}", result.as_ref().err());
        }
        prop_assert!(!Path::new("/tmp/x.jsonl").exists() || outside.iter().any(|n| n == "x.jsonl"));
    }

    /// A case directory holding FIFOs, devices, links to folders (loops among them),
    /// links to devices and huge sparse files is snapshotted at once, each by its kind.
    #[cfg(unix)]
    #[test]
    fn no_special_file_hangs_a_snapshot(kinds in prop::collection::vec(0u8..6, 1..12)) {
        let dir = tempfile::tempdir().expect("dir");
        for (i, kind) in kinds.iter().enumerate() {
            let path = dir.path().join(format!("sub{}/f{i}.jsonl", i % 3));
            fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
            match kind {
                0 => fs::write(&path, "{}\n").expect("write"),
                1 => {
                    let made = std::process::Command::new("mkfifo").arg(&path).status().expect("mkfifo");
                    prop_assert!(made.success());
                }
                2 => std::os::unix::fs::symlink("/dev/zero", &path).expect("link"),
                3 => std::os::unix::fs::symlink(dir.path(), &path).expect("link"),
                4 => std::os::unix::fs::symlink("..", &path).expect("link"),
                _ => fs::File::create(&path).and_then(|f| f.set_len(1 << 40)).expect("sparse"),
            }
        }
        let start = Instant::now();
        let files = snapshot(dir.path(), &BTreeMap::new());
        prop_assert!(start.elapsed() < Duration::from_secs(10));
        for (i, kind) in kinds.iter().enumerate() {
            let described = &files[format!("sub{}/f{i}.jsonl", i % 3)];
            match kind {
                0 => prop_assert_eq!(described, &json!({"lines": [{}]})),
                1 => prop_assert_eq!(described, &json!({"special": "fifo"})),
                2 => prop_assert_eq!(described, &json!({"special": "character device"})),
                3 | 4 => prop_assert!(described.is_null(), "{}", described),
                _ => prop_assert!(described["unread"].is_string()),
            }
        }
    }
}
