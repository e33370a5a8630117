//! `corpus check`: the lint over every case of the corpus (ids, names, operations,
//! profiles, clauses, tags, messages, `dir_inputs`, `mtimes`, goldens, orphaned files).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use session_reference::model::Profile;

use super::case_file::TAGS;
use super::cases::{load, Case};
use super::goldens::{check_golden_text, Golden};
use super::problems::{CorpusError, CorpusProblem};
use super::spec::{is_clause_id, Spec};
use super::templates::expand;

/// Lints the corpus: case files, names, ids, goldens. Returns every problem found.
/// Clause ids are checked for their spelling only; [`check_with_spec`] checks them
/// against the specification.
pub fn check(root: &Path) -> Vec<CorpusError> {
    check_cases(root, None)
}

/// Whether [`check_with_spec`] also asks that every clause be cited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// Every clause is cited by a case or says why none can see it, and the
    /// specification's text passes [`spec_problems`]: the whole corpus against its own
    /// specification.
    Every,
    /// Cited clauses exist; a clause may go uncited (a generated or partial corpus).
    CitedOnly,
}

/// [`check`], and the clauses against `spec`: every cited clause exists, and, with
/// [`Coverage::Every`], every clause is cited by a case or says why it cannot be observed,
/// and the specification's text passes [`spec_problems`].
pub fn check_with_spec(root: &Path, spec: &Spec, coverage: Coverage) -> Vec<CorpusError> {
    check_cases(root, Some((spec, coverage)))
}

/// [`check_with_spec`] over cases [`load`](super::load) read already.
pub fn check_loaded(cases: &[Case], spec: &Spec, coverage: Coverage) -> Vec<CorpusError> {
    lint(cases, Some(spec), coverage)
}

fn check_cases(root: &Path, spec: Option<(&Spec, Coverage)>) -> Vec<CorpusError> {
    let (spec, coverage) = match spec {
        Some((spec, coverage)) => (Some(spec), coverage),
        None => (None, Coverage::CitedOnly),
    };
    match load(root) {
        Ok(cases) => lint(&cases, spec, coverage),
        Err(e) => vec![e],
    }
}

fn lint(cases: &[Case], spec: Option<&Spec>, coverage: Coverage) -> Vec<CorpusError> {
    let mut problems = Vec::new();
    let mut ids: HashMap<u32, PathBuf> = HashMap::new();
    let mut cited: HashSet<&str> = HashSet::new();
    for case in cases {
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
        if case.file.clauses.is_empty() {
            problems.push(at(CorpusProblem::NoClauses));
        }
        for clause in &case.file.clauses {
            cited.insert(clause.as_str());
            if !is_clause_id(clause) {
                problems.push(at(CorpusProblem::BadClauseId(clause.clone())));
            } else if spec.is_some_and(|s| !s.clauses.contains_key(clause)) {
                problems.push(at(CorpusProblem::UnknownClause(clause.clone())));
            }
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
    let every = spec.filter(|_| coverage == Coverage::Every);
    for (id, clause) in every.map(|s| &s.clauses).into_iter().flatten() {
        if !clause.not_observable && !cited.contains(id.as_str()) {
            problems.push(CorpusError {
                path: clause.file.clone(),
                kind: CorpusProblem::UncitedClause(format!("{id} (line {})", clause.line)),
            });
        }
    }
    problems.extend(every.into_iter().flat_map(spec_problems));
    problems
}

/// What is wrong with the specification's own text: a clause that does not name the
/// reference functions implementing it (`docs/spec/README.md`, "Clauses"), and normative
/// text with [`VAGUE_WORDING`](super::VAGUE_WORDING). That the names resolve needs
/// the reference's source, which an installed binary does not carry: the test
/// `conformance/tests/spec_trace.rs` checks it.
pub fn spec_problems(spec: &Spec) -> Vec<CorpusError> {
    let mut problems = Vec::new();
    for (id, clause) in &spec.clauses {
        let at = format!("{id} (line {})", clause.line);
        let kind = if !clause.traced {
            CorpusProblem::UntracedClause(at)
        } else if !clause.names_a_function() {
            CorpusProblem::NoImplementer(at)
        } else {
            continue;
        };
        problems.push(CorpusError {
            path: clause.file.clone(),
            kind,
        });
    }
    problems.extend(spec.wording.iter().map(|w| CorpusError {
        path: w.file.clone(),
        kind: CorpusProblem::VagueWording {
            line: w.line,
            phrase: w.phrase,
        },
    }));
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

    /// `corpus check` refuses a clause without a trace paragraph, one whose paragraph
    /// names no function (a type alone is not one), and vague normative wording; a clause
    /// naming a function passes.
    #[test]
    fn spec_problems_name_untraced_clauses_and_vague_wording() {
        let text = "### t.1 Traced\nChecked: read; the reference `reference/src/a.rs` `f`.\n\n### t.2 Untraced\nRule.\n\n### t.3 A type only\nImplemented by: `reference/src/a.rs` `Header`.\n\n### t.4 Vague\nRead as pi-mono does.\nImplemented by: `reference/src/a.rs` `g`.\n<!-- generated: cases -->\n- as pi-mono does\n<!-- end generated -->\n";
        let mut spec = Spec::default();
        spec.add(Path::new("t.md"), text);
        let problems: Vec<String> = spec_problems(&spec)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            problems,
            [
                "t.md: clause t.2 (line 4) has no `Checked:` or `Implemented by:` paragraph naming the reference functions that implement it (docs/spec/README.md)",
                "t.md: clause t.3 (line 7) names no reference function: its `Checked:` or `Implemented by:` paragraph gives a source path, then the functions (`reference/src/context/mod.rs` `build_context`)",
                "t.md: line 11: normative text says \"as pi-mono does\"; state the rule itself",
            ]
        );
    }
}
