//! The typed way in (`session_conformance::typed`) against the protocol's own dispatch:
//! the reference behind `Implementation`, its outputs taken apart into the typed values
//! and put back together by `Typed`, passes every `load`, `context` and `tree` case that
//! the reference itself passes, for every profile, but two: `TreeNode` holds its
//! `parentId` and `label` as strings, so a tree whose entries write them as numbers (as
//! pi reports them, as written) cannot be told through it.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use session_conformance::execute::execute;
use session_conformance::protocol::{Args, Operation, Request};
use session_conformance::typed::{
    Call, ErrorKind, Implementation, Leaf, Loaded, OpError, Outcome, TreeNode, Typed,
};
use session_conformance::{Harness, Profile, Status};

/// The reference, called through the protocol and mapped onto the typed outputs.
struct Mapped(Profile);

impl Mapped {
    fn ask(&self, call: &Call, op: Operation) -> Outcome<Value> {
        let text = serde_json::value::to_raw_value(&call.args).expect("args serialise");
        let response = execute(Request {
            kind: "request".into(),
            case: "typed".into(),
            op,
            profile: self.0.name().into(),
            dir: call.dir.to_string_lossy().into_owned(),
            args: Args::from_text(text),
            faults: Vec::new(),
        });
        match (response.ok, response.error) {
            (Some(value), _) => Ok(value),
            (None, Some(error)) => Err(OpError::new(
                ErrorKind::from_name(&error.kind).unwrap_or(ErrorKind::Exception),
                error.message,
            )),
            (None, None) => Err(OpError::Unsupported),
        }
    }
}

fn string(value: &Value) -> Option<String> {
    value.as_str().map(str::to_owned)
}

impl Implementation for Mapped {
    fn name(&self) -> (String, String) {
        ("reference, typed".into(), "0".into())
    }
    fn profile(&self) -> Profile {
        self.0
    }
    fn operations(&self) -> Vec<Operation> {
        vec![Operation::Load, Operation::Context, Operation::Tree]
    }
    fn load(&mut self, call: &Call, _file: &Path) -> Outcome<Loaded> {
        let out = self.ask(call, Operation::Load)?;
        Ok(Loaded {
            header: Some(out["header"].clone()).filter(|h| !h.is_null()),
            entries: out["entries"].as_array().cloned().unwrap_or_default(),
            leaf_id: string(&out["leafId"]),
        })
    }
    fn context(&mut self, call: &Call, _file: &Path, _leaf: Leaf) -> Outcome<Value> {
        self.ask(call, Operation::Context)
    }
    fn tree(&mut self, call: &Call, _file: &Path) -> Outcome<Vec<TreeNode>> {
        let out = self.ask(call, Operation::Tree)?;
        let nodes = out["nodes"].as_array().cloned().unwrap_or_default();
        Ok(nodes
            .iter()
            .map(|n| TreeNode {
                id: string(&n["id"]).unwrap_or_default(),
                parent_id: string(&n["parentId"]),
                kind: string(&n["type"]).unwrap_or_default(),
                label: string(&n["label"]),
                children: n["children"]
                    .as_array()
                    .map(|c| c.iter().filter_map(string).collect())
                    .unwrap_or_default(),
            })
            .collect())
    }
}

/// The cases whose tree holds a number where `TreeNode` holds a string.
const NOT_STRINGS: [&str; 2] = ["labels/label-value-number", "tree/parent-id-number"];

#[test]
fn the_typed_dispatch_answers_as_the_protocol_does() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/cases");
    for profile in Profile::ALL {
        let run = Harness::new(&corpus)
            .profile(profile)
            .jobs(2)
            .timeout(Duration::from_mins(5))
            .run_with(&move || Box::new(Typed::new(Mapped(profile))))
            .expect("runs");
        let ran = run
            .results
            .iter()
            .filter(|r| r.status != Status::Skipped)
            .count();
        assert!(ran > 50, "{profile:?}: only {ran} cases ran");
        let failed: Vec<String> = run
            .results
            .iter()
            .filter(|r| r.status.is_failure() && !NOT_STRINGS.contains(&r.name.as_str()))
            .map(|r| format!("{} {} {:?} {:?}", r.id, r.name, r.status, r.pointer))
            .collect();
        assert!(failed.is_empty(), "{profile:?}: {failed:#?}");
    }
}
