//! The corpus against `example_port`, one libtest trial per case: the whole mapping from
//! the kit's typed trait onto the implementation's own API.

use std::path::Path;
use std::process::ExitCode;

use example_port::Session;
use serde_json::Value;
use session_conformance::protocol::Operation;
use session_conformance::typed::{
    Call, ErrorKind, Implementation, Leaf, Loaded, OpError, Outcome, Typed,
};
use session_conformance::{divergences, Harness, Profile};

struct Port;

fn open(file: &Path) -> Outcome<Session> {
    Session::open(file).map_err(|e| OpError::new(ErrorKind::Exception, e))
}

impl Implementation for Port {
    fn name(&self) -> (String, String) {
        ("example-port".into(), env!("CARGO_PKG_VERSION").into())
    }
    fn profile(&self) -> Profile {
        Profile::Pi
    }
    fn operations(&self) -> Vec<Operation> {
        vec![Operation::Load, Operation::Context]
    }
    fn load(&mut self, _call: &Call, file: &Path) -> Outcome<Loaded> {
        let s = open(file)?;
        Ok(Loaded {
            header: s.header,
            entries: s.entries,
            leaf_id: s.leaf,
        })
    }
    fn context(&mut self, _call: &Call, file: &Path, leaf: Leaf) -> Outcome<Value> {
        let s = open(file)?;
        Ok(match leaf {
            Leaf::Own => s.context(s.leaf.as_deref()),
            Leaf::Null => s.context(None),
            Leaf::Id(id) => s.context(Some(&id)),
        })
    }
}

fn main() -> ExitCode {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let known = divergences::read(&here.join("expected-divergences")).expect("the list reads");
    let corpus = session_conformance::corpus_dir().expect("the corpus unpacks");
    Harness::new(corpus)
        .profile(Profile::Pi)
        .ignore(known)
        .jobs(2)
        .test(&|| Box::new(Typed::new(Port)))
}
