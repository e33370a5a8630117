//! One generated case run by the adapter and by the reference, and the two outputs
//! compared ([`Verdict`]): declared extra entry types left out of the adapter's files,
//! ignored keys left out of both, created file names set aside where the adapter owns them.

use serde_json::Value;

use super::generate::reference_value;
use super::{FuzzError, FuzzOptions};
use session_conformance::adapter::ProcessAdapter;
use session_conformance::corpus::Case;
use session_conformance::normalize::canonical;
use session_conformance::protocol::Operation;
use session_conformance::runner::{produce_with, unified_diff};

fn without_keys(value: Value, keys: &[String]) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(k, _)| !keys.contains(k))
                .map(|(k, v)| (k, without_keys(v, keys)))
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| without_keys(v, keys)).collect())
        }
        other => other,
    }
}

/// How a generated case compared.
pub(super) enum Verdict {
    /// Reference and adapter agree.
    Agree,
    /// They agree once the lines of declared extra entry types are left out.
    AgreeWithout,
    /// They agree once the differences the list's shape lines cover are set aside:
    /// each line that covered some (`line N (SELECTOR): REASON`).
    Covered(Vec<String>),
    /// They disagree: the diff, expected (reference) → actual (adapter).
    Disagree(String),
}

impl Verdict {
    /// The diff, when they disagree.
    pub(super) fn diff(self) -> Option<String> {
        match self {
            Verdict::Disagree(diff) => Some(diff),
            Verdict::Agree | Verdict::AgreeWithout | Verdict::Covered(_) => None,
        }
    }
}

/// Whether reference and adapter agree on `case`, lines of the declared extra entry
/// types left out of the adapter's files, and the keys of `ignore_keys` out of both;
/// created file names are set aside for an adapter whose hello says they are its own.
pub(super) fn compare(
    case: &Case,
    options: &FuzzOptions,
    adapter: &mut ProcessAdapter,
    hello: &session_conformance::protocol::Hello,
) -> Result<Verdict, FuzzError> {
    let mut expected = reference_value(case, options.profile)?;
    if let Some(response) = expected.get_mut("response") {
        session_conformance::runner::strip_extras(response, hello);
    }
    let own_names = hello.has(&session_conformance::runner::OWN_FILE_NAMES);
    if own_names {
        session_conformance::compare::set_aside_file_names(&mut expected);
    }
    let extra_types: Vec<&str> = options
        .divergences
        .extra_entry_types()
        .map(|(kind, _)| kind)
        .collect();
    let expected = without_keys(expected, &options.ignore_keys);
    let mut left_out = false;
    let mut covered = Vec::new();
    let actual = match produce_with(
        case,
        options.profile,
        adapter,
        hello,
        options.timeout,
        &extra_types,
    ) {
        Ok(produced) => {
            left_out = !produced.left_out.is_empty();
            let mut value = produced.output;
            if case.file.op == Operation::Context {
                session_conformance::runner::ignore_extra_keys(
                    &expected,
                    &mut value,
                    &mut Vec::new(),
                );
            }
            if own_names {
                session_conformance::compare::set_aside_file_names(&mut value);
            }
            let mut value = without_keys(value, &options.ignore_keys);
            covered = set_aside_declared(case, options, &expected, &mut value);
            canonical(&value)
        }
        Err(unproduced) => format!("{}: {unproduced}\n", unproduced.status().name()),
    };
    let expected = canonical(&expected);
    Ok(if expected != actual {
        Verdict::Disagree(unified_diff(&expected, &actual, "reference"))
    } else if !covered.is_empty() {
        Verdict::Covered(covered)
    } else if left_out {
        Verdict::AgreeWithout
    } else {
        Verdict::Agree
    })
}

/// Sets aside in `actual` the differences from `expected` that the list's shape lines
/// for `case` cover, as a run does ([`session_conformance::divergences::shape`]); the
/// rest is still compared. The lines that covered some, when they covered all.
fn set_aside_declared(
    case: &Case,
    options: &FuzzOptions,
    expected: &Value,
    actual: &mut Value,
) -> Vec<String> {
    use session_conformance::divergences::shape::{set_aside, SetAside};
    let lines = options.divergences.shapes_for(case);
    let shapes: Vec<_> = lines
        .iter()
        .filter_map(|line| line.shape.as_ref())
        .collect();
    if shapes.is_empty() {
        return Vec::new();
    }
    match set_aside(expected, actual, &shapes) {
        SetAside::All(by) => by
            .into_iter()
            .map(|(at, _)| format!("{}: {}", lines[at].named(), lines[at].reason))
            .collect(),
        SetAside::Partly(..) => Vec::new(),
    }
}
