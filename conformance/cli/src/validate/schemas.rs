//! The schema checks of `validate`: the generated schemas compiled per profile and
//! version ([`Schemas`]), and each line checked against the schema of its `type`.

use std::collections::HashMap;

use jsonschema::Validator;
use serde_json::{json, Value};
use session_reference::model::Profile;

use super::findings::{Findings, Level};
use session_conformance::schema;

/// Compiled schemas per profile and version: entry type → validator.
pub struct Schemas {
    by_key: HashMap<(Profile, u32), HashMap<String, Validator>>,
}

impl Schemas {
    /// Compiles the schemas of both profiles and the three versions.
    ///
    /// # Panics
    /// Never for the schemas this crate generates (a test compiles them).
    pub fn new() -> Schemas {
        let mut by_key = HashMap::new();
        for profile in Profile::ALL {
            for version in 1..=3 {
                let union = schema::line_union(profile, version);
                let defs = union["$defs"].clone();
                let mut validators = HashMap::new();
                for branch in union["oneOf"].as_array().into_iter().flatten() {
                    let name = branch["properties"]["type"]["const"]
                        .as_str()
                        .map_or("*", |t| t)
                        .to_owned();
                    let name = if branch["properties"]["type"]["$ref"].is_string() {
                        "session".to_owned()
                    } else {
                        name
                    };
                    let mut schema = branch.clone();
                    schema["$defs"] = defs.clone();
                    schema["$schema"] = json!(schema::META_SCHEMA);
                    let validator =
                        jsonschema::validator_for(&schema).expect("generated schemas compile");
                    validators.insert(name, validator);
                }
                by_key.insert((profile, version), validators);
            }
        }
        Schemas { by_key }
    }

    fn validator(&self, profile: Profile, version: u32, type_name: &str) -> Option<&Validator> {
        let set = self.by_key.get(&(profile, version))?;
        set.get(type_name).or_else(|| set.get("*"))
    }
}

impl Default for Schemas {
    fn default() -> Self {
        Schemas::new()
    }
}

pub(super) fn check_schema(
    schemas: &Schemas,
    profile: Profile,
    version: u32,
    line: usize,
    value: &Value,
    findings: &mut Findings,
) {
    let type_name = value["type"].as_str().unwrap_or_default();
    if let Some(validator) = schemas.validator(profile, version, type_name) {
        for error in validator.iter_errors(value) {
            let pointer = error.instance_path().to_string();
            let id = value["id"].as_str().map(str::to_owned);
            let pointer = if pointer.is_empty() {
                "/".into()
            } else {
                pointer
            };
            findings.add(
                line,
                Level::Error,
                format!("{type_name}: {error}"),
                id,
                Some(pointer),
            );
        }
    }
}
