//! The v2 blob format (docs/FORMAT.md part II): the same symbols as v1 in
//! about a fifth of the bytes, with a header, a section directory and a
//! CRC32C per section, plus what v1 has no field for: module names, the
//! text bounds and the kernel's identity.
//!
//! [`layout`] holds the constants and bit-level helpers the writer and the
//! reader share; [`read`] is the zero-copy `no_std` reader and [`lines`] its
//! reader of the optional source lines and inline frames. With `std`,
//! [`write`](mod@write) builds a blob, [`pairs`] learns its pair-merged token table
//! and [`lines_write`] encodes the `lines` section.

pub mod layout;
pub mod lines;
pub mod read;

#[cfg(feature = "std")]
pub mod lines_write;
#[cfg(feature = "std")]
pub mod pairs;
#[cfg(feature = "std")]
pub mod write;

pub use read::KallsymsV2;
