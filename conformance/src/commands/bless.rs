//! `bless`: regenerate goldens from the reference and print the diff of each file changed.

use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use session_conformance::harness;

/// Regenerate goldens from the reference and print the diff of each file changed (refused when CI is set).
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
    let written = harness::bless(&args.corpus, args.filter.as_deref(), &mut stdout)
        .map_err(|e| e.to_string())?;
    eprintln!("session-conformance: {written} golden file(s) written");
    Ok(ExitCode::SUCCESS)
}
