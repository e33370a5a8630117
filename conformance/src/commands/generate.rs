//! `generate`: write generated cases, with goldens from the reference, as a corpus.

use std::path::PathBuf;
use std::process::ExitCode;

use session_conformance::fuzz;
use session_reference::model::Profile;

use super::parse_profile;

/// Write generated cases (with goldens from the reference) as a corpus any implementation can run.
///
/// The same seed writes byte-identical output. Run them with `run --corpus DIR`.
#[derive(clap::Args)]
pub struct Args {
    /// The seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// How many cases.
    #[arg(long, default_value_t = 100)]
    count: usize,
    /// The output corpus directory (cases go to DIR/generated/).
    #[arg(long)]
    out: PathBuf,
    /// The profile the cases are for: pi, omp or operator.
    #[arg(long, value_parser = parse_profile, default_value = "pi")]
    profile: Profile,
}

/// Runs `generate`.
pub fn run(args: &Args) -> Result<ExitCode, String> {
    let n = fuzz::generate(args.seed, args.count, args.profile, &args.out)
        .map_err(|e| e.to_string())?;
    eprintln!(
        "session-conformance: {n} case(s) written to {}",
        args.out.join("generated").display()
    );
    Ok(ExitCode::SUCCESS)
}
