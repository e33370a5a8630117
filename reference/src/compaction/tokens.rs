//! Token estimates and the decision to compact: document 004, "Compaction" (`estimateTokens`,
//! chars/4 per message type; `shouldCompact`, `contextTokens > contextWindow − reserveTokens`).

use serde_json::Value;

use super::{js_len, message_of, Rules, Settings};
use crate::model::Entry;
use crate::raw::is_truthy_value;

/// Characters an image counts for in `estimateTokens` (1200 tokens).
pub const IMAGE_CHARS: i64 = 4800;

/// `estimateTokens`: a message's size as `ceil(chars / 4)`, counting per role:
/// user text, assistant text + thinking + tool call name and JSON arguments, tool result (and
/// custom message) text + 4800 per image, bash command + output, summary text; other roles 0.
/// Clauses: compaction.2.
pub fn estimate_tokens(message: &Value, rules: &Rules) -> i64 {
    let role = message.get("role").and_then(Value::as_str).unwrap_or("");
    let chars = match role {
        "user" => user_chars(&message["content"]),
        "assistant" => blocks(&message["content"]).map(assistant_block_chars).sum(),
        "toolResult" => result_chars(&message["content"]),
        r if r == rules.custom_role => result_chars(&message["content"]),
        "bashExecution" => str_len(&message["command"]) + str_len(&message["output"]),
        "branchSummary" | "compactionSummary" => str_len(&message["summary"]),
        _ => 0,
    };
    ceil_quarter(chars)
}

/// `ceil(chars / 4)`.
pub fn ceil_quarter(chars: i64) -> i64 {
    (chars + 3).div_euclid(4)
}

/// `calculateContextTokens`: the usage's `totalTokens`, else the sum of its four parts.
/// Clauses: compaction.3.
pub fn calculate_context_tokens(usage: &Value) -> i64 {
    let total = int(&usage["totalTokens"]);
    if total != 0 {
        return total;
    }
    ["input", "output", "cacheRead", "cacheWrite"]
        .iter()
        .fold(0, |sum: i64, k| sum.saturating_add(int(&usage[*k])))
}

/// omp `calculatePromptTokens`: input + cache read + cache write, else the context tokens.
/// Clauses: compaction.10.
pub fn calculate_prompt_tokens(usage: &Value) -> i64 {
    let prompt: i64 = ["input", "cacheRead", "cacheWrite"]
        .iter()
        .fold(0, |sum: i64, k| sum.saturating_add(int(&usage[*k])));
    if prompt > 0 {
        prompt
    } else {
        calculate_context_tokens(usage)
    }
}

/// The usage of an assistant message that has one and did not stop with `aborted` or
/// `error` (those carry no valid usage).
/// Clauses: compaction.3.
pub fn assistant_usage(message: &Value) -> Option<&Value> {
    if message.get("role").and_then(Value::as_str) != Some("assistant") {
        return None;
    }
    let stop = message.get("stopReason").and_then(Value::as_str);
    if matches!(stop, Some("aborted" | "error")) {
        return None;
    }
    message.get("usage").filter(|u| is_truthy_value(u))
}

/// `getLastAssistantUsage`: the usage of the last message entry on the path that has one.
pub fn last_assistant_usage(path: &[&Entry]) -> Option<Value> {
    path.iter()
        .rev()
        .filter_map(|e| message_of(e))
        .find_map(|m| assistant_usage(&m).cloned())
}

/// What `estimateContextTokens` returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextTokens {
    /// `usageTokens + trailingTokens`.
    pub tokens: i64,
    /// The last valid usage's context tokens (0 without one).
    pub usage_tokens: i64,
    /// Estimates of the messages after it (all messages without one).
    pub trailing_tokens: i64,
    /// The index of the message with that usage.
    pub last_usage_index: Option<usize>,
}

/// `estimateContextTokens`: the last valid assistant usage plus estimates for the messages
/// after it; without a usage, estimates for every message.
/// Clauses: compaction.3.
pub fn estimate_context_tokens(messages: &[Value], rules: &Rules) -> ContextTokens {
    let last = messages.iter().rposition(|m| assistant_usage(m).is_some());
    let usage_tokens = last
        .and_then(|i| assistant_usage(&messages[i]))
        .map_or(0, calculate_context_tokens);
    let from = last.map_or(0, |i| i + 1);
    let trailing_tokens: i64 = messages[from..]
        .iter()
        .map(|m| estimate_tokens(m, rules))
        .sum();
    ContextTokens {
        tokens: usage_tokens.saturating_add(trailing_tokens),
        usage_tokens,
        trailing_tokens,
        last_usage_index: last,
    }
}

/// omp `effectiveReserveTokens`: the larger of 15% of the window and `reserveTokens`.
pub fn effective_reserve_tokens(context_window: i64, settings: &Settings) -> i64 {
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
    let share = (context_window as f64 * 0.15).floor() as i64;
    share.max(settings.reserve_tokens)
}

/// `shouldCompact`: false when disabled; else `contextTokens > threshold`, where the threshold
/// is `contextWindow − reserveTokens` (omp: the fixed or percentage threshold when set, else
/// the window minus [`effective_reserve_tokens`]). Strictly greater: a context exactly at the
/// threshold is not compacted.
/// Clauses: compaction.4, compaction.5.
pub fn should_compact(
    context_tokens: i64,
    context_window: i64,
    settings: &Settings,
    rules: &Rules,
) -> bool {
    if !settings.enabled {
        return false;
    }
    if !rules.effective_reserve {
        return context_tokens > context_window.saturating_sub(settings.reserve_tokens);
    }
    if settings.strategy.as_deref() == Some("off") || context_window <= 0 {
        return false;
    }
    #[allow(clippy::cast_precision_loss)]
    let over = context_tokens as f64 > omp_threshold(context_window, settings);
    over
}

