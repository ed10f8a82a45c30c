//! A stripped binary's separate debug file, found the way debuggers find
//! it (GDB manual, "Debugging Information in Separate Files"): by build-id
//! under each debug directory (`DIR/.build-id/xx/rest.debug`), then by the
//! `.gnu_debuglink` name next to the binary, in its `.debug/`, and under
//! each debug directory followed by the binary's own directory. A
//! candidate is taken only when it is the binary's: the same build-id when
//! both have one, else the debuglink's CRC-32 of the whole file.

use std::path::{Path, PathBuf};

use object::Object;

use super::file::ElfFile;

/// Debian's and Fedora's debug root, searched after the caller's
/// directories.
pub const SYSTEM_DEBUG_DIR: &str = "/usr/lib/debug";

/// Where to look: the `--debug-dir` directories in order, then
/// [`SYSTEM_DEBUG_DIR`].
#[derive(Debug, Clone, Default)]
pub struct DebugDirs {
    /// The caller's directories, searched first.
    pub dirs: Vec<PathBuf>,
}

impl DebugDirs {
    fn all(&self) -> impl Iterator<Item = &Path> {
        self.dirs
            .iter()
            .map(PathBuf::as_path)
            .chain([Path::new(SYSTEM_DEBUG_DIR)])
    }
}

/// What names an ELF file as some binary's: its build-id (the
/// `NT_GNU_BUILD_ID` note's bytes) and its `.gnu_debuglink` (file name,
/// CRC-32 of the debug file).
struct Identity {
    build_id: Option<Vec<u8>>,
    debuglink: Option<(PathBuf, u32)>,
}

fn identity(path: &Path) -> Option<Identity> {
    // Read what the headers and notes need, not the whole file (a vmlinux
    // with DWARF is hundreds of MB).
    let cache = ElfFile::open(path).ok()?;
    let obj = cache.parse().ok()?;
    let id = obj.build_id().ok().flatten().map(<[u8]>::to_vec);
    let link = obj.gnu_debuglink().ok().flatten().and_then(|(name, crc)| {
        let name = std::str::from_utf8(name).ok()?;
        // A file name, never a path out of the directories searched.
        (!name.is_empty() && !name.contains('/')).then(|| (PathBuf::from(name), crc))
    });
    Some(Identity {
        build_id: id,
        debuglink: link,
    })
}

/// The GNU build-id (the `NT_GNU_BUILD_ID` note's bytes) of the ELF file
/// at `path`; `None` when it has none or cannot be read.
pub fn build_id_of(path: &Path) -> Option<Vec<u8>> {
    identity(path)?.build_id
}

/// The separate debug file of the ELF file at `elf`, if one of the places
/// above holds it; `None` when none does (or `elf` cannot be read).
pub fn find(elf: &Path, dirs: &DebugDirs) -> Option<PathBuf> {
    let Identity {
        build_id: id,
        debuglink: link,
    } = identity(elf)?;
    if let Some(id) = id.as_deref().filter(|id| id.len() >= 2) {
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        for d in dirs.all() {
            let p = d
                .join(".build-id")
                .join(&hex[..2])
                .join(format!("{}.debug", &hex[2..]));
            if identity(&p).is_some_and(|o| o.build_id.as_deref() == Some(id)) {
                return Some(p);
            }
        }
    }
    let (name, crc) = link?;
    let dir = elf.parent().unwrap_or(Path::new("."));
    let abs = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut places = vec![dir.join(&name), dir.join(".debug").join(&name)];
    for d in dirs.all() {
        places.push(d.join(abs.strip_prefix("/").unwrap_or(&abs)).join(&name));
    }
    places
        .into_iter()
        // The binary itself can carry its own name (a debuglink to itself
        // is no debug file).
        .filter(|p| !same_file(p, elf))
        .find(|p| {
            let ok_id = match (&id, identity(p).map(|o| o.build_id)) {
                (Some(id), Some(Some(other))) => other == *id,
                (_, Some(_)) => true,
                (_, None) => false,
            };
            ok_id && crc32_of(p) == Some(crc)
        })
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The CRC-32 (IEEE, as `.gnu_debuglink` holds it) of the whole file.
fn crc32_of(path: &Path) -> Option<u32> {
    use std::io::Read;
    const CRC: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);
    let mut file = std::fs::File::open(path).ok()?;
    let mut digest = CRC.digest();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match file.read(&mut buf) {
            Ok(0) => return Some(digest.finalize()),
            Ok(n) => digest.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

/// Whether the ELF file at `path` has a `section` with contents (not
/// `SHT_NOBITS`, as a stripped file's `.debug_info` may be); false when it
/// cannot be read.
pub fn has_section(path: &Path, section: &str) -> bool {
    let Ok(cache) = ElfFile::open(path) else {
        return false;
    };
    cache.parse().is_ok_and(|o| {
        use object::ObjectSection;
        o.section_by_name(section)
            .is_some_and(|s| s.kind() != object::SectionKind::UninitializedData)
    })
}

/// `elf` itself when it has `section` (`.symtab`, `.debug_info`), else its
/// separate debug file when that has it, else `elf`: the file to read
/// `section` from. The second value says whether a debug file was taken.
pub fn with_section(elf: &Path, section: &str, dirs: &DebugDirs) -> (PathBuf, bool) {
    if has_section(elf, section) {
        return (elf.to_path_buf(), false);
    }
    match find(elf, dirs) {
        Some(d) if has_section(&d, section) => (d, true),
        _ => (elf.to_path_buf(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_debuglink_crc_is_ieee_crc32() {
        // The check value of CRC-32/ISO-HDLC, which .gnu_debuglink uses
        // (binutils' bfd_calc_gnu_debuglink_crc32).
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"123456789").unwrap();
        assert_eq!(crc32_of(&p), Some(0xcbf4_3926));
    }

    #[test]
    fn no_debug_file_for_a_file_that_is_not_elf() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"not elf").unwrap();
        assert_eq!(find(&p, &DebugDirs::default()), None);
        assert_eq!(
            with_section(&p, ".symtab", &DebugDirs::default()),
            (p.clone(), false)
        );
    }
}
