//! The adapter protocol's messages (see `PROTOCOL.md`).

use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

/// The protocol version this runner speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// An operation a case asks for (`PROTOCOL.md` "Operations"). On the wire it is its
/// name (`load`, `branch_summary`), a JSON string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    /// `load`: open a session file.
    Load,
    /// `context`: the context at a leaf.
    Context,
    /// `tree`: the session's tree.
    Tree,
    /// `apply`: a sequence of `SessionManager` calls.
    Apply,
    /// `persist`: append a message and write the file.
    Persist,
    /// `list`: the sessions of a store.
    List,
    /// `recent`: the recent-sessions list (omp only).
    Recent,
    /// `continue`: the session to continue.
    Continue,
    /// `resolve`: a session named by id, prefix or path.
    Resolve,
    /// `history`: the prompt history (omp only).
    History,
    /// `switch`: open, create, fork or switch to a session (breadcrumb, thinking level).
    Switch,
    /// `search`: the session picker's fuzzy search (omp only).
    Search,
    /// `compaction`: the compaction plan at a leaf.
    Compaction,
    /// `branch_summary`: what a branch summary covers.
    BranchSummary,
    /// A name the kit does not know, kept as written: `corpus check` reports a case
    /// that asks for it, and the reference answers it `unsupported`.
    Other(String),
}

impl Operation {
    /// Every operation the kit knows, in the protocol's order.
    pub const ALL: [Operation; 14] = [
        Operation::Load,
        Operation::Context,
        Operation::Tree,
        Operation::Apply,
        Operation::Persist,
        Operation::List,
        Operation::Recent,
        Operation::Continue,
        Operation::Resolve,
        Operation::History,
        Operation::Switch,
        Operation::Search,
        Operation::Compaction,
        Operation::BranchSummary,
    ];

    /// The operation's name on the wire.
    pub fn name(&self) -> &str {
        match self {
            Operation::Load => "load",
            Operation::Context => "context",
            Operation::Tree => "tree",
            Operation::Apply => "apply",
            Operation::Persist => "persist",
            Operation::List => "list",
            Operation::Recent => "recent",
            Operation::Continue => "continue",
            Operation::Resolve => "resolve",
            Operation::History => "history",
            Operation::Switch => "switch",
            Operation::Search => "search",
            Operation::Compaction => "compaction",
            Operation::BranchSummary => "branch_summary",
            Operation::Other(name) => name,
        }
    }

    /// The operation named `name`; [`Operation::Other`] when the kit does not know it.
    pub fn from_name(name: &str) -> Operation {
        Operation::ALL
            .into_iter()
            .find(|op| op.name() == name)
            .unwrap_or_else(|| Operation::Other(name.to_owned()))
    }

    /// Whether the kit knows the operation (it is not [`Operation::Other`]).
    pub fn is_known(&self) -> bool {
        !matches!(self, Operation::Other(_))
    }

    /// Whether only the `omp` profile has it (pi-mono has no recent list, no prompt
    /// history, and a picker search of its own).
    pub fn is_omp_only(&self) -> bool {
        matches!(
            self,
            Operation::Recent | Operation::History | Operation::Search
        )
    }
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl From<&str> for Operation {
    fn from(name: &str) -> Operation {
        Operation::from_name(name)
    }
}

impl PartialEq<str> for Operation {
    fn eq(&self, name: &str) -> bool {
        self.name() == name
    }
}

impl PartialEq<&str> for Operation {
    fn eq(&self, name: &&str) -> bool {
        self.name() == *name
    }
}

impl Serialize for Operation {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Operation {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Operation, D::Error> {
        let name = std::borrow::Cow::<str>::deserialize(deserializer)?;
        Ok(Operation::from_name(&name))
    }
}

/// An optional extra an adapter declares in its hello. On the wire it is its name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Capability {
    /// `diagnostics`: `load` reports `diagnostics` and `migrated`.
    Diagnostics,
    /// `own-file-names`: created file names are not part of the contract; files are
    /// matched by content and role.
    OwnFileNames,
    /// `faults`: the adapter applies a request's `faults` (`PROTOCOL.md` "Faults").
    Faults,
    /// `journal`: in ack mode, the adapter reports the file-system calls the
    /// implementation makes (`PROTOCOL.md` "Journal", `crash --power-loss`).
    Journal,
    /// A name the kit does not know, kept as written (and otherwise ignored).
    Other(String),
}

impl Capability {
    /// The capability's name on the wire.
    pub fn name(&self) -> &str {
        match self {
            Capability::Diagnostics => "diagnostics",
            Capability::OwnFileNames => "own-file-names",
            Capability::Faults => "faults",
            Capability::Journal => "journal",
            Capability::Other(name) => name,
        }
    }

