//! `report`: the JSON reports of several runs as one conformance matrix (HTML and Markdown).

use std::process::ExitCode;

use session_conformance::guard::printable;
use session_conformance_cli::matrix;

use super::{corpus_dir, write_stdout};

/// The arguments, as the library's matrix module defines them.
pub use matrix::ReportArgs as Args;

/// Runs `report`. A corpus is found (`--corpus`, else corpus/cases here, else the one
/// the binary carries) only to label a report written without its cases' labels.
pub fn run(args: &Args) -> Result<ExitCode, String> {
    let corpus = || corpus_dir(args.corpus.as_deref());
    let (stdout, warnings) = matrix::command(args, corpus).map_err(|e| e.to_string())?;
    for warning in warnings {
        eprintln!("session-conformance: warning: {}", printable(&warning));
    }
    write_stdout(&stdout)
}
