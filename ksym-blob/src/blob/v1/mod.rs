//! The v1 blob format, the seed's (docs/FORMAT.md part I): [`layout`] holds
//! its constants and token-reference coding, [`read`] is the zero-copy
//! `no_std` reader; with `std`, [`tokens`] chooses the prefix-token table and
//! [`write`](mod@write) builds the blob.

pub mod layout;
#[cfg(feature = "v1")]
pub mod read;

#[cfg(feature = "std")]
pub mod tokens;
#[cfg(feature = "std")]
pub mod write;

#[cfg(feature = "v1")]
pub use read::KallsymsMapped;
