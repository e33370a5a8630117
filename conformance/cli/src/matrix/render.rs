//! The matrix as a Markdown table and as one self-contained HTML page.
//!
//! The page carries its data as JSON in a `<script type="application/json">` element and
//! its style and script inline (`page.css`, `page.js`), so it opens from disk with no
//! server and no network. The table itself is static HTML; the script adds the filter and
//! the details of a cell (its cases, their divergence reasons, pointers and diffs).

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::{Bucket, Cell, Matrix, RowKey};

/// Diffs longer than this (in bytes) are cut in the page, with a note saying so.
pub const MAX_DIFF_BYTES: usize = 20_000;

const CSS: &str = include_str!("page.css");
const JS: &str = include_str!("page.js");

fn cell_text(cell: &Cell) -> String {
    let parts: Vec<String> = Bucket::ALL
        .iter()
        .filter(|b| cell.count(**b) > 0)
        .map(|b| format!("{} {}", cell.count(*b), b.name()))
        .collect();
    if parts.is_empty() {
        "–".into()
    } else {
        parts.join(" · ")
    }
}

/// Text from a report as one Markdown table cell, shown as written: control characters
/// (a newline would end the row) as `\u{..}` escapes, HTML's `<`, `>` and `&` as
/// entities (Markdown passes HTML through), and Markdown's own punctuation backslashed.
fn md_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in session_conformance::guard::printable(s).chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '|' | '*' | '`' | '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Cuts `s` to at most `max` bytes at a character boundary; says whether it cut.
fn cut(s: &str, max: usize) -> (&str, bool) {
    if s.len() <= max {
        return (s, false);
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    (&s[..end], true)
}

impl Matrix {
    /// One Markdown table: a heading row of the columns, then `rows`.
    fn markdown_table(&self, heading: &str, rows: &[&(RowKey, Vec<Cell>)]) -> String {
        let mut out = format!("| {heading} |");
        for column in &self.columns {
            let _ = write!(out, " {} |", md_escape(&column.label()));
        }
        out.push_str("\n| --- |");
        for _ in &self.columns {
            out.push_str(" --- |");
        }
        out.push('\n');
        for (key, cells) in rows {
            let label = md_escape(&key.label());
            if *key == RowKey::All {
                let _ = write!(out, "| **{label}** |");
            } else {
                let _ = write!(out, "| {label} |");
            }
            for cell in cells {
                let _ = write!(out, " {} |", cell_text(cell));
            }
            out.push('\n');
        }
        out
    }

    /// The matrix as a Markdown table: a row per group and tag (after "all cases"), a column
    /// per implementation, each cell its non-zero counts (`412 passed · 62 divergent`);
    /// then, when the corpus's cases cite clauses, a second table with a row per clause.
    /// When the reports name different corpora, a line under the table names each
    /// column's.
    pub fn markdown(&self) -> String {
        let (clauses, rows): (Vec<_>, Vec<_>) = self
            .rows
            .iter()
            .partition(|(key, _)| matches!(key, RowKey::Clause(_)));
        let mut out = self.markdown_table("cases", &rows);
        if !clauses.is_empty() {
            out.push_str("\nBy clause of the specification (`docs/spec/`): the cases that pin each clause.\n\n");
            out.push_str(&self.markdown_table("clause", &clauses));
            out.push_str("\nClauses per implementation: of the clauses its cases pin, how many it follows in every case run, departs from in a case its divergence list gives a reason for, only skips, or fails.\n\n");
            out.push_str(&self.clause_summary(&clauses));
        }
        let corpora: std::collections::BTreeSet<&str> = self
            .columns
            .iter()
            .filter_map(|c| c.corpus.as_deref())
            .collect();
        if corpora.len() > 1 {
            let named: Vec<String> = self
                .columns
                .iter()
                .filter_map(|c| {
                    let corpus = c.corpus.as_deref()?;
                    Some(format!("{}: {}", md_escape(&c.label()), md_escape(corpus)))
                })
                .collect();
            let _ = writeln!(
                out,
                "\nThe columns ran different corpora: {}.",
                named.join("; ")
            );
        }
        out
    }

    /// A row per column: how many clause rows have cases in it, and of those how many
    /// passed in every case run (skips aside), have a listed divergence (and no failure),
    /// were only skipped, lost data as the list records (named), or failed (named).
    fn clause_summary(&self, clauses: &[&(RowKey, Vec<Cell>)]) -> String {
        let mut out = String::from("| implementation | clauses with cases | all passed | some divergent (listed) | only skipped | data lost (listed) | failing |\n| --- | ---: | ---: | ---: | ---: | --- | --- |\n");
        for (index, column) in self.columns.iter().enumerate() {
            let (mut cited, mut passed, mut divergent, mut skipped) = (0, 0, 0, 0);
            let (mut failing, mut lost) = (Vec::new(), Vec::new());
            for (key, cells) in clauses {
                let cell = &cells[index];
                if cell.cases.is_empty() {
                    continue;
                }
                cited += 1;
                // A loss the list records (`unsafe-listed`) is named apart from failures:
                // it does not fail the run, yet data was destroyed.
                let listed_losses = cell
                    .cases
                    .iter()
                    .filter(|&&i| {
                        column
                            .cases
                            .get(i)
                            .is_some_and(|c| c.status == "unsafe-listed")
                    })
                    .count();
                if cell.count(Bucket::Failed) + cell.count(Bucket::Unsafe) > listed_losses {
                    failing.push(key.label());
                } else if listed_losses > 0 {
                    lost.push(key.label());
                } else if cell.count(Bucket::Divergent) > 0 {
                    divergent += 1;
                } else if cell.count(Bucket::Passed) > 0 {
                    passed += 1;
                } else {
                    skipped += 1;
                }
            }
            let named = |labels: &[String]| {
                if labels.is_empty() {
                    "–".to_owned()
                } else {
                    md_escape(&labels.join(", "))
                }
            };
            let _ = writeln!(
                out,
                "| {} | {cited} | {passed} | {divergent} | {skipped} | {} | {} |",
                md_escape(&column.label()),
                named(&lost),
                named(&failing)
            );
        }
        out
    }

    /// The data the page's script reads: columns, rows with their cells, and each column's
    /// cases (diffs cut at `MAX_DIFF_BYTES`).
    pub fn page_data(&self, title: &str) -> Value {
        let columns: Vec<Value> = self
            .columns
            .iter()
            .map(|c| {
                json!({
                    "label": c.label(),
                    "implementation": c.implementation,
                    "version": c.version,
                    "profile": c.profile,
                    "source": c.source.display().to_string(),
                })
            })
            .collect();
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|(key, cells)| {
                json!({
                    "slug": key.slug(),
                    "label": key.label(),
                    "cells": cells.iter().map(|c| json!({"counts": c.counts, "cases": c.cases})).collect::<Vec<_>>(),
                })
            })
            .collect();
        let cases: Vec<Value> = self
            .columns
            .iter()
            .map(|column| {
                Value::Array(
                    column
                        .cases
                        .iter()
                        .map(|case| {
                            let mut record = json!({
                                "id": case.id,
                                "name": case.name,
                                "status": case.status,
                                "bucket": case.bucket().name(),
                            });
                            if let Some(pointer) = &case.pointer {
                                record["pointer"] = json!(pointer);
                            }
                            if !case.notes.is_empty() {
                                record["notes"] = json!(case.notes);
                            }
                            if let Some(diff) = &case.diff {
                                let (text, was_cut) = cut(diff, MAX_DIFF_BYTES);
                                record["diff"] = json!(text);
                                if was_cut {
                                    record["diffCut"] = json!(diff.len());
                                }
                            }
                            record
                        })
                        .collect(),
                )
            })
            .collect();
        json!({"title": title, "columns": columns, "rows": rows, "cases": cases})
    }

    /// The matrix as one HTML page: the table, a filter by group or tag, and a panel that
    /// shows a cell's cases with their divergence reasons and diffs when the cell is clicked.
    pub fn html(&self, title: &str) -> String {
        // `<` only occurs inside JSON strings, where `\u003c` means the same; this keeps
        // `</script>` in a diff from closing the element.
        let data = self.page_data(title).to_string().replace('<', "\\u003c");
        let title = html_escape(title);
        let mut out = String::new();
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{title}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n<h1>{title}</h1>\n"
        );
        out.push_str("<p class=\"legend\">Each cell: cases <span class=\"b-passed\">passed</span>, <span class=\"b-divergent\">divergent</span> (a listed divergence with its reason), <span class=\"b-failed\">failed</span>, <span class=\"b-skipped\">skipped</span> (operation not offered), <span class=\"b-unsafe\">unsafe</span> (data destroyed). Click a cell for its cases and diffs.</p>\n");
        out.push_str("<p><label for=\"filter\">Rows: </label><select id=\"filter\">\n<option value=\"\">every row</option>\n");
        for (group, kind) in [
            ("groups", "group:"),
            ("tags", "tag:"),
            ("clauses of the specification", "clause:"),
        ] {
            let keys: Vec<&RowKey> = self
                .rows
                .iter()
                .map(|(k, _)| k)
                .filter(|k| k.slug().starts_with(kind))
                .collect();
            if keys.is_empty() {
                continue;
            }
            let _ = writeln!(out, "<optgroup label=\"{group}\">");
            for key in keys {
                let _ = writeln!(
                    out,
                    "<option value=\"{}\">{}</option>",
                    html_escape(&key.slug()),
                    html_escape(&key.label())
                );
            }
            out.push_str("</optgroup>\n");
        }
        out.push_str("</select></p>\n<table id=\"matrix\">\n<thead><tr><th>cases</th>");
        for column in &self.columns {
            let _ = write!(
                out,
                "<th class=\"column\" title=\"{}\">{}</th>",
                html_escape(&column.source.display().to_string()),
                html_escape(&column.label())
            );
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for (row, (key, cells)) in self.rows.iter().enumerate() {
            let _ = write!(
                out,
                "<tr data-slug=\"{}\"><th>{}</th>",
                html_escape(&key.slug()),
                html_escape(&key.label())
            );
            for (col, cell) in cells.iter().enumerate() {
                let _ = write!(
                    out,
                    "<td><button class=\"cell\" data-row=\"{row}\" data-col=\"{col}\">"
                );
                if cell.cases.is_empty() {
                    out.push('–');
                }
                for bucket in Bucket::ALL {
                    let n = cell.count(bucket);
                    if n > 0 {
                        let _ = write!(
                            out,
                            "<span class=\"b-{0}\" title=\"{0}\">{n}</span>",
                            bucket.name()
                        );
                    }
                }
                out.push_str("</button></td>");
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody>\n</table>\n<section id=\"details\" hidden>\n<h2 id=\"details-title\"></h2>\n<div id=\"details-body\"></div>\n</section>\n");
        let _ = write!(
            out,
            "<script type=\"application/json\" id=\"matrix-data\">{data}</script>\n<script>\n{JS}</script>\n</body>\n</html>\n"
        );
        out
    }
}
