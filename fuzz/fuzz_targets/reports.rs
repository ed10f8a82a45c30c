//! Kernel reports through the resolver: log prefixes, references anywhere
//! on a line, and `Code:` lines on every architecture. The first byte picks
//! the `--arch` (none, x86_64, arm64, arm, riscv64), `--json` (bit 3), and
//! whether each line of the rest gets a `Code: ` in front (bit 4), so the
//! fuzzer spends its time in the byte-token reader and the disassemblers.
//! No panic; without `--json` every input line comes out first, in order.
#![no_main]

use std::sync::OnceLock;

use ksym::Kallsyms;
use ksym::blob::list::SymbolList;
use ksym::blob::v1::tokens::TokenStrategy;
use ksym::blob::v1::write::pack;
use ksym::blobfile::AlignedBlob;
use ksym::resolve::code::Arch;
use ksym::resolve::{ResolveOptions, Resolver};
use libfuzzer_sys::fuzz_target;

fn blob() -> &'static AlignedBlob {
    static BLOB: OnceLock<AlignedBlob> = OnceLock::new();
    BLOB.get_or_init(|| {
        let mut list = SymbolList::new();
        let names: [&[u8]; 5] = [b"_stext", b"vfs_read", b"ksys_read", b"do_syscall_64", b"_etext"];
        for (i, n) in names.iter().enumerate() {
            list.push(0xffff_ffff_8100_0000 + 0x100 * i as u64, b'T', n).unwrap();
        }
        AlignedBlob::copy_from(&pack(&list, TokenStrategy::Optimal).unwrap().blob)
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, text)) = data.split_first() else {
        return;
    };
    let arch = match mode & 7 {
        1 => Some(Arch::X86_64),
        2 => Some(Arch::Arm64),
        3 => Some(Arch::Arm),
        4 => Some(Arch::Riscv64),
        _ => None,
    };
    let input: Vec<u8> = if mode & 16 != 0 {
        text.split(|&b| b == b'\n')
            .flat_map(|l| [&b"Code: "[..], l, b"\n"].concat())
            .collect()
    } else {
        text.to_vec()
    };
    let m = Kallsyms::from_blob(blob().as_bytes(), None, None).unwrap();
    let opts = ResolveOptions {
        size: true,
        json: mode & 8 != 0,
        arch,
        ..Default::default()
    };
    let mut out = Vec::new();
    Resolver::new(&m, opts.clone()).run(&input[..], &mut out).unwrap();
    if !opts.json {
        let lines_in = input.split(|&b| b == b'\n').count();
        let lines_out = out.split(|&b| b == b'\n').count();
        assert!(lines_out >= lines_in);
    }
});
