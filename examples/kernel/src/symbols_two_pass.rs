//! The kernel's own symbol table, linked in by a second link
//! (docs/kernel.md, step 5, "A two-pass link"): `ksym-pack --asm` writes
//! the blob as assembler source between the labels `ksym_blob` and
//! `ksym_blob_end`, and the kernel is linked again with it. The first
//! link takes build.rs's empty table.
use core::fmt::Write;
use ksym::{FrameKind, Kallsyms};

// KSYM_ASM: the assembler source, ksym-pack's or build.rs's empty one.
core::arch::global_asm!(include_str!(env!("KSYM_ASM")));

unsafe extern "C" {
    static ksym_blob: u8;
    static ksym_blob_end: u8;
}

/// The table; `None` (and why, on `out`) in the first link's image or
/// when the blob is damaged.
pub fn open(out: &mut impl Write) -> Option<Kallsyms<'static>> {
    let start = &raw const ksym_blob;
    let len = &raw const ksym_blob_end as usize - start as usize;
    // SAFETY: the assembler source brackets the blob with these labels, in
    // a read-only section that lives as long as the kernel; the compiler
    // sees only the symbols, not the bytes, so it cannot fold the reads.
    let blob = unsafe { core::slice::from_raw_parts(start, len) };
    match Kallsyms::from_blob(blob, None, None) {
        Ok(k) => Some(k),
        Err(_) if blob.is_empty() => {
            let _ = out.write_str("ksym: no table linked in (the first link)\n");
            None
        }
        Err(_) => {
            let _ = out.write_str("ksym: bad linked-in blob (ksym-pack --check says why)\n");
            None
        }
    }
}

/// One backtrace line, as `symbols.rs` prints it. A copy, not a `use`:
/// `symbols.rs` is the single-link file the guide quotes whole, and it
/// declares the 64 KiB reservation this link does without.
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
