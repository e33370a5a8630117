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
//! The messages have the shapes the real agents write: an assistant [`Turn`] has an
//! `api`, a provider and model of a real one, usage whose totals add up and whose cost
//! follows the model's prices, thinking blocks with their provider's signatures, and
//! every stop reason; a turn that ends in `toolUse` is followed by the `toolResult` of
//! each of its calls (some of them errors). Users run shell commands ([`Op::Bash`]).
//!
//! ```
//! use proptest::strategy::{Strategy, ValueTree};
//! use proptest::test_runner::TestRunner;
//! use session_generators::{ops, steps};
//! use session_reference::model::Profile;
//! let mut runner = TestRunner::deterministic();
//! let session = ops(Profile::Omp, 1..20).new_tree(&mut runner).unwrap().current();
//! // A tool-using turn is its assistant message and one result per call.
//! assert!(steps(&session, Profile::Omp).len() >= session.len());
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{json, Value};
use session_reference::model::{snake_step, Profile};

/// One SessionManager call. `target`/`from` select an earlier entry (modulo how many exist).
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// A user message.
    User(String),
    /// An assistant message, and the results of its tool calls.
    Turn(Turn),
    /// A shell command the user ran (`bashExecution`).
    Bash(Bash),
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

/// An assistant turn: one assistant message, then (when it ends in `toolUse`) one
/// `toolResult` per tool call, answering the call's id.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The model that answered: an index into [`MODELS`].
    pub model: usize,
    /// Its reasoning (a thinking block with the provider's signature).
    pub thinking: Option<String>,
    /// omp with an Anthropic model: a `redactedThinking` block too.
    pub redacted: bool,
    /// Its text (no text block when empty).
    pub text: String,
    /// Tokens: input, output, cache read, cache write.
    pub tokens: [u32; 4],
    /// How the turn ended.
    pub end: End,
}

/// How an assistant turn ended (its `stopReason`).
#[derive(Debug, Clone, PartialEq)]
pub enum End {
    /// `stop`.
    Stop,
    /// `length`.
    Length,
    /// `error`, with the `errorMessage`; the request used no tokens.
    Error(String),
    /// `aborted`: the user stopped it (`errorMessage` "Request was aborted").
    Aborted,
    /// `toolUse`: the calls, each followed by its result.
    ToolUse(Vec<ToolRun>),
}

/// A tool call and its result.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolRun {
    /// Which call: an index into the table of [`tool_run`].
    pub kind: usize,
    /// Whether the tool failed (`isError: true`).
    pub failed: bool,
}

/// A shell command the user ran (`!cmd`, or `!!cmd` kept out of the context).
#[derive(Debug, Clone, PartialEq)]
pub struct Bash {
    /// Which command: an index into the table of [`bash_run`].
    pub kind: usize,
    /// `None`: the user cancelled it (no exit code); otherwise its exit code is the
    /// command's own when `true`, 1 when `false`.
    pub exited: Option<bool>,
    /// Whether its output was cut.
    pub truncated: bool,
    /// `excludeFromContext` (`!!cmd`).
    pub excluded: bool,
}

/// A model of a real provider: `(provider, api, model, prices)`, the prices in dollars
/// per million tokens of input, output, cache read and cache write.
pub const MODELS: &[(&str, &str, &str, [f64; 4])] = &[
    (
        "anthropic",
        "anthropic-messages",
        "claude-sonnet-4-5",
        [3.0, 15.0, 0.3, 3.75],
    ),
    (
        "anthropic",
        "anthropic-messages",
        "claude-opus-4-1",
        [15.0, 75.0, 1.5, 18.75],
    ),
    (
        "anthropic",
        "anthropic-messages",
        "claude-haiku-4-5",
        [1.0, 5.0, 0.1, 1.25],
    ),
    (
        "openai",
        "openai-responses",
        "gpt-5",
        [1.25, 10.0, 0.125, 0.0],
    ),
    (
        "openai",
        "openai-responses",
        "gpt-5-mini",
        [0.25, 2.0, 0.025, 0.0],
    ),
    (
        "google",
        "google-generative-ai",
        "gemini-2.5-pro",
        [1.25, 10.0, 0.31, 0.0],
    ),
    (
        "xai",
        "openai-completions",
        "grok-code-fast-1",
        [0.2, 1.5, 0.02, 0.0],
    ),
];

