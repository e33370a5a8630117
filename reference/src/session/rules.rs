//! The per-profile rules of the SessionManager (000 "SessionManager", "Persistence
//! guarantees"; 002 "SessionManager API"; 003 "Lazy persistence", "Tree navigation").

use crate::ids::{uuid, IdSource};
use crate::model::Profile;

/// What differs between profiles in creating, writing and branching a session.
// Each flag is one rule of one implementation, named after it; enums would only rename them.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// A new session's id, from the id source and the time of creation: a UUIDv7 (pi;
    /// 003 "<uuid>", silent on the version) or 16 hex digits (omp 13.19.0).
    pub new_session_id: fn(&mut dyn IdSource, i64) -> String,
    /// A new session file's name from the header's ISO time and the session id.
    pub file_name: fn(&str, &str) -> String,
    /// Opening a file that does not exist writes the new session to it at once (omp);
    /// else it waits for the first assistant message, as a new session does.
    pub writes_missing_file_on_open: bool,
    /// A loaded file takes every append at once (omp); else appends wait for the first
    /// assistant message, as in a new session (pi; 003 "Lazy persistence").
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
}

/// What a fork's header names as its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForkParent {
    /// The source file's path (pi; 003 is silent: as pi).
    SourcePath,
    /// The source session's id, and the fork keeps the source's `title` (omp 13.19.0
    /// `forkFrom`, `fork`).
    SourceId,
}

impl Rules {
    /// The rules of `profile`. Where 003 is silent, operator follows pi.
    /// Clauses: persistence.2.
    pub fn for_profile(profile: Profile) -> Rules {
        let omp = profile == Profile::Omp;
        Rules {
            new_session_id: if omp { hex_session_id } else { uuid },
            file_name: if profile == Profile::Operator {
                micro_file_name
            } else {
                iso_file_name
            },
            writes_missing_file_on_open: omp,
            appends_to_loaded_file_at_once: omp,
            queues_writes: omp,
            prepares_entries: omp,
            fork_parent: if omp {
                ForkParent::SourceId
            } else {
                ForkParent::SourcePath
            },
            branch_appends_leaf_entry: profile == Profile::Operator,
        }
    }
}

/// 16 lowercase hex digits (omp 13.19.0's `Snowflake`-free session ids).
fn hex_session_id(source: &mut dyn IdSource, _now_ms: i64) -> String {
    format!("{:016x}", source.next_u64())
}

/// `<ISO time with ':' and '.' as '-'>_<id>.jsonl` (000 "Default session file location").
/// Clauses: format.15.
pub fn iso_file_name(timestamp: &str, id: &str) -> String {
    format!("{}_{id}.jsonl", timestamp.replace([':', '.'], "-"))
}

/// `<YYYY-MM-DDTHH-MM-SS-ffffff>_<uuid>.jsonl` (003 "Session directory layout"): the
/// header's time to the microsecond (the clock keeps milliseconds: three zeros follow).
fn micro_file_name(timestamp: &str, id: &str) -> String {
    let seconds: String = timestamp.chars().take(19).collect();
    let millis: String = timestamp
        .get(20..23)
        .filter(|m| m.bytes().all(|b| b.is_ascii_digit()))
        .unwrap_or("000")
        .to_owned();
    format!("{}-{millis}000_{id}.jsonl", seconds.replace(':', "-"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_file_names_keep_microseconds() {
        assert_eq!(
            micro_file_name("2024-01-15T10:30:00.123Z", "u"),
            "2024-01-15T10-30-00-123000_u.jsonl"
        );
    }
}
