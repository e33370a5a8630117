//! A loaded [`Case`], what its runs share ([`Derived`]), and loading the corpus:
//! finding the case folders and reading each (a case that cannot run is loaded refused).

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde_json::value::RawValue;
use serde_json::Value;
use session_reference::model::Profile;

use super::case_file::{read_case_file, CaseFile};
use super::checks::check_case;
use super::goldens::{read_golden, Golden};
use super::inputs::read_inputs;
use super::problems::{CaseError, CorpusError, CorpusProblem};
use super::templates::{expand, expanded_text};
use crate::protocol::{Args, Operation};

/// A loaded case.
#[derive(Debug, Clone)]
pub struct Case {
    /// The case file.
    pub file: CaseFile,
    /// Its directory.
    pub dir: PathBuf,
    /// Its group (the parent directory's name).
    pub group: String,
    /// Input files: name → bytes.
    pub inputs: BTreeMap<String, Vec<u8>>,
    /// What every run of the case needs and the first one works out: see [`Derived`].
    /// A clone shares it: give a clone whose `file`, `dir` or `inputs` change a
    /// `Derived::default()`.
    pub derived: Derived,
    /// Why the case cannot run (a corpus error: a path that leaves the case directory,
    /// a malformed template or a `$repeat` past the limit, an unknown profile, a bad
    /// `mtimes` entry, an input that is not a regular file or has a name that would
    /// change on its way, a link out of the case folder, a placeholder in an input or
    /// the arguments, a `dir_inputs` file that is not UTF-8, a golden past the size limit, a `case.json` that does not read).
    /// A refused case applies to every profile and fails in each run with this reason;
    /// the run goes on.
    pub refused: Option<CaseError>,
}

/// What runs of a case share, worked out on first use and kept as long as the loaded
/// case (a preloaded harness keeps them across its runs): its known tokens and its
/// goldens.
#[derive(Debug, Clone, Default)]
pub struct Derived {
    /// The known tokens of the inputs, arguments and mtimes (normalisation).
    known: OnceLock<Arc<HashSet<String>>>,
    /// Each profile's golden, in [`Profile::ALL`] order.
    goldens: [OnceLock<Golden>; Profile::ALL.len()],
}

impl Case {
    /// The case id as a string (what the protocol and divergence lists use).
    pub fn id(&self) -> String {
        format!("{:04}", self.file.id)
    }

    /// `group/name`.
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.group, self.file.name)
    }

    /// Whether the case applies to `profile` (a refused case applies to every profile,
    /// so that every run reports it).
    pub fn applies_to(&self, profile: Profile) -> bool {
        self.refused.is_some() || self.file.profiles.iter().any(|p| p == profile.name())
    }

    /// The golden file for `profile`: `expected.<profile>.json` if present, else `expected.json`.
    pub fn golden_path(&self, profile: Profile) -> PathBuf {
        let specific = self.dir.join(format!("expected.{}.json", profile.name()));
        if specific.exists() {
            specific
        } else {
            self.dir.join("expected.json")
        }
    }

    /// The golden for `profile`, read on first use and kept with the case (see [`Derived`]).
    pub fn golden(&self, profile: Profile) -> &Golden {
        let slot = Profile::ALL.iter().position(|&p| p == profile).unwrap_or(0);
        self.derived.goldens[slot].get_or_init(|| {
            let path = self.golden_path(profile);
            let text = read_golden(&path);
            Golden { path, text }
        })
    }

    /// The tokens a normaliser keeps as they are: those of the input files, the
    /// arguments (`args`, the text of [`Case::request_args`]) and the `mtimes`
    /// (PROTOCOL.md "Normalisation", rule 1). Collected once, on the first call: later
    /// calls return that set whatever `args` they pass.
    pub fn known_tokens(&self, args: &str) -> Arc<HashSet<String>> {
        self.derived
            .known
            .get_or_init(|| {
                let mtimes = format!("{:?}", self.file.mtimes);
                let inputs: Vec<std::borrow::Cow<str>> = self
                    .inputs
                    .values()
                    .map(|b| String::from_utf8_lossy(b))
                    .collect();
                Arc::new(crate::normalize::known_tokens(
                    inputs
                        .iter()
                        .map(AsRef::as_ref)
                        .chain([args, mtimes.as_str()]),
                ))
            })
            .clone()
    }

    /// The arguments with templates expanded.
    pub fn args(&self) -> Value {
        expand(&self.file.args)
    }

    /// The arguments of the case's request, expanded and written as JSON text. Not
    /// kept: a run sends them once, and some carry 500,000-character strings, whose
    /// memory is better used again by the next case than kept for the whole run.
    pub fn request_args(&self) -> Args {
        // The text is JSON; `null` stands in for the impossible failure.
        let text = RawValue::from_string(expanded_text(&self.file.args))
            .unwrap_or_else(|_| RawValue::NULL.to_owned());
        Args::from_text(text)
    }
}