const ASSISTANT_TEXTS: &[&str] = &[
    "Done.",
    "I'll start by reading the file.",
    "The tests pass now:\n\n```\ntest result: ok. 12 passed; 0 failed\n```\n\nThe fix was an off-by-one in `split_lines`.",
    "Let me check how the parser handles a missing trailing newline.",
    "Voilà — le fichier est corrigé. Prochaine étape : les tests d'intégration.",
    "修正しました。`cargo test` で確認できます。",
    "Here's the plan:\n1. read `src/lib.rs`\n2. fix the bounds check\n3. run the tests 🚀",
    "",
];

const THOUGHTS: &[&str] = &[
    "The user wants the failing test fixed. Let me look at it first.",
    "Hmm — the last line is dropped when it has no newline.\nCompare `split('\\n')` with `lines()`.",
    "Plan:\n1. read the file\n2. make the edit\n3. run the tests",
    "ユーザーはファイル名の変更を求めている。まず一覧を確認する。",
    "",
];

const USER_TEXTS: &[&str] = &[
    "Fix the failing test in src/lib.rs",
    "Can you explain what this function does?\n\n```rust\nfn f(x: &[u8]) -> usize { x.iter().filter(|b| **b == b'\\n').count() }\n```",
    "Übersetze die Fehlermeldungen ins Deutsche, bitte.",
    "テストを実行して結果を教えてください",
    "run the benchmarks again 🙏",
];

const ERRORS: &[&str] = &[
    "429 {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"This request would exceed the rate limit for your organization.\"}}",
    "Connection error.",
    "529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
    "terminated",
];

/// The tool calls [`ToolRun::kind`] picks from: `(tool, arguments, result, error result)`.
fn tool_run(kind: usize) -> (&'static str, Value, &'static str, &'static str) {
    match kind % 8 {
        0 => (
            "read",
            json!({"path": "src/lib.rs"}),
            "pub fn split_lines(text: &str) -> Vec<&str> {\n    text.split('\\n').collect()\n}\n",
            "ENOENT: no such file or directory, open '/proj/src/lib.rs'",
        ),
        1 => (
            "bash",
            json!({"command": "cargo test 2>&1 | tail -3", "timeout": 120}),
            "test result: ok. 12 passed; 0 failed; 0 ignored\n",
            "error[E0425]: cannot find value `line` in this scope\n  --> src/lib.rs:2:5\n\nCommand exited with code 101",
        ),
        2 => (
            "edit",
            json!({"path": "src/lib.rs", "oldText": "text.split('\\n')", "newText": "text.lines()"}),
            "Successfully replaced text in src/lib.rs.",
            "Could not find the exact text in src/lib.rs. The old text must match exactly including all whitespace and newlines.",
        ),
        3 => (
            "write",
            json!({"path": "notes/日本語.md", "content": "# メモ\n\n- naïve café ✓\n"}),
            "Successfully wrote 31 bytes to notes/日本語.md",
            "EACCES: permission denied, open '/proj/notes/日本語.md'",
        ),
        4 => (
            "grep",
            json!({"pattern": "fn split_", "path": "src"}),
            "src/lib.rs:1: pub fn split_lines(text: &str) -> Vec<&str> {",
            "rg: src: No such file or directory (os error 2)",
        ),
        5 => (
            "find",
            json!({"pattern": "*.rs"}),
            "src/lib.rs\nsrc/main.rs\ntests/lines.rs",
            "Operation aborted",
        ),
        6 => (
            "ls",
            json!({"path": "."}),
            ".gitignore\nCargo.toml\nsrc/\ntests/",
            "Path not found: /proj/missing",
        ),
        _ => (
            "read",
            json!({"path": "docs/screenshot.png"}),
            "Read image file [image/png]",
            "ENOENT: no such file or directory, open '/proj/docs/screenshot.png'",
        ),
    }
}

/// The commands [`Bash::kind`] picks from: `(command, output, exit code)`.
fn bash_run(kind: usize) -> (&'static str, &'static str, i64) {
    match kind % 5 {
        0 => ("git status --short", " M src/lib.rs\n?? notes/日本語.md\n", 0),
        1 => (
            "ls -la",
            "total 16\ndrwxr-xr-x  5 me  staff  160 Jun  1 12:00 .\n-rw-r--r--  1 me  staff  120 Jun  1 12:00 Cargo.toml\n",
            0,
        ),
        2 => ("echo 'héllo wörld 😀'", "héllo wörld 😀\n", 0),
        3 => (
            "cargo build 2>&1 | tail -2",
            "error: could not compile `demo` (lib) due to 1 previous error\n",
            101,
        ),
        _ => ("npm run dev", "> demo@1.0.0 dev\n> vite\n\n  VITE v5.4.0  ready in 312 ms\n", 0),
    }
}

