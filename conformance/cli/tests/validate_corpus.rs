//! `validate` against the corpus: every line the reference skips or rejects when
//! loading a corpus input is reported by `validate` as an error on that line.

use std::collections::BTreeSet;

use session_conformance::corpus;
use session_conformance_cli::validate::{validate_reader, Level, Options, Schemas};
use session_reference::model::Profile;

#[test]
fn every_malformed_corpus_line_is_reported_at_its_line() {
    let schemas = Schemas::new();
    let mut checked = 0;
    for case in corpus::load(std::path::Path::new("../../corpus/cases")).unwrap() {
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

#[test]
fn files_written_by_implementations_validate_without_errors() {
    let schemas = Schemas::new();
    let mut checked = 0;
    for case in corpus::load(std::path::Path::new("../../corpus/cases")).unwrap() {
        // Files written by the real implementations (real/) and by the reference from generated calls (regression/).
        if case.group != "real" && case.group != "regression" {
            continue;
        }
        // omp 18.2.3 writes a title slot before the header, which document 000 does not
        // allow: its files are tagged bad-header, and `validate` says so.
        if case.file.tags.iter().any(|t| t == "bad-header") {
            continue;
        }
        let Some(input) = case.inputs.get("session.jsonl") else {
            continue;
        };
        // Each file is in its writer's dialect: let validate decide the profile.
        let (findings, profile) = validate_reader(
            "f",
            input.as_slice(),
            &schemas,
            &Options {
                profile: None,
                blob_dir: None,
            },
        );
        let errors: Vec<_> = findings
            .iter()
            .filter(|f| f.level == Level::Error)
            .collect();
        assert!(
            errors.is_empty(),
            "{} ({profile}): {errors:#?}",
            case.full_name()
        );
        // A file is decided pi by an entry only pi writes (`session_info`, a
        // `model_change` with `modelId`); one without such entries reads the same in both.
        if case.file.name.starts_with("pi-mono-written") {
            assert_eq!(profile, Profile::Pi, "{}", case.full_name());
        }
        if profile == Profile::Pi {
            assert!(
                case.file.name.starts_with("pi-"),
                "{}: decided {profile}",
                case.full_name()
            );
        }
        checked += 1;
    }
    assert!(checked >= 4, "only {checked} files checked");
}
