//! Judging a case: its output against its golden (values, not spellings; written lines
//! as written), then against the divergence list, into a [`CaseResult`].

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use session_reference::model::Profile;

use crate::adapter::Adapter;
use crate::compare::{self, dispose, Numbers};
use crate::corpus::{Case, Golden, GoldenProblem};
use crate::divergences::{Divergences, Excuse};
use crate::names::NameProblem;
use crate::normalize::canonical;
use crate::outcome::{CaseResult, Status, UNREVIEWED_NOTE};
use crate::protocol::{Capability, Hello, Operation};

use super::{produce_with, strip_extras, Produced};

/// Runs `case` through [`produce_with`] and judges its output (the body of [`super::run_case`]).
pub(super) fn compare_case(
    case: &Case,
    profile: Profile,
    adapter: &mut dyn Adapter,
    hello: &Hello,
    timeout: Duration,
    divergences: &Divergences,
) -> CaseResult {
    let mut result = CaseResult {
        id: case.id(),
        name: case.full_name(),
        description: case.file.description.clone(),
        clauses: case.file.clauses.clone(),
        tags: case.file.tags.clone(),
        status: Status::Pass,
        pointer: None,
        diff: None,
        notes: Vec::new(),
        actual: None,
        expected: None,
        signature: None,
        elapsed: Duration::ZERO,
    };
    if !hello.supports(&case.file.op) {
        result.status = Status::Skipped;
        result
            .notes
            .push(format!("adapter does not support {}", case.file.op));
        return apply_divergence(result, case, divergences, &[]);
    }
    if !case.file.faults.is_empty() && !hello.has(&Capability::Faults) {
        result.status = Status::Skipped;
        result
            .notes
            .push("adapter does not declare the faults capability".into());
        return apply_divergence(result, case, divergences, &[]);
    }
    let extra_types: Vec<&str> = divergences.extra_entry_types().map(|(t, _)| t).collect();
    let produced = match produce_with(case, profile, adapter, hello, timeout, &extra_types) {
        Ok(produced) => produced,
        Err((status, note)) => {
            result.status = status;
            result.notes.push(note);
            result.signature = Some(status.name().to_owned());
            return apply_divergence(result, case, divergences, &[]);
        }
    };
    let notes = produced.notes();
    let safety_failed = !produced.unsafe_checks.is_empty();
    let Produced {
        output: actual,
        left_out,
        name_problems,
        ..
    } = produced;
    let golden = case.golden(profile);
    let (golden_path, golden_text) = (&golden.path, golden.text.as_deref().ok());
    // Goldens are canonical text. Equal canonical texts are equal values (the text parses
    // back to the value it was rendered from), and then neither stripping the golden's
    // extras nor ignoring extra context keys changes anything: such a case is a pass
    // without parsing its golden. Any other text is parsed and compared as a value.
    let actual_text = canonical(&actual);
    if golden_text == Some(actual_text.as_str()) {
        dispose(actual);
    } else {
        let expected = match parse_golden(golden) {
            Ok(expected) => expected,
            Err(problem) => {
                result.status = Status::Fail;
                result.notes.push(golden_note(golden_path, &problem));
                result.actual = Some(actual_text);
                result.signature = Some(problem.signature().to_owned());
                dispose(actual);
                return result;
            }
        };
        compare_values(&mut result, expected, actual, case, hello, golden_path);
    }
    result.notes.extend(notes);
    fail_on_names(&mut result, &name_problems);
    if safety_failed {
        result.status = Status::Unsafe;
        if result.signature.is_none() {
            result.signature = Some(Status::Unsafe.name().to_owned());
        }
    }
    apply_divergence(result, case, divergences, &left_out)
}

/// A golden's value, or why there is none: missing, unreadable, or not JSON.
pub(super) fn parse_golden(golden: &Golden) -> Result<Value, GoldenProblem> {
    let text = golden.text.as_deref().map_err(Clone::clone)?;
    session_reference::raw::parse_value(text).map_err(|e| GoldenProblem::not_json(&e))
}

/// A result's note on a golden it could not compare with: `missing golden PATH`, or
/// `unreadable golden PATH: WHY`.
pub(super) fn golden_note(path: &Path, problem: &GoldenProblem) -> String {
    match problem {
        GoldenProblem::Missing => format!("missing golden {}", path.display()),
        other => format!("unreadable golden {}: {other}", path.display()),
    }
}

/// Compares the output with a parsed golden (`PROTOCOL.md` "Comparison"): written
/// files' lines as written, everything else by value. A difference is shown after
/// the created ids of the output are aligned with the golden's
/// ([`compare::align_ids`]), with the first difference's pointer and a diff.
pub(super) fn compare_values(
    result: &mut CaseResult,
    mut expected: Value,
    mut actual: Value,
    case: &Case,
    hello: &Hello,
    golden_path: &Path,
) {
    if let Some(response) = expected.get_mut("response") {
        strip_extras(response, hello);
    }
    if case.file.op == Operation::Context {
        ignore_extra_keys(&expected, &mut actual, &mut result.notes);
    }
    if hello.has(&OWN_FILE_NAMES) {
        compare::set_aside_file_names(&mut expected);
        compare::set_aside_file_names(&mut actual);
    }
    if compare::same(&expected, &actual, Numbers::Output) {
        dispose(expected);
        dispose(actual);
        return;
    }
    compare::align_ids(&expected, &mut actual);
    let difference = compare::first_difference(&expected, &actual, Numbers::Output);
    let (expected_text, actual_text) = (canonical(&expected), canonical(&actual));
    result.status = Status::Fail;
    result.signature = Some(signature(&expected, &actual, difference.as_ref()));
    result.pointer = difference.map(|d| d.pointer);
    result.diff = Some(unified_diff(
        &expected_text,
        &actual_text,
        &golden_path.to_string_lossy(),
    ));
    result.actual = Some(actual_text);
    result.expected = Some(expected_text);
    dispose(expected);
    dispose(actual);
}