/// A deterministic stream of pseudo-random words (splitmix64), for ids and signatures
/// that look like the providers' and depend only on where they are in the session.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// `len` characters of `alphabet`, determined by `seed`.
fn chars(seed: u64, len: usize, alphabet: &[u8]) -> String {
    (0..len)
        .map(|i| {
            let word = mix(seed.wrapping_mul(1_000_003).wrapping_add(i as u64));
            alphabet[usize::try_from(word % alphabet.len() as u64).unwrap_or(0)] as char
        })
        .collect()
}

const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const BASE64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const HEX: &[u8] = b"0123456789abcdef";

/// The time of the message of step `at`: a second per step.
fn time(at: usize) -> i64 {
    1_748_779_200_000 + 1000 * i64::try_from(at).unwrap_or(0)
}

/// The messages of a turn that starts at step `at`: the assistant's, then one
/// `toolResult` per tool call.
fn turn_messages(turn: &Turn, profile: Profile, at: usize) -> Vec<Value> {
    let (provider, api, model, prices) = MODELS[turn.model % MODELS.len()];
    let seed = at as u64 * 64;
    let mut content = Vec::new();
    if let Some(thinking) = &turn.thinking {
        let mut block = json!({"type": "thinking", "thinking": thinking});
        match api {
            "anthropic-messages" => {
                block["thinkingSignature"] = json!(format!("Eq{}==", chars(seed, 86, BASE64)));
            }
            "openai-responses" => {
                let item = json!({"type": "reasoning", "id": format!("rs_{}", chars(seed, 48, HEX)), "summary": [{"type": "summary_text", "text": thinking}]});
                block["thinkingSignature"] = json!(item.to_string());
            }
            "openai-completions" => block["thinkingSignature"] = json!("reasoning_content"),
            _ => {}
        }
        content.push(block);
    }
    if turn.redacted && profile == Profile::Omp && api == "anthropic-messages" {
        content.push(json!({"type": "redactedThinking", "data": format!("EmwK{}", chars(seed + 1, 120, BASE64))}));
    }
    if !turn.text.is_empty() {
        let mut block = json!({"type": "text", "text": turn.text});
        if api == "openai-responses" {
            block["textSignature"] = json!(format!("msg_{}", chars(seed + 2, 48, HEX)));
        }
        content.push(block);
    }
    let mut results = Vec::new();
    if let End::ToolUse(runs) = &turn.end {
        for (k, run) in runs.iter().enumerate() {
            let (name, arguments, output, error) = tool_run(run.kind);
            let id_seed = seed + 8 + k as u64;
            let id = match api {
                "anthropic-messages" => format!("toolu_01{}", chars(id_seed, 22, BASE62)),
                "openai-responses" => format!(
                    "call_{}|fc_{}",
                    chars(id_seed, 24, BASE62),
                    chars(id_seed + 32, 48, HEX)
                ),
                "google-generative-ai" => format!("{name}_{}_{}", time(at), k + 1),
                _ => format!("call_{}", chars(id_seed, 24, BASE62)),
            };
            let mut call =
                json!({"type": "toolCall", "id": id, "name": name, "arguments": arguments});
            if api == "google-generative-ai" {
                call["thoughtSignature"] = json!(chars(id_seed + 16, 64, BASE64));
            }
            content.push(call);
            let text = if run.failed { error } else { output };
            let mut blocks = vec![json!({"type": "text", "text": text})];
            if run.kind % 8 == 7 && !run.failed {
                blocks.push(json!({"type": "image", "data": format!("iVBORw0KGgo{}", chars(id_seed + 48, 64, BASE64)), "mimeType": "image/png"}));
            }
            let mut result = json!({
                "role": "toolResult",
                "toolCallId": id,
                "toolName": name,
                "content": blocks,
                "isError": run.failed,
                "timestamp": time(at + 1 + k),
            });
            if name == "edit" && !run.failed {
                result["details"] = json!({"diff": "-1     text.split('\\n').collect()\n+1     text.lines().collect()", "firstChangedLine": 1});
            }
            results.push(result);
        }
    }
    let (stop, error_message) = match &turn.end {
        End::Stop => ("stop", None),
        End::Length => ("length", None),
        End::Error(message) => ("error", Some(message.as_str())),
        End::Aborted => ("aborted", Some("Request was aborted")),
        End::ToolUse(_) => ("toolUse", None),
    };
    let [input, output, cache_read, cache_write] = match turn.end {
        End::Error(_) => [0; 4],
        _ => turn.tokens,
    };
    // OpenAI, Google and xAI report no cache writes.
    let cache_write = if prices[3] == 0.0 { 0 } else { cache_write };
    let cost = |tokens: u32, price: f64| f64::from(tokens) * price / 1_000_000.0;
    let costs = [
        cost(input, prices[0]),
        cost(output, prices[1]),
        cost(cache_read, prices[2]),
        cost(cache_write, prices[3]),
    ];
    // As JavaScript writes them: a zero cost is `0`, not `0.0`.
    let number = |cost: f64| if cost == 0.0 { json!(0) } else { json!(cost) };
    let mut message = json!({
        "role": "assistant",
        "content": content,
        "api": api,
        "provider": provider,
        "model": model,
        "usage": {
            "input": input,
            "output": output,
            "cacheRead": cache_read,
            "cacheWrite": cache_write,
            "totalTokens": input + output + cache_read + cache_write,
            "cost": {"input": number(costs[0]), "output": number(costs[1]), "cacheRead": number(costs[2]), "cacheWrite": number(costs[3]), "total": number(costs.iter().sum())},
        },
        "stopReason": stop,
        "timestamp": time(at),
    });
    if let Some(error) = error_message {
        message["errorMessage"] = json!(error);
    }
    let mut messages = vec![message];
    messages.extend(results);
    messages
}

