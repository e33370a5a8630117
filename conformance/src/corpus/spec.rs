//! The specification's clauses (`docs/spec/`), as `corpus check` and `corpus
//! spec-sections` read them ([`lines`]): each clause is a heading `### AREA.N Title` of one
//! of the folder's Markdown files (not inside a fenced example), its section runs to the
//! next heading, and a clause that no case can observe says so in a line of its own
//! starting `Not observable:`.
//!
//! A clause names the reference functions that implement it in a paragraph opening
//! `Checked:` or `Implemented by:` ([`TRACE_LINES`]): a source path in backticks
//! (`` `reference/src/tree/mod.rs` ``) followed by the backticked items of that file
//! (`` `build_context`, `Rules::for_profile` ``), read by [`names_in`]. Normative text
//! (every line outside a generated part) is read for the wording that leaves a rule to
//! another program ([`VAGUE_WORDING`]).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::problems::{CorpusError, CorpusProblem};

/// The clauses of a specification folder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spec {
    /// Clause id → the file that states it and whether a case can observe it.
    pub clauses: BTreeMap<String, Clause>,
    /// The places where normative text uses [`VAGUE_WORDING`], in file and line order.
    pub wording: Vec<Wording>,
}

/// The paragraphs that record how a clause was checked and name the reference functions
/// that implement it: a paragraph opening with one of these.
pub const TRACE_LINES: [&str; 2] = ["Checked:", "Implemented by:"];

/// Wording normative text must not use: each leaves the rule to another program or elides
/// it, where the clause must state it (issue 46). The first three are matched without
/// regard to ASCII case. An ellipsis is allowed on a line that names it `U+2026`, where
/// it is a character of a text the clause gives.
pub const VAGUE_WORDING: [&str; 4] = [
    "as JavaScript",
    "as pi-mono does",
    "the profile's text",
    "\u{2026}",
];

/// How a line names the ellipsis it holds as a character of a text, not an elision.
const ELLIPSIS_NAMED: &str = "U+2026";

/// A place where normative text uses one of [`VAGUE_WORDING`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wording {
    /// The Markdown file.
    pub file: PathBuf,
    /// The line (1-based).
    pub line: usize,
    /// The wording found.
    pub phrase: &'static str,
}

/// An item of the reference a clause names on a trace line ([`TRACE_LINES`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// The source file, as the clause spells it (`reference/src/tree/mod.rs`), from the
    /// repository's root.
    pub file: String,
    /// The item: a function (`build_context`, `Rules::for_profile`) or a type or constant
    /// (`Header`, `MAX_LIMIT`).
    pub item: String,
}

impl Named {
    /// Whether the item is a function: its last segment does not start with a capital.
    pub fn is_function(&self) -> bool {
        let last = self.item.rsplit("::").next().unwrap_or(&self.item);
        !last.starts_with(|c: char| c.is_ascii_uppercase())
    }

    /// The item's own name, without its type (`for_profile` of `Rules::for_profile`).
    pub fn name(&self) -> &str {
        self.item.rsplit("::").next().unwrap_or(&self.item)
    }
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
    /// Whether a paragraph of it opens with one of [`TRACE_LINES`].
    pub traced: bool,
    /// The reference items its trace paragraphs name ([`names_in`]), in order.
    pub names: Vec<Named>,
}

impl Clause {
    /// Whether it names at least one reference function.
    pub fn names_a_function(&self) -> bool {
        self.names.iter().any(Named::is_function)
    }
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

    /// Adds the clauses `text` (the file `file`) states, and the vague wording of its
    /// normative text.
    pub fn add(&mut self, file: &Path, text: &str) {
        // The trace paragraph being read: its clause and its text so far.
        let mut trace: Option<(&str, String)> = None;
        for line in lines(text) {
            if !line.generated {
                self.wording
                    .extend(vague_wording(line.text).map(|phrase| Wording {
                        file: file.to_owned(),
                        line: line.number,
                        phrase,
                    }));
            }
            let prose = !line.fenced && !line.generated && !line.heading;
            let bare = line.text.trim();
            let opens = |start: &str| line.text.starts_with(start);
            let starts = opens("Not observable:") || TRACE_LINES.into_iter().any(opens);
            let continues =
                prose && !bare.is_empty() && !starts && trace.as_ref().map(|t| t.0) == line.clause;
            if !continues {
                self.end_trace(trace.take());
            }
            let Some(id) = line.clause else {
                continue;
            };
            if line.heading {
                let clause = Clause {
                    file: file.to_owned(),
                    line: line.number,
                    not_observable: false,
                    traced: false,
                    names: Vec::new(),
                };
                self.clauses.insert(id.to_owned(), clause);
            } else if let Some((_, paragraph)) = trace.as_mut().filter(|_| continues) {
                paragraph.push(' ');
                paragraph.push_str(bare);
            } else if prose && line.text.starts_with("Not observable:") {
                if let Some(clause) = self.clauses.get_mut(id) {
                    clause.not_observable = true;
                }
            } else if prose && starts {
                if let Some(clause) = self.clauses.get_mut(id) {
                    clause.traced = true;
                }
                trace = Some((id, bare.to_owned()));
            }
        }
        self.end_trace(trace);
    }

