//! ksym: kernel symbol tables (kallsyms) as a compact blob that a kernel reads
//! in place, and the Unix-pipeline tools around it.
//!
//! The blob formats are `docs/FORMAT.md`: v1 (the seed's, part I) and v2
//! (ksym's compact, checksummed one, part II). Without the default `std`
//! feature the crate is `#![no_std]` and holds only the readers its
//! features turn on (`v1`, `v2`, `lines`, `modules`, and the host's
//! `shape-checks` and `fast-lookup`; docs/kernel.md): what a kernel links to print `func+0x1a/0x80 FILE:LINE` from
//! its own blob ([`Kallsyms::write_frame`]), with no allocation.
//!
//! The formats and their readers and writers are the `ksym-blob` crate
//! (the workspace's `ksym-blob/`), which a kernel depends on alone; this
//! crate re-exports it at the paths it always had ([`blob`], [`kernel`],
//! [`text`], [`blobfile`], [`reserve!`]) and adds the tools' pieces, each
//! importing only those below it: [`elf`] (ELF input: text bounds and
//! build-id, DWARF to a source table, kernel modules, a blob patched into
//! an image; also at their former paths [`dwarf`], [`kmod`], [`elfpatch`],
//! [`elfsyms`]; a user-space binary's functions and debug file),
//! [`normalize`] (a process's runtime addresses to a binary's link-time
//! ones), [`store`] (blob stores in debuginfod's layout),
//! [`addrindex`] (lookup acceleration for streams), [`cli`] (I/O),
//! [`gzip`] (blob files compressed at rest),
//! [`heap`] (huge pages for malloc's heap in the jobs that read DWARF),
//! [`packjob`] (what `ksym-pack` runs) and [`resolve`] (the address
//! stream), which the binaries call.
#![cfg_attr(not(feature = "std"), no_std)]
// No unsafe code but one FFI call: `elf::cxx`, the system's C++
// demangler (it says why no crate would do).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub use ksym_blob::{blob, kernel, reserve};
#[cfg(feature = "std")]
pub use ksym_blob::{blobfile, text};

#[cfg(feature = "std")]
pub mod addrindex;
#[cfg(feature = "std")]
pub mod cli;
#[cfg(feature = "std")]
pub mod elf;
#[cfg(feature = "std")]
pub mod gzip;
#[cfg(feature = "std")]
pub mod heap;
#[cfg(feature = "std")]
pub mod normalize;
#[cfg(feature = "std")]
pub mod packjob;
#[cfg(feature = "std")]
mod par;
#[cfg(feature = "std")]
mod reclaim;
#[cfg(feature = "std")]
pub mod resolve;
#[cfg(feature = "std")]
pub mod store;

#[cfg(feature = "v1")]
pub use blob::KallsymsMapped;
pub use blob::{
    AddressHit, BlobError, BlobErrorKind, Format, FrameKind, Kallsyms, Name, Reserved, Symbol,
};

// The paths of the flat layout before the blob formats got their folders
// (`blob::v1`, `blob::v2`) and text input its own (`text`); kept so that
// code written against them still builds.
pub use blob::v1::layout as format;
#[cfg(feature = "std")]
pub use blob::{nameorder, v1::tokens};
#[cfg(feature = "std")]
pub use elf::{dwarf, kmod, patch as elfpatch, symbols as elfsyms};
#[cfg(feature = "std")]
pub use text::{demangle, hex, lines, nm};

/// The v1 reader and the shared reader types, at their former path
/// ([`blob::v1::read`], [`blob::symbol`]).
#[cfg(feature = "v1")]
pub mod reader {
    pub use crate::blob::symbol::*;
    pub use crate::blob::v1::read::*;
}

/// The v1 writer and the symbol list, at their former path
/// ([`blob::v1::write`], [`blob::list`]).
#[cfg(feature = "std")]
pub mod writer {
    pub use crate::blob::list::*;
    pub use crate::blob::v1::write::*;
}

/// The v2 format at its former path ([`blob::v2`]); `lines` and
/// `lines_write` are [`blob::v2::source_lines`]'s `read` and `write`.
#[cfg(feature = "v2")]
pub mod v2 {
    #[cfg(feature = "lines")]
    pub use crate::blob::v2::source_lines::read as lines;
    #[cfg(feature = "std")]
    pub use crate::blob::v2::source_lines::write as lines_write;
    pub use crate::blob::v2::*;
}
