//! What a crash trial runs: a large v1 file to open (its migration rewrite), a long
//! `apply` (appends with periodic flushes, a branch, a branch summary, a
//! createBranchedSession, more appends), and where to kill it. Everything is drawn
//! from a seed: the same seed and trial number give the same plan.

use serde_json::{json, Value};

/// A small, fast, seedable generator (SplitMix64): plans need no cryptographic quality,
/// and the same seed must give the same plan on every platform.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for trial `trial` of seed `seed`.
    pub fn new(seed: u64, trial: u64) -> Rng {
        let mut rng = Rng(seed ^ trial.wrapping_mul(0xA076_1D64_78BD_642F));
        rng.next_u64();
        rng
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        // usize fits in u64 on every supported platform; the remainder is below n.
        usize::try_from(self.next_u64() % n as u64).unwrap_or(0)
    }

    /// A number in `[0, 1)`.
    pub fn fraction(&mut self) -> f64 {
        // 53 random bits and 2^53 are exact in an f64.
        #[allow(clippy::cast_precision_loss)]
        let (x, scale) = ((self.next_u64() >> 11) as f64, (1u64 << 53) as f64);
        x / scale
    }
}

/// How big a trial's work is.
#[derive(Debug, Clone, Copy)]
pub struct Size {
    /// Append steps in the `apply`.
    pub appends: usize,
    /// Entries of the v1 file the `apply` opens (and so migrates and rewrites).
    pub v1_entries: usize,
}

/// What a step of the plan is, for the checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepKind {
    /// It appends one entry of `entry_type` and returns its id.
    Append {
        /// The `type` of the entry it writes.
        entry_type: &'static str,
    },
    /// `flush`: every earlier step's writes are complete when it returns.
    Flush,
    /// `branch`: moves the leaf, writes nothing.
    Branch,
    /// `createBranchedSession`: writes a new file with the path to `leaf_step`'s entry,
    /// which later appends go to.
    CreateBranchedSession {
        /// The step whose entry is the new session's leaf.
        leaf_step: usize,
    },
}

/// A trial's input and steps.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The v1 session file the `apply` opens (`session.jsonl`).
    pub v1: Vec<u8>,
    /// The v1 file's entries as values, in order (the migrated file holds each of them,
    /// with ids added).
    pub v1_entries: Vec<Value>,
    /// The `apply` steps (`PROTOCOL.md` "apply").
    pub steps: Vec<Value>,
    /// What each step is.
    pub kinds: Vec<StepKind>,
}

impl Plan {
    /// The step that creates the branched session, if any.
    pub fn branched_step(&self) -> Option<usize> {
        self.kinds
            .iter()
            .position(|k| matches!(k, StepKind::CreateBranchedSession { .. }))
    }
}

/// The plan of trial `rng`'s draw, at `size`.
pub fn build(rng: &mut Rng, size: Size) -> Plan {
    const LEVELS: [&str; 3] = ["low", "medium", "high"];
    let (v1, v1_entries) = v1_file(rng, size.v1_entries);
    let mut steps = Vec::new();
    let mut kinds = Vec::new();
    let mut push = |steps: &mut Vec<Value>, step: Value, kind: StepKind| {
        steps.push(step);
        kinds.push(kind);
    };
    let n = size.appends.max(8);
    let branch_at = n / 2;
    let summary_at = n / 2 + n / 10;
    let branched_at = 3 * n / 4;
    let flush_every = 16 + rng.below(16);
    // Steps that appended an entry, and those that appended an assistant message.
    let mut appended: Vec<usize> = Vec::new();
    let mut assistants: Vec<usize> = Vec::new();
    for i in 0..n {
        if i > 0 && i % flush_every == 0 {
            push(&mut steps, json!({"call": "flush"}), StepKind::Flush);
        }
        if i == branch_at {
            let target = pick(rng, &assistants);
            push(
                &mut steps,
                json!({"call": "branch", "id": {"$result": target}}),
                StepKind::Branch,
            );
        }
        if i == summary_at {
            let from = pick(rng, &appended);
            appended.push(steps.len());
            push(
                &mut steps,
                json!({"call": "branchWithSummary", "fromId": {"$result": from},
                       "summary": format!("summary at step {i}")}),
                StepKind::Append {
                    entry_type: "branch_summary",
                },
            );
        }
        if i == branched_at {
            let leaf = assistants.last().copied().unwrap_or(0);
            push(
                &mut steps,
                json!({"call": "createBranchedSession", "leafId": {"$result": leaf}}),
                StepKind::CreateBranchedSession { leaf_step: leaf },
            );
        }
        let index = steps.len();
        let (step, entry_type) = match rng.below(20) {
            0 => (
                json!({"call": "appendThinkingLevelChange",
                       "thinkingLevel": LEVELS[rng.below(LEVELS.len())]}),
                "thinking_level_change",
            ),
            1 => (
                json!({"call": "appendCustomEntry", "customType": "crash-trial",
                       "data": {"step": i, "note": padding(rng, 200)}}),
                "custom",
            ),
            2 if !appended.is_empty() => (
                json!({"call": "appendLabelChange", "targetId": {"$result": pick(rng, &appended)},
                       "label": format!("label {i}")}),
                "label",
            ),
            _ => {
                let assistant = appended.len() % 2 == 1;
                if assistant {
                    assistants.push(index);
                }
                (
                    json!({"call": "appendMessage",
                           "message": message(assistant, &format!("s{i} {}", padding(rng, 1200)), i)}),
                    "message",
                )
            }
        };
        appended.push(index);
        push(&mut steps, step, StepKind::Append { entry_type });
    }
    push(&mut steps, json!({"call": "flush"}), StepKind::Flush);
    Plan {
        v1,
        v1_entries,
        steps,
        kinds,
    }
}