/// The `bashExecution` message of a [`Bash`] at step `at`.
fn bash_message(bash: &Bash, at: usize) -> Value {
    let (command, output, code) = bash_run(bash.kind);
    let mut message = json!({
        "role": "bashExecution",
        "command": command,
        "output": output,
        "cancelled": bash.exited.is_none(),
        "truncated": bash.truncated,
        "timestamp": time(at),
    });
    match bash.exited {
        Some(true) => message["exitCode"] = json!(code),
        Some(false) => message["exitCode"] = json!(1),
        None => {}
    }
    if bash.excluded {
        message["excludeFromContext"] = json!(true);
    }
    message
}

/// An assistant turn of `profile`: mostly tool use, every stop reason.
pub fn turn(profile: Profile) -> BoxedStrategy<Turn> {
    let end = prop_oneof![
        3 => Just(End::Stop),
        1 => Just(End::Length),
        1 => prop::sample::select(ERRORS).prop_map(|e| End::Error(e.to_owned())),
        1 => Just(End::Aborted),
        12 => vec((0usize..8, prop::bool::weighted(0.15)).prop_map(|(kind, failed)| ToolRun { kind, failed }), 1..4)
            .prop_map(End::ToolUse),
    ];
    let redacted = if profile == Profile::Omp {
        prop::bool::weighted(0.1).boxed()
    } else {
        Just(false).boxed()
    };
    (
        0..MODELS.len(),
        prop::option::weighted(0.5, prop::sample::select(THOUGHTS).prop_map(str::to_owned)),
        redacted,
        prop::sample::select(ASSISTANT_TEXTS).prop_map(str::to_owned),
        (1u32..8000, 1u32..4000, 0u32..150_000, 0u32..20_000),
        end,
    )
        .prop_map(
            |(model, thinking, redacted, text, (i, o, r, w), end)| Turn {
                model,
                thinking,
                redacted,
                text,
                tokens: [i, o, r, w],
                end,
            },
        )
        .boxed()
}

/// A shell command the user ran: some fail, some are cancelled (no exit code).
pub fn bash() -> impl Strategy<Value = Bash> {
    (
        0usize..5,
        prop_oneof![6 => Just(Some(true)), 1 => Just(Some(false)), 2 => Just(None)],
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(kind, exited, truncated, excluded)| Bash {
            kind,
            exited,
            truncated,
            excluded,
        })
}

/// A user's prompt: a short edge-case word or a real-looking request.
fn prompt() -> impl Strategy<Value = String> {
    prop_oneof![
        word(),
        prop::sample::select(USER_TEXTS).prop_map(str::to_owned)
    ]
}

fn word() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "hello", "éclair", "日本", "😀", "x y", ""])
        .prop_map(str::to_owned)
}

