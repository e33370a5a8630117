//! What every operation of the reference adapter stands on: the request's case directory
//! (checked, and names inside it), the session [`Options`] over it (writing only inside
//! it, with the [`FaultyStorage`] of the request's faults), and the protocol's error kind for a
//! [`SessionError`].

use std::path::{Path, PathBuf};

use session_reference::model::Profile;
use session_reference::session::{Options, SessionError};

use super::confined::Confined;
use crate::faults::{Fault, FaultyStorage};
use crate::protocol::ErrorKind;

/// The protocol's error kind for a session error.
pub fn error_kind(error: &SessionError) -> &'static str {
    match error {
        SessionError::NotFound(_) => ErrorKind::NotFound,
        SessionError::InvalidSource(_) => ErrorKind::InvalidSource,
        SessionError::Persistence { .. } => ErrorKind::Persistence,
        SessionError::InvalidName(_) => ErrorKind::InvalidName,
        _ => ErrorKind::Exception,
    }
    .name()
}

/// Session options for a case directory: cwd `dir`, sessions in `dir/sessions`, blobs in
/// `dir/home/.omp/agent/blobs`, and a storage that refuses to write outside `dir`
/// ([`Confined`]), whatever path the reference works out.
pub fn options(dir: &Path, profile: Profile) -> Options {
    let mut options = Options::new(profile, dir.to_string_lossy(), dir.join("sessions"));
    options.blob_dir = dir.join("home/.omp/agent/blobs");
    options.storage = Box::new(Confined::new(dir, options.storage));
    options
}

/// Checks a request's `dir` as `PROTOCOL.md` states it: an absolute path of a folder
/// that exists (not a link to one). The reference never creates it, so a request cannot
/// make it write where the runner did not make room.
pub(super) fn case_dir(dir: &Path) -> Result<(), String> {
    if !dir.is_absolute() {
        return Err(format!(
            "dir {:?} is not an absolute path; the runner makes a fresh folder for each case",
            dir.display()
        ));
    }
    // Without a trailing `/`, which would make the look follow a link.
    let dir: PathBuf = dir.components().collect();
    match std::fs::symlink_metadata(&dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(meta) => Err(format!(
            "dir {:?} is a {}, not a folder",
            dir.display(),
            crate::guard::kind_name(meta.file_type())
        )),
        Err(e) => Err(format!("dir {:?}: {e}", dir.display())),
    }
}

/// [`options`] whose storage raises `faults` (`PROTOCOL.md` "Faults"): one
/// [`FaultyStorage`] over the file storage, shared by every session the request opens.
pub(super) fn options_with(
    dir: &Path,
    profile: Profile,
    faults: Option<&FaultyStorage>,
) -> Options {
    let mut options = options(dir, profile);
    if let Some(storage) = faults {
        options.storage = Box::new(Confined::new(dir, Box::new(storage.clone())));
    }
    options
}

/// The faulty storage of a request's faults; `None` when it has none.
pub(super) fn faulty(dir: &Path, faults: &[Fault]) -> Option<FaultyStorage> {
    (!faults.is_empty()).then(|| FaultyStorage::new(dir, faults))
}

/// `name` inside the case directory `dir`: a path that is absolute or climbs out with
/// `..` is refused, so no request makes the reference touch a file outside its case.
pub fn inside(dir: &Path, name: &str) -> Result<PathBuf, SessionError> {
    crate::guard::inside(dir, name).map_err(|e| SessionError::Io {
        path: PathBuf::from(name),
        message: e.to_string(),
    })
}
