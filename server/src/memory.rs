//! The allocator's policy for a process that runs for hours.
//!
//! glibc serves a large allocation from its own mapping and unmaps it when freed, until
//! the first such free: then it raises that threshold to the freed size and keeps later
//! large blocks in its heaps, where freed memory mostly stays with the process. Every model
//! request builds its body (the whole conversation, hundreds of kilobytes late in a
//! session) and drops it, so a long session's resident memory crept up with the largest
//! bodies it had sent. Fixing the thresholds keeps the default behaviour for good: blocks
//! of 128 KiB and more are mapped and go back to the system when dropped.

/// The size from which a block has a mapping of its own, and the free space at the top of
/// a heap from which the heap is trimmed: glibc's defaults, fixed.
const LARGE_BLOCK: i32 = 128 * 1024;

/// Sets the policy; call once, first thing.
pub(crate) fn return_large_blocks_to_the_system() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes settings of glibc's allocator, under its own locks; the
    // values are in range.
    #[allow(unsafe_code)]
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, LARGE_BLOCK);
        libc::mallopt(libc::M_TRIM_THRESHOLD, LARGE_BLOCK);
    }
}
