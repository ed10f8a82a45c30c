//! The v2 blob format (docs/FORMAT.md part II): the same symbols as v1 in
//! about a sixth of the bytes, with a header, a section directory and a
//! CRC32C per section, plus what v1 has no field for: module names, the
//! text bounds, the kernel's identity and source lines.
//!
//! [`layout`] holds the constants and bit-level helpers the writer and the
//! reader share, [`names`] the coded names, [`read`] the zero-copy `no_std`
//! reader and [`source_lines`] the optional `lines` section (its reader, and
//! with `std` its encoder). With `std`, [`write`](mod@write) builds a blob,
//! [`pairs`] learns its pair-code token table and [`bits`] packs bits,
//! varints and token tables for both writers.

pub mod layout;
#[cfg(feature = "modules")]
pub mod module_space;
#[cfg(feature = "v2")]
pub mod names;
#[cfg(feature = "v2")]
pub mod read;
#[cfg(feature = "lines")]
pub mod source_lines;

#[cfg(feature = "std")]
pub mod bits;
#[cfg(feature = "std")]
pub mod pairs;
#[cfg(feature = "std")]
pub mod write;

#[cfg(feature = "v2")]
pub use read::KallsymsV2;
