//! The SessionManager: open, append, branch, write (000 "SessionManager", "Persistence guarantees"; 002 "SessionManager API"; pi-mono §4, §6).
//!
//! Invariants:
//! - Every append creates exactly one entry whose parent is the leaf; it becomes the leaf.
//! - Nothing is written before the first assistant message (except: omp appends at
//!   once to a file it loaded); then the whole session, then one line per append.
//! - Nothing is lost. A file with no readable header is kept beside the new one as
//!   `NAME.corrupt-<time>`; a migration that would drop unreadable lines keeps the
//!   original as `NAME.pre-migration-<time>`; an append after a torn or
//!   newline-less last line starts on a new line; a header is never written twice.
//! - A write error is latched: every later append or flush returns it.

use std::borrow::Cow;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::context::{build_context, Context, LeafChoice};
use crate::ids::{Clock, IdSource, RandomIds, SystemClock};
use crate::migrate::Step;
use crate::model::{Entry, Profile, SessionHeader};
use crate::parse::{self, Diagnostic, HeaderError};
use crate::persisted_form::{resolve_blobs, PendingBlob};
use crate::storage::{FileStorage, Storage, Writer};
use crate::tree::{NotFound, Tree, TreeNode};
use crate::{blobs, raw};

/// How a session manager is set up.
pub struct Options {
    /// The profile.
    pub profile: Profile,
    /// The working directory recorded in new headers.
    pub cwd: String,
    /// Where new session files are created.
    pub session_dir: PathBuf,
    /// The blob store directory (omp).
    pub blob_dir: PathBuf,
    /// The filesystem.
    pub storage: Box<dyn Storage>,
    /// The id source.
    pub ids: Box<dyn IdSource>,
    /// The clock.
    pub clock: Box<dyn Clock>,
    /// `fsync` after every append, not only on [`SessionManager::flush`].
    pub fsync_appends: bool,
}

impl Options {
    /// Real files, random ids and the system clock; blobs under `$HOME/.omp/agent/blobs`.
    pub fn new(
        profile: Profile,
        cwd: impl Into<String>,
        session_dir: impl Into<PathBuf>,
    ) -> Options {
        let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
        Options {
            profile,
            cwd: cwd.into(),
            session_dir: session_dir.into(),
            blob_dir: home.join(".omp/agent/blobs"),
            storage: Box::new(FileStorage),
            ids: Box::new(RandomIds::default()),
            clock: Box::new(SystemClock),
            fsync_appends: false,
        }
    }
}

/// Errors of session operations.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionError {
    /// An entry id that does not exist.
    NotFound(String),
    /// A file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's message.
        message: String,
    },
    /// `fork_from` of a file that is missing, empty or has no valid header.
    InvalidSource(PathBuf),
    /// A name from data that is refused as part of a file name (a `newSession` id that
    /// is not a plain word, [`is_safe_id`]): nothing is written outside its folder.
    InvalidName(String),
    /// A write failed; latched and returned by every later operation.
    Persistence {
        /// The session file.
        path: PathBuf,
        /// The first error's message.
        message: String,
    },
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionError::NotFound(id) => write!(f, "Entry {id} not found"),
            SessionError::Io { path, message } => write!(f, "{}: {message}", path.display()),
            SessionError::InvalidSource(path) => write!(
                f,
                "Cannot fork: source session file is empty or invalid: {}",
                path.display()
            ),
            SessionError::Persistence { path, message } => {
                write!(f, "{}: write failed: {message}", path.display())
            }
            SessionError::InvalidName(name) => write!(
                f,
                "{name:?} cannot name a session file: ASCII letters and digits, with '.', '_' \
                 and '-' inside"
            ),
        }
    }
}

impl std::error::Error for SessionError {}

impl From<NotFound> for SessionError {
    fn from(e: NotFound) -> Self {
        SessionError::NotFound(e.0)
    }
}

/// What happened when a file was opened.
#[derive(Debug, Clone, Default)]
pub struct LoadReport {
    /// Skipped or repaired lines (the first [`crate::parse::MAX_LISTED_DIAGNOSTICS`]).
    pub diagnostics: Vec<Diagnostic>,
    /// The diagnostics past those, counted by kind.
    pub unlisted: crate::parse::Unlisted,
    /// Why the header was rejected, when it was (the file was replaced by a new session).
    pub header_error: Option<HeaderError>,
    /// Migration steps that ran (the file was rewritten).
    pub migrated: Vec<Step>,
    /// Where the original bytes were kept, when a rewrite or replacement would have lost them.
    pub preserved: Option<PathBuf>,
}

