//! The corpus on disk: cases, their inputs and goldens, and the lint behind `corpus check` (`corpus/README.md`).
//!
//! A case is a directory holding `case.json`, an `input/` folder copied byte for
//! byte into the case's working directory, and one golden per profile
//! (`expected.<profile>.json`) or one shared golden (`expected.json`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::json_writer::{self, Layout};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use session_reference::model::Profile;

use crate::protocol::{Args, Operation};

/// `case.json`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    /// Stable id, never reused (independent of the path).
    pub id: u32,
    /// Kebab-case name; equals the case directory's name.
    pub name: String,
    /// What the case checks, in a sentence.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The profiles it applies to.
    pub profiles: Vec<String>,
    /// What the case tests: a seed document (`000`, `001`, `002`, `003` or `004`) and
    /// its section, e.g. `000 Versioning and migrations`, or a rule of a behaviour
    /// catalogue (`pi-mono 4.9`, `omp H4`); [`SEED_SOURCES`] lists the first words.
    #[schemars(regex(pattern = r"^(000|001|002|003|004|pi-mono|omp) "))]
    pub seed: String,
    // The schema's description (schemas/ is generated from this comment): the list is
    // `Operation::ALL`.
    /// The operation: `load`, `context`, `tree`, `apply`, `persist`, `list`, `recent`,
    /// `continue`, `resolve`, `history`, `switch`, `search`, `compaction` or `branch_summary`.
    #[schemars(with = "String")]
    pub op: Operation,
    /// The operation's arguments (may use `$repeat`/`$concat` templates).
    #[serde(default)]
    pub args: Value,
    /// What must survive, whatever the output.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub safety: Vec<SafetyCheck>,
    /// Modification times the runner gives input files before the request:
    /// input path → ISO time (`2026-01-01T00:00:00.000Z`). Listing orders by them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mtimes: BTreeMap<String, String>,
    /// Input files in which the runner replaces the text `<dir>` with the case's working
    /// directory before the request (files that must hold absolute paths, e.g. breadcrumbs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dir_inputs: Vec<String>,
    /// Categories the case belongs to ([`TAGS`]), which expected-divergence lists can name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Faults the implementation's storage raises during the request (`PROTOCOL.md`
    /// "Faults"); a case with faults is skipped by an adapter without the `faults` capability.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<crate::faults::Fault>,
}

/// The tags a case may carry (`corpus/README.md` "Tags"), with what each means.
pub const TAGS: [(&str, &str); 8] = [
    ("legacy-v1", "an input session file is version 1 (`version ?? 1` read as a number is below 2): migrated on load"),
    ("legacy-v2", "an input session file is version 2 (read as a number, from 2 to below 3): migrated on load"),
    ("torn-line", "an input session file ends in a line that is not complete JSON"),
    ("bad-line", "an input session file has a line that is not JSON, or not an object, before its last"),
    ("bad-header", "an input session file has no valid header: empty, or its first value is not a session header"),
    ("file-naming", "the golden names a file the implementation creates (`<ftime>_<session:N>.jsonl`)"),
    ("missing-file", "the operation names a session file that does not exist"),
    ("cycle", "an input session file's parent links form a cycle"),
];

/// A data-safety check.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(tag = "check", rename_all = "kebab-case", deny_unknown_fields)]
pub enum SafetyCheck {
    /// The input file's exact bytes still exist in the working directory, as a whole file or the start of one.
    BytesKept {
        /// The input file.
        file: String,
    },
    /// Every JSON line of the input file is still a line of it, and every new line parses.
    LinesKept {
        /// The input file.
        file: String,
    },
    /// No `.jsonl` file holds more than one `type:"session"` line.
    SingleHeader,
}

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
    /// a `$repeat` past the limit, an unknown profile, a bad `mtimes` entry, an input
    /// that is not a regular file, a `case.json` that does not read). A refused case
    /// applies to every profile and fails in each run with this reason; the run goes on.
    pub refused: Option<String>,
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

/// A case's expected output for one profile.
#[derive(Debug, Clone)]
pub struct Golden {
    /// `expected.<profile>.json` if present, else `expected.json`.
    pub path: PathBuf,
    /// Its text; `None` when it cannot be read.
    pub text: Option<String>,
}

/// A problem found while loading or linting the corpus: the file, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorpusError {
    /// The file concerned.
    pub path: PathBuf,
    /// What is wrong.
    pub kind: CorpusProblem,
}

