//! Judging a case: its output against its golden (values, not spellings; written lines
//! as written), then against the divergence list, into a [`CaseResult`].

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use session_reference::model::Profile;

use crate::adapter::Adapter;
use crate::compare::{self, dispose, Numbers};
use crate::corpus::{Case, Golden, GoldenProblem};
use crate::divergences::shape::{self, SetAside};
use crate::divergences::{Category, Divergences, Excuse, Shape};
use crate::names::NameProblem;
use crate::normalize::canonical;
use crate::outcome::{CaseResult, Status, UNREVIEWED_NOTE};
use crate::protocol::{Capability, Hello, Operation};

use super::{produce_with, strip_extras, Produced, SafetyFailure};

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
        Err(unproduced) => {
            result.status = unproduced.status;
            result.notes.push(unproduced.note);
            result.signature = Some(unproduced.status.name().to_owned());
            let lost = &unproduced.unsafe_checks;
            result.notes.extend(lost.iter().map(ToString::to_string));
            mark_unsafe(&mut result, lost);
            return apply_divergence(result, case, divergences, &[]);
        }
    };
    let notes = produced.notes();
    let Produced {
        output: actual,
        left_out,
        name_problems,
        unsafe_checks,
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
        match parse_golden(golden) {
            Ok(expected) => {
                let judged = Judged {
                    case,
                    hello,
                    golden_path,
                    divergences,
                };
                compare_values(&mut result, expected, actual, &judged);
            }
            Err(problem) => {
                // Nothing to compare with; what the adapter destroyed is still judged.
                result.status = Status::Fail;
                result.notes.push(golden_note(golden_path, &problem));
                result.actual = Some(actual_text);
                result.signature = Some(problem.signature().to_owned());
                dispose(actual);
                result.notes.extend(notes);
                mark_unsafe(&mut result, &unsafe_checks);
                return result;
            }
        }
    }
    result.notes.extend(notes);
    fail_on_names(&mut result, &name_problems);
    mark_unsafe(&mut result, &unsafe_checks);
    apply_divergence(result, case, divergences, &left_out)
}

/// Makes a result whose safety checks failed `unsafe`, whatever else happened to it (a
/// difference, an error, a timeout, a crash): its signature becomes `unsafe: ` and the
/// failed checks' labels ([`SafetyFailure::label`]), and how else it differs is a note.
/// Only an id line recording that signature lists it ([`apply_divergence`]).
fn mark_unsafe(result: &mut CaseResult, lost: &[SafetyFailure]) {
    if lost.is_empty() {
        return;
    }
    if let Some(other) = result.signature.take() {
        result.notes.push(format!("and besides the loss: {other}"));
    }
    let labels: Vec<String> = lost.iter().map(SafetyFailure::label).collect();
    result.status = Status::Unsafe;
    result.signature = Some(format!(
        "{}{}",
        crate::divergences::UNSAFE_SIGNATURE,
        labels.join(", ")
    ));
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
/// What a comparison is made for: the case, the adapter's hello, the golden's path and
/// the divergence list whose shape lines may cover the differences.
pub(super) struct Judged<'a> {
    pub(super) case: &'a Case,
    pub(super) hello: &'a Hello,
    pub(super) golden_path: &'a Path,
    pub(super) divergences: &'a Divergences,
}

pub(super) fn compare_values(
    result: &mut CaseResult,
    mut expected: Value,
    mut actual: Value,
    judged: &Judged<'_>,
) {
    let Judged {
        case,
        hello,
        golden_path,
        divergences,
    } = *judged;
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
    let mut difference = compare::first_difference(&expected, &actual, Numbers::Output);
    let shapes = divergences.shapes_for(case);
    if !shapes.is_empty() {
        if let Some(other) = judge_shapes(result, &expected, &actual, &shapes) {
            difference = Some(other);
        }
    }
    let (expected_text, actual_text) = (canonical(&expected), canonical(&actual));
    if result.status != Status::Divergent {
        result.status = Status::Fail;
    }
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

/// Sets aside the differences the case's shape lines cover ([`shape::set_aside`]): when
/// they cover all, the result is `divergent` with a note per line; when they cover
/// some, a note says which line almost matched, and the first difference none covers is
/// returned to be the case's.
fn judge_shapes(
    result: &mut CaseResult,
    expected: &Value,
    actual: &Value,
    shapes: &[&Category],
) -> Option<compare::Difference> {
    let declared: Vec<&Shape> = shapes.iter().filter_map(|c| c.shape.as_ref()).collect();
    let mut patched = actual.clone();
    let outcome = shape::set_aside(expected, &mut patched, &declared);
    dispose(patched);
    match outcome {
        SetAside::All(by) => {
            result.status = Status::Divergent;
            for (line, n) in by {
                let line = shapes[line];
                result.notes.push(format!(
                    "known divergence ({}, {n} difference(s)): {}",
                    line.named(),
                    line.reason
                ));
            }
            None
        }
        SetAside::Partly(by, other) => {
            let before = result.notes.len();
            for (line, n) in by {
                result.notes.push(format!(
                    "{} covers {n} difference(s) of this case, but not {}",
                    shapes[line].named(),
                    other.signature()
                ));
            }
            if result.notes.len() == before {
                let named: Vec<String> = shapes.iter().map(|c| c.named()).collect();
                result.notes.push(format!(
                    "the shape line(s) {} select this case but cover none of its differences; the first: {}",
                    named.join(", "),
                    other.signature()
                ));
            }
            Some(other)
        }
    }
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
    // A case whose differences shape lines cover is `divergent` on its values only:
    // names break a rule no shape declares.
    if matches!(result.status, Status::Pass | Status::Divergent) {
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
    // Signatures are list text: adapter words in them cannot start a line of their own.
    result.signature = result
        .signature
        .map(|s| crate::divergences::signature_text(&s));
    if result.status == Status::Unsafe {
        return judge_loss(result, divergences.excuse(case).as_ref());
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
        Some(Excuse::Category(line)) => {
            if result.status == Status::Pass && left_out.is_empty() {
                return result;
            }
            if result.status != Status::Skipped {
                result.status = Status::Divergent;
                result.notes.push(format!(
                    "known divergence ({}): {}",
                    line.named(),
                    line.reason
                ));
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

/// An `unsafe` result against its divergence list: it stays `unsafe` unless its id
/// line records this very loss ([`crate::divergences::Known::lists_loss`]), and then it
/// is `unsafe-listed`. A category (glob, tag) never lists a loss, nor does a line that
/// records another difference, a `*` or the `UNREVIEWED` placeholder: each says so in
/// a note.
fn judge_loss(mut result: CaseResult, excuse: Option<&Excuse<'_>>) -> CaseResult {
    let now = result.signature.as_deref();
    match excuse {
        Some(Excuse::Id(known)) if known.lists_loss(now) => {
            result.status = Status::UnsafeListed;
            result
                .notes
                .push(format!("known divergence, a known loss: {}", known.reason));
        }
        Some(Excuse::Id(known)) => result.notes.push(format!(
            "the divergence list's line for this case does not list this loss (it records {}{}): a loss is listed only by a reviewed id line signed `{}`",
            known.signature.as_deref().unwrap_or("no signature"),
            if crate::divergences::is_unreviewed(&known.reason) { ", reason UNREVIEWED" } else { "" },
            now.unwrap_or_default()
        )),
        Some(Excuse::Category(line)) => result.notes.push(format!(
            "{} of the divergence list does not excuse a loss: only an id line signed `{}` lists one",
            line.named(),
            now.unwrap_or_default()
        )),
        None => {}
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
