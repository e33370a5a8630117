//! Writing an expected-divergence list from a run: each id line gets the signature its
//! case has now, lines of cases that pass go, failures the list does not name are added
//! `UNREVIEWED`; reasons, comments, categories and line ends are kept as written.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use super::{
    is_case_id, parse, signature_text, split_line, DivergenceError, ANY_SIGNATURE, SIGNATURE_MARK,
    UNREVIEWED, UNSAFE_SIGNATURE,
};

/// What [`rewrite`] changed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Rewritten {
    /// Ids whose signature was written or changed.
    pub signed: Vec<String>,
    /// Ids removed because the case now passes.
    pub removed: Vec<String>,
    /// Ids of failures the list did not name, added with [`UNREVIEWED`] for a reason.
    pub added: Vec<String>,
    /// Ids listed with another difference that now destroy data: their lines are left
    /// as they are, for someone to review (a list never learns a loss by itself).
    pub unsafe_kept: Vec<String>,
}

/// A listed case as one run (of one or more profiles) left it, for [`rewrite`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Now {
    /// Every profile that ran it passed: its line goes.
    Passes,
    /// It differs, with these signatures (one per profile that differs, in run order):
    /// its line is kept, signed with the recorded signature when one of them is it,
    /// else with the first.
    Differs(Vec<String>),
}

/// Rewrites a list's text with the signatures of a run: `now` says how each case listed
/// by id fared ([`Now`]). Ids not in `now` (not run, skipped, unsafe), comments and
/// categories are kept as they are, reasons word for word, and the text keeps its line
/// ends (CRLF stays CRLF).
pub fn rewrite(text: &str, now: &BTreeMap<String, Now>) -> (String, Rewritten) {
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let mut out = String::with_capacity(text.len());
    let mut changed = Rewritten::default();
    for line in text.lines() {
        let trimmed = line.trim();
        let (selector, reason, old) = split_line(trimmed);
        let by_id = !trimmed.starts_with('#') && is_case_id(selector);
        match now.get(selector).filter(|_| by_id) {
            Some(Now::Passes) => {
                changed.removed.push(selector.to_owned());
                continue;
            }
            Some(Now::Differs(_)) if old == Some(ANY_SIGNATURE) => out.push_str(line),
            Some(Now::Differs(signatures)) => {
                let keep = old.filter(|o| signatures.iter().any(|s| s == o));
                let Some(signature) = keep.or(signatures.first().map(String::as_str)) else {
                    out.push_str(line);
                    out.push_str(newline);
                    continue;
                };
                if old != Some(signature) {
                    changed.signed.push(selector.to_owned());
                }
                out.push_str(selector);
                out.push(' ');
                out.push_str(reason);
                out.push_str(SIGNATURE_MARK);
                out.push_str(&signature_text(signature));
            }
            None => out.push_str(line),
        }
        out.push_str(newline);
    }
    (out, changed)
}

/// How each case listed by id fared over `runs` (one per profile), for [`rewrite`]: a
/// case passes when every profile that ran it passed (an `unexpected-pass`), and differs
/// when one still does (`divergent`, `divergent-changed`); a case that is skipped or
/// destroys data everywhere it ran is left out, so its line stays as it is.
fn listed_now(runs: &[crate::outcome::ProfileRun]) -> BTreeMap<String, Now> {
    use crate::outcome::Status;
    let mut now: BTreeMap<String, Now> = BTreeMap::new();
    let mut held: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    for result in runs.iter().flat_map(|r| &r.results) {
        match result.status {
            Status::UnexpectedPass => {
                now.entry(result.id.clone()).or_insert(Now::Passes);
            }
            Status::Divergent | Status::DivergentChanged => {
                let signature = result.signature.clone().unwrap_or_default();
                match now.entry(result.id.clone()).or_insert(Now::Passes) {
                    Now::Differs(signatures) => signatures.push(signature),
                    passes @ Now::Passes => *passes = Now::Differs(vec![signature]),
                }
            }
            // A line that still lists a loss, or one a loss now overrides, is held.
            Status::Unsafe | Status::UnsafeListed => {
                held.insert(&result.id);
            }
            _ => {}
        }
    }
    now.retain(|id, _| !held.contains(id.as_str()));
    now
}

