//! The reference as an adapter: runs one protocol request with `session-reference`, in process.
//!
//! `serve` wraps this in the protocol loop; `run --adapter reference` calls it directly.
//!
//! By concern: `setup` (the case directory, session options, error kinds), `confined`
//! (the storage that writes only inside the case directory), `read`
//! (`load`, `context`, `tree`), `steps` (one `apply` step: the call table and queries),
//! `apply` (`apply`, `persist`, ack mode), `store` (the session-store operations),
//! [`compaction`] (`compaction`, `branch_summary`) and [`serve`] (the protocol loop).
//! The public functions of the private ones are re-exported here.

use std::path::PathBuf;

use session_reference::model::Profile;

pub use self::apply::execute_acked;
use self::apply::{apply, persist};
pub use self::call::Call;
use self::read::{context, load, tree};
pub use self::read::{load_output, shallow, tree_output, write_load_output};
use self::setup::case_dir;
pub use self::setup::{error_kind, inside, options};
pub use self::steps::{run_step, substitute};
use crate::protocol::{Capability, Hello, Operation, Request, Response};

mod apply;
mod call;
pub mod compaction;
mod confined;
mod read;
pub mod serve;
mod setup;
mod steps;
mod store;

/// The reference's hello for `profile`.
pub fn hello(profile: Profile) -> Hello {
    Hello {
        kind: "hello".into(),
        implementation: "session-reference".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        profile: profile.name().into(),
        operations: Operation::ALL
            .into_iter()
            .filter(|op| profile == Profile::Omp || !op.is_omp_only())
            .filter(|op| cfg!(feature = "history") || *op != Operation::History)
            .collect(),
        capabilities: vec![
            Capability::Diagnostics,
            Capability::Faults,
            Capability::Journal,
        ],
    }
}

/// Runs one request against the reference.
pub fn execute(request: Request) -> Response {
    let case = request.case.as_str();
    let profile = match request.profile.parse::<Profile>() {
        Ok(p) => p,
        Err(e) => return Response::error(case, "exception", e),
    };
    let dir = PathBuf::from(&request.dir);
    if let Err(e) = case_dir(&dir) {
        return Response::error(case, "exception", e);
    }
    // Arguments nested past the limit are refused before they become a value.
    if request.args.text_len().is_some() {
        if let Err(e) = crate::guard::check_nesting(&request.args.text()) {
            return Response::error(case, "exception", format!("args {e}"));
        }
    }
    let mut args = request.args.into_value();
    let result = match request.op {
        Operation::Load => load(&dir, &args, profile),
        Operation::Context => context(&dir, &args, profile),
        Operation::Tree => tree(&dir, &args, profile),
        Operation::Apply => apply(&dir, &args, profile, &request.faults),
        Operation::Persist => persist(&dir, args["message"].take(), profile, &request.faults),
        ref op if profile != Profile::Omp && op.is_omp_only() => {
            return Response::unsupported(case)
        }
        Operation::List => store::list_op(&dir, &args, profile),
        Operation::Recent => store::recent_op(&dir, &args),
        Operation::Continue => store::continue_op(&dir, &args, profile),
        Operation::Resolve => store::resolve_op(&dir, &args, profile),
        #[cfg(feature = "history")]
        Operation::History => store::history_op(&dir, &args),
        #[cfg(not(feature = "history"))]
        Operation::History => return Response::unsupported(case),
        Operation::Switch => store::switch_op(&dir, &args, profile),
        Operation::Search => store::search_op(&dir, &args, profile),
        Operation::Compaction => compaction::compaction_op(&dir, &args, profile),
        Operation::BranchSummary => compaction::branch_summary_op(&dir, &args, profile),
        Operation::Other(_) => return Response::unsupported(case),
    };
    match result {
        Ok(value) => Response::ok(case, value),
        Err(e) => Response::error(case, error_kind(&e), e.to_string()),
    }
}
