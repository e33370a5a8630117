//! # session-generators
//!
//! Proptest strategies for pi/omp sessions, usable from any Rust implementer's tests,
//! and the conversion of a generated session into a corpus `apply` case that any
//! implementation can run through its adapter.
//!
//! A session is generated as a sequence of SessionManager calls ([`Op`]); ops that
//! name an earlier entry hold a selector that is resolved against the entries that
//! exist at that point, so every generated sequence is valid and shrinks to small,
//! readable sessions.
//!
//! ```
//! use proptest::strategy::{Strategy, ValueTree};
//! use proptest::test_runner::TestRunner;
//! use session_generators::{ops, steps};
//! use session_reference::model::Profile;
//! let mut runner = TestRunner::deterministic();
//! let session = ops(Profile::Omp, 1..20).new_tree(&mut runner).unwrap().current();
//! assert_eq!(steps(&session, Profile::Omp).len(), session.len());
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{json, Value};
use session_reference::model::Profile;

/// One SessionManager call. `target`/`from` select an earlier entry (modulo how many exist).
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// A user message.
    User(String),
    /// An assistant message from `provider`/`model`.
    Assistant {
        /// Its text.
        text: String,
        /// Provider name.
        provider: String,
        /// Model id.
        model: String,
    },
    /// A user message holding an image of `len` base64 characters (around the 1024 threshold).
    Image(usize),
    /// A user message of `len` characters (around the 500,000 truncation limit).
    Long(usize),
    /// A thinking level change.
    Thinking(String),
    /// A model change (pi: provider/modelId; omp: "provider/model" and an optional role).
    Model {
        /// Provider.
        provider: String,
        /// Model id.
        model: String,
        /// Role (omp).
        role: Option<String>,
    },
    /// A compaction keeping from an earlier entry (`None`: an id that does not exist).
    Compaction {
        /// The summary.
        summary: String,
        /// Selector of the kept entry.
        kept: Option<usize>,
    },
    /// Move the leaf to an earlier entry.
    Branch(usize),
    /// Set the leaf to none.
    ResetLeaf,
    /// Branch with a summary, from an earlier entry or from the root.
    BranchWithSummary {
        /// Selector of the branch point (`None`: the root).
        from: Option<usize>,
        /// The summary (may be empty).
        summary: String,
    },
    /// Set (`Some`) or clear (`None`) the label of an earlier entry.
    Label {
        /// Selector of the target.
        target: usize,
        /// The label.
        label: Option<String>,
    },
    /// Extension state.
    Custom(String),
    /// Extension message.
    CustomMessage {
        /// Its text.
        text: String,
        /// Whether it is displayed.
        display: bool,
    },
    /// TTSR rules (omp).
    Ttsr(Vec<String>),
    /// Session name (pi's `session_info`).
    SessionInfo(String),
    /// Session init (omp's `session_init`).
    SessionInit(String),
    /// Mode change (omp).
    Mode {
        /// The mode.
        mode: String,
        /// Whether it carries data.
        data: bool,
    },
}

fn word() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "hello", "éclair", "日本", "😀", "x y", ""])
        .prop_map(str::to_owned)
}

