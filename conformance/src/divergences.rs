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
//! - `entry-type:TYPE`: written files may hold lines of this `type` the golden does not
//!   have; they are left out before comparing, and a case that then matches is `divergent`.
//!
//! A case listed by id that passes is an `unexpected-pass`; a case in a category that
//! passes is a pass.

use std::collections::BTreeMap;
use std::fmt;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use globset::{Glob, GlobMatcher};

use crate::corpus::Case;

/// A case listed by id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Known {
    /// Why the implementation differs.
    pub reason: String,
    /// How it differed when the list was written ([`crate::outcome::CaseResult::signature`]).
    pub signature: Option<String>,
}

/// What a category entry selects.
#[derive(Debug, Clone)]
pub enum Selector {
    /// Cases whose `group/name` matches the glob.
    Name(GlobMatcher),
    /// Cases carrying a tag that matches the glob.
    Tag(GlobMatcher),
    /// Lines of this `type` in written files.
    EntryType(String),
}

/// A category entry: a selector and its reason.
#[derive(Debug, Clone)]
pub struct Category {
    /// The selector as written (`migrate/*`, `tag:legacy-v1`, `entry-type:leaf`).
    pub text: String,
    /// What it selects.
    pub selector: Selector,
    /// Why.
    pub reason: String,
}

/// A divergence list.
#[derive(Debug, Clone, Default)]
pub struct Divergences {
    /// Cases listed by id.
    pub by_id: BTreeMap<String, Known>,
    /// Categories, in the list's order (the first that matches a case gives its reason).
    pub categories: Vec<Category>,
}

/// What excuses a case's difference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Excuse<'a> {
    /// Listed by id.
    Id(&'a Known),
    /// In a category: its selector as written, and its reason.
    Category(&'a str, &'a str),
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
            DivergenceError::BadSelector {
                path,
                line,
                selector,
            } => write!(
                f,
                "{}: line {line}: {selector:?} is not a case id, a group/name glob, tag:TAG or entry-type:TYPE",
                path.display()
            ),
        }
    }
}

impl std::error::Error for DivergenceError {}

/// The signature that matches any: the case's difference depends on the run.
pub const ANY_SIGNATURE: &str = "*";

/// The separator between a reason and a signature.
pub const SIGNATURE_MARK: &str = " ## ";

/// One parsed line: selector, reason, signature.
fn split_line(line: &str) -> (&str, &str, Option<&str>) {
    let (selector, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let (reason, signature) = match rest.split_once(SIGNATURE_MARK) {
        Some((reason, signature)) => (reason.trim(), Some(signature.trim())),
        None => (rest.trim(), None),
    };
    (selector, reason, signature)
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
        let glob = |pattern: &str| {
            Glob::new(pattern)
                .map(|g| g.compile_matcher())
                .map_err(|e| DivergenceError::BadGlob {
                    path: path.to_owned(),
                    line: n + 1,
                    message: e.to_string(),
                })
        };
        let chosen = if selector.bytes().all(|b| b.is_ascii_digit()) {
            out.by_id.insert(
                selector.to_owned(),
                Known {
                    reason: reason.to_owned(),
                    signature: signature.filter(|s| !s.is_empty()).map(str::to_owned),
                },
            );
            continue;
        } else if let Some(tag) = selector.strip_prefix("tag:") {
            Selector::Tag(glob(tag)?)
        } else if let Some(kind) = selector.strip_prefix("entry-type:") {
            Selector::EntryType(kind.to_owned())
        } else if selector.contains('/') {
            Selector::Name(glob(selector)?)
        } else {
            return Err(DivergenceError::BadSelector {
                path: path.to_owned(),
                line: n + 1,
                selector: selector.to_owned(),
            });
        };
        out.categories.push(Category {
            text: selector.to_owned(),
            selector: chosen,
            reason: reason.to_owned(),
        });
    }
    Ok(out)
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

    /// What excuses `case`'s difference: its id line, else the first category by name or tag.
    pub fn excuse(&self, case: &Case) -> Option<Excuse<'_>> {
        if let Some(known) = self.by_id.get(&case.id()) {
            return Some(Excuse::Id(known));
        }
        let name = case.full_name();
        self.categories.iter().find_map(|c| {
            let hit = match &c.selector {
                Selector::Name(glob) => glob.is_match(&name),
                Selector::Tag(glob) => case.file.tags.iter().any(|t| glob.is_match(t)),
                Selector::EntryType(_) => false,
            };
            hit.then_some(Excuse::Category(&c.text, &c.reason))
        })
    }

    /// How long to wait for case `id`'s answer when the run allows `timeout`: at most
    /// [`EXPECTED_HANG_LIMIT`] for a case listed by id as timing out, else `timeout`.
    /// Categories carry no signature, so they never shorten the wait.
    pub fn time_limit(&self, id: &str, timeout: Duration) -> Duration {
        match self.by_id.get(id) {
            Some(known) if known.expects_timeout() => timeout.min(EXPECTED_HANG_LIMIT),
            _ => timeout,
        }
    }

    /// The entry types written files may hold beyond the golden's, with their reasons.
    pub fn extra_entry_types(&self) -> impl Iterator<Item = (&str, &str)> {
        self.categories.iter().filter_map(|c| match &c.selector {
            Selector::EntryType(kind) => Some((kind.as_str(), c.reason.as_str())),
            _ => None,
        })
    }
}

