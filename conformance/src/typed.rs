//! A typed way in for a Rust implementation: implement [`Implementation`] (one method
//! per operation, typed arguments and outputs, each defaulting to "not offered") and
//! hand [`Typed`] to the harness. The protocol's dispatch (argument names, output shapes,
//! error kinds, the hello) is written here once, so a port writes only the mapping onto
//! its own API.
//!
//! ```
//! use std::path::Path;
//! use serde_json::json;
//! use session_conformance::typed::{Call, Implementation, Leaf, Loaded, OpError, Outcome};
//! use session_conformance::protocol::Operation;
//! use session_conformance::Profile;
//!
//! /// A port that offers `load` only, and loads every file as an empty session.
//! struct Empty;
//!
//! impl Implementation for Empty {
//!     fn name(&self) -> (String, String) {
//!         ("empty".into(), "0.1.0".into())
//!     }
//!     fn profile(&self) -> Profile {
//!         Profile::Pi
//!     }
//!     fn operations(&self) -> Vec<Operation> {
//!         vec![Operation::Load]
//!     }
//!     fn load(&mut self, _call: &Call, _file: &Path) -> Outcome<Loaded> {
//!         Ok(Loaded { header: None, entries: vec![], leaf_id: None })
//!     }
//! }
//! let adapter = session_conformance::typed::Typed::new(Empty);
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};
use session_reference::model::Profile;

use crate::adapter::{Adapter, Failure};
pub use crate::protocol::ErrorKind;
use crate::protocol::{Capability, Hello, Operation, Request, Response};

/// What a typed operation returns: its output, or why there is none.
pub type Outcome<T> = Result<T, OpError>;

/// Why an operation has no output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpError {
    /// The implementation does not offer the operation (the case is skipped, never passed).
    Unsupported,
    /// The implementation answered with an error.
    Failed {
        /// Its kind, which is what the golden compares.
        kind: ErrorKind,
        /// For people.
        message: String,
    },
}

impl OpError {
    /// An error of `kind` with a message for people.
    pub fn new(kind: ErrorKind, message: impl fmt::Display) -> OpError {
        OpError::Failed {
            kind,
            message: message.to_string(),
        }
    }
}

/// The case a call belongs to: its folder, which stands for the working directory and
/// holds the case's input files (`PROTOCOL.md` "Request"). Calls of several cases run
/// at once, on several threads: resolve names against [`Call::path`], never `chdir`.
#[derive(Debug, Clone)]
pub struct Call {
    /// The case's folder (absolute).
    pub dir: PathBuf,
    /// The operation's arguments as sent, for what the typed methods do not carry.
    pub args: Value,
}

impl Call {
    /// A file name of the arguments, inside the case's folder.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The session directory new sessions are created in: `dir/sessions`.
    pub fn sessions_dir(&self) -> PathBuf {
        self.dir.join("sessions")
    }

    /// The user's home directory: `dir/home`.
    pub fn home(&self) -> PathBuf {
        self.dir.join("home")
    }
}

/// Which leaf `context` builds at (`PROTOCOL.md` "context").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Leaf {
    /// The session's own leaf after load (`leafId` absent).
    Own,
    /// `null`: the leaf is null.
    Null,
    /// An id, passed as given (an unknown id falls back to the last entry).
    Id(String),
}

/// `load`'s output: the session as the implementation holds it after loading.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Loaded {
    /// The header, `None` when there is none.
    pub header: Option<Value>,
    /// The entries as held in memory (after migration, blob refs resolved), each as
    /// the JSON the implementation writes (`serde_json::to_value` of its entry type).
    pub entries: Vec<Value>,
    /// The leaf, `None` when it is null.
    pub leaf_id: Option<String>,
}

/// One node of `tree`'s output, in pre-order. Its fields are strings: a port whose
/// entries may carry a number as `parentId` or `label` (two cases write them so, and pi
/// reports them as written) answers `tree` through [`Implementation::other`] instead.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TreeNode {
    /// The entry's id.
    pub id: String,
    /// Its parent's id, `None` for a root.
    pub parent_id: Option<String>,
    /// The entry's type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its label, `None` when it has none.
    pub label: Option<String>,
    /// Its children's ids, in `getTree()`'s order.
    pub children: Vec<String>,
}

