//! The conformance matrix: the JSON reports of several runs (`run --format json`, one per
//! implementation) as one table, implementations as columns and case groups and tags as rows.
//!
//! Reading is tolerant, because the report format grows: a record's unknown fields are
//! ignored, a record type other than `header` and `case` is skipped, and an unknown status
//! is counted by its family (`divergent (changed)` is divergent; anything not known to be a
//! pass, divergence, skip or unsafe result counts as failed, and the cell shows its name).
//! `render` writes the matrix as Markdown and as one self-contained HTML page.
//!
//! Each case record carries the case's `clauses` and `tags` (`run --format json` writes
//! them), so the matrix reads no corpus. A report written before records carried them
//! is labelled from a corpus only through the corpus loader and only when its header
//! names that corpus's hash (`labels`); otherwise its cases are shown by group alone,
//! with a warning.
//!
//! ```
//! use session_conformance_cli::matrix::{Matrix, Report};
//! let text = r#"{"type":"header","profile":"pi","adapter":{"implementation":"x","version":"1"}}
//! {"type":"case","profile":"pi","id":"0001","name":"parse/a","status":"pass","clauses":["loading.1"],"tags":[]}
//! {"type":"case","profile":"pi","id":"0002","name":"parse/b","status":"divergent","notes":["known divergence: why"],"clauses":["loading.1"],"tags":[]}
//! "#;
//! let columns = Report::parse(text, "x.jsonl".as_ref()).unwrap().columns;
//! let matrix = Matrix::build(columns);
//! assert!(matrix.markdown().contains("| parse | 1 passed · 1 divergent |"));
//! assert!(matrix.markdown().contains("| clause loading.1 | 1 passed · 1 divergent |"));
//! ```

mod labels;
mod render;

pub use labels::label_from_corpus;

use std::collections::BTreeSet;
use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};

use serde_json::Value;

/// Where a case's status puts it in a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Bucket {
    /// `pass`.
    Passed,
    /// `divergent` and its variants (`divergent (changed)`): a listed divergence.
    Divergent,
    /// Everything that makes a run fail: `fail`, `timeout`, `crash`, `protocol-error`,
    /// `unexpected-pass`, and any status this version does not know.
    Failed,
    /// `skipped`: the implementation does not offer the case's operation.
    Skipped,
    /// `unsafe`: the implementation destroyed data.
    Unsafe,
}

impl Bucket {
    /// Every bucket, in the order cells show them.
    pub const ALL: [Bucket; 5] = [
        Bucket::Passed,
        Bucket::Divergent,
        Bucket::Failed,
        Bucket::Skipped,
        Bucket::Unsafe,
    ];

    /// The bucket of a status name as reports write it.
    pub fn of(status: &str) -> Bucket {
        match status {
            "pass" | "passed" => Bucket::Passed,
            "skipped" => Bucket::Skipped,
            // `unsafe-listed` too: a listed loss is still a loss.
            s if s.starts_with("unsafe") => Bucket::Unsafe,
            s if s.starts_with("divergent") => Bucket::Divergent,
            _ => Bucket::Failed,
        }
    }

    /// The word cells use.
    pub fn name(self) -> &'static str {
        match self {
            Bucket::Passed => "passed",
            Bucket::Divergent => "divergent",
            Bucket::Failed => "failed",
            Bucket::Skipped => "skipped",
            Bucket::Unsafe => "unsafe",
        }
    }
}

/// One case's result in one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Case id, e.g. `0386`.
    pub id: String,
    /// `group/name`.
    pub name: String,
    /// The status as the report wrote it.
    pub status: String,
    /// The JSON Pointer of the first difference, when the report gives one.
    pub pointer: Option<String>,
    /// Notes: errors, and `known divergence: <reason>` for a listed divergence.
    pub notes: Vec<String>,
    /// The unified diff against the golden, when the report gives one.
    pub diff: Option<String>,
    /// The case's tags.
    pub tags: Vec<String>,
    /// The clauses of the specification (`docs/spec/`) the case pins.
    pub clauses: Vec<String>,
    /// Whether the record carried the case's `clauses` (a record of this kit's does; one
    /// of an older kit's does not, and [`label_from_corpus`] may label it).
    pub labelled: bool,
}

