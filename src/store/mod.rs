//! Blob stores in debuginfod's URL layout (docs/stores.md): one blob
//! per kernel build, found by GNU build-id, with per-release lists, so a
//! fleet running many kernels resolves each trace with its own kernel's
//! blob. A store is a plain directory, any static HTTP server over one, an
//! object-storage bucket, or a debuginfod server indexing ELF files that
//! carry a `.ksym` section:
//!
//! - `buildid/<BUILDID>/section/.ksym`: the blob (debuginfod's
//!   `/buildid/ID/section/NAME` path);
//! - `release/<RELEASE>`: the build-ids of that release, one hex per line;
//! - `name/<FILE NAME>`: the build-ids of the user-space binaries packed
//!   under that file name (`ksym-pack --store --elf`), for reports that
//!   name a binary by its file name alone (the kernel's fault reports).
//!
//! [`layout`] spells the paths, [`write`](mod@write) adds a blob to a
//! directory store atomically, [`fetch`] reads a store (directory or HTTP)
//! through a checked local cache, [`select`] finds which kernel a trace
//! came from (`ksym-resolve --store` resolves a stream with the right
//! blob per trace), and [`debuginfod`] fetches an ELF by build-id from
//! `DEBUGINFOD_URLS`.

use std::fmt;

pub mod debuginfod;
pub mod fetch;
pub mod layout;
pub mod select;
pub mod write;

/// A store that cannot be read or written, or a fetch that failed.
#[derive(Debug, Clone)]
pub struct StoreError {
    /// What failed, naming the path or URL.
    pub what: String,
}

impl StoreError {
    /// An error saying `what`.
    pub fn new(what: impl fmt::Display) -> Self {
        StoreError {
            what: what.to_string(),
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)
    }
}

impl std::error::Error for StoreError {}