/// omp's `resolveThresholdTokens`.
/// Clauses: compaction.5.
#[allow(clippy::cast_precision_loss)]
fn omp_threshold(context_window: i64, settings: &Settings) -> f64 {
    let window = context_window as f64;
    if let Some(fixed) = settings
        .threshold_tokens
        .filter(|t| t.is_finite() && *t > 0.0)
    {
        return fixed.max(1.0).min(window - 1.0);
    }
    match settings
        .threshold_percent
        .filter(|p| p.is_finite() && *p > 0.0)
    {
        Some(percent) => (window * (percent.clamp(1.0, 99.0) / 100.0)).floor(),
        None => {
            context_window.saturating_sub(effective_reserve_tokens(context_window, settings)) as f64
        }
    }
}

fn user_chars(content: &Value) -> i64 {
    match content {
        Value::String(text) => js_len(text),
        _ => blocks(content)
            .filter(|b| b["type"] == "text")
            .map(|b| str_len(&b["text"]))
            .sum(),
    }
}

fn assistant_block_chars(block: &Value) -> i64 {
    match block.get("type").and_then(Value::as_str) {
        Some("text") => str_len(&block["text"]),
        Some("thinking") => str_len(&block["thinking"]),
        Some("toolCall") => str_len(&block["name"]) + json_len(&block["arguments"]),
        _ => 0,
    }
}

fn result_chars(content: &Value) -> i64 {
    if let Value::String(text) = content {
        return js_len(text);
    }
    blocks(content)
        .map(|b| match b.get("type").and_then(Value::as_str) {
            Some("text") => str_len(&b["text"]),
            Some("image") => IMAGE_CHARS,
            _ => 0,
        })
        .sum()
}

/// The blocks of a content array (none when it is not an array).
pub(crate) fn blocks(content: &Value) -> impl Iterator<Item = &Value> {
    content.as_array().into_iter().flatten()
}

/// `JSON.stringify(value).length`.
/// Clauses: compaction.2, js.1.
pub(crate) fn json_len(value: &Value) -> i64 {
    js_len(&serde_json::to_string(value).unwrap_or_default())
}

/// Clauses: compaction.2.
fn str_len(value: &Value) -> i64 {
    value.as_str().map_or(0, js_len)
}

/// A usage number; JSON that is not an integer counts 0.
fn int(value: &Value) -> i64 {
    value.as_i64().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Profile;
    use serde_json::json;

    fn pi() -> Rules {
        Rules::for_profile(Profile::Pi)
    }

    #[test]
    fn estimates_round_up_chars_over_four() {
        assert_eq!(
            estimate_tokens(&json!({"role":"user","content":"hello"}), &pi()),
            2
        );
        let tool = json!({"role":"assistant","content":[{"type":"toolCall","name":"read","arguments":{"path":"a"}}]});
        // "read" + {"path":"a"} = 4 + 12
        assert_eq!(estimate_tokens(&tool, &pi()), 4);
        let image = json!({"role":"toolResult","content":[{"type":"image","data":"x"}]});
        assert_eq!(estimate_tokens(&image, &pi()), 1200);
    }

    #[test]
    fn omp_counts_custom_messages_as_nothing() {
        let custom = json!({"role":"custom","content":"abcdefgh"});
        assert_eq!(estimate_tokens(&custom, &pi()), 2);
        assert_eq!(
            estimate_tokens(&custom, &Rules::for_profile(Profile::Omp)),
            0
        );
    }

    #[test]
    fn should_compact_is_strictly_greater() {
        let s = Settings::defaults(Profile::Pi);
        assert!(!should_compact(100_000 - 16384, 100_000, &s, &pi()));
        assert!(should_compact(100_000 - 16383, 100_000, &s, &pi()));
        let omp = Rules::for_profile(Profile::Omp);
        let so = Settings::defaults(Profile::Omp);
        // omp reserves max(15% of the window, reserveTokens).
        assert!(!should_compact(170_000, 200_000, &so, &omp));
        assert!(should_compact(170_001, 200_000, &so, &omp));
        assert!(!should_compact(83_616, 100_000, &so, &omp));
        assert!(should_compact(83_617, 100_000, &so, &omp));
    }

    #[test]
    fn extreme_inputs_do_not_overflow() {
        let mut s = Settings::defaults(Profile::Pi);
        s.reserve_tokens = i64::MIN;
        assert!(!should_compact(i64::MAX, i64::MAX, &s, &pi()));
        let omp = Rules::for_profile(Profile::Omp);
        assert!(!should_compact(
            0,
            i64::MAX,
            &Settings::defaults(Profile::Omp),
            &omp
        ));
        let usage = json!({"input": i64::MAX, "output": i64::MAX, "cacheRead": 0, "cacheWrite": 0});
        assert_eq!(calculate_context_tokens(&usage), i64::MAX);
    }

    #[test]
    fn context_tokens_are_usage_plus_trailing_estimates() {
        let messages = vec![
            json!({"role":"user","content":"x"}),
            json!({"role":"assistant","content":[],"usage":{"totalTokens":100}}),
            json!({"role":"user","content":"12345678"}),
            json!({"role":"assistant","content":[],"stopReason":"aborted","usage":{"totalTokens":9}}),
        ];
        let t = estimate_context_tokens(&messages, &pi());
        assert_eq!(
            (
                t.tokens,
                t.usage_tokens,
                t.trailing_tokens,
                t.last_usage_index
            ),
            (102, 100, 2, Some(1))
        );
    }
}