impl Outcome {
    /// The group: the part of the name before its first `/`.
    pub fn group(&self) -> &str {
        self.name.split('/').next().unwrap_or_default()
    }

    /// Where the status puts the case.
    pub fn bucket(&self) -> Bucket {
        Bucket::of(&self.status)
    }
}

/// One implementation run in one profile: a column.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// What the adapter called itself (`hello.implementation`).
    pub implementation: String,
    /// `hello.version`.
    pub version: String,
    /// The profile run.
    pub profile: String,
    /// The report file it came from.
    pub source: PathBuf,
    /// The corpus the run names in its header (`861 cases, sha256 64eb489d5004`), when
    /// it names one.
    pub corpus: Option<String>,
    /// That corpus's whole SHA-256, when the header names one.
    pub sha256: Option<String>,
    /// Its cases in report order.
    pub cases: Vec<Outcome>,
}

impl Column {
    /// The column's heading: `implementation version (profile)`.
    pub fn label(&self) -> String {
        format!(
            "{} {} ({})",
            self.implementation, self.version, self.profile
        )
    }
}

/// The columns of one report file (one per profile it ran).
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Columns in file order.
    pub columns: Vec<Column>,
}

/// Why a report or the corpus could not be read.
#[derive(Debug)]
#[non_exhaustive]
pub enum MatrixError {
    /// A file could not be read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A line of a report, or a case file, is not JSON.
    Json {
        /// The file.
        path: PathBuf,
        /// Its 1-based line (1 for a case file).
        line: usize,
        /// What the JSON parser said.
        message: String,
    },
    /// A case record came before any header record.
    CaseBeforeHeader {
        /// The report.
        path: PathBuf,
        /// Its 1-based line.
        line: usize,
    },
    /// A report holds no header record, so it names no implementation.
    NoHeader {
        /// The report.
        path: PathBuf,
    },
}

impl fmt::Display for MatrixError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MatrixError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            MatrixError::Json {
                path,
                line,
                message,
            } => write!(f, "{}:{line}: not JSON: {message}", path.display()),
            MatrixError::CaseBeforeHeader { path, line } => write!(
                f,
                "{}:{line}: a case record before any header record; is this a `run --format json` report?",
                path.display()
            ),
            MatrixError::NoHeader { path } => write!(
                f,
                "{}: no header record; write reports with `run --format json`",
                path.display()
            ),
        }
    }
}

impl std::error::Error for MatrixError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MatrixError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The fields of a report line that the matrix reads. The others, among them a case's
/// `expected` and `actual` outputs, are skipped unread: serde_json skips a value without
/// recursing, so a golden nested deeper than its reader's limit (case 0045) is no error.
#[derive(serde::Deserialize)]
struct Line {
    #[serde(rename = "type")]
    kind: Option<Value>,
    adapter: Option<Value>,
    profile: Option<Value>,
    id: Option<Value>,
    name: Option<Value>,
    status: Option<Value>,
    pointer: Option<Value>,
    notes: Option<Value>,
    diff: Option<Value>,
    tags: Option<Value>,
    clauses: Option<Value>,
    corpus: Option<Value>,
}

/// A header's `corpus` (`{"cases": N, "sha256": "…"}`) as `N cases, sha256 <12 digits>`;
/// `None` when it is absent or not of that shape.
fn corpus_of(value: Option<&Value>) -> Option<String> {
    let value = value?;
    let cases = value.get("cases")?.as_u64()?;
    let sha = value.get("sha256")?.as_str()?;
    let short: String = sha.chars().take(12).collect();
    Some(format!("{cases} cases, sha256 {short}"))
}

fn text_of(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn strings_of(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(|v| text_of(Some(v))).collect())
        .unwrap_or_default()
}

