//! Adding a blob to a directory store (`ksym-pack --store DIR`): the blob
//! and the lists naming it (release, file name) are each written to a temporary file and renamed
//! into place, under an exclusive lock on `DIR/.lock`, so readers never see
//! a partial file and two packs into one store never lose an entry.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::StoreError;
use super::layout::{blob_path, hex, parse_release_list};

fn io(path: &Path, e: impl std::fmt::Display) -> StoreError {
    StoreError::new(format!("{}: {e}", path.display()))
}

/// Writes `bytes` to `path` atomically (temporary file beside it, then
/// rename), creating the directories.
///
/// Errors: a directory or file that cannot be written, naming it.
pub fn replace_file(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| io(dir, e))?;
    tmp.write_all(bytes).map_err(|e| io(path, e))?;
    tmp.as_file().sync_all().map_err(|e| io(path, e))?;
    tmp.persist(path).map_err(|e| io(path, e.error))?;
    Ok(())
}

/// Stores `blob` as build-id `id`'s, and lists `id` in each of `lists`
/// (store paths: [`super::layout::release_path`],
/// [`super::layout::name_path`]). Returns the blob's path.
///
/// Errors: an empty build-id, or a file that cannot be written (naming
/// it).
pub fn put(dir: &Path, id: &[u8], lists: &[String], blob: &[u8]) -> Result<PathBuf, StoreError> {
    if id.is_empty() {
        return Err(StoreError::new(
            "no build-id for the store: give --build-id HEX, or --lines ELF with a GNU build-id note",
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let lock_path = dir.join(".lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| io(&lock_path, e))?;
    lock.lock().map_err(|e| io(&lock_path, e))?;
    let path = dir.join(blob_path(id));
    replace_file(&path, blob)?;
    for rel in lists {
        let list = dir.join(rel);
        let mut text = match std::fs::read(&list) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io(&list, e)),
        };
        if !parse_release_list(&text).iter().any(|x| x == id) {
            if !text.is_empty() && !text.ends_with(b"\n") {
                text.push(b'\n');
            }
            text.extend_from_slice(hex(id).as_bytes());
            text.push(b'\n');
            replace_file(&list, &text)?;
        }
    }
    drop(lock);
    Ok(path)
}
