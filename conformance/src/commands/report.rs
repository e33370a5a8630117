//! `report`: the JSON reports of several runs as one conformance matrix (HTML and Markdown).

use std::process::ExitCode;

use session_conformance::matrix;

use super::write_stdout;

/// The arguments, as the library's matrix module defines them.
pub use matrix::ReportArgs as Args;

/// Runs `report`.
pub fn run(args: &Args) -> Result<ExitCode, String> {
    write_stdout(&matrix::command(args).map_err(|e| e.to_string())?)
}
