//! `context`: print what is sent to the model, as one line of JSON.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use session_conformance_cli::inspect;

use super::{ignore_broken_pipe, ProfileChoice};

/// Print the context (what is sent to the model) in the profile's JSON shape, as one line
/// of JSON whose stored messages are written exactly as the file holds them. FILE is read
/// once (a regular file or a pipe) and not changed.
#[derive(clap::Args)]
pub struct Args {
    /// The session file.
    file: PathBuf,
    /// The profile, or `auto` to decide it from the content.
    #[arg(long, value_enum, default_value_t = ProfileChoice::Auto)]
    profile: ProfileChoice,
    /// Build the context at this entry instead of the leaf (an unknown id: at the last
    /// entry, as buildSessionContext does, with a note on stderr).
    #[arg(long, conflicts_with = "no_leaf")]
    leaf: Option<String>,
    /// Build the context for a null leaf (the empty context).
    #[arg(long)]
    no_leaf: bool,
}

/// Runs `context`.
pub fn run(args: &Args) -> Result<ExitCode, String> {
    let choice = if args.no_leaf {
        Some(None)
    } else {
        args.leaf.as_deref().map(Some)
    };
    let sm = inspect::open(&args.file, args.profile.profile()).map_err(|e| e.to_string())?;
    let (leaf, note) = inspect::leaf_choice(&sm, choice);
    if let Some(note) = note {
        eprintln!("session-conformance: {}: {note}", args.file.display());
    }
    let mut out = io::BufWriter::new(io::stdout().lock());
    serde_json::to_writer(&mut out, &sm.context(leaf))
        .map_err(io::Error::from)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .or_else(ignore_broken_pipe)?;
    Ok(ExitCode::SUCCESS)
}
