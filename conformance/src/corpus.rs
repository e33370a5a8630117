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
pub const TAGS: [(&str, &str); 9] = [
    ("legacy-v1", "an input session file is version 1 (`version ?? 1` read as a number is below 2): migrated on load"),
    ("legacy-v2", "an input session file is version 2 (read as a number, from 2 to below 3): migrated on load"),
    ("torn-line", "an input session file ends in a line that is not complete JSON"),
    ("bad-line", "an input session file has a line that is not JSON, or not an object, before its last"),
    ("bad-header", "an input session file has no valid header: empty, or its first value is not a session header"),
    ("file-naming", "the golden names a file the implementation creates (`<ftime>_<session:N>.jsonl`)"),
    ("missing-file", "the operation names a session file that does not exist"),
    ("cycle", "an input session file's parent links form a cycle"),
    ("lenient-message", "a message is one the real implementations' types refuse (`message_types`), as the point of the case; its description says which and why"),
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
    /// a malformed template or a `$repeat` past the limit, an unknown profile, a bad
    /// `mtimes` entry, an input that is not a regular file or has a name that would
    /// change on its way, a link out of the case folder, a placeholder in an input or
    /// the arguments, a golden past the size limit, a `case.json` that does not read).
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

/// A case's expected output for one profile.
#[derive(Debug, Clone)]
pub struct Golden {
    /// `expected.<profile>.json` if present, else `expected.json`.
    pub path: PathBuf,
    /// Its text, or why it cannot be read (read as a regular file of at most
    /// [`crate::guard::MAX_FILE_BYTES`]).
    pub text: Result<String, GoldenProblem>,
}

/// Why a golden cannot be read or used.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GoldenProblem {
    /// There is no golden file.
    Missing,
    /// Not a regular file (its kind): never opened.
    Special(&'static str),
    /// Larger than [`crate::guard::MAX_FILE_BYTES`] (its size): never read.
    TooLarge(u64),
    /// The file could not be read (the system's message).
    Unreadable(String),
    /// Its bytes are not UTF-8.
    NotUtf8,
    /// Its text is not JSON.
    NotJson {
        /// The line of the error (1-based).
        line: usize,
        /// The parser's message.
        message: String,
    },
    /// Nested deeper than a golden can be ([`GOLDEN_NESTING`]).
    TooDeep {
        /// How deep it nests.
        depth: usize,
    },
}

impl GoldenProblem {
    /// A parser's error as [`GoldenProblem::NotJson`].
    pub fn not_json(error: &serde_json::Error) -> GoldenProblem {
        GoldenProblem::NotJson {
            line: error.line(),
            message: message_of(error),
        }
    }

    /// How a run's result names it: `missing golden` or `unreadable golden`.
    pub fn signature(&self) -> &'static str {
        match self {
            GoldenProblem::Missing => "missing golden",
            _ => "unreadable golden",
        }
    }
}

impl fmt::Display for GoldenProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GoldenProblem::Missing => f.write_str("missing golden"),
            GoldenProblem::Special(kind) => write!(f, "is a {kind}, not a regular file"),
            GoldenProblem::TooLarge(bytes) => write!(
                f,
                "{bytes} bytes, more than the limit of {}",
                crate::guard::MAX_FILE_BYTES
            ),
            GoldenProblem::Unreadable(message) => f.write_str(message),
            GoldenProblem::NotUtf8 => f.write_str("not UTF-8"),
            GoldenProblem::NotJson { line, message } => {
                write!(f, "line {line}: not JSON: {message}")
            }
            GoldenProblem::TooDeep { depth } => write!(
                f,
                "nested {depth} levels deep, deeper than the limit of {GOLDEN_NESTING}"
            ),
        }
    }
}

/// How deeply a golden may nest: an output value is at most
/// [`crate::guard::MAX_NESTING`] deep, and a golden wraps it in a few levels
/// (`response`, `ok`; `files`, a name, `lines`).
pub const GOLDEN_NESTING: usize = crate::guard::MAX_NESTING + 8;

/// The text of a serde_json error without its ` at line L column C`.
fn message_of(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let location = format!(" at line {} column {}", error.line(), error.column());
    text.strip_suffix(&location).unwrap_or(&text).to_owned()
}

/// Why a case cannot run ([`Case::refused`]): the file concerned (its `case.json`, an
/// input file or a golden), the line when one can be named, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseError {
    /// The file concerned.
    pub path: PathBuf,
    /// The line of that file (1-based), when one can be named.
    pub line: Option<usize>,
    /// What is wrong.
    pub kind: CaseProblem,
}

