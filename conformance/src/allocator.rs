//! Settings of mimalloc, the allocator of the `session-conformance` binary and of the
//! throughput bench (their `#[global_allocator]`).
//!
//! mimalloc returns memory to the system a second after it is freed ("purging").
//! A harness run starts new job threads, whose heaps then fault that memory in
//! again; with transparent huge pages each fault zeroes 2 MiB. Interleaved runs
//! of omp's share of the corpus in persistent mode with 2 jobs, on the project's
//! 2-CPU machine, took about 12% less CPU time and wall time with purging off
//! (`BENCHMARKS.md`). The memory a run frees is reused by the next run instead.
//!
//! This is the crate's one `unsafe` block: an FFI call that sets an integer option.

/// mimalloc's `mi_option_purge_delay`: its position in `mi_option_e` (mimalloc.h,
/// v3). The milliseconds before freed memory is returned to the system; -1 is never.
/// A test checks the position against the option's documented default.
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Keeps memory freed by this process for reuse instead of returning it to the
/// system. Call it first in `main`; without mimalloc as the global allocator it
/// has no effect. `MIMALLOC_PURGE_DELAY` in the environment still wins, as
/// mimalloc's settings are read from it at start and this only changes the default.
pub fn keep_freed_memory() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    #[allow(unsafe_code)]
    // SAFETY: `mi_option_set` stores an integer in mimalloc's option table (an
    // atomic store); every value is valid for this option.
    unsafe {
        libmimalloc_sys::mi_option_set(PURGE_DELAY, -1);
    }
}

/// The purge delay mimalloc uses now, in milliseconds (-1: never).
pub fn purge_delay() -> std::os::raw::c_long {
    #[allow(unsafe_code)]
    // SAFETY: `mi_option_get` reads an integer from mimalloc's option table.
    unsafe {
        libmimalloc_sys::mi_option_get(PURGE_DELAY)
    }
}
