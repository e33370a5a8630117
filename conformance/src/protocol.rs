//! The adapter protocol's messages (see `PROTOCOL.md`).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

/// The protocol version this runner speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// The operations a case can ask for.
pub const OPERATIONS: [&str; 10] = [
    "load", "context", "tree", "apply", "persist", "list", "recent", "continue", "resolve",
    "history",
];

/// Operations only the `omp` profile has (pi-mono has no recent list and no prompt history).
pub const OMP_ONLY_OPERATIONS: [&str; 2] = ["recent", "history"];

/// The runner's greeting.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct RunnerHello {
    /// Always `"hello"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// [`PROTOCOL_VERSION`].
    pub protocol: u32,
    /// The profile under test.
    pub profile: String,
}

/// The adapter's greeting: who it is and what it can do.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Hello {
    /// Always `"hello"`.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// The implementation's name.
    pub implementation: String,
    /// Its version.
    pub version: String,
    /// The profile it implements.
    pub profile: String,
    /// Operations it supports.
    pub operations: Vec<String>,
    /// Optional extras (`diagnostics`).
    #[serde(default)]
    pub capabilities: Vec<String>,
}

impl Hello {
    /// Whether the adapter supports `op`.
    pub fn supports(&self, op: &str) -> bool {
        self.operations.iter().any(|o| o == op)
    }

    /// Whether the adapter has capability `cap`.
    pub fn has(&self, cap: &str) -> bool {
        self.capabilities.iter().any(|c| c == cap)
    }
}

/// One case, as sent to the adapter.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Request {
    /// Always `"request"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The case id.
    pub case: String,
    /// The operation.
    pub op: String,
    /// The profile.
    pub profile: String,
    /// The case's working directory (absolute).
    pub dir: String,
    /// The operation's arguments, templates expanded.
    #[schemars(with = "Value")]
    pub args: Args,
}

/// A request's arguments: a JSON value, and, when the runner made it, its JSON text,
/// which is what is sent. A case's arguments are expanded and serialised once per
/// run however often the case runs (some carry 500,000-character strings).
#[derive(Debug, Clone)]
pub struct Args {
    value: Arc<Value>,
    text: Option<Arc<RawValue>>,
}

impl Args {
    /// Arguments with their JSON text (what the runner sends).
    pub fn new(value: Arc<Value>, text: Arc<RawValue>) -> Args {
        Args {
            value,
            text: Some(text),
        }
    }

    /// The arguments as a value.
    pub fn value(&self) -> &Value {
        &self.value
    }
}

impl From<Value> for Args {
    fn from(value: Value) -> Args {
        Args {
            value: Arc::new(value),
            text: None,
        }
    }
}

impl PartialEq for Args {
    fn eq(&self, other: &Args) -> bool {
        self.value == other.value
    }
}

impl Serialize for Args {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.text {
            Some(text) => text.serialize(serializer),
            None => self.value.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Args {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Args, D::Error> {
        Value::deserialize(deserializer).map(Args::from)
    }
}

/// An adapter's answer to a [`Request`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Response {
    /// Always `"response"`.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// The case id it answers.
    #[serde(default)]
    pub case: String,
    /// The output, on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ok: Option<Value>,
    /// The error, on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
    /// Set when the operation is not supported.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unsupported: bool,
}

/// An error reported by an adapter: compared by `kind` only.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct ErrorObject {
    /// One of `not_found`, `invalid_header`, `invalid_source`, `persistence`, `exception`.
    pub kind: String,
    /// For people.
    #[serde(default)]
    pub message: String,
}

impl Response {
    /// A successful response.
    pub fn ok(case: &str, value: Value) -> Response {
        Response {
            kind: "response".into(),
            case: case.into(),
            ok: Some(value),
            error: None,
            unsupported: false,
        }
    }

    /// An error response.
    pub fn error(case: &str, kind: &str, message: impl Into<String>) -> Response {
        let error = ErrorObject {
            kind: kind.into(),
            message: message.into(),
        };
        Response {
            kind: "response".into(),
            case: case.into(),
            ok: None,
            error: Some(error),
            unsupported: false,
        }
    }

    /// An "unsupported" response.
    pub fn unsupported(case: &str) -> Response {
        Response {
            kind: "response".into(),
            case: case.into(),
            ok: None,
            error: None,
            unsupported: true,
        }
    }
}
