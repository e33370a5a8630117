//! Canonical JSON (`corpus/README.md` "Goldens"): keys sorted, 2-space indent, final
//! newline; the one rendering goldens, diffs and reports share.
//!
//! Invariant: rendering never recurses on a value's depth ([`crate::json_writer`]).

use crate::json_writer::{self, Layout};
use serde_json::Value;

/// A JSON object of `entries`, in order. `json!` copies every value it is given
/// (through the serialiser); this moves them.
pub fn object<const N: usize>(entries: [(&str, Value); N]) -> Value {
    Value::Object(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    )
}

/// Renders canonical JSON: keys sorted, 2-space indent, final newline.
pub fn canonical(value: &Value) -> String {
    let mut text = String::new();
    let layout = Layout {
        pretty: true,
        sorted_keys: true,
    };
    json_writer::write(&mut text, value, layout);
    text.push('\n');
    text
}

/// A copy of `value` with every object's keys sorted (without recursion).
pub fn sorted(value: &Value) -> Value {
    let mut copy = crate::compare::deep_clone(value);
    let mut stack = vec![&mut copy];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                map.sort_keys();
                stack.extend(map.values_mut());
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            _ => {}
        }
    }
    copy
}

/// `value` with its numbers as JavaScript writes them (`JSON.stringify`), where serde's
/// spelling differs: a whole number held as a float (`-0`, `1.0`, `1E-400` read as
/// zero) is written without a fraction or sign of zero. Whole floats up to 2^53 only:
/// past it JavaScript pads its shortest digits with zeros. For the CLI's views of a
/// session, so that they show what the real implementations would.
pub fn js_numbers(value: &mut Value) {
    const SAFE: f64 = 9_007_199_254_740_992.0; // 2^53
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Number(n) if n.is_f64() => {
                let f = n.as_f64().unwrap_or(f64::NAN);
                if f.fract() == 0.0 && f.abs() <= SAFE {
                    // Exact: a whole float of at most 2^53 is an i64.
                    #[allow(clippy::cast_possible_truncation)]
                    let whole = f as i64;
                    *value = Value::from(whole);
                }
            }
            Value::Object(map) => stack.extend(map.values_mut()),
            Value::Array(items) => stack.extend(items.iter_mut()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn whole_floats_are_written_as_javascript_writes_them() {
        let text = "[-0, -0.0, 1.0, 1E-400, 2.5, -3e2, 1e300, 9007199254740993.0, 7]";
        let mut value: Value = serde_json::from_str(text).unwrap();
        js_numbers(&mut value);
        assert_eq!(
            json_writer::compact(&value),
            "[0,0,1,0,2.5,-300,1e+300,9007199254740992,7]"
        );
    }

    #[test]
    fn value_equality_ignores_key_order_as_canonical_text_does() {
        let (a, b) = (
            json!({"a": 1, "b": [{"c": 2, "d": 3}]}),
            json!({"b": [{"d": 3, "c": 2}], "a": 1}),
        );
        assert_eq!(a, b);
        assert_eq!(canonical(&a), canonical(&b));
        assert_ne!(json!({"a": 1}), json!({"a": 1.0}));
    }

    #[test]
    fn canonical_is_the_sorted_copy_rendered() {
        let value = json!({"z": [{"b": 1, "a": {}}, []], "a": null, "m": {"y": "\u{1}", "x": 1.5}});
        let mut text = serde_json::to_string_pretty(&sorted(&value)).unwrap();
        text.push('\n');
        assert_eq!(canonical(&value), text);
    }

    #[test]
    fn canonical_sorts_keys_and_ends_with_newline() {
        assert_eq!(
            canonical(&json!({"b":1,"a":{"d":2,"c":3}})),
            "{\n  \"a\": {\n    \"c\": 3,\n    \"d\": 2\n  },\n  \"b\": 1\n}\n"
        );
    }
}