    /// Gives a clause the names its trace paragraph (`id`, `paragraph`) holds.
    fn end_trace(&mut self, trace: Option<(&str, String)>) {
        let Some((id, paragraph)) = trace else {
            return;
        };
        if let Some(clause) = self.clauses.get_mut(id) {
            clause.names.extend(names_in(&paragraph));
        }
    }
}

/// The [`VAGUE_WORDING`] `line` uses.
fn vague_wording(line: &str) -> impl Iterator<Item = &'static str> + '_ {
    let lower = line.to_ascii_lowercase();
    VAGUE_WORDING.into_iter().filter(move |phrase| {
        if *phrase == "\u{2026}" {
            line.contains('\u{2026}') && !line.contains(ELLIPSIS_NAMED)
        } else {
            lower.contains(&phrase.to_ascii_lowercase())
        }
    })
}

/// The reference items a trace paragraph names: each backticked source path
/// (`reference/src/….rs` or `conformance/src/….rs`) is followed by the backticked items of
/// that file, separated by nothing but spaces, commas, parentheses and "and"; any other
/// text or code span ends the file's list.
pub fn names_in(paragraph: &str) -> Vec<Named> {
    let mut names = Vec::new();
    let mut file: Option<&str> = None;
    // Odd pieces are code spans, even ones the text between them.
    for (index, piece) in paragraph.split('`').enumerate() {
        if index % 2 == 0 {
            if !is_separator(piece) {
                file = None;
            }
        } else if is_source_path(piece) {
            file = Some(piece);
        } else if let Some(path) = file.filter(|_| is_item(piece)) {
            names.push(Named {
                file: path.to_owned(),
                item: piece.to_owned(),
            });
        } else {
            file = None;
        }
    }
    names
}

/// Whether `text` only separates the items of a list: spaces, commas, parentheses, "and".
fn is_separator(text: &str) -> bool {
    text.split(|c: char| c.is_whitespace() || matches!(c, ',' | '(' | ')'))
        .all(|word| word.is_empty() || word == "and")
}

/// Whether `code` is a Rust source path of the reference or the harness.
fn is_source_path(code: &str) -> bool {
    (code.starts_with("reference/src/") || code.starts_with("conformance/src/"))
        && Path::new(code).extension().is_some_and(|x| x == "rs")
        && !code.contains(char::is_whitespace)
}

