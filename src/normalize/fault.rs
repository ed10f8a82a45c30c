//! The kernel's one-line reports of a user-space fault (`dmesg`,
//! `journalctl -k`): where in which file the faulting instruction is.
//!
//! With `show_unhandled_signals` (on by default) the kernel reports a
//! fatal signal that no handler catches, and `print_vma_addr()`
//! (mm/memory.c) names the file mapped at the program counter:
//!
//! - x86 (arch/x86/mm/fault.c, arch/x86/kernel/traps.c):
//!   `crash[4242]: segfault at 0 ip 000055d5c8a0113d sp 00007ffd5b2c8e40 error 4 in crash[…]`,
//!   `traps: crash[4242] trap invalid opcode ip:55d5c8a0113d sp:… error:0 in crash[…]`,
//!   `… general protection fault ip:… sp:… error:0 in …`, `… control protection ip:…`;
//! - arm64 (`unhandled exception: … in crash[…]`) and riscv (`unhandled
//!   signal 11 code 0x1 at 0x0 in crash[…]`) give no program counter on
//!   that line.
//!
//! The bracket is `[OFF,START+SIZE]` since Linux 6.9 (OFF: the program
//! counter's file offset, `ip − vm_start + vm_pgoff`) and `[START+SIZE]`
//! before (the mapping's start and size only). The file is named by its
//! base name alone. A file offset alone places the instruction in the
//! binary; without one, an x86 `ip` does, when the mapping is exactly
//! one executable segment of the binary (as the ELF loader and ld.so map
//! it: `vm_pgoff` its page-aligned `p_offset`).

use crate::blob::v2::read::LoadSegment;
use crate::text::hex::parse_u64;

/// The page size x86 binaries are mapped with: the old bracket's mapping
/// is placed with it.
const PAGE: u64 = 4096;
const PF_X: u32 = 1;

/// One fault report: the file and where the instruction is in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserFault<'a> {
    /// The file's base name, as the kernel printed it.
    pub name: &'a [u8],
    /// The program counter's file offset (`[OFF,…]`, Linux 6.9+).
    pub file_offset: Option<u64>,
    /// The program counter (x86's `ip`), a runtime address.
    pub ip: Option<u64>,
    /// The mapping's runtime start address and size in bytes.
    pub vma: (u64, u64),
    /// Byte offset just after the bracket: where the name goes.
    pub at: usize,
}

/// Words that open the kernel's fault reports: one of them must come
/// before ` in NAME[…]`, so that no other bracket is taken for one.
const MARKERS: [&[u8]; 6] = [
    b"]: segfault at ",
    b"] trap ",
    b"] general protection fault ip:",
    b"] control protection ip:",
    b"]: unhandled signal ",
    b"]: unhandled exception",
];

/// The fault report on `line`, or `None` for any other line.
pub fn user_fault(line: &[u8]) -> Option<UserFault<'_>> {
    use bstr::ByteSlice;
    let body = line.trim_ascii_end();
    // Every line of a stream comes here: one search rejects nearly all of
    // them before the six marker searches.
    body.find(b" in ")?;
    let marker = MARKERS.iter().filter_map(|m| body.find(m)).min()?;
    let head = marker + body[marker..].find(b" in ")?;
    // The bracket is the last one on the report before its tail
    // (` likely on CPU …`); the name may hold blanks and brackets.
    let (open, close, name_at) = body[head..]
        .find_iter(b" in ")
        .filter_map(|i| {
            let at = head + i + 4;
            let close = at + body[at..].find_byte(b']')?;
            let open = at + body[at..close].rfind_byte(b'[')?;
            (open > at).then_some((open, close, at))
        })
        .last()?;
    let inner = &body[open + 1..close];
    let (place, size) = inner.split_once_str(b"+")?;
    let (file_offset, start) = match place.split_once_str(b",") {
        Some((off, start)) => (Some(parse_u64(off)?), start),
        None => (None, place),
    };
    let vma = (parse_u64(start)?, parse_u64(size)?);
    Some(UserFault {
        name: &body[name_at..open],
        file_offset,
        ip: ip_of(&body[marker..head]),
        vma,
        at: close + 1,
    })
}

/// x86's `ip HEX ` (segfault) or `ip:HEX ` (traps).
fn ip_of(s: &[u8]) -> Option<u64> {
    use bstr::ByteSlice;
    let i = s.find(b" ip ").or_else(|| s.find(b" ip:"))? + 4;
    let n = s[i..].iter().take_while(|b| b.is_ascii_hexdigit()).count();
    parse_u64(&s[i..i + n])
}

