//! Criterion benches of the library, each beside a baseline run in the same
//! process: address lookups (ksym vs a bare `&[u64]` binary search vs a
//! bcc-style `Vec<(u64, String)>`), name lookups (ksym vs `Vec<String>`), and
//! packing; v2 blobs beside v1 in each group (`ksym_v2` vs `ksym`).
//! Input: the corpus' /proc/kallsyms when ../shared/corpus exists, else the
//! sample in tests/data. Source lines (`lines` group): the committed test
//! program, and `KSYM_VMLINUX` (a vmlinux with DWARF) when set, each beside
//! the addr2line crate's `find_frames` on the same addresses.

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ksym::blob::KallsymsMapped;
use ksym::blob::list::SymbolList;
use ksym::blob::v1::tokens::TokenStrategy;
use ksym::blob::v1::write::pack;
use ksym::blob::v2::KallsymsV2;
use ksym::blob::v2::write::{V2Options, pack_v2};
use ksym::blobfile::AlignedBlob;

fn xz(path: &Path) -> Option<Vec<u8>> {
    let f = std::fs::File::open(path).ok()?;
    let mut out = Vec::new();
    lzma_rs::xz_decompress(&mut std::io::BufReader::new(f), &mut out).ok()?;
    Some(out)
}

fn input() -> (Vec<u8>, Option<Vec<u8>>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let corpus = root.join("../shared/corpus");
    match xz(&corpus.join("kallsyms-6.18-x86_64.txt.xz")) {
        Some(k) => (k, xz(&corpus.join("perf-script-kallsyms-6.18.F-ip.txt.xz"))),
        None => (
            xz(&root.join("tests/data/kallsyms-6.18-sample.txt.xz")).unwrap(),
            None,
        ),
    }
}

/// Text symbols of kallsyms text, as the filter keeps them.
fn text_symbols(k: &[u8]) -> SymbolList {
    let mut l = SymbolList::new();
    for line in k.split(|&b| b == b'\n') {
        if let Ok(ksym::text::nm::NmLine::Symbol(s)) = ksym::text::nm::parse_line(line)
            && ksym::text::nm::is_text_type(s.symbol_type)
        {
            l.push(s.address, s.symbol_type, s.name).unwrap();
        }
    }
    l
}

/// Deterministic xorshift so runs compare.
fn random_addresses(lo: u64, hi: u64, n: usize) -> Vec<u64> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            lo + x % (hi - lo)
        })
        .collect()
}

fn benches(c: &mut Criterion) {
    let (kallsyms, perf) = input();
    let list = text_symbols(&kallsyms);
    let blob = AlignedBlob::copy_from(&pack(&list, TokenStrategy::Optimal).unwrap().blob);
    let m = KallsymsMapped::from_blob(blob.as_bytes(), None, None).unwrap();
    let blob2 = pack_v2(&list, &V2Options::default()).unwrap().blob;
    let v2 = KallsymsV2::from_blob(&blob2, None, None).unwrap();
    let floor: Vec<u64> = m.symbols().map(|s| s.address).collect();
    let naive: Vec<(u64, String)> = m
        .symbols()
        .map(|s| (s.address, s.name.to_string()))
        .collect();
    let (lo, hi) = (floor[0], *floor.last().unwrap());
    let random = random_addresses(lo, m.etext().unwrap_or(hi), 4096);
    let realistic: Vec<u64> = match &perf {
        Some(p) => p
            .split(|&b| b == b'\n')
            .filter_map(|l| ksym::text::hex::parse_u64(l.trim_ascii()))
            .filter(|&a| a >= lo)
            .take(4096)
            .collect(),
        None => random
            .iter()
            .map(|a| floor[floor.partition_point(|&f| f <= *a) - 1] + 0x20)
            .collect(),
    };

    for (label, addrs) in [("random", &random), ("realistic", &realistic)] {
        let mut g = c.benchmark_group(format!("lookup_address/{label}"));
        g.throughput(Throughput::Elements(addrs.len() as u64));
        g.bench_function("ksym", |b| {
            b.iter(|| {
                for &a in addrs {
                    black_box(m.lookup_address(black_box(a)).map(|h| h.offset));
                }
            })
        });
        g.bench_function("ksym_v2", |b| {
            b.iter(|| {
                for &a in addrs {
                    black_box(v2.lookup_address(black_box(a)).map(|h| h.offset));
                }
            })
        });
        g.bench_function("floor_u64_binary_search", |b| {
            b.iter(|| {
                for &a in addrs {
                    black_box(floor.partition_point(|&f| f <= black_box(a)));
                }
            })
        });
        g.bench_function("bcc_vec_u64_string", |b| {
            b.iter(|| {
                for &a in addrs {
                    let i = naive.partition_point(|s| s.0 <= black_box(a));
                    black_box(i.checked_sub(1).map(|i| (naive[i].1.len(), a - naive[i].0)));
                }
            })
        });
        g.finish();
    }

    let names: Vec<String> = random
        .iter()
        .filter_map(|&a| m.lookup_address(a))
        .map(|h| h.symbol.name.to_string())
        .collect();
    let mut sorted_names: Vec<String> = naive.iter().map(|s| s.1.clone()).collect();
    sorted_names.sort();
    let mut g = c.benchmark_group("lookup_name");
    g.throughput(Throughput::Elements(names.len() as u64));
    g.bench_function("ksym", |b| {
        b.iter(|| {
            for n in &names {
                black_box(m.lookup_name(black_box(n.as_bytes())).map(|s| s.address));
            }
        })
    });
    g.bench_function("ksym_v2", |b| {
        b.iter(|| {
            for n in &names {
                black_box(v2.lookup_name(black_box(n.as_bytes())).map(|s| s.address));
            }
        })
    });
    g.bench_function("vec_string_binary_search", |b| {
        b.iter(|| {
            for n in &names {
                black_box(
                    sorted_names
                        .binary_search_by(|s| s.as_str().cmp(black_box(n.as_str())))
                        .is_ok(),
                );
            }
        })
    });
    g.finish();

    let mut g = c.benchmark_group("pack");
    g.sample_size(10);
    g.throughput(Throughput::Elements(list.len() as u64));
    for s in [TokenStrategy::Optimal, TokenStrategy::Seed] {
        g.bench_function(format!("{s:?}"), |b| {
            b.iter(|| black_box(pack(&list, s).unwrap().blob.len()))
        });
    }
    // What ksym-filter writes for these symbols: the lines ksym-pack parses.
    let mut filtered = Vec::new();
    for s in ksym::blob::KallsymsMapped::from_blob(blob.as_bytes(), None, None)
        .unwrap()
        .symbols()
    {
        ksym::text::hex::push_u64_padded(&mut filtered, s.address);
        filtered.extend_from_slice(&[b' ', s.symbol_type, b' ']);
        s.name.extend_into(&mut filtered);
        filtered.push(b'\n');
    }
    g.bench_function("read_lines", |b| {
        b.iter(|| black_box(SymbolList::read_lines(&filtered[..]).unwrap().len()))
    });
    g.bench_function("from_blob_validate", |b| {
        b.iter(|| {
            black_box(
                KallsymsMapped::from_blob(blob.as_bytes(), None, None)
                    .unwrap()
                    .len(),
            )
        })
    });
    g.bench_function("pack_v2", |b| {
        b.iter(|| black_box(pack_v2(&list, &V2Options::default()).unwrap().blob.len()))
    });
    g.bench_function("from_blob_v2_crc_and_shape", |b| {
        b.iter(|| black_box(KallsymsV2::from_blob(&blob2, None, None).unwrap().len()))
    });
    g.finish();
}

