//! `load`: print a session file as the reference loads it.

use std::path::PathBuf;
use std::process::ExitCode;

use session_conformance_cli::inspect;

use super::{ignore_broken_pipe, ProfileChoice};

/// Print a session file as the reference loads it: {header, entries, leafId, diagnostics, migrated}. FILE is not changed.
#[derive(clap::Args)]
pub struct Args {
    /// The session file (a regular file or a pipe).
    file: PathBuf,
    /// The profile, or `auto` to decide it from the content.
    #[arg(long, value_enum, default_value_t = ProfileChoice::Auto)]
    profile: ProfileChoice,
}

/// Runs `load`: the output is written as it is made, an entry at a time.
pub fn run(args: &Args) -> Result<ExitCode, String> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    inspect::write_load(&args.file, args.profile.profile(), &mut out)
        .map_err(|e| e.to_string())?
        .and_then(|()| std::io::Write::flush(&mut out))
        .or_else(ignore_broken_pipe)?;
    Ok(ExitCode::SUCCESS)
}
