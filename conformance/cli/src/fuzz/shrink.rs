//! Shrinking a disagreement: steps removed one at a time while the adapter still
//! disagrees with the reference, later `$result` references renumbered.

use serde_json::Value;

use super::compare::{compare, Verdict};
use super::{FuzzError, FuzzOptions};
use session_conformance::adapter::ProcessAdapter;
use session_conformance::corpus::Case;

/// Removes steps one at a time (last first) while the disagreement remains;
/// each attempt re-runs the adapter. References to later steps are renumbered.
pub(super) fn shrink(
    mut steps: Vec<Value>,
    build: impl Fn(&[Value]) -> Case,
    options: &FuzzOptions,
    adapter: &mut ProcessAdapter,
    hello: &session_conformance::protocol::Hello,
) -> Result<Vec<Value>, FuzzError> {
    let mut index = steps.len();
    while index > 0 {
        index -= 1;
        if steps.iter().skip(index + 1).any(|s| refers_to(s, index)) {
            continue;
        }
        let smaller: Vec<Value> = steps
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != index)
            .map(|(_, s)| renumber(s, index))
            .collect();
        if matches!(
            compare(&build(&smaller), options, adapter, hello)?,
            Verdict::Disagree(_)
        ) {
            steps = smaller;
        }
    }
    Ok(steps)
}

fn refers_to(value: &Value, step: usize) -> bool {
    match value {
        Value::Object(map) => {
            map.get("$result").and_then(Value::as_u64) == Some(step as u64)
                || map.values().any(|v| refers_to(v, step))
        }
        Value::Array(items) => items.iter().any(|v| refers_to(v, step)),
        _ => false,
    }
}

fn renumber(value: &Value, removed: usize) -> Value {
    match value {
        Value::Object(map) => {
            if let Some(n) = map
                .get("$result")
                .and_then(Value::as_u64)
                .filter(|_| map.len() == 1)
            {
                let n = if n > removed as u64 { n - 1 } else { n };
                return serde_json::json!({ "$result": n });
            }
            Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), renumber(v, removed)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| renumber(v, removed)).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removing_a_step_renumbers_later_references() {
        let step = serde_json::json!({"call": "branch", "id": {"$result": 3}});
        assert_eq!(
            renumber(&step, 1),
            serde_json::json!({"call": "branch", "id": {"$result": 2}})
        );
        assert_eq!(renumber(&step, 5), step);
        assert!(refers_to(&step, 3));
    }
}
