//! Strict message types: every message role and content block the real implementations
//! persist in a `message` entry, each with the fields their own types require (pi-ai and
//! the coding agent of pi-mono 0.73.1, pi 1.5.2 and 1.6.0; oh-my-pi 13.19.0 and 18.2.3).
//!
//! The reference reads a message leniently (only `role`, and an assistant's `provider` and
//! `model`); most ports deserialise it into types like these. They mirror the real ones:
//! required fields are required, unknown fields are allowed, and a field only newer
//! versions write is optional. `schemas/{pi,omp}/agent-message.schema.json` are generated
//! from them, and [`check`] says whether a message is one of them.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};
use session_reference::model::Profile;

/// `{type: "text", text, textSignature?}`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Provider metadata (OpenAI responses).
    #[serde(default)]
    pub text_signature: Option<String>,
}

/// `{type: "thinking", thinking, thinkingSignature?, redacted?}`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingContent {
    /// The reasoning text.
    pub thinking: String,
    /// The provider's signature of the block (Anthropic), or its reasoning item id.
    #[serde(default)]
    pub thinking_signature: Option<String>,
    /// pi: the block was redacted by the provider.
    #[serde(default)]
    pub redacted: Option<bool>,
}

/// omp `{type: "redactedThinking", data}`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RedactedThinkingContent {
    /// The provider's opaque data.
    pub data: String,
}

/// `{type: "image", data, mimeType}`: base64 data.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64 image data (or, in omp, a `blob:sha256:` reference).
    pub data: String,
    /// `image/png`, `image/jpeg`, ….
    pub mime_type: String,
}

/// `{type: "toolCall", id, name, arguments}`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The call's id, which the tool result names.
    pub id: String,
    /// The tool.
    pub name: String,
    /// The arguments: an object.
    pub arguments: Map<String, Value>,
    /// Google's opaque thought signature.
    #[serde(default)]
    pub thought_signature: Option<String>,
}

/// A block of a user message, a tool result or a custom message: text or an image.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "type")]
pub enum UserBlock {
    /// Text.
    #[serde(rename = "text")]
    Text(TextContent),
    /// An image.
    #[serde(rename = "image")]
    Image(ImageContent),
}

/// Content given as a string or as blocks.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum UserContent {
    /// Plain text.
    Text(String),
    /// Text and image blocks.
    Blocks(Vec<UserBlock>),
}

/// A block of a pi assistant message.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "type")]
pub enum PiAssistantBlock {
    /// Text.
    #[serde(rename = "text")]
    Text(TextContent),
    /// Reasoning.
    #[serde(rename = "thinking")]
    Thinking(ThinkingContent),
    /// A tool call.
    #[serde(rename = "toolCall")]
    ToolCall(ToolCall),
}

/// A block of an omp assistant message (18.x adds images and Anthropic's fallback and
/// server-tool blocks, kept as objects).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "type")]
pub enum OmpAssistantBlock {
    /// Text.
    #[serde(rename = "text")]
    Text(TextContent),
    /// Reasoning.
    #[serde(rename = "thinking")]
    Thinking(ThinkingContent),
    /// Reasoning the provider redacted.
    #[serde(rename = "redactedThinking")]
    RedactedThinking(RedactedThinkingContent),
    /// A tool call.
    #[serde(rename = "toolCall")]
    ToolCall(ToolCall),
    /// An image (18.x).
    #[serde(rename = "image")]
    Image(ImageContent),
    /// 18.x: the provider fell back from one model to another.
    #[serde(rename = "fallback")]
    Fallback(Map<String, Value>),
    /// 18.x: a server-side tool block of Anthropic's.
    #[serde(rename = "anthropicServerTool")]
    AnthropicServerTool(Map<String, Value>),
}

/// What a turn cost.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    /// Input tokens' cost.
    pub input: f64,
    /// Output tokens' cost.
    pub output: f64,
    /// Cached reads' cost.
    pub cache_read: f64,
    /// Cache writes' cost.
    pub cache_write: f64,
    /// The sum.
    pub total: f64,
}

/// Token counts of a turn and their cost.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Input tokens.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Tokens read from the cache.
    pub cache_read: f64,
    /// Tokens written to the cache.
    pub cache_write: f64,
    /// All of them.
    pub total_tokens: f64,
    /// What they cost.
    pub cost: Cost,
}

