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
    /// Every clause is cited by a case or says why none can see it: the whole corpus
    /// against its own specification.
    Every,
    /// Cited clauses exist; a clause may go uncited (a generated or partial corpus).
    CitedOnly,
}

/// [`check`], and the clauses against `spec`: every cited clause exists, and, with
/// [`Coverage::Every`], every clause is cited by a case or says why it cannot be observed.
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
}