/// The steps that reopen a file after the crash: a user message, an assistant
/// message (so even a deferred writer writes), and a flush.
pub fn reopen_steps(tag: &str) -> Vec<Value> {
    vec![
        json!({"call": "appendMessage", "message": message(false, &format!("{tag} after the crash"), 0)}),
        json!({"call": "appendMessage", "message": message(true, &format!("{tag} answered"), 1)}),
        json!({"call": "flush"}),
    ]
}

/// A message: a user's text, or an assistant's with its usage (as pi and omp write them).
pub fn message(assistant: bool, text: &str, n: usize) -> Value {
    let timestamp = 1_748_779_200_000u64 + n as u64 * 1000;
    if assistant {
        json!({"role": "assistant", "content": [{"type": "text", "text": text}],
               "provider": "anthropic", "model": "claude-sonnet-4-5",
               "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
               "stopReason": "stop", "timestamp": timestamp})
    } else {
        json!({"role": "user", "content": text, "timestamp": timestamp})
    }
}

/// A v1 file (a header without `version`, entries without ids) of `count` entries:
/// messages, every 50th a thinking-level change. Returns its bytes and its entries.
fn v1_file(rng: &mut Rng, count: usize) -> (Vec<u8>, Vec<Value>) {
    let id = format!(
        "0197a1b2-{:04x}-7e5f-8a9b-{:012x}",
        rng.next_u64() & 0xffff,
        rng.next_u64() & 0xffff_ffff_ffff
    );
    let header = json!({"type": "session", "id": id, "timestamp": "2025-06-01T12:00:00.000Z", "cwd": "/proj"});
    let mut text = header.to_string();
    text.push('\n');
    let mut entries = Vec::with_capacity(count);
    for i in 0..count {
        let time = format!(
            "2025-06-01T{:02}:{:02}:{:02}.000Z",
            12 + i / 3600 % 12,
            i / 60 % 60,
            i % 60
        );
        let entry = if i % 50 == 49 {
            json!({"type": "thinking_level_change", "timestamp": time, "thinkingLevel": "low"})
        } else {
            let text = format!("v1 {i} {}", padding(rng, 600));
            json!({"type": "message", "timestamp": time, "message": message(i % 2 == 1, &text, i)})
        };
        text.push_str(&entry.to_string());
        text.push('\n');
        entries.push(entry);
    }
    (text.into_bytes(), entries)
}

/// Up to `max` characters of filler words.
fn padding(rng: &mut Rng, max: usize) -> String {
    const WORDS: [&str; 8] = [
        "tool", "output", "line", "file", "diff", "ok", "rust", "node",
    ];
    let len = rng.below(max);
    let mut out = String::with_capacity(len + 8);
    while out.len() < len {
        out.push_str(WORDS[rng.below(WORDS.len())]);
        out.push(' ');
    }
    out
}

/// One of `items` (0 when there is none).
fn pick(rng: &mut Rng, items: &[usize]) -> usize {
    items.get(rng.below(items.len())).copied().unwrap_or(0)
}

/// Where a trial is killed: a moment named by what the adapter last said, plus a delay.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KillPoint {
    /// The anchor the delay runs from.
    pub after: Anchor,
    /// The delay as a fraction of the time the calibration run took from the anchor to
    /// its next line.
    pub fraction: f64,
}

/// What a kill point's delay runs from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// The request was sent (the kill lands in the open and its migration rewrite).
    Request,
    /// The open was acknowledged.
    Open,
    /// Step N was acknowledged.
    Step(usize),
}

impl std::fmt::Display for Anchor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Anchor::Request => f.write_str("request"),
            Anchor::Open => f.write_str("open"),
            Anchor::Step(n) => write!(f, "step {n}"),
        }
    }
}

/// Draws a kill point for a plan of `plan`: a quarter in the open (the migration
/// rewrite), a tenth just before the createBranchedSession, the rest over all steps.
pub fn kill_point(rng: &mut Rng, plan: &Plan) -> KillPoint {
    let steps = plan.steps.len();
    let after = match rng.below(20) {
        0..=4 => Anchor::Request,
        5 | 6 => match plan.branched_step() {
            Some(0) | None => Anchor::Open,
            Some(n) => Anchor::Step(n - 1),
        },
        _ => match rng.below(steps + 1) {
            0 => Anchor::Open,
            n => Anchor::Step(n - 1),
        },
    };
    KillPoint {
        after,
        fraction: rng.fraction(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_plan_and_kill_point() {
        let size = Size {
            appends: 50,
            v1_entries: 20,
        };
        let a = build(&mut Rng::new(7, 3), size);
        let b = build(&mut Rng::new(7, 3), size);
        assert_eq!(a.steps, b.steps);
        assert_eq!(a.v1, b.v1);
        let c = build(&mut Rng::new(7, 4), size);
        assert_ne!(a.steps, c.steps);
        assert_eq!(
            kill_point(&mut Rng::new(1, 1), &a),
            kill_point(&mut Rng::new(1, 1), &a)
        );
    }

    #[test]
    fn a_plan_has_flushes_a_branch_and_a_branched_session() {
        let plan = build(
            &mut Rng::new(1, 0),
            Size {
                appends: 100,
                v1_entries: 10,
            },
        );
        assert!(plan.kinds.contains(&StepKind::Branch));
        assert!(plan.branched_step().is_some());
        assert_eq!(plan.kinds.last(), Some(&StepKind::Flush));
        assert_eq!(plan.steps.len(), plan.kinds.len());
        assert_eq!(plan.v1_entries.len(), 10);
    }
}