/// A session implementation under test, in process. Each operation's method defaults to
/// [`OpError::Unsupported`]; [`Implementation::operations`] names those it offers. The
/// operations without a typed method here (`apply`, `persist`, the stores, compaction
/// planning) go through [`Implementation::other`] with their arguments as JSON.
pub trait Implementation: Send {
    /// The implementation's name and version, for reports.
    fn name(&self) -> (String, String);
    /// The profile it implements.
    fn profile(&self) -> Profile;
    /// The operations it offers (the hello's `operations`).
    fn operations(&self) -> Vec<Operation>;
    /// Its capabilities (`PROTOCOL.md` "Hello"); none by default.
    fn capabilities(&self) -> Vec<Capability> {
        Vec::new()
    }
    /// `load`: open `file` as the session manager does when a user resumes it.
    fn load(&mut self, call: &Call, file: &Path) -> Outcome<Loaded> {
        let _ = (call, file);
        Err(OpError::Unsupported)
    }
    /// `context`: load `file`, then build the context at `leaf`; the context object as
    /// the implementation returns it (`serde_json::to_value` of it).
    fn context(&mut self, call: &Call, file: &Path, leaf: Leaf) -> Outcome<Value> {
        let _ = (call, file, leaf);
        Err(OpError::Unsupported)
    }
    /// `tree`: load `file`; its tree's nodes in pre-order.
    fn tree(&mut self, call: &Call, file: &Path) -> Outcome<Vec<TreeNode>> {
        let _ = (call, file);
        Err(OpError::Unsupported)
    }
    /// Any other operation, its arguments in [`Call::args`] (`PROTOCOL.md` "Operations").
    fn other(&mut self, call: &Call, op: &Operation) -> Outcome<Value> {
        let _ = (call, op);
        Err(OpError::Unsupported)
    }
}

/// An [`Implementation`] as an [`Adapter`]: the protocol's dispatch, once.
pub struct Typed<T> {
    inner: T,
}

impl<T: Implementation> Typed<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> Typed<T> {
        Typed { inner }
    }

    fn dispatch(&mut self, request: &Request) -> Outcome<Value> {
        let args = request.args.value().clone();
        let call = Call {
            dir: PathBuf::from(&request.dir),
            args,
        };
        let file = || match call.args["file"].as_str() {
            Some(name) => Ok(call.path(name)),
            None => Err(OpError::new(
                ErrorKind::Exception,
                "args.file is not a string",
            )),
        };
        match request.op {
            Operation::Load => to_json(&self.inner.load(&call, &file()?)?),
            Operation::Context => {
                let leaf = match call.args.get("leafId") {
                    None => Leaf::Own,
                    Some(Value::String(id)) => Leaf::Id(id.clone()),
                    Some(_) => Leaf::Null,
                };
                self.inner.context(&call, &file()?, leaf)
            }
            Operation::Tree => {
                let nodes = self.inner.tree(&call, &file()?)?;
                Ok(json!({ "nodes": to_json(&nodes)? }))
            }
            ref op => self.inner.other(&call, op),
        }
    }
}

fn to_json(value: &impl Serialize) -> Outcome<Value> {
    serde_json::to_value(value).map_err(|e| OpError::new(ErrorKind::Exception, e))
}

impl<T: Implementation> Adapter for Typed<T> {
    fn hello(&mut self) -> Result<Hello, Failure> {
        let (implementation, version) = self.inner.name();
        Ok(Hello {
            kind: "hello".into(),
            implementation,
            version,
            profile: self.inner.profile().name().into(),
            operations: self.inner.operations(),
            capabilities: self.inner.capabilities(),
        })
    }

    /// An output of more than [`crate::guard::MAX_MESSAGE_VALUES`] values is a protocol
    /// error, as an adapter process's answer is: the runner's work on an output (its
    /// canonical text, a diff) grows with its values.
    fn call(&mut self, request: &Request, _timeout: Duration) -> Result<Response, Failure> {
        let case = request.case.as_str();
        Ok(match self.dispatch(request) {
            Ok(value) if more_values(&value, crate::guard::MAX_MESSAGE_VALUES) => {
                return Err(Failure::Protocol(format!(
                    "response holds more than {} JSON values, the limit (guard::MAX_MESSAGE_VALUES)",
                    crate::guard::MAX_MESSAGE_VALUES
                )));
            }
            Ok(value) => Response::ok(case, value),
            Err(OpError::Unsupported) => Response::unsupported(case),
            Err(OpError::Failed { kind, message }) => Response::error(case, kind.name(), message),
        })
    }
}

/// Whether `value` holds more than `limit` values (itself, and each element and member,
/// all the way down). Counted without recursion, and only up to the limit.
fn more_values(value: &Value, limit: usize) -> bool {
    let mut stack = vec![value];
    let mut count = 0usize;
    while let Some(value) = stack.pop() {
        count += 1;
        if count > limit {
            return true;
        }
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
    false
}
