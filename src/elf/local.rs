//! A binary on this machine packed in memory, as `ksym-pack --elf BINARY
//! [--lines]` packs it: what `ksym-resolve --store` names a binary's frames
//! with when the store has no blob for it (docs/stores.md).

use std::path::{Path, PathBuf};

use super::debugfile::{self, DebugDirs};
use super::dwarf;
use super::functions::function_symbols;

/// A blob made in memory from a binary on this machine
/// ([`local_blob`]).
#[derive(Debug)]
pub struct LocalBlob {
    /// The v2 blob.
    pub blob: Vec<u8>,
    /// The file its source lines came from (the binary or its debug file);
    /// `None`: names only.
    pub lines_from: Option<PathBuf>,
    /// What the lines lack (split DWARF units whose `.dwo` is missing), or
    /// why there are none (DWARF that does not read).
    pub warning: Option<String>,
}

/// The v2 blob `ksym-pack --elf BINARY [--lines]` writes, made in memory:
/// `path`'s function symbols with their sizes (FORMAT.md §10.7), its
/// executable load segments (§10.8), its build-id (§10.6) and, when
/// `lines` and the binary or its debug file ([`debugfile::with_section`])
/// has DWARF, its source lines and inline frames (§15); what `ksym-resolve
/// --store` names a binary's frames with when the store has no blob for it
/// and the file is on this machine.
///
/// Errors: those of [`function_symbols`], a binary without function
/// symbols, or a list the writer refuses. DWARF that does not read (or is
/// another build's) leaves the blob names only, with a
/// [`LocalBlob::warning`] saying why.
pub fn local_blob(path: &Path, dirs: &DebugDirs, lines: bool) -> Result<LocalBlob, String> {
    let mut f = function_symbols(path, dirs)?;
    if f.list.is_empty() {
        return Err(format!(
            "{}: no function symbols in .symtab, its debug file's or .dynsym",
            path.display()
        ));
    }
    let mut opts = crate::blob::v2::write::V2Options {
        segments: f.segments,
        build_id: debugfile::build_id_of(path).unwrap_or_default(),
        shared_names: true,
        coded_rows: true,
        ..Default::default()
    };
    let (mut lines_from, mut warning) = (None, None);
    if lines {
        let (debug, _) = debugfile::with_section(path, ".debug_info", dirs);
        if debugfile::has_section(&debug, ".debug_info") {
            let addrs = (0..f.list.len()).map(|i| f.list.address(i));
            // DWARF that does not read costs the lines, not the names.
            // As `ksym-pack --elf --lines` packs it: no discriminators.
            // Frames named with the list's demanglings, done already.
            let names = super::functions::SharedDemangled::default();
            let _ = names.set(std::mem::take(&mut f.demangled));
            let read = dwarf::read_source_table_naming(&debug, false, names);
            match read.and_then(|t| dwarf::checked_source_table(&debug, t, addrs)) {
                Ok((table, _, w)) => {
                    opts.lines = Some((table, false));
                    (lines_from, warning) = (Some(debug), w);
                }
                Err(e) => warning = Some(format!("{e}: names only")),
            }
        }
    }
    let blob = crate::blob::v2::write::pack_v2(&f.list, &opts)
        .map(|p| p.blob)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(LocalBlob {
        blob,
        lines_from,
        warning,
    })
}