    /// The capability named `name`; [`Capability::Other`] when the kit does not know it.
    pub fn from_name(name: &str) -> Capability {
        [
            Capability::Diagnostics,
            Capability::OwnFileNames,
            Capability::Faults,
            Capability::Journal,
        ]
        .into_iter()
        .find(|c| c.name() == name)
        .unwrap_or_else(|| Capability::Other(name.to_owned()))
    }
}

impl Serialize for Capability {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Capability {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Capability, D::Error> {
        let name = std::borrow::Cow::<str>::deserialize(deserializer)?;
        Ok(Capability::from_name(&name))
    }
}

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
    #[schemars(with = "Vec<String>")]
    pub operations: Vec<Operation>,
    /// Optional extras: `diagnostics` (`load` reports `diagnostics` and `migrated`),
    /// `own-file-names` (created file names are not part of the contract: files are
    /// matched by content and role), `faults` (the adapter applies a request's faults),
    /// `journal` (in ack mode, it reports the file-system calls of an `apply`).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub capabilities: Vec<Capability>,
}

impl Hello {
    /// Whether the adapter supports `op`.
    pub fn supports(&self, op: &Operation) -> bool {
        self.operations.contains(op)
    }

    /// Whether the adapter has capability `cap`.
    pub fn has(&self, cap: &Capability) -> bool {
        self.capabilities.contains(cap)
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
    #[schemars(with = "String")]
    pub op: Operation,
    /// The profile.
    pub profile: String,
    /// The case's working directory (absolute).
    pub dir: String,
    /// The operation's arguments, templates expanded.
    #[schemars(with = "Value")]
    pub args: Args,
    /// The case's faults (`PROTOCOL.md` "Faults"), sent only to an adapter that declares
    /// the `faults` capability; absent when the case has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<crate::faults::Fault>,
}

/// A request's arguments: a JSON value, or, when the runner made them, their JSON
/// text, which is what is sent; the value is then parsed from the text on first use
/// (only the built-in reference, in process, uses it). The runner writes a case's
/// arguments for each request and keeps neither form after it.
#[derive(Debug, Clone)]
pub struct Args(Arc<ArgsForm>);

#[derive(Debug)]
struct ArgsForm {
    value: OnceLock<Value>,
    text: Option<Box<RawValue>>,
}

impl Args {
    /// Arguments given as their JSON text (what the runner sends).
    pub fn from_text(text: Box<RawValue>) -> Args {
        Args(Arc::new(ArgsForm {
            value: OnceLock::new(),
            text: Some(text),
        }))
    }

    /// The length of the JSON text, when the arguments were given as text.
    pub fn text_len(&self) -> Option<usize> {
        self.0.text.as_ref().map(|t| t.get().len())
    }

    /// The arguments' JSON text: as given, or the value's compact text.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        match &self.0.text {
            Some(text) => text.get().into(),
            None => crate::json_writer::compact(self.value()).into(),
        }
    }

    /// The arguments as a value.
    pub fn value(&self) -> &Value {
        self.0.value.get_or_init(|| parse(self.0.text.as_deref()))
    }

    /// The arguments as a value of its own: taken when no other `Args` shares it,
    /// else cloned or parsed from the text. Arguments may carry 500,000-character
    /// strings, and an operation that stores them can then move them.
    pub fn into_value(self) -> Value {
        match Arc::try_unwrap(self.0) {
            Ok(form) => form
                .value
                .into_inner()
                .unwrap_or_else(|| parse(form.text.as_deref())),
            Err(shared) => shared
                .value
                .get()
                .cloned()
                .unwrap_or_else(|| parse(shared.text.as_deref())),
        }
    }
}

/// The value of arguments' JSON text. The text is JSON (a `RawValue` holds nothing
/// else); `null` stands in for the impossible failure.
fn parse(text: Option<&RawValue>) -> Value {
    text.and_then(|t| session_reference::raw::parse_value(t.get()).ok())
        .unwrap_or(Value::Null)
}

impl From<Value> for Args {
    fn from(value: Value) -> Args {
        Args(Arc::new(ArgsForm {
            value: OnceLock::from(value),
            text: None,
        }))
    }
}

impl PartialEq for Args {
    fn eq(&self, other: &Args) -> bool {
        self.value() == other.value()
    }
}

impl Serialize for Args {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0.text {
            Some(text) => text.serialize(serializer),
            None => self.value().serialize(serializer),
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

/// The error kinds of `PROTOCOL.md` "Response": an error is compared with its golden by
/// its kind only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// `not_found`: an entry id given to an operation does not exist.
    NotFound,
    /// `invalid_header`: a file whose header is missing or malformed is refused.
    InvalidHeader,
    /// `invalid_source`: `forkFrom` of an empty, missing or invalid file.
    InvalidSource,
    /// `persistence`: a write failed.
    Persistence,
    /// `invalid_name`: a name that would become part of a file name is refused.
    InvalidName,
    /// `missing_file`: a session file that does not exist is refused.
    MissingFile,
    /// `invalid_line`: a whole file is refused for one bad line.
    InvalidLine,
    /// `exception`: anything else.
    Exception,
}

impl ErrorKind {
    /// Every kind, in `PROTOCOL.md`'s order.
    pub const ALL: [ErrorKind; 8] = [
        ErrorKind::NotFound,
        ErrorKind::InvalidHeader,
        ErrorKind::InvalidSource,
        ErrorKind::Persistence,
        ErrorKind::InvalidName,
        ErrorKind::MissingFile,
        ErrorKind::InvalidLine,
        ErrorKind::Exception,
    ];

