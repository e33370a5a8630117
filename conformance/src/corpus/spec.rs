//! The specification's clauses (`docs/spec/`), as `corpus check` reads them: each clause
//! is a heading `### AREA.N Title` of one of the folder's Markdown files, and a clause
//! that no case can observe says so in a line of its own starting `Not observable:`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::problems::{CorpusError, CorpusProblem};

/// The clauses of a specification folder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spec {
    /// Clause id → the file that states it and whether a case can observe it.
    pub clauses: BTreeMap<String, Clause>,
}

/// One clause, as `corpus check` needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clause {
    /// The Markdown file that states it.
    pub file: PathBuf,
    /// Its heading's line in that file (1-based).
    pub line: usize,
    /// Whether the clause says it cannot be observed through the protocol.
    pub not_observable: bool,
}

fn walk_error(path: &Path, e: &std::io::Error) -> CorpusError {
    CorpusError {
        path: path.to_owned(),
        kind: CorpusProblem::Walk(e.to_string()),
    }
}

/// Whether `id` is spelled as a clause id: a lowercase area, a dot and a number (`context.7`).
pub fn is_clause_id(id: &str) -> bool {
    id.split_once('.').is_some_and(|(area, n)| {
        !area.is_empty()
            && area.bytes().all(|b| b.is_ascii_lowercase())
            && !n.is_empty()
            && n.bytes().all(|b| b.is_ascii_digit())
    })
}

impl Spec {
    /// Reads the clauses of every `*.md` file directly in `dir` ([`Spec::files`]).
    pub fn read(dir: &Path) -> Result<Spec, CorpusError> {
        let mut spec = Spec::default();
        for file in Spec::files(dir)? {
            let text = fs::read_to_string(&file).map_err(|e| walk_error(&file, &e))?;
            spec.add(&file, &text);
        }
        Ok(spec)
    }

    /// The specification's files: the regular `*.md` files directly in `dir` (links are not
    /// followed), in path order.
    pub fn files(dir: &Path) -> Result<Vec<PathBuf>, CorpusError> {
        let mut files: Vec<PathBuf> = fs::read_dir(dir)
            .map_err(|e| walk_error(dir, &e))?
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        files.sort();
        Ok(files)
    }

    /// Adds the clauses `text` (the file `file`) states.
    pub fn add(&mut self, file: &Path, text: &str) {
        let mut current: Option<String> = None;
        let mut fenced = false;
        for (index, line) in text.lines().enumerate() {
            if line.starts_with("```") {
                fenced = !fenced;
                continue;
            }
            if fenced {
                continue;
            }
            if let Some(heading) = line.strip_prefix("### ") {
                let id = heading.split_whitespace().next().unwrap_or("");
                current = is_clause_id(id).then(|| id.to_owned());
                if let Some(id) = &current {
                    self.clauses.insert(
                        id.clone(),
                        Clause {
                            file: file.to_owned(),
                            line: index + 1,
                            not_observable: false,
                        },
                    );
                }
            } else if line.starts_with("## ") || line.starts_with("# ") {
                current = None;
            } else if line.starts_with("Not observable:") {
                if let Some(clause) = current.as_ref().and_then(|id| self.clauses.get_mut(id)) {
                    clause.not_observable = true;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clause_ids_are_an_area_a_dot_and_a_number() {
        for (id, ok) in [
            ("context.7", true),
            ("a.1", true),
            ("Context.7", false),
            ("context.", false),
            (".7", false),
            ("context.7a", false),
            ("context7", false),
            ("con-text.7", false),
        ] {
            assert_eq!(is_clause_id(id), ok, "{id}");
        }
    }

    #[test]
    fn headings_are_clauses_and_not_observable_marks_its_own_clause() {
        let text = "# tree\n\n### tree.1 First\n\nRule.\n\n### tree.2 Second\n\nNot observable: the picker's keys.\n\n```\n### tree.9 in a fence\n```\n### Not a clause\n\nNot observable: no clause here.\n";
        let mut spec = Spec::default();
        spec.add(Path::new("tree.md"), text);
        let seen: Vec<(&str, usize, bool)> = spec
            .clauses
            .iter()
            .map(|(id, c)| (id.as_str(), c.line, c.not_observable))
            .collect();
        assert_eq!(seen, [("tree.1", 3, false), ("tree.2", 7, true)]);
    }
}
