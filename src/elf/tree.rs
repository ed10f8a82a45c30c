//! The ELF files under a directory, one per build-id: what `ksym-pack
//! --store DIR --elf-tree TREE` packs (a whole `/usr/lib/debug`, a build
//! tree, a container's root). Symbolic links are not followed, so
//! `/usr/lib/debug/.build-id/xx/rest` links to the binaries outside the
//! tree count once, where their targets are. Of two files with one
//! build-id (a binary and its separate debug file), the one whose `.text`
//! holds code is taken: its PLT stubs are there, and its debug file is
//! found from it ([`super::debugfile`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::debugfile::{build_id_of, has_section};

/// The ELF files under `dir` (recursively), one per build-id, in path
/// order, and how many ELF files without a build-id were left out (a
/// store keys blobs by build-id).
///
/// Errors: a directory that cannot be read, naming it.
pub fn elf_files(dir: &Path) -> Result<(Vec<PathBuf>, usize), String> {
    let mut files = Vec::new();
    walk(dir, &mut files)?;
    files.sort();
    let mut by_id: HashMap<Vec<u8>, PathBuf> = HashMap::new();
    let mut without_id = 0;
    for f in files {
        if !is_elf(&f) {
            continue;
        }
        let Some(id) = build_id_of(&f) else {
            without_id += 1;
            continue;
        };
        match by_id.get(&id) {
            Some(kept) if has_section(kept, ".text") || !has_section(&f, ".text") => {}
            _ => {
                by_id.insert(id, f);
            }
        }
    }
    let mut out: Vec<PathBuf> = by_id.into_values().collect();
    out.sort();
    Ok((out, without_id))
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for e in entries {
        let e = e.map_err(|e| format!("{}: {e}", dir.display()))?;
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            walk(&e.path(), out)?;
        } else if kind.is_file() {
            out.push(e.path());
        }
    }
    Ok(())
}

/// Whether the file starts with the ELF magic (`\x7fELF`).
fn is_elf(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| magic == *b"\x7fELF")
}
