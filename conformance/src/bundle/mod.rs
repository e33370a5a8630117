//! The corpus, the schemas, the specification and the protocol the binary carries:
//! `build.rs` packs `corpus/cases`, `corpus/README.md`, `schemas/`, `docs/spec/` and
//! `PROTOCOL.md` into one compressed bundle (`format.rs`), embedded here; the CLI unpacks
//! it once into a cache folder named by its hash when no corpus is given or found, and
//! `corpus export` writes it out for harnesses in other languages, its texts' paths
//! rewritten for that layout (`layout.rs`).
//!
//! ```
//! let version = session_conformance::bundle::embedded_version();
//! assert!(version.cases > 0);
//! assert_eq!(version.sha256.len(), 64);
//! ```

use std::fmt;
use std::fs;
use std::io::{self, Read, Write};
use std::ops::Range;
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

#[allow(dead_code)] // `write_record` is the build script's
mod format;
mod layout;

/// Constants `build.rs` wrote: the embedded corpus's version and the bundle's size.
#[allow(dead_code, clippy::unreadable_literal)] // `FILES` is for the tests; generated numbers
mod built {
    include!(concat!(env!("OUT_DIR"), "/bundle.rs"));
}

/// The compressed bundle.
static BUNDLE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/bundle.zlib"));

/// `--version`'s text: the crate's version and the embedded corpus's.
pub const LONG_VERSION: &str = env!("SESSION_CONFORMANCE_LONG_VERSION");

/// Which corpus a run ran: its number of cases and the hash of its files, so two
/// reports say whether they ran the same cases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorpusVersion {
    /// Cases (folders holding a `case.json`).
    pub cases: usize,
    /// SHA-256 of the files of the cases folder, as lowercase hex (`corpus/README.md`, "Version").
    pub sha256: String,
}

impl CorpusVersion {
    /// The version as the JSON report's header writes it: `{"cases": N, "sha256": "…"}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"cases": self.cases, "sha256": self.sha256})
    }
}

impl fmt::Display for CorpusVersion {
    /// `861 cases, sha256 0123456789ab` (the hash's first 12 digits).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let short = self.sha256.get(..12).unwrap_or(&self.sha256);
        write!(f, "{} cases, sha256 {short}", self.cases)
    }
}

/// Why the bundle could not be unpacked or written out, or a corpus not hashed.
#[derive(Debug)]
#[non_exhaustive]
pub enum BundleError {
    /// The embedded bundle does not unpack (the binary is damaged): why.
    Corrupt(String),
    /// A path in the bundle would leave the folder it is written into.
    UnsafePath(String),
    /// A file or folder could not be read or written.
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The error.
        error: io::Error,
    },
    /// `corpus export`'s folder exists and is not an empty folder.
    NotEmpty(PathBuf),
    /// A file changed while it was hashed.
    Changed(PathBuf),
}

impl fmt::Display for BundleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BundleError::Corrupt(why) => write!(f, "the built-in corpus does not unpack: {why}"),
            BundleError::UnsafePath(path) => write!(
                f,
                "the built-in corpus names {path:?}, which would leave its folder"
            ),
            BundleError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            BundleError::NotEmpty(path) => write!(
                f,
                "{}: exists and is not an empty folder; name a new or empty one",
                path.display()
            ),
            BundleError::Changed(path) => {
                write!(f, "{}: changed while it was read", path.display())
            }
        }
    }
}

impl std::error::Error for BundleError {}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> BundleError + '_ {
    move |error| BundleError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// The version of the corpus the binary carries (worked out when it was built).
pub fn embedded_version() -> CorpusVersion {
    CorpusVersion {
        cases: built::CASES,
        sha256: built::SHA256.to_owned(),
    }
}

/// The version of the corpus in `cases_dir` holding `cases` cases: the SHA-256 of its
/// regular files' records in path order (links and special files are left out, as the
/// runner never follows them out of the corpus).
pub fn version_of(cases_dir: &Path, cases: usize) -> Result<CorpusVersion, BundleError> {
    let mut files = Vec::new();
    for item in walkdir::WalkDir::new(cases_dir).min_depth(1) {
        let item = item.map_err(|e| BundleError::Io {
            path: e.path().unwrap_or(cases_dir).to_path_buf(),
            error: e.into(),
        })?;
        if !item.file_type().is_file() {
            continue;
        }
        let rel = item.path().strip_prefix(cases_dir).unwrap_or(item.path());
        let name: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        files.push((name.join("/"), item.into_path()));
    }
    files.sort();
    let mut hasher = Sha256::new();
    for (name, path) in files {
        let file = fs::File::open(&path).map_err(io_error(&path))?;
        let len = file.metadata().map_err(io_error(&path))?.len();
        hasher.update(format::record_head(
            &name,
            usize::try_from(len).unwrap_or(usize::MAX),
        ));
        let copied = io::copy(&mut file.take(len), &mut hasher).map_err(io_error(&path))?;
        if copied != len {
            return Err(BundleError::Changed(path));
        }
    }
    Ok(CorpusVersion {
        cases,
        sha256: format::hex(&hasher.finalize()),
    })
}

