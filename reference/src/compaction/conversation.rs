//! The conversation a summary request carries: document 004, "Compaction" (the conversation is
//! serialised to text so the model does not continue it: pi-mono `convertToLlm` then
//! `serializeConversation`).

use serde_json::Value;

use super::tokens::blocks;
use super::Rules;
use crate::context;
use crate::raw::{is_truthy_value, to_raw};

/// Tool results longer than this (in UTF-16 units) are cut in the serialised conversation.
pub const TOOL_RESULT_MAX_CHARS: usize = 2000;

/// `serializeConversation(convertToLlm(messages))`: one `[User]: `, `[Assistant thinking]: `,
/// `[Assistant]: `, `[Assistant tool calls]: ` or `[Tool result]: ` paragraph per part, joined
/// by blank lines; bash executions, custom messages and summaries read as user text.
/// Clauses: compaction.13.
pub fn serialize_conversation(messages: &[Value], rules: &Rules) -> String {
    let mut parts: Vec<String> = Vec::new();
    for message in messages {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        match role {
            "user" => push_user(&mut parts, &user_text(&message["content"])),
            "assistant" => push_assistant(&mut parts, &message["content"]),
            "toolResult" => {
                let text = joined_text(&message["content"]);
                if !text.is_empty() {
                    parts.push(format!("[Tool result]: {}", truncate_for_summary(&text)));
                }
            }
            _ => {
                if let Some(text) = context_text(message, rules) {
                    push_user(&mut parts, &text);
                }
            }
        }
    }
    parts.join("\n\n")
}

/// `convertToLlm`'s user text for a bash execution (omp also a Python execution; none
/// when excluded from the context), a custom message (omp also `hookMessage`), a branch summary or a compaction summary.
/// Clauses: compaction.14.
pub fn context_text(message: &Value, rules: &Rules) -> Option<String> {
    let role = message.get("role").and_then(Value::as_str).unwrap_or("");
    let summary = || str_of(&message["summary"]);
    let (branch, compaction) = rules.summary_frames;
    match role {
        "bashExecution" => (!excluded(message)).then(|| bash_text(message, rules)),
        "pythonExecution" if rules.sends_python_executions => {
            (!excluded(message)).then(|| python_text(message))
        }
        "custom" => Some(user_text(&message["content"])),
        r if r == rules.custom_role => Some(user_text(&message["content"])),
        "branchSummary" => Some(format!("{}{}{}", branch.0, summary(), branch.1)),
        "compactionSummary" => Some(format!("{}{}{}", compaction.0, summary(), compaction.1)),
        _ => None,
    }
}

/// `bashExecutionToText`: the command, its output in a fence (or `(no output)`), then a
/// cancellation or a non-zero exit code; pi adds where a truncated output was kept.
/// Clauses: compaction.14.
fn bash_text(message: &Value, rules: &Rules) -> String {
    let output = str_of(&message["output"]);
    let shown = if output.is_empty() {
        "(no output)".to_owned()
    } else {
        format!("```\n{output}\n```")
    };
    let exit = &message["exitCode"];
    let status = if message.get("cancelled").is_some_and(is_truthy_value) {
        "\n\n(command cancelled)".to_owned()
    } else if !exit.is_null() && exit.as_f64() != Some(0.0) {
        format!("\n\nCommand exited with code {}", js_string(exit))
    } else {
        String::new()
    };
    let full = message.get("fullOutputPath").filter(|p| is_truthy_value(p));
    let truncated = message.get("truncated").is_some_and(is_truthy_value);
    let notice = match full {
        Some(path) if truncated && rules.names_full_output => {
            format!("\n\n[Output truncated. Full output: {}]", js_string(path))
        }
        _ => String::new(),
    };
    format!(
        "Ran `{}`\n{shown}{status}{notice}",
        str_of(&message["command"])
    )
}

