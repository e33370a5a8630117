//! `session-conformance`: run the session corpus against any implementation, bless goldens,
//! serve the reference, inspect sessions. Each command is a file of `commands/`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod commands;

use commands::{
    bless, compaction, context, corpus, crash, fuzz, generate, load, protocol, report, run, schema,
    serve, sessions, tree, validate,
};

/// mimalloc keeps freed memory for reuse: a run allocates and frees the same few
/// hundred kilobytes per case, which glibc's allocator hands back to the system
/// and faults in again. `main` turns its purging off too (see `allocator`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Conformance kit for the JSONL session format of pi-mono and oh-my-pi.
///
/// The main job: `session-conformance run` runs every corpus case against the
/// built-in reference. Point `--adapter` at an executable that speaks
/// conformance/PROTOCOL.md (`session-conformance protocol` prints it) to test another
/// implementation.
#[derive(Parser)]
#[command(
    name = "session-conformance",
    version = session_conformance::bundle::LONG_VERSION,
    about,
    long_about
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Run(run::Args),
    Bless(bless::Args),
    Serve(serve::Args),
    Generate(generate::Args),
    Fuzz(fuzz::Args),
    Validate(validate::Args),
    Schema(schema::Args),
    /// Render the JSON reports of several runs (`run --format json`, one per implementation)
    /// as one conformance matrix: implementations as columns, case groups and tags as rows.
    ///
    /// Writes a self-contained HTML page (--html; a cell opens its cases' diffs and divergence
    /// reasons) and/or a Markdown table (--markdown; on stdout when neither is given).
    Report(report::Args),
    Corpus(corpus::Args),
    Load(load::Args),
    Context(context::Args),
    Sessions(sessions::Args),
    Tree(tree::Args),
    Compaction(compaction::Args),
    Crash(crash::Args),
    Protocol(protocol::Args),
}

fn main() -> ExitCode {
    #[allow(unsafe_code)]
    // SAFETY: the first thing `main` does, before any other thread runs.
    unsafe {
        session_conformance_cli::allocator::keep_freed_memory();
    }
    session_conformance::guard::ignore_file_size_signal();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Bless(args) => bless::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::Generate(args) => generate::run(&args),
        Command::Fuzz(args) => fuzz::run(args),
        Command::Validate(args) => validate::run(args),
        Command::Schema(args) => schema::run(args),
        Command::Report(args) => report::run(&args),
        Command::Corpus(args) => corpus::run(args),
        Command::Load(args) => load::run(&args),
        Command::Context(args) => context::run(&args),
        Command::Sessions(args) => sessions::run(args),
        Command::Tree(args) => tree::run(&args),
        Command::Compaction(args) => compaction::run(args),
        Command::Crash(args) => crash::run(&args),
        Command::Protocol(args) => protocol::run(&args),
    };
    result.unwrap_or_else(|message| {
        eprintln!("session-conformance: {message}");
        ExitCode::from(2)
    })
}
