//! Generated cases: `generate` writes them as a corpus, `fuzz` runs them against an
//! adapter and the reference and shrinks the first disagreement.
//!
//! Invariant: the same seed produces byte-identical cases.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use proptest::prelude::{any, prop};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::Value;
use session_generators::ops;
use session_reference::ids::{FixedClock, SequentialIds};
use session_reference::model::Profile;
use session_reference::session::{Options, SessionManager};
use session_reference::storage::MemoryStorage;

use session_conformance::adapter::{Adapter, Failure, ProcessAdapter, ReferenceAdapter};
use session_conformance::corpus::{Case, CaseFile, CorpusError};
use session_conformance::divergences::{Divergences, Excuse};
use session_conformance::execute::{run_step, substitute};
use session_conformance::normalize::canonical;
use session_conformance::protocol::Operation;
use session_conformance::runner::{produce, produce_with, unified_diff, Status};

/// The first generated case id (far above the hand-written corpus).
pub const FIRST_ID: u32 = 100_000;

/// Why `generate` or a fuzz run stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum FuzzError {
    /// The adapter did not start, or did not say hello.
    AdapterStart(Failure),
    /// A generated case's file or folder could not be written.
    Write {
        /// The file or folder.
        path: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
    /// The reference gave no output for a generated case (a bug of the reference or
    /// of the generator).
    Reference {
        /// How the case ended.
        status: Status,
        /// What the reference said.
        message: String,
    },
    /// The corpus a finding is numbered for could not be read.
    Corpus {
        /// The corpus folder.
        corpus: PathBuf,
        /// Why it could not be read.
        error: CorpusError,
    },
}

impl std::fmt::Display for FuzzError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FuzzError::AdapterStart(failure) => write!(f, "the adapter did not start: {failure}"),
            FuzzError::Write { path, error } => write!(f, "{}: {error}", path.display()),
            FuzzError::Reference { status, message } => {
                write!(f, "reference: {}: {message}", status.name())
            }
            FuzzError::Corpus { corpus, error } => write!(
                f,
                "cannot number the finding for {}: {error}",
                corpus.display()
            ),
        }
    }
}

