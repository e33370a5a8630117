//! `load`: print a session file as the reference loads it.

use std::path::PathBuf;
use std::process::ExitCode;

use session_conformance::inspect;

use super::{print_json, ProfileChoice};

/// Print a session file as the reference loads it: {header, entries, leafId, diagnostics, migrated}. FILE is not changed.
#[derive(clap::Args)]
pub struct Args {
    /// The session file (a regular file or a pipe).
    file: PathBuf,
    /// The profile, or `auto` to decide it from the content.
    #[arg(long, value_enum, default_value_t = ProfileChoice::Auto)]
    profile: ProfileChoice,
}

/// Runs `load`.
pub fn run(args: &Args) -> Result<ExitCode, String> {
    print_json(&inspect::load(&args.file, args.profile.profile()).map_err(|e| e.to_string())?)
}