impl Report {
    /// Reads a report file: a regular file or a pipe (read once), within the CLI's limits
    /// on a FILE argument (`guard::read_input`); anything else is refused unread.
    pub fn read(path: &Path) -> Result<Report, MatrixError> {
        let io = |source| MatrixError::Io {
            path: path.to_owned(),
            source,
        };
        let kind = std::fs::metadata(path).map_err(io)?.file_type();
        if !(kind.is_file() || is_pipe(kind)) {
            let kind = session_conformance::guard::kind_name(kind);
            return Err(io(std::io::Error::other(format!(
                "is a {kind}, not a report file; not read"
            ))));
        }
        let bytes = session_conformance::guard::read_input(path)
            .map_err(|e| io(std::io::Error::other(e.to_string())))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| io(std::io::Error::other("not UTF-8; not read")))?;
        Report::parse(&text, path)
    }

    /// Parses a report's text (`path` names it in errors and in the column).
    pub fn parse(text: &str, path: &Path) -> Result<Report, MatrixError> {
        let mut columns: Vec<Column> = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line_no = index + 1;
            if line.trim().is_empty() {
                continue;
            }
            let record: Line = serde_json::from_str(line).map_err(|e| MatrixError::Json {
                path: path.to_owned(),
                line: line_no,
                message: e.to_string(),
            })?;
            match record.kind.as_ref().and_then(Value::as_str) {
                Some("header") => {
                    let adapter = record.adapter.as_ref();
                    let field = |key: &str| {
                        text_of(adapter.and_then(|a| a.get(key))).unwrap_or_else(|| "?".into())
                    };
                    columns.push(Column {
                        implementation: field("implementation"),
                        version: field("version"),
                        profile: text_of(record.profile.as_ref())
                            .unwrap_or_else(|| field("profile")),
                        source: path.to_owned(),
                        corpus: corpus_of(record.corpus.as_ref()),
                        sha256: text_of(record.corpus.as_ref().and_then(|c| c.get("sha256"))),
                        cases: Vec::new(),
                    });
                }
                Some("case") => {
                    let Some(column) = columns.last_mut() else {
                        return Err(MatrixError::CaseBeforeHeader {
                            path: path.to_owned(),
                            line: line_no,
                        });
                    };
                    column.cases.push(Outcome {
                        id: text_of(record.id.as_ref()).unwrap_or_default(),
                        name: text_of(record.name.as_ref()).unwrap_or_default(),
                        status: text_of(record.status.as_ref()).unwrap_or_else(|| "unknown".into()),
                        pointer: text_of(record.pointer.as_ref()),
                        notes: strings_of(record.notes.as_ref()),
                        diff: text_of(record.diff.as_ref()),
                        tags: strings_of(record.tags.as_ref()),
                        clauses: strings_of(record.clauses.as_ref()),
                        labelled: record.clauses.is_some(),
                    });
                }
                // Summaries are recomputed; records of kinds added later are not ours to read.
                _ => {}
            }
        }
        if columns.is_empty() {
            return Err(MatrixError::NoHeader {
                path: path.to_owned(),
            });
        }
        Ok(Report { columns })
    }
}

#[cfg(unix)]
fn is_pipe(kind: std::fs::FileType) -> bool {
    std::os::unix::fs::FileTypeExt::is_fifo(&kind)
}

#[cfg(not(unix))]
fn is_pipe(_kind: std::fs::FileType) -> bool {
    false
}

/// What a row gathers.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum RowKey {
    /// Every case.
    All,
    /// The cases of one group (`parse`, `store`, …).
    Group(String),
    /// The cases carrying one tag.
    Tag(String),
    /// The cases pinning one clause of the specification (`docs/spec/`).
    Clause(String),
}

impl RowKey {
    /// The row's heading.
    pub fn label(&self) -> String {
        match self {
            RowKey::All => "all cases".into(),
            RowKey::Group(g) => g.clone(),
            RowKey::Tag(t) => format!("tag: {t}"),
            RowKey::Clause(c) => format!("clause {c}"),
        }
    }

    /// A stable identifier (`all`, `group:parse`, `tag:x`), used by the page's filter.
    pub fn slug(&self) -> String {
        match self {
            RowKey::All => "all".into(),
            RowKey::Group(g) => format!("group:{g}"),
            RowKey::Tag(t) => format!("tag:{t}"),
            RowKey::Clause(c) => format!("clause:{c}"),
        }
    }
}

/// One cell: a row's cases in one column.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cell {
    /// Counts per bucket, in [`Bucket::ALL`] order.
    pub counts: [usize; 5],
    /// Indices into the column's cases.
    pub cases: Vec<usize>,
}

