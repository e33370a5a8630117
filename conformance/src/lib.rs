//! # session-conformance
//!
//! The conformance kit for the pi/omp JSONL session format: a corpus of cases with
//! goldens, a protocol for talking to any implementation through an adapter
//! executable, and a runner that diffs outputs against the goldens.
//!
//! Modules in reading order: [`protocol`] (the messages), [`corpus`] (cases on
//! disk), [`canonical`] (canonical JSON), [`snapshot`] (the files a case leaves),
//! [`normalize`] (renaming of created ids and times), [`compare`] (values, not
//! spellings; the first difference; aligned ids), [`outcome`] (each case's status and result), [`divergences`] (expected-divergence
//! lists: ids, globs, tags, entry types, signatures),
//! [`execute`] (the reference as an adapter), [`faults`] (storage faults as case data), [`adapter`] (processes),
//! [`runner`] (one case), [`harness`] (a whole run, bless), [`report`] (outputs),
//! [`inspect`] (the `load`/`context`/`tree` commands), [`sessions`] (the `sessions` command over a real store), [`schema`] (JSON Schemas), [`fuzz`] (generated cases, differential testing), [`matrix`] (several runs' reports as one conformance matrix: Markdown and HTML), [`bundle`] (the corpus and schemas the binary carries).
//!
//! ```
//! use session_conformance::canonical::canonical;
//! assert_eq!(canonical(&serde_json::json!({"b": 1, "a": 2})), "{\n  \"a\": 2,\n  \"b\": 1\n}\n");
//! ```
#![deny(missing_docs)]

pub mod adapter;
pub mod affinity;
pub mod allocator;
pub mod answers;
pub mod bundle;
pub mod canonical;
pub mod compare;
pub mod corpus;
pub mod crash;
pub mod divergences;
pub mod execute;
pub mod faults;
pub mod fuzz;
pub mod guard;
pub mod harness;
pub mod inspect;
pub mod json_writer;
pub mod matrix;
pub mod message_types;
pub mod normalize;
pub mod outcome;
pub mod plan;
pub mod protocol;
pub mod read_only;
pub mod report;
pub mod runner;
pub mod schema;
pub mod schema_diff;
pub mod sessions;
pub mod snapshot;
pub mod validate;
