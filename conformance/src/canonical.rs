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
    render(value, false)
}

/// [`canonical`] with numbers as JavaScript writes them (`JSON.stringify`: `-0` and
/// `1E-400` as `0`, `1e20` as `100000000000000000000`, `0.000001` as written): the
/// CLI's JSON views of a session.
pub fn canonical_js(value: &Value) -> String {
    render(value, true)
}

fn render(value: &Value, js_numbers: bool) -> String {
    let mut text = String::new();
    let layout = Layout {
        pretty: true,
        sorted_keys: true,
        js_numbers,
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_are_written_as_javascript_writes_them() {
        // What Node 20 prints for each (`JSON.stringify`).
        let text = "[-0, -0.0, 1.0, 1E-400, 2.5, -3e2, 1e300, 9007199254740993.0, 9007199254740993, 7, 0.0000015, 0.000001, 1e20, 1e21, 123456789012345678901.0, 1.5e-7, 5e-324, 1.7976931348623157e308, -1e-7, 0.1, 123.456]";
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(
            canonical_js(&value).split_whitespace().collect::<String>(),
            "[0,0,1,0,2.5,-300,1e+300,9007199254740992,9007199254740992,7,0.0000015,0.000001,100000000000000000000,1e+21,123456789012345680000,1.5e-7,5e-324,1.7976931348623157e+308,-1e-7,0.1,123.456]"
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
