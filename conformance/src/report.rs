//! Reports of a run: text for people, JSON Lines for tools, JUnit XML for CI.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::json;
use serde_json::value::RawValue;

use crate::bundle::CorpusVersion;
use crate::guard::printable;
pub use crate::outcome::ProfileRun;
use crate::outcome::{CaseResult, Status};

/// Counts per status.
pub fn counts(results: &[CaseResult]) -> BTreeMap<Status, usize> {
    let mut counts = BTreeMap::new();
    for r in results {
        *counts.entry(r.status).or_insert(0) += 1;
    }
    counts
}

/// The closing line: `N passed, N failed, N skipped` (a case of several profiles runs
/// once per profile, so the counts are of runs; the text report says so above it).
pub fn summary_line(runs: &[ProfileRun]) -> String {
    let all: Vec<&CaseResult> = runs.iter().flat_map(|r| &r.results).collect();
    let passed = all.iter().filter(|r| r.status == Status::Pass).count();
    let failed = all.iter().filter(|r| r.status.is_failure()).count();
    let skipped = all.iter().filter(|r| r.status == Status::Skipped).count();
    format!("{passed} passed, {failed} failed, {skipped} skipped")
}

/// The text report; its last two lines name the corpus run and count the results.
/// Text from the adapter or the corpus (the hello's name and version, case ids and
/// names, pointers, notes, diffs) is shown with its control characters escaped
/// ([`printable`]), so that an adapter cannot retitle, clear or recolour the terminal.
pub fn text(runs: &[ProfileRun], color: bool, corpus: &CorpusVersion) -> String {
    let paint = |code: &str, s: &str| {
        if color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_owned()
        }
    };
    let mut out = String::new();
    for run in runs {
        let _ = writeln!(
            out,
            "{} {}, profile {}: {} case(s) of the profile",
            printable(&run.hello.implementation),
            printable(&run.hello.version),
            run.profile,
            run.results.len()
        );
        for r in run.results.iter().filter(|r| {
            r.status.is_failure()
                || matches!(r.status, Status::DivergentChanged | Status::UnsafeListed)
        }) {
            let status = if r.status == Status::DivergentChanged {
                paint("33;1", "DIVERGENT (CHANGED)")
            } else {
                paint("31;1", &r.status.name().to_uppercase())
            };
            let at = r
                .pointer
                .as_deref()
                .map(|p| format!(" at {}", printable(p)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{status} {} {}{at}",
                printable(&r.id),
                printable(&r.name)
            );
            if !r.description.is_empty() {
                let _ = writeln!(out, "  case: {}", printable(&r.description));
            }
            if !r.clauses.is_empty() {
                let _ = writeln!(
                    out,
                    "  rule: docs/spec/ clause {}",
                    printable(&r.clauses.join(", "))
                );
            }
            for note in &r.notes {
                let _ = writeln!(out, "  {}", printable(note));
            }
            if let Some(diff) = &r.diff {
                for line in diff.lines() {
                    let line = printable(line);
                    let line = match line.chars().next() {
                        Some('+') if !line.starts_with("+++") => paint("32", &line),
                        Some('-') if !line.starts_with("---") => paint("31", &line),
                        _ => line.into_owned(),
                    };
                    let _ = writeln!(out, "  {line}");
                }
            }
        }
        let c = counts(&run.results);
        let extra: Vec<String> = [
            Status::Divergent,
            Status::DivergentChanged,
            Status::Unsafe,
            Status::UnsafeListed,
            Status::UnexpectedPass,
            Status::Timeout,
            Status::Crash,
            Status::ProtocolError,
        ]
        .iter()
        .filter_map(|s| c.get(s).map(|n| format!("{n} {}", shown(*s))))
        .collect();
        if !extra.is_empty() {
            let _ = writeln!(out, "{}: {}", run.profile, extra.join(", "));
        }
        let unreviewed = run
            .results
            .iter()
            .filter(|r| r.notes.iter().any(|n| n == crate::outcome::UNREVIEWED_NOTE))
            .count();
        if unreviewed > 0 {
            let _ = writeln!(
                out,
                "{}: {unreviewed} divergence(s) listed as UNREVIEWED: write why each differs",
                run.profile
            );
        }
        out.push_str(&grouped_failures(&run.results));
    }
    if runs.len() > 1 {
        let _ = writeln!(
            out,
            "{} profiles: a case runs once for each profile it names",
            runs.len()
        );
    }
    out.push_str(&slowest(runs));
    let _ = writeln!(out, "corpus: {}", printable(&corpus.to_string()));
    let _ = writeln!(out, "{}", summary_line(runs));
    out
}