/// What makes a case unable to run ([`CaseError`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CaseProblem {
    /// `case.json` could not be read, or is not a case (the reader's message).
    NotACase(String),
    /// `case.json` nests deeper than [`crate::guard::MAX_NESTING`].
    TooDeep(crate::guard::GuardError),
    /// A path the case names leaves the case directory.
    PathOutside {
        /// The field that names it: `file`, `mtimes`, `safety`, …
        key: &'static str,
        /// Why it is refused.
        error: crate::guard::GuardError,
    },
    /// A fault whose path leaves the case directory, or whose fields do not fit its kind.
    Fault(String),
    /// A profile name that is not one.
    UnknownProfile(String),
    /// `mtimes` names a file that is not an input.
    MtimeNotAnInput(String),
    /// An `mtimes` value that is not an ISO time.
    MtimeNotIso(String),
    /// A `$repeat` or `$concat` template that is not of its form.
    BadTemplate {
        /// Where it is in `args` (a JSON Pointer).
        pointer: String,
        /// What is wrong with it.
        problem: TemplateProblem,
    },
    /// The `$repeat` templates expand to more than [`MAX_EXPANSION_BYTES`] (how many).
    TooMuchExpansion(u64),
    /// An input file name that would change on its way to the adapter (why).
    InputName(&'static str),
    /// An input that is not a regular file (its kind).
    InputNotRegular(&'static str),
    /// An input larger than [`crate::guard::MAX_FILE_BYTES`] (its size).
    InputTooLarge(u64),
    /// An input that could not be read (the system's message).
    InputUnreadable(String),
    /// An input that is a link leading out of the case folder.
    LinkLeaves,
    /// A placeholder the normaliser writes (`<time>`, `<id:1>`, …), in an input file,
    /// an input's name or the arguments.
    Placeholder(String),
    /// A golden that cannot be read whole.
    Golden(GoldenProblem),
}

/// What is wrong with a `$repeat` or `$concat` template ([`CaseProblem::BadTemplate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TemplateProblem {
    /// An object with a template key and other keys.
    ExtraKeys,
    /// `$repeat` is not an array of two items: a string and a count.
    RepeatShape,
    /// The count of a `$repeat` is not a whole number from 0.
    RepeatCount,
    /// `$concat` is not an array.
    ConcatShape,
    /// A part of a `$concat` is neither a string nor a template.
    ConcatPart,
}

impl fmt::Display for TemplateProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TemplateProblem::ExtraKeys => "a template has one key, `$repeat` or `$concat`",
            TemplateProblem::RepeatShape => "`$repeat` takes [string, count]",
            TemplateProblem::RepeatCount => "the count of a `$repeat` is a whole number from 0",
            TemplateProblem::ConcatShape => "`$concat` takes an array of parts",
            TemplateProblem::ConcatPart => "a part of a `$concat` is a string or a template",
        })
    }
}

impl fmt::Display for CaseProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaseProblem::NotACase(message)
            | CaseProblem::Fault(message)
            | CaseProblem::UnknownProfile(message)
            | CaseProblem::InputUnreadable(message) => f.write_str(message),
            CaseProblem::TooDeep(error) => error.fmt(f),
            CaseProblem::PathOutside { key, error } => write!(f, "{key}: {error}"),
            CaseProblem::MtimeNotAnInput(name) => {
                write!(f, "mtimes names {name:?}, which is not an input file")
            }
            CaseProblem::MtimeNotIso(time) => write!(f, "mtimes: {time:?} is not an ISO time"),
            CaseProblem::BadTemplate { pointer, problem } => {
                write!(f, "args{pointer}: malformed template: {problem}")
            }
            CaseProblem::TooMuchExpansion(bytes) => write!(
                f,
                "$repeat expands to {bytes} bytes, more than the limit of {MAX_EXPANSION_BYTES}"
            ),
            CaseProblem::InputName(why) => write!(f, "an input name {why}"),
            CaseProblem::InputNotRegular(kind) => {
                write!(f, "an input is a {kind}, not a regular file")
            }
            CaseProblem::InputTooLarge(bytes) => write!(
                f,
                "an input of {bytes} bytes, more than the limit of {}",
                crate::guard::MAX_FILE_BYTES
            ),
            CaseProblem::LinkLeaves => {
                f.write_str("an input is a link that leads out of the case folder")
            }
            CaseProblem::Placeholder(text) => write!(
                f,
                "holds {text:?}, a placeholder the normaliser writes; an output could not be told from it"
            ),
            CaseProblem::Golden(problem) => write!(f, "golden: {problem}"),
        }
    }
}

impl fmt::Display for CaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}: line {line}: {}", self.path.display(), self.kind),
            None => write!(f, "{}: {}", self.path.display(), self.kind),
        }
    }
}

