//! Address normalization, before symbolization (blazesym's split): which
//! binary a process's runtime address belongs to, and the link-time
//! address it has in that binary's blob.
//!
//! - [`fault`]: the kernel's reports of a user-space fault (`segfault at
//!   … in NAME[…]`);
//! - [`maps`]: `/proc/PID/maps` and a binary's load bias;
//! - [`offsets`]: sanitizers' `(PATH+0xOFF)` and glibc's `PATH(+0xOFF)`
//!   frames;
//! - [`perf`]: perf's DSO-relative (file offset) frames and its build-id
//!   records;
//! - [`perf_map`]: JIT symbol maps (`/tmp/perf-PID.map`), whose frames
//!   perf prints at their runtime address.

pub mod fault;
pub mod maps;
pub mod offsets;
pub mod perf;
pub mod perf_map;

/// A load segment whose file and memory sizes agree (unit tests).
#[cfg(test)]
fn test_segment(
    vaddr: u64,
    offset: u64,
    filesz: u64,
    flags: u32,
) -> crate::blob::v2::read::LoadSegment {
    crate::blob::v2::read::LoadSegment {
        vaddr,
        offset,
        filesz,
        memsz: filesz,
        flags,
    }
}
