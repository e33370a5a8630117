//! JSON Schemas of the corpus case file and the adapter protocol, generated from the Rust types (`schemas/`).
//!
//! Invariant: the committed files equal what [`generate`] returns; a test fails
//! when they drift and prints the command that regenerates them.

use std::fs;
use std::path::{Path, PathBuf};

use schemars::gen::SchemaSettings;
use schemars::JsonSchema;

use crate::corpus::CaseFile;
use crate::protocol::{Hello, Request, Response, RunnerHello};

/// The base of every schema's `$id`.
pub const ID_BASE: &str = "https://session-conformance.dev/schemas/";

/// Every generated schema: path under `schemas/` and its canonical text.
pub fn generate() -> Vec<(PathBuf, String)> {
    vec![
        one::<CaseFile>(
            "corpus/case.schema.json",
            "A corpus case (corpus/README.md)",
        ),
        one::<RunnerHello>(
            "protocol/runner-hello.schema.json",
            "The runner's first message to an adapter (PROTOCOL.md)",
        ),
        one::<Hello>(
            "protocol/hello.schema.json",
            "An adapter's hello (PROTOCOL.md)",
        ),
        one::<Request>(
            "protocol/request.schema.json",
            "One case sent to an adapter (PROTOCOL.md)",
        ),
        one::<Response>(
            "protocol/response.schema.json",
            "An adapter's answer to a request (PROTOCOL.md)",
        ),
    ]
}

fn one<T: JsonSchema>(path: &str, title: &str) -> (PathBuf, String) {
    let generator = SchemaSettings::draft2019_09().into_generator();
    let mut schema =
        serde_json::to_value(generator.into_root_schema_for::<T>()).unwrap_or_default();
    if let Some(object) = schema.as_object_mut() {
        object.insert("$id".into(), format!("{ID_BASE}{path}").into());
        object.insert("title".into(), title.into());
    }
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    (PathBuf::from(path), text)
}

/// Writes every schema under `root`; returns the paths written.
pub fn write(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for (path, text) in generate() {
        let full = root.join(&path);
        if fs::read_to_string(&full).ok().as_deref() != Some(text.as_str()) {
            if let Some(dir) = full.parent() {
                fs::create_dir_all(dir)?;
            }
            fs::write(&full, text)?;
            written.push(full);
        }
    }
    Ok(written)
}

/// The schemas under `root` that differ from the generated ones.
pub fn stale(root: &Path) -> Vec<PathBuf> {
    generate()
        .into_iter()
        .filter(|(path, text)| {
            fs::read_to_string(root.join(path)).ok().as_deref() != Some(text.as_str())
        })
        .map(|(path, _)| root.join(path))
        .collect()
}