/// The bundle unpacked: its bytes and each file's path and range in them, in path order.
pub struct Bundle {
    bytes: Vec<u8>,
    files: Vec<(String, Range<usize>)>,
}

impl Bundle {
    /// Unpacks the embedded bundle, checking every path.
    pub fn embedded() -> Result<Bundle, BundleError> {
        Bundle::unpack(BUNDLE)
    }

    /// Unpacks a bundle (`format.rs`): a zlib stream, the magic line, then records. Every
    /// path must be relative and plain (no `..`, `.`, empty part, `\` or NUL).
    pub fn unpack(packed: &[u8]) -> Result<Bundle, BundleError> {
        let limit = built::UNPACKED_LEN.max(1 << 20).saturating_mul(2);
        let bytes = miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(packed, limit)
            .map_err(|e| BundleError::Corrupt(format!("{e:?}")))?;
        let rest = bytes
            .strip_prefix(format::MAGIC)
            .ok_or_else(|| BundleError::Corrupt("not a bundle".into()))?;
        let mut at = format::MAGIC.len();
        let mut files = Vec::new();
        let total = at + rest.len();
        while at < total {
            let path_len = le(&bytes, &mut at, 4)?;
            let path_end = at
                .checked_add(path_len)
                .filter(|&e| e <= total)
                .ok_or_else(|| BundleError::Corrupt("a path past the end".into()))?;
            let path = std::str::from_utf8(&bytes[at..path_end])
                .map_err(|_| BundleError::Corrupt("a path that is not UTF-8".into()))?
                .to_owned();
            at = path_end;
            let len = le(&bytes, &mut at, 8)?;
            let end = at
                .checked_add(len)
                .filter(|&e| e <= total)
                .ok_or_else(|| BundleError::Corrupt(format!("{path}: past the end")))?;
            if !is_plain(&path) {
                return Err(BundleError::UnsafePath(path));
            }
            files.push((path, at..end));
            at = end;
        }
        Ok(Bundle { bytes, files })
    }

    /// Every file as the repository holds it: its path (`cases/…`, `README.md`,
    /// `schemas/…`, `spec/…`, `PROTOCOL.md`) and content.
    pub fn files(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.files.iter().map(|(path, range)| {
            (
                path.as_str(),
                self.bytes.get(range.clone()).unwrap_or_default(),
            )
        })
    }

    /// The content of the file `name`, as the exported layout holds it.
    fn exported(&self, name: &str) -> Option<Vec<u8>> {
        let (_, content) = self.files().find(|(path, _)| *path == name)?;
        Some(layout::for_export(name, content).into_owned())
    }

    /// Writes every file under `dir` (which must exist) in the exported layout, creating
    /// folders; an existing file is never overwritten.
    pub fn write_into(&self, dir: &Path) -> Result<(), BundleError> {
        for (name, content) in self.files() {
            let content = layout::for_export(name, content);
            let path = dir.join(name);
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent).map_err(io_error(parent))?;
            }
            let mut file = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(io_error(&path))?;
            file.write_all(&content).map_err(io_error(&path))?;
        }
        Ok(())
    }
}

/// Reads a little-endian number of `width` bytes at `at` and moves past it.
fn le(bytes: &[u8], at: &mut usize, width: usize) -> Result<usize, BundleError> {
    let end = at.saturating_add(width);
    let slice = bytes
        .get(*at..end)
        .ok_or_else(|| BundleError::Corrupt("a record cut short".into()))?;
    *at = end;
    let value = slice
        .iter()
        .rev()
        .fold(0u128, |n, &b| (n << 8) | u128::from(b));
    usize::try_from(value).map_err(|_| BundleError::Corrupt("a length past memory".into()))
}

/// Whether `path` is relative and made of plain names only.
fn is_plain(path: &str) -> bool {
    !path.is_empty()
        && !path.contains(['\\', '\0', ':'])
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
}

/// The adapter protocol (`PROTOCOL.md`) the binary carries, as `corpus export` writes it.
pub fn protocol() -> Result<String, BundleError> {
    let bytes = Bundle::embedded()?
        .exported("PROTOCOL.md")
        .ok_or_else(|| BundleError::Corrupt("no PROTOCOL.md".into()))?;
    String::from_utf8(bytes).map_err(|_| BundleError::Corrupt("PROTOCOL.md is not UTF-8".into()))
}

