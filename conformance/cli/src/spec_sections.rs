//! The generated part of each clause of the specification (`docs/spec/`): the cases that
//! cite it and, for each implementation's divergence list, the reasons the list gives for
//! those cases (`corpus spec-sections`).
//!
//! A clause (`### AREA.N Title`) holds a line `<!-- generated: cases -->`; what follows it up
//! to `<!-- end generated -->` is rewritten (the end marker is added the first time). The
//! reasons are the ones a run would give: [`Divergences::excuse`], an id line first, else
//! the first category that selects the case.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use session_conformance::corpus::{self, Case, Spec, SpecLine};
use session_conformance::divergences::{Divergences, Excuse};

/// The line that opens a clause's generated part.
pub const START: &str = corpus::GENERATED_START;
/// The line that closes it.
pub const END: &str = corpus::GENERATED_END;
/// A reason is cut to this many characters (its end shown as `…`).
const MAX_REASON: usize = 160;

/// One implementation's divergence list, under the name the sections give it.
#[derive(Debug)]
pub struct Listed {
    /// The implementation and its version (`pi-mono 0.73.1`).
    pub name: String,
    /// Its list.
    pub list: Divergences,
}

/// Renders every file of the specification folder `spec` ([`Spec::files`]) and writes back
/// those that change, unless `check`; the files that changed (or would), in path order.
pub fn rewrite(
    spec: &Path,
    cases: &[Case],
    lists: &[Listed],
    check: bool,
) -> Result<Vec<PathBuf>, String> {
    let mut stale = Vec::new();
    for file in Spec::files(spec).map_err(|e| e.to_string())? {
        let text = fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let new = render(&text, cases, lists);
        if new == text {
            continue;
        }
        if !check {
            fs::write(&file, new).map_err(|e| format!("{}: {e}", file.display()))?;
        }
        stale.push(file);
    }
    Ok(stale)
}

/// `text` (a specification file) with every clause's generated part written anew from
/// `cases` and `lists`. Clauses and their sections are read as `corpus check` reads them
/// ([`corpus::spec_lines`]): a marker inside a fenced example, or after a heading that
/// ends the clause, is left as it is.
pub fn render(text: &str, cases: &[Case], lists: &[Listed]) -> String {
    let citing = cases_by_clause(cases);
    let lines: Vec<SpecLine> = corpus::spec_lines(text).collect();
    let marker = |line: &SpecLine, marker: &str| !line.fenced && line.text.trim() == marker;
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < lines.len() {
        let line = &lines[i];
        out.push_str(line.text);
        i += 1;
        let Some(id) = line.clause.filter(|_| marker(line, START)) else {
            continue;
        };
        // An earlier generated part ends at its end marker, if one comes before the
        // clause's section does.
        let end = lines[i..]
            .iter()
            .position(|l| l.clause != Some(id) || l.heading || marker(l, END));
        if let Some(n) =
            end.filter(|&n| marker(&lines[i + n], END) && lines[i + n].clause == Some(id))
        {
            i += n + 1;
        }
        let empty = Vec::new();
        out.push_str(&section(citing.get(id).unwrap_or(&empty), lists));
        out.push_str(END);
        out.push('\n');
    }
    out
}

/// Clause id → the cases citing it, by id.
fn cases_by_clause(cases: &[Case]) -> BTreeMap<&str, Vec<&Case>> {
    let mut citing: BTreeMap<&str, Vec<&Case>> = BTreeMap::new();
    for case in cases {
        for clause in &case.file.clauses {
            citing.entry(clause.as_str()).or_default().push(case);
        }
    }
    for list in citing.values_mut() {
        list.sort_by_key(|c| c.file.id);
    }
    citing
}

/// The generated Markdown of a clause cited by `cases`.
fn section(cases: &[&Case], lists: &[Listed]) -> String {
    if cases.is_empty() {
        return "Cases: none (the clause says why it cannot be observed).\n".to_owned();
    }
    let names: Vec<String> = cases
        .iter()
        .map(|c| format!("{} `{}`", c.id(), c.full_name()))
        .collect();
    let mut out = format!("Cases: {}.\n\n", names.join(", "));
    let mut lines = String::new();
    for listed in lists {
        for (reason, ids) in reasons(cases, &listed.list) {
            let _ = writeln!(
                lines,
                "- {}, {}: {}",
                listed.name,
                ids.join(", "),
                short(reason)
            );
        }
    }
    if lines.is_empty() {
        out.push_str("No implementation lists a divergence for these cases.\n");
    } else {
        let _ = write!(out, "Listed divergences:\n\n{lines}");
    }
    out
}

