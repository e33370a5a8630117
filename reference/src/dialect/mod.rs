//! What differs between the format's dialects, in one value per dialect.
//!
//! The shared machinery (parse, session, context, listing, resume, store) asks the
//! [`Dialect`] of its [`Profile`] and never matches on the profile itself. Each
//! dialect's module reads top to bottom against its document: [`pi`] against
//! pi-mono 0.73.1 and document 002, [`omp`] against document 000, [`operator`]
//! against document 003. A new dialect is
//! one more module and one more arm in [`Profile::dialect`].

use std::path::{Path, PathBuf};

use serde_json::value::RawValue;

use crate::ids::IdSource;
use crate::listing::SessionInfo;
use crate::model::{Entry, Profile};

pub mod omp;
pub mod operator;
pub mod pi;

/// Everything a dialect decides. Fields are grouped by the part of the spec they belong to.
#[allow(clippy::struct_excessive_bools)] // each flag is one rule of a document, named as such
pub struct Dialect {
    // ----- Format (000 "Session header", "Entry types"; 003 "Storage format") -----
    /// The names of keys and types: camelCase (000, 002) or the dialect's own (003),
    /// whether the header is versioned, and the type of a durable `leaf` entry.
    pub keys: &'static Keys,

    // ----- Loading (000 "Loading and compatibility") -----
    /// A line holding one JSON value followed by more text keeps the value (omp: Bun's
    /// JSONL reader), else the line is skipped (pi: `JSON.parse` of the line).
    pub keeps_value_before_trailing_data: bool,
    /// Image data may be a `blob:sha256:` reference: checked on load, resolved when
    /// read, and written out of the line on append (000 "Truncation and blob externalization").
    pub has_blob_refs: bool,

    // ----- Writing (000 "SessionManager", "Persistence guarantees") -----
    /// A new session's id, from the id source and the time of creation.
    pub new_session_id: fn(&mut dyn IdSource, i64) -> String,
    /// Opening a file that does not exist writes the new session to it at once (omp);
    /// else it waits for the first assistant message, as a new session does.
    pub writes_missing_file_on_open: bool,
    /// A loaded file takes every append at once (omp); else appends wait for the first
    /// assistant message, as in a new session (pi).
    pub appends_to_loaded_file_at_once: bool,
    /// Appends queue their writes and return first (omp: `#persistChain`), so a write that
    /// fails is latched and seen by the *next* operation; else the append that wrote
    /// returns the error itself (pi: `appendFileSync` throws) (000 "Persistence guarantees").
    pub queues_writes: bool,
    /// Entries are prepared before they are written: long strings truncated,
    /// transient fields dropped, images externalised (omp K).
    pub prepares_entries: bool,
    /// What a forked session's `parentSession` holds.
    pub fork_parent: ForkParent,
    /// `branch(id)` appends a durable `leaf` entry pointing at `id` (003), rather than
    /// only moving the leaf in memory.
    pub branch_appends_leaf_entry: bool,
    /// A new session file's name from the header's ISO time and the session id.
    pub file_name: fn(&str, &str) -> String,

