//! `$repeat` and `$concat`, the string templates of a case's `args` (`corpus/README.md`):
//! what is wrong with a malformed one, the limit on what they expand to, and their
//! expansion (as a value, and written straight into the request's JSON text).

use std::fmt;

use serde_json::Value;

use crate::json_writer::{self, Layout};

/// What is wrong with a `$repeat` or `$concat` template
/// ([`CaseProblem::BadTemplate`](super::CaseProblem::BadTemplate)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TemplateProblem {
    /// An object with a template key and other keys.
    ExtraKeys,
    /// `$repeat` is not an array of two items: a string and a count.
    RepeatShape,
    /// The count of a `$repeat` is not a whole number from 0.
    RepeatCount,
    /// `$concat` is not an array.
    ConcatShape,
    /// A part of a `$concat` is neither a string nor a template.
    ConcatPart,
}

impl fmt::Display for TemplateProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TemplateProblem::ExtraKeys => "a template has one key, `$repeat` or `$concat`",
            TemplateProblem::RepeatShape => "`$repeat` takes [string, count]",
            TemplateProblem::RepeatCount => "the count of a `$repeat` is a whole number from 0",
            TemplateProblem::ConcatShape => "`$concat` takes an array of parts",
            TemplateProblem::ConcatPart => "a part of a `$concat` is a string or a template",
        })
    }
}

/// The most bytes a case's `$repeat` templates may expand to, all together (64 MiB):
/// a case is data, and a count of 2^64 − 1 must be refused, not attempted.
pub const MAX_EXPANSION_BYTES: u64 = 64 << 20;

/// Expands `{"$repeat": [s, n]}` and `{"$concat": [..]}` into strings.
pub fn expand(value: &Value) -> Value {
    match value {
        Value::Object(map) if map.len() == 1 => {
            if let Some(Value::Array(args)) = map.get("$repeat") {
                if let (Some(Value::String(s)), Some(n)) =
                    (args.first(), args.get(1).and_then(Value::as_u64))
                {
                    return Value::String(s.repeat(usize::try_from(n).unwrap_or(0)));
                }
            }
            if let Some(Value::Array(parts)) = map.get("$concat") {
                let joined: String = parts
                    .iter()
                    .map(|p| match expand(p) {
                        Value::String(s) => s,
                        other => other.to_string(),
                    })
                    .collect();
                return Value::String(joined);
            }
            Value::Object(map.iter().map(|(k, v)| (k.clone(), expand(v))).collect())
        }
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), expand(v))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(expand).collect()),
        other => other.clone(),
    }
}

/// A string template: `{"$repeat": [s, n]}` (`s`, `n` times) or `{"$concat": [..]}`
/// (the parts expanded and joined, a part that is not a string as its JSON text).
enum Template<'a> {
    Repeat(&'a str, usize),
    Concat(&'a [Value]),
}

impl<'a> Template<'a> {
    /// The template `value` is, if it is one: an object of a single key, with
    /// arguments of the right shape.
    fn of(value: &'a Value) -> Option<Template<'a>> {
        let map = value.as_object().filter(|map| map.len() == 1)?;
        if let Some(Value::Array(args)) = map.get("$repeat") {
            if let (Some(Value::String(s)), Some(n)) =
                (args.first(), args.get(1).and_then(Value::as_u64))
            {
                return Some(Template::Repeat(s, usize::try_from(n).unwrap_or(0)));
            }
        }
        match map.get("$concat") {
            Some(Value::Array(parts)) => Some(Template::Concat(parts)),
            _ => None,
        }
    }

    /// Appends the expanded string's JSON escape (no quotes): a repeated string's
    /// escape is its unit's escape repeated, a concatenation's its parts' escapes.
    fn write_escaped(&self, out: &mut String) {
        match *self {
            Template::Repeat(unit, count) => {
                let mut escaped = String::new();
                json_writer::write_escaped(&mut escaped, unit);
                // Blocks of about 4 KiB, then the rest: no copy of the whole string first.
                let per_block = (4096 / escaped.len().max(1)).clamp(1, count.max(1));
                let block = escaped.repeat(per_block);
                // A count too large to hold fails here, as `str::repeat` would.
                out.reserve(escaped.len().saturating_mul(count));
                for _ in 0..count / per_block {
                    out.push_str(&block);
                }
                for _ in 0..count % per_block {
                    out.push_str(&escaped);
                }
            }
            Template::Concat(parts) => {
                for part in parts {
                    match (Template::of(part), part) {
                        (Some(template), _) => template.write_escaped(out),
                        (None, Value::String(s)) => json_writer::write_escaped(out, s),
                        (None, other) => {
                            json_writer::write_escaped(out, &expand(other).to_string());
                        }
                    }
                }
            }
        }
    }
}

/// The compact JSON text of the [`expand`]ed `value`, each template's string written as
/// it expands: no expanded copy is built. (`expand` stays the plain version: the
/// tests check this one against it.)
pub(super) fn expanded_text(value: &Value) -> String {
    let mut out = String::new();
    write_expanded(&mut out, value);
    out
}

fn write_expanded(out: &mut String, value: &Value) {
    if let Some(template) = Template::of(value) {
        out.push('"');
        template.write_escaped(out);
        out.push('"');
        return;
    }
    match value {
        Value::Object(map) => {
            out.push('{');
            for (i, (key, value)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_writer::write_str(out, key);
                out.push(':');
                write_expanded(out, value);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_expanded(out, item);
            }
            out.push(']');
        }
        other => json_writer::write(out, other, Layout::COMPACT),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    /// The arguments' text is written as the templates expand; it is the text of the
    /// expanded value, byte for byte, for every shape of template and for every case.
    #[test]
    fn arguments_are_written_as_their_expanded_value() {
        let shapes = [
            json!({"t": {"$repeat": ["ab\"\n\u{e9}\u{1f600}", 5000]}, "n": [1, 2.5, null, true]}),
            json!({"$repeat": ["x", 4096]}),
            json!({"$repeat": ["x", 4097]}),
            json!({"$repeat": ["", 3]}),
            json!({"$repeat": ["x", 0]}),
            json!({"$concat": ["a", {"$repeat": ["b", 3]}, 7, {"k": {"$repeat": ["c", 2]}}, [1]]}),
            json!({"$concat": [{"$concat": ["x", "\u{1}"]}, "y"]}),
            json!({"$repeat": ["x"]}),
            json!({"$repeat": "x"}),
            json!({"$concat": "x"}),
            json!({"$repeat": ["x", 2], "other": 1}),
            json!([{"$repeat": ["-", 3]}, "plain", {}]),
        ];
        let cases = crate::corpus::load(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../corpus/cases"
        )))
        .expect("corpus");
        assert!(cases.len() > 200);
        let all = shapes.iter().chain(cases.iter().map(|c| &c.file.args));
        for args in all {
            let written = expanded_text(args);
            let expanded = serde_json::to_string(&expand(args)).expect("writes");
            assert!(written == expanded, "{args}");
        }
    }

    #[test]
    fn templates_expand() {
        let args =
            json!({"m": {"$concat": [{"$repeat": ["x", 3]}, "y"]}, "n": [{"$repeat": ["ab", 2]}]});
        assert_eq!(expand(&args), json!({"m": "xxxy", "n": ["abab"]}));
    }
}
