//! Differences declared by shape: where a case differs (`at:` a JSON Pointer glob) and
//! how (`diff:added`, `diff:missing`, `diff:changed`). A shape line covers each
//! difference of that shape, and a case is excused by shapes only when every difference
//! it has is covered: the differences are found one at a time, each covered one is set
//! aside in the actual output (the golden's value put back, an added member taken out),
//! and the next is looked for, until none is left or one is not covered.

use globset::{GlobBuilder, GlobMatcher};
use serde_json::Value;

use crate::compare::{self, Difference, DifferenceKind, Numbers};

/// The most differences one case may have set aside: past it the rest is not looked at,
/// and the case is not excused (a bound on the time one case takes).
pub const MAX_SET_ASIDE: usize = 10_000;

/// Where and how a case differs, as a list line declares it.
#[derive(Debug, Clone)]
pub struct Shape {
    /// `at:`: the pointers it covers (`*` one step, `**` any number of steps).
    pub at: Option<GlobMatcher>,
    /// `diff:`: the kind of difference it covers.
    pub kind: Option<DifferenceKind>,
}

impl Shape {
    /// A shape from its parts as written: the `at:` glob and the `diff:` kind.
    pub fn new(at: Option<&str>, kind: Option<&str>) -> Result<Shape, String> {
        let at = at
            .map(|pattern| {
                GlobBuilder::new(pattern)
                    .literal_separator(true)
                    .build()
                    .map(|glob| glob.compile_matcher())
                    .map_err(|e| e.to_string())
            })
            .transpose()?;
        let kind = kind
            .map(|name| {
                DifferenceKind::from_name(name).ok_or_else(|| {
                    format!("diff:{name} is not a kind of difference (added, missing, changed)")
                })
            })
            .transpose()?;
        Ok(Shape { at, kind })
    }

    /// Whether the shape covers `difference`.
    pub fn covers(&self, difference: &Difference) -> bool {
        self.at
            .as_ref()
            .is_none_or(|glob| glob.is_match(&difference.pointer))
            && self.kind.is_none_or(|kind| kind == difference.kind)
    }
}

/// What [`set_aside`] found.
#[derive(Debug)]
pub enum SetAside {
    /// Every difference is covered: how many each line (its index in the slice given)
    /// covered.
    All(Vec<(usize, usize)>),
    /// Some are covered (counted as in `All`), and `other` is the first that is not.
    Partly(Vec<(usize, usize)>, Difference),
}

/// Sets aside in `actual` each difference from `expected` that one of `shapes` covers,
/// until none is left ([`SetAside::All`]) or the first that none covers
/// ([`SetAside::Partly`]). Numbers compare as outputs do ([`Numbers::Output`]).
pub fn set_aside(expected: &Value, actual: &mut Value, shapes: &[&Shape]) -> SetAside {
    let mut covered: Vec<(usize, usize)> = Vec::new();
    for _ in 0..MAX_SET_ASIDE {
        let Some(difference) = compare::first_difference(expected, actual, Numbers::Output) else {
            return SetAside::All(covered);
        };
        let Some(line) = shapes.iter().position(|shape| shape.covers(&difference)) else {
            return SetAside::Partly(covered, difference);
        };
        if !put_back(expected, actual, &difference) {
            return SetAside::Partly(covered, difference);
        }
        match covered.iter_mut().find(|(at, _)| *at == line) {
            Some((_, n)) => *n += 1,
            None => covered.push((line, 1)),
        }
    }
    let rest = compare::first_difference(expected, actual, Numbers::Output);
    match rest {
        None => SetAside::All(covered),
        Some(difference) => SetAside::Partly(covered, difference),
    }
}

/// The steps of a JSON Pointer (`/a/b~1c` → `a`, `b/c`); the root `/` has none.
fn steps(pointer: &str) -> Vec<String> {
    if pointer == "/" {
        return Vec::new();
    }
    pointer
        .split('/')
        .skip(1)
        .map(|step| step.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// The value at `steps` under `value`, if there is one.
fn at<'v>(value: &'v Value, steps: &[String]) -> Option<&'v Value> {
    steps.iter().try_fold(value, |value, step| match value {
        Value::Object(map) => map.get(step),
        Value::Array(items) => step.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    })
}

/// The value at `steps` under `value`, mutable.
fn at_mut<'v>(value: &'v mut Value, steps: &[String]) -> Option<&'v mut Value> {
    steps.iter().try_fold(value, |value, step| match value {
        Value::Object(map) => map.get_mut(step),
        Value::Array(items) => step.parse::<usize>().ok().and_then(|i| items.get_mut(i)),
        _ => None,
    })
}

