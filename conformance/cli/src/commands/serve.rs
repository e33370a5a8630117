//! `serve`: speak the adapter protocol on stdin/stdout with the reference.

use std::io;
use std::process::ExitCode;

use session_conformance::execute::serve;
use session_reference::model::Profile;

use super::parse_profile;

/// Speak the adapter protocol on stdin/stdout with the reference (so other harnesses can call it).
#[derive(clap::Args)]
pub struct Args {
    /// The profile to serve: pi, omp or operator.
    #[arg(long, value_parser = parse_profile)]
    profile: Profile,
    /// Answer one request and exit.
    #[arg(long)]
    one_shot: bool,
}

/// Runs `serve`.
pub fn run(args: &Args) -> Result<ExitCode, String> {
    let stdin = io::stdin().lock();
    let stdout = io::stdout().lock();
    match serve::serve(args.profile, args.one_shot, stdin, stdout) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(e.to_string()),
        Ok(()) => Ok(ExitCode::SUCCESS),
    }
}
