//! Labels for the cases of a report written before case records carried their `clauses`
//! and `tags` (an older kit's): taken from a corpus, read through the corpus loader
//! (`session_conformance::corpus::load`: case folders only, never an `input/` folder,
//! regular files only, each within its size limit), and only when that corpus's hash
//! is the one the report's header names. Any other report is left unlabelled, with a
//! warning: clauses of another corpus, matched by id, would label the wrong cases.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use session_conformance::bundle::{self, CorpusVersion};
use session_conformance::corpus;

use super::Column;

/// A case's tags and clauses, by case id.
type Labels = BTreeMap<String, (Vec<String>, Vec<String>)>;

/// Labels the unlabelled cases of `columns` from the corpus `corpus` names, for each
/// column whose header names that corpus's hash. The corpus is read only when a column
/// has an unlabelled case. Returns a warning for each report left unlabelled.
pub fn label_from_corpus(
    columns: &mut [Column],
    corpus: impl FnOnce() -> Result<PathBuf, String>,
) -> Vec<String> {
    let unlabelled = |c: &Column| c.cases.iter().any(|case| !case.labelled);
    if !columns.iter().any(unlabelled) {
        return Vec::new();
    }
    let read = corpus().and_then(|dir| read_labels(&dir).map(|(v, l)| (dir, v, l)));
    let mut warnings = Vec::new();
    for column in columns.iter_mut().filter(|c| unlabelled(c)) {
        let why = match &read {
            Ok((_, version, labels)) if column.sha256.as_ref() == Some(&version.sha256) => {
                apply(column, labels);
                continue;
            }
            Ok((dir, version, _)) => match &column.corpus {
                Some(ran) => format!("it ran corpus {ran}, not {} ({version})", dir.display()),
                None => "it names no corpus".to_owned(),
            },
            Err(why) => format!("the corpus to label them from is not read: {why}"),
        };
        warnings.push(format!(
            "{}: {}: written without each case's clauses and tags (by an older kit), and {why}; its cases are shown by group only",
            column.source.display(),
            column.label(),
        ));
    }
    warnings
}

/// The corpus at `dir`, read through the loader: its version and each case's labels
/// (refused cases and ids held by two cases give none).
fn read_labels(dir: &Path) -> Result<(CorpusVersion, Labels), String> {
    if !dir.is_dir() {
        return Err(format!("{}: not a folder", dir.display()));
    }
    let cases = corpus::load(dir).map_err(|e| e.to_string())?;
    let version = bundle::version_of(dir, &cases).map_err(|e| e.to_string())?;
    let mut labels = Labels::new();
    let mut twice = Vec::new();
    for case in cases.iter().filter(|c| c.refused.is_none()) {
        let entry = (case.file.tags.clone(), case.file.clauses.clone());
        if labels.insert(case.id(), entry).is_some() {
            twice.push(case.id());
        }
    }
    for id in twice {
        labels.remove(&id);
    }
    Ok((version, labels))
}

/// Gives each unlabelled case of `column` its labels from `labels` (the record's own
/// tags kept first).
fn apply(column: &mut Column, labels: &Labels) {
    for case in column.cases.iter_mut().filter(|c| !c.labelled) {
        let Some((tags, clauses)) = labels.get(&case.id) else {
            continue;
        };
        for tag in tags {
            if !case.tags.contains(tag) {
                case.tags.push(tag.clone());
            }
        }
        case.clauses.clone_from(clauses);
        case.labelled = true;
    }
}
