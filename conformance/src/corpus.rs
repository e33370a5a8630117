//! The corpus on disk: cases, their inputs and goldens, and the lint behind `corpus check` (`corpus/README.md`).
//!
//! A case is a directory holding `case.json`, an `input/` folder copied byte for
//! byte into the case's working directory, and one golden per profile
//! (`expected.<profile>.json`) or one shared golden (`expected.json`).
//!
//! By concern: `case_file` (`case.json` and its vocabularies), `problems` (what can be
//! wrong, as values), `templates` (`$repeat`/`$concat` and their expansion),
//! `inputs` and `goldens` (reading a case's files), `placeholders` and `checks`
//! (what refuses a case when it loads), `cases` (a loaded case and loading the
//! corpus) and `lint` (`corpus check`). Every public item is re-exported
//! here, so `corpus::Case`, `corpus::load`, `corpus::check`, … are the paths to use.

mod case_file;
mod cases;
mod checks;
mod goldens;
mod inputs;
mod lint;
mod placeholders;
mod problems;
mod spec;
mod templates;

pub use case_file::{CaseFile, SafetyCheck, PATH_ARGS, TAGS};
pub use cases::{load, load_case, Case, Derived};
pub use goldens::Golden;
pub use lint::{check, check_loaded, check_with_spec, spec_problems, Coverage};
pub use problems::{
    CaseError, CaseProblem, CorpusError, CorpusProblem, GoldenProblem, GOLDEN_NESTING,
};
pub use spec::{
    is_clause_id, lines as spec_lines, names_in, Clause, Named, Spec, SpecLine, Wording,
    GENERATED_END, GENERATED_START, TRACE_LINES, VAGUE_WORDING,
};
pub use templates::{expand, TemplateProblem, MAX_EXPANSION_BYTES};
