//! `report`: the JSON reports of several runs as one conformance matrix (HTML and Markdown).

use std::path::Path;
use std::process::ExitCode;

use session_conformance_cli::matrix;

use super::{corpus_dir, write_stdout};

/// The arguments, as the library's matrix module defines them.
pub use matrix::ReportArgs as Args;

/// Runs `report`. Without a corpus/cases folder here, tags come from the corpus the
/// binary carries.
pub fn run(args: &Args) -> Result<ExitCode, String> {
    let mut args = args.clone();
    if args.corpus == Path::new("corpus/cases") && !args.corpus.is_dir() {
        args.corpus = corpus_dir(None)?;
    }
    write_stdout(&matrix::command(&args).map_err(|e| e.to_string())?)
}