/// Loads every case under `root` (any directory holding a `case.json`), sorted by path.
/// The cases are read on as many threads as there are CPUs. A `root` that is not a
/// folder (never opened: a FIFO or a device is not waited on) or that holds no case is
/// an error naming it: a corpus of no cases would pass every run.
pub fn load(root: &Path) -> Result<Vec<Case>, CorpusError> {
    let dirs = case_dirs(root)?;
    if dirs.is_empty() {
        return Err(CorpusError {
            path: root.to_path_buf(),
            kind: CorpusProblem::NoCases,
        });
    }
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(dirs.len())
        .max(1);
    let chunks: Vec<Result<Vec<Case>, CorpusError>> = std::thread::scope(|scope| {
        let workers: Vec<_> = dirs
            .chunks(dirs.len().div_ceil(threads).max(1))
            .map(|chunk| scope.spawn(move || chunk.iter().map(|d| load_case(d)).collect()))
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join().unwrap_or_else(|_| {
                    Err(CorpusError {
                        path: root.to_path_buf(),
                        kind: CorpusProblem::LoaderPanicked,
                    })
                })
            })
            .collect()
    });
    let mut cases = Vec::with_capacity(dirs.len());
    for chunk in chunks {
        cases.extend(chunk?);
    }
    Ok(cases)
}

/// The case directories under `root` (those holding a `case.json` file, never `root`
/// itself nor anything inside a folder named `input`), found in every other folder
/// (a folder named `case.json` too), sorted. Links to folders are not followed (so no
/// walk loops, and none leaves the corpus); a `case.json` link counts when it leads to
/// a regular file.
fn case_dirs(root: &Path) -> Result<Vec<PathBuf>, CorpusError> {
    let error = |kind| CorpusError {
        path: root.to_path_buf(),
        kind,
    };
    // The kind, from the metadata: nothing is opened.
    match fs::metadata(root) {
        Ok(meta) if meta.is_dir() => {}
        Ok(meta) => {
            let kind = if meta.is_file() {
                "regular file"
            } else {
                crate::guard::kind_name(meta.file_type())
            };
            return Err(error(CorpusProblem::NotAFolder(kind)));
        }
        Err(e) => return Err(error(CorpusProblem::Walk(e.to_string()))),
    }
    let mut dirs = Vec::new();
    let walk = walkdir::WalkDir::new(root)
        .min_depth(1)
        .into_iter()
        .filter_entry(|e| !(e.file_type().is_dir() && e.file_name() == "input"));
    for item in walk {
        let item = item.map_err(|e| CorpusError {
            path: e.path().unwrap_or(root).to_path_buf(),
            kind: CorpusProblem::Walk(e.to_string()),
        })?;
        if item.file_name() != "case.json" || item.depth() < 2 {
            continue;
        }
        let kind = item.file_type();
        let regular = kind.is_file()
            || (kind.is_symlink() && fs::metadata(item.path()).is_ok_and(|m| m.is_file()));
        if let (true, Some(dir)) = (regular, item.path().parent()) {
            dirs.push(dir.to_path_buf());
        }
    }
    dirs.sort();
    Ok(dirs)
}