    // ----- Context (000 "Context reconstruction") -----
    /// The fields of a `custom_message` entry copied into its context message, after `role`.
    pub custom_message_fields: &'static [&'static str],
    /// The fields of a compaction copied into its summary message, after `role`.
    pub compaction_summary_fields: &'static [&'static str],
    /// The fields of a branch summary copied into its message, after `role`.
    pub branch_summary_fields: &'static [&'static str],
    /// `custom_message` entries join the context (000, 002); 003 lists only messages and branch entries.
    pub custom_messages_in_context: bool,
    /// The context's fields after `messages`, in the dialect's order.
    pub settings: fn(&[&Entry]) -> Settings,
    /// [`Dialect::settings`] scans every entry in file order (003 step 1), else the path.
    pub settings_over_all_entries: bool,
    /// A leaf id that names no entry gives the empty path (003 `get_branch`), rather
    /// than falling back to the last entry.
    pub unknown_leaf_is_empty: bool,

    // ----- Store, listing and resume (001) -----
    /// The agent directory: from `$PI_CODING_AGENT_DIR` when set (`Some`), else the default under the home.
    pub agent_dir: fn(Option<&str>, &Path, &Env<'_>) -> PathBuf,
    /// Every project's sessions share `<agent>/sessions/` (003), told apart by the
    /// header's `cwd`; else each project has `sessions/--<cwd-encoded>--/`.
    pub flat_sessions: bool,
    /// A listed session needs a non-empty header id (omp).
    pub lists_need_header_id: bool,
    /// A `message` entry without a truthy `message` is counted (pi) or passed over (omp).
    pub counts_empty_messages: bool,
    /// Sessions without messages are listed (pi) or dropped (omp, seed 001).
    pub lists_sessions_without_messages: bool,
    /// Fills in a listed session's `title`, `name` and `modified` once its lines are read:
    /// `(info, the last user or assistant message time, the latest compaction's shortSummary)`.
    pub finish_info: fn(&mut SessionInfo, Option<f64>, Option<serde_json::Value>),
    /// How `--continue` reads a file's header: the first line of this many bytes, strictly
    /// (pi), or the first readable line (omp).
    pub header_window: usize,
    /// Whether the header must be the very first line of the window.
    pub header_on_first_line: bool,
    /// A forced session directory keeps `--resume` from searching other projects (omp).
    pub session_dir_is_the_only_scope: bool,
    /// A global match asks to fork only when its cwd differs (omp); else always (pi).
    pub forks_only_from_other_cwd: bool,
    /// `--continue` prefers this terminal's breadcrumb (omp).
    pub uses_breadcrumbs: bool,
    /// The message of a `--resume` value that matched nothing.
    pub not_found: fn(&str) -> String,
    /// What a refused fork prints, and whether it is an error: `(value, cwd)`.
    pub refused_fork: fn(&str, &str) -> (String, bool),
    /// `--resume` without a value stops with `No sessions found` on an empty list (omp);
    /// else the picker opens, empty or not (pi).
    pub picker_stops_when_empty: bool,
    /// The settings' default thinking level (`defaultThinkingLevel`) a session switch
    /// records when the branch has none (001 step 14).
    pub default_thinking_level: &'static str,
    /// A switch records the thinking level only when the session has messages (pi-mono's
    /// `createAgentSession`); else whenever the branch has no `thinking_level_change` (omp, 001).
    pub thinking_level_needs_messages: bool,
}

/// What a fork's header names as its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForkParent {
    /// The source file's path (pi).
    SourcePath,
    /// The source session's id, and the fork keeps the source's `title` (omp 13.19.0
    /// `forkFrom`, `fork`).
    SourceId,
}

/// The names a dialect gives to the keys and entry types the session layer reads and
/// writes. The shared code speaks the camelCase names of documents 000 and 002;
/// [`Keys::name`] turns one into the dialect's own.
#[derive(Debug)]
pub struct Keys {
    /// `(camelCase name, the dialect's name)` for every key and type named differently.
    pub renames: &'static [(&'static str, &'static str)],
    /// The header carries a `version` and older files are migrated (000, 002); else
    /// every file is read as the current version (003 has no `version`).
    pub versioned: bool,
    /// The type of a durable navigation entry, whose target becomes the leaf (003 `LeafEntry`).
    pub leaf_type: Option<&'static str>,
}

impl Keys {
    /// The names of documents 000 and 002.
    pub const CAMEL: Keys = Keys {
        renames: &[],
        versioned: true,
        leaf_type: None,
    };

    /// The dialect's name for the camelCase key or type `camel`.
    pub fn name<'a>(&self, camel: &'a str) -> &'a str {
        self.renames
            .iter()
            .find(|(from, _)| *from == camel)
            .map_or(camel, |(_, to)| to)
    }

    /// The camelCase name of the dialect's key or type `name`; `None` when `name` is
    /// a camelCase name the dialect spells otherwise (a foreign key or type).
    pub fn camel<'a>(&self, name: &'a str) -> Option<&'a str> {
        if let Some((from, _)) = self.renames.iter().find(|(_, to)| *to == name) {
            return Some(from);
        }
        (!self.renames.iter().any(|(from, _)| *from == name)).then_some(name)
    }
}

impl Profile {
    /// The dialect of this profile.
    pub fn dialect(self) -> &'static Dialect {
        match self {
            Profile::Pi => &pi::PI,
            Profile::Omp => &omp::OMP,
            Profile::Operator => &operator::OPERATOR,
        }
    }
}

/// A context's fields after `messages`: `(name, JSON value)` in the dialect's order.
pub type Settings = Vec<(&'static str, Box<RawValue>)>;

/// Reads an environment variable.
pub type Env<'a> = dyn Fn(&str) -> Option<String> + 'a;

/// `<ISO time with ':' and '.' as '-'>_<id>.jsonl` (000 "Default session file location").
pub fn iso_file_name(timestamp: &str, id: &str) -> String {
    format!("{}_{id}.jsonl", timestamp.replace([':', '.'], "-"))
}
