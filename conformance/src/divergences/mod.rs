//! Expected-divergence lists: what an implementation does differently on purpose, and why
//! (`PROTOCOL.md` "Expected divergences").
//!
//! A list is text: `#` comment lines, then one entry a line, each a selector and a reason:
//!
//! ```text
//! 0027 replaces a corrupt file and loses its bytes ## /files/session.jsonl: {"unchanged":true} -> (absent)
//! migrate/* v3 only: older files are refused
//! tag:legacy-* v3 only: older files are refused
//! entry-type:leaf writes a durable leaf entry after every branch
//! ```
//!
//! - `NNNN`: one case, by id. What follows ` ## ` is the divergence's signature, written
//!   by `run --write-divergences`: the first difference (`POINTER: EXPECTED -> ACTUAL`),
//!   `error KIND`, or the status (`crash`, `timeout`, `protocol-error`). When the case
//!   differs in another way, it is reported `divergent-changed`. A signature of `*` is
//!   never checked nor rewritten: for a case whose difference depends on the run
//!   (directory order, random names). A case signed `timeout` is waited on for
//!   [`EXPECTED_HANG_LIMIT`] only ([`Divergences::time_limit`]).
//! - `GROUP/NAME` glob (`migrate/*`, `*/torn-*`): every case whose `group/name` matches.
//! - `tag:TAG` (a glob too: `legacy-*`): every case carrying the tag (`corpus/README.md`).
//! - `clause:CLAUSE` (a glob: `context.*`): every case citing the clause.
//! - `at:POINTER` (a glob over JSON Pointers, `*` one step, `**` any number) and
//!   `diff:KIND` (`added`, `missing`, `changed`): a *shape*, the differences it covers
//!   ([`shape`]). A case is excused by shapes only when every difference it has is covered
//!   by one of the shape lines whose scope it is in; the differences covered are set
//!   aside and the rest of the case is still compared.
//! - Parts combine with `&`: `clause:context.13&at:/response/ok/model&diff:changed`
//!   is every case citing context.13, differing at `/response/ok/model` by a changed value.
//! - `entry-type:TYPE`: written files may hold lines of this `type` the golden does not
//!   have; they are left out before comparing, and a case that then matches is `divergent`.
//!
//! A case listed by id that passes is an `unexpected-pass`; a case in a category that
//! passes is a pass. An id line takes precedence over categories, and a line without a
//! shape (a name glob, a tag, a clause) excuses any difference of its cases.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use globset::{Glob, GlobMatcher};

use crate::corpus::Case;

/// Shapes: where and how a case differs, as `at:` and `diff:` parts declare it.
pub mod shape;
pub use shape::Shape;

/// A case listed by id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Known {
    /// Why the implementation differs.
    pub reason: String,
    /// How it differed when the list was written ([`crate::outcome::CaseResult::signature`]).
    pub signature: Option<String>,
}

/// Which cases a category line's part selects.
#[derive(Debug, Clone)]
pub enum Scope {
    /// Cases whose `group/name` matches the glob.
    Name(GlobMatcher),
    /// Cases carrying a tag that matches the glob.
    Tag(GlobMatcher),
    /// Cases citing a clause that matches the glob.
    Clause(GlobMatcher),
}

impl Scope {
    /// Whether `case` is in this scope.
    fn holds(&self, case: &Case) -> bool {
        match self {
            Scope::Name(glob) => glob.is_match(case.full_name()),
            Scope::Tag(glob) => case.file.tags.iter().any(|t| glob.is_match(t)),
            Scope::Clause(glob) => case.file.clauses.iter().any(|c| glob.is_match(c)),
        }
    }
}

/// A category entry: what it selects, and its reason.
#[derive(Debug, Clone)]
pub struct Category {
    /// The selector as written (`migrate/*`, `tag:legacy-v1`, `clause:context.13&at:/x`).
    pub text: String,
    /// Its 1-based line in the list.
    pub line: usize,
    /// The cases it selects: every part must hold (none: every case).
    pub scope: Vec<Scope>,
    /// The differences it covers, for a line with `at:` or `diff:` parts.
    pub shape: Option<Shape>,
    /// `entry-type:TYPE`: lines of this type in written files are left out.
    pub entry_type: Option<String>,
    /// Why.
    pub reason: String,
}