/// What a case's `seed` may cite: the five seed documents (`../shared/seeds/README.md`)
/// and the two behaviour catalogues of the real implementations.
pub const SEED_SOURCES: [&str; 7] = ["000", "001", "002", "003", "004", "pi-mono", "omp"];

/// What is wrong with a corpus file ([`CorpusError`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CorpusProblem {
    /// The corpus folder could not be walked.
    Walk(String),
    /// A thread loading cases panicked.
    LoaderPanicked,
    /// The case cannot run (its `case.json` does not read, or it names a path outside it).
    Refused(String),
    /// Two cases share an id.
    DuplicateId {
        /// The id.
        id: u32,
        /// The other case's folder.
        other: PathBuf,
    },
    /// The case's name is not its folder's name.
    NameMismatch {
        /// The name in `case.json`.
        name: String,
        /// The folder's name.
        dir: String,
    },
    /// The case's name is not kebab-case.
    NotKebab(String),
    /// An operation the protocol does not have.
    UnknownOp(String),
    /// The case lists no profile.
    NoProfiles,
    /// A `seed` that names no document or catalogue ([`SEED_SOURCES`]).
    UnknownSeed(String),
    /// A tag `corpus/README.md` does not list.
    UnknownTag(String),
    /// The tags are not sorted and distinct.
    UnsortedTags,
    /// `dir_inputs` names a file that is not an input.
    DirInputNotAnInput(String),
    /// `mtimes` names a file that is not an input.
    MtimeNotAnInput(String),
    /// An `mtimes` value that is not an ISO time.
    MtimeNotIso(String),
    /// A listed profile has no golden.
    MissingGolden(Profile),
    /// A profile name that is not one.
    UnknownProfile(String),
    /// A file in the case folder that is not an input, the case or a golden of it.
    OrphanedFile,
    /// `expected.json` beside a golden for every profile.
    OrphanedGolden,
}

impl fmt::Display for CorpusProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CorpusProblem::Walk(message) | CorpusProblem::UnknownProfile(message) => {
                f.write_str(message)
            }
            CorpusProblem::LoaderPanicked => f.write_str("a thread loading cases panicked"),
            CorpusProblem::Refused(reason) => write!(f, "refused: {reason}"),
            CorpusProblem::DuplicateId { id, other } => {
                write!(f, "duplicate id {id} (also {})", other.display())
            }
            CorpusProblem::NameMismatch { name, dir } => {
                write!(f, "name {name:?} differs from the directory name {dir:?}")
            }
            CorpusProblem::NotKebab(name) => write!(f, "name {name:?} is not kebab-case"),
            CorpusProblem::UnknownOp(op) => write!(f, "unknown op {op:?}"),
            CorpusProblem::NoProfiles => f.write_str("no profiles"),
            CorpusProblem::UnknownSeed(seed) => write!(
                f,
                "seed {seed:?} names no document: it starts with 000 to 004, pi-mono or omp, then a space"
            ),
            CorpusProblem::UnknownTag(tag) => {
                write!(f, "unknown tag {tag:?} (corpus/README.md lists the tags)")
            }
            CorpusProblem::UnsortedTags => f.write_str("tags are not sorted and distinct"),
            CorpusProblem::DirInputNotAnInput(file) => {
                write!(f, "dir_inputs names {file:?}, which is not an input file")
            }
            CorpusProblem::MtimeNotAnInput(file) => {
                write!(f, "mtimes names {file:?}, which is not an input file")
            }
            CorpusProblem::MtimeNotIso(time) => write!(f, "mtimes: {time:?} is not an ISO time"),
            CorpusProblem::MissingGolden(profile) => write!(
                f,
                "missing golden for profile {profile} (run `session-conformance bless`)"
            ),
            CorpusProblem::OrphanedFile => {
                f.write_str("orphaned file (not an input, case or golden of this case)")
            }
            CorpusProblem::OrphanedGolden => {
                f.write_str("orphaned golden: every profile has its own")
            }
        }
    }
}

impl fmt::Display for CorpusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.kind)
    }
}

