//! `validate` against the corpus: every line the reference skips or rejects when
//! loading a corpus input is reported by `validate` as an error on that line.

use std::collections::BTreeSet;

use session_conformance::corpus;
use session_conformance::validate::{validate_reader, Level, Options, Schemas};
use session_reference::model::Profile;

#[test]
fn every_malformed_corpus_line_is_reported_at_its_line() {
    let schemas = Schemas::new();
    let mut checked = 0;
    for case in corpus::load(std::path::Path::new("../corpus/cases")).unwrap() {
        let Some(input) = case.inputs.get("session.jsonl") else {
            continue;
        };
        for profile in Profile::ALL.into_iter().filter(|p| case.applies_to(*p)) {
            let golden = session_reference::raw::parse_value(
                &std::fs::read_to_string(case.golden_path(profile)).unwrap(),
            )
            .unwrap();
            let Some(diagnostics) = golden
                .pointer("/response/ok/diagnostics")
                .and_then(|d| d.as_array())
            else {
                continue;
            };
            let bad: BTreeSet<u64> = diagnostics
                .iter()
                .filter(|d| {
                    matches!(
                        d["kind"].as_str(),
                        Some(
                            "not_json"
                                | "not_object"
                                | "torn_line"
                                | "trailing_data"
                                | "invalid_blob_ref"
                        )
                    )
                })
                .filter_map(|d| d["line"].as_u64())
                .collect();
            if bad.is_empty() {
                continue;
            }
            let (findings, _) = validate_reader(
                "f",
                input.as_slice(),
                &schemas,
                &Options {
                    profile: Some(profile),
                    blob_dir: None,
                },
            );
            let reported: BTreeSet<u64> = findings
                .iter()
                .filter(|f| f.level == Level::Error)
                .map(|f| f.line as u64)
                .collect();
            let missing: Vec<&u64> = bad.difference(&reported).collect();
            assert!(
                missing.is_empty(),
                "{} ({profile}): lines {missing:?} not reported; findings: {findings:#?}",
                case.full_name()
            );
            checked += 1;
        }
    }
    assert!(checked > 20, "only {checked} malformed inputs checked");
}