impl Category {
    /// Whether the line selects `case` (never for an `entry-type:` line).
    pub fn selects(&self, case: &Case) -> bool {
        self.entry_type.is_none() && self.scope.iter().all(|scope| scope.holds(case))
    }

    /// How a note names the line: `line N (SELECTOR)`.
    pub fn named(&self) -> String {
        format!("line {} ({})", self.line, self.text)
    }
}

/// A divergence list.
#[derive(Debug, Clone, Default)]
pub struct Divergences {
    /// Cases listed by id.
    pub by_id: BTreeMap<String, Known>,
    /// Categories, in the list's order (the first that matches a case gives its reason).
    pub categories: Vec<Category>,
    /// Wait the run's whole timeout even for cases listed as timing out
    /// ([`Divergences::waiting_in_full`]).
    pub full_waits: bool,
}

/// What excuses a case's difference.
#[derive(Debug, Clone)]
pub enum Excuse<'a> {
    /// Listed by id.
    Id(&'a Known),
    /// In a category without a shape: the line.
    Category(&'a Category),
}

/// A list that cannot be read.
#[derive(Debug)]
#[non_exhaustive]
pub enum DivergenceError {
    /// The file cannot be read or written.
    Io {
        /// The list.
        path: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
    /// An entry without a reason.
    NoReason {
        /// The list.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The selector.
        selector: String,
    },
    /// A glob that does not parse.
    BadGlob {
        /// The list.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The parser's message.
        message: String,
    },
    /// Digits that are not a case id as the corpus writes it (`27` for `0027`): such a
    /// line would never match a case.
    BadId {
        /// The list.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The selector.
        selector: String,
    },
    /// A selector that is none of the forms.
    BadSelector {
        /// The list.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The selector.
        selector: String,
    },
}

impl fmt::Display for DivergenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DivergenceError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            DivergenceError::NoReason {
                path,
                line,
                selector,
            } => write!(f, "{}: line {line}: {selector} has no reason", path.display()),
            DivergenceError::BadGlob {
                path,
                line,
                message,
            } => write!(f, "{}: line {line}: bad glob: {message}", path.display()),
            DivergenceError::BadId {
                path,
                line,
                selector,
            } => write!(
                f,
                "{}: line {line}: {selector:?} is not a case id: ids have at least four digits, zero-padded, as in 0027",
                path.display()
            ),
            DivergenceError::BadSelector {
                path,
                line,
                selector,
            } => write!(
                f,
                "{}: line {line}: {selector:?} is not a case id, entry-type:TYPE, or parts joined by & of a group/name glob, tag:TAG, clause:CLAUSE, at:POINTER and diff:added|missing|changed",
                path.display()
            ),
        }
    }
}

impl std::error::Error for DivergenceError {}

/// The signature that matches any: the case's difference depends on the run.
pub const ANY_SIGNATURE: &str = "*";

/// How the signature of a case that destroyed data starts (`unsafe: lines-kept session.jsonl`).
pub const UNSAFE_SIGNATURE: &str = "unsafe: ";

/// The separator between a reason and a signature.
pub const SIGNATURE_MARK: &str = " ## ";