/// One op of `profile`.
pub fn op(profile: Profile) -> BoxedStrategy<Op> {
    let common = prop_oneof![
        4 => word().prop_map(Op::User),
        4 => (word(), prop::sample::select(vec!["anthropic", "openai"]), prop::sample::select(vec!["m1", "m2"]))
            .prop_map(|(text, p, m)| Op::Assistant { text, provider: p.into(), model: m.into() }),
        1 => prop::sample::select(vec![1020usize, 1023, 1024, 1028]).prop_map(Op::Image),
        1 => prop::sample::select(vec![499_999usize, 500_000, 500_001]).prop_map(Op::Long),
        1 => prop::sample::select(vec!["off", "low", "high"]).prop_map(|l| Op::Thinking(l.into())),
        1 => (prop::sample::select(vec!["openai", "x"]), prop::sample::select(vec!["gpt", "small"]), prop::option::of(prop::sample::select(vec!["default", "smol"])))
            .prop_map(|(p, m, r)| Op::Model { provider: p.into(), model: m.into(), role: r.map(str::to_owned) }),
        1 => (word(), prop::option::of(any::<usize>())).prop_map(|(summary, kept)| Op::Compaction { summary, kept }),
        2 => any::<usize>().prop_map(Op::Branch),
        1 => Just(Op::ResetLeaf),
        1 => (prop::option::of(any::<usize>()), word()).prop_map(|(from, summary)| Op::BranchWithSummary { from, summary }),
        1 => (any::<usize>(), prop::option::of(word())).prop_map(|(target, label)| Op::Label { target, label }),
        1 => word().prop_map(Op::Custom),
        1 => (word(), any::<bool>()).prop_map(|(text, display)| Op::CustomMessage { text, display }),
    ];
    match profile {
        Profile::Pi => prop_oneof![12 => common, 1 => word().prop_map(Op::SessionInfo)].boxed(),
        // 003: branches are durable `leaf` entries, so navigation is drawn more often.
        Profile::Operator => prop_oneof![
            12 => common,
            2 => any::<usize>().prop_map(Op::Branch),
            1 => word().prop_map(Op::SessionInfo),
        ]
        .boxed(),
        Profile::Omp => prop_oneof![
            12 => common,
            1 => vec(prop::sample::select(vec!["r1", "r2", "r3"]).prop_map(str::to_owned), 0..3).prop_map(Op::Ttsr),
            1 => word().prop_map(Op::SessionInit),
            1 => (prop::sample::select(vec!["plan", "none"]), any::<bool>()).prop_map(|(m, data)| Op::Mode { mode: m.into(), data }),
        ]
        .boxed(),
    }
}

/// A session: a sequence of ops of `profile`, of a length in `len`.
pub fn ops(profile: Profile, len: std::ops::Range<usize>) -> impl Strategy<Value = Vec<Op>> {
    vec(op(profile), len)
}

/// The ops as `apply` steps of the adapter protocol, with `{"$result": N}` references.
/// A selector picks among the steps before it that created an entry; with none, the op becomes a user message.
pub fn steps(ops: &[Op], profile: Profile) -> Vec<Value> {
    let mut made: Vec<usize> = Vec::new();
    let mut out = Vec::with_capacity(ops.len());
    for (index, op) in ops.iter().enumerate() {
        let pick = |selector: usize| {
            made.get(selector % made.len().max(1))
                .map(|&k| json!({ "$result": k }))
        };
        let step = match op {
            Op::User(text) => json!({"call": "appendMessage", "message": user(text)}),
            Op::Assistant {
                text,
                provider,
                model,
            } => json!({"call": "appendMessage", "message": assistant(text, provider, model)}),
            Op::Image(len) => {
                json!({"call": "appendMessage", "message": {"role": "user", "content": [{"type": "image", "data": "A".repeat(*len), "mimeType": "image/png"}], "timestamp": 1}})
            }
            Op::Long(len) => json!({"call": "appendMessage", "message": user(&"x".repeat(*len))}),
            Op::Thinking(level) => {
                json!({"call": "appendThinkingLevelChange", "thinkingLevel": level})
            }
            Op::Model {
                provider,
                model,
                role,
            } => match profile {
                Profile::Pi | Profile::Operator => {
                    json!({"call": "appendModelChange", "provider": provider, "modelId": model})
                }
                Profile::Omp => {
                    let mut step = json!({"call": "appendModelChange", "model": format!("{provider}/{model}")});
                    if let Some(role) = role {
                        step["role"] = json!(role);
                    }
                    step
                }
            },
            Op::Compaction { summary, kept } => {
                let kept = kept.and_then(pick).unwrap_or_else(|| json!("ffffffff"));
                json!({"call": "appendCompaction", "summary": summary, "firstKeptEntryId": kept, "tokensBefore": 100})
            }
            Op::Branch(selector) => match pick(*selector) {
                Some(id) => json!({"call": "branch", "id": id}),
                None => json!({"call": "appendMessage", "message": user("start")}),
            },
            Op::ResetLeaf => json!({"call": "resetLeaf"}),
            Op::BranchWithSummary { from, summary } => {
                let from = from.and_then(pick).unwrap_or(Value::Null);
                json!({"call": "branchWithSummary", "fromId": from, "summary": summary})
            }
            Op::Label { target, label } => match pick(*target) {
                Some(id) => {
                    let mut step = json!({"call": "appendLabelChange", "targetId": id});
                    if let Some(label) = label {
                        step["label"] = json!(label);
                    }
                    step
                }
                None => json!({"call": "appendMessage", "message": user("start")}),
            },
            Op::Custom(text) => {
                json!({"call": "appendCustomEntry", "customType": "gen", "data": {"text": text}})
            }
            Op::CustomMessage { text, display } => {
                json!({"call": "appendCustomMessageEntry", "customType": "gen", "content": text, "display": display})
            }
            Op::Ttsr(rules) => json!({"call": "appendTtsrInjection", "injectedRules": rules}),
            Op::SessionInfo(name) => json!({"call": "appendSessionInfo", "name": name}),
            Op::SessionInit(task) => {
                json!({"call": "appendSessionInit", "systemPrompt": "You are a helper.", "task": task, "tools": ["read", "edit"]})
            }
            Op::Mode { mode, data } => {
                let mut step = json!({"call": "appendModeChange", "mode": mode});
                if *data {
                    step["data"] = json!({"planFile": "/tmp/plan.md"});
                }
                step
            }
        };
        // An operator `branch` appends a `leaf` entry, but returns no id to select.
        if step["call"] != "branch" && step["call"] != "resetLeaf" {
            made.push(index);
        }
        out.push(if profile == Profile::Operator {
            snake_step(&step)
        } else {
            step
        });
    }
    out
}

