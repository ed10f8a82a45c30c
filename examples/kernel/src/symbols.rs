//! The kernel's own symbol table: docs/kernel.md, step 4, byte for byte
//! (tests/docs.rs checks that the guide quotes this file whole).
use core::fmt::Write;
use ksym::{BlobErrorKind, FrameKind, Kallsyms};

// 64 KiB in section .ksym, zero until `ksym-pack --patch-elf` fills it.
ksym::reserve!(static KSYM: 64 * 1024);

/// The table, checked once per backtrace; `None` (and why, on `out`) when
/// the post-link step never ran, the section is damaged, or (with the
/// build-id check) it holds another build's table.
pub fn open(out: &mut impl Write) -> Option<Kallsyms<'static>> {
    match KSYM.open() {
        #[cfg(feature = "build-id-check")]
        Ok((k, _)) if k.matches_build_id_note(crate::build_id_note()) == Some(false) => {
            let _ = out.write_str("ksym: .ksym holds another build's table\n");
            None
        }
        Ok((k, _unused_tail)) => Some(k),
        Err(e) if e.kind == BlobErrorKind::NotFilled => {
            let _ = out.write_str("ksym: .ksym never filled (ksym-pack --patch-elf)\n");
            None
        }
        // No text of BlobError's here (its Display links every message):
        // `ksym-pack --check` of the section's dump says what is wrong.
        Err(_) => {
            let _ = out.write_str("ksym: bad .ksym blob (ksym-pack --check says why)\n");
            None
        }
    }
}

/// One backtrace line, ` [<ADDR>] NAME+0xOFF/0xSIZE FILE:LINE`: `is_return`
/// for a return address from a frame record (looked up at ADDR - 1, as
/// Linux's %pB), false for the trapping pc. Paths print relative to this
/// crate. Without a table, the raw address, for `ksym-resolve` offline.
pub fn print_frame(out: &mut impl Write, k: Option<&Kallsyms<'_>>, addr: usize, is_return: bool) {
    let kind = match is_return {
        true => FrameKind::Return,
        false => FrameKind::Trapping,
    };
    let _ = match k {
        Some(k) => k.write_frame(
            out,
            addr as u64,
            kind,
            env!("CARGO_MANIFEST_DIR").as_bytes(),
        ),
        None => write!(out, " [<{addr:0w$x}>]", w = 2 * size_of::<usize>()),
    };
    let _ = out.write_str("\n");
}