impl std::error::Error for CaseError {}

/// A problem found while loading or linting the corpus: the file, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorpusError {
    /// The file concerned.
    pub path: PathBuf,
    /// What is wrong.
    pub kind: CorpusProblem,
}

/// What a case's `seed` may cite: the five seed documents (000–004; 000 governs `omp`, 002 `pi`, 003 `operator`)
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
    /// The case cannot run ([`Case::refused`]).
    Refused(Box<CaseError>),
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
    /// A message the real implementations' types refuse, in a case not tagged
    /// `lenient-message`: where it is and why.
    RefusedMessage(String),
    /// Tagged `lenient-message`, with no message the real types refuse.
    NeedlessLenientTag,
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
    /// A golden that does not read, or is not JSON.
    Golden(GoldenProblem),
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
            CorpusProblem::RefusedMessage(why) => write!(
                f,
                "{why}; a message must be one the real implementations write, or the case tagged lenient-message"
            ),
            CorpusProblem::NeedlessLenientTag => {
                f.write_str("tagged lenient-message, but every message is one the real implementations write")
            }
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
            CorpusProblem::Golden(problem) => problem.fmt(f),
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
            seed: String::new(),
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

/// Reads `case.json` (`path`): a regular file of at most [`crate::guard::MAX_FILE_BYTES`],
/// UTF-8, nested at most [`crate::guard::MAX_NESTING`] deep (serde_json's own limit of
/// 128 is lifted, so `args` may nest as deep as the rest of the harness reads), and a
/// case. Returns the case and its text.
fn read_case_file(path: &Path) -> Result<(CaseFile, String), CaseError> {
    use crate::guard::{read_regular, Contents, MAX_FILE_BYTES};
    let error = |line, kind| CaseError {
        path: path.to_path_buf(),
        line,
        kind,
    };
    let not_a_case = |message: String| error(None, CaseProblem::NotACase(message));
    // A link could lead out of the corpus: `case.json` is read only as a file of its own.
    if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(not_a_case(
            "is a link; a case file is a regular file".to_owned(),
        ));
    }
    let bytes = match read_regular(path, MAX_FILE_BYTES) {
        Ok(Contents::Bytes(bytes)) => bytes,
        Ok(Contents::Special(kind)) => {
            return Err(not_a_case(format!("is a {kind}, not a regular file")))
        }
        Ok(Contents::TooLarge(bytes)) => {
            return Err(not_a_case(format!(
                "{bytes} bytes, more than the limit of {MAX_FILE_BYTES}"
            )))
        }
        Err(e) => return Err(not_a_case(e.to_string())),
    };
    let text = String::from_utf8(bytes).map_err(|_| not_a_case("not UTF-8".to_owned()))?;
    crate::guard::check_nesting(&text).map_err(|e| error(None, CaseProblem::TooDeep(e)))?;
    let mut reader = serde_json::Deserializer::from_str(&text);
    reader.disable_recursion_limit();
    let file = CaseFile::deserialize(&mut reader)
        .and_then(|file| reader.end().map(|()| file))
        .map_err(|e| error(Some(e.line()), CaseProblem::NotACase(message_of(&e))))?;
    Ok((file, text))
}

/// The argument keys whose values name a file or folder inside the case directory.
pub const PATH_ARGS: [&str; 5] = ["file", "open", "fork_from", "agent_dir", "session_dir"];