impl std::error::Error for CorpusError {}

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
            let text = fs::read_to_string(&path).ok();
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
/// The cases are read on as many threads as there are CPUs.
pub fn load(root: &Path) -> Result<Vec<Case>, CorpusError> {
    let dirs = case_dirs(root)?;
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
    let path = dir.join("case.json");
    let group = dir
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let read = fs::read_to_string(&path)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str::<CaseFile>(&text).map_err(|e| e.to_string()));
    let file = match read {
        Ok(file) => file,
        Err(message) => {
            return Ok(Case {
                file: CaseFile {
                    id: 0,
                    name,
                    description: String::new(),
                    profiles: Vec::new(),
                    seed: String::new(),
                    // An operation every adapter supports, so that every run reports it.
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
                refused: Some(format!("{}: {message}", path.display())),
            });
        }
    };
    let input_dir = dir.join("input");
    let (inputs, unreadable) = if input_dir.is_dir() {
        read_inputs(&input_dir)
    } else {
        (BTreeMap::new(), None)
    };
    let refused =
        unreadable.or_else(|| refusal(&file, &inputs).map(|m| format!("{}: {m}", path.display())));
    let mut file = file;
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

/// The argument keys whose values name a file or folder inside the case directory.
pub const PATH_ARGS: [&str; 5] = ["file", "open", "fork_from", "agent_dir", "session_dir"];

/// Why a case cannot run, if it cannot: every path it names must stay inside the case
/// directory, its `$repeat`s within [`MAX_EXPANSION_BYTES`], its profiles known and
/// its `mtimes` ISO times of input files.
fn refusal(file: &CaseFile, inputs: &BTreeMap<String, Vec<u8>>) -> Option<String> {
    check_expansion(&file.args).err().or_else(|| {
        let mut named = PATH_ARGS
            .iter()
            .filter_map(|key| {
                file.args
                    .get(key)
                    .and_then(Value::as_str)
                    .map(|v| (*key, v))
            })
            .chain(file.mtimes.keys().map(|k| ("mtimes", k.as_str())))
            .chain(file.dir_inputs.iter().map(|k| ("dir_inputs", k.as_str())))
            .chain(file.safety.iter().filter_map(|check| match check {
                SafetyCheck::BytesKept { file } | SafetyCheck::LinesKept { file } => {
                    Some(("safety", file.as_str()))
                }
                SafetyCheck::SingleHeader => None,
            }));
        let outside = |(key, name): (&str, &str)| {
            crate::guard::inside(Path::new(""), name)
                .err()
                .map(|e| format!("{key}: {e}"))
        };
        let unknown = |profile: &String| profile.parse::<Profile>().err();
        let mtimes = |(name, time): (&String, &String)| {
            if !inputs.contains_key(name) {
                Some(format!("mtimes names {name:?}, which is not an input file"))
            } else if session_reference::ids::parse_iso_ms(time).is_none() {
                Some(format!("mtimes: {time:?} is not an ISO time"))
            } else {
                None
            }
        };
        named
            .find_map(outside)
            .or_else(|| file.faults.iter().find_map(crate::faults::Fault::refusal))
            .or_else(|| file.profiles.iter().find_map(unknown))
            .or_else(|| file.mtimes.iter().find_map(mtimes))
    })
}

/// The files under `input_dir`, by path relative to it (`/`-separated), and why the
/// case cannot run when one cannot be read: an input must be a regular file (a link
/// to one is read through) of at most [`crate::guard::MAX_FILE_BYTES`]. Links to folders
/// are skipped, not followed.
fn read_inputs(input_dir: &Path) -> (BTreeMap<String, Vec<u8>>, Option<String>) {
    let mut inputs = BTreeMap::new();
    for item in walkdir::WalkDir::new(input_dir).min_depth(1) {
        let item = match item {
            Ok(item) => item,
            Err(e) => return (inputs, Some(e.to_string())),
        };
        if item.file_type().is_dir() {
            continue;
        }
        let p = item.path();
        let rel = p
            .strip_prefix(input_dir)
            .unwrap_or(p)
            .to_string_lossy()
            .replace('\\', "/");
        let refuse = |why: String| Some(format!("{}: {why}", p.display()));
        match crate::guard::read_regular(p, crate::guard::MAX_FILE_BYTES) {
            Ok(crate::guard::Contents::Bytes(bytes)) => {
                inputs.insert(rel, bytes);
            }
            // A link to a folder is not followed.
            Ok(crate::guard::Contents::Special("directory")) => {}
            Ok(crate::guard::Contents::Special(kind)) => {
                return (
                    inputs,
                    refuse(format!("an input is a {kind}, not a regular file")),
                );
            }
            Ok(crate::guard::Contents::TooLarge(bytes)) => {
                return (
                    inputs,
                    refuse(format!(
                        "an input of {bytes} bytes, more than the limit of {}",
                        crate::guard::MAX_FILE_BYTES
                    )),
                );
            }
            Err(e) => return (inputs, refuse(e.to_string())),
        }
    }
    (inputs, None)
}

/// The most bytes a case's `$repeat` templates may expand to, all together (64 MiB):
/// a case is data, and a count of 2^64 − 1 must be refused, not attempted.
pub const MAX_EXPANSION_BYTES: u64 = 64 << 20;

/// Refuses arguments whose `$repeat` templates would expand past [`MAX_EXPANSION_BYTES`].
/// The walk keeps its own stack, so no nesting depth can overflow it.
fn check_expansion(args: &Value) -> Result<(), String> {
    let mut total: u64 = 0;
    let mut stack = vec![args];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                if let Some(Value::Array(repeat)) = map.get("$repeat") {
                    if let (Some(Value::String(unit)), Some(count)) =
                        (repeat.first(), repeat.get(1).and_then(Value::as_u64))
                    {
                        let bytes = u64::try_from(unit.len()).unwrap_or(u64::MAX);
                        total = total.saturating_add(bytes.saturating_mul(count));
                    }
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    if total > MAX_EXPANSION_BYTES {
        return Err(format!(
            "$repeat expands to {total} bytes, more than the limit of {MAX_EXPANSION_BYTES}"
        ));
    }
    Ok(())
}

/// Expands `{"$repeat": [s, n]}` and `{"$concat": [..]}` into strings.
pub fn expand(value: &Value) -> Value {
    match value {
        Value::Object(map) if map.len() == 1 => {
            if let Some(Value::Array(args)) = map.get("$repeat") {
                if let (Some(Value::String(s)), Some(n)) =
                    (args.first(), args.get(1).and_then(Value::as_u64))
                {
                    return Value::String(s.repeat(usize::try_from(n).unwrap_or(0)));
                }
            }
            if let Some(Value::Array(parts)) = map.get("$concat") {
                let joined: String = parts
                    .iter()
                    .map(|p| match expand(p) {
                        Value::String(s) => s,
                        other => other.to_string(),
                    })
                    .collect();
                return Value::String(joined);
            }
            Value::Object(map.iter().map(|(k, v)| (k.clone(), expand(v))).collect())
        }
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), expand(v))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(expand).collect()),
        other => other.clone(),
    }
}

