//! `tree`: print the entry tree, as a picture or a flat list.

use std::path::PathBuf;
use std::process::ExitCode;

use session_conformance_cli::inspect;

use super::{print_json, write_stdout, OutputFormat, ProfileChoice};

/// Print the entry tree: an indented picture (text) or a flat pre-order list (json). FILE is not changed.
#[derive(clap::Args)]
pub struct Args {
    /// The session file.
    file: PathBuf,
    /// The profile, or `auto` to decide it from the content.
    #[arg(long, value_enum, default_value_t = ProfileChoice::Auto)]
    profile: ProfileChoice,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    format: OutputFormat,
}

/// Runs `tree`.
pub fn run(args: &Args) -> Result<ExitCode, String> {
    if args.format == OutputFormat::Json {
        print_json(
            &inspect::tree_json(&args.file, args.profile.profile()).map_err(|e| e.to_string())?,
        )
    } else {
        write_stdout(
            &inspect::tree_text(&args.file, args.profile.profile()).map_err(|e| e.to_string())?,
        )
    }
}