/// Why a case cannot run, if it cannot: its templates well formed and their `$repeat`s
/// within [`MAX_EXPANSION_BYTES`], every path it names inside the case directory, its
/// faults, profiles and `mtimes` right, no placeholder in its arguments or inputs, and
/// its goldens regular files within the size limit. `text` is `case.json`'s text.
fn check_case(
    file: &CaseFile,
    text: &str,
    inputs: &BTreeMap<String, Vec<u8>>,
    dir: &Path,
) -> Result<(), CaseError> {
    let at = |line, kind| CaseError {
        path: dir.join("case.json"),
        line,
        kind,
    };
    let args_line = line_of(text, "\"args\"");
    check_templates(&file.args).map_err(|(nth, kind)| {
        let line = nth_template_line(text, nth).or(args_line);
        at(line, kind)
    })?;
    let problem = named_paths(file)
        .find_map(|(key, name)| {
            let outside = crate::guard::inside(Path::new(""), name).err();
            outside.map(|error| CaseProblem::PathOutside { key, error })
        })
        .or_else(|| {
            file.faults
                .iter()
                .find_map(crate::faults::Fault::refusal)
                .map(CaseProblem::Fault)
        })
        .or_else(|| {
            file.profiles
                .iter()
                .find_map(|p| p.parse::<Profile>().err())
                .map(CaseProblem::UnknownProfile)
        })
        .or_else(|| {
            file.mtimes
                .iter()
                .find_map(|(name, time)| mtime_problem(name, time, inputs))
        });
    if let Some(kind) = problem {
        return Err(at(None, kind));
    }
    // Templates only repeat and join the strings of `args`: without a `<` in them,
    // no placeholder can come out, and nothing is expanded.
    let expanded = if holds_angle(&file.args) {
        expanded_text(&file.args)
    } else {
        String::new()
    };
    if let Some(found) = crate::normalize::find_placeholder(expanded.as_bytes()) {
        let placeholder = &expanded[found];
        // Its first spelling after `"args"`; one a template builds has none.
        let args_at = text.find("\"args\"").unwrap_or(0);
        let line = text[args_at..]
            .find(placeholder)
            .map(|at| line_at(text.as_bytes(), args_at + at))
            .or(args_line);
        return Err(at(line, CaseProblem::Placeholder(placeholder.to_owned())));
    }
    check_input_placeholders(file, inputs, dir)?;
    check_goldens(dir)
}

/// Whether a string or key of `value` holds a `<`. The walk keeps its own stack.
fn holds_angle(value: &Value) -> bool {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::String(s) if s.contains('<') => return true,
            Value::Object(map) => {
                if map.keys().any(|key| key.contains('<')) {
                    return true;
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    false
}

/// The paths a case names, with the field that names each.
fn named_paths(file: &CaseFile) -> impl Iterator<Item = (&'static str, &str)> {
    PATH_ARGS
        .iter()
        .filter_map(|&key| file.args.get(key).and_then(Value::as_str).map(|v| (key, v)))
        .chain(file.mtimes.keys().map(|k| ("mtimes", k.as_str())))
        .chain(file.dir_inputs.iter().map(|k| ("dir_inputs", k.as_str())))
        .chain(file.safety.iter().filter_map(|check| match check {
            SafetyCheck::BytesKept { file } | SafetyCheck::LinesKept { file } => {
                Some(("safety", file.as_str()))
            }
            SafetyCheck::SingleHeader => None,
        }))
}

/// What is wrong with an `mtimes` entry, if anything: it names an input file and an ISO time.
fn mtime_problem(
    name: &str,
    time: &str,
    inputs: &BTreeMap<String, Vec<u8>>,
) -> Option<CaseProblem> {
    if !inputs.contains_key(name) {
        Some(CaseProblem::MtimeNotAnInput(name.to_owned()))
    } else if session_reference::ids::parse_iso_ms(time).is_none() {
        Some(CaseProblem::MtimeNotIso(time.to_owned()))
    } else {
        None
    }
}

/// The 1-based line of the first `needle` in `text`.
fn line_of(text: &str, needle: &str) -> Option<usize> {
    text.find(needle).map(|at| line_at(text.as_bytes(), at))
}

/// The 1-based line of byte `at` of `bytes`.
fn line_at(bytes: &[u8], at: usize) -> usize {
    1 + memchr::memchr_iter(b'\n', &bytes[..at]).count()
}

/// The line of the `nth` template key (`"$repeat"` or `"$concat"`, from 1) after the
/// `"args"` key of `text`: [`check_templates`] counts templates in document order.
fn nth_template_line(text: &str, nth: usize) -> Option<usize> {
    let args = text.find("\"args\"")?;
    let after = &text[args..];
    let mut keys = after
        .match_indices("\"$repeat\"")
        .chain(after.match_indices("\"$concat\""))
        .map(|(at, _)| at)
        .collect::<Vec<usize>>();
    keys.sort_unstable();
    let at = *keys.get(nth.checked_sub(1)?)?;
    Some(line_at(text.as_bytes(), args + at))
}

/// Refuses placeholders the normaliser writes in input files and their names, except
/// `<dir>` in a `dir_inputs` file (the runner replaces it before the request).
fn check_input_placeholders(
    file: &CaseFile,
    inputs: &BTreeMap<String, Vec<u8>>,
    dir: &Path,
) -> Result<(), CaseError> {
    let input_dir = dir.join("input");
    for (name, bytes) in inputs {
        let path = input_dir.join(name);
        if let Some(found) = crate::normalize::find_placeholder(name.as_bytes()) {
            let placeholder = name[found].to_owned();
            return Err(CaseError {
                path,
                line: None,
                kind: CaseProblem::Placeholder(placeholder),
            });
        }
        let dir_allowed = file.dir_inputs.contains(name);
        if let Some(found) = placeholder_in(bytes, dir_allowed) {
            let placeholder = String::from_utf8_lossy(&bytes[found.clone()]).into_owned();
            return Err(CaseError {
                path,
                line: Some(line_at(bytes, found.start)),
                kind: CaseProblem::Placeholder(placeholder),
            });
        }
    }
    Ok(())
}

/// The first placeholder in `bytes`, `<dir>` left out when `dir_allowed`: as written,
/// or (in a line that is JSON with a `\u` escape) as a string or key of it reads, so
/// `"\u003ctime>"` is found as `<time>`; the range is then the line's. A JSON line
/// that is an object keyed like a snapshot's description of a line (`$bom`, `$deep`,
/// `$long`, `$unparsed`) counts too: it would read as what the snapshot writes for a line
/// it could not show.
fn placeholder_in(bytes: &[u8], dir_allowed: bool) -> Option<std::ops::Range<usize>> {
    let allowed =
        |found: &[u8]| dir_allowed && found == crate::normalize::DIR_PLACEHOLDER.as_bytes();
    let mut from = 0;
    while let Some(found) = crate::normalize::find_placeholder(&bytes[from..]) {
        let found = from + found.start..from + found.end;
        if !allowed(&bytes[found.clone()]) {
            return Some(found);
        }
        from = found.end;
    }
    let mut start = 0;
    for line in bytes.split(|&b| b == b'\n') {
        let range = start..start + line.len();
        start += line.len() + 1;
        let escaped = memchr::memmem::find(line, b"\\u").is_some();
        // A key may spell its `$` as `\u0024`.
        let marked = escaped || memchr::memchr(b'$', line).is_some();
        if !(escaped || marked) || crate::guard::check_nesting_of_bytes(line).is_err() {
            continue;
        }
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if marked
            && value
                .as_object()
                .is_some_and(|o| o.keys().any(|k| SNAPSHOT_MARKS.contains(&k.as_str())))
        {
            return Some(range);
        }
        if escaped && decoded_placeholder(&value, &allowed) {
            return Some(range);
        }
    }
    None
}

/// The keys of the objects a snapshot writes for a line it does not show as itself.
const SNAPSHOT_MARKS: [&str; 4] = ["$bom", "$deep", "$long", "$unparsed"];

/// Whether a string or key of `value` holds a placeholder (not `allowed`). Without
/// recursion.
fn decoded_placeholder(value: &Value, allowed: &dyn Fn(&[u8]) -> bool) -> bool {
    let holds = |text: &str| {
        let bytes = text.as_bytes();
        let mut from = 0;
        while let Some(found) = crate::normalize::find_placeholder(&bytes[from..]) {
            let found = from + found.start..from + found.end;
            if !allowed(&bytes[found.clone()]) {
                return true;
            }
            from = found.end;
        }
        false
    };
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::String(s) if holds(s) => return true,
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => {
                if map.keys().any(|k| holds(k)) {
                    return true;
                }
                stack.extend(map.values());
            }
            _ => {}
        }
    }
    false
}

