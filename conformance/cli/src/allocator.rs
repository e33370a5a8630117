//! Settings of mimalloc, the allocator of the `session-conformance` binary and of the
//! throughput bench (their `#[global_allocator]`).
//!
//! The crate builds mimalloc v2 (the `v2` feature), not v3, the `mimalloc` crate's
//! default: v3 gives each size of large block its own pages and left pages of
//! finished threads half used, and a run of omp's share of the corpus as a new
//! process touched 70 MB with it, 40 MB with v2, for 5–10% less wall and CPU time
//! (`BENCHMARKS.md`). Memory touched for the first time costs a page fault, which
//! zeroes 2 MiB with transparent huge pages, and more on a virtual machine whose
//! host takes freed memory back.
//!
//! mimalloc returns memory to the system 10 ms after it is freed ("purging").
//! A harness run starts new job threads, whose heaps then fault that memory in
//! again. Interleaved runs of omp's share of the corpus in persistent mode with 2
//! jobs, on the project's 2-CPU machine, took about 12% less CPU time and wall time
//! with purging off (`BENCHMARKS.md`). The memory a run frees is reused by the next
//! run instead.
//!
//! These are two FFI calls to mimalloc's option table; with `guard::ignore_file_size_signal`
//! (one `signal` call), the crate's only `unsafe` code.

/// mimalloc's `mi_option_purge_delay`: its position in `mi_option_e` (mimalloc.h,
/// v2 and v3). The milliseconds before freed memory is returned to the system;
/// -1 is never. A test checks the position against v2's default, 10.
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// mimalloc v2's default purge delay, in milliseconds.
const DEFAULT_PURGE_DELAY: std::os::raw::c_long = 10;

/// Keeps memory freed by this process for reuse instead of returning it to the
/// system; without mimalloc as the global allocator it has no effect. A purge
/// delay set in the environment (`MIMALLOC_PURGE_DELAY`, or its older name
/// `MIMALLOC_RESET_DELAY`, which mimalloc reads at start) is kept: the delay is
/// changed only while it is still mimalloc's default.
///
/// # Safety
///
/// Call it first in `main`, before any other thread runs: mimalloc's options are
/// plain integers, and another thread allocating or freeing meanwhile would read
/// this one as it is written (a data race).
#[allow(unsafe_code)]
pub unsafe fn keep_freed_memory() {
    let set_outside = std::env::vars_os().any(|(name, _)| {
        name.to_str().is_some_and(|n| {
            n.eq_ignore_ascii_case("MIMALLOC_PURGE_DELAY")
                || n.eq_ignore_ascii_case("MIMALLOC_RESET_DELAY")
        })
    });
    if set_outside || purge_delay() != DEFAULT_PURGE_DELAY {
        return;
    }
    #[allow(unsafe_code)]
    // SAFETY: the caller runs this before any other thread (see above), so the
    // plain store into mimalloc's option table races with nothing; every value is
    // valid for this option.
    unsafe {
        libmimalloc_sys::mi_option_set(PURGE_DELAY, -1);
    }
}

/// The purge delay mimalloc uses now, in milliseconds (-1: never).
pub fn purge_delay() -> std::os::raw::c_long {
    #[allow(unsafe_code)]
    // SAFETY: `mi_option_get` reads an integer from mimalloc's option table; the
    // only writer is `keep_freed_memory`, which runs before any other thread.
    unsafe {
        libmimalloc_sys::mi_option_get(PURGE_DELAY)
    }
}