/// One op of `profile`.
pub fn op(profile: Profile) -> BoxedStrategy<Op> {
    let common = prop_oneof![
        3 => prompt().prop_map(Op::User),
        6 => turn(profile).prop_map(Op::Turn),
        1 => bash().prop_map(Op::Bash),
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
/// A turn is several steps: its assistant message, then a result per tool call.
/// A selector picks among the steps before it that created an entry; with none, the op becomes a user message.
pub fn steps(ops: &[Op], profile: Profile) -> Vec<Value> {
    let mut made: Vec<usize> = Vec::new();
    let mut out = Vec::with_capacity(ops.len());
    for op in ops {
        let at = out.len();
        let pick = |selector: usize| {
            made.get(selector % made.len().max(1))
                .map(|&k| json!({ "$result": k }))
        };
        let append = |message: Value| json!({"call": "appendMessage", "message": message});
        let new = match op {
            Op::User(text) => vec![append(user(text, at))],
            Op::Turn(turn) => turn_messages(turn, profile, at)
                .into_iter()
                .map(append)
                .collect(),
            Op::Bash(bash) => vec![append(bash_message(bash, at))],
            Op::Image(len) => {
                vec![
                    json!({"call": "appendMessage", "message": {"role": "user", "content": [{"type": "image", "data": "A".repeat(*len), "mimeType": "image/png"}], "timestamp": 1}}),
                ]
            }
            Op::Long(len) => vec![append(user(&"x".repeat(*len), at))],
            Op::Thinking(level) => {
                vec![json!({"call": "appendThinkingLevelChange", "thinkingLevel": level})]
            }
            Op::Model {
                provider,
                model,
                role,
            } => vec![match profile {
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
            }],
            Op::Compaction { summary, kept } => {
                let kept = kept.and_then(pick).unwrap_or_else(|| json!("ffffffff"));
                vec![
                    json!({"call": "appendCompaction", "summary": summary, "firstKeptEntryId": kept, "tokensBefore": 100}),
                ]
            }
            Op::Branch(selector) => vec![match pick(*selector) {
                Some(id) => json!({"call": "branch", "id": id}),
                None => append(user("start", at)),
            }],
            Op::ResetLeaf => vec![json!({"call": "resetLeaf"})],
            Op::BranchWithSummary { from, summary } => {
                let from = from.and_then(pick).unwrap_or(Value::Null);
                vec![json!({"call": "branchWithSummary", "fromId": from, "summary": summary})]
            }
            Op::Label { target, label } => vec![match pick(*target) {
                Some(id) => {
                    let mut step = json!({"call": "appendLabelChange", "targetId": id});
                    if let Some(label) = label {
                        step["label"] = json!(label);
                    }
                    step
                }
                None => append(user("start", at)),
            }],
            Op::Custom(text) => {
                vec![
                    json!({"call": "appendCustomEntry", "customType": "gen", "data": {"text": text}}),
                ]
            }
            Op::CustomMessage { text, display } => {
                vec![
                    json!({"call": "appendCustomMessageEntry", "customType": "gen", "content": text, "display": display}),
                ]
            }
            Op::Ttsr(rules) => vec![json!({"call": "appendTtsrInjection", "injectedRules": rules})],
            Op::SessionInfo(name) => vec![json!({"call": "appendSessionInfo", "name": name})],
            Op::SessionInit(task) => {
                vec![
                    json!({"call": "appendSessionInit", "systemPrompt": "You are a helper.", "task": task, "tools": ["read", "edit"]}),
                ]
            }
            Op::Mode { mode, data } => {
                let mut step = json!({"call": "appendModeChange", "mode": mode});
                if *data {
                    step["data"] = json!({"planFile": "/tmp/plan.md"});
                }
                vec![step]
            }
        };
        for step in new {
            // An operator `branch` appends a `leaf` entry, but returns no id to select.
            if step["call"] != "branch" && step["call"] != "resetLeaf" {
                made.push(out.len());
            }
            out.push(if profile == Profile::Operator {
                snake_step(&step)
            } else {
                step
            });
        }
    }
    out
}

/// A generated session as a corpus case file (`case.json`), id and name given.
pub fn case_file(id: u32, name: &str, ops: &[Op], profile: Profile) -> Value {
    let steps = steps(ops, profile);
    json!({
        "id": id,
        "name": name,
        "description": format!("generated: {} SessionManager calls ({profile})", steps.len()),
        "profiles": [profile.name()],
        // The calls append and branch (the tree) and the file is written (persistence).
        "clauses": ["tree.4", "persistence.2"],
        "op": "apply",
        "args": {"open": null, "cwd": "/proj", "steps": steps},
    })
}

fn user(text: &str, at: usize) -> Value {
    json!({"role": "user", "content": text, "timestamp": time(at)})
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
