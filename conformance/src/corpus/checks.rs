//! The checks a case passes when it is loaded, before it may run: its templates well
//! formed and within the expansion limit, the paths it names inside its folder, its
//! faults, profiles and `mtimes`, no placeholder in its arguments or inputs, and its
//! goldens readable. A case that fails one is refused ([`CaseError`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use session_reference::model::Profile;

use super::case_file::{CaseFile, SafetyCheck, PATH_ARGS};
use super::goldens::check_goldens;
use super::placeholders::{holds_angle, placeholder_in};
use super::problems::{CaseError, CaseProblem};
use super::templates::{expanded_text, TemplateProblem, MAX_EXPANSION_BYTES};
use crate::protocol::Operation;

/// Faults on an operation that never meets them (`PROTOCOL.md` "Faults": only `apply`,
/// the open included, and `persist` apply them): such a case would pass without its fault.
fn faults_unmet(file: &CaseFile) -> Option<CaseProblem> {
    let meets = matches!(file.op, Operation::Apply | Operation::Persist);
    (!file.faults.is_empty() && !meets).then(|| {
        CaseProblem::Fault(format!(
            "faults on `{}`: only apply and persist meet faults",
            file.op.name()
        ))
    })
}

/// Why a case cannot run, if it cannot: its templates well formed and their `$repeat`s
/// within [`MAX_EXPANSION_BYTES`], every path it names inside the case directory, its
/// faults, profiles and `mtimes` right, no placeholder in its arguments or inputs, and
/// its goldens regular files within the size limit. `text` is `case.json`'s text.
pub(super) fn check_case(
    file: &CaseFile,
    text: &str,
    inputs: &BTreeMap<String, Vec<u8>>,
    dir: &Path,
) -> Result<(), CaseError> {
    let at = |line, kind| CaseError {
        path: dir.join("case.json"),
        line,
        kind,
    };
    let args_line = line_of(text, "\"args\"");
    check_templates(&file.args).map_err(|(nth, kind)| {
        let line = nth_template_line(text, nth).or(args_line);
        at(line, kind)
    })?;
    let problem = named_paths(file)
        .find_map(|(key, name)| {
            let outside = crate::guard::inside(Path::new(""), name).err();
            outside.map(|error| CaseProblem::PathOutside { key, error })
        })
        .or_else(|| {
            file.faults
                .iter()
                .find_map(crate::faults::Fault::refusal)
                .map(CaseProblem::Fault)
        })
        .or_else(|| faults_unmet(file))
        .or_else(|| {
            file.profiles
                .iter()
                .find_map(|p| p.parse::<Profile>().err())
                .map(CaseProblem::UnknownProfile)
        })
        .or_else(|| {
            file.mtimes
                .iter()
                .find_map(|(name, time)| mtime_problem(name, time, inputs))
        });
    if let Some(kind) = problem {
        return Err(at(None, kind));
    }
    // Templates only repeat and join the strings of `args`: without a `<` in them,
    // no placeholder can come out, and nothing is expanded.
    let expanded = if holds_angle(&file.args) {
        expanded_text(&file.args)
    } else {
        String::new()
    };
    if let Some(found) = crate::normalize::find_placeholder(expanded.as_bytes()) {
        let placeholder = &expanded[found];
        // Its first spelling after `"args"`; one a template builds has none.
        let args_at = text.find("\"args\"").unwrap_or(0);
        let line = text[args_at..]
            .find(placeholder)
            .map(|at| line_at(text.as_bytes(), args_at + at))
            .or(args_line);
        return Err(at(line, CaseProblem::Placeholder(placeholder.to_owned())));
    }
    check_dir_inputs_text(file, inputs, dir)?;
    check_input_placeholders(file, inputs, dir)?;
    check_goldens(dir)
}

/// Refuses a `dir_inputs` file that is not UTF-8: the runner writes the case's
/// directory into its text, which must come back byte for byte everywhere else.
fn check_dir_inputs_text(
    file: &CaseFile,
    inputs: &BTreeMap<String, Vec<u8>>,
    dir: &Path,
) -> Result<(), CaseError> {
    for name in &file.dir_inputs {
        let Some(bytes) = inputs.get(name) else {
            continue;
        };
        if let Err(e) = std::str::from_utf8(bytes) {
            let at = e.valid_up_to();
            return Err(CaseError {
                path: dir.join("input").join(name),
                line: Some(line_at(bytes, at)),
                kind: CaseProblem::DirInputNotUtf8(at),
            });
        }
    }
    Ok(())
}

/// The paths a case names, with the field that names each.
fn named_paths(file: &CaseFile) -> impl Iterator<Item = (&'static str, &str)> {
    PATH_ARGS
        .iter()
        .filter_map(|&key| file.args.get(key).and_then(Value::as_str).map(|v| (key, v)))
        .chain(file.mtimes.keys().map(|k| ("mtimes", k.as_str())))
        .chain(file.dir_inputs.iter().map(|k| ("dir_inputs", k.as_str())))
        .chain(file.safety.iter().filter_map(|check| match check {
            SafetyCheck::BytesKept { file } | SafetyCheck::LinesKept { file } => {
                Some(("safety", file.as_str()))
            }
            SafetyCheck::SingleHeader => None,
        }))
}

