//! The v2 blob format (docs/FORMAT.md part II): the same symbols as v1 in
//! about a fifth of the bytes, with a header, a section directory and a
//! CRC32C per section, plus what v1 has no field for: module names, the
//! text bounds and the kernel's identity.
//!
//! [`layout`] holds the constants and bit-level helpers the writer and the
//! reader share; [`read`] is the zero-copy `no_std` reader. With `std`,
//! [`write`] builds a blob and [`pairs`] learns its pair-merged token table.

pub mod layout;
pub mod read;

#[cfg(feature = "std")]
pub mod pairs;
#[cfg(feature = "std")]
pub mod write;

pub use read::KallsymsV2;