/// Refuses a golden that is not a regular file or is larger than
/// [`crate::guard::MAX_FILE_BYTES`]: it is never read (a FIFO would hang a run, a huge
/// file take its memory). A missing golden is `corpus check`'s to report.
fn check_goldens(dir: &Path) -> Result<(), CaseError> {
    let names = std::iter::once("expected.json".to_owned()).chain(
        Profile::ALL
            .iter()
            .map(|p| format!("expected.{}.json", p.name())),
    );
    for path in names.map(|name| dir.join(name)) {
        // Not followed: a link could lead out of the corpus, and `bless` would write there.
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        let problem = if meta.file_type().is_symlink() {
            GoldenProblem::Special("link")
        } else if !meta.is_file() {
            GoldenProblem::Special(crate::guard::kind_name(meta.file_type()))
        } else if meta.len() > crate::guard::MAX_FILE_BYTES {
            GoldenProblem::TooLarge(meta.len())
        } else {
            continue;
        };
        return Err(CaseError {
            path,
            line: None,
            kind: CaseProblem::Golden(problem),
        });
    }
    Ok(())
}

/// Reads a golden: a regular file of at most [`crate::guard::MAX_FILE_BYTES`], UTF-8.
fn read_golden(path: &Path) -> Result<String, GoldenProblem> {
    use crate::guard::{read_regular, Contents, MAX_FILE_BYTES};
    // A link could lead out of the corpus (and `bless` would write through it).
    if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(GoldenProblem::Special("link"));
    }
    match read_regular(path, MAX_FILE_BYTES) {
        Ok(Contents::Bytes(bytes)) => {
            let text = String::from_utf8(bytes).map_err(|_| GoldenProblem::NotUtf8)?;
            // Never made a value past the depth the comparison walks.
            match crate::guard::nesting(&text) {
                depth if depth > GOLDEN_NESTING => Err(GoldenProblem::TooDeep { depth }),
                _ => Ok(text),
            }
        }
        Ok(Contents::Special(kind)) => Err(GoldenProblem::Special(kind)),
        Ok(Contents::TooLarge(bytes)) => Err(GoldenProblem::TooLarge(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(GoldenProblem::Missing),
        Err(e) => Err(GoldenProblem::Unreadable(e.to_string())),
    }
}

/// Whether a golden's text is JSON, without building its value: nested at most
/// [`GOLDEN_NESTING`] deep, then read by a parser that keeps nothing.
fn check_golden_text(text: &str) -> Result<(), GoldenProblem> {
    let depth = crate::guard::nesting(text);
    if depth > GOLDEN_NESTING {
        return Err(GoldenProblem::TooDeep { depth });
    }
    let mut reader = serde_json::Deserializer::from_str(text);
    reader.disable_recursion_limit();
    serde::de::IgnoredAny::deserialize(&mut reader)
        .and_then(|_| reader.end())
        .map_err(|e| GoldenProblem::not_json(&e))
}

/// The files under the case's `input/` folder, by path relative to it (`/`-separated).
/// An input must be a regular file of at most [`crate::guard::MAX_FILE_BYTES`], whose
/// name reaches the adapter unchanged (UTF-8, no `\`); a link to one is read through when
/// it stays inside the case folder. Links to folders are skipped, not followed.
fn read_inputs(dir: &Path) -> Result<BTreeMap<String, Vec<u8>>, CaseError> {
    let input_dir = dir.join("input");
    let mut inputs = BTreeMap::new();
    if !input_dir.is_dir() {
        return Ok(inputs);
    }
    let error = |path: &Path, kind| CaseError {
        path: path.to_path_buf(),
        line: None,
        kind,
    };
    let unreadable = |e: &dyn fmt::Display| CaseProblem::InputUnreadable(e.to_string());
    let folder = dir.canonicalize().map_err(|e| error(dir, unreadable(&e)))?;
    let root = inside_folder(&folder, &input_dir).map_err(|kind| error(&input_dir, kind))?;
    for item in walkdir::WalkDir::new(&root).min_depth(1) {
        let item = item.map_err(|e| error(e.path().unwrap_or(&input_dir), unreadable(&e)))?;
        if item.file_type().is_dir() {
            continue;
        }
        let relative = item.path().strip_prefix(&root).unwrap_or(item.path());
        let shown = input_dir.join(relative);
        let name =
            input_name(relative).map_err(|why| error(&shown, CaseProblem::InputName(why)))?;
        let target = if item.file_type().is_symlink() {
            // A link to a folder is not followed, wherever it leads.
            if item.path().is_dir() {
                continue;
            }
            inside_folder(&folder, item.path()).map_err(|kind| error(&shown, kind))?
        } else {
            item.path().to_path_buf()
        };
        let bytes = read_input(&target).map_err(|kind| error(&shown, kind))?;
        inputs.insert(name, bytes);
    }
    Ok(inputs)
}

/// Where `path` leads (links resolved), when that is inside `folder` (canonical).
fn inside_folder(folder: &Path, path: &Path) -> Result<PathBuf, CaseProblem> {
    let target = path
        .canonicalize()
        .map_err(|e| CaseProblem::InputUnreadable(e.to_string()))?;
    if target.starts_with(folder) {
        Ok(target)
    } else {
        Err(CaseProblem::LinkLeaves)
    }
}

/// An input's name as the adapter's request and the snapshot spell it: its parts joined
/// by `/`. Refused (why) when a part is not UTF-8 or holds a `\`: such a name would
/// reach the case directory changed, and two of them could merge into one.
fn input_name(relative: &Path) -> Result<String, &'static str> {
    let mut parts = Vec::new();
    for component in relative.components() {
        let std::path::Component::Normal(part) = component else {
            return Err("is not a plain relative path");
        };
        let part = part.to_str().ok_or("is not UTF-8")?;
        if part.contains('\\') {
            return Err("holds a `\\`, which the runner would read as a folder separator");
        }
        parts.push(part);
    }
    Ok(parts.join("/"))
}

