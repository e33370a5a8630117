//! What can be wrong with the corpus, as values: a golden that does not read
//! ([`GoldenProblem`]), a case that cannot run ([`CaseError`], [`CaseProblem`]) and a
//! problem `corpus check` reports ([`CorpusError`], [`CorpusProblem`]), with their messages.

use std::fmt;
use std::path::PathBuf;

use session_reference::model::Profile;

use super::templates::{TemplateProblem, MAX_EXPANSION_BYTES};

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
pub(super) fn message_of(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let location = format!(" at line {} column {}", error.line(), error.column());
    text.strip_suffix(&location).unwrap_or(&text).to_owned()
}

/// Why a case cannot run ([`Case::refused`](super::Case::refused)): the file concerned (its `case.json`, an
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
    /// A `dir_inputs` file whose bytes are not UTF-8 (the offset of the first byte that
    /// is not): the runner writes the case's directory into its text, and a lossy
    /// conversion would change its other bytes.
    DirInputNotUtf8(usize),
    /// A placeholder the normaliser writes (`<time>`, `<id:1>`, …), in an input file,
    /// an input's name or the arguments.
    Placeholder(String),
    /// A golden that cannot be read whole.
    Golden(GoldenProblem),
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
            CaseProblem::DirInputNotUtf8(at) => write!(
                f,
                "byte {at} is not UTF-8; a dir_inputs file is text the runner writes the case's directory into"
            ),
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

/// What is wrong with a corpus file ([`CorpusError`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CorpusProblem {
    /// The corpus folder could not be walked.
    Walk(String),
    /// The corpus is not a folder (its kind: `regular file`, `fifo`, …).
    NotAFolder(&'static str),
    /// The corpus folder holds no case (no folder with a `case.json`).
    NoCases,
    /// A thread loading cases panicked.
    LoaderPanicked,
    /// The case cannot run ([`Case::refused`](super::Case::refused)).
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
    /// The case cites no clause of the specification.
    NoClauses,
    /// A cited clause id that is not spelled as one (`context.7`).
    BadClauseId(String),
    /// A cited clause the specification does not have.
    UnknownClause(String),
    /// A clause no case cites, though it does not say why it cannot be observed.
    UncitedClause(String),
    /// A clause without a `Checked:` or `Implemented by:` paragraph (its id and line).
    UntracedClause(String),
    /// A clause whose `Checked:` and `Implemented by:` paragraphs name no reference
    /// function (its id and line).
    NoImplementer(String),
    /// Normative text (outside a clause's generated part) with wording that leaves the
    /// rule to another program or elides it
    /// ([`VAGUE_WORDING`](super::VAGUE_WORDING)).
    VagueWording {
        /// The line (1-based).
        line: usize,
        /// The wording.
        phrase: &'static str,
    },
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
            CorpusProblem::NotAFolder(kind) => {
                write!(f, "is a {kind}, not a corpus folder")
            }
            CorpusProblem::NoCases => f.write_str(
                "no cases: a corpus folder holds case folders, each with a case.json (is it the right folder, or an unchecked-out submodule?)",
            ),
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
            CorpusProblem::NoClauses => {
                f.write_str("cites no clause: `clauses` names the clauses of docs/spec/ it pins")
            }
            CorpusProblem::BadClauseId(id) => {
                write!(f, "clause {id:?} is not a clause id (an area, a dot and a number: context.7)")
            }
            CorpusProblem::UnknownClause(id) => {
                write!(f, "clause {id:?} is not in the specification (docs/spec/)")
            }
            CorpusProblem::UncitedClause(id) => write!(
                f,
                "clause {id} is cited by no case: add a case, or say in a line starting `Not observable:` why none can see it"
            ),
            CorpusProblem::UntracedClause(id) => write!(
                f,
                "clause {id} has no `Checked:` or `Implemented by:` paragraph naming the reference functions that implement it (docs/spec/README.md)"
            ),
            CorpusProblem::NoImplementer(id) => write!(
                f,
                "clause {id} names no reference function: its `Checked:` or `Implemented by:` paragraph gives a source path, then the functions (`reference/src/context/mod.rs` `build_context`)"
            ),
            CorpusProblem::VagueWording { line, phrase } => {
                write!(f, "line {line}: normative text says {phrase:?}; state the rule itself")?;
                if phrase.chars().all(|c| c == '\u{2026}') {
                    f.write_str(" (an ellipsis that is a character of a text is named U+2026 on its line)")?;
                }
                Ok(())
            }
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
