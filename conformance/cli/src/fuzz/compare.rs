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
    /// They disagree: the diff, expected (reference) → actual (adapter).
    Disagree(String),
}

impl Verdict {
    /// The diff, when they disagree.
    pub(super) fn diff(self) -> Option<String> {
        match self {
            Verdict::Disagree(diff) => Some(diff),
            Verdict::Agree | Verdict::AgreeWithout => None,
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
    let mut left_out = false;
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
            canonical(&without_keys(value, &options.ignore_keys))
        }
        Err(unproduced) => format!("{}: {unproduced}\n", unproduced.status().name()),
    };
    let expected = canonical(&without_keys(expected, &options.ignore_keys));
    Ok(if expected != actual {
        Verdict::Disagree(unified_diff(&expected, &actual, "reference"))
    } else if left_out {
        Verdict::AgreeWithout
    } else {
        Verdict::Agree
    })
}