/// Writes the signatures of `runs` into the list at `path` ([`rewrite`]): each case listed
/// by id that differed gets its signature, each that passed under every profile is
/// removed, and each failure the list does not name by id is added with the
/// [`UNREVIEWED`] placeholder for its reason, so that one run seeds a list. A line of a
/// case that now destroys data is never rewritten, and an added line of such a case does
/// not list its loss until someone writes its reason ([`Known::lists_loss`]). A missing
/// list is made; the list keeps its line ends.
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
    let listed = parse(&text, path)?.by_id;
    let (mut new, mut changed) = rewrite(&text, &listed_now(runs));
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
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
        if listed.contains_key(id) {
            if signature.starts_with(UNSAFE_SIGNATURE) {
                changed.unsafe_kept.push(id.to_owned());
            }
            continue;
        }
        if !new.is_empty() && !new.ends_with('\n') {
            new.push_str(newline);
        }
        let _ = write!(
            new,
            "{id} {UNREVIEWED}{SIGNATURE_MARK}{}{newline}",
            signature_text(signature)
        );
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
    use crate::outcome::{ProfileRun, Status};
    use session_reference::model::Profile;
    use std::time::Duration;

    #[test]
    fn rewriting_signs_lines_and_drops_passes() {
        let text = "# keep\n0001 a\n0002 b ## old\n0003 c\nmigrate/* d\n0004 flaky ## *\n";
        let now = [
            (
                "0001".to_owned(),
                Now::Differs(vec!["/x: 1 -> 2".to_owned()]),
            ),
            ("0002".to_owned(), Now::Passes),
            (
                "0004".to_owned(),
                Now::Differs(vec!["/y: 1 -> 2".to_owned()]),
            ),
        ]
        .into();
        let (out, changed) = rewrite(text, &now);
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

    /// Adapter text in a signature (a key holding a newline and a list line, a `##`)
    /// stays inside its own line: rewriting and reading back gives one line per id, the
    /// same signature, and no new id.
    #[test]
    fn adapter_text_in_a_signature_cannot_add_a_line() {
        let hostile = [
            "/response/ok/x\n0001 looks fine to me: 1 -> 2",
            "/response/ok/x\r0001 looks fine: 1 -> 2",
            "/a\u{2028}0001 fine: 1 -> 2",
            "/a ## 0001: 1 -> 2",
            "error kind\u{1b}]0;title\u{7}",
        ];
        for raw in hostile {
            let now = [("0002".to_owned(), Now::Differs(vec![raw.to_owned()]))].into();
            let (out, _) = rewrite("0002 differs on purpose\n", &now);
            let list = parse(&out, Path::new("d")).expect("parses");
            assert_eq!(list.by_id.len(), 1, "{raw:?} gave {out:?}");
            assert_eq!(list.by_id["0002"].reason, "differs on purpose", "{raw:?}");
            let signature = list.by_id["0002"].signature.as_deref();
            assert_eq!(signature, Some(signature_text(raw).as_str()), "{raw:?}");
            assert!(
                !out.trim_end().contains(['\n', '\r', '\u{2028}', '\u{1b}']),
                "{out:?}"
            );
            assert_eq!(signature_text(&signature_text(raw)), signature_text(raw));
        }
    }

    /// CRLF lists stay CRLF through a rewrite.
    #[test]
    fn rewriting_keeps_line_ends() {
        let now = [(
            "0001".to_owned(),
            Now::Differs(vec!["/x: 1 -> 2".to_owned()]),
        )]
        .into();
        let (out, _) = rewrite("# c\r\n0001 a\r\n0002 b\r\n", &now);
        assert_eq!(out, "# c\r\n0001 a ## /x: 1 -> 2\r\n0002 b\r\n");
    }

    /// One profile's run of cases `(id, status, signature)`.
    fn profile_run(profile: Profile, cases: &[(&str, Status, Option<&str>)]) -> ProfileRun {
        let results = cases
            .iter()
            .map(|(id, status, signature)| crate::outcome::CaseResult {
                id: (*id).to_owned(),
                name: format!("g/c{id}"),
                description: String::new(),
                clauses: Vec::new(),
                tags: Vec::new(),
                status: *status,
                pointer: None,
                diff: None,
                notes: Vec::new(),
                actual: None,
                expected: None,
                signature: signature.map(str::to_owned),
                elapsed: Duration::ZERO,
            })
            .collect();
        ProfileRun {
            profile,
            hello: crate::execute::hello(profile),
            results,
        }
    }

    /// Over several profiles, a line goes only when the case passes under every one, and
    /// keeps its signature when one profile still differs that way; a line whose case
    /// now destroys data is never touched, and never doubled.
    #[test]
    fn writing_over_profiles_keeps_what_one_still_needs() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("list");
        let text = "0001 omp adds a key on purpose ## /a: 1 -> 2\r\n0002 passes now ## /b: 1 -> 2\r\n0003 differs ## /c: 1 -> 2\r\n";
        fs::write(&path, text).expect("list");
        let loss = "unsafe: bytes-kept session.jsonl";
        let runs = [
            profile_run(
                Profile::Omp,
                &[
                    ("0001", Status::Divergent, Some("/a: 1 -> 2")),
                    ("0002", Status::UnexpectedPass, None),
                    ("0003", Status::Divergent, Some("/c: 1 -> 2")),
                ],
            ),
            profile_run(
                Profile::Pi,
                &[
                    ("0001", Status::UnexpectedPass, None),
                    ("0002", Status::UnexpectedPass, None),
                    ("0003", Status::Unsafe, Some(loss)),
                    ("0004", Status::Unsafe, Some(loss)),
                ],
            ),
        ];
        let changed = write_signatures(&path, &runs).expect("written");
        let written = fs::read_to_string(&path).expect("list");
        assert_eq!(
            written,
            format!("0001 omp adds a key on purpose ## /a: 1 -> 2\r\n0003 differs ## /c: 1 -> 2\r\n0004 {UNREVIEWED} ## {loss}\r\n")
        );
        assert_eq!(changed.removed, ["0002"]);
        assert_eq!(changed.unsafe_kept, ["0003"]);
        assert_eq!(changed.added, ["0004"]);
    }
}