/// An input file's bytes: a regular file within the size limit.
fn read_input(path: &Path) -> Result<Vec<u8>, CaseProblem> {
    use crate::guard::{read_regular, Contents, MAX_FILE_BYTES};
    match read_regular(path, MAX_FILE_BYTES) {
        Ok(Contents::Bytes(bytes)) => Ok(bytes),
        Ok(Contents::Special(kind)) => Err(CaseProblem::InputNotRegular(kind)),
        Ok(Contents::TooLarge(bytes)) => Err(CaseProblem::InputTooLarge(bytes)),
        Err(e) => Err(CaseProblem::InputUnreadable(e.to_string())),
    }
}

/// The most bytes a case's `$repeat` templates may expand to, all together (64 MiB):
/// a case is data, and a count of 2^64 − 1 must be refused, not attempted.
pub const MAX_EXPANSION_BYTES: u64 = 64 << 20;

/// Refuses malformed templates (an object holding `$repeat` or `$concat` must be one
/// of the forms `corpus/README.md` gives: it would otherwise reach the adapter as a
/// literal object) and `$repeat`s that would expand past [`MAX_EXPANSION_BYTES`].
/// A malformed template is returned with its number in document order (from 1). The
/// walk keeps its own stack, so no nesting depth can overflow it.
fn check_templates(args: &Value) -> Result<(), (usize, CaseProblem)> {
    let mut total: u64 = 0;
    let mut templates = 0;
    let mut stack = vec![(String::new(), args)];
    while let Some((pointer, value)) = stack.pop() {
        match value {
            Value::Object(map) if map.contains_key("$repeat") || map.contains_key("$concat") => {
                templates += 1;
                let bad = |problem| {
                    (
                        templates,
                        CaseProblem::BadTemplate {
                            pointer: pointer.clone(),
                            problem,
                        },
                    )
                };
                let parts = template_parts(map).map_err(bad)?;
                match parts {
                    TemplateParts::Repeat(bytes) => total = total.saturating_add(bytes),
                    TemplateParts::Concat(parts) => {
                        let nested = parts
                            .iter()
                            .enumerate()
                            .filter(|(_, part)| part.is_object());
                        let nested: Vec<_> = nested
                            .map(|(i, part)| (format!("{pointer}/$concat/{i}"), part))
                            .collect();
                        stack.extend(nested.into_iter().rev());
                    }
                }
            }
            Value::Object(map) => stack.extend(map.iter().rev().map(|(key, value)| {
                (
                    format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1")),
                    value,
                )
            })),
            Value::Array(items) => stack.extend(
                items
                    .iter()
                    .enumerate()
                    .rev()
                    .map(|(i, value)| (format!("{pointer}/{i}"), value)),
            ),
            _ => {}
        }
    }
    if total > MAX_EXPANSION_BYTES {
        return Err((0, CaseProblem::TooMuchExpansion(total)));
    }
    Ok(())
}

