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

use crate::corpus::Case;

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

/// Which corpus a run ran: its number of cases and the hash of the files its cases
/// read, so two reports say whether they ran the same cases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorpusVersion {
    /// Cases (folders holding a `case.json`).
    pub cases: usize,
    /// SHA-256 of the files the cases read, as lowercase hex (`corpus/README.md`,
    /// "Version"); empty when they could not be hashed (`problem` says why).
    pub sha256: String,
    /// Why the files could not be hashed (a file gone or changed since the cases were
    /// read); `None` when `sha256` is the hash.
    pub problem: Option<String>,
}

impl CorpusVersion {
    /// A corpus of `cases` cases whose files could not be hashed, and why: a run keeps its
    /// results and says so (`sha256` `null` and the `problem` in the JSON header).
    pub fn unhashed(cases: usize, problem: String) -> CorpusVersion {
        CorpusVersion {
            cases,
            sha256: String::new(),
            problem: Some(problem),
        }
    }

    /// The version as the JSON report's header writes it: `{"cases": N, "sha256": "…"}`,
    /// or `{"cases": N, "sha256": null, "problem": "…"}` when it could not be hashed.
    pub fn to_json(&self) -> serde_json::Value {
        match &self.problem {
            None => serde_json::json!({"cases": self.cases, "sha256": self.sha256}),
            Some(problem) => {
                serde_json::json!({"cases": self.cases, "sha256": null, "problem": problem})
            }
        }
    }
}

impl fmt::Display for CorpusVersion {
    /// `861 cases, sha256 0123456789ab` (the hash's first 12 digits), or
    /// `861 cases, not hashed (why)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(problem) = &self.problem {
            return write!(f, "{} cases, not hashed ({problem})", self.cases);
        }
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
        problem: None,
    }
}

