//! The `report` command's outputs, pinned as goldens: the Markdown table and the HTML page
//! of two small reports (one written by this version, one with fields, statuses and record
//! types added later), each case labelled by its record's tags and clauses.
//!
//! `BLESS=1 cargo test -p session-conformance-cli --test matrix` rewrites a golden that differs
//! (refused when `CI` is set).

use std::path::PathBuf;

use session_conformance_cli::matrix::{Bucket, Matrix, RowKey};

/// Relative to the package root (cargo runs integration tests there), so the page's
/// `source` attributes do not depend on where the repository is checked out.
fn dir() -> PathBuf {
    PathBuf::from("tests/matrix")
}

fn matrix() -> Matrix {
    let d = dir();
    let (matrix, warnings) =
        Matrix::from_files(&[d.join("impl-a.jsonl"), d.join("impl-b.jsonl")], || {
            Err("no corpus is needed".to_owned())
        })
        .expect("the fixtures read");
    assert!(warnings.is_empty(), "{warnings:?}");
    matrix
}

fn check_golden(name: &str, actual: &str) {
    let path = dir().join(name);
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    if expected == actual {
        return;
    }
    if std::env::var_os("BLESS").is_some() && std::env::var_os("CI").is_none() {
        std::fs::write(&path, actual).expect("write the golden");
        eprintln!("wrote {}", path.display());
        return;
    }
    let diff = similar::TextDiff::from_lines(expected.as_str(), actual)
        .unified_diff()
        .header(&path.display().to_string(), "actual")
        .to_string();
    panic!(
        "{} differs:\n{diff}\nrerun with: BLESS=1 cargo test -p session-conformance-cli --test matrix",
        path.display()
    );
}

#[test]
fn markdown_matches_its_golden() {
    check_golden("expected.md", &matrix().markdown());
}

#[test]
fn html_matches_its_golden() {
    check_golden("expected.html", &matrix().html("Test matrix"));
}

#[test]
fn rows_are_all_then_groups_then_tags_and_cells_count_by_bucket() {
    let m = matrix();
    let keys: Vec<String> = m.rows.iter().map(|(k, _)| k.slug()).collect();
    assert_eq!(
        keys,
        [
            "all",
            "group:parse",
            "group:safety",
            "group:store",
            "tag:bom",
            "tag:torn-lines",
            "clause:loading.1",
            "clause:persistence.4",
            "clause:store.2"
        ]
    );
    let (key, cells) = &m.rows[0];
    assert_eq!(*key, RowKey::All);
    assert_eq!(cells[0].counts, [1, 1, 1, 1, 0]);
    // impl-b: unsafe, a listed loss (unsafe too), `divergent (changed)`, pass, and an
    // unknown status counted as failed.
    assert_eq!(cells[1].count(Bucket::Unsafe), 2);
    assert_eq!(cells[1].count(Bucket::Divergent), 1);
    assert_eq!(cells[1].count(Bucket::Failed), 1);
    assert_eq!(cells[1].count(Bucket::Passed), 1);
}

#[test]
fn the_page_keeps_script_text_out_of_its_markup() {
    let html = matrix().html("A <title>");
    assert_eq!(
        html.matches("</script>").count(),
        2,
        "only the page's own two script elements close"
    );
    assert!(html.contains("<title>A &lt;title&gt;</title>"));
}

fn cli() -> snapbox::cmd::Command {
    snapbox::cmd::Command::new(snapbox::cmd::cargo_bin!("session-conformance")).env_remove("CI")
}

#[test]
fn the_command_prints_markdown_and_writes_both_files() {
    let stdout = cli()
        .args([
            "report",
            "tests/matrix/impl-a.jsonl",
            "tests/matrix/impl-b.jsonl",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    // Compared as bytes: snapbox would read the `\|` of a Markdown cell as a path separator.
    assert_eq!(
        String::from_utf8_lossy(&stdout),
        std::fs::read_to_string(dir().join("expected.md")).expect("golden")
    );
    let out = tempfile::tempdir().expect("temp dir");
    let (html, md) = (out.path().join("m.html"), out.path().join("m.md"));
    cli()
        .args(["report", "tests/matrix/impl-a.jsonl", "--html"])
        .arg(&html)
        .arg("--markdown")
        .arg(&md)
        .assert()
        .success();
    assert!(std::fs::read_to_string(&html).is_ok_and(|t| t.contains("impl-a 1.0 (pi)")));
    assert!(
        std::fs::read_to_string(&md).is_ok_and(|t| t.starts_with("| cases | impl-a 1.0 (pi) |"))
    );
}

#[test]
fn a_report_that_is_not_json_is_a_usage_error_naming_the_file() {
    cli()
        .args(["report", "tests/matrix.rs", "tests/matrix/impl-a.jsonl"])
        .assert()
        .code(2)
        .stderr_eq("session-conformance: tests/matrix.rs:1: not JSON: [..]\n");
    cli()
        .args(["report", "tests/matrix/corpus/store/b/case.json"])
        .assert()
        .code(2)
        .stderr_eq("session-conformance: tests/matrix/corpus/store/b/case.json: no header record; write reports with `run --format json`\n");
}
