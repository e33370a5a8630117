//! `compaction`: show a session's compaction plan (document 004).

use std::path::PathBuf;
use std::process::ExitCode;

use session_conformance_cli::plan;

use super::{print_json, write_stdout, OutputFormat, ProfileChoice};

/// Show a session's compaction plan (document 004): the context against the window, the
/// cut, what would be summarised and kept, and the file lists. FILE is not changed.
#[derive(clap::Args)]
pub struct Args {
    /// The session file.
    file: PathBuf,
    /// The profile, or `auto` to decide it from the content.
    #[arg(long, value_enum, default_value_t = ProfileChoice::Auto)]
    profile: ProfileChoice,
    /// The model's context window, in tokens.
    #[arg(long)]
    context_window: i64,
    /// Plan at this entry instead of the leaf.
    #[arg(long)]
    leaf: Option<String>,
    /// keepRecentTokens (default: the profile's, 20000).
    #[arg(long)]
    keep_recent_tokens: Option<i64>,
    /// reserveTokens (default: the profile's, 16384).
    #[arg(long)]
    reserve_tokens: Option<i64>,
    /// Output format (json: the `compaction` operation's output).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    format: OutputFormat,
}

/// Runs `compaction`.
pub fn run(args: Args) -> Result<ExitCode, String> {
    let options = plan::PlanOptions {
        context_window: args.context_window,
        leaf: args.leaf,
        keep_recent_tokens: args.keep_recent_tokens,
        reserve_tokens: args.reserve_tokens,
    };
    if args.format == OutputFormat::Json {
        print_json(
            &plan::compaction_json(&args.file, args.profile.profile(), &options)
                .map_err(|e| e.to_string())?,
        )
    } else {
        write_stdout(
            &plan::compaction_text(&args.file, args.profile.profile(), &options)
                .map_err(|e| e.to_string())?,
        )
    }
}