impl UserFault<'_> {
    /// The faulting instruction's link-time address in the binary whose
    /// load segments (FORMAT.md §10.8) are `segments`: its file offset in
    /// the executable segment holding it, else (no offset printed) the
    /// `ip` inside the one executable segment the mapping's size and the
    /// page size fit. `None` when neither places it for certain: a mapping
    /// that matches no segment or several, an offset or `ip` outside it
    /// (another build, or code the process remapped).
    pub fn link_address(&self, segments: &[LoadSegment]) -> Option<u64> {
        let exec = segments.iter().filter(|s| s.flags & PF_X != 0);
        let (start, size) = self.vma;
        let offset = match (self.file_offset, self.ip) {
            (Some(off), _) => off,
            (None, Some(ip)) if ip >= start && ip - start < size => {
                // Blob segments are input too: no arithmetic may wrap.
                let mut fits = exec.clone().filter(|s| {
                    let lead = s.vaddr % PAGE;
                    let pages = lead.checked_add(s.filesz).map(|e| e.div_ceil(PAGE));
                    pages.and_then(|p| p.checked_mul(PAGE)) == Some(size) && s.offset % PAGE == lead
                });
                let s = fits.next().filter(|_| fits.next().is_none())?;
                (ip - start).checked_add(s.offset - s.offset % PAGE)?
            }
            _ => return None,
        };
        let s = exec
            .clone()
            .find(|s| offset >= s.offset && offset - s.offset < s.filesz)?;
        s.vaddr.checked_add(offset - s.offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::normalize::test_segment as seg;

    #[test]
    fn the_kernel_s_report_forms() {
        // Linux 6.18 (this machine's dmesg).
        let l = b"[65458.226483] dwp[2505]: segfault at 0 ip 00007fbb49917c13 sp 00007ffd55741870 error 4 in libc.so.6[7dc13,7fbb498c0000+156000] likely on CPU 1 (core 1, socket 0)\n";
        let f = user_fault(l).unwrap();
        assert_eq!(f.name, b"libc.so.6");
        assert_eq!(f.file_offset, Some(0x7dc13));
        assert_eq!(f.ip, Some(0x7fbb49917c13));
        assert_eq!(f.vma, (0x7fbb498c0000, 0x156000));
        assert_eq!(&l[f.at..f.at + 7], b" likely");
        // Before 6.9; journalctl's prefix.
        let l = b"Nov 27 02:00:01 host kernel: crash[77]: segfault at 8 ip 000055d5c8a0113d sp 00007ffd5b2c8e40 error 6 in crash[55d5c8a01000+1000]";
        let f = user_fault(l).unwrap();
        assert_eq!(
            (f.name, f.file_offset, f.ip, f.vma, f.at),
            (
                &b"crash"[..],
                None,
                Some(0x55d5c8a0113d),
                (0x55d5c8a01000, 0x1000),
                l.len()
            )
        );
        let l = b"traps: a b[9] trap invalid opcode ip:401126 sp:7ffc8f0e8e30 error:0 in a b[401000+1000]";
        let f = user_fault(l).unwrap();
        assert_eq!((f.name, f.ip), (&b"a b"[..], Some(0x401126)));
        let l = b"a.out[1]: unhandled exception: DABT (lower EL), ESR 0x92000006 in a.out[4c0,aaaad5f60000+1000]";
        let f = user_fault(l).unwrap();
        assert_eq!((f.file_offset, f.ip), (Some(0x4c0), None));
        // Not a fault report, or no file.
        assert!(user_fault(b"foo[1]: in foo[1000+1000]").is_none());
        assert!(user_fault(b"crash[77]: segfault at 8 ip 000055d5c8a0113d sp 0 error 6").is_none());
        assert!(user_fault(b"x[1]: segfault at 8 ip 1 sp 0 error 6 in x[zz+1000]").is_none());
    }

    #[test]
    fn places_need_one_segment_for_certain() {
        // A PIE as ld.bfd lays it out: text at 0x1000, file offset 0x1000.
        let segs = [
            seg(0, 0, 0x628, 4),
            seg(0x1000, 0x1000, 0x1b5, 5),
            seg(0x2000, 0x2000, 0xf4, 4),
        ];
        let mut f = user_fault(
            b"c[1]: segfault at 0 ip 000055d5c8a01139 sp 0 error 6 in c[55d5c8a01000+1000]",
        )
        .unwrap();
        assert_eq!(f.link_address(&segs), Some(0x1139));
        f.file_offset = Some(0x1139);
        f.ip = None;
        assert_eq!(f.link_address(&segs), Some(0x1139));
        f.file_offset = Some(0x2010); // not code
        assert_eq!(f.link_address(&segs), None);
        // lld: text at p_vaddr != p_offset.
        let lld = [seg(0x1630, 0x630, 0x200, 5)];
        f.file_offset = None;
        f.ip = Some(0x7f0000001640);
        f.vma = (0x7f0000001000, 0x1000);
        assert_eq!(f.link_address(&lld), Some(0x1640));
        // A size that fits no segment (a remapped part) places nothing.
        f.vma = (0x7f0000001000, 0x2000);
        assert_eq!(f.link_address(&lld), None);
        // Nor an ip outside the mapping.
        f.vma = (0x7f0000001000, 0x1000);
        f.ip = Some(0x7f0000002000);
        assert_eq!(f.link_address(&lld), None);
    }
}
