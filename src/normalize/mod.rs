//! Address normalization, before symbolization (blazesym's split): which
//! binary a process's runtime address belongs to, and the link-time
//! address it has in that binary's blob.
//!
//! - [`maps`]: `/proc/PID/maps` and a binary's load bias.
//! - [`offsets`]: sanitizers' `(PATH+0xOFF)` and glibc's `PATH(+0xOFF)`
//!   frames;
//! - [`perf`]: perf's DSO-relative (file offset) frames and its build-id
//!   records;
//! - [`perf_map`]: JIT symbol maps (`/tmp/perf-PID.map`), whose frames
//!   perf prints at their runtime address.

pub mod maps;
pub mod offsets;
pub mod perf;
pub mod perf_map;
