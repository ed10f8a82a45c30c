//! Address normalization, before symbolization (blazesym's split): which
//! binary a process's runtime address belongs to, and the link-time
//! address it has in that binary's blob.
//!
//! - [`maps`]: `/proc/PID/maps` and a binary's load bias.
//! - [`offsets`]: sanitizers' `(PATH+0xOFF)` and glibc's `PATH(+0xOFF)`
//!   frames;
//! - [`perf`]: perf's DSO-relative (file offset) frames and its build-id
//!   records.

pub mod maps;
pub mod offsets;
pub mod perf;
