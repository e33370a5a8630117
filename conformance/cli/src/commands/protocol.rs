//! `protocol`: print the adapter protocol (PROTOCOL.md) the binary carries, so an
//! installed kit's user can read what its `--help` and the corpus's README point at.

use std::process::ExitCode;

use session_conformance::bundle;

use super::write_stdout;

/// Print conformance/PROTOCOL.md, the adapter protocol: how an implementation plugs in
/// (requests, responses, capabilities, normalisation, divergence lists, reports).
///
/// The text is the one `corpus export DIR` writes as DIR/PROTOCOL.md: its paths name that
/// folder's layout (`cases/`, `spec/`, `schemas/`).
#[derive(clap::Args)]
pub struct Args {}

/// Runs `protocol`.
pub fn run(_args: &Args) -> Result<ExitCode, String> {
    write_stdout(&bundle::protocol().map_err(|e| e.to_string())?)
}
