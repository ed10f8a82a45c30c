//! Arbitrary text through the resolver, on a v1 or (when the second byte is
//! odd) a v2 blob with a folded `__pfx_` symbol and a module, with source
//! lines and inline frames when its bit 1 is set too: no panic, and every
//! input line gives one output line (perf `--inline`, first byte `I`, adds
//! frame lines). The four blobs are packed once, not per input: only the
//! stream varies, so each run costs what resolving its input costs.
#![no_main]

use std::sync::OnceLock;

use ksym::Kallsyms;
use ksym::blobfile::AlignedBlob;
use ksym::resolve::{ResolveOptions, Resolver};
use ksym::blob::v1::tokens::TokenStrategy;
use ksym::blob::v2::source_lines::write::{InlineNode, LineRow, SourceTable};
use ksym::blob::v2::write::{V2Options, pack_v2};
use ksym::blob::list::SymbolList;
use ksym::blob::v1::write::pack;
use libfuzzer_sys::fuzz_target;

/// v1; v2; v2 with lines; v2 with lines and columns.
fn blobs() -> &'static [AlignedBlob; 4] {
    static BLOBS: OnceLock<[AlignedBlob; 4]> = OnceLock::new();
    BLOBS.get_or_init(|| {
        let list = symbols();
        let v2 = |lines: Option<bool>| {
            let mut opts = V2Options::default();
            opts.lines = lines.map(|columns| (self::lines(), columns));
            AlignedBlob::copy_from(&pack_v2(&list, &opts).unwrap().blob)
        };
        [
            AlignedBlob::copy_from(&pack(&list, TokenStrategy::Optimal).unwrap().blob),
            v2(None),
            v2(Some(false)),
            v2(Some(true)),
        ]
    })
}

fn symbols() -> SymbolList {
    let mut list = SymbolList::new();
    for (i, n) in [&b"_stext"[..], b"do_fork", b"schedule", b"_etext", b"init_x", b"_einittext"].iter().enumerate() {
        list.push(0xffff_ffff_8100_0000 + 0x100 * i as u64, b'T', n).unwrap();
    }
    list.push(0xffff_ffff_c000_0000, b't', b"__pfx_ext4_read").unwrap();
    list.set_last_module(b"ext4");
    list.push(0xffff_ffff_c000_0010, b't', b"ext4_read").unwrap();
    list.set_last_module(b"ext4");
    list
}

fuzz_target!(|data: &[u8]| {
    let with_lines = data.get(1).is_some_and(|b| b & 3 == 3);
    let blob = &blobs()[if data.get(1).is_some_and(|b| b & 1 == 1) {
        if with_lines {
            2 + usize::from(data.get(2).is_some_and(|b| b & 1 == 1))
        } else {
            1
        }
    } else {
        0
    }];
    let m = Kallsyms::from_blob(blob.as_bytes(), None, None).unwrap();
    let opts = ResolveOptions {
        size: true,
        kaslr_from_sym: data.first() == Some(&b'K'),
        json: data.first() == Some(&b'J'),
        inline: data.first() == Some(&b'I'),
        strip_prefix: (data.first() == Some(&b'S')).then(|| b"kernel".to_vec()),
        ..Default::default()
    };
    let mut r = Resolver::new(&m, opts.clone());
    let mut out = Vec::new();
    r.run(data, &mut out).unwrap();
    let lines_in = data.split(|&b| b == b'\n').count();
    let lines_out = out.split(|&b| b == b'\n').count();
    // A `Code:` line is followed by its disassembly; every other line is
    // one line out.
    let code = data.windows(6).any(|w| w == b"Code: ");
    assert!(
        opts.json
            || opts.inline
            || lines_out == lines_in
            || lines_out == lines_in + 1
            || (code && lines_out > lines_in)
    );
});

/// Source lines over do_fork and schedule: a chain of two inlined
/// functions, a discriminator, a row without a file.
fn lines() -> SourceTable {
    let s = |v: &[u8]| v.to_vec();
    let strings = vec![s(b"do_fork"), s(b"copy_process"), s(b"dup_task"), s(b"kernel"), s(b"fork.c"), s(b"include/linux"), s(b"sched.h")];
    let node = |parent, name, call_file, call_line| InlineNode { parent, name, call_file, call_line, call_column: 3 };
    let nodes = vec![InlineNode::default(), node(0, 0, 0, 0), node(1, 1, 1, 40), node(2, 2, 2, 7)];
    let row = |a: u64, file, line, node, discriminator| LineRow { address: 0xffff_ffff_8100_0000 + a, file, line, column: 5, node, discriminator };
    SourceTable {
        rows: vec![row(0x100, 1, 10, 1, 0), row(0x110, 2, 20, 3, 2), row(0x120, 1, 12, 2, 0), row(0x200, 0, 0, 1, 0), row(0x600, 0, 0, 0, 0)],
        nodes,
        files: vec![(0, 0), (3, 4), (5, 6)],
        strings,
    }
}
