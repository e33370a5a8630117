//! Issue #36: every message of the corpus, outside the cases tagged `lenient-message`,
//! is one the real implementations of its profile write (`message_types`).

use std::fs;
use std::path::Path;

use serde_json::Value;
use session_conformance::message_types;
use session_reference::model::Profile;

/// The messages of a case: those of its input session files (`message` entries) and of
/// its arguments (`appendMessage` steps, `persist`'s message), with where each is.
fn messages(dir: &Path, case: &Value) -> Vec<(String, Value)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.join("input")];
    while let Some(path) = stack.pop() {
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            for item in fs::read_dir(&path).into_iter().flatten().flatten() {
                stack.push(item.path());
            }
            continue;
        }
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let text = String::from_utf8_lossy(&fs::read(&path).unwrap_or_default()).into_owned();
        for (n, line) in text.lines().enumerate() {
            if let Ok(entry) = serde_json::from_str::<Value>(line) {
                if entry["type"] == "message" && entry["message"].is_object() {
                    found.push((
                        format!("{}:{}", path.display(), n + 1),
                        entry["message"].clone(),
                    ));
                }
            }
        }
    }
    // Templates (`$repeat`, `$concat`) reach the adapter as strings.
    let args = &session_conformance::corpus::expand(&case["args"]);
    if args["message"].is_object() {
        found.push(("case.json args.message".into(), args["message"].clone()));
    }
    for (i, step) in args["steps"].as_array().into_iter().flatten().enumerate() {
        if step["call"] == "appendMessage" && step["message"].is_object() {
            found.push((format!("case.json step {i}"), step["message"].clone()));
        }
    }
    found
}

#[test]
fn every_message_is_one_the_real_implementations_write() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/cases");
    let (mut cases, mut refused, mut well_formed) = (0, Vec::new(), 0);
    for group in fs::read_dir(&root).expect("corpus").flatten() {
        for dir in fs::read_dir(group.path()).into_iter().flatten().flatten() {
            let Ok(text) = fs::read_to_string(dir.path().join("case.json")) else {
                continue;
            };
            let Ok(case) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            let lenient = case["tags"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t == "lenient-message"));
            cases += 1;
            let mut bad = Vec::new();
            for profile in case["profiles"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                let Ok(profile) = profile.parse::<Profile>() else {
                    continue;
                };
                for (place, message) in messages(&dir.path(), &case) {
                    if let Err(e) = message_types::check(profile, &message) {
                        bad.push(format!("{} {place}: {e}", profile.name()));
                    }
                }
            }
            if bad.is_empty() {
                well_formed += 1;
            } else if !lenient {
                refused.push(format!("{}: {}", dir.path().display(), bad[0]));
            }
        }
    }
    eprintln!("{cases} cases, {well_formed} without a refused message");
    for r in refused.iter().take(2000) {
        eprintln!("{r}");
    }
    assert!(
        refused.is_empty(),
        "{} cases hold a message the real types refuse",
        refused.len()
    );
}