/// One parsed line: selector, reason, signature. The signature follows the line's
/// last ` ## ` when what follows has a signature's form ([`is_signature`]): signatures
/// never hold a ` ## ` ([`signature_text`]), so a reason may, and a reason's ` ## `
/// followed by words of its own stays in the reason.
fn split_line(line: &str) -> (&str, &str, Option<&str>) {
    let (selector, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let (reason, signature) = match rest.rsplit_once(SIGNATURE_MARK) {
        Some((reason, signature)) if is_signature(signature.trim()) => {
            (reason.trim(), Some(signature.trim()))
        }
        _ => (rest.trim(), None),
    };
    (selector, reason, signature)
}

/// Whether `text` has the form of a signature as runs write them
/// ([`crate::outcome::CaseResult::signature`]): `*`, a first difference (`/POINTER: …`),
/// `error KIND`, `unsafe: …`, `name …`, a golden's problem, or a status's name.
fn is_signature(text: &str) -> bool {
    const STARTS: [&str; 6] = [
        "/",
        "error ",
        UNSAFE_SIGNATURE,
        "name ",
        "missing golden",
        "unreadable golden",
    ];
    const WHOLE: [&str; 8] = [
        ANY_SIGNATURE,
        "differs",
        "timeout",
        "crash",
        "protocol-error",
        "fail",
        "skipped",
        "unsafe",
    ];
    WHOLE.contains(&text) || STARTS.iter().any(|start| text.starts_with(start))
}

/// A signature as a list holds it: one line of text that no reader mistakes for more.
/// Control characters (newlines among them) and the Unicode line and paragraph
/// separators are written `\u{…}`, and `##` as `#\u{23}`, so that no text an adapter
/// puts into a pointer, a value or an error kind can end the line, start another one,
/// or move where the signature begins. Text without any of them is returned as it is,
/// and the result is a fixed point (escaping it again changes nothing).
pub fn signature_text(raw: &str) -> String {
    crate::guard::printable(raw)
        .replace('\u{2028}', "\\u{2028}")
        .replace('\u{2029}', "\\u{2029}")
        .replace("##", "#\\u{23}")
}

/// Whether `selector` is a case id as the corpus writes one: its number in at least
/// four digits, zero-padded (`0027`, `1720`, `10000`).
fn is_case_id(selector: &str) -> bool {
    selector.parse::<u64>().is_ok_and(|n| {
        selector.bytes().all(|b| b.is_ascii_digit()) && format!("{n:04}") == selector
    })
}

/// Reads a divergence list.
pub fn read(path: &Path) -> Result<Divergences, DivergenceError> {
    let text = fs::read_to_string(path).map_err(|error| DivergenceError::Io {
        path: path.to_owned(),
        error,
    })?;
    parse(&text, path)
}

/// Parses a divergence list's text; `path` names it in errors.
pub fn parse(text: &str, path: &Path) -> Result<Divergences, DivergenceError> {
    let mut out = Divergences::default();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (selector, reason, signature) = split_line(line);
        if reason.is_empty() {
            return Err(DivergenceError::NoReason {
                path: path.to_owned(),
                line: n + 1,
                selector: selector.to_owned(),
            });
        }
        let digits = selector.bytes().all(|b| b.is_ascii_digit());
        if digits && !is_case_id(selector) {
            return Err(DivergenceError::BadId {
                path: path.to_owned(),
                line: n + 1,
                selector: selector.to_owned(),
            });
        }
        if digits {
            out.by_id.insert(
                selector.to_owned(),
                Known {
                    reason: reason.to_owned(),
                    signature: signature.filter(|s| !s.is_empty()).map(str::to_owned),
                },
            );
            continue;
        }
        let category = category(selector, reason, n + 1).map_err(|problem| match problem {
            Problem::Glob(message) => DivergenceError::BadGlob {
                path: path.to_owned(),
                line: n + 1,
                message,
            },
            Problem::Selector => DivergenceError::BadSelector {
                path: path.to_owned(),
                line: n + 1,
                selector: selector.to_owned(),
            },
        })?;
        out.categories.push(category);
    }
    Ok(out)
}

/// Why a category's selector does not read.
enum Problem {
    /// A glob (name, tag, clause, pointer) or a `diff:` kind that does not parse.
    Glob(String),
    /// A part that is none of the forms, or `entry-type:` combined with others.
    Selector,
}

