//! Address normalization, before symbolization (blazesym's split): which
//! binary a process's runtime address belongs to, and the link-time
//! address it has in that binary's blob.
//!
//! - [`maps`]: `/proc/PID/maps` and a binary's load bias.

pub mod maps;
