//! The paths of a store, as debuginfod's URL space spells them.

use super::StoreError;

/// The debuginfod section name the blob is served under.
pub const SECTION: &str = ".ksym";

/// Lower-case hex of `id`.
pub fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes of a hex build-id (even length, 2 to 128 digits), else `None`.
pub fn parse_hex(s: &[u8]) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || s.is_empty() || s.len() > 128 {
        return None;
    }
    s.chunks(2)
        .map(|c| u8::from_str_radix(std::str::from_utf8(c).ok()?, 16).ok())
        .collect()
}

/// `buildid/<hex>/section/.ksym`: where the blob of build-id `id` lives.
pub fn blob_path(id: &[u8]) -> String {
    format!("buildid/{}/section/{SECTION}", hex(id))
}

/// `release/<release>`: the build-ids of a release.
///
/// Errors: a release that is empty, longer than 255 bytes, starts with a
/// dot or holds a byte outside `A-Z a-z 0-9 . _ + ~ -` (it becomes a file
/// name and a URL path segment).
pub fn release_path(release: &[u8]) -> Result<String, StoreError> {
    list_path("release", release)
}

/// `name/<file name>`: the build-ids of the binaries stored under a file
/// name (`ksym-pack --store --elf`), for reports that name a binary by
/// its base name alone (the kernel's fault reports,
/// [`crate::normalize::fault`]). A list like a release's.
///
/// Errors: as [`release_path`], for the file name.
pub fn name_path(name: &[u8]) -> Result<String, StoreError> {
    list_path("name", name)
}

fn list_path(kind: &str, key: &[u8]) -> Result<String, StoreError> {
    let ok = |b: &u8| b.is_ascii_alphanumeric() || b"._+~-".contains(b);
    if key.is_empty() || key.len() > 255 || key[0] == b'.' || !key.iter().all(ok) {
        return Err(StoreError::new(format!(
            "{kind} `{}`: expected 1 to 255 of A-Z a-z 0-9 . _ + ~ - (not starting with a dot)",
            String::from_utf8_lossy(key)
        )));
    }
    Ok(format!("{kind}/{}", String::from_utf8_lossy(key)))
}

/// The build-ids of a release or name list: one hex per line; blank lines and
/// lines that are not hex are skipped; duplicates kept once, in order.
pub fn parse_release_list(text: &[u8]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    for line in text.split(|&b| b == b'\n') {
        let l = line.trim_ascii();
        if let Some(id) = parse_hex(l)
            && !out.contains(&id)
        {
            out.push(id);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_lists() {
        assert_eq!(blob_path(&[0xab, 0x01]), "buildid/ab01/section/.ksym");
        assert_eq!(
            release_path(b"6.1.0-56-amd64").unwrap(),
            "release/6.1.0-56-amd64"
        );
        assert!(release_path(b"../etc").is_err() && release_path(b"a/b").is_err());
        assert!(release_path(b"").is_err() && release_path(b".x").is_err());
        assert_eq!(name_path(b"libstdc++.so.6").unwrap(), "name/libstdc++.so.6");
        assert!(name_path(b"a b").is_err() && name_path(b"..").is_err());
        assert_eq!(parse_hex(b"0aFF"), Some(vec![0x0a, 0xff]));
        assert_eq!(parse_hex(b"abc"), None);
        assert_eq!(
            parse_release_list(b"ab\n\nzz\nab\ncd\n"),
            vec![vec![0xab], vec![0xcd]]
        );
    }
}