/// Writes the bundle out into `dir` (`cases/…`, `README.md`, `schemas/…`, `spec/…`,
/// `PROTOCOL.md`): `dir` is created, or must be an empty folder.
pub fn export(dir: &Path) -> Result<usize, BundleError> {
    // Without a trailing `/`, which would make the look follow a link.
    let dir: PathBuf = dir.components().collect();
    let dir = dir.as_path();
    match fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => {
            let mut entries = fs::read_dir(dir).map_err(io_error(dir))?;
            if entries.next().is_some() {
                return Err(BundleError::NotEmpty(dir.to_path_buf()));
            }
        }
        Ok(_) => return Err(BundleError::NotEmpty(dir.to_path_buf())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::create_dir_all(dir).map_err(io_error(dir))?;
        }
        Err(e) => return Err(io_error(dir)(e)),
    }
    let bundle = Bundle::embedded()?;
    bundle.write_into(dir)?;
    Ok(bundle.files.len())
}

/// The folder the embedded bundle is unpacked in (`cases/`, `README.md`, `schemas/`, …),
/// unpacked on first use: `$XDG_CACHE_HOME/session-conformance/corpus-<hash>`, else
/// `~/.cache/session-conformance/…`, else a folder of this user's in the temp folder.
/// The files are written into a temp folder renamed into place, so a concurrent run sees
/// the whole corpus or none.
pub fn unpacked() -> Result<PathBuf, BundleError> {
    let name = format!("corpus-{}", &built::BUNDLE_SHA256[..16]);
    let mut last = None;
    for root in cache_roots() {
        match unpack_in(&root, &name) {
            Ok(dir) => return Ok(dir),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| BundleError::Corrupt("no folder to unpack into".into())))
}

/// The folders tried in turn for the cache (absolute paths only).
fn cache_roots() -> Vec<PathBuf> {
    let absolute = |var: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let mut roots = Vec::new();
    if let Some(xdg) = absolute("XDG_CACHE_HOME") {
        roots.push(xdg.join("session-conformance"));
    }
    if let Some(home) = absolute("HOME") {
        roots.push(home.join(".cache").join("session-conformance"));
    }
    roots.push(std::env::temp_dir().join(format!("session-conformance-{}", user())));
    roots
}

#[cfg(unix)]
fn user() -> u32 {
    rustix::process::getuid().as_raw()
}

#[cfg(not(unix))]
fn user() -> &'static str {
    "user"
}

/// `root/name`, unpacked there unless it already is.
fn unpack_in(root: &Path, name: &str) -> Result<PathBuf, BundleError> {
    let target = root.join(name);
    // A copy already there is used only when it is this user's, as its folder is (the
    // temp folder is shared: another user could plant a corpus under the name).
    if fs::symlink_metadata(&target).is_ok_and(|m| m.is_dir()) {
        owned_by_user(root)?;
        owned_by_user(&target)?;
        return Ok(target);
    }
    fs::create_dir_all(root).map_err(io_error(root))?;
    owned_by_user(root)?;
    let temp = tempfile::Builder::new()
        .prefix(&format!(".{name}-"))
        .tempdir_in(root)
        .map_err(io_error(root))?;
    Bundle::embedded()?.write_into(temp.path())?;
    match fs::rename(temp.path(), &target) {
        Ok(()) => Ok(target),
        // Another run put its copy there first.
        Err(_) if fs::symlink_metadata(&target).is_ok_and(|m| m.is_dir()) => {
            owned_by_user(&target)?;
            Ok(target)
        }
        Err(e) => Err(io_error(&target)(e)),
    }
}

/// Refuses a cache folder that is a link or someone else's (the temp folder is shared).
#[cfg(unix)]
fn owned_by_user(dir: &Path) -> Result<(), BundleError> {
    use std::os::unix::fs::MetadataExt;
    let meta = fs::symlink_metadata(dir).map_err(io_error(dir))?;
    if meta.is_dir() && meta.uid() == user() {
        Ok(())
    } else {
        Err(io_error(dir)(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "not a folder of this user's",
        )))
    }
}