/// A step in the operator dialect's names (003): `appendMessage` → `append_message`,
/// and each argument likewise (`firstKeptEntryId` → `first_kept_entry_id`).
fn snake_step(step: &Value) -> Value {
    let Some(map) = step.as_object() else {
        return step.clone();
    };
    map.iter()
        .map(|(key, value)| {
            let value = match (key.as_str(), value.as_str()) {
                ("call", Some(call)) => snake(call).into(),
                _ => value.clone(),
            };
            (snake(key), value)
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// `camelCase` → `snake_case`.
fn snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// A generated session as a corpus case file (`case.json`), id and name given.
pub fn case_file(id: u32, name: &str, ops: &[Op], profile: Profile) -> Value {
    json!({
        "id": id,
        "name": name,
        "description": format!("generated: {} SessionManager calls ({profile})", ops.len()),
        "profiles": [profile.name()],
        "seed": "generated",
        "op": "apply",
        "args": {"open": null, "cwd": "/proj", "steps": steps(ops, profile)},
    })
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text, "timestamp": 1_748_779_200_000_i64})
}

fn assistant(text: &str, provider: &str, model: &str) -> Value {
    json!({
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "provider": provider,
        "model": model,
        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "stop",
        "timestamp": 1_748_779_201_000_i64,
    })
}

/// Turns a v3 session file into a legacy one: version 1 (no `version`, no ids or
/// parents: a linear file) or version 2 (`version: 2`, user messages with role
/// `hookMessage` as v2 hooks wrote them).
pub fn legacy(text: &str, version: u8) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.lines().enumerate() {
        let Ok(Value::Object(mut value)) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        match (i, version) {
            (0, 1) => drop(value.remove("version")),
            (0, _) => drop(value.insert("version".into(), json!(version))),
            (_, 1) => {
                value.remove("id");
                value.remove("parentId");
            }
            _ => {
                if let Some(message) = value
                    .get_mut("message")
                    .filter(|m| m["role"] == "user" && m["content"] == "hook")
                {
                    message["role"] = json!("hookMessage");
                }
            }
        }
        out.push_str(&Value::Object(value).to_string());
        out.push('\n');
    }
    out
}

