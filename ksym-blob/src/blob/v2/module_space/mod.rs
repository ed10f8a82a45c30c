//! The v2 `module_space` section (docs/FORMAT.md §16): kernel modules'
//! symbols, source lines and inline frames, each executable section of each
//! module at its own base in one address space of their own. [`read`] is
//! the `no_std` view; with `std`, [`write`](mod@write) lays the table out.

pub mod read;
#[cfg(feature = "std")]
pub mod write;