/// The failures of a run grouped by where they first differ, array indices as `*`,
/// with their case groups: `12 at /response/ok/nodes/*/label (labels/, tree/)`, so that
/// the failures one bug causes read as one line. A failure with no difference (a
/// timeout, a crash) is grouped by its status. Empty for fewer than two failures.
fn grouped_failures(results: &[CaseResult]) -> String {
    let mut groups: BTreeMap<String, (usize, std::collections::BTreeSet<&str>)> = BTreeMap::new();
    let failures = results.iter().filter(|r| r.status.is_failure());
    for r in failures {
        let key = match &r.pointer {
            Some(pointer) => format!("at {}", indices_as_stars(pointer)),
            None => r.status.name().to_owned(),
        };
        let group = r.name.split('/').next().unwrap_or_default();
        let entry = groups.entry(key).or_default();
        entry.0 += 1;
        entry.1.insert(group);
    }
    if groups.values().map(|(n, _)| n).sum::<usize>() < 2 {
        return String::new();
    }
    let mut rows: Vec<(String, usize, String)> = groups
        .into_iter()
        .map(|(key, (n, g))| {
            let g: Vec<String> = g
                .into_iter()
                .map(|g| format!("{}/", printable(g)))
                .collect();
            (key, n, g.join(", "))
        })
        .collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let mut out = String::from("failures by where they first differ:\n");
    for (key, n, g) in rows {
        let _ = writeln!(out, "  {n} {} ({g})", printable(&key));
    }
    out
}

/// How many of the slowest cases the text report names.
pub const SLOWEST_SHOWN: usize = 5;

/// The [`SLOWEST_SHOWN`] slowest cases of every profile's run, slowest first, each with
/// its elapsed time (the JSON record's `ms`), id, `group/name`, profile and status:
/// where an adapter's time goes. Empty for a run of no case.
fn slowest(runs: &[ProfileRun]) -> String {
    let mut all: Vec<(&ProfileRun, &CaseResult)> = runs
        .iter()
        .flat_map(|run| run.results.iter().map(move |r| (run, r)))
        .collect();
    if all.is_empty() {
        return String::new();
    }
    all.sort_by(|a, b| {
        b.1.elapsed
            .cmp(&a.1.elapsed)
            .then_with(|| a.1.id.cmp(&b.1.id))
    });
    let mut out = format!("slowest {} case(s):\n", all.len().min(SLOWEST_SHOWN));
    for (run, r) in all.into_iter().take(SLOWEST_SHOWN) {
        let _ = writeln!(
            out,
            "  {:>8.3} s  {} {} ({}, {})",
            r.elapsed.as_secs_f64(),
            printable(&r.id),
            printable(&r.name),
            run.profile,
            shown(r.status)
        );
    }
    out
}