/// Damages a session file's text: inserts garbage lines, a BOM, CRLF endings, a
/// duplicated line or a torn tail, as `damage` selects. Every original line stays intact.
pub fn damage(text: &str, damage: &Damage) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    for (at, garbage) in &damage.garbage {
        let at = 1 + at % lines.len().max(1);
        lines.insert(at.min(lines.len()), garbage.clone());
    }
    if let Some(at) = damage.duplicate {
        if lines.len() > 1 {
            let at = 1 + at % (lines.len() - 1);
            lines.insert(at, lines[at].clone());
        }
    }
    let newline = if damage.crlf { "\r\n" } else { "\n" };
    let mut out = lines.join(newline);
    out.push_str(newline);
    if damage.torn {
        out.push_str("{\"type\":\"message\",\"id\":\"torn");
    }
    if damage.bom {
        out.insert(0, '\u{feff}');
    }
    out
}

/// Rewires parent links of a session file's entries: one entry gets a parent that
/// does not exist (dangling), and/or the first entry gets a later entry as its
/// parent (a cycle through the root). Lines stay valid JSON.
pub fn rewire(text: &str, dangling: Option<usize>, cycle: Option<usize>) -> String {
    let mut lines: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let entries = lines.len().saturating_sub(1);
    if entries == 0 {
        return text.to_owned();
    }
    if let Some(at) = dangling {
        lines[1 + at % entries]["parentId"] = json!("deadbeef");
    }
    if let Some(at) = cycle {
        let later = lines[1 + at % entries]["id"].clone();
        lines[1]["parentId"] = later;
    }
    let mut out = String::with_capacity(text.len());
    for line in &lines {
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

/// What [`damage`] does to a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Damage {
    /// Lines to insert after the header: `(position selector, text)`.
    pub garbage: Vec<(usize, String)>,
    /// A line to duplicate (selector).
    pub duplicate: Option<usize>,
    /// CRLF line endings.
    pub crlf: bool,
    /// A torn last line.
    pub torn: bool,
    /// A leading byte-order mark.
    pub bom: bool,
}

/// Damage to apply to a file.
pub fn damages() -> impl Strategy<Value = Damage> {
    let garbage = prop::sample::select(vec![
        "",
        "   ",
        "not json",
        "{\"type\":",
        "]",
        "null",
        "5",
        "\"s\"",
        "[1,2]",
    ])
    .prop_map(str::to_owned);
    (
        vec((any::<usize>(), garbage), 0..4),
        prop::option::of(any::<usize>()),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(garbage, duplicate, crlf, torn, bom)| Damage {
            garbage,
            duplicate,
            crlf,
            torn,
            bom,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const V3: &str = concat!(
        r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/p"}"#,
        "\n",
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"hook"}}"#,
        "\n",
    );

    #[test]
    fn legacy_files_have_the_old_shapes() {
        let v1 = legacy(V3, 1);
        assert!(
            !v1.contains("\"version\"") && !v1.contains("\"id\":\"a\"") && !v1.contains("parentId")
        );
        let v2 = legacy(V3, 2);
        assert!(v2.contains("\"version\":2") && v2.contains("hookMessage"));
    }

    #[test]
    fn damage_keeps_every_original_line() {
        let damaged = damage(
            V3,
            &Damage {
                garbage: vec![(0, "not json".into())],
                duplicate: Some(0),
                crlf: true,
                torn: true,
                bom: true,
            },
        );
        for line in V3.lines() {
            assert!(damaged.contains(line));
        }
        assert!(damaged.starts_with('\u{feff}') && damaged.contains("\r\n"));
    }

    #[test]
    fn rewire_makes_dangling_parents_and_cycles() {
        let text = format!(
            "{V3}{}\n",
            r#"{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"user","content":"x"}}"#
        );
        let rewired = rewire(&text, Some(1), Some(1));
        assert!(
            rewired.contains(r#""id":"b","parentId":"deadbeef""#)
                || rewired.contains(r#""parentId":"deadbeef""#)
        );
        assert!(rewired.contains(r#""id":"a","parentId":"b""#));
    }

    #[test]
    fn selectors_pick_earlier_steps() {
        let steps = steps(
            &[
                Op::User("a".into()),
                Op::Branch(7),
                Op::Label {
                    target: 3,
                    label: None,
                },
            ],
            Profile::Pi,
        );
        assert_eq!(steps[1], json!({"call": "branch", "id": {"$result": 0}}));
        assert_eq!(
            steps[2],
            json!({"call": "appendLabelChange", "targetId": {"$result": 0}})
        );
    }
}
