//! What a trial's acknowledgements promise ([`Promises`]): each acknowledged entry
//! ([`Expected`]), in which file, and whether it must have survived (durable, or
//! flushed after), the migration rewrite, the branched session; and the paths acks
//! name, read inside the trial directory.

use std::path::Path;

use serde_json::Value;

use super::findings::{adapter_finding, Finding, FindingKind};
use super::plan::{Plan, StepKind};
use super::process::Ack;

/// The session file the trial's `apply` opens, relative to the trial directory.
pub const MAIN_FILE: &str = "session.jsonl";

/// An entry the trial expects to find, from an acknowledgement.
#[derive(Debug, Clone)]
pub struct Expected {
    /// The id the step returned.
    pub id: String,
    /// The step.
    pub step: usize,
    /// The file it belongs in, relative to the trial directory.
    pub file: String,
    /// Checked (a loss is a finding): the ack was durable or a flush was acknowledged after it.
    pub checked: bool,
    /// The entry as the adapter held it, when the ack carried it.
    pub entry: Option<Value>,
    /// Else: its `type` and the fields the step gave (with `$result` substituted).
    pub entry_type: &'static str,
    /// The fields the step gave.
    pub fields: Vec<(String, Value)>,
}

/// What the acknowledgements of a trial promise.
#[derive(Debug, Clone, Default)]
pub struct Promises {
    /// Acknowledged entries.
    pub entries: Vec<Expected>,
    /// The open was acknowledged as durable or followed by an acknowledged flush: the
    /// migration rewrite must be complete.
    pub open_checked: bool,
    /// The branched session (relative path) and whether it is checked, with the step of its leaf.
    pub branched: Option<(String, bool, usize)>,
    /// Findings made while reading the acknowledgements (a path outside the trial).
    pub findings: Vec<Finding>,
}

/// Reads the acknowledgements `acks` of `plan`'s steps, made in the trial directory `dir`.
///
/// An entry is checked when its ack was durable or a later flush was acknowledged; after
/// a power loss (`power`) only the flush counts: a write that returned is in the page
/// cache, and only what a flush synced is promised to be on the disk.
pub fn promises(plan: &Plan, acks: &[Ack], dir: &Path, power: bool) -> Promises {
    let mut results: Vec<Value> = vec![Value::Null; plan.steps.len()];
    let mut acked: Vec<Option<&Ack>> = vec![None; plan.steps.len()];
    let mut open: Option<&Ack> = None;
    let mut out = Promises::default();
    for ack in acks {
        match ack.step {
            None if open.is_none() => open = Some(ack),
            Some(n) if n < plan.steps.len() && acked[n].is_none() => {
                results[n] = ack.result.clone();
                acked[n] = Some(ack);
            }
            // `acks::Ledger` refuses these as they come; acks from elsewhere are not trusted.
            _ => out.findings.push(adapter_finding(format!(
                "an ack out of place (step {})",
                ack.step.map_or("null".into(), |n| n.to_string())
            ))),
        }
    }
    // The last acknowledged flush that did not fail: everything before it is durable.
    let flushed_before = plan
        .kinds
        .iter()
        .enumerate()
        .filter(|(n, k)| {
            **k == StepKind::Flush && acked[*n].is_some_and(|a| a.result.get("error").is_none())
        })
        .map(|(n, _)| n)
        .max();
    let durable = |n: Option<usize>, ack: &Ack| {
        (ack.durable && !power) || flushed_before.is_some_and(|f| n.is_none_or(|n| n < f))
    };
    out.open_checked = open.is_some_and(|a| durable(None, a));
    let mut file = MAIN_FILE.to_owned();
    for (n, kind) in plan.kinds.iter().enumerate() {
        let Some(ack) = acked[n] else { continue };
        match kind {
            StepKind::Append { entry_type } => {
                let Some(id) = ack.result.as_str() else {
                    // A failed step appended nothing; any other result names no entry
                    // to look for, and so cannot be acknowledged.
                    if ack.result.get("error").is_none() {
                        out.findings.push(adapter_finding(format!(
                            "step {n} appends an entry, but its ack names no entry id"
                        )));
                    }
                    continue;
                };
                let step = super::substitute(&plan.steps[n], &results);
                let fields = step
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter(|(k, _)| !matches!(k.as_str(), "call" | "fromId" | "id"))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                out.entries.push(Expected {
                    id: id.to_owned(),
                    step: n,
                    file: file.clone(),
                    checked: durable(Some(n), ack),
                    entry: ack.entry.clone(),
                    entry_type,
                    fields,
                });
            }
            StepKind::CreateBranchedSession { leaf_step } => {
                let Some(path) = ack.result.as_str() else {
                    continue;
                };
                let Some(rel) = relative(dir, path) else {
                    out.findings.push(Finding {
                        file: String::new(),
                        line: None,
                        kind: FindingKind::Escaped {
                            path: session_conformance::guard::printable(path).into_owned(),
                        },
                    });
                    return out;
                };
                file.clone_from(&rel);
                out.branched = Some((rel, durable(Some(n), ack), *leaf_step));
            }
            StepKind::Flush | StepKind::Branch => {}
        }
    }
    out
}

/// `path` (absolute, or relative to `dir`) as a relative path inside `dir`, or `None`
/// when it leads elsewhere (`..`, another root, a link out).
pub fn relative(dir: &Path, path: &str) -> Option<String> {
    let p = Path::new(path);
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        dir.join(p)
    };
    if joined
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return None;
    }
    // The folder must really be inside (no link out); the file itself may not exist.
    let parent = joined.parent()?.canonicalize().ok()?;
    let dir = dir.canonicalize().ok()?;
    let rest = parent.strip_prefix(&dir).ok()?;
    let name = joined.file_name()?;
    Some(rest.join(name).to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acks_out_of_place_or_without_an_entry_id_are_findings() {
        use super::super::plan::{build, Rng, Size};
        let plan = build(
            &mut Rng::new(1, 0),
            Size {
                appends: 8,
                v1_entries: 2,
            },
        );
        assert_eq!(
            plan.kinds[0],
            StepKind::Append {
                entry_type: "message"
            }
        );
        let ack = |step, result| Ack {
            step,
            result,
            durable: true,
            entry: None,
        };
        let acks = [
            ack(None, Value::Null),
            ack(Some(0), Value::Null),
            ack(Some(0), Value::String("aaaa0001".into())),
            ack(Some(9999), Value::String("aaaa0002".into())),
            ack(None, Value::Null),
        ];
        let dir = tempfile::tempdir().expect("tempdir");
        let promises = promises(&plan, &acks, dir.path(), false);
        let reasons: Vec<String> = promises.findings.iter().map(ToString::to_string).collect();
        assert_eq!(
            reasons,
            [
                "adapter: an ack out of place (step 0)",
                "adapter: an ack out of place (step 9999)",
                "adapter: an ack out of place (step null)",
                "adapter: step 0 appends an entry, but its ack names no entry id",
            ]
        );
    }

    #[test]
    fn paths_outside_the_trial_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("sessions")).expect("mkdir");
        let inside = dir.path().join("sessions/x.jsonl");
        assert_eq!(
            relative(dir.path(), &inside.to_string_lossy()).as_deref(),
            Some("sessions/x.jsonl")
        );
        assert_eq!(relative(dir.path(), "/etc/passwd"), None);
        assert_eq!(relative(dir.path(), "sessions/../../x"), None);
    }
}
