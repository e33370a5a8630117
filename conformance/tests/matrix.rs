//! The `report` command's outputs, pinned as goldens: the Markdown table and the HTML page
//! of two small reports (one written by this version, one with fields, statuses and record
//! types added later), with tags from a two-case corpus.
//!
//! `BLESS=1 cargo test -p session-conformance --test matrix` rewrites a golden that differs
//! (refused when `CI` is set).

use std::path::PathBuf;

use session_conformance::matrix::{Bucket, Matrix, RowKey};

/// Relative to the package root (cargo runs integration tests there), so the page's
/// `source` attributes do not depend on where the repository is checked out.
fn dir() -> PathBuf {
    PathBuf::from("tests/matrix")
}

fn matrix() -> Matrix {
    let d = dir();
    Matrix::from_files(
        &[d.join("impl-a.jsonl"), d.join("impl-b.jsonl")],
        &d.join("corpus"),
    )
    .expect("the fixtures read")
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
        "{} differs:\n{diff}\nrerun with: BLESS=1 cargo test -p session-conformance --test matrix",
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
            "group:store",
            "tag:bom",
            "tag:torn-lines"
        ]
    );
    let (key, cells) = &m.rows[0];
    assert_eq!(*key, RowKey::All);
    assert_eq!(cells[0].counts, [1, 1, 1, 1, 0]);
    // impl-b: unsafe, `divergent (changed)`, pass, and an unknown status counted as failed.
    assert_eq!(cells[1].count(Bucket::Unsafe), 1);
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