/// omp `pythonExecutionToText`: the code in a `python` fence, its output in a fence after
/// `Output:` (or `(no output)`), then a cancellation or a non-zero exit code.
/// Clauses: compaction.14.
fn python_text(message: &Value) -> String {
    let output = str_of(&message["output"]);
    let shown = if output.is_empty() {
        "(no output)".to_owned()
    } else {
        format!("Output:\n```\n{output}\n```")
    };
    let exit = &message["exitCode"];
    let status = if message.get("cancelled").is_some_and(is_truthy_value) {
        "\n\n(execution cancelled)".to_owned()
    } else if !exit.is_null() && exit.as_f64() != Some(0.0) {
        format!("\n\nExecution failed with code {}", js_string(exit))
    } else {
        String::new()
    };
    format!(
        "Ran Python:\n```python\n{}\n```\n{shown}{status}",
        str_of(&message["code"])
    )
}

fn push_user(parts: &mut Vec<String>, text: &str) {
    if !text.is_empty() {
        parts.push(format!("[User]: {text}"));
    }
}

fn push_assistant(parts: &mut Vec<String>, content: &Value) {
    let (mut text, mut thinking, mut calls) = (Vec::new(), Vec::new(), Vec::new());
    for block in blocks(content) {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push(str_of(&block["text"])),
            Some("thinking") => thinking.push(str_of(&block["thinking"])),
            Some("toolCall") => calls.push(tool_call_text(block)),
            _ => {}
        }
    }
    if !thinking.is_empty() {
        parts.push(format!("[Assistant thinking]: {}", thinking.join("\n")));
    }
    if !text.is_empty() {
        parts.push(format!("[Assistant]: {}", text.join("\n")));
    }
    if !calls.is_empty() {
        parts.push(format!("[Assistant tool calls]: {}", calls.join("; ")));
    }
}

/// `name(key=JSON, …)`, keys in the order written.
/// Clauses: js.1.
fn tool_call_text(block: &Value) -> String {
    let args: Vec<String> = block["arguments"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", serde_json::to_string(v).unwrap_or_default()))
        .collect();
    format!("{}({})", str_of(&block["name"]), args.join(", "))
}

/// A user message's text: a string as it is, else its text blocks joined.
pub(crate) fn user_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        _ => joined_text(content),
    }
}

fn joined_text(content: &Value) -> String {
    blocks(content)
        .filter(|b| b["type"] == "text")
        .map(|b| str_of(&b["text"]))
        .collect()
}

/// The first 2000 UTF-16 units and `\n\n[... N more characters truncated]`.
fn truncate_for_summary(text: &str) -> String {
    let units: Vec<u16> = text.encode_utf16().collect();
    if units.len() <= TOOL_RESULT_MAX_CHARS {
        return text.to_owned();
    }
    let kept = String::from_utf16_lossy(&units[..TOOL_RESULT_MAX_CHARS]);
    format!(
        "{kept}\n\n[... {} more characters truncated]",
        units.len() - TOOL_RESULT_MAX_CHARS
    )
}

fn str_of(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

/// JavaScript's `String(value)` ([`context::js_string`]) for a value of a message.
fn js_string(value: &Value) -> String {
    context::js_string(Some(&to_raw(value)))
}

/// Whether a bash execution is left out of the context (`excludeFromContext`, the `!!` prefix).
pub(crate) fn excluded(message: &Value) -> bool {
    message
        .get("excludeFromContext")
        .is_some_and(is_truthy_value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Profile;
    use serde_json::json;

    #[test]
    fn serialises_each_part_on_its_own_paragraph() {
        let messages = vec![
            json!({"role":"user","content":[{"type":"text","text":"a"},{"type":"image"},{"type":"text","text":"b"}]}),
            json!({"role":"assistant","content":[{"type":"text","text":"t"},{"type":"thinking","thinking":"h"},{"type":"toolCall","name":"read","arguments":{"path":"/x","limit":3}}]}),
            json!({"role":"toolResult","content":[{"type":"text","text":"r"}]}),
        ];
        let text = serialize_conversation(&messages, &Rules::for_profile(Profile::Pi));
        assert_eq!(text, "[User]: ab\n\n[Assistant thinking]: h\n\n[Assistant]: t\n\n[Assistant tool calls]: read(path=\"/x\", limit=3)\n\n[Tool result]: r");
    }

    #[test]
    fn long_tool_results_are_cut() {
        let text = truncate_for_summary(&"x".repeat(2005));
        assert!(text.ends_with("\n\n[... 5 more characters truncated]"));
    }
}