/// A string template: `{"$repeat": [s, n]}` (`s`, `n` times) or `{"$concat": [..]}`
/// (the parts expanded and joined, a part that is not a string as its JSON text).
enum Template<'a> {
    Repeat(&'a str, usize),
    Concat(&'a [Value]),
}

impl<'a> Template<'a> {
    /// The template `value` is, if it is one: an object of a single key, with
    /// arguments of the right shape.
    fn of(value: &'a Value) -> Option<Template<'a>> {
        let map = value.as_object().filter(|map| map.len() == 1)?;
        if let Some(Value::Array(args)) = map.get("$repeat") {
            if let (Some(Value::String(s)), Some(n)) =
                (args.first(), args.get(1).and_then(Value::as_u64))
            {
                return Some(Template::Repeat(s, usize::try_from(n).unwrap_or(0)));
            }
        }
        match map.get("$concat") {
            Some(Value::Array(parts)) => Some(Template::Concat(parts)),
            _ => None,
        }
    }

    /// Appends the expanded string's JSON escape (no quotes): a repeated string's
    /// escape is its unit's escape repeated, a concatenation's its parts' escapes.
    fn write_escaped(&self, out: &mut String) {
        match *self {
            Template::Repeat(unit, count) => {
                let mut escaped = String::new();
                json_writer::write_escaped(&mut escaped, unit);
                // Blocks of about 4 KiB, then the rest: no copy of the whole string first.
                let per_block = (4096 / escaped.len().max(1)).clamp(1, count.max(1));
                let block = escaped.repeat(per_block);
                // A count too large to hold fails here, as `str::repeat` would.
                out.reserve(escaped.len().saturating_mul(count));
                for _ in 0..count / per_block {
                    out.push_str(&block);
                }
                for _ in 0..count % per_block {
                    out.push_str(&escaped);
                }
            }
            Template::Concat(parts) => {
                for part in parts {
                    match (Template::of(part), part) {
                        (Some(template), _) => template.write_escaped(out),
                        (None, Value::String(s)) => json_writer::write_escaped(out, s),
                        (None, other) => {
                            json_writer::write_escaped(out, &expand(other).to_string());
                        }
                    }
                }
            }
        }
    }
}

/// The compact JSON text of the [`expand`]ed `value`, each template's string written as
/// it expands: no expanded copy is built. (`expand` stays the plain version: the
/// tests check this one against it.)
fn expanded_text(value: &Value) -> String {
    let mut out = String::new();
    write_expanded(&mut out, value);
    out
}

fn write_expanded(out: &mut String, value: &Value) {
    if let Some(template) = Template::of(value) {
        out.push('"');
        template.write_escaped(out);
        out.push('"');
        return;
    }
    match value {
        Value::Object(map) => {
            out.push('{');
            for (i, (key, value)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_writer::write_str(out, key);
                out.push(':');
                write_expanded(out, value);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_expanded(out, item);
            }
            out.push(']');
        }
        other => json_writer::write(out, other, Layout::COMPACT),
    }
}

/// Lints the corpus: case files, names, ids, goldens. Returns every problem found.
pub fn check(root: &Path) -> Vec<CorpusError> {
    let cases = match load(root) {
        Ok(cases) => cases,
        Err(e) => return vec![e],
    };
    let mut problems = Vec::new();
    let mut ids: HashMap<u32, PathBuf> = HashMap::new();
    for case in &cases {
        let at = |kind: CorpusProblem| CorpusError {
            path: case.dir.join("case.json"),
            kind,
        };
        if let Some(reason) = &case.refused {
            problems.push(CorpusError {
                path: case.dir.clone(),
                kind: CorpusProblem::Refused(reason.clone()),
            });
            continue;
        }
        if let Some(other) = ids.insert(case.file.id, case.dir.clone()) {
            problems.push(at(CorpusProblem::DuplicateId {
                id: case.file.id,
                other,
            }));
        }
        let dir_name = case
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if case.file.name != dir_name {
            problems.push(at(CorpusProblem::NameMismatch {
                name: case.file.name.clone(),
                dir: dir_name,
            }));
        }
        if !is_kebab(&case.file.name) {
            problems.push(at(CorpusProblem::NotKebab(case.file.name.clone())));
        }
        if !case.file.op.is_known() {
            problems.push(at(CorpusProblem::UnknownOp(case.file.op.name().to_owned())));
        }
        if case.file.profiles.is_empty() {
            problems.push(at(CorpusProblem::NoProfiles));
        }
        if !SEED_SOURCES
            .iter()
            .any(|source| case.file.seed.starts_with(&format!("{source} ")))
        {
            problems.push(at(CorpusProblem::UnknownSeed(case.file.seed.clone())));
        }
        for tag in &case.file.tags {
            if !TAGS.iter().any(|(known, _)| known == tag) {
                problems.push(at(CorpusProblem::UnknownTag(tag.clone())));
            }
        }
        if !case.file.tags.windows(2).all(|w| w[0] < w[1]) {
            problems.push(at(CorpusProblem::UnsortedTags));
        }
        for file in &case.file.dir_inputs {
            if !case.inputs.contains_key(file) {
                problems.push(at(CorpusProblem::DirInputNotAnInput(file.clone())));
            }
        }
        for (file, time) in &case.file.mtimes {
            if !case.inputs.contains_key(file) {
                problems.push(at(CorpusProblem::MtimeNotAnInput(file.clone())));
            }
            if session_reference::ids::parse_iso_ms(time).is_none() {
                problems.push(at(CorpusProblem::MtimeNotIso(time.clone())));
            }
        }
        for profile in &case.file.profiles {
            match profile.parse::<Profile>() {
                Ok(p) if !case.golden_path(p).is_file() => {
                    problems.push(at(CorpusProblem::MissingGolden(p)));
                }
                Ok(_) => {}
                Err(e) => problems.push(at(CorpusProblem::UnknownProfile(e))),
            }
        }
        for item in fs::read_dir(&case.dir).into_iter().flatten().flatten() {
            let name = item.file_name().to_string_lossy().into_owned();
            let orphan = match name
                .strip_prefix("expected.")
                .and_then(|n| n.strip_suffix(".json"))
            {
                Some("") | None => {
                    !(name == "case.json" || name == "input" || name == "expected.json")
                }
                Some(profile) => !case.file.profiles.iter().any(|p| p == profile),
            };
            if orphan {
                problems.push(CorpusError {
                    path: item.path(),
                    kind: CorpusProblem::OrphanedFile,
                });
            }
        }
        if case.dir.join("expected.json").is_file()
            && case
                .file
                .profiles
                .iter()
                .all(|p| case.dir.join(format!("expected.{p}.json")).is_file())
        {
            problems.push(CorpusError {
                path: case.dir.join("expected.json"),
                kind: CorpusProblem::OrphanedGolden,
            });
        }
    }
    problems
}

fn is_kebab(name: &str) -> bool {
    !name.is_empty()
        && name.split('-').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A case is a folder holding a `case.json` file: not the root, not a folder named
    /// `case.json`, nothing inside `input/`; its input files are read at any depth.
    #[test]
    fn repeats_past_the_limit_are_refused() {
        let fits = json!({"m": {"$repeat": ["ab", 1000]}});
        assert_eq!(check_expansion(&fits), Ok(()));
        for huge in [
            json!({"$repeat": ["x", u64::MAX]}),
            json!({"$repeat": ["xx", 1_u64 << 62]}),
            json!([{"$repeat": ["x", 40 << 20]}, {"$concat": [{"$repeat": ["y", 40 << 20]}]}]),
        ] {
            let error = check_expansion(&huge).unwrap_err();
            assert!(error.contains("more than the limit"), "{error}");
        }
    }

    #[test]
    fn cases_are_the_folders_holding_a_case_file() {
        let root = tempfile::tempdir().expect("temp dir");
        let case_json = |id: u32, name: &str| {
            json!({"id": id, "name": name, "profiles": ["pi"], "seed": "s", "op": "load"})
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

    /// The arguments' text is written as the templates expand; it is the text of the
    /// expanded value, byte for byte, for every shape of template and for every case.
    #[test]
    fn arguments_are_written_as_their_expanded_value() {
        let shapes = [
            json!({"t": {"$repeat": ["ab\"\n\u{e9}\u{1f600}", 5000]}, "n": [1, 2.5, null, true]}),
            json!({"$repeat": ["x", 4096]}),
            json!({"$repeat": ["x", 4097]}),
            json!({"$repeat": ["", 3]}),
            json!({"$repeat": ["x", 0]}),
            json!({"$concat": ["a", {"$repeat": ["b", 3]}, 7, {"k": {"$repeat": ["c", 2]}}, [1]]}),
            json!({"$concat": [{"$concat": ["x", "\u{1}"]}, "y"]}),
            json!({"$repeat": ["x"]}),
            json!({"$repeat": "x"}),
            json!({"$concat": "x"}),
            json!({"$repeat": ["x", 2], "other": 1}),
            json!([{"$repeat": ["-", 3]}, "plain", {}]),
        ];
        let cases = load(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../corpus/cases"
        )))
        .expect("corpus");
        assert!(cases.len() > 200);
        let all = shapes.iter().chain(cases.iter().map(|c| &c.file.args));
        for args in all {
            let written = expanded_text(args);
            let expanded = serde_json::to_string(&expand(args)).expect("writes");
            assert!(written == expanded, "{args}");
        }
    }

    #[test]
    fn templates_expand() {
        let args =
            json!({"m": {"$concat": [{"$repeat": ["x", 3]}, "y"]}, "n": [{"$repeat": ["ab", 2]}]});
        assert_eq!(expand(&args), json!({"m": "xxxy", "n": ["abab"]}));
    }

    #[test]
    fn kebab_names() {
        for (name, ok) in [
            ("crlf-line-endings", true),
            ("v1-to-v3", true),
            ("Bad", false),
            ("a--b", false),
            ("", false),
        ] {
            assert_eq!(is_kebab(name), ok, "{name}");
        }
    }

    #[test]
    fn known_tokens_come_from_inputs_arguments_and_mtimes_once() {
        let file: CaseFile = serde_json::from_value(json!({
            "id": 1, "name": "x", "profiles": ["pi"], "seed": "s", "op": "load",
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