impl Cell {
    /// The count of one bucket.
    pub fn count(&self, bucket: Bucket) -> usize {
        self.counts[bucket as usize]
    }
}

/// The matrix: columns, rows, and a cell for each pair.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    /// The columns, in the order the reports were given.
    pub columns: Vec<Column>,
    /// Rows: all cases, then groups by name, then tags by name, then clauses; each with
    /// one cell per column.
    pub rows: Vec<(RowKey, Vec<Cell>)>,
}

impl Matrix {
    /// Builds the matrix from the columns, each case labelled by its own tags and clauses.
    pub fn build(columns: Vec<Column>) -> Matrix {
        let mut keys: BTreeSet<RowKey> = BTreeSet::new();
        keys.insert(RowKey::All);
        for case in columns.iter().flat_map(|c| &c.cases) {
            keys.insert(RowKey::Group(case.group().to_owned()));
            keys.extend(case.tags.iter().cloned().map(RowKey::Tag));
            keys.extend(case.clauses.iter().cloned().map(RowKey::Clause));
        }
        let rows = keys
            .into_iter()
            .map(|key| {
                let cells = columns.iter().map(|column| cell_of(&key, column)).collect();
                (key, cells)
            })
            .collect();
        Matrix { columns, rows }
    }

    /// Reads the reports and builds the matrix; the cases of a report written without
    /// labels are labelled from the corpus `corpus` gives, when it is the one the report
    /// ran ([`label_from_corpus`]). Returns the matrix and the warnings to show.
    pub fn from_files(
        reports: &[PathBuf],
        corpus: impl FnOnce() -> Result<PathBuf, String>,
    ) -> Result<(Matrix, Vec<String>), MatrixError> {
        let mut columns = Vec::new();
        for path in reports {
            columns.extend(Report::read(path)?.columns);
        }
        let warnings = label_from_corpus(&mut columns, corpus);
        Ok((Matrix::build(columns), warnings))
    }
}

/// The cell of one row in one column: the column's cases the row gathers, counted.
fn cell_of(key: &RowKey, column: &Column) -> Cell {
    let mut cell = Cell::default();
    for (index, case) in column.cases.iter().enumerate() {
        let member = match key {
            RowKey::All => true,
            RowKey::Group(g) => case.group() == g,
            RowKey::Tag(t) => case.tags.contains(t),
            RowKey::Clause(c) => case.clauses.contains(c),
        };
        if member {
            cell.counts[case.bucket() as usize] += 1;
            cell.cases.push(index);
        }
    }
    cell
}

/// The `report` command's arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportArgs {
    /// Reports written by `run --format json` (one or more profiles each); each profile run is a column.
    #[arg(required = true, value_name = "REPORT")]
    pub reports: Vec<PathBuf>,
    /// Only for a report written before case records carried their `clauses` and `tags`
    /// (an older kit's): the corpus to label its cases from, read through the corpus
    /// loader and used only when its hash is the one the report's header names (default:
    /// corpus/cases when it is here, else the corpus built into the binary). Reports of
    /// this kit carry their labels and need no corpus.
    #[arg(long)]
    pub corpus: Option<PathBuf>,
    /// Write the matrix as one self-contained HTML page (works from disk, no server).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write the matrix as a Markdown table (printed on stdout when neither --html nor --markdown is given).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Print, instead of the table, one line per case of the reports that `failed`
    /// (any status that fails a run, `unsafe` included) or whose listed divergence
    /// `changed`: `STATUS ID GROUP/NAME POINTER` (`-` for no pointer).
    #[arg(long, value_enum, conflicts_with_all = ["html", "markdown"])]
    pub list: Option<Listing>,
    /// The page's title.
    #[arg(long, default_value = "Session format conformance")]
    pub title: String,
}

/// What `report --list` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Listing {
    /// Cases whose status fails a run (the failed and unsafe buckets).
    Failed,
    /// Listed divergences that now differ in another way (`divergent-changed`).
    Changed,
}

impl Listing {
    /// Whether `case` is listed.
    pub fn lists(self, case: &Outcome) -> bool {
        match self {
            Listing::Failed => matches!(case.bucket(), Bucket::Failed | Bucket::Unsafe),
            Listing::Changed => {
                case.bucket() == Bucket::Divergent && case.status.contains("changed")
            }
        }
    }
}

