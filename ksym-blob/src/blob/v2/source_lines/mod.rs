//! The v2 `lines` section (docs/FORMAT.md §15): source lines and inline
//! frames by address. [`read`] is the `no_std`, allocation-free reader a
//! kernel can use at panic time; with `std`, [`write`](mod@write) encodes a
//! [`SourceTable`](write::SourceTable) that `ksym::dwarf` extracts. With
//! feature `coded-lines`, `coded` decodes the Huffman-coded rows the host
//! tools write (§15.6).

#[cfg(feature = "coded-lines")]
pub mod coded;
#[cfg(feature = "std")]
mod coded_write;
pub mod read;
#[cfg(feature = "std")]
pub mod write;