/// Why a turn ended.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    /// The model finished.
    Stop,
    /// The output limit was reached.
    Length,
    /// The model called tools.
    ToolUse,
    /// The request failed (`errorMessage` says why).
    Error,
    /// The user stopped it.
    Aborted,
}

/// A user message (also omp's `developer` message).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct UserMessage {
    /// Text, or text and image blocks.
    pub content: UserContent,
    /// Milliseconds since the epoch.
    pub timestamp: f64,
}

/// An assistant message, its content blocks of type `B`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage<B> {
    /// The blocks.
    pub content: Vec<B>,
    /// The provider API (`anthropic-messages`, `openai-responses`, …).
    pub api: String,
    /// The provider.
    pub provider: String,
    /// The model id.
    pub model: String,
    /// Tokens and cost.
    pub usage: Usage,
    /// Why the turn ended.
    pub stop_reason: StopReason,
    /// With `stopReason` `error` or `aborted`: what happened.
    #[serde(default)]
    pub error_message: Option<String>,
    /// Milliseconds since the epoch.
    pub timestamp: f64,
}

/// A tool's result.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    /// The call it answers.
    pub tool_call_id: String,
    /// The tool.
    pub tool_name: String,
    /// Text and image blocks.
    pub content: Vec<UserBlock>,
    /// Anything the tool adds for the interface.
    #[serde(default)]
    pub details: Option<Value>,
    /// Whether the tool failed.
    pub is_error: bool,
    /// Milliseconds since the epoch.
    pub timestamp: f64,
}

/// A shell command the user ran (`!cmd`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BashExecutionMessage {
    /// The command.
    pub command: String,
    /// What it printed.
    pub output: String,
    /// Its exit code; absent when it did not exit (cancelled).
    #[serde(default)]
    pub exit_code: Option<f64>,
    /// Whether the user cancelled it.
    pub cancelled: bool,
    /// Whether the output was cut.
    pub truncated: bool,
    /// Kept out of the model's context (`!!cmd`).
    #[serde(default)]
    pub exclude_from_context: Option<bool>,
    /// Milliseconds since the epoch.
    pub timestamp: f64,
}

/// omp: Python code the user ran.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PythonExecutionMessage {
    /// The code.
    pub code: String,
    /// What it printed.
    pub output: String,
    /// Its exit code; absent when it did not exit.
    #[serde(default)]
    pub exit_code: Option<f64>,
    /// Whether the user cancelled it.
    pub cancelled: bool,
    /// Whether the output was cut.
    pub truncated: bool,
    /// Milliseconds since the epoch.
    pub timestamp: f64,
}

/// An extension's message (also omp's legacy `hookMessage`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomMessage {
    /// The extension's type name.
    pub custom_type: String,
    /// Text, or text and image blocks.
    pub content: UserContent,
    /// Whether the interface shows it.
    pub display: bool,
    /// Anything the extension keeps with it.
    #[serde(default)]
    pub details: Option<Value>,
    /// Milliseconds since the epoch.
    pub timestamp: f64,
}

/// A summary of an abandoned branch.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BranchSummaryMessage {
    /// The summary.
    pub summary: String,
    /// Where the branch left the path.
    pub from_id: String,
    /// Milliseconds since the epoch.
    pub timestamp: f64,
}

/// A compaction's summary as a message.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactionSummaryMessage {
    /// The summary.
    pub summary: String,
    /// The context's tokens before the compaction.
    pub tokens_before: f64,
    /// Milliseconds since the epoch.
    pub timestamp: f64,
}

/// omp: files the user mentioned with `@path`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FileMentionMessage {
    /// Each file: `{path, content, …}`.
    pub files: Vec<MentionedFile>,
    /// Milliseconds since the epoch.
    pub timestamp: f64,
}

/// One file of a [`FileMentionMessage`].
#[derive(Debug, Deserialize, JsonSchema)]
pub struct MentionedFile {
    /// Its path.
    pub path: String,
    /// Its text.
    pub content: String,
}

