//! The line shapes: what each entry type holds, in the order it is written (000 "Entry types"; 002 "Entry Types").
//!
//! These are the types the session writes ([`crate::session::SessionManager::append`]
//! serialises one, after the common fields of [`Base`]) and the types the JSON Schemas
//! in `schemas/` are generated from. The dialect names the keys (003 writes them in
//! snake_case). Reading is lenient: [`crate::model::Entry`] keeps any line's text and
//! reads the few fields the session layer needs from it, so a field the writer was
//! given as any JSON value is a `Value` here, with the type the documents give it in
//! the schema. Unknown fields are allowed everywhere (they are kept and written back
//! unchanged), so every schema has `additionalProperties: true`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An entry type's own fields: what [`crate::session::SessionManager::append`] writes
/// after `type` and the fields of [`Base`].
pub trait Payload: Serialize {
    /// The entry's `type` (camelCase dialects' name; the dialect renames it).
    const TYPE: &'static str;
    /// Whether the common fields come after the payload (pi-mono spreads an extension's
    /// fields first in `custom` and `custom_message`).
    const BASE_LAST: bool = false;
}

/// Line 1 of a session file. "Line 1 is always the session header (type: \"session\")" (000).

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    /// Always `"session"`.
    #[serde(rename = "type")]
    pub kind: SessionTag,
    /// "version is optional in v1 files; absence means v1" (000). Current: 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// The session id (pi: a UUID; omp 13.19.0: 16 hex digits).
    pub id: String,
    /// ISO-8601 creation time.
    pub timestamp: String,
    /// The working directory, stored verbatim.
    pub cwd: String,
    /// "optional session title" (000; omp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// "an opaque lineage string" (000): a session id or path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
}

/// The literal `"session"`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
pub enum SessionTag {
    /// `"session"`.
    #[serde(rename = "session")]
    Session,
}

/// "All non-header entries include: type, id, parentId, timestamp" (000).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Base {
    /// "8-char-id", lowercase hex when generated.
    pub id: String,
    /// "parentId can be null for a root entry (first append, or after resetLeaf())" (000).
    pub parent_id: Option<String>,
    /// ISO-8601 time of the append.
    pub timestamp: String,
}

/// Declares an entry type: the struct, its `type`, and where its common fields go.
macro_rules! entry_type {
    ($(#[$doc:meta])* $name:ident = $type:literal $(, base last = $last:literal)? { $($body:tt)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
        #[serde(rename_all = "camelCase")]
        pub struct $name { $($body)* }

        impl Payload for $name {
            const TYPE: &'static str = $type;
            $(const BASE_LAST: bool = $last;)?
        }
    };
}

entry_type! {
    /// `message`: "Stores an AgentMessage directly" (000).
    Message = "message" {
        /// The AgentMessage: `role` plus whatever the role carries, stored verbatim.
        #[schemars(with = "AgentMessage")]
        pub message: Value,
    }
}

/// An AgentMessage: the session layer reads only `role` (and an assistant's `provider`/`model`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AgentMessage {
    /// `user`, `assistant`, `toolResult`, `bashExecution`, `custom`, …
    pub role: String,
}

entry_type! {
    /// `thinking_level_change`.
    ThinkingLevelChange = "thinking_level_change" {
        /// The level, e.g. `"high"`.
        #[schemars(with = "String")]
        pub thinking_level: Value,
    }
}

entry_type! {
    /// pi's `model_change`: "Emitted when the user switches models mid-session" (002).
    PiModelChange = "model_change" {
        /// The provider, e.g. `"openai"`.
        #[schemars(with = "String")]
        pub provider: Value,
        /// The model id, e.g. `"gpt-4o"`.
        #[schemars(with = "String")]
        pub model_id: Value,
    }
}

entry_type! {
    /// omp's `model_change`: `model` is "provider/id"; "role is optional; missing is treated as default" (000).
    OmpModelChange = "model_change" {
        /// `"provider/id"`.
        #[schemars(with = "String")]
        pub model: Value,
        /// The model role (`default` when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "Option<String>")]
        pub role: Option<Value>,
    }
}

entry_type! {
    /// 003's `model_change`: `model_id`, and the provider when it is known.
    ModelIdChange = "model_change" {
        /// The provider, e.g. `"openai"`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "Option<String>")]
        pub provider: Option<Value>,
        /// The model id, e.g. `"gpt-4o"`.
        #[schemars(with = "String")]
        pub model_id: Value,
    }
}

