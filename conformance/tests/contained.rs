//! Issue #45: a panic or a hang of an implementation in process fails its case only.
//! A typed `load` that panics (the README's template has `todo!()` there) is each case's
//! `crash`, with the panic's message; one that never returns is each case's `timeout`
//! at the harness's limit; and the run goes on with a fresh implementation from the
//! factory, to its end.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use serde_json::json;
use session_conformance::protocol::Operation;
use session_conformance::typed::{Call, Implementation, Loaded, Outcome, Typed};
use session_conformance::{Harness, Profile, ProfileRun, Status};

/// What the port's `load` does.
#[derive(Clone, Copy, Debug)]
enum Act {
    /// `todo!()`, as the README's template.
    Panic,
    /// Never returns.
    Hang,
    /// Panics in the first implementation made, answers in every later one.
    PanicOnce,
    /// Answers `ok` with a million and one numbers.
    Huge,
}

struct Port {
    act: Act,
    /// Which implementation this is: 0 for the first one made.
    made: usize,
}

impl Implementation for Port {
    fn name(&self) -> (String, String) {
        ("faulty".into(), "0".into())
    }
    fn profile(&self) -> Profile {
        Profile::Pi
    }
    fn operations(&self) -> Vec<Operation> {
        vec![Operation::Load]
    }
    fn load(&mut self, _call: &Call, _file: &Path) -> Outcome<Loaded> {
        match (self.act, self.made) {
            (Act::Panic, _) | (Act::PanicOnce, 0) => {
                todo!("open `file` with your implementation and map its session onto Loaded")
            }
            (Act::Hang, _) => loop {
                std::thread::sleep(Duration::from_hours(1));
            },
            (Act::Huge, _) => Ok(Loaded {
                header: Some(json!(vec![0; 1_000_001])),
                entries: vec![],
                leaf_id: None,
            }),
            (Act::PanicOnce, _) => Ok(Loaded {
                header: None,
                entries: vec![],
                leaf_id: None,
            }),
        }
    }
}

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/cases")
}

/// The three `parse/a*` cases against the port, one job: the run, and how many
/// implementations the factory made. A run that does not end within two minutes fails
/// the test instead of hanging it.
fn run(act: Act) -> (ProfileRun, usize) {
    let made = Arc::new(AtomicUsize::new(0));
    let (done, ended) = mpsc::channel();
    let counter = Arc::clone(&made);
    std::thread::spawn(move || {
        let harness = Harness::new(corpus())
            .profile(Profile::Pi)
            // A hang is cut at a second; anything else gets room to panic, which under
            // RUST_BACKTRACE=1 on a loaded machine can take seconds of symbolising.
            .timeout(if matches!(act, Act::Hang) {
                Duration::from_secs(1)
            } else {
                Duration::from_secs(30)
            })
            .filter("parse/a*")
            .expect("a glob");
        let factory = move || -> Box<dyn session_conformance::Adapter> {
            let made = counter.fetch_add(1, Ordering::SeqCst);
            Box::new(Typed::new(Port { act, made }))
        };
        let _ = done.send(harness.run_with(&factory).expect("the run ends"));
    });
    let run = ended
        .recv_timeout(Duration::from_mins(2))
        .unwrap_or_else(|e| panic!("{act:?}: the run did not end: {e}"));
    (run, made.load(Ordering::SeqCst))
}

#[test]
fn a_panic_or_a_hang_fails_its_case_and_the_run_goes_on() {
    // (act, status of every case, a note's start, implementations made at least)
    let cases = [
        (
            Act::Panic,
            Status::Crash,
            "panicked: not yet implemented: open `file`",
            4,
        ),
        (Act::Hang, Status::Timeout, "no response within 1s", 4),
        (
            Act::Huge,
            Status::ProtocolError,
            "response holds more than 1000000 JSON values",
            1,
        ),
    ];
    for (act, status, note, made_at_least) in cases {
        let (run, made) = run(act);
        assert_eq!(run.results.len(), 3, "{act:?}");
        for result in &run.results {
            assert_eq!(
                result.status, status,
                "{act:?} {}: {:?}",
                result.name, result.notes
            );
            assert!(
                result.notes.iter().any(|n| n.starts_with(note)),
                "{act:?} {}: {:?}",
                result.name,
                result.notes
            );
        }
        // The hello's implementation and one fresh one after each lost case.
        assert!(
            made >= made_at_least,
            "{act:?}: {made} implementations made"
        );
    }
}

/// After a crash, the next case gets a fresh implementation: one crash only.
#[test]
fn the_case_after_a_crash_gets_a_fresh_implementation() {
    let (run, made) = run(Act::PanicOnce);
    let statuses: Vec<Status> = run.results.iter().map(|r| r.status).collect();
    let crashes = statuses.iter().filter(|&&s| s == Status::Crash).count();
    assert_eq!(crashes, 1, "{statuses:?}");
    assert!(made >= 2, "{made}");
}