    /// The kind's name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "not_found",
            ErrorKind::InvalidHeader => "invalid_header",
            ErrorKind::InvalidSource => "invalid_source",
            ErrorKind::Persistence => "persistence",
            ErrorKind::InvalidName => "invalid_name",
            ErrorKind::MissingFile => "missing_file",
            ErrorKind::InvalidLine => "invalid_line",
            ErrorKind::Exception => "exception",
        }
    }

    /// The kind named `name` on the wire, if it is one.
    pub fn from_name(name: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

/// An error reported by an adapter: compared by `kind` only.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct ErrorObject {
    /// One of `not_found`, `invalid_header`, `invalid_source`, `invalid_name`, `persistence`,
    /// `missing_file`, `invalid_line`, `exception`.
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An operation is its name on the wire, a name the kit does not know included.
    #[test]
    fn operations_are_their_names_on_the_wire() {
        for op in Operation::ALL {
            let text = serde_json::to_string(&op).expect("writes");
            assert_eq!(text, format!("{:?}", op.name()));
            assert_eq!(serde_json::from_str::<Operation>(&text).expect("reads"), op);
            assert!(op.is_known());
        }
        assert_eq!(Operation::from("branch_summary"), Operation::BranchSummary);
        let other: Operation = serde_json::from_str("\"rename\"").expect("reads");
        assert_eq!(other, Operation::Other("rename".into()));
        assert!(!other.is_known());
        assert_eq!(serde_json::to_string(&other).expect("writes"), "\"rename\"");
        assert!(serde_json::from_str::<Operation>("1").is_err());
        let hello: Hello = serde_json::from_str(
            r#"{"implementation":"x","version":"1","profile":"pi","operations":[],"capabilities":["own-file-names","later"]}"#,
        )
        .expect("reads");
        assert!(hello.has(&Capability::OwnFileNames));
        assert!(!hello.has(&Capability::Diagnostics));
        assert_eq!(
            serde_json::to_value(&hello.capabilities).expect("writes"),
            json!(["own-file-names", "later"])
        );
    }

    /// Arguments made from text are sent as that text, byte for byte, and read as the
    /// value it holds; arguments made from a value are sent as the value.
    #[test]
    fn arguments_are_sent_as_their_text_and_read_as_their_value() {
        let text = r#"{"b":1,  "a":[1.50,"x"]}"#;
        let raw = RawValue::from_string(text.to_owned()).expect("JSON");
        let from_text = Args::from_text(raw);
        assert_eq!(
            serde_json::to_string(&from_text).expect("writes"),
            text,
            "sent as given"
        );
        assert_eq!(from_text.value(), &json!({"b": 1, "a": [1.5, "x"]}));
        let from_value = Args::from(json!({"b": 1, "a": [1.5, "x"]}));
        assert_eq!(from_text, from_value);
        assert_eq!(from_text.text(), text);
        assert_eq!(from_text.text_len(), Some(text.len()));
        assert_eq!(Args::from(json!(1)).text_len(), None);
        assert_eq!(from_value.text(), r#"{"b":1,"a":[1.5,"x"]}"#);
        assert_eq!(
            serde_json::to_string(&from_value).expect("writes"),
            r#"{"b":1,"a":[1.5,"x"]}"#
        );
    }

    /// Every form of arguments, shared or not, parsed already or not, gives the same
    /// value of its own, and a shared one is left as it was.
    #[test]
    fn arguments_give_their_value_away_in_every_form() {
        let value = json!({"message": {"text": "x"}, "n": [1, 2]});
        let text = || Args::from_text(RawValue::from_string(value.to_string()).expect("JSON"));
        let parsed = text();
        parsed.value();
        let forms = [
            ("text, not shared", text(), false),
            ("text, shared", text(), true),
            ("text parsed, not shared", parsed.clone(), false),
            ("text parsed, shared", parsed, true),
            ("value, not shared", Args::from(value.clone()), false),
            ("value, shared", Args::from(value.clone()), true),
        ];
        for (form, args, shared) in forms {
            let other = shared.then(|| args.clone());
            assert_eq!(args.into_value(), value, "{form}");
            if let Some(other) = other {
                assert_eq!(other.value(), &value, "{form}: the other is left as it was");
            }
        }
    }
}