/// A category line: its selector's `&`-joined parts, each a name glob (`migrate/*`),
/// `tag:`, `clause:`, `at:`, `diff:` or, alone, `entry-type:`.
fn category(selector: &str, reason: &str, line: usize) -> Result<Category, Problem> {
    let glob = |pattern: &str| {
        Glob::new(pattern)
            .map(|g| g.compile_matcher())
            .map_err(|e| Problem::Glob(e.to_string()))
    };
    let mut category = Category {
        text: selector.to_owned(),
        line,
        scope: Vec::new(),
        shape: None,
        entry_type: None,
        reason: reason.to_owned(),
    };
    if let Some(kind) = selector.strip_prefix("entry-type:") {
        if kind.is_empty() || kind.contains('&') {
            return Err(Problem::Selector);
        }
        category.entry_type = Some(kind.to_owned());
        return Ok(category);
    }
    let (mut at, mut kind) = (None, None);
    for part in selector.split('&') {
        if let Some(tag) = part.strip_prefix("tag:") {
            category.scope.push(Scope::Tag(glob(tag)?));
        } else if let Some(clause) = part.strip_prefix("clause:") {
            category.scope.push(Scope::Clause(glob(clause)?));
        } else if let Some(pointer) = part.strip_prefix("at:") {
            at = Some(pointer);
        } else if let Some(name) = part.strip_prefix("diff:") {
            kind = Some(name);
        } else if part.contains('/') && !part.contains(':') {
            category.scope.push(Scope::Name(glob(part)?));
        } else {
            return Err(Problem::Selector);
        }
    }
    if at.is_some() || kind.is_some() {
        category.shape = Some(Shape::new(at, kind).map_err(Problem::Glob)?);
    } else if category.scope.is_empty() {
        return Err(Problem::Selector);
    }
    Ok(category)
}

/// How long a case listed by id as timing out (signature `timeout`) is waited on
/// instead of the run's `--timeout`: a known hang then costs about a second, not the
/// whole limit. A case that answers within it is judged as any other.
pub const EXPECTED_HANG_LIMIT: Duration = Duration::from_secs(1);

impl Known {
    /// Whether the case is listed as timing out: its signature is `timeout`.
    pub fn expects_timeout(&self) -> bool {
        self.signature.as_deref() == Some(crate::outcome::Status::Timeout.name())
    }

    /// Whether this line lists the loss of a case whose safety checks failed, with
    /// signature `now` (`unsafe: …`): only a reviewed line (its reason is not the
    /// [`UNREVIEWED`] placeholder) that records exactly that signature does. A `*`, no
    /// signature or another difference never lists a loss.
    pub fn lists_loss(&self, now: Option<&str>) -> bool {
        let recorded = self.signature.as_deref();
        recorded.is_some_and(|r| r.starts_with(UNSAFE_SIGNATURE))
            && recorded == now
            && !is_unreviewed(&self.reason)
    }

    /// Whether the case's signature now, `now`, is not the recorded one.
    pub fn changed(&self, now: Option<&str>) -> bool {
        match self.signature.as_deref() {
            None | Some(ANY_SIGNATURE) => false,
            Some(recorded) => Some(recorded) != now,
        }
    }
}

impl Divergences {
    /// An empty list.
    pub fn new() -> Divergences {
        Divergences::default()
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty() && self.categories.is_empty()
    }

    /// What excuses `case`'s difference: its id line, else the first category without a
    /// shape that selects it (shape lines excuse by the differences themselves:
    /// [`Divergences::shapes_for`]).
    pub fn excuse(&self, case: &Case) -> Option<Excuse<'_>> {
        if let Some(known) = self.by_id.get(&case.id()) {
            return Some(Excuse::Id(known));
        }
        self.categories
            .iter()
            .find(|c| c.shape.is_none() && c.selects(case))
            .map(Excuse::Category)
    }

    /// The shape lines that apply to `case`: those whose scope selects it, in the list's
    /// order; none for a case listed by id (its line decides).
    pub fn shapes_for(&self, case: &Case) -> Vec<&Category> {
        if self.by_id.contains_key(&case.id()) {
            return Vec::new();
        }
        self.categories
            .iter()
            .filter(|c| c.shape.is_some() && c.selects(case))
            .collect()
    }

    /// How long to wait for case `id`'s answer when the run allows `timeout`: at most
    /// [`EXPECTED_HANG_LIMIT`] for a case listed by id as timing out, else `timeout`.
    /// Categories carry no signature, so they never shorten the wait.
    pub fn time_limit(&self, id: &str, timeout: Duration) -> Duration {
        match self.by_id.get(id) {
            Some(known) if known.expects_timeout() && !self.full_waits => {
                timeout.min(EXPECTED_HANG_LIMIT)
            }
            _ => timeout,
        }
    }

    /// This list, waiting the run's whole timeout for every case: what a run that
    /// rewrites the list (`run --write-divergences`) does, so that a `timeout` line
    /// recorded on a slow day is checked again at full length and goes once the case
    /// answers in time, instead of being cut at [`EXPECTED_HANG_LIMIT`] for ever.
    #[must_use]
    pub fn waiting_in_full(mut self, full: bool) -> Divergences {
        self.full_waits = full;
        self
    }

    /// The entry types written files may hold beyond the golden's, with their reasons.
    pub fn extra_entry_types(&self) -> impl Iterator<Item = (&str, &str)> {
        self.categories
            .iter()
            .filter_map(|c| Some((c.entry_type.as_deref()?, c.reason.as_str())))
    }
}

