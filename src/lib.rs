//! ksym: kernel symbol tables (kallsyms) as a compact blob that a kernel reads
//! in place, and the Unix-pipeline tools around it.
//!
//! The blob formats are `docs/FORMAT.md`: v1 (the seed's, part I) and v2
//! (ksym's compact, checksummed one, part II). Without the default `std`
//! feature the crate is `#![no_std]` and holds only the readers —
//! [`format`](mod@format) and [`reader`] (v1), [`v2`] (v2's layout and
//! reader) and [`blob`] (one view over both): what a kernel links to print
//! `func+0x1a` from a mapped blob, with no allocation.
//!
//! With `std`: [`nm`] reads nm/System.map/kallsyms lines, [`demangle`] turns
//! Rust names into what people read, [`nameorder`] sorts names for `seqs` and token selection,
//! [`tokens`] chooses the token table,
//! [`writer`] builds the blob, [`resolve`] rewrites address streams, and
//! [`lines`], [`hex`], [`blobfile`] and [`cli`] are the I/O pieces they share;
//! [`addrindex`] speeds up streams of address lookups; [`dwarf`] reads
//! source lines and inline frames from an ELF file's DWARF.
#![cfg_attr(not(feature = "std"), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod blob;
pub mod format;
pub mod reader;
pub mod v2;

#[cfg(feature = "std")]
pub mod addrindex;
#[cfg(feature = "std")]
pub mod blobfile;
#[cfg(feature = "std")]
pub mod cli;
#[cfg(feature = "std")]
pub mod demangle;
#[cfg(feature = "std")]
pub mod dwarf;
#[cfg(feature = "std")]
pub mod hex;
#[cfg(feature = "std")]
pub mod lines;
#[cfg(feature = "std")]
pub mod nameorder;
#[cfg(feature = "std")]
pub mod nm;
#[cfg(feature = "std")]
pub mod resolve;
#[cfg(feature = "std")]
pub mod tokens;
#[cfg(feature = "std")]
pub mod writer;

pub use blob::{Format, Kallsyms};
pub use reader::{AddressHit, BlobError, BlobErrorKind, KallsymsMapped, Name, Symbol};
