//! Errors, step arguments and JSON helpers shared by the operations.

use serde_json::{Map, Value};

/// A protocol error: `{"kind": …, "message": …}` (PROTOCOL.md "Response").
#[derive(Debug, Clone)]
pub struct Failure {
    pub kind: &'static str,
    pub message: String,
}

impl Failure {
    pub fn new(kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    pub fn exception(message: impl Into<String>) -> Self {
        Self::new("exception", message)
    }

    /// pi-mono's `Entry <id> not found` (PROTOCOL.md: `not_found`).
    pub fn not_found(id: &str) -> Self {
        Self::new("not_found", format!("Entry {id} not found"))
    }

    /// A write that failed (the crate's `save`/`flush_autosave` returned an error).
    pub fn persistence(err: &pi::Error) -> Self {
        Self::new("persistence", err.to_string())
    }

    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("kind".to_string(), Value::String(self.kind.to_string()));
        object.insert("message".to_string(), Value::String(self.message.clone()));
        Value::Object(object)
    }
}

/// How an operation ends when it does not return its output.
#[derive(Debug)]
pub enum OpError {
    /// The request cannot be served by this implementation: `{"unsupported": true}`.
    Unsupported,
    Fail(Failure),
}

impl From<Failure> for OpError {
    fn from(failure: Failure) -> Self {
        Self::Fail(failure)
    }
}

/// The protocol kind of an error `Session::open` returned.
///
/// The crate refuses (session.rs `open_path_with_diagnostics`, `open_jsonl_blocking_with_entry_limit`):
/// a missing file (`Error::SessionNotFound`), an empty file or a header that does not parse or
/// validate (`Error::Session("Empty session file" | "Invalid header: …" | "Invalid session header: …")`,
/// which includes every header whose version is not 3): `invalid_header`; a graph it cannot load
/// (duplicate ids, a parent cycle: session.rs `validate_entry_base_graph`) or a line whose blob
/// reference is invalid (session/attachments.rs, `PI_SESSION_ATTACHMENT_INVALID:`): `invalid_line`.
/// Lines that do not parse as an entry are skipped, not refused.
pub fn open_failure(err: &pi::Error) -> Failure {
    let message = err.to_string();
    let kind = match err {
        pi::Error::SessionNotFound { .. } => "missing_file",
        pi::Error::Session(text)
            if text.starts_with("Empty session file")
                || text.starts_with("Invalid header")
                || text.starts_with("Invalid session header") =>
        {
            "invalid_header"
        }
        pi::Error::Session(text)
            if text.contains("duplicate entry ID")
                || text.contains("parent graph contains a cycle")
                || text.contains("missing its ID")
                || text.starts_with("PI_SESSION_ATTACHMENT_INVALID:") =>
        {
            "invalid_line"
        }
        _ => "exception",
    };
    Failure::new(kind, message)
}

/// Serialises a value the crate holds (an entry, the header, a message) as JSON: the object
/// its own serialiser makes (PROTOCOL.md "Guidance for ports": the entry as held in memory).
macro_rules! to_json {
    ($value:expr) => {
        serde_json::to_value($value).map_err(|err| {
            $crate::util::Failure::exception(format!("cannot serialise a value as JSON: {err}"))
        })
    };
}
pub(crate) use to_json;

/// A short JSON text of a value, for messages.
pub fn show(value: Option<&Value>) -> String {
    match value {
        None => "undefined".to_string(),
        Some(value) => {
            let text = value.to_string();
            if text.chars().count() > 80 {
                let cut: String = text.chars().take(77).collect();
                format!("{cut}...")
            } else {
                text
            }
        }
    }
}

/// A required string argument.
pub fn req_string(args: &Map<String, Value>, call: &str, name: &str) -> Result<String, Failure> {
    match args.get(name) {
        Some(Value::String(text)) => Ok(text.clone()),
        other => Err(Failure::exception(format!(
            "{call}: {name} must be a string, got {}",
            show(other)
        ))),
    }
}

/// An optional string argument: absent or `null` is `None`.
pub fn opt_string(
    args: &Map<String, Value>,
    call: &str,
    name: &str,
) -> Result<Option<String>, Failure> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        other => Err(Failure::exception(format!(
            "{call}: {name} must be a string or null, got {}",
            show(other)
        ))),
    }
}

/// An optional JSON argument kept as given: absent is `None`, an explicit `null` is `Some(null)`
/// (the crate then writes `"details": null`, as pi-mono does).
pub fn opt_value(args: &Map<String, Value>, name: &str) -> Option<Value> {
    args.get(name).cloned()
}

/// An optional boolean argument: absent or `null` is `None` (the crate's `Option<bool>`
/// cannot hold a `null`).
pub fn opt_bool(
    args: &Map<String, Value>,
    call: &str,
    name: &str,
) -> Result<Option<bool>, Failure> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(flag)) => Ok(Some(*flag)),
        other => Err(Failure::exception(format!(
            "{call}: {name} must be a boolean, got {}",
            show(other)
        ))),
    }
}