impl Matrix {
    /// `report --list`'s lines: the listed cases of every column, in order, as
    /// `STATUS ID GROUP/NAME POINTER`, control characters escaped.
    pub fn list(&self, listing: Listing) -> String {
        let mut out = String::new();
        for case in self.columns.iter().flat_map(|c| &c.cases) {
            if listing.lists(case) {
                let line = format!(
                    "{} {} {} {}",
                    case.status,
                    case.id,
                    case.name,
                    case.pointer.as_deref().unwrap_or("-")
                );
                let _ = writeln!(out, "{}", session_conformance::guard::printable(&line));
            }
        }
        out
    }
}

/// Runs the `report` command: writes the requested files and returns what goes to
/// stdout and the warnings (a report's cases left unlabelled) for stderr. `corpus`
/// names the corpus to label an older report's cases from; it is called only for such
/// a report.
pub fn command(
    args: &ReportArgs,
    corpus: impl FnOnce() -> Result<PathBuf, String>,
) -> Result<(String, Vec<String>), MatrixError> {
    let (matrix, warnings) = Matrix::from_files(&args.reports, corpus)?;
    if let Some(listing) = args.list {
        return Ok((matrix.list(listing), warnings));
    }
    let write = |path: &Path, text: &str| {
        std::fs::write(path, text).map_err(|source| MatrixError::Io {
            path: path.to_owned(),
            source,
        })
    };
    let mut stdout = String::new();
    if let Some(path) = &args.html {
        write(path, &matrix.html(&args.title))?;
        let _ = writeln!(stdout, "wrote {}", path.display());
    }
    if let Some(path) = &args.markdown {
        write(path, &matrix.markdown())?;
        let _ = writeln!(stdout, "wrote {}", path.display());
    }
    if args.html.is_none() && args.markdown.is_none() {
        stdout = matrix.markdown();
    }
    Ok((stdout, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_fall_into_buckets_and_unknown_ones_count_as_failed() {
        assert_eq!(Bucket::of("pass"), Bucket::Passed);
        assert_eq!(Bucket::of("divergent (changed)"), Bucket::Divergent);
        assert_eq!(Bucket::of("unexpected-pass"), Bucket::Failed);
        assert_eq!(Bucket::of("something-new"), Bucket::Failed);
        assert_eq!(Bucket::of("unsafe"), Bucket::Unsafe);
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let err = Report::parse("{\"type\":\"case\"}\n", Path::new("r.jsonl")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "r.jsonl:1: a case record before any header record; is this a `run --format json` report?"
        );
        let err = Report::parse("{}\nnot json\n", Path::new("r.jsonl")).unwrap_err();
        assert!(err.to_string().starts_with("r.jsonl:2: not JSON:"), "{err}");
        let err = Report::parse("", Path::new("r.jsonl")).unwrap_err();
        assert!(err.to_string().starts_with("r.jsonl: no header record"));
    }

    #[test]
    fn unknown_fields_and_record_types_are_ignored() {
        let text = r#"{"type":"header","profile":"omp","adapter":{"implementation":"x","version":"2","future":1},"extra":[1]}
{"type":"case","profile":"omp","id":"0001","name":"g/a","status":"divergent (changed)","signature":"abc","actualNormalized":{"a":1}}
{"type":"timing","ms":3}
{"type":"summary","counts":{}}
"#;
        let report = Report::parse(text, Path::new("r")).unwrap();
        assert_eq!(report.columns[0].label(), "x 2 (omp)");
        assert_eq!(report.columns[0].cases[0].bucket(), Bucket::Divergent);
    }

    #[test]
    fn markdown_shows_an_adapters_names_as_text_in_one_row() {
        let text = r#"{"type":"header","profile":"pi","adapter":{"implementation":"x\n# injected\n<script>","version":"1 | *b* [l](u)"}}
{"type":"case","profile":"pi","id":"0001","name":"g/a","status":"pass"}
"#;
        let report = Report::parse(text, Path::new("r")).unwrap();
        let markdown = Matrix::build(report.columns).markdown();
        let head = markdown.lines().next().unwrap();
        assert_eq!(
            head,
            r"| cases | x\\u{a}# injected\\u{a}&lt;script&gt; 1 \| \*b\* \[l\](u) (pi) |"
        );
        assert_eq!(markdown.lines().count(), 4, "{markdown}");
    }

    /// The clause view: each clause a case pins is a row of its own, after the groups and
    /// tags, and the Markdown gives the clauses a table of their own.
    #[test]
    fn clauses_are_rows_of_their_own() {
        let text = r#"{"type":"header","profile":"pi","adapter":{"implementation":"x","version":"1"}}
{"type":"case","profile":"pi","id":"0001","name":"g/a","status":"pass","tags":["t"],"clauses":["loading.1","tree.2"]}
{"type":"case","profile":"pi","id":"0002","name":"g/b","status":"divergent","notes":["why"],"tags":[],"clauses":["tree.2"]}
"#;
        let columns = Report::parse(text, Path::new("r")).unwrap().columns;
        let matrix = Matrix::build(columns);
        let rows: Vec<String> = matrix.rows.iter().map(|(k, _)| k.slug()).collect();
        assert_eq!(
            rows,
            [
                "all",
                "group:g",
                "tag:t",
                "clause:loading.1",
                "clause:tree.2"
            ]
        );
        let tree = &matrix.rows[4].1[0];
        assert_eq!(
            (tree.count(Bucket::Passed), tree.count(Bucket::Divergent)),
            (1, 1)
        );
        let markdown = matrix.markdown();
        assert!(
            markdown.contains("| clause | x 1 (pi) |\n| --- | --- |\n| clause loading.1 | 1 passed |\n| clause tree.2 | 1 passed · 1 divergent |\n"),
            "{markdown}"
        );
        let first_table = markdown.split("\n\n").next().unwrap_or("");
        assert!(!first_table.contains("| clause "), "{markdown}");
    }

    /// The clause summary: per column, each clause with cases counted once, by its worst
    /// case (a failure, then a listed divergence, then a pass; only skips last).
    #[test]
    fn clause_summary_counts_each_clause_by_its_worst_case() {
        let text = r#"{"type":"header","profile":"pi","adapter":{"implementation":"x","version":"1"}}
{"type":"case","profile":"pi","id":"0001","name":"g/a","status":"pass","clauses":["a.1","b.1","c.1"]}
{"type":"case","profile":"pi","id":"0002","name":"g/b","status":"divergent","notes":["why"],"clauses":["b.1"]}
{"type":"case","profile":"pi","id":"0003","name":"g/c","status":"fail","clauses":["c.1"]}
{"type":"case","profile":"pi","id":"0004","name":"g/d","status":"skipped","clauses":["d.1","a.1"]}
{"type":"case","profile":"pi","id":"0005","name":"g/e","status":"skipped","clauses":["d.1"]}
{"type":"case","profile":"pi","id":"0006","name":"g/f","status":"unsafe-listed","clauses":["e.1"]}
{"type":"case","profile":"pi","id":"0007","name":"g/g","status":"unsafe-listed","clauses":["f.1"]}
{"type":"case","profile":"pi","id":"0008","name":"g/h","status":"unsafe","clauses":["f.1"]}
"#;
        let columns = Report::parse(text, Path::new("r")).unwrap().columns;
        let markdown = Matrix::build(columns).markdown();
        // e.1: a listed loss only; f.1: a listed loss and an unlisted one, which fails it.
        assert!(
            markdown
                .contains("| x 1 (pi) | 6 | 1 | 1 | 1 | clause e.1 | clause c.1, clause f.1 |\n"),
            "{markdown}"
        );
    }

    /// Columns that ran different corpora are named under the table; the same corpus, or
    /// none named (an older report), adds nothing.
    #[test]
    fn markdown_names_the_corpora_when_columns_ran_different_ones() {
        let report = |name: &str, corpus: &str| {
            format!(
                "{{\"type\":\"header\",\"profile\":\"pi\",{corpus}\"adapter\":{{\"implementation\":\"{name}\",\"version\":\"1\"}}}}\n\
                 {{\"type\":\"case\",\"id\":\"0001\",\"name\":\"g/a\",\"status\":\"pass\"}}\n"
            )
        };
        let same = r#""corpus":{"cases":861,"sha256":"64eb489d5004a708"},"#;
        let other = r#""corpus":{"cases":2,"sha256":"0123456789abcdef"},"#;
        let markdown = |texts: &[String]| {
            let columns = texts
                .iter()
                .flat_map(|t| Report::parse(t, Path::new("r")).unwrap().columns)
                .collect();
            Matrix::build(columns).markdown()
        };
        let plain = markdown(&[report("a", same), report("b", same), report("c", "")]);
        assert_eq!(plain.lines().count(), 4, "{plain}");
        let mixed = markdown(&[report("a", same), report("b", other)]);
        assert!(
            mixed.ends_with(
                "\nThe columns ran different corpora: a 1 (pi): 861 cases, sha256 64eb489d5004; b 1 (pi): 2 cases, sha256 0123456789ab.\n"
            ),
            "{mixed}"
        );
    }

    /// Each case is labelled by its own record: two columns that ran different corpora
    /// may give one id different clauses, and each counts where its record says.
    #[test]
    fn each_case_is_labelled_by_its_own_record() {
        let text = r#"{"type":"header","profile":"pi","adapter":{"implementation":"x","version":"1"}}
{"type":"case","id":"0001","name":"g/a","status":"pass","clauses":["a.1"],"tags":["t"]}
{"type":"header","profile":"pi","adapter":{"implementation":"y","version":"1"}}
{"type":"case","id":"0001","name":"g/a","status":"fail","clauses":["b.1"],"tags":[]}
"#;
        let matrix = Matrix::build(Report::parse(text, Path::new("r")).unwrap().columns);
        let row = |slug: &str| {
            let (_, cells) = matrix.rows.iter().find(|(k, _)| k.slug() == slug).unwrap();
            cells.iter().map(|c| c.cases.len()).collect::<Vec<_>>()
        };
        assert_eq!(row("clause:a.1"), [1, 0]);
        assert_eq!(row("clause:b.1"), [0, 1]);
        assert_eq!(row("tag:t"), [1, 0]);
    }

    /// `report --list`: a case is listed by its status field alone, whatever its other
    /// fields hold; names and pointers are shown with control characters escaped.
    #[test]
    fn lists_name_failed_and_changed_cases_by_status() {
        let text = r#"{"type":"header","profile":"pi","adapter":{"implementation":"x","version":"1"}}
{"type":"case","id":"0001","name":"g/a","status":"fail","pointer":"/a\u001b[2J","actual":{"status":"pass"}}
{"type":"case","id":"0002","name":"g/b \"status\":\"pass\"","status":"unsafe"}
{"type":"case","id":"0003","name":"g/c","status":"pass","notes":["\"status\":\"fail\""]}
{"type":"case","id":"0004","name":"g/d","status":"divergent-changed"}
{"type":"case","id":"0005","name":"g/e","status":"divergent (changed)"}
{"type":"case","id":"0006","name":"g/f","status":"divergent"}
{"type":"case","id":"0007","name":"g/g","status":"something-new"}
"#;
        let matrix = Matrix::build(Report::parse(text, Path::new("r")).unwrap().columns);
        assert_eq!(
            matrix.list(Listing::Failed),
            "fail 0001 g/a /a\\u{1b}[2J\nunsafe 0002 g/b \"status\":\"pass\" -\nsomething-new 0007 g/g -\n"
        );
        assert_eq!(
            matrix.list(Listing::Changed),
            "divergent-changed 0004 g/d -\ndivergent (changed) 0005 g/e -\n"
        );
    }

    #[test]
    fn a_case_output_nested_deeper_than_serdes_limit_is_read() {
        let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
        let text = format!(
            "{{\"type\":\"header\",\"adapter\":{{\"implementation\":\"x\",\"version\":\"1\"}}}}\n\
             {{\"type\":\"case\",\"id\":\"0045\",\"status\":\"divergent\",\"expected\":{deep},\"actual\":{deep}}}\n"
        );
        let report = Report::parse(&text, Path::new("r")).unwrap();
        assert_eq!(report.columns[0].cases[0].id, "0045");
    }
}
