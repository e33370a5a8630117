//! # session-conformance-cli
//!
//! The command-line program `session-conformance` (its commands are `src/commands/`, one
//! file each) and the tools behind the commands that an implementer's test does not need:
//! [`inspect`] (the `load`/`context`/`tree` commands), [`plan`] (the `compaction`
//! command), [`sessions`] (the `sessions` command over a real store), [`validate`] (session
//! files against the schemas), [`schema_diff`] (`schema diff`), [`fuzz`] (generated cases,
//! differential testing), [`crash`] (kill -9 and power-loss trials), [`matrix`] (several
//! runs' reports as one conformance matrix), [`spec_sections`] (each clause's cases and
//! listed divergences, written into the specification) and [`allocator`] (mimalloc's
//! settings).
//!
//! The harness itself (corpus, protocol, runner, reports) is the library
//! `session-conformance`, which a Rust implementation adds as its one dev-dependency.
#![deny(missing_docs)]

pub mod allocator;
pub mod crash;
pub mod fuzz;
pub mod inspect;
pub mod matrix;
pub mod plan;
pub mod schema_diff;
pub mod sessions;
pub mod spec_sections;
pub mod validate;