/// The reason `--write-divergences` gives a failure it adds to a list: a placeholder
/// that runs report as unreviewed until someone writes the real reason over it.
pub const UNREVIEWED: &str = "UNREVIEWED: say why this implementation differs";

/// Whether a listed reason is still [`UNREVIEWED`]'s placeholder.
pub fn is_unreviewed(reason: &str) -> bool {
    reason.starts_with("UNREVIEWED")
}

/// Writing a list: signatures of a run into its id lines ([`write::write_signatures`]).
mod write;
pub use write::{rewrite, write_signatures, Now, Rewritten};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_name_ids_globs_tags_and_entry_types() {
        let text = "# header\n0001 hangs on cycles\n0002 refuses it ## /response/ok: 1 -> 2\nmigrate/* v3 only\ntag:legacy-* v3 only\nentry-type:leaf durable leaves\n";
        let list = parse(text, Path::new("d")).expect("parses");
        assert_eq!(list.by_id["0001"].reason, "hangs on cycles");
        assert_eq!(list.by_id["0001"].signature, None);
        assert_eq!(
            list.by_id["0002"].signature.as_deref(),
            Some("/response/ok: 1 -> 2")
        );
        assert_eq!(list.by_id["0002"].reason, "refuses it");
        assert_eq!(list.categories.len(), 3);
        assert_eq!(
            list.extra_entry_types().collect::<Vec<_>>(),
            [("leaf", "durable leaves")]
        );
    }

    #[test]
    fn every_entry_needs_a_reason_and_a_known_form() {
        let err = parse("0002\n", Path::new("d")).unwrap_err().to_string();
        assert_eq!(err, "d: line 1: 0002 has no reason");
        let err = parse("# c\nlegacy hmm\n", Path::new("d"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("d: line 2: \"legacy\" is not"), "{err}");
        let err = parse("tag:[ x\n", Path::new("d")).unwrap_err().to_string();
        assert!(err.starts_with("d: line 1: bad glob"), "{err}");
    }

    /// Only an id line signed `timeout` shortens the wait, and never lengthens it.
    #[test]
    fn only_cases_listed_as_timing_out_get_the_short_limit() {
        let text = "0001 hangs on cycles ## timeout\n0002 crashes ## crash\n0003 no signature\n0004 flaky ## *\n0005 differs ## /x: \"timeout\" -> 1\ncycle/* hangs\ntag:cycle hangs\n";
        let list = parse(text, Path::new("d")).expect("parses");
        let full = Duration::from_secs(20);
        let short = Duration::from_millis(300);
        let rows = [
            // (id, run's timeout, the limit)
            ("0001", full, EXPECTED_HANG_LIMIT),
            ("0001", short, short),
            ("0002", full, full),
            ("0003", full, full),
            ("0004", full, full),
            ("0005", full, full),
            ("0006", full, full),
        ];
        for (id, timeout, limit) in rows {
            assert_eq!(list.time_limit(id, timeout), limit, "{id} at {timeout:?}");
        }
        assert!(EXPECTED_HANG_LIMIT < full);
    }

    /// A reason holding ` ## ` keeps it: the signature is what follows the last mark.
    #[test]
    fn a_reason_may_hold_the_mark() {
        let list = parse("0001 see #12 ## below ## /x: 1 -> 2\n", Path::new("d")).expect("parses");
        assert_eq!(list.by_id["0001"].reason, "see #12 ## below");
        assert_eq!(list.by_id["0001"].signature.as_deref(), Some("/x: 1 -> 2"));
        let list = parse("0001 see ## below\n", Path::new("d")).expect("parses");
        assert_eq!(list.by_id["0001"].reason, "see ## below");
        assert_eq!(list.by_id["0001"].signature, None);
        let now = [(
            "0001".to_owned(),
            Now::Differs(vec!["/y: 1 -> 2".to_owned()]),
        )]
        .into();
        for (line, written) in [
            ("0001 a ## b\n", "0001 a ## b ## /y: 1 -> 2\n"),
            ("0001 a ## b ## /x: 1 -> 2\n", "0001 a ## b ## /y: 1 -> 2\n"),
            ("0001 a ## b ## timeout\n", "0001 a ## b ## /y: 1 -> 2\n"),
        ] {
            let (out, _) = rewrite(line, &now);
            assert_eq!(out, written, "{line:?}");
            let again = parse(&out, Path::new("d")).expect("parses");
            assert_eq!(again.by_id["0001"].reason, "a ## b", "{line:?}");
        }
    }

    /// Digits that are not a zero-padded case id would never match: an error, not a
    /// silently dead line.
    #[test]
    fn ids_are_written_as_the_corpus_writes_them() {
        for good in ["0027", "1720", "10000"] {
            assert!(
                parse(&format!("{good} r\n"), Path::new("d")).is_ok(),
                "{good}"
            );
        }
        for bad in ["27", "027", "00027", "0"] {
            let err = parse(&format!("# c\n{bad} r\n"), Path::new("d"))
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("d: line 2: "), "{err}");
            assert!(err.contains("is not a case id"), "{err}");
        }
    }

    /// A loss is listed only by a reviewed id line that records it exactly.
    #[test]
    fn only_a_reviewed_line_recording_the_loss_lists_it() {
        let loss = "unsafe: bytes-kept session.jsonl";
        let rows = [
            // (line's signature, reason, listed?)
            (Some(loss), "replaces a corrupt file", true),
            (Some(loss), UNREVIEWED, false),
            (Some("unsafe: lines-kept session.jsonl"), "r", false),
            (Some("/files/session.jsonl: 1 -> 2"), "r", false),
            (Some(ANY_SIGNATURE), "r", false),
            (Some("timeout"), "r", false),
            (None, "r", false),
        ];
        for (signature, reason, listed) in rows {
            let known = Known {
                reason: reason.to_owned(),
                signature: signature.map(str::to_owned),
            };
            assert_eq!(
                known.lists_loss(Some(loss)),
                listed,
                "{signature:?} {reason}"
            );
        }
    }

    /// A `timeout` line is waited on in full by a run that rewrites the list.
    #[test]
    fn a_rewriting_run_waits_in_full() {
        let list = parse("0001 hangs ## timeout\n", Path::new("d")).expect("parses");
        let full = Duration::from_secs(20);
        assert_eq!(list.time_limit("0001", full), EXPECTED_HANG_LIMIT);
        assert_eq!(list.waiting_in_full(true).time_limit("0001", full), full);
    }

    /// Parts join with `&`: scopes (name, tag, clause) and a shape (at, diff); a line
    /// with a shape excuses by differences, never as a plain category.
    #[test]
    fn parts_combine_into_scopes_and_shapes() {
        let text = "clause:context.*&at:/response/ok/model&diff:changed models differ\nat:/files/*/lines/0 title line\ntag:t&g/* both\n";
        let list = parse(text, Path::new("d")).expect("parses");
        let [a, b, c] = &list.categories[..] else {
            panic!("three lines")
        };
        assert_eq!((a.line, a.scope.len(), a.shape.is_some()), (1, 1, true));
        assert_eq!((b.line, b.scope.len(), b.shape.is_some()), (2, 0, true));
        assert_eq!((c.line, c.scope.len(), c.shape.is_some()), (3, 2, false));
        assert_eq!(
            a.named(),
            "line 1 (clause:context.*&at:/response/ok/model&diff:changed)"
        );
        for bad in [
            "entry-type:leaf&tag:t r",
            "diff:renamed r",
            "clause:[ r",
            "tag:t&oops r",
            "g/*&foo:bar r",
        ] {
            assert!(parse(bad, Path::new("d")).is_err(), "{bad}");
        }
    }
}