/// v2 blobs with the `lines` section of `elf` and its text symbols: 256
/// rows a block (as `ksym-pack` writes them) and 32 (FORMAT.md §15.1).
fn lines_blobs(elf: &Path, list: &SymbolList) -> [(&'static str, AlignedBlob); 2] {
    let addrs = (0..list.len()).map(|i| list.address(i));
    let (table, _, _) = ksym::elf::dwarf::source_table_for(elf, addrs, true).unwrap();
    let mut opts = V2Options {
        lines: Some((table, false)),
        ..V2Options::default()
    };
    let blob = AlignedBlob::copy_from(&pack_v2(list, &opts).unwrap().blob);
    opts.line_block_shift = Some(0);
    let blob32 = AlignedBlob::copy_from(&pack_v2(list, &opts).unwrap().blob);
    [("", blob), ("_32_rows_a_block", blob32)]
}

fn lines(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lines");
    let mut inputs = vec![(
        "inl",
        root.join("inl.elf"),
        text_symbols(&std::fs::read(root.join("inl.elf.syms")).unwrap()),
    )];
    if let Some(v) = std::env::var_os("KSYM_VMLINUX") {
        let v = std::path::PathBuf::from(v);
        let nm = std::process::Command::new("nm")
            .arg("-n")
            .arg(&v)
            .output()
            .unwrap();
        inputs.push(("vmlinux", v, text_symbols(&nm.stdout)));
    }
    let mut g = c.benchmark_group("lines");
    for (name, elf, syms) in inputs {
        let blobs = lines_blobs(&elf, &syms);
        drop(syms);
        let mut addrs = Vec::new();
        // One lookup at a time, from the coded rows, as a kernel looks up.
        for (blocks, blob) in &blobs {
            let k = KallsymsV2::from_blob(blob.as_bytes(), None, None).unwrap();
            let l = *k.lines().unwrap();
            let (lo, hi) = l.span();
            addrs = random_addresses(lo, hi, 10_000);
            g.throughput(Throughput::Elements(addrs.len() as u64));
            g.bench_function(format!("{name}/ksym_find_and_frames{blocks}"), |b| {
                b.iter(|| {
                    let mut n = 0usize;
                    for &a in &addrs {
                        if let Some(r) = l.find(a) {
                            n += l.frames(&r).map(|f| f.line as usize).sum::<usize>();
                        }
                    }
                    black_box(n)
                })
            });
        }
        // Baseline: the addr2line crate over the ELF file itself (after its
        // first pass over every address, so its lazy parsing is done).
        use object::{Object, ObjectSection};
        let data = std::fs::read(&elf).unwrap();
        let obj = object::File::parse(&*data).unwrap();
        let load = |id: gimli::SectionId| -> Result<std::borrow::Cow<'_, [u8]>, gimli::Error> {
            Ok(obj
                .section_by_name(id.name())
                .and_then(|s| s.uncompressed_data().ok())
                .unwrap_or_default())
        };
        let sections = gimli::DwarfSections::load(load).unwrap();
        let dwarf = sections.borrow(|s| gimli::EndianSlice::new(s, gimli::RunTimeEndian::Little));
        let ctx = addr2line::Context::from_dwarf(dwarf).unwrap();
        g.bench_function(format!("{name}/addr2line_crate_find_frames"), |b| {
            b.iter(|| {
                let mut n = 0usize;
                for &a in &addrs {
                    let mut it = ctx.find_frames(a).skip_all_loads().unwrap();
                    while let Ok(Some(f)) = it.next() {
                        n += f.location.and_then(|l| l.line).unwrap_or(0) as usize;
                    }
                }
                black_box(n)
            })
        });
    }
    g.finish();
}

criterion_group!(lookup, benches, lines);
criterion_main!(lookup);