/// Makes `actual` agree with `expected` at `difference`: the golden's value put in its
/// place, or the added member taken out. Whether it could.
fn put_back(expected: &Value, actual: &mut Value, difference: &Difference) -> bool {
    let steps = steps(&difference.pointer);
    let Some((last, parent_steps)) = steps.split_last() else {
        *actual = expected.clone();
        return true;
    };
    let wanted = at(expected, &steps).cloned();
    let Some(parent) = at_mut(actual, parent_steps) else {
        return false;
    };
    match (parent, wanted) {
        (Value::Object(map), Some(value)) => {
            map.insert(last.clone(), value);
            true
        }
        (Value::Object(map), None) => map.shift_remove(last).is_some(),
        (Value::Array(items), wanted) => {
            let Ok(index) = last.parse::<usize>() else {
                return false;
            };
            match (wanted, difference.kind) {
                (Some(value), DifferenceKind::Missing) if index <= items.len() => {
                    items.insert(index, value);
                    true
                }
                (Some(value), _) if index < items.len() => {
                    items[index] = value;
                    true
                }
                (None, _) if index < items.len() => {
                    items.remove(index);
                    true
                }
                _ => false,
            }
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shape(at: &str, kind: Option<&str>) -> Shape {
        Shape::new(Some(at), kind).expect("a shape")
    }

    /// A defaulted key every message gets is set aside wherever it is, and nothing else.
    #[test]
    fn a_declared_key_is_set_aside_and_the_rest_still_compared() {
        let expected = json!({"response": {"ok": {"messages": [{"usage": {"input": 1}}, {"usage": {"input": 2}}]}}});
        let added = shape(
            "/response/ok/messages/*/usage/reasoningTokens",
            Some("added"),
        );
        let rows = [
            // (actual, covered by the line, the other difference)
            (
                json!({"response": {"ok": {"messages": [{"usage": {"input": 1, "reasoningTokens": 0}}, {"usage": {"input": 2, "reasoningTokens": 0}}]}}}),
                2,
                None,
            ),
            (
                json!({"response": {"ok": {"messages": [{"usage": {"input": 1, "reasoningTokens": 0}}, {"usage": {"input": 3, "reasoningTokens": 0}}]}}}),
                1,
                Some("/response/ok/messages/1/usage/input"),
            ),
            (
                json!({"response": {"ok": {"messages": [{"usage": {"input": 1}}, {"usage": {}}]}}}),
                0,
                Some("/response/ok/messages/1/usage/input"),
            ),
        ];
        for (actual, covered, other) in rows {
            let mut patched = actual.clone();
            match set_aside(&expected, &mut patched, &[&added]) {
                SetAside::All(by) => {
                    assert_eq!(other, None, "{actual}");
                    assert_eq!(by, [(0, covered)], "{actual}");
                }
                SetAside::Partly(by, difference) => {
                    assert_eq!(Some(difference.pointer.as_str()), other, "{actual}");
                    let counted: usize = by.iter().map(|(_, n)| n).sum();
                    assert_eq!(counted, covered, "{actual}");
                }
            }
        }
    }

    /// The kind matters: a line for an added key does not cover a changed or missing one.
    #[test]
    fn a_shape_covers_only_its_kind() {
        let expected = json!({"a": {"k": 1}, "b": [1, 2]});
        let rows = [
            (json!({"a": {"k": 2}, "b": [1, 2]}), "/a/k", "changed", true),
            (json!({"a": {"k": 2}, "b": [1, 2]}), "/a/k", "added", false),
            (json!({"a": {}, "b": [1, 2]}), "/a/k", "missing", true),
            (json!({"a": {"k": 1}, "b": [1]}), "/b/*", "missing", true),
            (
                json!({"a": {"k": 1}, "b": [1, 2, 3]}),
                "/b/*",
                "added",
                true,
            ),
            (
                json!({"a": {"k": 1}, "b": [1, 2, 3]}),
                "/a/**",
                "added",
                false,
            ),
            (
                json!({"a": {"k": 1, "x": {"y": 1}}, "b": [1, 2]}),
                "/a/**",
                "added",
                true,
            ),
        ];
        for (actual, at, kind, all) in rows {
            let line = shape(at, Some(kind));
            let mut patched = actual.clone();
            let outcome = set_aside(&expected, &mut patched, &[&line]);
            assert_eq!(
                matches!(outcome, SetAside::All(_)),
                all,
                "{actual} {at} {kind}"
            );
        }
        assert!(Shape::new(None, Some("renamed")).is_err());
    }
}