/// A JSON Pointer with its array indices (all-digit segments) as `*`.
fn indices_as_stars(pointer: &str) -> String {
    pointer
        .split('/')
        .map(|s| {
            if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
                "*"
            } else {
                s
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// A status as the text report names it in its counts.
fn shown(status: Status) -> &'static str {
    match status {
        Status::DivergentChanged => "divergent (changed)",
        Status::UnsafeListed => "unsafe (listed)",
        other => other.name(),
    }
}

/// One case's JSON record. `expected` and `actual` are the normalised outputs as
/// compared (a failed case's; `null` otherwise), written from their canonical text as
/// it is (a value nested deeper than serde's writer could recurse is still written).
/// `clauses` and `tags` are the case's own (`case.json`), so that `report` labels the
/// case as the corpus run did, without reading any corpus.
#[derive(serde::Serialize)]
struct CaseRecord<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    profile: &'a str,
    id: &'a str,
    name: &'a str,
    status: &'a str,
    pointer: Option<&'a str>,
    signature: Option<&'a str>,
    notes: &'a [String],
    diff: Option<&'a str>,
    expected: Option<Box<RawValue>>,
    actual: Option<Box<RawValue>>,
    ms: f64,
    clauses: &'a [String],
    tags: &'a [String],
}

/// JSON text as a raw value (compact), or `None` when it is not JSON.
fn raw(text: Option<&str>) -> Option<Box<RawValue>> {
    let text = text?;
    // Canonical text is pretty; a record is one line. Strings never hold a raw newline.
    let line: String = text.lines().map(str::trim_start).collect();
    RawValue::from_string(line).ok()
}

/// JSON Lines: header, cases, summary. The header names the corpus run
/// (`"corpus": {"cases": N, "sha256": "…"}`).
pub fn json_lines(runs: &[ProfileRun], corpus: &CorpusVersion) -> String {
    let mut out = String::new();
    for run in runs {
        let header = json!({"type": "header", "tool": "session-conformance", "version": env!("CARGO_PKG_VERSION"), "corpus": corpus.to_json(), "profile": run.profile.name(), "adapter": run.hello});
        let _ = writeln!(out, "{}", c1_escaped(header.to_string()));
        for r in &run.results {
            let failed = r.expected.is_some();
            let record = CaseRecord {
                kind: "case",
                profile: run.profile.name(),
                id: &r.id,
                name: &r.name,
                status: r.status.name(),
                pointer: r.pointer.as_deref(),
                signature: r.signature.as_deref(),
                notes: &r.notes,
                diff: r.diff.as_deref(),
                expected: raw(r.expected.as_deref()),
                actual: if failed {
                    raw(r.actual.as_deref())
                } else {
                    None
                },
                ms: r.elapsed.as_secs_f64() * 1000.0,
                clauses: &r.clauses,
                tags: &r.tags,
            };
            let line = serde_json::to_string(&record).unwrap_or_default();
            let _ = writeln!(out, "{}", c1_escaped(line));
        }
        let c: BTreeMap<&str, usize> = counts(&run.results)
            .into_iter()
            .map(|(s, n)| (s.name(), n))
            .collect();
        let _ = writeln!(
            out,
            "{}",
            json!({"type": "summary", "profile": run.profile.name(), "counts": c})
        );
    }
    out
}

/// A JSON line with DEL and the C1 control characters (U+007F to U+009F) written as
/// `\u` escapes, as JSON writers leave them raw: U+009B is a terminal's CSI, so a report
/// shown with `cat` could otherwise move the cursor. Outside strings a JSON line holds
/// only ASCII, so every such character is inside a string, where the escape means the
/// same.
fn c1_escaped(line: String) -> String {
    if !line.chars().any(|c| ('\u{7f}'..='\u{9f}').contains(&c)) {
        return line;
    }
    let mut out = String::with_capacity(line.len() + 16);
    for c in line.chars() {
        if ('\u{7f}'..='\u{9f}').contains(&c) {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// JUnit XML, one test suite per profile; each suite's properties name the corpus run
/// (`corpus.cases`, `corpus.sha256`, and `corpus.problem` when it could not be hashed); each test case's `time` is its elapsed seconds
/// (the JSON record's `ms`).
pub fn junit(runs: &[ProfileRun], corpus: &CorpusVersion) -> String {
    let mut out = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"session-conformance\">\n",
    );
    for run in runs {
        let c = counts(&run.results);
        let failures: usize = run.results.iter().filter(|r| r.status.is_failure()).count();
        let skipped = c.get(&Status::Skipped).copied().unwrap_or(0)
            + c.get(&Status::Divergent).copied().unwrap_or(0)
            + c.get(&Status::DivergentChanged).copied().unwrap_or(0);
        let _ =
            writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\">",
            xml(&format!("{} {} ({})", run.hello.implementation, run.hello.version, run.profile)),
            run.results.len()
        );
        let problem = corpus
            .problem
            .as_ref()
            .map(|p| format!("<property name=\"corpus.problem\" value=\"{}\"/>", xml(p)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "    <properties><property name=\"corpus.cases\" value=\"{}\"/><property name=\"corpus.sha256\" value=\"{}\"/>{problem}</properties>",
            corpus.cases,
            xml(&corpus.sha256)
        );
        for r in &run.results {
            let _ = write!(
                out,
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
                xml(run.profile.name()),
                xml(&format!("{} {}", r.id, r.name)),
                r.elapsed.as_secs_f64()
            );
            let body = match r.status {
                Status::Pass => String::new(),
                Status::Skipped | Status::Divergent | Status::DivergentChanged => {
                    format!("<skipped message=\"{}\"/>", xml(&r.notes.join("; ")))
                }
                s => format!(
                    "<failure type=\"{}\" message=\"{}\">{}</failure>",
                    s.name(),
                    xml(&r.pointer.clone().unwrap_or_else(|| r.notes.join("; "))),
                    xml(r.diff.as_deref().unwrap_or_default())
                ),
            };
            if body.is_empty() {
                out.push_str("/>\n");
            } else {
                let _ = writeln!(out, ">{body}</testcase>");
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

/// Text as XML character data or an attribute value: markup characters as entities,
/// and the characters XML 1.0 does not allow (control characters other than newline and
/// tab, and U+FFFE and U+FFFF) left out, so an adapter's text cannot break the document.
fn xml(s: &str) -> String {
    s.chars()
        .filter(|c| {
            (!c.is_control() || matches!(c, '\n' | '\t')) && !matches!(c, '\u{fffe}' | '\u{ffff}')
        })
        .fold(String::with_capacity(s.len()), |mut out, c| {
            match c {
                '&' => out.push_str("&amp;"),
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '"' => out.push_str("&quot;"),
                _ => out.push(c),
            }
            out
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use session_reference::model::Profile;

    fn corpus() -> CorpusVersion {
        CorpusVersion {
            cases: 2,
            sha256: "0123456789abcdef".repeat(4),
            problem: None,
        }
    }

    fn run(statuses: &[Status]) -> ProfileRun {
        let hello = crate::execute::hello(Profile::Pi);
        let results = statuses
            .iter()
            .enumerate()
            .map(|(i, s)| CaseResult {
                id: format!("{i:04}"),
                name: format!("g/c{i}"),
                description: String::new(),
                clauses: Vec::new(),
                tags: Vec::new(),
                status: *s,
                pointer: None,
                diff: None,
                notes: vec!["a<b".into()],
                actual: None,
                expected: None,
                signature: None,
                elapsed: std::time::Duration::ZERO,
            })
            .collect();
        ProfileRun {
            profile: Profile::Pi,
            hello,
            results,
        }
    }

    #[test]
    fn failures_are_grouped_by_where_they_first_differ() {
        let mut run = run(&[
            Status::Fail,
            Status::Fail,
            Status::Fail,
            Status::Timeout,
            Status::Pass,
        ]);
        let places = [
            ("labels/a", Some("/response/ok/nodes/3/label")),
            ("tree/b", Some("/response/ok/nodes/12/label")),
            ("tree/c", Some("/response/ok/leafId")),
            ("apply/d", None),
        ];
        for (r, (name, pointer)) in run.results.iter_mut().zip(places) {
            r.name = name.to_owned();
            r.pointer = pointer.map(str::to_owned);
            r.description = format!("what {name} checks");
        }
        let text = text(&[run], false, &corpus());
        assert!(
            text.contains(
                "FAIL 0000 labels/a at /response/ok/nodes/3/label\n  case: what labels/a checks\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("failures by where they first differ:\n  2 at /response/ok/nodes/*/label (labels/, tree/)\n  1 at /response/ok/leafId (tree/)\n  1 timeout (apply/)\n"),
            "{text}"
        );
    }

    #[test]
    fn summary_counts_failures_of_every_kind() {
        let runs = [run(&[
            Status::Pass,
            Status::Fail,
            Status::Unsafe,
            Status::Skipped,
            Status::Divergent,
            Status::Timeout,
        ])];
        assert_eq!(summary_line(&runs), "1 passed, 3 failed, 1 skipped");
        assert!(text(&runs, false, &corpus()).ends_with("1 passed, 3 failed, 1 skipped\n"));
    }

    /// A failed case's record carries the normalised outputs as values beside its diff;
    /// a changed divergence is named in the text report and does not fail the run.
    #[test]
    fn records_carry_both_outputs_and_changed_divergences_are_shown() {
        let mut runs = [run(&[Status::Fail, Status::DivergentChanged])];
        runs[0].results[0].expected = Some("{\n  \"a\": [\n    1\n  ]\n}\n".into());
        runs[0].results[0].actual = Some("{\n  \"a\": 2\n}\n".into());
        runs[0].results[0].signature = Some("/a: [1] -> 2".into());
        let lines = json_lines(&runs, &corpus());
        let record: serde_json::Value = lines
            .lines()
            .nth(1)
            .and_then(|l| serde_json::from_str(l).ok())
            .expect("a case record");
        assert_eq!(record["expected"], json!({"a": [1]}));
        assert_eq!(record["actual"], json!({"a": 2}));
        assert_eq!(record["signature"], "/a: [1] -> 2");
        let text = text(&runs, false, &corpus());
        assert!(text.contains("DIVERGENT (CHANGED) 0001"), "{text}");
        assert!(text.contains("1 divergent (changed)"), "{text}");
        assert!(
            text.ends_with("corpus: 2 cases, sha256 0123456789ab\n0 passed, 1 failed, 0 skipped\n"),
            "{text}"
        );
        let header: serde_json::Value =
            serde_json::from_str(lines.lines().next().unwrap_or_default()).unwrap_or_default();
        assert_eq!(
            header["corpus"],
            json!({"cases": 2, "sha256": corpus().sha256})
        );
    }

    /// The text report names the slowest cases, slowest first, with the times the JSON
    /// records and the JUnit cases carry.
    #[test]
    fn the_slowest_cases_are_named_with_their_times() {
        let mut runs = [run(&[Status::Pass; 7])];
        let millis = [5, 20_004, 7, 1_250, 3, 900, 40];
        for (r, ms) in runs[0].results.iter_mut().zip(millis) {
            r.elapsed = std::time::Duration::from_millis(ms);
        }
        runs[0].results[1].status = Status::Divergent;
        let text = text(&runs, false, &corpus());
        let expected = "slowest 5 case(s):\n    20.004 s  0001 g/c1 (pi, divergent)\n     1.250 s  0003 g/c3 (pi, pass)\n     0.900 s  0005 g/c5 (pi, pass)\n     0.040 s  0006 g/c6 (pi, pass)\n     0.007 s  0002 g/c2 (pi, pass)\ncorpus: ";
        assert!(text.contains(expected), "{text}");
        let record: serde_json::Value = json_lines(&runs, &corpus())
            .lines()
            .nth(2)
            .and_then(|l| serde_json::from_str(l).ok())
            .expect("the second case's record");
        assert_eq!(record["ms"], json!(20_004.0));
        assert!(junit(&runs, &corpus()).contains("name=\"0001 g/c1\" time=\"20.004\""));
        assert_eq!(slowest(&[run(&[])]), "");
    }

    /// Adapter and corpus text reaches the text report with its control characters
    /// escaped, and the JUnit XML without the characters XML does not allow.
    #[test]
    fn reports_escape_adapter_and_corpus_text() {
        let mut runs = [run(&[Status::Fail, Status::Fail])];
        runs[0].hello.implementation = "x\u{1b}]0;title\u{7}".into();
        runs[0].hello.version = "1\u{9b}2J\u{ffff}".into();
        for r in &mut runs[0].results {
            r.name = "g\u{1b}[2J/c".into();
            r.pointer = Some("/a\r".into());
            r.notes = vec!["error x\u{1b}c: m".into()];
            r.diff = Some("--- expected\n+++ actual\n+\u{1b}[31m\n".into());
        }
        let text = text(&runs, false, &corpus());
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
        assert!(text.starts_with("x\\u{1b}]0;title\\u{7} 1\\u{9b}2J\u{ffff}, profile pi"));
        assert!(text.contains("FAIL 0000 g\\u{1b}[2J/c at /a\\u{d}\n  error x\\u{1b}c: m\n"));
        let xml = junit(&runs, &corpus());
        assert!(
            !xml.chars()
                .any(|c| (c.is_control() && c != '\n') || c == '\u{ffff}'),
            "{xml:?}"
        );
        runs[0].results[0].actual = Some("{\"\u{9b}2J\": \"\u{7f}\"}".into());
        runs[0].results[0].expected = Some("{}".into());
        let lines = json_lines(&runs, &corpus());
        assert!(
            !lines.chars().any(|c| c.is_control() && c != '\n'),
            "{lines:?}"
        );
        let record: serde_json::Value =
            serde_json::from_str(lines.lines().nth(1).unwrap_or_default()).unwrap_or_default();
        assert_eq!(record["actual"], json!({"\u{9b}2J": "\u{7f}"}));
        assert_eq!(record["name"], "g\u{1b}[2J/c");
    }

    #[test]
    fn junit_escapes_and_counts() {
        let xml = junit(&[run(&[Status::Pass, Status::Fail])], &corpus());
        assert!(xml.contains("failures=\"1\""));
        assert!(xml.contains("a&lt;b"));
        assert!(xml.contains("<property name=\"corpus.cases\" value=\"2\"/>"));
    }
}
