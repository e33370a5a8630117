//! Every corpus case against the reference, one test per case and profile.
//!
//! `cargo test --workspace` alone proves the goldens agree with the reference.
//! A mismatch prints a unified diff and the command that regenerates goldens.

use std::path::Path;
use std::time::Duration;

use session_conformance::adapter::ReferenceAdapter;
use session_conformance::corpus;
use session_conformance::execute;
use session_conformance::runner::{run_case, Divergences, Status};
use session_reference::model::Profile;

/// A failure whose `Debug` is its text, so the diff prints as lines.
struct Mismatch(String);

impl std::fmt::Debug for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Mismatch {}

fn check_case(path: &Path) -> datatest_stable::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| Mismatch("case.json has no directory".into()))?;
    let case = corpus::load_case(dir)?;
    let profiles: Vec<Profile> = Profile::ALL
        .into_iter()
        .filter(|p| case.applies_to(*p))
        .collect();
    if profiles.is_empty() {
        return Err(Box::new(Mismatch(format!(
            "{}: the case names no profile of {:?}",
            case.full_name(),
            Profile::ALL.map(Profile::name)
        ))));
    }
    let mut failures = Vec::new();
    for profile in profiles {
        let mut adapter = ReferenceAdapter::new(profile);
        let hello = execute::hello(profile);
        let result = run_case(
            &case,
            profile,
            &mut adapter,
            &hello,
            Duration::from_mins(10),
            &Divergences::new(),
        );
        if result.status != Status::Pass {
            failures.push(format!(
                "{} {} ({profile}): {} at {}\n{}\n{}",
                result.id,
                result.name,
                result.status.name(),
                result.pointer.unwrap_or_default(),
                result.notes.join("\n"),
                result.diff.unwrap_or_default()
            ));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        let rerun = format!("to accept the reference's output: cargo run -p session-conformance-cli -- bless --filter '{}'", case.full_name());
        Err(Box::new(Mismatch(format!(
            "{}\n{rerun}",
            failures.join("\n")
        ))))
    }
}

datatest_stable::harness! {
    { test = check_case, root = "../../corpus/cases", pattern = r"case\.json$" },
}
