//! Issue #36 item 5: the generators write the messages real sessions hold. Every
//! generated message is one the real implementations of its profile write
//! (`message_types::check`), the sample has every shape (tool calls answered by their
//! results, thinking, bash executions, every stop reason, usage that adds up), and
//! `corpus check` and `run` accept a generated corpus.

use std::collections::BTreeMap;
use std::fmt::Write;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use serde_json::Value;
use session_conformance::message_types;
use session_generators::{ops, steps};
use session_reference::model::Profile;
use snapbox::cmd::Command;

/// The messages of `sessions` generated sessions of `profile` (the same every run), in order,
/// one list per session.
fn sample(profile: Profile, sessions: usize) -> Vec<Vec<Value>> {
    let mut runner = TestRunner::deterministic();
    (0..sessions)
        .map(|_| {
            let ops = ops(profile, 1..40).new_tree(&mut runner).unwrap().current();
            steps(&ops, profile)
                .into_iter()
                .filter(|step| step["call"] == "appendMessage")
                .map(|mut step| step["message"].take())
                .collect()
        })
        .collect()
}

#[test]
fn every_generated_message_is_one_the_real_implementations_write() {
    for profile in [Profile::Pi, Profile::Omp] {
        for (n, messages) in sample(profile, 300).iter().enumerate() {
            for message in messages {
                if let Err(why) = message_types::check(profile, message) {
                    panic!("{profile} session {n}: {why}: {message}");
                }
            }
        }
    }
}

/// `part` in per cent of `whole`, to a tenth.
fn share(part: usize, whole: usize) -> String {
    let tenths = part * 1000 / whole.max(1);
    format!("{}.{}%", tenths / 10, tenths % 10)
}

/// Counts the shapes of the sample and checks how they fit together: every tool call is
/// answered, right after its message, by one result naming its id and tool; usage totals
/// are the sums of their parts; an error or abort says why.
#[test]
fn the_generated_sessions_have_the_shapes_of_real_ones() {
    for profile in [Profile::Pi, Profile::Omp] {
        let mut count: BTreeMap<&str, usize> = BTreeMap::new();
        let mut bump = |key: &'static str| *count.entry(key).or_default() += 1;
        for messages in sample(profile, 300) {
            let mut at = 0;
            while at < messages.len() {
                let message = &messages[at];
                at += 1;
                match message["role"].as_str().unwrap_or_default() {
                    "assistant" => {
                        bump("assistant");
                        let stop = message["stopReason"].as_str().unwrap();
                        bump(match stop {
                            "stop" => "stop",
                            "length" => "length",
                            "error" => "error",
                            "aborted" => "aborted",
                            _ => "toolUse",
                        });
                        assert_eq!(
                            message["errorMessage"].is_string(),
                            stop == "error" || stop == "aborted",
                            "{message}"
                        );
                        let usage = &message["usage"];
                        let parts = ["input", "output", "cacheRead", "cacheWrite"];
                        let tokens: u64 = parts.iter().map(|k| usage[k].as_u64().unwrap()).sum();
                        assert_eq!(Some(tokens), usage["totalTokens"].as_u64(), "{usage}");
                        let cost: f64 = parts
                            .iter()
                            .map(|k| usage["cost"][k].as_f64().unwrap())
                            .sum();
                        let total = usage["cost"]["total"].as_f64().unwrap();
                        assert!((cost - total).abs() < 1e-12, "{usage}");
                        assert_eq!(total > 0.0, stop != "error", "{message}");
                        let blocks = message["content"].as_array().unwrap();
                        let of =
                            |kind: &'static str| blocks.iter().filter(move |b| b["type"] == kind);
                        if of("thinking").next().is_some() {
                            bump("with thinking");
                        }
                        if of("thinking").any(|b| b["thinkingSignature"].is_string()) {
                            bump("with a thinking signature");
                        }
                        if of("redactedThinking").next().is_some() {
                            bump("with redacted thinking");
                        }
                        let calls: Vec<&Value> = of("toolCall").collect();
                        assert_eq!(calls.is_empty(), stop != "toolUse", "{message}");
                        for call in calls {
                            bump("tool calls");
                            let result = messages.get(at).expect("a result after its call");
                            at += 1;
                            assert_eq!(result["role"], "toolResult");
                            assert_eq!(result["toolCallId"], call["id"]);
                            assert_eq!(result["toolName"], call["name"]);
                            bump("tool results");
                            if result["isError"] == true {
                                bump("tool results with isError");
                            }
                        }
                    }
                    "toolResult" => panic!("a result no call asked for: {message}"),
                    "bashExecution" => {
                        bump("bash executions");
                        let cancelled = message["cancelled"] == true;
                        assert_eq!(cancelled, message.get("exitCode").is_none(), "{message}");
                        if cancelled {
                            bump("bash cancelled");
                        }
                    }
                    "user" => {
                        bump("user");
                        let text = message["content"].as_str().unwrap_or_default();
                        if text.contains('\n') {
                            bump("user multi-line");
                        }
                        if !text.is_ascii() {
                            bump("user non-ASCII");
                        }
                    }
                    other => panic!("an unexpected role {other}"),
                }
            }
        }
        let assistant = count["assistant"];
        let messages =
            count["assistant"] + count["tool results"] + count["user"] + count["bash executions"];
        let mut lines = format!("{profile}: {messages} messages");
        for (key, n) in &count {
            let whole = match *key {
                "tool results with isError" => count["tool results"],
                "bash cancelled" => count["bash executions"],
                "user multi-line" | "user non-ASCII" => count["user"],
                "assistant" | "tool results" | "user" | "bash executions" => messages,
                "tool calls" => count["toolUse"],
                _ => assistant,
            };
            let _ = write!(lines, "\n  {key}: {n} ({} of {whole})", share(*n, whole));
        }
        eprintln!("{lines}");
        for key in [
            "stop",
            "length",
            "error",
            "aborted",
            "with a thinking signature",
            "tool results with isError",
            "bash cancelled",
            "user multi-line",
            "user non-ASCII",
        ] {
            assert!(count.get(key).is_some_and(|&n| n > 0), "no {key}: {lines}");
        }
        assert!(
            count["toolUse"] * 2 > assistant,
            "most turns use tools: {lines}"
        );
        assert_eq!(
            count.contains_key("with redacted thinking"),
            profile == Profile::Omp,
            "{lines}"
        );
    }
}

/// `generate` writes a corpus that `corpus check` (which refuses a message the strict
/// types refuse) accepts and that the reference passes.
#[test]
fn corpus_check_and_run_accept_a_generated_corpus() {
    let cli = || Command::new(snapbox::cmd::cargo_bin!("session-conformance")).env_remove("CI");
    // Generated ids start at the same number for every profile: a corpus per profile.
    for profile in ["pi", "omp", "operator"] {
        let dir = tempfile::tempdir().unwrap();
        cli()
            .args([
                "generate",
                "--seed",
                "7",
                "--count",
                "60",
                "--profile",
                profile,
            ])
            .arg("--out")
            .arg(dir.path())
            .assert()
            .success();
        cli()
            .args(["corpus", "check", "--corpus"])
            .arg(dir.path())
            .assert()
            .success();
        cli()
            .args(["run", "--jobs", "2", "--profile", profile, "--corpus"])
            .arg(dir.path())
            .assert()
            .success();
    }
}
