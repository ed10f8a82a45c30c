//! Which kernel a trace came from, from its own lines: an oops's `CPU:`
//! line (`… Not tainted 6.1.0-56-amd64 #1 Debian …`, or `Tainted: G W
//! 6.1.0 #1`), whose trailing 40-hex token is the vmlinux build-id on
//! kernels with `CONFIG_STACKTRACE_BUILD_ID`; and `perf script --header`'s
//! `# os release : RELEASE`.

use super::layout::parse_hex;

/// A kernel named by a trace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct KernelRef {
    /// `uname -r`.
    pub release: Option<Vec<u8>>,
    /// The vmlinux build-id, which wins over the release.
    pub build_id: Option<Vec<u8>>,
}

fn tokens(s: &[u8]) -> impl Iterator<Item = &[u8]> {
    s.split(|&b| b == b' ' || b == b'\t')
        .filter(|t| !t.is_empty())
}

/// The kernel named by `line`, when it is an oops `CPU:` line or a perf
/// header's `# os release :` line.
pub fn kernel_of_line(line: &[u8]) -> Option<KernelRef> {
    let line = line.trim_ascii_end();
    if let Some(r) = line.strip_prefix(b"# os release : ") {
        let r = r.trim_ascii();
        return (!r.is_empty()).then(|| KernelRef {
            release: Some(r.to_vec()),
            build_id: None,
        });
    }
    // Asked of every line of a stream: the searcher is built once.
    static CPU: std::sync::LazyLock<bstr::Finder<'static>> =
        std::sync::LazyLock::new(|| bstr::Finder::new(b"CPU: "));
    let cpu = CPU.find(line)?;
    let rest = &line[cpu..];
    let t = bstr::ByteSlice::find(rest, b"Not tainted ")
        .map(|i| i + b"Not tainted ".len())
        .or_else(|| bstr::ByteSlice::find(rest, b"Tainted: ").map(|i| i + b"Tainted: ".len()))?;
    let words: Vec<&[u8]> = tokens(&rest[t..]).collect();
    // The release is the word before `#N` (the version's first word);
    // taint flags come before it.
    let hash = words.iter().position(|w| w.starts_with(b"#"))?;
    let release = words.get(hash.checked_sub(1)?)?.to_vec();
    let build_id = words
        .last()
        .filter(|w| w.len() == 40 && w.iter().all(u8::is_ascii_hexdigit))
        .and_then(|w| parse_hex(w));
    Some(KernelRef {
        release: Some(release),
        build_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oops_and_perf_lines_name_their_kernel() {
        let k = kernel_of_line(b"[    1.0] CPU: 0 PID: 1 Comm: swapper/0 Not tainted 6.1.0-56-amd64 #1 Debian 6.1.192-2\n").unwrap();
        assert_eq!(k.release.as_deref(), Some(&b"6.1.0-56-amd64"[..]));
        assert_eq!(k.build_id, None);
        let k = kernel_of_line(
            b"CPU: 3 PID: 9 Comm: kworker Tainted: G        W  OE      6.8.0 #4 0123456789abcdef0123456789abcdef01234567",
        )
        .unwrap();
        assert_eq!(k.release.as_deref(), Some(&b"6.8.0"[..]));
        assert_eq!(k.build_id.unwrap().len(), 20);
        let k = kernel_of_line(b"# os release : 6.18.0-rc1\n").unwrap();
        assert_eq!(k.release.as_deref(), Some(&b"6.18.0-rc1"[..]));
        assert!(kernel_of_line(b"RIP: 0010:foo+0x1/0x2").is_none());
        assert!(kernel_of_line(b"CPU: 0 PID: 1").is_none());
    }
}
