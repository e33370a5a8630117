//! # session-conformance
//!
//! The conformance kit for the pi/omp JSONL session format, as a library for `cargo test`:
//! a corpus of cases with goldens (carried inside the crate, see [`bundle`]), a protocol
//! for talking to any implementation (an adapter executable, or an [`adapter::Adapter`]
//! in process), and a runner that diffs outputs against the goldens. The command-line
//! program `session-conformance` is the package `session-conformance-cli`; this library
//! has neither clap nor a C dependency (the reference's SQLite prompt history is the
//! `history` feature, off by default).
//!
//! Modules in reading order: [`protocol`] (the messages), [`corpus`] (cases on
//! disk), [`canonical`] (canonical JSON), [`snapshot`] (the files a case leaves),
//! [`names`] (created file names and session ids in the profile's form, checked before
//! normalisation), [`normalize`] (renaming of created ids and times), [`compare`] (values, not
//! spellings; the first difference; aligned ids), [`outcome`] (each case's status and
//! result), [`divergences`] (expected-divergence lists: ids, globs, tags, entry types,
//! signatures), [`execute`] (the reference as an adapter), [`faults`] (storage faults as
//! case data), [`adapter`] (processes), [`runner`] (one case), [`harness`] (a whole run,
//! bless), [`trials`] (the corpus as libtest trials, one per case), [`typed`] (an
//! implementation in process, with typed methods), [`watch`] (a panic or a hang of an
//! adapter contained to its case), [`report`] (outputs), [`schema`] (JSON
//! Schemas), [`bundle`] (the corpus and schemas the crate carries).
//!
//! ```
//! use session_conformance::canonical::canonical;
//! assert_eq!(canonical(&serde_json::json!({"b": 1, "a": 2})), "{\n  \"a\": 2,\n  \"b\": 1\n}\n");
//! ```
#![deny(missing_docs)]

pub mod adapter;
pub mod affinity;
pub mod answers;
pub mod bundle;
pub mod canonical;
pub mod compare;
pub mod corpus;
pub mod divergences;
pub mod execute;
pub mod faults;
pub mod guard;
pub mod harness;
pub mod json_writer;
pub mod message_types;
pub mod names;
pub mod normalize;
pub mod outcome;
pub mod protocol;
pub mod read_only;
pub mod report;
pub mod runner;
pub mod schema;
pub mod snapshot;
pub mod trials;
pub mod typed;
pub mod watch;

pub use adapter::Adapter;
pub use harness::Harness;
pub use outcome::{CaseResult, ProfileRun, Status};
pub use session_reference::model::Profile;

/// The corpus this crate carries, unpacked on first use into a cache folder
/// ([`bundle::unpacked`]): the folder of its cases, for [`Harness::new`].
pub fn corpus_dir() -> Result<std::path::PathBuf, bundle::BundleError> {
    bundle::unpacked().map(|dir| dir.join("cases"))
}