/// What is wrong with an `mtimes` entry, if anything: it names an input file and an ISO time.
fn mtime_problem(
    name: &str,
    time: &str,
    inputs: &BTreeMap<String, Vec<u8>>,
) -> Option<CaseProblem> {
    if !inputs.contains_key(name) {
        Some(CaseProblem::MtimeNotAnInput(name.to_owned()))
    } else if session_reference::ids::parse_iso_ms(time).is_none() {
        Some(CaseProblem::MtimeNotIso(time.to_owned()))
    } else {
        None
    }
}

/// The 1-based line of the first `needle` in `text`.
fn line_of(text: &str, needle: &str) -> Option<usize> {
    text.find(needle).map(|at| line_at(text.as_bytes(), at))
}

/// The 1-based line of byte `at` of `bytes`.
fn line_at(bytes: &[u8], at: usize) -> usize {
    1 + memchr::memchr_iter(b'\n', &bytes[..at]).count()
}

/// The line of the `nth` template key (`"$repeat"` or `"$concat"`, from 1) after the
/// `"args"` key of `text`: [`check_templates`] counts templates in document order.
fn nth_template_line(text: &str, nth: usize) -> Option<usize> {
    let args = text.find("\"args\"")?;
    let after = &text[args..];
    let mut keys = after
        .match_indices("\"$repeat\"")
        .chain(after.match_indices("\"$concat\""))
        .map(|(at, _)| at)
        .collect::<Vec<usize>>();
    keys.sort_unstable();
    let at = *keys.get(nth.checked_sub(1)?)?;
    Some(line_at(text.as_bytes(), args + at))
}

/// Refuses placeholders the normaliser writes in input files and their names, except
/// `<dir>` in a `dir_inputs` file (the runner replaces it before the request).
fn check_input_placeholders(
    file: &CaseFile,
    inputs: &BTreeMap<String, Vec<u8>>,
    dir: &Path,
) -> Result<(), CaseError> {
    let input_dir = dir.join("input");
    for (name, bytes) in inputs {
        let path = input_dir.join(name);
        if let Some(found) = crate::normalize::find_placeholder(name.as_bytes()) {
            let placeholder = name[found].to_owned();
            return Err(CaseError {
                path,
                line: None,
                kind: CaseProblem::Placeholder(placeholder),
            });
        }
        let dir_allowed = file.dir_inputs.contains(name);
        if let Some(found) = placeholder_in(bytes, dir_allowed) {
            let placeholder = String::from_utf8_lossy(&bytes[found.clone()]).into_owned();
            return Err(CaseError {
                path,
                line: Some(line_at(bytes, found.start)),
                kind: CaseProblem::Placeholder(placeholder),
            });
        }
    }
    Ok(())
}

/// Refuses malformed templates (an object holding `$repeat` or `$concat` must be one
/// of the forms `corpus/README.md` gives: it would otherwise reach the adapter as a
/// literal object) and `$repeat`s that would expand past [`MAX_EXPANSION_BYTES`].
/// A malformed template is returned with its number in document order (from 1). The
/// walk keeps its own stack, so no nesting depth can overflow it.
fn check_templates(args: &Value) -> Result<(), (usize, CaseProblem)> {
    let mut total: u64 = 0;
    let mut templates = 0;
    let mut stack = vec![(String::new(), args)];
    while let Some((pointer, value)) = stack.pop() {
        match value {
            Value::Object(map) if map.contains_key("$repeat") || map.contains_key("$concat") => {
                templates += 1;
                let bad = |problem| {
                    (
                        templates,
                        CaseProblem::BadTemplate {
                            pointer: pointer.clone(),
                            problem,
                        },
                    )
                };
                let parts = template_parts(map).map_err(bad)?;
                match parts {
                    TemplateParts::Repeat(bytes) => total = total.saturating_add(bytes),
                    TemplateParts::Concat(parts) => {
                        let nested = parts
                            .iter()
                            .enumerate()
                            .filter(|(_, part)| part.is_object());
                        let nested: Vec<_> = nested
                            .map(|(i, part)| (format!("{pointer}/$concat/{i}"), part))
                            .collect();
                        stack.extend(nested.into_iter().rev());
                    }
                }
            }
            Value::Object(map) => stack.extend(map.iter().rev().map(|(key, value)| {
                (
                    format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1")),
                    value,
                )
            })),
            Value::Array(items) => stack.extend(
                items
                    .iter()
                    .enumerate()
                    .rev()
                    .map(|(i, value)| (format!("{pointer}/{i}"), value)),
            ),
            _ => {}
        }
    }
    if total > MAX_EXPANSION_BYTES {
        return Err((0, CaseProblem::TooMuchExpansion(total)));
    }
    Ok(())
}