/// A required non-negative integer argument (the crate's `u64`); a whole-valued float such as
/// `1234.0` is accepted, as JSON does not tell them apart.
pub fn req_u64(args: &Map<String, Value>, call: &str, name: &str) -> Result<u64, Failure> {
    let value = args.get(name);
    if let Some(Value::Number(number)) = value {
        if let Some(whole) = number.as_u64() {
            return Ok(whole);
        }
        if let Some(float) = number.as_f64() {
            if float.is_finite()
                && float >= 0.0
                && float.fract() == 0.0
                && float < 18_446_744_073_709_551_616.0
            {
                return Ok(float as u64);
            }
        }
    }
    Err(Failure::exception(format!(
        "{call}: {name} must be a non-negative integer, got {}",
        show(value)
    )))
}

/// The leaf as the protocol reports it: the id, or `null`.
pub fn leaf_value(leaf: Option<&str>) -> Value {
    leaf.map_or(Value::Null, |id| Value::String(id.to_string()))
}

/// Milliseconds since the Unix epoch (`Utc::now().timestamp_millis()` in the crate).
pub fn now_millis() -> i64 {
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(elapsed) => i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX),
        Err(_) => 0,
    }
}

/// Replaces every `{"$result": N}` (an object with exactly that one key) by `returns[N]`
/// (PROTOCOL.md `apply`). Recursion is bounded by serde_json's parse depth (128).
pub fn substitute_results(value: &Value, returns: &[Value]) -> Result<Value, Failure> {
    match value {
        Value::Object(object) => {
            if object.len() == 1 {
                if let Some(reference) = object.get("$result") {
                    let index = reference
                        .as_u64()
                        .and_then(|n| usize::try_from(n).ok())
                        .filter(|n| *n < returns.len())
                        .ok_or_else(|| {
                            Failure::exception(format!(
                                "bad $result reference {}",
                                show(Some(reference))
                            ))
                        })?;
                    return Ok(returns[index].clone());
                }
            }
            let mut copy = Map::new();
            for (key, item) in object {
                copy.insert(key.clone(), substitute_results(item, returns)?);
            }
            Ok(Value::Object(copy))
        }
        Value::Array(items) => {
            let mut copy = Vec::with_capacity(items.len());
            for item in items {
                copy.push(substitute_results(item, returns)?);
            }
            Ok(Value::Array(copy))
        }
        other => Ok(other.clone()),
    }
}

/// Replaces `\uXXXX` escapes of unpaired UTF-16 surrogates in a JSON text by `\ufffd`, so that
/// serde_json (which refuses them) reads the line as `JSON.parse` does for the runner
/// (PROTOCOL.md "Robustness": a lone surrogate reads as U+FFFD).
pub fn replace_lone_surrogates(text: &str) -> String {
    fn hex4(bytes: &[u8], start: usize) -> Option<u32> {
        let digits = bytes.get(start..start + 4)?;
        let mut unit = 0u32;
        for digit in digits {
            let nibble = char::from(*digit).to_digit(16)?;
            unit = unit * 16 + nibble;
        }
        Some(unit)
    }

    let bytes = text.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len());
    let mut i = 0;
    let mut in_string = false;
    while i < bytes.len() {
        let byte = bytes[i];
        if !in_string {
            if byte == b'"' {
                in_string = true;
            }
            out.push(byte);
            i += 1;
            continue;
        }
        match byte {
            b'"' => {
                in_string = false;
                out.push(byte);
                i += 1;
            }
            b'\\' => {
                if bytes.get(i + 1) == Some(&b'u') {
                    match hex4(bytes, i + 2) {
                        Some(unit) if (0xD800..0xDC00).contains(&unit) => {
                            let low_follows = bytes.get(i + 6) == Some(&b'\\')
                                && bytes.get(i + 7) == Some(&b'u')
                                && hex4(bytes, i + 8)
                                    .is_some_and(|low| (0xDC00..0xE000).contains(&low));
                            if low_follows {
                                out.extend_from_slice(&bytes[i..i + 12]);
                                i += 12;
                            } else {
                                out.extend_from_slice(b"\\ufffd");
                                i += 6;
                            }
                        }
                        Some(unit) if (0xDC00..0xE000).contains(&unit) => {
                            out.extend_from_slice(b"\\ufffd");
                            i += 6;
                        }
                        Some(_) => {
                            out.extend_from_slice(&bytes[i..i + 6]);
                            i += 6;
                        }
                        None => {
                            out.extend_from_slice(&bytes[i..i + 2]);
                            i += 2;
                        }
                    }
                } else if i + 1 < bytes.len() {
                    // Any other escape: copy it whole, so an escaped quote does not end the string.
                    out.push(byte);
                    out.push(bytes[i + 1]);
                    i += 2;
                } else {
                    out.push(byte);
                    i += 1;
                }
            }
            _ => {
                out.push(byte);
                i += 1;
            }
        }
    }
    match String::from_utf8(out) {
        Ok(fixed) => fixed,
        Err(err) => String::from_utf8_lossy(err.as_bytes()).into_owned(),
    }
}
