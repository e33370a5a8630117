//! The specification's clauses (`docs/spec/`), as `corpus check` and `corpus
//! spec-sections` read them ([`lines`]): each clause is a heading `### AREA.N Title` of one
//! of the folder's Markdown files (not inside a fenced example), its section runs to the
//! next heading, and a clause that no case can observe says so in a line of its own
//! starting `Not observable:`.

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
        for line in lines(text) {
            let Some(id) = line.clause else {
                continue;
            };
            if line.heading {
                let clause = Clause {
                    file: file.to_owned(),
                    line: line.number,
                    not_observable: false,
                };
                self.clauses.insert(id.to_owned(), clause);
            } else if !line.fenced && line.text.starts_with("Not observable:") {
                if let Some(clause) = self.clauses.get_mut(id) {
                    clause.not_observable = true;
                }
            }
        }
    }
}

/// A line of a specification file, as the clause reader sees it ([`lines`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecLine<'a> {
    /// The line as written, its line ending included.
    pub text: &'a str,
    /// Its number (1-based).
    pub number: usize,
    /// The clause whose section holds it: from its heading `### AREA.N Title` up to the
    /// next heading (`#`, `##` or `###`) outside a fenced block. `None` before the first
    /// clause, and after a heading that is not a clause's.
    pub clause: Option<&'a str>,
    /// Whether it is the clause's heading.
    pub heading: bool,
    /// Whether it is inside a fenced code block (its fence lines included): such a line is
    /// an example, never a heading, a marker or a `Not observable:` line.
    pub fenced: bool,
}

/// The lines of a specification file (`text`) with the clause each belongs to: the one
/// reader of clauses, for `corpus check` ([`Spec::add`]) and `corpus spec-sections`.
pub fn lines(text: &str) -> impl Iterator<Item = SpecLine<'_>> {
    let mut clause: Option<&str> = None;
    let mut fenced = false;
    text.split_inclusive('\n')
        .enumerate()
        .map(move |(index, text)| {
            let bare = text.trim_end_matches(['\n', '\r']);
            let fence = bare.starts_with("```");
            let mut heading = false;
            if !fenced && !fence {
                if let Some(rest) = bare.strip_prefix("### ") {
                    let id = rest.split_whitespace().next().unwrap_or("");
                    clause = is_clause_id(id).then_some(id);
                    heading = clause.is_some();
                } else if bare.starts_with("## ") || bare.starts_with("# ") {
                    clause = None;
                }
            }
            let line = SpecLine {
                text,
                number: index + 1,
                clause,
                heading,
                fenced: fenced || fence,
            };
            if fence {
                fenced = !fenced;
            }
            line
        })
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

    /// Each line's clause: a fence holds examples (a heading in it is not one), and a
    /// `##` heading ends the clause before it.
    #[test]
    fn lines_belong_to_the_clause_above_them_up_to_the_next_heading() {
        let text = "# t\n### t.1 A\nrule\n```\n### t.9 example\n```\nmore\n## Part\nprose\n### t.2 B\r\nNot observable: x\r\n";
        let seen: Vec<(usize, Option<&str>, bool, bool)> = lines(text)
            .map(|l| (l.number, l.clause, l.heading, l.fenced))
            .collect();
        assert_eq!(
            seen,
            [
                (1, None, false, false),
                (2, Some("t.1"), true, false),
                (3, Some("t.1"), false, false),
                (4, Some("t.1"), false, true),
                (5, Some("t.1"), false, true),
                (6, Some("t.1"), false, true),
                (7, Some("t.1"), false, false),
                (8, None, false, false),
                (9, None, false, false),
                (10, Some("t.2"), true, false),
                (11, Some("t.2"), false, false),
            ]
        );
        let mut spec = Spec::default();
        spec.add(Path::new("t.md"), text);
        assert!(spec.clauses["t.2"].not_observable, "a CRLF line is read");
    }
}