entry_type! {
    /// pi's `compaction`: "Created when context is compacted. Stores a summary of earlier messages" (002).
    PiCompaction = "compaction" {
        /// The summary.
        #[schemars(with = "String")]
        pub summary: Value,
        /// The first entry kept after the summary.
        #[schemars(with = "String")]
        pub first_kept_entry_id: Value,
        /// Tokens before compaction.
        #[schemars(with = "f64")]
        pub tokens_before: Value,
        /// "Compaction-implementation specific data".
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub details: Option<Value>,
        /// "true if generated by a hook".
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "Option<bool>")]
        pub from_hook: Option<Value>,
    }
}

entry_type! {
    /// omp's `compaction` (000).
    OmpCompaction = "compaction" {
        /// The summary.
        #[schemars(with = "String")]
        pub summary: Value,
        /// A short recap (used as a listing title).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "Option<String>")]
        pub short_summary: Option<Value>,
        /// The first entry kept after the summary.
        #[schemars(with = "String")]
        pub first_kept_entry_id: Value,
        /// Tokens before compaction.
        #[schemars(with = "f64")]
        pub tokens_before: Value,
        /// Implementation details.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub details: Option<Value>,
        /// Data kept for extensions.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub preserve_data: Option<Value>,
        /// Whether an extension made it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "Option<bool>")]
        pub from_extension: Option<Value>,
    }
}

/// v1 `compaction`: kept entries were named by index (0 is the header) before ids existed.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct V1Compaction {
    /// The summary.
    pub summary: String,
    /// "firstKeptEntryIndex -> firstKeptEntryId" on migration (000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_kept_entry_index: Option<f64>,
    /// Tokens before compaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_before: Option<f64>,
}

entry_type! {
    /// `branch_summary`: "Captures context from the abandoned path" (002). "If branching from root, fromId is the literal string \"root\"" (000).
    BranchSummary = "branch_summary" {
        /// The branch point, or `"root"`.
        pub from_id: String,
        /// The summary (an empty one adds nothing to the context).
        #[schemars(with = "String")]
        pub summary: Value,
        /// Optional details.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub details: Option<Value>,
        /// pi: "true if generated by a hook".
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "Option<bool>")]
        pub from_hook: Option<Value>,
        /// omp: whether an extension made it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "Option<bool>")]
        pub from_extension: Option<Value>,
    }
}

entry_type! {
    /// `custom`: "Extension state persistence; ignored by buildSessionContext" (000).
    Custom = "custom", base last = true {
        /// The extension's type.
        #[schemars(with = "String")]
        pub custom_type: Value,
        /// The state.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub data: Option<Value>,
    }
}

entry_type! {
    /// `custom_message`: "Extension-provided message that does participate in LLM context" (000).
    CustomMessage = "custom_message", base last = true {
        /// The extension's type.
        #[schemars(with = "String")]
        pub custom_type: Value,
        /// "String or (TextContent | ImageContent)[]" (002).
        #[schemars(with = "Content")]
        pub content: Value,
        /// "true = show in TUI, false = hidden" (002).
        #[schemars(with = "bool")]
        pub display: Value,
        /// "Optional hook-specific metadata (not sent to LLM)" (002).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub details: Option<Value>,
    }
}

/// Message content: a string or a list of blocks.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Text and image blocks.
    Blocks(Vec<Value>),
}

entry_type! {
    /// `label`: "label: undefined clears a label for targetId" (000).
    Label = "label" {
        /// The labelled entry.
        pub target_id: String,
        /// The label; absent or empty clears it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "Option<String>")]
        pub label: Option<Value>,
    }
}

entry_type! {
    /// `leaf` (003): "A durable navigation pointer: target_id becomes the new leaf".
    Leaf = "leaf" {
        /// The new leaf (any id; one that names no entry gives the empty path).
        pub target_id: String,
    }
}

entry_type! {
    /// `ttsr_injection` (omp).
    TtsrInjection = "ttsr_injection" {
        /// Rules injected; the context lists each once.
        #[schemars(with = "Vec<String>")]
        pub injected_rules: Value,
    }
}

entry_type! {
    /// `session_init` (omp): not used in the context.
    SessionInit = "session_init" {
        /// The system prompt.
        #[schemars(with = "String")]
        pub system_prompt: Value,
        /// The task.
        #[schemars(with = "String")]
        pub task: Value,
        /// Tool names.
        #[schemars(with = "Vec<String>")]
        pub tools: Value,
        /// An output schema.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub output_schema: Option<Value>,
    }
}

entry_type! {
    /// `mode_change` (omp): "mode/modeData from latest mode_change (default mode \"none\")" (000).
    ModeChange = "mode_change" {
        /// The mode.
        #[schemars(with = "String")]
        pub mode: Value,
        /// Its data.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub data: Option<Value>,
    }
}

entry_type! {
    /// `session_info` (pi): the session's display name, trimmed on append.
    SessionInfo = "session_info" {
        /// The name.
        pub name: String,
    }
}