/// The hello capability of an adapter whose created file names are not part of its
/// contract: created files are then matched by content and role, not by name.
pub const OWN_FILE_NAMES: Capability = Capability::OwnFileNames;

/// A failed comparison in one line: `error KIND` when the actual response is an error
/// of another kind than the golden's, else the first difference.
pub(super) fn signature(
    expected: &Value,
    actual: &Value,
    difference: Option<&compare::Difference>,
) -> String {
    let kind = |v: &Value| {
        v.pointer("/response/error/kind")
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    match (kind(expected), kind(actual)) {
        (e, Some(a)) if e.as_deref() != Some(a.as_str()) => format!("error {a}"),
        _ => difference.map_or_else(|| "differs".to_owned(), compare::Difference::signature),
    }
}

/// Fails a result whose created names or ids break the profile's rules
/// ([`crate::names`]): each problem is a note; a case that differs from its golden
/// keeps that difference as its signature, else the first problem's is taken.
fn fail_on_names(result: &mut CaseResult, problems: &[NameProblem]) {
    let Some(first) = problems.first() else {
        return;
    };
    result
        .notes
        .extend(problems.iter().map(|problem| format!("name: {problem}")));
    if result.status == Status::Pass {
        result.status = Status::Fail;
        result.signature = Some(first.signature());
    }
}

/// Turns a result into `divergent`, `divergent-changed` or `unexpected-pass` when the
/// list excuses its case ([`Divergences::excuse`]); `left_out` are the lines of extra
/// entry types removed from its files (a case that matches only without them is
/// `divergent` too).
pub(super) fn apply_divergence(
    mut result: CaseResult,
    case: &Case,
    divergences: &Divergences,
    left_out: &[String],
) -> CaseResult {
    for note in left_out {
        result
            .notes
            .push(format!("{note} (expected-divergences entry-type)"));
    }
    match divergences.excuse(case) {
        Some(Excuse::Id(known)) => {
            result.status = match result.status {
                Status::Pass if left_out.is_empty() => Status::UnexpectedPass,
                Status::Skipped => Status::Skipped,
                _ if known.changed(result.signature.as_deref()) => {
                    result.notes.push(format!(
                        "recorded signature: {}; now: {}",
                        known.signature.as_deref().unwrap_or_default(),
                        result.signature.as_deref().unwrap_or("(passes)")
                    ));
                    Status::DivergentChanged
                }
                _ => Status::Divergent,
            };
            if crate::divergences::is_unreviewed(&known.reason) {
                result.notes.push(UNREVIEWED_NOTE.to_owned());
            }
            result
                .notes
                .push(format!("known divergence: {}", known.reason));
        }
        Some(Excuse::Category(selector, reason)) => {
            if result.status == Status::Pass && left_out.is_empty() {
                return result;
            }
            if result.status != Status::Skipped {
                result.status = Status::Divergent;
                result
                    .notes
                    .push(format!("known divergence ({selector}): {reason}"));
            }
        }
        None => {
            if result.status == Status::Pass && !left_out.is_empty() {
                result.status = Status::Divergent;
                let reasons: Vec<String> = divergences
                    .extra_entry_types()
                    .map(|(kind, reason)| format!("known divergence (entry-type:{kind}): {reason}"))
                    .collect();
                result.notes.extend(reasons);
            }
        }
    }
    result
}

/// Keys the implementation returns in a context beyond the golden's are shown, not compared.
pub fn ignore_extra_keys(expected: &Value, actual: &mut Value, notes: &mut Vec<String>) {
    let Some(expected_ok) = expected.pointer("/response/ok").and_then(Value::as_object) else {
        return;
    };
    let Some(actual_ok) = actual
        .pointer_mut("/response/ok")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let extra: Vec<String> = actual_ok
        .keys()
        .filter(|k| !expected_ok.contains_key(*k))
        .cloned()
        .collect();
    for key in extra {
        actual_ok.remove(&key);
        notes.push(format!(
            "context key {key:?} is not in the documented shape; not compared"
        ));
    }
}

/// The JSON Pointer of the first place two values differ, numbers compared by value
/// ([`compare::first_difference`] gives the values too). `at` is put in front.
pub fn first_difference(expected: &Value, actual: &Value, at: String) -> Option<String> {
    compare::first_difference(expected, actual, Numbers::ByValue).map(|d| {
        if at.is_empty() {
            d.pointer
        } else if d.pointer == "/" {
            at
        } else {
            at + &d.pointer
        }
    })
}

/// A unified diff of canonical texts. A diff that takes more than two seconds to find
/// (texts of a million lines) is approximate: still a diff, no longer the shortest.
pub fn unified_diff(expected: &str, actual: &str, name: &str) -> String {
    similar::TextDiff::configure()
        .timeout(Duration::from_secs(2))
        .diff_lines(expected, actual)
        .unified_diff()
        .context_radius(3)
        .header(&format!("expected ({name})"), "actual")
        .to_string()
}
