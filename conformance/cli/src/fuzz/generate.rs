//! Generated cases (`generate`): a deterministic stream of sessions from a seed
//! ([`Generated`]), each made an `apply`, `context` or `compaction` case, written as a
//! corpus case with its tags and its golden from the reference.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use proptest::prelude::{any, prop};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::Value;
use session_generators::ops;
use session_reference::ids::{FixedClock, SequentialIds};
use session_reference::model::Profile;
use session_reference::session::{Options, SessionManager};
use session_reference::storage::MemoryStorage;

use super::{FuzzError, FIRST_ID};
use session_conformance::adapter::ReferenceAdapter;
use session_conformance::corpus::{Case, CaseFile};
use session_conformance::execute::{run_step, substitute};
use session_conformance::normalize::canonical;
use session_conformance::protocol::Operation;
use session_conformance::runner::produce;

/// Gives a generated case the tags that follow from its golden (`corpus/README.md`
/// "Tags"): `file-naming` when the golden names a file the implementation creates
/// (`<ftime>_<session:N>.jsonl`), so that `tag:file-naming` in an expected-divergences
/// list covers it. Generated inputs are version 3: no other tag applies.
pub(super) fn tag_from_golden(case: &mut Case, golden: &str) {
    let names_created_file = golden.contains("<ftime>_") || golden.contains("<ftime>.jsonl");
    case.file.tags = if names_created_file {
        vec!["file-naming".to_owned()]
    } else {
        Vec::new()
    };
}

/// A deterministic stream of generated sessions for `profile`.
pub struct Generated {
    runner: TestRunner,
    profile: Profile,
    seed: u64,
    next: u32,
}

impl Generated {
    /// Sessions from `seed`.
    pub fn new(seed: u64, profile: Profile) -> Generated {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&seed.to_le_bytes());
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
        Generated {
            runner: TestRunner::new_with_rng(Config::default(), rng),
            profile,
            seed,
            next: 0,
        }
    }
}

impl Iterator for Generated {
    type Item = Case;

    /// Even cases are `apply` cases (the calls themselves); odd ones are `context`
    /// cases over the file those calls write, at a generated leaf, and every fourth is a
    /// `compaction` case there instead (document 004; a small `keepRecentTokens` so cuts fall
    /// inside the short generated sessions).
    fn next(&mut self) -> Option<Case> {
        let (n, steps, leaf) = self.parts()?;
        Some(make_case(self.profile, self.seed, n, &steps, leaf))
    }
}

impl Generated {
    /// The next case's number, steps and leaf selector.
    pub(super) fn parts(&mut self) -> Option<(u32, Vec<Value>, prop::sample::Index)> {
        let n = self.next;
        self.next += 1;
        let ops = ops(self.profile, 1..40)
            .new_tree(&mut self.runner)
            .ok()?
            .current();
        let steps = session_generators::steps(&ops, self.profile);
        let leaf = any::<prop::sample::Index>()
            .new_tree(&mut self.runner)
            .ok()?
            .current();
        Some((n, steps, leaf))
    }
}

/// The case for generated `steps`: `apply` for even `n`, `context` at a leaf picked by `leaf` for odd `n`,
/// `compaction` at that leaf when `n % 4 == 3` (not for operator).
pub(super) fn make_case(
    profile: Profile,
    seed: u64,
    n: u32,
    steps: &[Value],
    leaf: prop::sample::Index,
) -> Case {
    let name = format!("gen-{profile}-{seed}-{n}");
    let mut file = CaseFile {
        id: FIRST_ID + n,
        name: name.clone(),
        description: format!(
            "generated: {} SessionManager calls ({profile})",
            steps.len()
        ),
        profiles: vec![profile.name().to_owned()],
        // The calls append and branch (the tree) and the file is written (persistence).
        clauses: clauses(&["tree.4", "persistence.2"]),
        op: Operation::Apply,
        args: serde_json::json!({"open": null, "cwd": "/proj", "steps": steps}),
        safety: Vec::new(),
        mtimes: BTreeMap::new(),
        dir_inputs: Vec::new(),
        tags: Vec::new(),
        faults: Vec::new(),
    };
    let mut inputs = BTreeMap::new();
    if n % 2 == 1 {
        let (text, ids) = session_file(steps, profile);
        let mut args = serde_json::json!({"file": "session.jsonl"});
        if !ids.is_empty() && leaf.index(4) > 0 {
            args["leafId"] = Value::from(ids[leaf.index(ids.len())].clone());
        }
        file.op = Operation::Context;
        file.clauses = clauses(&["context.3", "context.4"]);
        file.description = format!(
            "generated: the context of a {}-entry session ({profile})",
            ids.len()
        );
        // Compaction planning reads camelCase keys: not generated for operator (document 003 is silent on it).
        if n % 4 == 3 && profile != Profile::Operator {
            args["contextWindow"] = Value::from(200);
            args["stubSummary"] = Value::from("S");
            args["settings"] = serde_json::json!({"keepRecentTokens": 1 + leaf.index(8)});
            file.op = Operation::Compaction;
            file.clauses = clauses(&["compaction.6", "compaction.9"]);
            file.description = format!(
                "generated: the compaction plan of a {}-entry session ({profile})",
                ids.len()
            );
        }
        file.args = args;
        inputs.insert("session.jsonl".to_owned(), text.into_bytes());
    }
    Case {
        file,
        dir: PathBuf::from(&name),
        group: "generated".into(),
        inputs,
        derived: session_conformance::corpus::Derived::default(),
        refused: None,
    }
}

