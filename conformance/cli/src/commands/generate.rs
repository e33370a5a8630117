//! `generate`: write generated cases, with goldens from the reference, as a corpus.

use std::path::PathBuf;
use std::process::ExitCode;

use session_conformance_cli::fuzz;
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
    /// How many cases (at most 10,000: a case averages about 400 KB on disk, so the
    /// largest run writes about 4 GB).
    #[arg(long, default_value_t = 100, value_parser = parse_count)]
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

/// The most cases one `generate` writes: a case is a folder of files of about 400 KB
/// (some carry persist-sized strings), so 10,000 cases fill about 4 GB, and a count of
/// 2^64 − 1 must be refused, not attempted.
const MAX_COUNT: usize = 10_000;

/// Parses `--count`: a whole number up to [`MAX_COUNT`].
fn parse_count(text: &str) -> Result<usize, String> {
    let count: usize = text
        .parse()
        .map_err(|e| format!("{text:?} is not a count of cases: {e}"))?;
    if count > MAX_COUNT {
        return Err(format!(
            "{count} is more than the limit of {MAX_COUNT} cases"
        ));
    }
    Ok(count)
}