/// The reasons `list` gives for `cases`, each with the cases it covers, in the order of
/// each reason's first case.
fn reasons<'a>(cases: &[&Case], list: &'a Divergences) -> Vec<(&'a str, Vec<String>)> {
    let mut out: Vec<(&str, Vec<String>)> = Vec::new();
    for case in cases {
        let reason = match list.excuse(case) {
            Some(Excuse::Id(known)) => known.reason.as_str(),
            Some(Excuse::Category(line)) => line.reason.as_str(),
            // A shape line (`at:`, `diff:`) excuses a case by the differences a run
            // finds, which a page written from the lists alone cannot know: it is not
            // shown per case.
            None => continue,
        };
        match out.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, ids)) => ids.push(case.id()),
            None => out.push((reason, vec![case.id()])),
        }
    }
    out
}

/// `reason`, cut to [`MAX_REASON`] characters.
fn short(reason: &str) -> String {
    if reason.chars().count() <= MAX_REASON {
        return reason.to_owned();
    }
    let mut cut: String = reason.chars().take(MAX_REASON - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn case(id: u32, name: &str, clauses: &[&str], tags: &[&str]) -> Case {
        let file = serde_json::json!({
            "id": id, "name": name, "profiles": ["pi"], "clauses": clauses,
            "op": "load", "args": {}, "tags": tags,
        });
        Case {
            file: serde_json::from_value(file).expect("a case file"),
            dir: Path::new("corpus/cases/parse").join(name),
            group: "parse".into(),
            inputs: BTreeMap::new(),
            derived: session_conformance::corpus::Derived::default(),
            refused: None,
        }
    }

    fn listed(name: &str, text: &str) -> Listed {
        Listed {
            name: name.into(),
            list: session_conformance::divergences::parse(text, Path::new("list")).expect("a list"),
        }
    }

    const SPEC: &str = "# Loading\n\n### loading.1 One\n\nRule.\n\n<!-- generated: cases -->\nstale\n<!-- end generated -->\n\n### loading.2 Two\n\nNot observable: keys.\n\n<!-- generated: cases -->\n";

    #[test]
    fn sections_list_cases_and_reasons_by_list() {
        let cases = [
            case(7, "b", &["loading.1"], &[]),
            case(3, "a", &["loading.1"], &["torn-line"]),
        ];
        let lists = [
            listed("x 1.0", "0007 by id ## /a: 1 -> 2\ntag:torn-* torn\n"),
            listed("y 2.0", "parse/* every parse case\n"),
            listed("z 3.0", "0099 another case\n"),
        ];
        let want = "# Loading\n\n### loading.1 One\n\nRule.\n\n<!-- generated: cases -->\nCases: 0003 `parse/a`, 0007 `parse/b`.\n\nListed divergences:\n\n- x 1.0, 0003: torn\n- x 1.0, 0007: by id\n- y 2.0, 0003, 0007: every parse case\n<!-- end generated -->\n\n### loading.2 Two\n\nNot observable: keys.\n\n<!-- generated: cases -->\nCases: none (the clause says why it cannot be observed).\n<!-- end generated -->\n";
        let got = render(SPEC, &cases, &lists);
        assert_eq!(got, want);
        assert_eq!(render(&got, &cases, &lists), got, "rendering is idempotent");
    }

    /// Issue 45: the sections are the clauses `corpus check` reads. A heading and a
    /// marker inside a fenced example are text, and a `##` heading ends a clause, so a
    /// marker after it belongs to no clause; each is left as it is.
    #[test]
    fn markers_outside_a_clause_section_are_left_as_they_are() {
        let cases = [
            case(1, "a", &["loading.1"], &[]),
            case(9, "z", &["loading.9"], &[]),
        ];
        let text = "### loading.1 One\n\n```markdown\n### loading.9 An example\n\n<!-- generated: cases -->\nexample text\n<!-- end generated -->\n```\n\n## Notes\n\n<!-- generated: cases -->\nnotes\n";
        let got = render(text, &cases, &[]);
        assert_eq!(got, text, "nothing is a clause's generated part");
        let mut spec = Spec::default();
        spec.add(Path::new("x.md"), text);
        assert_eq!(spec.clauses.keys().collect::<Vec<_>>(), ["loading.1"]);
    }

    #[test]
    fn no_listed_divergence_is_said_so_and_long_reasons_are_cut() {
        let cases = [case(1, "a", &["loading.1"], &[])];
        let text = render(SPEC, &cases, &[]);
        assert!(text.contains("No implementation lists a divergence for these cases.\n"));
        let long = "r".repeat(200);
        let text = render(SPEC, &cases, &[listed("x", &format!("0001 {long}\n"))]);
        let expected = format!("- x, 0001: {}…\n", "r".repeat(MAX_REASON - 1));
        assert!(text.contains(&expected), "{text}");
    }
}
