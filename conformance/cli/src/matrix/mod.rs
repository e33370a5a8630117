//! The conformance matrix: the JSON reports of several runs (`run --format json`, one per
//! implementation) as one table, implementations as columns and case groups and tags as rows.
//!
//! Reading is tolerant, because the report format grows: a record's unknown fields are
//! ignored, a record type other than `header` and `case` is skipped, and an unknown status
//! is counted by its family (`divergent (changed)` is divergent; anything not known to be a
//! pass, divergence, skip or unsafe result counts as failed, and the cell shows its name).
//! `render` writes the matrix as Markdown and as one self-contained HTML page.
//!
//! ```
//! use session_conformance_cli::matrix::{Matrix, Report};
//! let text = r#"{"type":"header","profile":"pi","adapter":{"implementation":"x","version":"1"}}
//! {"type":"case","profile":"pi","id":"0001","name":"parse/a","status":"pass"}
//! {"type":"case","profile":"pi","id":"0002","name":"parse/b","status":"divergent","notes":["known divergence: why"]}
//! "#;
//! let columns = Report::parse(text, "x.jsonl".as_ref()).unwrap().columns;
//! let matrix = Matrix::build(columns, &Default::default());
//! assert!(matrix.markdown().contains("| parse | 1 passed · 1 divergent |"));
//! ```

mod render;

use std::collections::{BTreeMap, BTreeSet};
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
    /// Tags the report gives the case (added to the corpus's).
    pub tags: Vec<String>,
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
    /// Reads a report file.
    pub fn read(path: &Path) -> Result<Report, MatrixError> {
        let text = std::fs::read_to_string(path).map_err(|source| MatrixError::Io {
            path: path.to_owned(),
            source,
        })?;
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

/// Case id (as reports write it, `0386`) → its tags (or its clauses), from the corpus's
/// `case.json` files.
pub type Tags = BTreeMap<String, Vec<String>>;

/// What the corpus says of each case besides its group: its tags and the clauses of the
/// specification it pins (`docs/spec/`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CaseLabels {
    /// Case id → its `tags`.
    pub tags: Tags,
    /// Case id → its `clauses`.
    pub clauses: Tags,
}

/// Reads the `tags` and `clauses` lists of every `case.json` under `corpus` (cases without
/// them have none). A missing corpus directory gives none.
pub fn corpus_labels(corpus: &Path) -> Result<CaseLabels, MatrixError> {
    let mut labels = CaseLabels::default();
    if !corpus.is_dir() {
        return Ok(labels);
    }
    let mut stack = vec![corpus.to_owned()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|source| MatrixError::Io {
            path: dir.clone(),
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| MatrixError::Io {
                path: dir.clone(),
                source,
            })?;
            let path = entry.path();
            // Folders are entered only when they are real folders, so a link cannot loop.
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n == "case.json") {
                let text = std::fs::read_to_string(&path).map_err(|source| MatrixError::Io {
                    path: path.clone(),
                    source,
                })?;
                let case: Value = serde_json::from_str(&text).map_err(|e| MatrixError::Json {
                    path: path.clone(),
                    line: e.line(),
                    message: e.to_string(),
                })?;
                let id = match case.get("id") {
                    Some(Value::Number(n)) => n.as_u64().map(|n| format!("{n:04}")),
                    Some(Value::String(s)) => Some(s.clone()),
                    _ => None,
                };
                let Some(id) = id else { continue };
                for (key, map) in [("tags", &mut labels.tags), ("clauses", &mut labels.clauses)] {
                    let list = strings_of(case.get(key));
                    if !list.is_empty() {
                        map.insert(id.clone(), list);
                    }
                }
            }
        }
    }
    Ok(labels)
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
    /// Each case's tags (from the corpus and the reports).
    pub tags: Tags,
    /// Each case's clauses (from the corpus).
    pub clauses: Tags,
    /// Rows: all cases, then groups by name, then tags by name, then clauses; each with
    /// one cell per column.
    pub rows: Vec<(RowKey, Vec<Cell>)>,
}