/// Whether `code` is an item's path: identifiers joined by `::`.
fn is_item(code: &str) -> bool {
    code.split("::").all(|part| {
        part.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
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
    /// Whether it is in a clause's generated part: from a line [`GENERATED_START`] up to
    /// the line [`GENERATED_END`] (both included) or the end of the clause's section.
    /// Such a line is written by `corpus spec-sections`, not normative text.
    pub generated: bool,
}

/// The line that opens a clause's generated part.
pub const GENERATED_START: &str = "<!-- generated: cases -->";
/// The line that closes a clause's generated part.
pub const GENERATED_END: &str = "<!-- end generated -->";

/// The lines of a specification file (`text`) with the clause each belongs to: the one
/// reader of clauses, for `corpus check` ([`Spec::add`]) and `corpus spec-sections`.
pub fn lines(text: &str) -> impl Iterator<Item = SpecLine<'_>> {
    let mut clause: Option<&str> = None;
    let mut fenced = false;
    let mut generated = false;
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
                    generated = false;
                } else if bare.starts_with("## ") || bare.starts_with("# ") {
                    clause = None;
                    generated = false;
                } else if clause.is_some() && bare.trim() == GENERATED_START {
                    generated = true;
                }
            }
            let line = SpecLine {
                text,
                number: index + 1,
                clause,
                heading,
                fenced: fenced || fence,
                generated,
            };
            if fence {
                fenced = !fenced;
            }
            if !line.fenced && bare.trim() == GENERATED_END {
                generated = false;
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

    /// A generated part runs from its start marker to its end marker, or to the end of
    /// the clause's section; a marker in a fence or outside a clause opens none.
    #[test]
    fn generated_parts_run_from_their_marker_to_the_end_marker_or_the_section_end() {
        let text = "### t.1 A\nrule\n<!-- generated: cases -->\nCases: 1\n<!-- end generated -->\nafter\n### t.2 B\n<!-- generated: cases -->\nCases: 2\n### t.3 C\n```\n<!-- generated: cases -->\n```\nrule\n## Notes\n<!-- generated: cases -->\nprose\n";
        let generated: Vec<usize> = lines(text)
            .filter(|l| l.generated)
            .map(|l| l.number)
            .collect();
        assert_eq!(generated, [3, 4, 5, 8, 9]);
    }

    /// The names of a trace paragraph: a source path, then the items of that file, up to
    /// any other text or code span; a paragraph may wrap.
    #[test]
    fn trace_paragraphs_name_items_after_their_source_path() {
        let table: [(&str, &[(&str, &str)]); 8] = [
            (
                "Checked: read; the reference `reference/src/a.rs` `f`, `T::g` and `h`.",
                &[("reference/src/a.rs", "f"), ("reference/src/a.rs", "T::g"), ("reference/src/a.rs", "h")],
            ),
            (
                "Implemented by: `reference/src/a.rs` `f` (`helper`); `conformance/src/execute/b.rs` `run`.",
                &[("reference/src/a.rs", "f"), ("reference/src/a.rs", "helper"), ("conformance/src/execute/b.rs", "run")],
            ),
            // Other text ends the list: `apply` is a word of the sentence.
            (
                "Checked: `reference/src/a.rs` `f`, run with (`apply` under `pi`).",
                &[("reference/src/a.rs", "f")],
            ),
            // A code span that is not an item ends it too.
            (
                "Checked: `reference/src/a.rs` `f`, `planning/x-y` `g`.",
                &[("reference/src/a.rs", "f")],
            ),
            // Items before any path, and paths of other programs, name nothing.
            (
                "Checked: pi-mono read (`buildSessionContext`, `dist/core/x.js` `y`).",
                &[],
            ),
            ("Checked: `reference/src/a.rs` (the line shapes).", &[]),
            ("Checked: `reference/src/a.rs`.", &[]),
            ("Checked: `reference/src/a b.rs` `f`.", &[]),
        ];
        for (paragraph, want) in table {
            let got: Vec<(String, String)> = names_in(paragraph)
                .into_iter()
                .map(|n| (n.file, n.item))
                .collect();
            let want: Vec<(String, String)> = want
                .iter()
                .map(|&(file, item)| (file.to_owned(), item.to_owned()))
                .collect();
            assert_eq!(got, want, "{paragraph}");
        }
    }

    /// A clause is traced by a `Checked:` or `Implemented by:` paragraph of its own
    /// section, which may wrap; one in a fence, a generated part or another clause's
    /// section does not count, and functions are told from types.
    #[test]
    fn clauses_are_traced_by_their_own_checked_or_implemented_by_paragraph() {
        let text = "### t.1 A\nrule\n\nChecked: pi read; the reference\n`reference/src/a.rs` `f`,\n`Header`.\n\n### t.2 B\nImplemented by: `reference/src/b.rs` `Storage`.\n### t.3 C\n```\nChecked: `reference/src/a.rs` `f`\n```\n<!-- generated: cases -->\nChecked: `reference/src/a.rs` `f`\n<!-- end generated -->\n### t.4 D\nNot observable: keys.\nImplemented by: `reference/src/d.rs` `d`\n";
        let mut spec = Spec::default();
        spec.add(Path::new("t.md"), text);
        let seen: Vec<(&str, bool, bool, Vec<&str>)> = spec
            .clauses
            .iter()
            .map(|(id, c)| {
                let names = c.names.iter().map(|n| n.item.as_str()).collect();
                (id.as_str(), c.traced, c.names_a_function(), names)
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("t.1", true, true, vec!["f", "Header"]),
                ("t.2", true, false, vec!["Storage"]),
                ("t.3", false, false, vec![]),
                ("t.4", true, true, vec!["d"]),
            ]
        );
        assert!(spec.clauses["t.4"].not_observable);
    }

    /// Each vague wording is found outside generated parts, anywhere in a file; an
    /// ellipsis on a line that names it U+2026 is a character of a text.
    #[test]
    fn vague_wording_is_found_outside_generated_parts() {
        let text = "# Intro\nas pi-mono does\n### t.1 A\nread As JavaScript reads it\nthe profile's text\n`f(…)`\nfollowed by `…` (U+2026)\n<!-- generated: cases -->\n- x 1.0, 0003: as JavaScript…\n<!-- end generated -->\n";
        let mut spec = Spec::default();
        spec.add(Path::new("t.md"), text);
        let seen: Vec<(usize, &str)> = spec.wording.iter().map(|w| (w.line, w.phrase)).collect();
        assert_eq!(
            seen,
            [
                (2, "as pi-mono does"),
                (4, "as JavaScript"),
                (5, "the profile's text"),
                (6, "\u{2026}"),
            ]
        );
    }
}
