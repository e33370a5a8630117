//! `fuzz`: differential testing of an adapter against the reference, with shrinking.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use session_conformance::divergences;
use session_conformance::guard;
use session_conformance_cli::fuzz;
use session_reference::model::Profile;

use super::parse_profile;

/// Differential testing: run generated cases through an adapter and the reference;
/// shrink the first disagreement and write it as a case ready for corpus/cases/regression/:
/// the next free id of `--corpus` and a kebab-case name (`fuzz-<profile>-seed-<seed>-case-<n>`).
///
/// Exit status: 0 no disagreement, 1 a disagreement was found, 2 usage or adapter error.
#[derive(clap::Args)]
pub struct Args {
    /// The adapter command (arguments that start with `-` go after `--`).
    #[arg(long, num_args = 1.., value_name = "CMD", required = true)]
    adapter: Vec<String>,
    /// More adapter arguments.
    #[arg(last = true, value_name = "ADAPTER-ARGS")]
    rest: Vec<String>,
    /// The profile: pi, omp or operator.
    #[arg(long, value_parser = parse_profile)]
    profile: Profile,
    /// How many generated cases at most.
    #[arg(long, default_value_t = 200)]
    cases: usize,
    /// The seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Stop after this many seconds (the adapter's hello included).
    #[arg(long, default_value_t = 600)]
    budget: u64,
    /// Seconds an adapter may take per case, and to say hello.
    #[arg(long, default_value_t = 20)]
    timeout: u64,
    /// Where to write the shrunk case.
    #[arg(long, default_value = "fuzz-findings")]
    out: PathBuf,
    /// The corpus a finding is numbered for (it gets the next free id there).
    #[arg(long, default_value = "corpus/cases")]
    corpus: PathBuf,
    /// Remove this object key from both outputs before comparing (repeatable), to look past a known divergence.
    #[arg(long = "ignore-key", value_name = "KEY")]
    ignore_keys: Vec<String>,
    /// Known divergences, as `run --expect` reads them (PROTOCOL.md "Expected divergences"):
    /// a disagreement in a declared category (`GROUP/NAME-GLOB`, `tag:TAG`; a generated
    /// case whose golden names a created file carries `file-naming`) is looked past, and lines of a declared
    /// `entry-type:TYPE` are left out of written files before comparing.
    #[arg(long, value_name = "FILE")]
    expect: Option<PathBuf>,
}

/// Runs `fuzz`.
pub fn run(args: Args) -> Result<ExitCode, String> {
    let divergences = match &args.expect {
        Some(path) => divergences::read(path).map_err(|e| e.to_string())?,
        None => divergences::Divergences::new(),
    };
    let options = fuzz::FuzzOptions {
        argv: args.adapter.into_iter().chain(args.rest).collect(),
        profile: args.profile,
        cases: args.cases,
        seed: args.seed,
        budget: Duration::from_secs(args.budget),
        out: args.out,
        timeout: Duration::from_secs(args.timeout),
        ignore_keys: args.ignore_keys,
        divergences,
        corpus: args.corpus,
    };
    let mut progress: Box<dyn Write> = if io::stderr().is_terminal() {
        Box::new(io::stderr())
    } else {
        Box::new(io::sink())
    };
    let fuzz::FuzzRun {
        ran,
        looked_past,
        finding,
    } = fuzz::fuzz(&options, &mut progress).map_err(|e| e.to_string())?;
    report_looked_past(&looked_past, &options.divergences);
    match finding {
        None => {
            println!("{ran} generated case(s), no disagreement");
            Ok(ExitCode::SUCCESS)
        }
        Some(f) => {
            println!(
                "disagreement after {ran} case(s); shrunk from {} to {} steps: {}",
                f.steps.0,
                f.steps.1,
                f.dir.display()
            );
            print!("{}", f.diff);
            Ok(ExitCode::from(1))
        }
    }
}

/// Says on stderr how many disagreements the expected divergences excused, per entry,
/// and which category lines never fired (a line no generated case needed).
fn report_looked_past(looked_past: &[(String, String)], list: &divergences::Divergences) {
    let mut by_excuse: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for (_, why) in looked_past {
        *by_excuse.entry(why.as_str()).or_default() += 1;
    }
    if !looked_past.is_empty() {
        eprintln!(
            "session-conformance: {} disagreement(s) looked past as expected divergences:",
            looked_past.len()
        );
        for (why, n) in &by_excuse {
            eprintln!("  {n} case(s): {}", guard::printable(why));
        }
    }
    let idle: Vec<String> = list
        .categories
        .iter()
        .filter(|line| {
            let named = line.named();
            let text = format!("{}: ", line.text);
            !by_excuse
                .keys()
                .any(|why| why.contains(&named) || why.starts_with(&text))
        })
        .map(divergences::Category::named)
        .collect();
    if !idle.is_empty() {
        eprintln!(
            "session-conformance: {} line(s) of the list covered no generated case: {}",
            idle.len(),
            guard::printable(&idle.join(", "))
        );
    }
}