#[cfg(not(unix))]
fn owned_by_user(_dir: &Path) -> Result<(), BundleError> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pack(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut bytes = format::MAGIC.to_vec();
        for (path, content) in files {
            format::write_record(&mut bytes, path, content);
        }
        miniz_oxide::deflate::compress_to_vec_zlib(&bytes, 1)
    }

    #[test]
    fn a_bundle_unpacks_to_its_files() {
        let bundle =
            Bundle::unpack(&pack(&[("cases/a/case.json", b"{}"), ("README.md", b"r")])).unwrap();
        let files: Vec<_> = bundle.files().collect();
        assert_eq!(
            files,
            [("cases/a/case.json", &b"{}"[..]), ("README.md", &b"r"[..])]
        );
    }

    #[test]
    fn paths_that_leave_the_folder_are_refused() {
        for bad in [
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a//b",
            "./a",
            "a\\..\\b",
            "",
        ] {
            let err = Bundle::unpack(&pack(&[(bad, b"x")])).err().unwrap();
            assert!(matches!(err, BundleError::UnsafePath(_)), "{bad}: {err}");
        }
    }

    #[test]
    fn damaged_bundles_are_errors_not_panics() {
        let good = pack(&[("a", b"xyz")]);
        for cut in 0..good.len() {
            assert!(Bundle::unpack(&good[..cut]).is_err());
        }
        let mut long = format::MAGIC.to_vec();
        long.extend_from_slice(&[255; 12]);
        let packed = miniz_oxide::deflate::compress_to_vec_zlib(&long, 1);
        assert!(matches!(
            Bundle::unpack(&packed),
            Err(BundleError::Corrupt(_))
        ));
    }

    /// Each path in backticks of an exported text that names this layout (`cases/…`,
    /// `spec/…`, `schemas/…`, `README.md`, `PROTOCOL.md`), placeholders left out.
    fn layout_paths(text: &str) -> Vec<&str> {
        text.split('`')
            .skip(1)
            .step_by(2)
            .filter(|quoted| {
                ["cases/", "spec/", "schemas/"]
                    .iter()
                    .any(|p| quoted.starts_with(p))
                    || ["README.md", "PROTOCOL.md"].contains(quoted)
            })
            .filter(|quoted| !quoted.contains(['<', '*', ' ', '{']))
            .collect()
    }

    #[test]
    fn the_exported_texts_name_the_exported_layout() {
        let bundle = Bundle::embedded().unwrap();
        let names: Vec<&str> = bundle.files().map(|(p, _)| p).collect();
        for text in ["README.md", "PROTOCOL.md"] {
            let exported = String::from_utf8(bundle.exported(text).unwrap()).unwrap();
            for stale in [
                "corpus/README.md",
                "corpus/cases/",
                "docs/spec/",
                "conformance/PROTOCOL.md",
            ] {
                assert!(!exported.contains(stale), "{text} still names {stale}");
            }
            let paths = layout_paths(&exported);
            assert!(!paths.is_empty(), "{text} names no path of the layout");
            for path in paths {
                let present = names
                    .iter()
                    .any(|n| *n == path || (path.ends_with('/') && n.starts_with(path)));
                assert!(
                    present,
                    "{text} names {path}, which the export does not hold"
                );
            }
        }
        assert_eq!(
            protocol().unwrap(),
            String::from_utf8(bundle.exported("PROTOCOL.md").unwrap()).unwrap()
        );
    }

    #[test]
    fn the_export_writes_the_protocol_and_rewritten_texts() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("kit");
        let written = export(&out).unwrap();
        assert_eq!(written, built::FILES);
        let protocol = fs::read_to_string(out.join("PROTOCOL.md")).unwrap();
        assert!(
            protocol.contains("`README.md` \"Version\""),
            "{protocol:.300}"
        );
        let readme = fs::read_to_string(out.join("README.md")).unwrap();
        assert!(readme.contains("cases/<group>/<name>/"));
    }

    /// `bundled/` links to the single sources; a copy in their place would drift.
    #[cfg(unix)]
    #[test]
    fn the_bundled_folder_links_to_the_repository() {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let repository = manifest.join("..");
        if !repository.join("corpus/cases").is_dir() {
            return; // a packaged crate: `bundled/` holds the copies cargo made
        }
        for (bundled, source) in [
            ("cases", "corpus/cases"),
            ("README.md", "corpus/README.md"),
            ("schemas", "schemas"),
            ("spec", "docs/spec"),
        ] {
            let link = manifest.join("bundled").join(bundled);
            let meta = fs::symlink_metadata(&link).unwrap();
            assert!(meta.is_symlink(), "{}: not a link", link.display());
            assert_eq!(
                fs::canonicalize(&link).unwrap(),
                fs::canonicalize(repository.join(source)).unwrap(),
                "{}",
                link.display()
            );
        }
    }

    #[test]
    fn the_embedded_bundle_matches_its_version() {
        let bundle = Bundle::embedded().unwrap();
        let cases = bundle
            .files()
            .filter(|(p, _)| p.starts_with("cases/") && p.ends_with("/case.json"))
            .count();
        assert_eq!(cases, built::CASES);
        assert_eq!(bundle.files.len(), built::FILES);
        let mut hasher = Sha256::new();
        for (path, content) in bundle.files() {
            if let Some(rel) = path.strip_prefix("cases/") {
                format::hash_record(&mut hasher, rel, content);
            }
        }
        assert_eq!(format::hex(&hasher.finalize()), built::SHA256);
    }
}