/// The version of the corpus in `cases_dir` whose cases the loader read as `cases`:
/// the SHA-256 of the records (`format.rs`) of the files the cases read, in the byte
/// order of their paths relative to `cases_dir` (`/`-separated): each case's
/// `case.json`, its goldens (`format::GOLDENS`) and its input files (`input/…`, with
/// the bytes the loader read). A case file or golden counts when it is a regular file
/// (not a link) of at most [`crate::guard::MAX_FILE_BYTES`], the only kind the loader
/// reads. Files no case reads are not opened, so a stray file (a huge one, an
/// unreadable one) changes neither the hash nor its cost. `build.rs` hashes the same
/// files of the corpus it embeds (`format::read_by_a_case`).
///
/// An error (a case's `case.json` gone, a file changed while it was read) names the file.
pub fn version_of(cases_dir: &Path, cases: &[Case]) -> Result<CorpusVersion, BundleError> {
    let mut files: Vec<(String, Hashed)> = Vec::new();
    for case in cases {
        let rel = case.dir.strip_prefix(cases_dir).unwrap_or(&case.dir);
        let mut prefix: String = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        if !prefix.is_empty() {
            prefix.push('/');
        }
        let case_file = case.dir.join("case.json");
        // The loader read it: gone now is an error, a link or special file was refused.
        if is_hashed(&case_file, true)? {
            files.push((format!("{prefix}case.json"), Hashed::File(case_file)));
        }
        for golden in format::GOLDENS {
            let path = case.dir.join(golden);
            if is_hashed(&path, false)? {
                files.push((format!("{prefix}{golden}"), Hashed::File(path)));
            }
        }
        for (name, bytes) in &case.inputs {
            files.push((format!("{prefix}input/{name}"), Hashed::Bytes(bytes)));
        }
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let mut hasher = Sha256::new();
    for (name, source) in files {
        match source {
            Hashed::Bytes(bytes) => format::hash_record(&mut hasher, &name, bytes),
            Hashed::File(path) => hash_file(&mut hasher, &name, &path)?,
        }
    }
    Ok(CorpusVersion {
        cases: cases.len(),
        sha256: format::hex(&hasher.finalize()),
        problem: None,
    })
}

/// Where a hashed file's bytes come from.
enum Hashed<'a> {
    /// A file read now.
    File(PathBuf),
    /// Bytes the loader read (an input).
    Bytes(&'a [u8]),
}

/// Whether `path` is a file the hash covers: a regular file (not a link) within the
/// loader's limit. A missing file is not, unless `required`.
fn is_hashed(path: &Path, required: bool) -> Result<bool, BundleError> {
    match fs::symlink_metadata(path) {
        Ok(meta) => Ok(meta.is_file() && meta.len() <= crate::guard::MAX_FILE_BYTES),
        Err(e) if e.kind() == io::ErrorKind::NotFound && !required => Ok(false),
        Err(e) => Err(io_error(path)(e)),
    }
}

/// Feeds the record of the regular file at `path` to `hasher`, named `name`: opened
/// without waiting (a file swapped for a FIFO cannot hang it), read to the length it
/// had when opened.
fn hash_file(hasher: &mut Sha256, name: &str, path: &Path) -> Result<(), BundleError> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path).map_err(io_error(path))?;
    let meta = file.metadata().map_err(io_error(path))?;
    if !meta.is_file() || meta.len() > crate::guard::MAX_FILE_BYTES {
        return Err(BundleError::Changed(path.to_path_buf()));
    }
    let len = meta.len();
    hasher.update(format::record_head(
        name,
        usize::try_from(len).unwrap_or(usize::MAX),
    ));
    let copied = io::copy(&mut file.take(len), hasher).map_err(io_error(path))?;
    if copied != len {
        return Err(BundleError::Changed(path.to_path_buf()));
    }
    Ok(())
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
    // temp folder is shared: another user could plant a corpus under the name), and
    // only when it still holds exactly the bundle's files: a temp cleaner may have taken
    // some, or someone added some. A damaged copy is set aside and unpacked anew.
    if fs::symlink_metadata(&target).is_ok_and(|m| m.is_dir()) {
        owned_by_user(root)?;
        owned_by_user(&target)?;
        let bundle = Bundle::embedded()?;
        if holds_exactly(&target, &bundle) {
            return Ok(target);
        }
        set_aside_damaged(root, &target)?;
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

/// Whether `dir` holds exactly `bundle`'s files, byte for byte: no file missing,
/// changed or added, and nothing but folders and regular files (links are not followed).
fn holds_exactly(dir: &Path, bundle: &Bundle) -> bool {
    // As `write_into` writes them: the texts with their paths rewritten for the layout.
    let mut expected: std::collections::BTreeMap<&str, std::borrow::Cow<'_, [u8]>> = bundle
        .files()
        .map(|(name, content)| (name, layout::for_export(name, content)))
        .collect();
    for item in walkdir::WalkDir::new(dir).min_depth(1) {
        let Ok(item) = item else {
            return false;
        };
        if item.file_type().is_dir() {
            continue;
        }
        if !item.file_type().is_file() {
            return false;
        }
        let Some(name) = item
            .path()
            .strip_prefix(dir)
            .ok()
            .and_then(Path::to_str)
            .map(|n| n.replace(std::path::MAIN_SEPARATOR, "/"))
        else {
            return false;
        };
        let Some(want) = expected.remove(name.as_str()) else {
            return false;
        };
        let limit = u64::try_from(want.len()).unwrap_or(u64::MAX);
        match crate::guard::read_regular(item.path(), limit) {
            Ok(crate::guard::Contents::Bytes(bytes)) if bytes == *want => {}
            _ => return false,
        }
    }
    expected.is_empty()
}

/// Moves a damaged copy out of the way (`root/.damaged-…`) and removes it.
fn set_aside_damaged(root: &Path, target: &Path) -> Result<(), BundleError> {
    let aside = tempfile::Builder::new()
        .prefix(".damaged-")
        .tempdir_in(root)
        .map_err(io_error(root))?;
    let moved = aside.path().join("corpus");
    fs::rename(target, &moved).map_err(io_error(target))?;
    // Dropping `aside` removes it, the damaged copy with it.
    drop(aside);
    Ok(())
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

    /// The hash `build.rs` gives the embedded corpus is the one `version_of` gives its
    /// files unpacked and loaded: the two hash the same files in the same order.
    #[test]
    fn the_embedded_bundle_matches_its_version() {
        let bundle = Bundle::embedded().unwrap();
        assert_eq!(bundle.files.len(), built::FILES);
        let dir = tempfile::tempdir().unwrap();
        bundle.write_into(dir.path()).unwrap();
        let cases_dir = dir.path().join("cases");
        let cases = crate::corpus::load(&cases_dir).unwrap();
        assert_eq!(cases.len(), built::CASES);
        assert_eq!(version_of(&cases_dir, &cases).unwrap(), embedded_version());
    }

    /// The goldens hashed are the ones a case reads: `expected.json` and one per profile.
    #[test]
    fn the_goldens_hashed_are_the_ones_cases_read() {
        use session_reference::model::Profile;
        let names: Vec<String> = std::iter::once("expected.json".to_owned())
            .chain(
                Profile::ALL
                    .iter()
                    .map(|p| format!("expected.{}.json", p.name())),
            )
            .collect();
        assert_eq!(names, format::GOLDENS);
        assert!(format::read_by_a_case("g/a/input/x/input/y", |d| d == "g/a"));
        assert!(!format::read_by_a_case("g/b/input/x", |d| d == "g/a"));
        assert!(!format::read_by_a_case("input/x", |_| true));
        assert!(!format::read_by_a_case("g/a/notes.txt", |_| true));
        assert!(!format::read_by_a_case("case.json", |_| true));
    }

    /// Only the files the cases read are hashed, in path order; a stray file (a note, a
    /// file named like a golden of no profile, a terabyte sparse file) is not opened, and
    /// a case file gone since the load is an error naming it.
    #[test]
    fn version_of_hashes_what_the_cases_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let write = |rel: &str, text: &str| {
            let path = root.join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        };
        let case = r#"{"id":1,"name":"a","profiles":["pi"],"clauses":["loading.1"],"op":"load"}"#;
        write("g/a/case.json", case);
        write("g/a/expected.json", "{}");
        write("g/a/input/s.jsonl", "x\n");
        let cases = crate::corpus::load(root).unwrap();
        let expected = {
            let mut hasher = Sha256::new();
            format::hash_record(&mut hasher, "g/a/case.json", case.as_bytes());
            format::hash_record(&mut hasher, "g/a/expected.json", b"{}");
            format::hash_record(&mut hasher, "g/a/input/s.jsonl", b"x\n");
            format::hex(&hasher.finalize())
        };
        assert_eq!(version_of(root, &cases).unwrap().sha256, expected);
        write("README.md", "stray");
        write("g/a/notes.txt", "stray");
        write("g/a/expected.nope.json", "stray");
        fs::File::create(root.join("g/big.img"))
            .unwrap()
            .set_len(1 << 40)
            .unwrap();
        assert_eq!(version_of(root, &cases).unwrap().sha256, expected);
        fs::remove_file(root.join("g/a/case.json")).unwrap();
        let err = version_of(root, &cases).unwrap_err();
        assert!(err.to_string().contains("g/a/case.json"), "{err}");
    }

    /// What a test does to a cached copy: the folder and one of its files.
    type Damage = fn(&Path, &str);

    /// A damaged cached copy (a file deleted, as a temp cleaner does; one changed; one
    /// added; a link in place of a file) is unpacked anew, not trusted as it is.
    #[test]
    fn a_damaged_cache_is_unpacked_anew() {
        let root = tempfile::tempdir().expect("dir");
        let bundle = Bundle::embedded().expect("the bundle");
        let (first, _) = bundle.files().next().expect("a file");
        let first = first.to_owned();
        let damages: [(&str, Damage); 4] = [
            ("deleted", |dir, name| {
                fs::remove_file(dir.join(name)).expect("removed");
            }),
            ("changed", |dir, name| {
                fs::write(dir.join(name), "x").expect("written");
            }),
            ("added", |dir, _| {
                fs::write(dir.join("cases/extra"), "x").expect("written");
            }),
            ("linked", |dir, name| {
                let path = dir.join(name);
                fs::remove_file(&path).expect("removed");
                std::os::unix::fs::symlink("/dev/null", &path).expect("linked");
            }),
        ];
        for (what, damage) in damages {
            let dir = unpack_in(root.path(), "corpus-test").expect("unpacked");
            assert!(holds_exactly(&dir, &bundle), "{what}: fresh");
            damage(&dir, &first);
            assert!(!holds_exactly(&dir, &bundle), "{what}: damaged");
            let again = unpack_in(root.path(), "corpus-test").expect("unpacked");
            assert_eq!(again, dir);
            assert!(holds_exactly(&again, &bundle), "{what}: unpacked anew");
        }
        let left: Vec<_> = fs::read_dir(root.path()).expect("read").collect();
        assert_eq!(
            left.len(),
            1,
            "only the copy, no damaged one left: {left:?}"
        );
    }
}