/// What [`rewrite`] changed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Rewritten {
    /// Ids whose signature was written or changed.
    pub signed: Vec<String>,
    /// Ids removed because the case now passes.
    pub removed: Vec<String>,
    /// Ids of failures the list did not name, added with [`UNREVIEWED`] for a reason.
    pub added: Vec<String>,
}

/// The reason `--write-divergences` gives a failure it adds to a list: a placeholder
/// that runs report as unreviewed until someone writes the real reason over it.
pub const UNREVIEWED: &str = "UNREVIEWED: say why this implementation differs";

/// Whether a listed reason is still [`UNREVIEWED`]'s placeholder.
pub fn is_unreviewed(reason: &str) -> bool {
    reason.starts_with("UNREVIEWED")
}

/// Rewrites a list's text with the signatures of a run: `signatures` maps each case
/// listed by id to its signature now, or `None` when it passed (its line is removed).
/// Ids not in `signatures` (not run, skipped), comments and categories are kept as
/// they are.
pub fn rewrite(text: &str, signatures: &BTreeMap<String, Option<String>>) -> (String, Rewritten) {
    let mut out = String::with_capacity(text.len());
    let mut changed = Rewritten::default();
    for line in text.lines() {
        let trimmed = line.trim();
        let (selector, reason, old) = split_line(trimmed);
        let by_id = !trimmed.starts_with('#')
            && !selector.is_empty()
            && selector.bytes().all(|b| b.is_ascii_digit());
        match signatures.get(selector).filter(|_| by_id) {
            Some(None) => {
                changed.removed.push(selector.to_owned());
                continue;
            }
            Some(Some(_)) if old == Some(ANY_SIGNATURE) => out.push_str(line),
            Some(Some(signature)) => {
                if old != Some(signature.as_str()) {
                    changed.signed.push(selector.to_owned());
                }
                out.push_str(selector);
                out.push(' ');
                out.push_str(reason);
                out.push_str(SIGNATURE_MARK);
                out.push_str(signature);
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    (out, changed)
}

/// Writes the signatures of `runs` into the list at `path` ([`rewrite`]): each case listed
/// by id that differed gets its signature, each that passed is removed, and each failure
/// the list does not excuse is added with the [`UNREVIEWED`] placeholder for its reason,
/// so that one run seeds a list. A missing list is made.
pub fn write_signatures(
    path: &Path,
    runs: &[crate::outcome::ProfileRun],
) -> Result<Rewritten, DivergenceError> {
    use crate::outcome::Status;
    let io = |error| DivergenceError::Io {
        path: path.to_owned(),
        error,
    };
    let text = match fs::read_to_string(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        read => read.map_err(io)?,
    };
    let mut signatures = BTreeMap::new();
    for result in runs.iter().flat_map(|r| &r.results) {
        match result.status {
            Status::UnexpectedPass => {
                signatures.insert(result.id.clone(), None);
            }
            Status::Divergent | Status::DivergentChanged => {
                if let Some(signature) = &result.signature {
                    signatures.insert(result.id.clone(), Some(signature.clone()));
                }
            }
            _ => {}
        }
    }
    let (mut new, mut changed) = rewrite(&text, &signatures);
    let mut failures: Vec<(&str, &str)> = runs
        .iter()
        .flat_map(|r| &r.results)
        // An unexpected pass is a listed case that passes: removed above, not added.
        .filter(|r| r.status.is_failure() && r.status != Status::UnexpectedPass)
        .map(|r| {
            (
                r.id.as_str(),
                r.signature.as_deref().unwrap_or(r.status.name()),
            )
        })
        .collect();
    failures.sort_unstable();
    failures.dedup_by_key(|(id, _)| *id);
    for (id, signature) in failures {
        if !new.is_empty() && !new.ends_with('\n') {
            new.push('\n');
        }
        let _ = writeln!(new, "{id} {UNREVIEWED}{SIGNATURE_MARK}{signature}");
        changed.added.push(id.to_owned());
    }
    if new != text {
        fs::write(path, new).map_err(io)?;
    }
    Ok(changed)
}

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

    #[test]
    fn rewriting_signs_lines_and_drops_passes() {
        let text = "# keep\n0001 a\n0002 b ## old\n0003 c\nmigrate/* d\n0004 flaky ## *\n";
        let signatures = [
            ("0001".to_owned(), Some("/x: 1 -> 2".to_owned())),
            ("0002".to_owned(), None),
            ("0004".to_owned(), Some("/y: 1 -> 2".to_owned())),
        ]
        .into();
        let (out, changed) = rewrite(text, &signatures);
        assert_eq!(
            out,
            "# keep\n0001 a ## /x: 1 -> 2\n0003 c\nmigrate/* d\n0004 flaky ## *\n"
        );
        let list = parse(&out, Path::new("d")).expect("parses");
        assert!(!list.by_id["0004"].changed(Some("/z: 3 -> 4")));
        assert!(list.by_id["0001"].changed(Some("/z: 3 -> 4")));
        assert!(!list.by_id["0001"].changed(Some("/x: 1 -> 2")));
        assert_eq!(changed.signed, ["0001"]);
        assert_eq!(changed.removed, ["0002"]);
        let again = parse(&out, Path::new("d")).expect("parses");
        assert_eq!(again.by_id["0001"].signature.as_deref(), Some("/x: 1 -> 2"));
    }
}