/// The `seed` of a generated case: the section of the format's document (000 for pi and
/// omp, 003 for operator) it tests, so that `corpus check` accepts it.
fn clauses(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|id| (*id).to_owned()).collect()
}

/// The file the reference writes for `steps` (deterministic ids and clock), and its entry ids.
fn session_file(steps: &[Value], profile: Profile) -> (String, Vec<String>) {
    let mut options = Options::new(profile, "/proj", "/s");
    options.storage = Box::new(MemoryStorage::default());
    options.ids = Box::new(SequentialIds::default());
    options.clock = Box::new(FixedClock(1_748_779_200_000));
    let mut sm = SessionManager::in_memory(options);
    let mut results: Vec<Value> = Vec::new();
    for step in steps {
        let step = substitute(step, &results);
        results.push(run_step(&mut sm, &step, profile, Path::new("/")).unwrap_or(Value::Null));
    }
    let mut text = format!("{}\n", sm.header().raw.get());
    for entry in sm.entries() {
        text.push_str(entry.raw.get());
        text.push('\n');
    }
    (
        text,
        sm.entries().iter().filter_map(|e| e.id.clone()).collect(),
    )
}

/// Writes `count` generated cases under `out/generated/`, with goldens from the reference.
pub fn generate(seed: u64, count: usize, profile: Profile, out: &Path) -> Result<usize, FuzzError> {
    let root = out.join("generated");
    for mut case in Generated::new(seed, profile).take(count) {
        case.dir = root.join(&case.file.name);
        write_case(&mut case, profile)?;
    }
    Ok(count)
}

/// Writes a case's folder: `case.json` (with the tags that follow from the golden),
/// its inputs and its golden from the reference.
pub(super) fn write_case(case: &mut Case, profile: Profile) -> Result<(), FuzzError> {
    let failed = |path: &Path| {
        let path = path.to_owned();
        move |error| FuzzError::Write { path, error }
    };
    let golden = reference_output(case, profile)?;
    tag_from_golden(case, &golden);
    fs::create_dir_all(&case.dir).map_err(failed(&case.dir))?;
    // A case file is strings, numbers and JSON values: it always serialises.
    let mut text = serde_json::to_string_pretty(&case.file)
        .map_err(|e| failed(&case.dir)(std::io::Error::from(e)))?;
    text.push('\n');
    fs::write(case.dir.join("case.json"), text).map_err(failed(&case.dir))?;
    for (name, bytes) in &case.inputs {
        let path = case.dir.join("input").join(name);
        fs::create_dir_all(case.dir.join("input")).map_err(failed(&path))?;
        fs::write(&path, bytes).map_err(failed(&path))?;
    }
    fs::write(case.dir.join("expected.json"), golden).map_err(failed(&case.dir))
}

pub(super) fn reference_output(case: &Case, profile: Profile) -> Result<String, FuzzError> {
    reference_value(case, profile).map(|v| canonical(&v))
}

pub(super) fn reference_value(case: &Case, profile: Profile) -> Result<Value, FuzzError> {
    let mut reference = ReferenceAdapter::new(profile);
    let hello = session_conformance::execute::hello(profile);
    produce(
        case,
        profile,
        &mut reference,
        &hello,
        Duration::from_mins(1),
    )
    .map(|(v, _)| v)
    .map_err(|(status, message)| FuzzError::Reference { status, message })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_generates_the_same_cases() {
        let a: Vec<Value> = Generated::new(7, Profile::Omp)
            .take(20)
            .map(|c| serde_json::to_value(c.file).unwrap())
            .collect();
        let b: Vec<Value> = Generated::new(7, Profile::Omp)
            .take(20)
            .map(|c| serde_json::to_value(c.file).unwrap())
            .collect();
        assert_eq!(a, b);
        let c: Vec<Value> = Generated::new(8, Profile::Omp)
            .take(20)
            .map(|c| serde_json::to_value(c.file).unwrap())
            .collect();
        assert_ne!(a, c);
    }

    /// A generated case carries `file-naming` exactly when its golden names a created
    /// file, as `corpus/README.md` "Tags" has it for the corpus.
    #[test]
    fn generated_cases_carry_the_tags_their_goldens_call_for() {
        let out = tempfile::tempdir().expect("dir");
        generate(3, 8, Profile::Pi, out.path()).expect("generates");
        let mut tagged = 0;
        for item in fs::read_dir(out.path().join("generated")).expect("written") {
            let dir = item.expect("entry").path();
            let golden = fs::read_to_string(dir.join("expected.json")).expect("golden");
            let case: Value =
                serde_json::from_slice(&fs::read(dir.join("case.json")).expect("case"))
                    .expect("JSON");
            let names = golden.contains("<ftime>_") || golden.contains("<ftime>.jsonl");
            let tags = case.get("tags").cloned().unwrap_or(Value::Null);
            if names {
                tagged += 1;
                assert_eq!(
                    tags,
                    serde_json::json!(["file-naming"]),
                    "{}",
                    dir.display()
                );
            } else {
                assert_eq!(tags, Value::Null, "{}", dir.display());
            }
        }
        assert!(tagged > 0, "no generated case names a created file");
    }
}
