//! # session-reference
//!
//! A minimal, readable reference of the JSONL session format used by the pi family
//! of coding agents (pi-mono and oh-my-pi): sessions stored as an append-only tree.
//!
//! The pipeline, in reading order:
//! 1. [`raw`] reads a JSON object as raw key/value text, so lines round-trip byte for byte;
//! 2. [`model`] names the spec's nouns ([`model::SessionHeader`], [`model::Entry`], [`model::Profile`]);
//! 3. [`parse`] turns bytes into a header, entries and diagnostics, leniently;
//! 4. [`migrate`] brings v1 and v2 files to v3;
//! 5. [`tree`] indexes entries by id and answers tree questions;
//! 6. [`context`] builds what is sent to the model;
//! 7. [`persisted_form`], [`blobs`] and [`storage`] write sessions (the only modules doing IO, with [`session`]);
//! 8. [`session`] is the SessionManager that ties them together;
//! 9. [`locations`], [`listing`], [`recent`], [`search`], [`resume`], [`switching`] and [`history`] find sessions on disk and pick them up again.
//!
//! ```
//! use session_reference::{parse::parse, tree::Tree, context::{build_context, LeafChoice}, model::Profile};
//! let text = concat!(
//!     r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-02-16T10:20:30.000Z","cwd":"/w"}"#, "\n",
//!     r#"{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"2026-02-16T10:21:00.000Z","message":{"role":"user","content":"hi"}}"#, "\n",
//! );
//! let parsed = parse(text.as_bytes(), Profile::Omp);
//! let tree = Tree::new(parsed.entries);
//! let context = build_context(&tree, LeafChoice::Last, Profile::Omp);
//! assert_eq!(context.messages.len(), 1);
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod blobs;
pub mod branch_summary;
pub mod compaction;
pub mod context;
pub mod entries;
#[cfg(feature = "history")]
pub mod history;
pub mod ids;
pub mod listing;
pub mod locations;
pub mod migrate;
pub mod model;
pub mod parse;
pub mod persisted_form;
pub mod raw;
pub mod recent;
pub mod resume;
pub mod search;
pub mod session;
pub mod storage;
pub mod switching;
pub mod tree;
