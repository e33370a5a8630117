//! `load`: print a session file as the reference loads it.

use std::path::PathBuf;
use std::process::ExitCode;

use session_conformance::inspect;
use session_reference::model::Profile;

use super::{parse_profile, print_json};

/// Print a session file as the reference loads it: {header, entries, leafId, diagnostics, migrated}. FILE is not changed.
#[derive(clap::Args)]
pub struct Args {
    /// The session file (a regular file or a pipe).
    file: PathBuf,
    /// The profile to read it as: pi, omp or operator.
    #[arg(long, value_parser = parse_profile)]
    profile: Profile,
}

/// Runs `load`.
pub fn run(args: &Args) -> Result<ExitCode, String> {
    print_json(&inspect::load(&args.file, args.profile).map_err(|e| e.to_string())?)
}
