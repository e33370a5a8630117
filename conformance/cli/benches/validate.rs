//! Throughput of `validate` on a generated session file of about 100 MB.
//!
//! Run with `cargo bench -p session-conformance-cli --bench validate`; prints MB/s.

use std::io::Write;
use std::time::Instant;

use session_conformance_cli::validate::{validate_file, Options, Schemas};
use session_reference::model::Profile;

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("big.jsonl");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
    writeln!(file, r#"{{"type":"session","version":3,"id":"0000000000000001","timestamp":"2025-06-01T12:00:00.000Z","cwd":"/proj"}}"#).expect("write");
    let text = "x".repeat(900);
    let mut parent = "null".to_owned();
    let mut written = 0usize;
    let mut n = 0u64;
    while written < 100 * 1024 * 1024 {
        n += 1;
        let id = format!("{n:08x}");
        let line = format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2025-06-01T12:00:00.000Z","message":{{"role":"user","content":"{text}","timestamp":1}}}}"#
        );
        writeln!(file, "{line}").expect("write");
        written += line.len() + 1;
        parent = format!("\"{id}\"");
    }
    drop(file);
    let schemas = Schemas::new();
    let options = Options {
        profile: Some(Profile::Omp),
        blob_dir: None,
    };
    let start = Instant::now();
    let (findings, _) = validate_file(&path, &schemas, &options).expect("validate");
    let seconds = start.elapsed().as_secs_f64();
    assert!(findings.is_empty(), "{findings:?}");
    #[allow(clippy::cast_precision_loss)] // a byte count
    let mb = written as f64 / (1024.0 * 1024.0);
    println!(
        "validate: {mb:.0} MB, {n} entries in {seconds:.2} s: {:.0} MB/s",
        mb / seconds
    );
}
