//! `bless`: regenerate goldens from the reference and print the diff of each file changed.

use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use session_conformance::harness::{self, HarnessError};

/// Regenerate goldens from the reference and print the diff of each file changed (refused when CI is set).
///
/// Exit status: 0 every selected case blessed, 1 a case cannot run (its case error is
/// printed; the others are blessed), 2 usage or IO error.
#[derive(clap::Args)]
pub struct Args {
    /// Corpus directory.
    #[arg(long, default_value = "corpus/cases")]
    corpus: PathBuf,
    /// Only cases whose group/name or id matches this glob.
    #[arg(long)]
    filter: Option<String>,
}

/// Runs `bless`.
pub fn run(args: &Args) -> Result<ExitCode, String> {
    if std::env::var_os("CI").is_some() {
        return Err(
            "bless is refused when CI is set: goldens are reviewed changes, not CI output".into(),
        );
    }
    let mut stdout = io::stdout();
    match harness::bless(&args.corpus, args.filter.as_deref(), &mut stdout) {
        Ok(written) => {
            eprintln!("session-conformance: {written} golden file(s) written");
            Ok(ExitCode::SUCCESS)
        }
        // A case that cannot run is a failed case, as in `run` and `corpus check`.
        Err(HarnessError::CaseErrors { written, errors }) => {
            for error in &errors {
                eprintln!("session-conformance: case error: {error}");
            }
            eprintln!(
                "session-conformance: {written} golden file(s) written, {} case(s) refused",
                errors.len()
            );
            Ok(ExitCode::from(1))
        }
        Err(e) => Err(e.to_string()),
    }
}