impl Matrix {
    /// Builds the matrix; `labels` come from [`corpus_labels`] (a report's own tags are added).
    pub fn build(columns: Vec<Column>, labels: &CaseLabels) -> Matrix {
        let mut all_tags = labels.tags.clone();
        let clauses = &labels.clauses;
        for case in columns.iter().flat_map(|c| &c.cases) {
            if !case.tags.is_empty() {
                let list = all_tags.entry(case.id.clone()).or_default();
                for t in &case.tags {
                    if !list.contains(t) {
                        list.push(t.clone());
                    }
                }
            }
        }
        let mut keys: BTreeSet<RowKey> = BTreeSet::new();
        keys.insert(RowKey::All);
        for case in columns.iter().flat_map(|c| &c.cases) {
            keys.insert(RowKey::Group(case.group().to_owned()));
            for t in all_tags.get(&case.id).into_iter().flatten() {
                keys.insert(RowKey::Tag(t.clone()));
            }
            for c in clauses.get(&case.id).into_iter().flatten() {
                keys.insert(RowKey::Clause(c.clone()));
            }
        }
        let rows = keys
            .into_iter()
            .map(|key| {
                let cells = columns
                    .iter()
                    .map(|column| {
                        let mut cell = Cell::default();
                        for (index, case) in column.cases.iter().enumerate() {
                            let member = match &key {
                                RowKey::All => true,
                                RowKey::Group(g) => case.group() == g,
                                RowKey::Tag(t) => {
                                    all_tags.get(&case.id).is_some_and(|l| l.contains(t))
                                }
                                RowKey::Clause(c) => {
                                    clauses.get(&case.id).is_some_and(|l| l.contains(c))
                                }
                            };
                            if member {
                                cell.counts[case.bucket() as usize] += 1;
                                cell.cases.push(index);
                            }
                        }
                        cell
                    })
                    .collect();
                (key, cells)
            })
            .collect();
        Matrix {
            columns,
            tags: all_tags,
            clauses: clauses.clone(),
            rows,
        }
    }

    /// Reads the reports and the corpus's tags and clauses and builds the matrix.
    pub fn from_files(reports: &[PathBuf], corpus: &Path) -> Result<Matrix, MatrixError> {
        let mut columns = Vec::new();
        for path in reports {
            columns.extend(Report::read(path)?.columns);
        }
        Ok(Matrix::build(columns, &corpus_labels(corpus)?))
    }
}

/// The `report` command's arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportArgs {
    /// Reports written by `run --format json` (one or more profiles each); each profile run is a column.
    #[arg(required = true, value_name = "REPORT")]
    pub reports: Vec<PathBuf>,
    /// The corpus, read for each case's `tags` (none when absent; `report` reads the
    /// corpus built into the binary when corpus/cases is not here).
    #[arg(long, default_value = "corpus/cases")]
    pub corpus: PathBuf,
    /// Write the matrix as one self-contained HTML page (works from disk, no server).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write the matrix as a Markdown table (printed on stdout when neither --html nor --markdown is given).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// The page's title.
    #[arg(long, default_value = "Session format conformance")]
    pub title: String,
}

/// Runs the `report` command: writes the requested files and returns what goes to stdout.
pub fn command(args: &ReportArgs) -> Result<String, MatrixError> {
    let matrix = Matrix::from_files(&args.reports, &args.corpus)?;
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
    Ok(stdout)
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
        let markdown = Matrix::build(report.columns, &CaseLabels::default()).markdown();
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
{"type":"case","profile":"pi","id":"0001","name":"g/a","status":"pass"}
{"type":"case","profile":"pi","id":"0002","name":"g/b","status":"divergent","notes":["why"]}
"#;
        let columns = Report::parse(text, Path::new("r")).unwrap().columns;
        let labels = CaseLabels {
            tags: Tags::from([("0001".into(), vec!["t".into()])]),
            clauses: Tags::from([
                ("0001".into(), vec!["loading.1".into(), "tree.2".into()]),
                ("0002".into(), vec!["tree.2".into()]),
            ]),
        };
        let matrix = Matrix::build(columns, &labels);
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
{"type":"case","profile":"pi","id":"0001","name":"g/a","status":"pass"}
{"type":"case","profile":"pi","id":"0002","name":"g/b","status":"divergent","notes":["why"]}
{"type":"case","profile":"pi","id":"0003","name":"g/c","status":"fail"}
{"type":"case","profile":"pi","id":"0004","name":"g/d","status":"skipped"}
{"type":"case","profile":"pi","id":"0005","name":"g/e","status":"skipped"}
"#;
        let columns = Report::parse(text, Path::new("r")).unwrap().columns;
        let clauses = |ids: &[&str]| ids.iter().map(|c| (*c).to_owned()).collect::<Vec<_>>();
        let labels = CaseLabels {
            tags: Tags::new(),
            clauses: Tags::from([
                ("0001".into(), clauses(&["a.1", "b.1", "c.1"])),
                ("0002".into(), clauses(&["b.1"])),
                ("0003".into(), clauses(&["c.1"])),
                ("0004".into(), clauses(&["d.1", "a.1"])),
                ("0005".into(), clauses(&["d.1"])),
            ]),
        };
        let markdown = Matrix::build(columns, &labels).markdown();
        assert!(
            markdown.contains("| x 1 (pi) | 4 | 1 | 1 | 1 | clause c.1 |\n"),
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
            Matrix::build(columns, &CaseLabels::default()).markdown()
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