/// What is already in the file.
#[derive(Debug, Clone, Copy, Default)]
struct OnDisk {
    header: bool,
    entries: usize,
    needs_newline: bool,
}

/// A session: header, entry tree, leaf, and the file it persists to.
pub struct SessionManager {
    profile: Profile,
    storage: Box<dyn Storage>,
    ids: Box<dyn IdSource>,
    clock: Box<dyn Clock>,
    cwd: String,
    session_dir: PathBuf,
    blob_dir: PathBuf,
    fsync_appends: bool,
    file: Option<PathBuf>,
    header: SessionHeader,
    tree: Tree,
    on_disk: OnDisk,
    has_assistant: bool,
    pending_blobs: Vec<PendingBlob>,
    persist_error: Option<SessionError>,
    writer: Option<(PathBuf, Box<dyn Writer>)>,
    report: LoadReport,
}

impl SessionManager {
    /// The profile.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The header.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.header.id
    }

    /// The working directory.
    pub fn cwd(&self) -> &str {
        &self.cwd
    }

    /// The session file (`None` in memory).
    pub fn session_file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// What happened on open.
    pub fn report(&self) -> &LoadReport {
        &self.report
    }

    /// All entries in order (duplicates included), as stored (blob refs unresolved).
    /// Clauses: tree.10.
    pub fn entries(&self) -> &[Entry] {
        self.tree.entries()
    }

    /// The leaf id.
    pub fn leaf_id(&self) -> Option<&str> {
        self.tree.leaf()
    }

    /// The entry with `id`.
    /// Clauses: tree.10.
    pub fn get_entry(&self, id: &str) -> Option<&Entry> {
        self.tree.get(id)
    }

    /// Children of `parent` (`None`: the `parentId:null` roots).
    /// Clauses: tree.9.
    pub fn get_children(&self, parent: Option<&str>) -> Vec<&Entry> {
        self.tree.children(parent)
    }

    /// The root→`from` path (default: the leaf).
    /// Clauses: tree.10.
    pub fn get_branch(&self, from: Option<&str>) -> Vec<&Entry> {
        self.tree.branch_path(from)
    }

    /// The tree, flat, in pre-order.
    /// Clauses: tree.10.
    pub fn get_tree(&self) -> Vec<TreeNode<'_>> {
        self.tree.tree()
    }

    /// The current label of `id`.
    /// Clauses: tree.10.
    pub fn get_label(&self, id: &str) -> Option<&str> {
        self.tree.label(id)
    }

    /// The context at the leaf (`None` leaf: the empty context).
    pub fn build_context(&self) -> Context<'_> {
        let leaf = self.tree.leaf().map_or(LeafChoice::Null, LeafChoice::Id);
        build_context(&self.tree, leaf, self.profile)
    }

    /// The context for `leaf`, blob references in its messages resolved (omp), as a reader sees it.
    pub fn context(&self, leaf: LeafChoice<'_>) -> Context<'_> {
        let mut context = build_context(&self.tree, leaf, self.profile);
        if parse::Rules::for_profile(self.profile).has_blob_refs {
            for message in &mut context.messages {
                if message.get().contains(blobs::BLOB_PREFIX) {
                    let mut value = raw::parse_value(message.get()).unwrap_or(Value::Null);
                    resolve_blobs(&mut value, self.storage.as_ref(), &self.blob_dir);
                    *message = Cow::Owned(raw::to_raw(&value));
                }
            }
        }
        context
    }

    /// [`SessionManager::context`] as a JSON value (read as `JSON.parse` reads it).
    pub fn context_json(&self, leaf: LeafChoice<'_>) -> Value {
        let text = serde_json::to_string(&self.context(leaf)).unwrap_or_default();
        raw::parse_value(&text).unwrap_or(Value::Null)
    }

    /// An entry's JSON with blob references resolved (omp), as a reader sees it.
    pub fn resolved(&self, entry: &Entry) -> Value {
        let mut value: Value = raw::parse_value(entry.raw.get()).unwrap_or(Value::Null);
        if parse::Rules::for_profile(self.profile).has_blob_refs
            && entry.raw.get().contains(blobs::BLOB_PREFIX)
        {
            resolve_blobs(&mut value, self.storage.as_ref(), &self.blob_dir);
        }
        value
    }
}

mod append;
mod branch;
mod open;
mod rewrite;
mod rules;
mod write;

pub use rewrite::{is_safe_id, NewSession};
pub use rules::{iso_file_name, ForkParent, Rules};

#[cfg(test)]
mod tests;