impl std::error::Error for FuzzError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FuzzError::Write { error, .. } => Some(error),
            FuzzError::Corpus { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// Gives a generated case the tags that follow from its golden (`corpus/README.md`
/// "Tags"): `file-naming` when the golden names a file the implementation creates
/// (`<ftime>_<session:N>.jsonl`), so that `tag:file-naming` in an expected-divergences
/// list covers it. Generated inputs are version 3: no other tag applies.
fn tag_from_golden(case: &mut Case, golden: &str) {
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
    fn parts(&mut self) -> Option<(u32, Vec<Value>, prop::sample::Index)> {
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
fn make_case(
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
        seed: seed_section(profile, "Entry types"),
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
        file.seed = seed_section(profile, "Context reconstruction");
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
            file.seed = "004 Compaction (findCutPoint)".into();
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
fn seed_section(profile: Profile, section: &str) -> String {
    let document = if profile == Profile::Operator {
        "003"
    } else {
        "000"
    };
    format!("{document} {section}")
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
fn write_case(case: &mut Case, profile: Profile) -> Result<(), FuzzError> {
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

fn reference_output(case: &Case, profile: Profile) -> Result<String, FuzzError> {
    reference_value(case, profile).map(|v| canonical(&v))
}

fn reference_value(case: &Case, profile: Profile) -> Result<Value, FuzzError> {
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

fn without_keys(value: Value, keys: &[String]) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(k, _)| !keys.contains(k))
                .map(|(k, v)| (k, without_keys(v, keys)))
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| without_keys(v, keys)).collect())
        }
        other => other,
    }
}

/// What a fuzz run found.
pub struct Finding {
    /// The shrunk case, written under the output folder.
    pub dir: PathBuf,
    /// Steps before and after shrinking.
    pub steps: (usize, usize),
    /// Expected (reference) → actual (adapter).
    pub diff: String,
}

/// Options of a fuzz run.
pub struct FuzzOptions {
    /// The adapter command.
    pub argv: Vec<String>,
    /// The profile.
    pub profile: Profile,
    /// How many cases at most.
    pub cases: usize,
    /// The seed.
    pub seed: u64,
    /// Stop after this long (the adapter's start and hello included).
    pub budget: Duration,
    /// Where the shrunk case goes (`<out>/<name>/`).
    pub out: PathBuf,
    /// Per-case timeout, and the longest wait for the adapter's hello.
    pub timeout: Duration,
    /// Object keys removed from both outputs before comparing (known divergences to look past).
    pub ignore_keys: Vec<String>,
    /// Expected divergences ([`session_conformance::divergences`]): a generated case that disagrees
    /// and falls in a declared category (`generated/*`, `tag:file-naming`, …) is looked
    /// past, and lines of a declared `entry-type:TYPE` are left out of written files
    /// before comparing.
    pub divergences: Divergences,
    /// The corpus a finding is numbered for: it gets the id after the corpus's highest.
    pub corpus: PathBuf,
}

/// What a fuzz run did.
pub struct FuzzRun {
    /// How many generated cases ran.
    pub ran: usize,
    /// The generated cases that disagreed only as the expected divergences declare:
    /// each case's name and what excused it (`SELECTOR: REASON`).
    pub looked_past: Vec<(String, String)>,
    /// The first disagreement no declared divergence covers, shrunk.
    pub finding: Option<Finding>,
}

/// How a generated case compared.
enum Verdict {
    /// Reference and adapter agree.
    Agree,
    /// They agree once the lines of declared extra entry types are left out.
    AgreeWithout,
    /// They disagree: the diff, expected (reference) → actual (adapter).
    Disagree(String),
}

impl Verdict {
    /// The diff, when they disagree.
    fn diff(self) -> Option<String> {
        match self {
            Verdict::Disagree(diff) => Some(diff),
            Verdict::Agree | Verdict::AgreeWithout => None,
        }
    }
}

/// What excuses a disagreement of `case`: the expected-divergences entry that covers it
/// (`SELECTOR: REASON`), if any.
fn excuse(case: &Case, divergences: &Divergences) -> Option<String> {
    divergences.excuse(case).map(|excuse| match excuse {
        Excuse::Id(known) => format!("{}: {}", case.id(), known.reason),
        Excuse::Category(selector, reason) => format!("{selector}: {reason}"),
    })
}

/// Runs generated cases through the adapter and the reference; shrinks and writes the first disagreement.
/// A disagreement in a category of `options.divergences` is looked past (see [`FuzzRun`]).
pub fn fuzz(options: &FuzzOptions, progress: &mut dyn Write) -> Result<FuzzRun, FuzzError> {
    let start = Instant::now();
    // The hello is waited for as long as a case, and never past the budget.
    let mut adapter = ProcessAdapter::new(options.argv.clone(), options.profile, false)
        .with_timeout(options.timeout.min(options.budget));
    let hello = adapter.hello().map_err(FuzzError::AdapterStart)?;
    let mut ran = 0;
    let mut looked_past = Vec::new();
    let mut generated = Generated::new(options.seed, options.profile);
    while ran < options.cases && start.elapsed() < options.budget {
        let Some((n, steps, leaf)) = generated.parts() else {
            break;
        };
        let mut case = make_case(options.profile, options.seed, n, &steps, leaf);
        ran += 1;
        let _ = write!(progress, "\r[{ran}/{}] {}", options.cases, case.file.name);
        let _ = progress.flush();
        match compare(&case, options, &mut adapter, &hello)? {
            Verdict::Agree => continue,
            Verdict::AgreeWithout => {
                let types: Vec<String> = options
                    .divergences
                    .extra_entry_types()
                    .map(|(kind, reason)| format!("entry-type:{kind}: {reason}"))
                    .collect();
                looked_past.push((case.file.name.clone(), types.join("; ")));
                continue;
            }
            Verdict::Disagree(_) => {
                let golden = reference_output(&case, options.profile)?;
                tag_from_golden(&mut case, &golden);
                if let Some(why) = excuse(&case, &options.divergences) {
                    looked_past.push((case.file.name.clone(), why));
                    continue;
                }
            }
        }
        let small = shrink(
            steps.clone(),
            |s| make_case(options.profile, options.seed, n, s, leaf),
            options,
            &mut adapter,
            &hello,
        )?;
        let case = make_case(options.profile, options.seed, n, &small, leaf);
        let diff = compare(&case, options, &mut adapter, &hello)?
            .diff()
            .unwrap_or_default();
        let mut written = case.clone();
        written.file.id = next_free_id(&options.corpus)?;
        written.file.name = format!("fuzz-{}-seed-{}-case-{n}", options.profile, options.seed);
        written.dir = options.out.join(&written.file.name);
        written.derived = session_conformance::corpus::Derived::default();
        write_case(&mut written, options.profile)?;
        let _ = writeln!(progress);
        return Ok(FuzzRun {
            ran,
            looked_past,
            finding: Some(Finding {
                dir: written.dir,
                steps: (steps.len(), small.len()),
                diff,
            }),
        });
    }
    let _ = writeln!(progress);
    Ok(FuzzRun {
        ran,
        looked_past,
        finding: None,
    })
}

/// The id after the highest of the hand-written cases in `corpus` (generated ids left aside),
/// so a finding can move to `corpus/cases/regression/` as it is.
fn next_free_id(corpus: &Path) -> Result<u32, FuzzError> {
    let cases = session_conformance::corpus::load(corpus).map_err(|error| FuzzError::Corpus {
        corpus: corpus.to_owned(),
        error,
    })?;
    let highest = cases
        .iter()
        .map(|c| c.file.id)
        .filter(|&id| id < FIRST_ID)
        .max();
    Ok(highest.map_or(1, |id| id + 1))
}

/// Whether reference and adapter agree on `case`, lines of the declared extra entry
/// types left out of the adapter's files, and the keys of `ignore_keys` out of both;
/// created file names are set aside for an adapter whose hello says they are its own.
fn compare(
    case: &Case,
    options: &FuzzOptions,
    adapter: &mut ProcessAdapter,
    hello: &session_conformance::protocol::Hello,
) -> Result<Verdict, FuzzError> {
    let mut expected = reference_value(case, options.profile)?;
    if let Some(response) = expected.get_mut("response") {
        session_conformance::runner::strip_extras(response, hello);
    }
    let own_names = hello.has(&session_conformance::runner::OWN_FILE_NAMES);
    if own_names {
        session_conformance::compare::set_aside_file_names(&mut expected);
    }
    let extra_types: Vec<&str> = options
        .divergences
        .extra_entry_types()
        .map(|(kind, _)| kind)
        .collect();
    let mut left_out = false;
    let actual = match produce_with(
        case,
        options.profile,
        adapter,
        hello,
        options.timeout,
        &extra_types,
    ) {
        Ok(produced) => {
            left_out = !produced.left_out.is_empty();
            let mut value = produced.output;
            if case.file.op == Operation::Context {
                session_conformance::runner::ignore_extra_keys(
                    &expected,
                    &mut value,
                    &mut Vec::new(),
                );
            }
            if own_names {
                session_conformance::compare::set_aside_file_names(&mut value);
            }
            canonical(&without_keys(value, &options.ignore_keys))
        }
        Err((status, message)) => format!("{}: {message}\n", status.name()),
    };
    let expected = canonical(&without_keys(expected, &options.ignore_keys));
    Ok(if expected != actual {
        Verdict::Disagree(unified_diff(&expected, &actual, "reference"))
    } else if left_out {
        Verdict::AgreeWithout
    } else {
        Verdict::Agree
    })
}

/// Removes steps one at a time (last first) while the disagreement remains;
/// each attempt re-runs the adapter. References to later steps are renumbered.
fn shrink(
    mut steps: Vec<Value>,
    build: impl Fn(&[Value]) -> Case,
    options: &FuzzOptions,
    adapter: &mut ProcessAdapter,
    hello: &session_conformance::protocol::Hello,
) -> Result<Vec<Value>, FuzzError> {
    let mut index = steps.len();
    while index > 0 {
        index -= 1;
        if steps.iter().skip(index + 1).any(|s| refers_to(s, index)) {
            continue;
        }
        let smaller: Vec<Value> = steps
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != index)
            .map(|(_, s)| renumber(s, index))
            .collect();
        if matches!(
            compare(&build(&smaller), options, adapter, hello)?,
            Verdict::Disagree(_)
        ) {
            steps = smaller;
        }
    }
    Ok(steps)
}

fn refers_to(value: &Value, step: usize) -> bool {
    match value {
        Value::Object(map) => {
            map.get("$result").and_then(Value::as_u64) == Some(step as u64)
                || map.values().any(|v| refers_to(v, step))
        }
        Value::Array(items) => items.iter().any(|v| refers_to(v, step)),
        _ => false,
    }
}

fn renumber(value: &Value, removed: usize) -> Value {
    match value {
        Value::Object(map) => {
            if let Some(n) = map
                .get("$result")
                .and_then(Value::as_u64)
                .filter(|_| map.len() == 1)
            {
                let n = if n > removed as u64 { n - 1 } else { n };
                return serde_json::json!({ "$result": n });
            }
            Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), renumber(v, removed)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| renumber(v, removed)).collect()),
        other => other.clone(),
    }
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

    #[test]
    fn removing_a_step_renumbers_later_references() {
        let step = serde_json::json!({"call": "branch", "id": {"$result": 3}});
        assert_eq!(
            renumber(&step, 1),
            serde_json::json!({"call": "branch", "id": {"$result": 2}})
        );
        assert_eq!(renumber(&step, 5), step);
        assert!(refers_to(&step, 3));
    }
}