/// Loads one case directory. A case that cannot run is loaded refused
/// ([`Case::refused`]), with a placeholder `case.json` when its own does not read.
pub fn load_case(dir: &Path) -> Result<Case, CorpusError> {
    let folder_name = |path: Option<&Path>| {
        path.and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let group = folder_name(dir.parent());
    let name = folder_name(Some(dir));
    let (mut file, text) = match read_case_file(&dir.join("case.json")) {
        Ok(read) => read,
        Err(error) => return Ok(refused_case(dir, group, name, error)),
    };
    let (inputs, refused) = match read_inputs(dir) {
        Ok(inputs) => {
            let refused = check_case(&file, &text, &inputs, dir).err();
            (inputs, refused)
        }
        Err(error) => (BTreeMap::new(), Some(error)),
    };
    if refused.is_some() {
        // Never run nor expanded: a refused `$repeat` must not be measured either.
        file.args = Value::Null;
    }
    Ok(Case {
        file,
        dir: dir.to_path_buf(),
        group,
        inputs,
        derived: Derived::default(),
        refused,
    })
}

/// A case whose `case.json` does not read: refused, with a placeholder case file
/// whose operation every adapter supports, so that every run reports it.
fn refused_case(dir: &Path, group: String, name: String, error: CaseError) -> Case {
    Case {
        file: CaseFile {
            id: 0,
            name,
            description: String::new(),
            profiles: Vec::new(),
            clauses: Vec::new(),
            op: Operation::Load,
            args: Value::Null,
            tags: Vec::new(),
            safety: Vec::new(),
            mtimes: BTreeMap::new(),
            dir_inputs: Vec::new(),
            faults: Vec::new(),
        },
        dir: dir.to_path_buf(),
        group,
        inputs: BTreeMap::new(),
        derived: Derived::default(),
        refused: Some(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A case is a folder holding a `case.json` file: not the root, not a folder named
    /// `case.json`, nothing inside `input/`; its input files are read at any depth.
    #[test]
    fn cases_are_the_folders_holding_a_case_file() {
        let root = tempfile::tempdir().expect("temp dir");
        let case_json = |id: u32, name: &str| {
            json!({"id": id, "name": name, "profiles": ["pi"], "clauses": ["loading.1"], "op": "load"})
                .to_string()
        };
        let write = |rel: &str, text: &str| {
            let path = root.path().join(rel);
            fs::create_dir_all(path.parent().expect("parent")).expect("folders");
            fs::write(path, text).expect("write");
        };
        write("case.json", &case_json(1, "root"));
        write("g/b-case/case.json", &case_json(3, "b-case"));
        write("g/a-case/case.json", &case_json(2, "a-case"));
        write("g/a-case/input/s.jsonl", "{}\n");
        write("g/a-case/input/deep/er/t.txt", "t");
        write("g/a-case/input/nested/case.json", &case_json(4, "nested"));
        write("g/not-a-case/notes.txt", "");
        fs::create_dir_all(root.path().join("g/folder-named/case.json")).expect("folder");
        write(
            "g/folder-named/case.json/inner/case.json",
            &case_json(5, "inner"),
        );
        let cases = load(root.path()).expect("loads");
        let names: Vec<String> = cases.iter().map(Case::full_name).collect();
        assert_eq!(names, ["g/a-case", "g/b-case", "case.json/inner"]);
        let inputs: Vec<&str> = cases[0].inputs.keys().map(String::as_str).collect();
        assert_eq!(
            inputs,
            ["deep/er/t.txt", "nested/case.json", "s.jsonl"],
            "input files at any depth, by relative path"
        );
    }

    #[test]
    fn known_tokens_come_from_inputs_arguments_and_mtimes_once() {
        let file: CaseFile = serde_json::from_value(json!({
            "id": 1, "name": "x", "profiles": ["pi"], "clauses": ["loading.1"], "op": "load",
            "args": {"leafId": {"$concat": ["ab", "cd1234"]}},
            "mtimes": {"s.jsonl": "2026-03-01T12:00:00.000Z"}
        }))
        .expect("case file");
        let case = Case {
            file,
            dir: PathBuf::from("x"),
            group: "g".into(),
            inputs: BTreeMap::from([("s.jsonl".into(), br#"{"id":"deadbeef"}"#.to_vec())]),
            derived: Derived::default(),
            refused: None,
        };
        let args = case.request_args();
        let known = case.known_tokens(&args.text());
        for token in ["deadbeef", "abcd1234", "2026-03-01T12:00:00.000Z"] {
            assert!(known.contains(token), "{token} in {known:?}");
        }
        assert!(
            std::sync::Arc::ptr_eq(&known, &case.known_tokens(&args.text())),
            "collected once"
        );
    }
}
