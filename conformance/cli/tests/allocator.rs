//! The allocator setting the binary makes at start (its own process: no other test
//! may have made it before).

use session_conformance_cli::allocator::{keep_freed_memory, purge_delay};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[test]
fn purging_is_turned_off_through_the_right_option() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return; // the environment's setting is kept, and it hides the default
    }
    // 10 ms, mimalloc v2's default: the option's position is the right one.
    assert_eq!(purge_delay(), 10);
    #[allow(unsafe_code)]
    // SAFETY: the only test of this binary; libtest's main thread waits for it.
    unsafe {
        keep_freed_memory();
    }
    assert_eq!(purge_delay(), -1);
}