/// A well-formed template's content: a `$repeat`'s expanded size, or a `$concat`'s parts.
enum TemplateParts<'a> {
    Repeat(u64),
    Concat(&'a [Value]),
}

/// Checks the form of a template object (`map` holds `$repeat` or `$concat`).
fn template_parts(
    map: &serde_json::Map<String, Value>,
) -> Result<TemplateParts<'_>, TemplateProblem> {
    if map.len() != 1 {
        return Err(TemplateProblem::ExtraKeys);
    }
    if let Some(repeat) = map.get("$repeat") {
        let [unit, count] = repeat.as_array().map(Vec::as_slice).unwrap_or_default() else {
            return Err(TemplateProblem::RepeatShape);
        };
        let unit = unit.as_str().ok_or(TemplateProblem::RepeatShape)?;
        let count = count.as_u64().ok_or(TemplateProblem::RepeatCount)?;
        let bytes = u64::try_from(unit.len()).unwrap_or(u64::MAX);
        return Ok(TemplateParts::Repeat(bytes.saturating_mul(count)));
    }
    let parts = map
        .get("$concat")
        .and_then(Value::as_array)
        .ok_or(TemplateProblem::ConcatShape)?;
    let is_part = |part: &Value| match part {
        Value::String(_) => true,
        Value::Object(map) => map.contains_key("$repeat") || map.contains_key("$concat"),
        _ => false,
    };
    if !parts.iter().all(is_part) {
        return Err(TemplateProblem::ConcatPart);
    }
    Ok(TemplateParts::Concat(parts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn repeats_past_the_limit_are_refused() {
        let fits = json!({"m": {"$repeat": ["ab", 1000]}});
        assert_eq!(check_templates(&fits), Ok(()));
        for huge in [
            json!({"$repeat": ["x", u64::MAX]}),
            json!({"$repeat": ["xx", 1_u64 << 62]}),
            json!([{"$repeat": ["x", 40 << 20]}, {"$concat": [{"$repeat": ["y", 40 << 20]}]}]),
        ] {
            let (_, error) = check_templates(&huge).unwrap_err();
            assert!(error.to_string().contains("more than the limit"), "{error}");
        }
    }

    /// Issue #41, 16: a template not of its form is refused, with where it is and its
    /// number in document order (which finds its line in `case.json`).
    #[test]
    fn malformed_templates_are_refused() {
        use TemplateProblem as P;
        let table = [
            (
                json!({"m": {"$repeat": ["x", -5]}}),
                1,
                "/m",
                P::RepeatCount,
            ),
            (
                json!({"m": {"$repeat": ["x", 1.5]}}),
                1,
                "/m",
                P::RepeatCount,
            ),
            (
                json!({"m": {"$repeat": ["x", {"$repeat": ["1", 2]}]}}),
                1,
                "/m",
                P::RepeatCount,
            ),
            (
                json!({"m": {"$repeat": ["x", 2], "other": 1}}),
                1,
                "/m",
                P::ExtraKeys,
            ),
            (json!({"m": {"$repeat": ["x"]}}), 1, "/m", P::RepeatShape),
            (
                json!({"m": {"$repeat": ["x", 2, 3]}}),
                1,
                "/m",
                P::RepeatShape,
            ),
            (
                json!({"m": {"$repeat": [{"$concat": ["x"]}, 2]}}),
                1,
                "/m",
                P::RepeatShape,
            ),
            (json!({"m": {"$repeat": "x"}}), 1, "/m", P::RepeatShape),
            (json!({"m": {"$concat": "x"}}), 1, "/m", P::ConcatShape),
            (json!({"m": {"$concat": ["a", 7]}}), 1, "/m", P::ConcatPart),
            (
                json!({"m": {"$concat": ["a", {"k": 1}]}}),
                1,
                "/m",
                P::ConcatPart,
            ),
            (
                json!({"$concat": ["a", {"$concat": [null]}]}),
                2,
                "/$concat/1",
                P::ConcatPart,
            ),
            (
                json!({"a": {"$repeat": ["x", 1]}, "b": [{"$repeat": ["x", -1]}]}),
                2,
                "/b/0",
                P::RepeatCount,
            ),
            (
                json!({"$repeat": ["x", 1], "$concat": ["y"]}),
                1,
                "",
                P::ExtraKeys,
            ),
        ];
        for (args, nth, pointer, problem) in table {
            let expected = CaseProblem::BadTemplate {
                pointer: pointer.to_owned(),
                problem,
            };
            assert_eq!(check_templates(&args), Err((nth, expected)), "{args}");
        }
        let well_formed = json!({"$concat": ["a", {"$repeat": ["b", 0]}, {"$concat": []}]});
        assert_eq!(check_templates(&well_formed), Ok(()));
        let text = "{\n  \"args\": {\n    \"a\": {\"$repeat\": [\"x\", 1]},\n    \"b\": {\"$concat\": [1]}\n  }\n}";
        assert_eq!(nth_template_line(text, 2), Some(4));
        assert_eq!(nth_template_line(text, 3), None);
    }
}