/// A well-formed template's content: a `$repeat`'s expanded size, or a `$concat`'s parts.
enum TemplateParts<'a> {
    Repeat(u64),
    Concat(&'a [Value]),
}

/// Checks the form of a template object (`map` holds `$repeat` or `$concat`).
fn template_parts(
    map: &serde_json::Map<String, Value>,
) -> Result<TemplateParts<'_>, TemplateProblem> {
    if map.len() != 1 {
        return Err(TemplateProblem::ExtraKeys);
    }
    if let Some(repeat) = map.get("$repeat") {
        let [unit, count] = repeat.as_array().map(Vec::as_slice).unwrap_or_default() else {
            return Err(TemplateProblem::RepeatShape);
        };
        let unit = unit.as_str().ok_or(TemplateProblem::RepeatShape)?;
        let count = count.as_u64().ok_or(TemplateProblem::RepeatCount)?;
        let bytes = u64::try_from(unit.len()).unwrap_or(u64::MAX);
        return Ok(TemplateParts::Repeat(bytes.saturating_mul(count)));
    }
    let parts = map
        .get("$concat")
        .and_then(Value::as_array)
        .ok_or(TemplateProblem::ConcatShape)?;
    let is_part = |part: &Value| match part {
        Value::String(_) => true,
        Value::Object(map) => map.contains_key("$repeat") || map.contains_key("$concat"),
        _ => false,
    };
    if !parts.iter().all(is_part) {
        return Err(TemplateProblem::ConcatPart);
    }
    Ok(TemplateParts::Concat(parts))
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
                kind: CorpusProblem::Refused(Box::new(reason.clone())),
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
        let profiles: Vec<Profile> = case
            .file
            .profiles
            .iter()
            .filter_map(|p| p.parse().ok())
            .collect();
        let refused =
            crate::message_types::first_refused(&profiles, &case.inputs, &expand(&case.file.args));
        match (
            refused,
            case.file.tags.iter().any(|t| t == "lenient-message"),
        ) {
            (Some(why), false) => problems.push(at(CorpusProblem::RefusedMessage(why))),
            (None, true) => problems.push(at(CorpusProblem::NeedlessLenientTag)),
            _ => {}
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
        let mut goldens: Vec<&Golden> = Vec::new();
        for profile in &case.file.profiles {
            match profile.parse::<Profile>() {
                Ok(p) if !case.golden_path(p).is_file() => {
                    problems.push(at(CorpusProblem::MissingGolden(p)));
                }
                Ok(p) => goldens.push(case.golden(p)),
                Err(e) => problems.push(at(CorpusProblem::UnknownProfile(e))),
            }
        }
        let mut seen = HashSet::new();
        goldens.retain(|golden| seen.insert(golden.path.clone()));
        problems.extend(goldens.into_iter().filter_map(golden_problem));
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

/// What is wrong with a golden that exists, if anything: it reads, and it is JSON.
fn golden_problem(golden: &Golden) -> Option<CorpusError> {
    let problem = match &golden.text {
        Ok(text) => check_golden_text(text).err()?,
        Err(problem) => problem.clone(),
    };
    Some(CorpusError {
        path: golden.path.clone(),
        kind: CorpusProblem::Golden(problem),
    })
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
        assert_eq!(check_templates(&fits), Ok(()));
        for huge in [
            json!({"$repeat": ["x", u64::MAX]}),
            json!({"$repeat": ["xx", 1_u64 << 62]}),
            json!([{"$repeat": ["x", 40 << 20]}, {"$concat": [{"$repeat": ["y", 40 << 20]}]}]),
        ] {
            let (_, error) = check_templates(&huge).unwrap_err();
            assert!(error.to_string().contains("more than the limit"), "{error}");
        }
    }

    /// Issue #41, 16: a template not of its form is refused, with where it is and its
    /// number in document order (which finds its line in `case.json`).
    #[test]
    fn malformed_templates_are_refused() {
        use TemplateProblem as P;
        let table = [
            (
                json!({"m": {"$repeat": ["x", -5]}}),
                1,
                "/m",
                P::RepeatCount,
            ),
            (
                json!({"m": {"$repeat": ["x", 1.5]}}),
                1,
                "/m",
                P::RepeatCount,
            ),
            (
                json!({"m": {"$repeat": ["x", {"$repeat": ["1", 2]}]}}),
                1,
                "/m",
                P::RepeatCount,
            ),
            (
                json!({"m": {"$repeat": ["x", 2], "other": 1}}),
                1,
                "/m",
                P::ExtraKeys,
            ),
            (json!({"m": {"$repeat": ["x"]}}), 1, "/m", P::RepeatShape),
            (
                json!({"m": {"$repeat": ["x", 2, 3]}}),
                1,
                "/m",
                P::RepeatShape,
            ),
            (
                json!({"m": {"$repeat": [{"$concat": ["x"]}, 2]}}),
                1,
                "/m",
                P::RepeatShape,
            ),
            (json!({"m": {"$repeat": "x"}}), 1, "/m", P::RepeatShape),
            (json!({"m": {"$concat": "x"}}), 1, "/m", P::ConcatShape),
            (json!({"m": {"$concat": ["a", 7]}}), 1, "/m", P::ConcatPart),
            (
                json!({"m": {"$concat": ["a", {"k": 1}]}}),
                1,
                "/m",
                P::ConcatPart,
            ),
            (
                json!({"$concat": ["a", {"$concat": [null]}]}),
                2,
                "/$concat/1",
                P::ConcatPart,
            ),
            (
                json!({"a": {"$repeat": ["x", 1]}, "b": [{"$repeat": ["x", -1]}]}),
                2,
                "/b/0",
                P::RepeatCount,
            ),
            (
                json!({"$repeat": ["x", 1], "$concat": ["y"]}),
                1,
                "",
                P::ExtraKeys,
            ),
        ];
        for (args, nth, pointer, problem) in table {
            let expected = CaseProblem::BadTemplate {
                pointer: pointer.to_owned(),
                problem,
            };
            assert_eq!(check_templates(&args), Err((nth, expected)), "{args}");
        }
        let well_formed = json!({"$concat": ["a", {"$repeat": ["b", 0]}, {"$concat": []}]});
        assert_eq!(check_templates(&well_formed), Ok(()));
        let text = "{\n  \"args\": {\n    \"a\": {\"$repeat\": [\"x\", 1]},\n    \"b\": {\"$concat\": [1]}\n  }\n}";
        assert_eq!(nth_template_line(text, 2), Some(4));
        assert_eq!(nth_template_line(text, 3), None);
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
