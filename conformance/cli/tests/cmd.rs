//! The CLI tests that are data: each `tests/cmd/*.toml` is one run of `session-conformance`
//! (its arguments, stdin, environment), and the stdout, stderr and exit code it must give.
//! See tests/cmd/README.md; `TRYCMD=overwrite cargo test -p session-conformance-cli --test cmd`
//! rewrites the expected outputs from what the binary prints now.

use std::path::{Path, PathBuf};

#[test]
fn cli_cases() {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_session-conformance"));
    // A case that runs the binary as its own adapter (`--adapter session-conformance --
    // serve`) finds it on PATH.
    let dir = bin.parent().expect("the binary's folder");
    let path = std::env::join_paths(std::iter::once(dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("PATH");
    // The corpus the binary carries is unpacked here, not in the user's cache.
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cmd-cache");
    trycmd::TestCases::new()
        .register_bin("session-conformance", bin)
        .default_bin_name("session-conformance")
        .env("PATH", path.to_string_lossy())
        .env("XDG_CACHE_HOME", cache.to_string_lossy())
        .case("tests/cmd/*.toml");
}