/// A message pi (pi-mono 0.73.1, pi 1.5.2, 1.6.0) writes in a `message` entry.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "role")]
pub enum PiMessage {
    /// `user`.
    #[serde(rename = "user")]
    User(UserMessage),
    /// `assistant`.
    #[serde(rename = "assistant")]
    Assistant(AssistantMessage<PiAssistantBlock>),
    /// `toolResult`.
    #[serde(rename = "toolResult")]
    ToolResult(ToolResultMessage),
    /// `bashExecution`.
    #[serde(rename = "bashExecution")]
    BashExecution(BashExecutionMessage),
    /// `custom`.
    #[serde(rename = "custom")]
    Custom(CustomMessage),
    /// `hookMessage`: the name of `custom` before version 3, which pi's migration
    /// renames and its context still reads.
    #[serde(rename = "hookMessage")]
    HookMessage(CustomMessage),
    /// `branchSummary`.
    #[serde(rename = "branchSummary")]
    BranchSummary(BranchSummaryMessage),
    /// `compactionSummary`.
    #[serde(rename = "compactionSummary")]
    CompactionSummary(CompactionSummaryMessage),
}

/// A message oh-my-pi (13.19.0, 18.2.3) writes in a `message` entry.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "role")]
pub enum OmpMessage {
    /// `user`.
    #[serde(rename = "user")]
    User(UserMessage),
    /// `developer`: a system-side message in the user's turn.
    #[serde(rename = "developer")]
    Developer(UserMessage),
    /// `assistant`.
    #[serde(rename = "assistant")]
    Assistant(AssistantMessage<OmpAssistantBlock>),
    /// `toolResult`.
    #[serde(rename = "toolResult")]
    ToolResult(ToolResultMessage),
    /// `bashExecution`.
    #[serde(rename = "bashExecution")]
    BashExecution(BashExecutionMessage),
    /// `pythonExecution`.
    #[serde(rename = "pythonExecution")]
    PythonExecution(PythonExecutionMessage),
    /// `custom`.
    #[serde(rename = "custom")]
    Custom(CustomMessage),
    /// `hookMessage`: the legacy name of `custom`.
    #[serde(rename = "hookMessage")]
    HookMessage(CustomMessage),
    /// `branchSummary`.
    #[serde(rename = "branchSummary")]
    BranchSummary(BranchSummaryMessage),
    /// `compactionSummary`.
    #[serde(rename = "compactionSummary")]
    CompactionSummary(CompactionSummaryMessage),
    /// `fileMention`.
    #[serde(rename = "fileMention")]
    FileMention(FileMentionMessage),
}

/// Whether `message` is a message `profile`'s real implementations write: `Err` with
/// serde's account of the first field that is missing or of the wrong type. Document
/// 003 (`operator`) defines no message types of its own; its messages are not checked.
pub fn check(profile: Profile, message: &Value) -> Result<(), String> {
    let result = match profile {
        Profile::Pi => PiMessage::deserialize(message).map(drop),
        Profile::Omp => OmpMessage::deserialize(message).map(drop),
        Profile::Operator => Ok(()),
    };
    result.map_err(|e| e.to_string())
}

/// The first message of a case that one of its profiles' real types refuse ([`check`]):
/// where it is (`FILE:LINE`, or the argument) and why. The messages are those of the
/// `message` entries of its input session files (`*.jsonl`) and of its arguments
/// (`appendMessage` steps, `persist`'s `message`; the caller expands templates first).
pub fn first_refused(
    profiles: &[Profile],
    inputs: &BTreeMap<String, Vec<u8>>,
    args: &Value,
) -> Option<String> {
    let mut messages: Vec<(String, Value)> = Vec::new();
    // `.jsonl` as the stores list them: `UPPER.JSONL` is not a session file.
    let is_session = |name: &&String| {
        std::path::Path::new(name.as_str())
            .extension()
            .is_some_and(|e| e == "jsonl")
    };
    for (name, bytes) in inputs.iter().filter(|(name, _)| is_session(name)) {
        let text = String::from_utf8_lossy(bytes);
        for (n, line) in text.split('\n').enumerate() {
            let Ok(mut entry) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if entry["type"] == "message" && entry["message"].is_object() {
                messages.push((format!("{name}:{}", n + 1), entry["message"].take()));
            }
        }
    }
    if args["message"].is_object() {
        messages.push(("args.message".into(), args["message"].clone()));
    }
    for (i, step) in args["steps"].as_array().into_iter().flatten().enumerate() {
        if step["call"] == "appendMessage" && step["message"].is_object() {
            messages.push((format!("args.steps[{i}].message"), step["message"].clone()));
        }
    }
    profiles.iter().find_map(|&profile| {
        messages.iter().find_map(|(place, message)| {
            check(profile, message)
                .err()
                .map(|e| format!("{place}: {e} ({} types)", profile.name()))
        })
    })
}
