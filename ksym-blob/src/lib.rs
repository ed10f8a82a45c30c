//! ksym-blob: kernel symbol tables (kallsyms) as a compact blob that a
//! kernel reads in place, with no copy and no allocation.
//!
//! The formats are `docs/FORMAT.md` of the ksym repository: v1 (the seed's,
//! part I) and v2 (ksym's compact, checksummed one, part II). Without the
//! `std` feature (the default) the crate is `#![no_std]` and holds only the
//! readers its features turn on (`v1`, `v2`, `lines`, `modules`, and the
//! host's `shape-checks` and `fast-lookup`; docs/kernel.md gives each
//! one's cost): what a kernel links to print `func+0x1a/0x80 FILE:LINE`
//! from its own blob ([`Kallsyms::write_frame`]), the blob sitting in a
//! section that [`reserve!`] declares and `ksym-pack --patch-elf` fills
//! after linking. With `std`, the writers and the `nm` text input that the
//! ksym tools build on.
//!
//! Layers, each importing only those below it:
//! - [`kernel`]: the kernel's conventions both layers follow (text bounds).
//! - [`text`] (std): `nm`/System.map/kallsyms lines, hex, Rust demangling.
//! - [`blob`]: one folder per format ([`blob::v1`], [`blob::v2`], each with
//!   its reader and, with std, its writer), what they share
//!   ([`blob::symbol`], and with std `blob::list` and `blob::nameorder`),
//!   the format-neutral view [`Kallsyms`] on top, and the kernel's
//!   reserved region ([`Reserved`]).
//! - [`blobfile`] (std): blob bytes read into aligned memory.
#![cfg_attr(not(feature = "std"), no_std)]
// One `unsafe` block in the crate: the volatile read that keeps a kernel's
// reserved region opaque to the optimiser (blob::reserved).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod blob;
pub mod kernel;

#[cfg(feature = "std")]
pub mod blobfile;
#[cfg(feature = "std")]
pub mod text;

#[cfg(feature = "v1")]
pub use blob::KallsymsMapped;
pub use blob::gnu_build_id;
pub use blob::{
    AddressHit, BlobError, BlobErrorKind, Format, FrameKind, Kallsyms, Name, Reserved, Symbol,
};
