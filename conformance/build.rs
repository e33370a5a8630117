//! Packs the corpus (`corpus/cases`, `corpus/README.md`), the schemas (`schemas/`), the
//! specification the cases cite (`docs/spec/`, as `spec/`) and the adapter protocol
//! (`PROTOCOL.md`) into one compressed bundle in `OUT_DIR`, which the library embeds
//! (`bundle` module), and names the corpus's version for `--version`. Files are taken in
//! path order, so the same files give the same bytes.
//!
//! The sources are read through `bundled/`, whose links name the repository's folders, so
//! a packaged crate (which holds copies where the links were) builds the same bundle;
//! where links are not made (a checkout without symlinks), the repository's own paths.

use std::fs;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

#[allow(dead_code)] // the CLI reads what is written here; build.rs uses the writer
#[path = "src/bundle/format.rs"]
mod format;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let cases_dir = source(&manifest, "cases", "corpus/cases");
    let readme = source(&manifest, "README.md", "corpus/README.md");
    let schemas_dir = source(&manifest, "schemas", "schemas");
    let spec_dir = source(&manifest, "spec", "docs/spec");
    let protocol = manifest.join("PROTOCOL.md");
    for path in [&cases_dir, &readme, &schemas_dir, &spec_dir, &protocol] {
        // The real path, so cargo watches the files themselves rather than a link.
        let watched = fs::canonicalize(path).unwrap_or_else(|_| path.clone());
        println!("cargo:rerun-if-changed={}", watched.display());
    }
    println!("cargo:rerun-if-changed=src/bundle/format.rs");

    let cases = files_under(&cases_dir);
    // The corpus's hash covers the files its cases read, as `bundle::version_of` does.
    let case_dirs: std::collections::BTreeSet<&str> = cases
        .iter()
        .filter(|(path, _)| is_case_file(path))
        .filter_map(|(path, _)| path.rsplit_once('/').map(|(dir, _)| dir))
        .collect();
    let schemas = files_under(&schemas_dir);
    let spec = files_under(&spec_dir);
    let mut unpacked = format::MAGIC.to_vec();
    let mut hasher = Sha256::new();
    let mut case_count = 0usize;
    for (path, content) in &cases {
        format::write_record(&mut unpacked, &format!("cases/{path}"), content);
        if format::read_by_a_case(path, |dir| case_dirs.contains(dir)) {
            format::hash_record(&mut hasher, path, content);
        }
        if is_case_file(path) {
            case_count += 1;
        }
    }
    let readme_bytes = fs::read(&readme)
        .unwrap_or_else(|e| panic!("{}: {e}; the bundle needs it", readme.display()));
    format::write_record(&mut unpacked, "README.md", &readme_bytes);
    for (path, content) in &schemas {
        format::write_record(&mut unpacked, &format!("schemas/{path}"), content);
    }
    for (path, content) in &spec {
        format::write_record(&mut unpacked, &format!("spec/{path}"), content);
    }
    let protocol_bytes = fs::read(&protocol)
        .unwrap_or_else(|e| panic!("{}: {e}; the bundle needs it", protocol.display()));
    format::write_record(&mut unpacked, "PROTOCOL.md", &protocol_bytes);
    let corpus_sha = format::hex(&hasher.finalize());
    let packed = miniz_oxide::deflate::compress_to_vec_zlib(&unpacked, 9);
    let bundle_sha = format::hex(&Sha256::digest(&packed));

    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    write(&out.join("bundle.zlib"), &packed);
    let constants = format!(
        "/// Cases in the corpus the binary carries.\n\
         pub const CASES: usize = {case_count};\n\
         /// That corpus's sha256 (`bundle/format.rs`).\n\
         pub const SHA256: &str = \"{corpus_sha}\";\n\
         /// The SHA-256 of the compressed bundle, which names its cache folder.\n\
         pub const BUNDLE_SHA256: &str = \"{bundle_sha}\";\n\
         /// The bundle's length unpacked.\n\
         pub const UNPACKED_LEN: usize = {};\n\
         /// Files in the bundle.\n\
         pub const FILES: usize = {};\n",
        unpacked.len(),
        cases.len() + schemas.len() + spec.len() + 2,
    );
    write(&out.join("bundle.rs"), constants.as_bytes());
    println!(
        "cargo:rustc-env=SESSION_CONFORMANCE_LONG_VERSION={} (corpus {case_count} cases, sha256 {})",
        std::env::var("CARGO_PKG_VERSION").unwrap_or_default(),
        &corpus_sha[..12]
    );
}

/// The folder or file `bundled/NAME`, a link into the repository (or, in a packaged
/// crate, the copy `cargo package` made of it); else, where the checkout made no links,
/// `../REPOSITORY` itself.
fn source(manifest: &Path, bundled: &str, repository: &str) -> PathBuf {
    let linked = manifest.join("bundled");
    if linked.join("cases").is_dir() {
        linked.join(bundled)
    } else {
        manifest.join("..").join(repository)
    }
}

/// Whether `path` (relative to the cases folder) is a case's `case.json`, counted as the
/// runner finds cases: inside a folder, never inside an `input` folder.
fn is_case_file(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    parts.len() >= 2
        && parts.last() == Some(&"case.json")
        && !parts[..parts.len() - 1].contains(&"input")
}

/// Every regular file under `dir` as (path relative to it with `/`, content), sorted by
/// path. Links and special files are left out, as the corpus's hash leaves them out.
fn files_under(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), String::new())];
    while let Some((folder, prefix)) = stack.pop() {
        let entries = fs::read_dir(&folder)
            .unwrap_or_else(|e| panic!("{}: {e}; the bundle needs it", folder.display()));
        for entry in entries {
            let entry = entry.unwrap_or_else(|e| panic!("{}: {e}", folder.display()));
            let name = entry.file_name().into_string().unwrap_or_else(|n| {
                panic!(
                    "{}: a file name that is not UTF-8: {}",
                    folder.display(),
                    n.display()
                )
            });
            let rel = format!("{prefix}{name}");
            let kind = entry
                .file_type()
                .unwrap_or_else(|e| panic!("{}: {e}", entry.path().display()));
            if kind.is_dir() {
                stack.push((entry.path(), format!("{rel}/")));
            } else if kind.is_file() {
                let content = fs::read(entry.path())
                    .unwrap_or_else(|e| panic!("{}: {e}", entry.path().display()));
                files.push((rel, content));
            }
        }
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    files
}

fn write(path: &Path, bytes: &[u8]) {
    fs::write(path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}
