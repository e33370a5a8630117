//! JSON Schemas of the corpus case file and the adapter protocol, generated from the Rust types (`schemas/`).
//!
//! Invariant: the committed files equal what [`generate`] returns; a test fails
//! when they drift and prints the command that regenerates them.

use std::fs;
use std::path::{Path, PathBuf};

use schemars::gen::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Value};
use session_reference::entries;
use session_reference::model::Profile;

use crate::corpus::CaseFile;
use crate::protocol::{Hello, Request, Response, RunnerHello};

/// The JSON Schema dialect of every file.
pub const META_SCHEMA: &str = "https://json-schema.org/draft/2020-12/schema";

/// The base of every schema's `$id`.
pub const ID_BASE: &str = "https://session-conformance.dev/schemas/";

/// Every generated schema: path under `schemas/` and its canonical text.
pub fn generate() -> Vec<(PathBuf, String)> {
    let mut all = session_schemas();
    all.extend([
        one::<CaseFile>(
            "corpus/case.schema.json",
            "A corpus case (corpus/README.md)",
        ),
        one::<crate::message_types::PiMessage>(
            "pi/agent-message.schema.json",
            "A message pi writes in a `message` entry: the real types' required fields (conformance/src/message_types.rs)",
        ),
        one::<crate::message_types::OmpMessage>(
            "omp/agent-message.schema.json",
            "A message oh-my-pi writes in a `message` entry: the real types' required fields (conformance/src/message_types.rs)",
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
    ]);
    all
}

/// The entry types of a profile: `(type, schema)`, in the order of document 000.
fn entry_types(profile: Profile) -> Vec<(&'static str, Value)> {
    let mut types = vec![
        ("message", entry::<entries::Message>()),
        (
            "thinking_level_change",
            entry::<entries::ThinkingLevelChange>(),
        ),
    ];
    match profile {
        Profile::Pi => types.extend([
            ("model_change", entry::<entries::PiModelChange>()),
            ("compaction", entry::<entries::PiCompaction>()),
        ]),
        Profile::Operator => types.extend([
            ("model_change", entry::<entries::ModelIdChange>()),
            ("compaction", entry::<entries::PiCompaction>()),
        ]),
        Profile::Omp => types.extend([
            ("model_change", entry::<entries::OmpModelChange>()),
            ("compaction", entry::<entries::OmpCompaction>()),
        ]),
    }
    // pi-mono's branch summaries carry `fromHook`, omp's `fromExtension`.
    let mut branch_summary = entry::<entries::BranchSummary>();
    let foreign = if profile == Profile::Omp {
        "fromHook"
    } else {
        "fromExtension"
    };
    if let Some(properties) = branch_summary["properties"].as_object_mut() {
        properties.remove(foreign);
    }
    types.extend([
        ("branch_summary", branch_summary),
        ("custom", entry::<entries::Custom>()),
        ("custom_message", entry::<entries::CustomMessage>()),
        ("label", entry::<entries::Label>()),
    ]);
    match profile {
        Profile::Pi | Profile::Operator => {
            types.push(("session_info", entry::<entries::SessionInfo>()));
        }
        Profile::Omp => types.extend([
            ("ttsr_injection", entry::<entries::TtsrInjection>()),
            ("session_init", entry::<entries::SessionInit>()),
            ("mode_change", entry::<entries::ModeChange>()),
        ]),
    }
    let keys = profile.keys();
    if let Some(leaf) = keys.leaf_type {
        types.push((leaf, leaf_schema()));
    }
    for (name, schema) in &mut types {
        *name = keys.name(name);
        rename_keys(schema, keys);
        tag(schema, name);
    }
    types
}

/// 003 `LeafEntry`: a durable navigation pointer (camelCase here, renamed with the rest).
/// A reader takes any target; one that is not a string gives the empty path.
fn leaf_schema() -> Value {
    let mut schema = entry::<entries::Leaf>();
    schema["properties"]["targetId"]["type"] = json!(["string", "null"]);
    schema
}

/// The schema of an entry type: the common fields of [`entries::Base`], then the type's own.
fn entry<P: JsonSchema>() -> Value {
    let base = root::<entries::Base>();
    let mut schema = root::<P>();
    let mut properties = base["properties"].as_object().cloned().unwrap_or_default();
    properties.extend(
        schema["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    schema["properties"] = Value::Object(properties);
    let mut required = base["required"].as_array().cloned().unwrap_or_default();
    required.extend(schema["required"].as_array().cloned().unwrap_or_default());
    schema["required"] = Value::Array(required);
    schema
}

/// The dialect's names for a schema's properties and required keys (003: snake_case).
fn rename_keys(schema: &mut Value, keys: &session_reference::model::Keys) {
    if keys.renames.is_empty() {
        return;
    }
    if let Some(properties) = schema["properties"].as_object_mut() {
        let renamed: serde_json::Map<String, Value> = std::mem::take(properties)
            .into_iter()
            .map(|(k, v)| (rename(&k, keys), v))
            .collect();
        *properties = renamed;
    }
    if let Some(required) = schema["required"].as_array_mut() {
        for key in required.iter_mut() {
            if let Some(k) = key.as_str() {
                *key = rename(k, keys).into();
            }
        }
    }
}

fn rename(key: &str, keys: &session_reference::model::Keys) -> String {
    keys.renames
        .iter()
        .find(|(from, _)| *from == key)
        .map_or(key, |(_, to)| to)
        .to_owned()
}

/// The header of `profile` at `version`; 003's is `session_header` with no `version`.
fn profile_header(profile: Profile, version: u32) -> Value {
    let keys = profile.keys();
    if keys.versioned {
        return header(version);
    }
    let mut schema = root::<entries::Header>();
    if let Some(properties) = schema["properties"].as_object_mut() {
        properties.remove("version");
    }
    if let Some(required) = schema["required"].as_array_mut() {
        required.retain(|r| r != "version");
    }
    rename_keys(&mut schema, keys);
    schema["properties"]["type"] = json!({ "const": keys.name("session") });
    schema
}

/// Adds the `type` constant to an entry schema.
fn tag(schema: &mut Value, name: &str) {
    schema["properties"]["type"] = json!({ "const": name });
    if let Some(required) = schema["required"].as_array_mut() {
        required.insert(0, json!("type"));
    }
}

/// The schema of a header of `version` (1: `version` absent or 1).
fn header(version: u32) -> Value {
    let mut schema = root::<entries::Header>();
    schema["properties"]["version"] = if version == 1 {
        json!({ "enum": [1] })
    } else {
        json!({ "const": version })
    };
    if version > 1 {
        if let Some(required) = schema["required"].as_array_mut() {
            required.push(json!("version"));
        }
    }
    schema
}

/// One file per entry type and per profile, the header, and the union "a line of a session file" per profile and version.
fn session_schemas() -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for profile in Profile::ALL {
        let p = profile.name();
        let versions = if profile.keys().versioned {
            1..=3
        } else {
            3..=3
        };
        out.push(finish(
            format!("{p}/session.schema.json"),
            &format!("The session header ({p})"),
            profile_header(profile, 3),
        ));
        for (name, schema) in entry_types(profile) {
            out.push(finish(
                format!("{p}/{name}.schema.json"),
                &format!("A `{name}` entry ({p})"),
                schema,
            ));
        }
        for version in versions {
            out.push(finish(
                format!("{p}/line.v{version}.schema.json"),
                &format!("A line of a version {version} session file ({p})"),
                line_union(profile, version),
            ));
        }
    }
    out
}

/// A line of a session file: the header or any entry, known or not.
pub fn line_union(profile: Profile, version: u32) -> Value {
    let mut defs = serde_json::Map::new();
    let mut branches = vec![take_defs(profile_header(profile, version), &mut defs)];
    let types = entry_types(profile);
    let header_type = profile.keys().name("session");
    let known: Vec<&str> = types.iter().map(|(n, _)| *n).chain([header_type]).collect();
    for (name, mut schema) in types {
        if version == 1 {
            if name == "compaction" {
                schema = root::<entries::V1Compaction>();
                tag(&mut schema, "compaction");
            }
            // v1 entries have no ids: migration adds them (000 "v1 -> v2").
            if let Some(required) = schema["required"].as_array_mut() {
                required.retain(|r| r != "id" && r != "parentId");
            }
        }
        branches.push(take_defs(schema, &mut defs));
    }
    let mut unknown = json!({
        "description": "An entry of a type this profile does not know: kept and written back unchanged.",
        "type": "object",
        "required": ["type"],
        "properties": { "type": { "type": "string", "not": { "enum": known } } }
    });
    if version > 1 {
        unknown["required"] = json!(["type", "id"]);
    }
    branches.push(unknown);
    json!({ "oneOf": branches, "$defs": defs })
}

fn take_defs(mut schema: Value, defs: &mut serde_json::Map<String, Value>) -> Value {
    if let Some(object) = schema.as_object_mut() {
        if let Some(Value::Object(own)) = object.remove("$defs") {
            defs.extend(own);
        }
        object.remove("$schema");
    }
    schema
}

/// The schema of `T`, with its definitions under `$defs` (the 2020-12 keyword).
fn root<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2019_09().into_generator();
    let mut schema =
        serde_json::to_value(generator.into_root_schema_for::<T>()).unwrap_or_default();
    if let Some(object) = schema.as_object_mut() {
        if let Some(definitions) = object.remove("definitions") {
            object.insert("$defs".into(), definitions);
        }
    }
    rewrite_refs(&mut schema);
    schema
}

fn rewrite_refs(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                match v {
                    Value::String(s) if key == "$ref" => {
                        *s = s.replace("#/definitions/", "#/$defs/");
                    }
                    _ => rewrite_refs(v),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

fn one<T: JsonSchema>(path: &str, title: &str) -> (PathBuf, String) {
    finish(path.to_owned(), title, root::<T>())
}

fn finish(path: String, title: &str, mut schema: Value) -> (PathBuf, String) {
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        let mut ordered = serde_json::Map::new();
        ordered.insert("$schema".into(), META_SCHEMA.into());
        ordered.insert("$id".into(), format!("{ID_BASE}{path}").into());
        ordered.insert("title".into(), title.into());
        ordered.extend(std::mem::take(object));
        *object = ordered;
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
