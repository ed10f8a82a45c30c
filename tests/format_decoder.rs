//! A decoder written from docs/FORMAT.md alone (no code from src/), used to
//! check that what ksym-pack writes is what the document says.

mod common;
use common::*;
#[path = "format_decoder/coded.rs"]
mod coded;
#[path = "format_decoder/module_space.rs"]
mod module_space;
use coded::{BitStream, coded_block, row_codes};

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn pad8(x: usize) -> usize {
    (x + 7) & !7
}

/// FORMAT.md §2, §3: returns (address, type, name) in address order and seqs.
type Decoded = (Vec<(u64, u8, Vec<u8>)>, Vec<u32>);

pub fn decode(b: &[u8]) -> Decoded {
    let n = u64_at(b, 0) as usize;
    let addr_at = 8;
    let off_at = addr_at + 8 * n;
    let seq_at = off_at + 4 * n;
    let names_len_at = pad8(seq_at + 4 * n);
    let names_len = u64_at(b, names_len_at) as usize;
    let names = &b[names_len_at + 8..names_len_at + 8 + names_len];
    let tt_at = pad8(names_len_at + 8 + names_len);
    let tt_len = u64_at(b, tt_at) as usize;
    let table = &b[tt_at + 8..tt_at + 8 + tt_len];
    let ti_at = pad8(tt_at + 8 + tt_len);
    let ntok = u64_at(b, ti_at) as usize;
    assert_eq!(
        b.len(),
        ti_at + 8 + 4 * ntok,
        "the blob ends right after token_index"
    );
    assert!(ntok <= 511);
    let tok_start: Vec<usize> = (0..ntok)
        .map(|i| u32_at(b, ti_at + 8 + 4 * i) as usize)
        .collect();
    let token = |id: usize| {
        let end = if id + 1 < ntok {
            tok_start[id + 1]
        } else {
            tt_len
        };
        &table[tok_start[id]..end]
    };
    // Padding bytes are zero.
    for (from, to) in [
        (seq_at + 4 * n, names_len_at),
        (names_len_at + 8 + names_len, tt_at),
        (tt_at + 8 + tt_len, ti_at),
    ] {
        assert!(
            b[from..to].iter().all(|&x| x == 0),
            "nonzero padding at {from}"
        );
    }
    let mut syms = Vec::with_capacity(n);
    let mut expect_off = 0;
    for i in 0..n {
        let off = u32_at(b, off_at + 4 * i) as usize;
        assert_eq!(off, expect_off, "records are contiguous");
        let ty = names[off];
        let len = u16::from_le_bytes([names[off + 1], names[off + 2]]) as usize;
        let p = &names[off + 3..off + 3 + len];
        let mut name = Vec::new();
        let raw = if p[0] == 0xFF {
            if p.len() >= 4 && p[3] == 0xFF {
                let id = (p[1] as usize) << 8 | p[2] as usize;
                assert!(
                    (256..511).contains(&id),
                    "2-byte form only for ids 256..=510"
                );
                name.extend_from_slice(token(id));
                &p[4..]
            } else {
                assert_eq!(p[2], 0xFF);
                name.extend_from_slice(token(p[1] as usize));
                &p[3..]
            }
        } else {
            p
        };
        assert!(!raw.contains(&0xFF));
        name.extend_from_slice(raw);
        syms.push((u64_at(b, addr_at + 8 * i), ty, name));
        expect_off = off + 3 + len;
    }
    assert_eq!(expect_off, names_len);
    let seqs = (0..n).map(|r| u32_at(b, seq_at + 4 * r)).collect();
    (syms, seqs)
}

fn check(filtered: &[u8]) {
    let blob = run_ok("ksym-pack", &[], filtered);
    let (syms, seqs) = decode(&blob);
    let mut expect: Vec<(u64, u8, Vec<u8>)> = lines(filtered)
        .map(|l| {
            let a = u64::from_str_radix(std::str::from_utf8(&l[..16]).unwrap(), 16).unwrap();
            // v1 has no field for the `\t[module]` column (FORMAT.md §6).
            let name = l[19..].split(|&b| b == b'\t').next().unwrap();
            (a, l[17], name.to_vec())
        })
        .collect();
    expect.sort_by_key(|s| s.0); // stable: aliases keep input order
    assert_eq!(syms, expect);
    // seqs: strictly ascending by (name, index): a sorted permutation.
    for w in seqs.windows(2) {
        let (a, b) = (w[0] as usize, w[1] as usize);
        assert!((&syms[a].2, a) < (&syms[b].2, b));
    }
    assert_eq!(seqs.len(), syms.len());
}

#[test]
fn decoder_from_the_document_reads_sample_blobs() {
    for s in [
        "kallsyms-6.18-sample.txt.xz",
        "System.map-6.1.0-56-sample.xz",
        "rustup-1.29.0.nm-n-sample.txt.xz",
        "cargo-1.95.0.nm-n-sample.txt.xz",
    ] {
        let filtered = run_ok("ksym-filter", &[], &sample(s));
        check(&filtered);
    }
}

#[test]
fn decoder_from_the_document_reads_corpus_blobs() {
    for name in [
        "kallsyms-6.18-x86_64.txt",
        "System.map-6.1.0-56-amd64",
        "cargo-1.95.0.nm-n.txt",
        "rustup-1.29.0.nm-n-C.txt",
    ] {
        let Some(input) = corpus(name) else { return };
        check(&run_ok("ksym-filter", &[], &input));
    }
}

#[test]
fn seed_example_is_laid_out_as_documented() {
    let blob = run_ok(
        "ksym-pack",
        &[],
        b"0000000000001000 T _start\n0000000000001100 T do_fork\n0000000000001200 T cpu_startup_entry\n",
    );
    let (syms, seqs) = decode(&blob);
    assert_eq!(syms.len(), 3);
    assert_eq!(seqs, [0, 2, 1]);
    // FORMAT.md §8: offsets 0, 9, 19; names_len 39; no tokens.
    assert_eq!(
        (u32_at(&blob, 32), u32_at(&blob, 36), u32_at(&blob, 40)),
        (0, 9, 19)
    );
    assert_eq!(u64_at(&blob, 56), 39);
    assert_eq!(u64_at(&blob, blob.len() - 8), 0);
}

// ---- v2 (FORMAT.md part II), again from the document alone ----

/// CRC32C, bit by bit (FORMAT.md §9.1: reflected 0x82F63B78, init and xor-out all ones).
fn crc32c(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 == 1 {
                (c >> 1) ^ 0x82F6_3B78
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// Value `i` of a packed array of `w`-bit values (§10.4).
fn packed(b: &[u8], i: usize, w: usize) -> u64 {
    let mut v = 0u64;
    for k in 0..w {
        let bit = i * w + k;
        if b[bit / 8] >> (bit % 8) & 1 == 1 {
            v |= 1 << k;
        }
    }
    v
}

fn bit(b: &[u8], j: usize) -> bool {
    b[j / 8] >> (j % 8) & 1 == 1
}

/// Address, type, name and module of one symbol.
type Row = (u64, u8, Vec<u8>, Option<Vec<u8>>);

/// Every symbol, in address order (§10–§11).
pub fn decode_v2(b: &[u8]) -> Vec<Row> {
    decode_v2_names(b).0
}

/// [`decode_v2`], and the stored names by rank in name order (§11.1): what
/// a `lines` section's shared function names refer to (§15.1, flag bit 1).
fn decode_v2_names(b: &[u8]) -> (Vec<Row>, Vec<Vec<u8>>) {
    assert_eq!(&b[..8], b"\x89KSYM\r\n\x1a");
    assert_eq!(u16::from_le_bytes([b[8], b[9]]), 4);
    let header_len = u16::from_le_bytes([b[10], b[11]]) as usize;
    // §9.1: bit 0 alone (4-byte type exceptions, §10.3).
    let flags = u32_at(b, 12);
    assert_eq!(flags & !1, 0, "flags");
    let num_syms = u32_at(b, 16) as usize;
    let m = u32_at(b, 20) as usize;
    // §9.1: bit `id - 1` of `sections` for each section listed.
    let present = u32_at(b, 24);
    assert_eq!(present >> 16, 0, "ids 1 to 16");
    let ids: Vec<u32> = (1..=16).filter(|id| present >> (id - 1) & 1 == 1).collect();
    assert_eq!(header_len, 32 + 8 * ids.len());
    assert_eq!(
        u32_at(b, 28),
        crc32c(&[&b[..28], &b[32..header_len]].concat())
    );
    // §9.2: `{crc, len}` per listed id, in id order; each section at the
    // previous one's end rounded up to 8; an absent section is empty.
    let mut sec: std::collections::HashMap<u32, &[u8]> = (1..=16).map(|id| (id, &b[..0])).collect();
    let mut end = header_len;
    for (s, &id) in ids.iter().enumerate() {
        let d = 32 + 8 * s;
        let (crc, len) = (u32_at(b, d), u32_at(b, d + 4) as usize);
        let off = pad8(end);
        assert!(b[end..off].iter().all(|&x| x == 0));
        assert_eq!(crc32c(&b[off..off + len]), crc, "section {id}");
        sec.insert(id, &b[off..off + len]);
        end = off + len;
    }
    assert_eq!(end, b.len());
    let w = if m <= 2 {
        1
    } else {
        (usize::BITS - (m - 1).leading_zeros()) as usize
    };

    // §10.2 addresses.
    let blocks = sec[&2];
    let addr = |j: usize| {
        let h = 16 * (j / 64);
        let base = u64_at(blocks, h);
        let bitpos = u32_at(blocks, h + 8) as usize;
        let (width, shift) = (blocks[h + 12] as usize, blocks[h + 13]);
        let mut v = 0u64;
        for k in 0..width {
            let bt = bitpos + (j % 64) * width + k;
            if bit(sec[&3], bt) {
                v |= 1 << k;
            }
        }
        base + (v << shift)
    };
    // §10.2 address buckets: the table after the block headers, and
    // §12.1 step 1 through it equals a plain count, at every stored address
    // and one below it.
    let nblocks = m.div_ceil(64);
    let table = &blocks[16 * nblocks..];
    let (shift, nbuckets) = (u32_at(table, 0), u32_at(table, 4) as usize);
    assert!(shift <= 63 && nbuckets <= nblocks);
    assert_eq!(table.len(), 8 + 4 * (nbuckets + 1));
    let entry = |k: usize| u32_at(table, 8 + 4 * k) as usize;
    let all: Vec<u64> = (0..m).map(addr).collect();
    let rank_by_buckets = |a: u64| -> usize {
        if m == 0 || a < u64_at(blocks, 0) {
            return 0;
        }
        let k = ((a - u64_at(blocks, 0)) >> shift) as usize;
        let (lo, hi) = if k < nbuckets {
            (entry(k), entry(k + 1))
        } else {
            (entry(nbuckets), nblocks)
        };
        let q = lo + (lo..hi).filter(|&bk| u64_at(blocks, 16 * bk) <= a).count();
        if q == 0 {
            return 0;
        }
        let first = 64 * (q - 1);
        first
            + (first..(first + 64).min(m))
                .filter(|&j| all[j] <= a)
                .count()
    };
    for (j, &a) in all.iter().enumerate().step_by(7) {
        for x in [a, a.wrapping_sub(1), a + 1] {
            assert_eq!(
                rank_by_buckets(x),
                all.partition_point(|&y| y <= x),
                "row {j}, address {x:#x}"
            );
        }
    }
    // §10.3 types.
    let exc: std::collections::HashMap<u32, u8> = if flags & 1 == 1 {
        sec[&5]
            .chunks(4)
            .map(|e| (u32_at(e, 0) & 0xFF_FFFF, e[3]))
            .collect()
    } else {
        sec[&5].chunks(8).map(|e| (u32_at(e, 0), e[4])).collect()
    };
    let ty = |j: usize| {
        *exc.get(&(j as u32))
            .unwrap_or(if bit(sec[&4], j) { &b'T' } else { &b't' })
    };
    // §10.5 modules.
    let module = |j: usize| -> Option<Vec<u8>> {
        let md = sec.get(&12).filter(|s| !s.is_empty())?;
        let (nmods, nruns) = (u32_at(md, 0) as usize, u32_at(md, 4) as usize);
        let offs = 8 + 8 * nruns;
        let names = &md[offs + 4 * (nmods + 1)..];
        let id = (0..nruns)
            .rev()
            .find(|&i| u32_at(md, 8 + 8 * i) as usize <= j)
            .map(|i| u32_at(md, 12 + 8 * i) as usize)?;
        (id > 0).then(|| {
            names[u32_at(md, offs + 4 * (id - 1)) as usize..u32_at(md, offs + 4 * id) as usize]
                .to_vec()
        })
    };
    // §11.2/§11.3: every name in rank order, decoded bucket by bucket.
    let tok = sec[&11];
    let index = sec[&9];
    let names_sec = sec[&10];
    let mut by_rank: Vec<Vec<u8>> = Vec::with_capacity(m);
    for bk in 0..m.div_ceil(16) {
        let start = u32_at(index, 4 * bk) as usize;
        let stop = if 4 * (bk + 1) < index.len() {
            u32_at(index, 4 * (bk + 1)) as usize
        } else {
            names_sec.len()
        };
        let mut at = start;
        let mut prev: Vec<u8> = Vec::new();
        for k in 0..(m - 16 * bk).min(16) {
            let mut lcp = 0usize;
            if k > 0 {
                let mut shift = 0;
                loop {
                    let x = names_sec[at];
                    at += 1;
                    lcp |= ((x & 0x7F) as usize) << shift;
                    shift += 7;
                    if x & 0x80 == 0 {
                        break;
                    }
                }
            }
            let mut name = prev[..lcp].to_vec();
            // A second byte is never 0, so the first 0 ends the codes.
            let end = at + names_sec[at..].iter().position(|&x| x == 0).unwrap();
            name.extend(expand_codes(tok, &names_sec[at..end]));
            at = end + 1;
            by_rank.push(name.clone());
            prev = name;
        }
        assert_eq!(at, stop, "bucket {bk} ends where the next starts");
    }
    // §10.4: addr_to_name directly; name_to_addr by the documented walk.
    let rank_of = |j: usize| packed(sec[&7], j, w) as usize;
    let n2a = sec[&8];
    let words = m.div_ceil(64);
    let marks_len = pad8(8 * words + 4 * words);
    // An absent name_to_addr: no marks (§10.4).
    let marked = |x: usize| !n2a.is_empty() && bit(n2a, x);
    let mark_rank = |x: usize| (0..x).filter(|&y| marked(y)).count();
    let back = |x: usize| packed(&n2a[marks_len..], mark_rank(x), w) as usize;
    for r in (0..m).step_by(97) {
        let (mut x, mut jumped, mut found) = (r, false, None);
        for _ in 0..18 {
            if rank_of(x) == r {
                found = Some(x);
                break;
            }
            if marked(x) && !jumped {
                jumped = true;
                x = back(x);
            } else {
                x = rank_of(x);
            }
        }
        let j = found.expect("the inverse is found within 2T + 2 steps");
        assert_eq!(rank_of(j), r);
    }
    // §10.1: rows, with the folded companions put back.
    let mut out = Vec::with_capacity(num_syms);
    for j in 0..m {
        let name = by_rank[rank_of(j)].clone();
        // An absent pfx: nothing folded (§10.1).
        if !sec[&6].is_empty() && bit(sec[&6], j) {
            out.push((
                addr(j) - 16,
                ty(j),
                [&b"__pfx_"[..], &name].concat(),
                module(j),
            ));
        }
        out.push((addr(j), ty(j), name, module(j)));
    }
    assert_eq!(out.len(), num_syms);
    // §11.1: names strictly ascending by (name, row).
    let mut rows: Vec<usize> = (0..m).collect();
    rows.sort_by_key(|&j| rank_of(j));
    for p in rows.windows(2) {
        assert!((&by_rank[rank_of(p[0])], p[0]) < (&by_rank[rank_of(p[1])], p[1]));
    }
    // §10.6: the bounds present, in order, then release and build-id.
    let meta = sec[&1];
    let bounds = u32_at(meta, 0);
    assert!(bounds <= 0xF);
    let (rel, bid) = (
        u16::from_le_bytes([meta[4], meta[5]]) as usize,
        u16::from_le_bytes([meta[6], meta[7]]) as usize,
    );
    let nb = bounds.count_ones() as usize;
    assert_eq!(meta.len(), 8 + 8 * nb + rel + bid);
    let mut at = 8;
    for (k, want) in ["_stext", "_etext", "_sinittext", "_einittext"]
        .iter()
        .enumerate()
    {
        let first = out.iter().find(|r| r.2 == want.as_bytes()).map(|r| r.0);
        if bounds >> k & 1 == 1 {
            assert_eq!(Some(u64_at(meta, at)), first, "{want}");
            at += 8;
        } else {
            assert_eq!(first, None, "{want}");
        }
    }
    (out, by_rank)
}

/// Decodes the v2 blob of `filtered` from the document and compares; returns
/// its token table's code count (§11.3).
fn check_v2(filtered: &[u8]) -> usize {
    let blob = run_ok("ksym-pack", &["--format", "v2"], filtered);
    let syms = decode_v2(&blob);
    let mut expect: Vec<Row> = lines(filtered)
        .map(|l| {
            let a = u64::from_str_radix(std::str::from_utf8(&l[..16]).unwrap(), 16).unwrap();
            let mut parts = l[19..].splitn(2, |&b| b == b'\t');
            let name = parts.next().unwrap().to_vec();
            let module = parts.next().map(|m| m[1..m.len() - 1].to_vec());
            (a, l[17], name, module)
        })
        .collect();
    expect.sort_by_key(|s| s.0);
    assert_eq!(syms.len(), expect.len());
    for (got, want) in syms.iter().zip(&expect) {
        assert_eq!(got, want);
    }
    let tok = v2_section(&blob, 11);
    u16::from_le_bytes([tok[0], tok[1]]) as usize
}

#[test]
fn v2_decoder_from_the_document_reads_sample_blobs() {
    for s in [
        "kallsyms-6.18-sample.txt.xz",
        "System.map-6.1.0-56-sample.xz",
        "System.map-6.1.0-56-cloud-arm64-sample.xz",
        "rustup-1.29.0.nm-n-sample.txt.xz",
        "cargo-1.95.0.nm-n-sample.txt.xz",
    ] {
        check_v2(&run_ok("ksym-filter", &[], &sample(s)));
    }
}

#[test]
fn v2_decoder_from_the_document_reads_every_corpus_blob() {
    let mut most = 0;
    for name in CORPUS_SYMBOL_LISTS {
        let Some(input) = corpus(name) else { return };
        most = most.max(check_v2(&run_ok("ksym-filter", &[], &input)));
    }
    // The kernels' tables outgrow one byte: two-byte codes were decoded.
    assert!(most > 256, "{most} codes at most");
}

// ---- v2 `lines` (FORMAT.md §15), from the document alone ----

/// The bytes of section `id` of a v2 blob (§9.2), which must be listed.
fn v2_section(b: &[u8], id: u32) -> &[u8] {
    let present = u32_at(b, 24);
    assert_eq!(present >> (id - 1) & 1, 1, "section {id} listed");
    let mut end = 32 + 8 * present.count_ones() as usize;
    for (s, k) in (1..=16).filter(|k| present >> (k - 1) & 1 == 1).enumerate() {
        let (crc, len) = (u32_at(b, 32 + 8 * s), u32_at(b, 36 + 8 * s) as usize);
        let off = pad8(end);
        end = off + len;
        if k == id {
            assert_eq!(crc32c(&b[off..end]), crc);
            return &b[off..end];
        }
    }
    unreachable!()
}

fn uleb(b: &[u8], at: &mut usize) -> u64 {
    let (mut v, mut sh) = (0u64, 0);
    loop {
        let x = b[*at];
        *at += 1;
        v |= u64::from(x & 0x7F) << sh;
        if x < 0x80 {
            return v;
        }
        sh += 7;
    }
}

fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

/// A decoded `lines` section: rows (address, file, line, column, node),
/// node records (parent, name, call file, call line, call column), files
/// as paths, strings.
struct Lines {
    rows: Vec<(u64, u64, i64, u64, i64)>,
    discs: Vec<u64>,
    nodes: Vec<[u64; 5]>,
    paths: Vec<String>,
    strings: Vec<String>,
}

/// §15 of a blob whose stored names by rank are `by_rank`.
fn decode_lines(s: &[u8], by_rank: &[Vec<u8>]) -> Lines {
    let flags = u32_at(s, 0);
    assert_eq!(flags & !31, 0, "flags");
    let columns = flags & 1 == 1;
    let far_advance = flags & 4 == 4;
    let (nrows, nnodes, nfiles, nstrings) = (
        u32_at(s, 4) as usize,
        u32_at(s, 8) as usize,
        u32_at(s, 12) as usize,
        u32_at(s, 16) as usize,
    );
    let base = u64_at(s, 24);
    let w: Vec<usize> = s[32..38].iter().map(|&x| x as usize).collect();
    // §15.1: byte 38 is the block shift, 32 << it rows a block.
    assert!(s[38] <= 3, "block shift {}", s[38]);
    let per = 32usize << s[38];
    let mut parts = Vec::new();
    let mut off = 72;
    for i in 0..7 {
        let len = u32_at(s, 40 + 4 * i) as usize;
        parts.push(&s[off..off + len]);
        off = pad8(off + len);
    }
    assert_eq!(off, s.len());
    // §15.1 part 7, laid out as §11.3.
    let tok = parts[6];
    let strings: Vec<String> = (0..nstrings)
        .map(|i| {
            let (a, b) = (
                packed(parts[4], i, w[5]) as usize,
                packed(parts[4], i + 1, w[5]) as usize,
            );
            let bytes = expand_codes(tok, &parts[5][a..b]);
            String::from_utf8(bytes).unwrap()
        })
        .collect();
    // §15.1, flag bit 1: node name `nstrings + r` is the stored name of
    // rank r; file names stay below `nstrings`.
    let mut strings = strings;
    if flags & 2 != 0 {
        strings.extend(
            by_rank
                .iter()
                .map(|n| String::from_utf8(n.clone()).unwrap()),
        );
    }
    let paths: Vec<String> = (0..nfiles)
        .map(|i| {
            let d = &strings[packed(parts[3], 2 * i, w[1]) as usize];
            let b = &strings[packed(parts[3], 2 * i + 1, w[1]) as usize];
            if d.is_empty() {
                b.clone()
            } else {
                format!("{d}/{b}")
            }
        })
        .collect();
    let nw: usize = w[..5].iter().sum();
    // Flag bit 4: (parent, name) records, the bitvector of nodes with a
    // parent, their call sites by rank; each piece 8-aligned.
    let apart = flags & 16 != 0;
    let rec_w = if apart { w[0] + w[1] } else { nw };
    let bv_at = pad8((nnodes * rec_w).div_ceil(8));
    let words = nnodes.div_ceil(64);
    let sites_at = bv_at + pad8(8 * words + 4 * words);
    let has_parent = |i: usize| parts[2][bv_at + i / 8] >> (i % 8) & 1 == 1;
    if apart {
        let ones = (0..nnodes).filter(|&i| has_parent(i)).count();
        let site_w = w[2] + w[3] + w[4];
        assert_eq!(parts[2].len(), sites_at + 8 * (ones * site_w).div_ceil(64));
        for k in 0..words {
            let below = (0..64 * k).filter(|&i| has_parent(i)).count();
            assert_eq!(u32_at(parts[2], bv_at + 8 * words + 4 * k) as usize, below);
        }
    }
    let nodes: Vec<[u64; 5]> = (0..nnodes)
        .map(|i| {
            let mut f = [0u64; 5];
            let mut at = (0, i * rec_w);
            for (k, v) in f.iter_mut().enumerate() {
                if apart && k == 2 {
                    if !has_parent(i) {
                        break;
                    }
                    let rank = (0..i).filter(|&j| has_parent(j)).count();
                    at = (sites_at, rank * (w[2] + w[3] + w[4]));
                }
                let (base, bit) = at;
                for x in 0..w[k] {
                    if parts[2][base + (bit + x) / 8] >> ((bit + x) % 8) & 1 == 1 {
                        *v |= 1 << x;
                    }
                }
                at.1 += w[k];
            }
            assert!(!apart || has_parent(i) == (f[0] != 0), "node {i}'s bit");
            // The parent is stored as its distance back (0: none).
            if f[0] != 0 {
                f[0] = i as u64 - f[0];
            }
            f
        })
        .collect();
    // §15.2 rows, or §15.6's coded rows.
    let mut rows = Vec::new();
    let mut discs = Vec::new();
    if flags & 8 != 0 {
        assert!(!far_advance, "flag bit 2 with bit 3");
        let (codes, stream) = row_codes(parts[1]);
        for blk in 0..nrows.div_ceil(per) {
            let count = per.min(nrows - per * blk);
            let addr = base + u64::from(u32_at(parts[0], 8 * blk));
            let mut bits = BitStream {
                s: stream,
                pos: u32_at(parts[0], 8 * blk + 4) as usize,
            };
            coded_block(
                &codes, &mut bits, addr, count, columns, &mut rows, &mut discs,
            );
        }
        assert!(rows.len() == nrows);
    }
    for blk in (0..nrows.div_ceil(per)).filter(|_| flags & 8 == 0) {
        let mut at = u32_at(parts[0], 8 * blk + 4) as usize;
        let r = parts[1];
        let mut addr = base + u64::from(u32_at(parts[0], 8 * blk));
        let mut file = uleb(r, &mut at);
        let mut line = uleb(r, &mut at) as i64;
        let mut col = if columns { uleb(r, &mut at) } else { 0 };
        let mut node = uleb(r, &mut at) as i64;
        let mut disc = uleb(r, &mut at);
        let mut recent: Vec<(i64, u64, i64)> = Vec::new();
        let mut top = node;
        let touch = |recent: &mut Vec<(i64, u64, i64)>, n: i64, f: u64, l: i64| {
            recent.retain(|e| (e.0, e.1) != (n, f));
            recent.insert(0, (n, f, l));
            recent.truncate(8);
        };
        touch(&mut recent, node, file, line);
        rows.push((addr, file, line, col, node));
        discs.push(disc);
        for _ in 1..per.min(nrows - per * blk) {
            let op = r[at];
            at += 1;
            disc = 0;
            match op {
                0x00..=0x7F => {
                    addr += u64::from(op >> 3) + 1;
                    line += i64::from(op & 7) - 2;
                }
                0x80..=0xBF => {
                    addr += uleb(r, &mut at);
                    let (n, f, l) = recent[usize::from(op >> 3 & 7)];
                    (node, file, line) = (n, f, l + i64::from(op & 7) - 2);
                }
                0xC8..=0xD7 => {
                    addr += uleb(r, &mut at);
                    let d = unzigzag(uleb(r, &mut at));
                    let (n, f, l) = recent[usize::from(op & 7)];
                    (node, file, line) = (n, f, l + d);
                    if op >= 0xD0 {
                        disc = uleb(r, &mut at);
                    }
                }
                0xE0..=0xFF => {
                    addr += uleb(r, &mut at);
                    let (n, f, l) = recent[usize::from(op >> 2 & 7)];
                    (node, file, line) = (n, f, l + i64::from(op & 3) - 1);
                    disc = uleb(r, &mut at);
                }
                0xD8..=0xDF if far_advance => {
                    let x = u64::from(op & 7) << 8 | u64::from(r[at]);
                    at += 1;
                    addr += (x >> 6) + 1;
                    line += (x & 63) as i64 - 32;
                }
                0xC0..=0xC7 => {
                    addr += uleb(r, &mut at);
                    line += unzigzag(uleb(r, &mut at));
                    if op & 1 == 1 {
                        file = uleb(r, &mut at);
                    }
                    if op & 2 == 2 {
                        node = top + unzigzag(uleb(r, &mut at));
                    }
                    if op & 4 == 4 {
                        disc = uleb(r, &mut at);
                    }
                }
                _ => panic!("opcode {op:#x}"),
            }
            if columns {
                col = uleb(r, &mut at);
            }
            touch(&mut recent, node, file, line);
            top = top.max(node);
            rows.push((addr, file, line, col, node));
            discs.push(disc);
        }
    }
    assert_eq!(discs.len(), rows.len());
    Lines {
        rows,
        discs,
        nodes,
        paths,
        strings,
    }
}

/// `ksym-resolve --json BLOB`'s frames for each line of `input`, as
/// (function, path, line, column or 0): what [`frames_at`] decodes.
fn resolved_frames(blob: &std::path::Path, input: &[u8]) -> Vec<Vec<(String, String, u64, u64)>> {
    let out = run_ok("ksym-resolve", &["--json", blob.to_str().unwrap()], input);
    lines(&out)
        .map(|line| {
            let v: serde_json::Value = serde_json::from_slice(line).unwrap();
            v["frames"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| {
                    let s = |k: &str| f[k].as_str().unwrap().to_owned();
                    let n = |k: &str| f[k].as_u64();
                    (
                        s("function"),
                        s("file"),
                        n("line").unwrap(),
                        n("column").unwrap_or(0),
                    )
                })
                .collect()
        })
        .collect()
}

/// §15.3: the frames of `addr` as (function, path, line, column).
fn frames_at(l: &Lines, addr: u64) -> Vec<(String, String, u64, u64)> {
    let Some(i) = l.rows.iter().rposition(|r| r.0 <= addr) else {
        return Vec::new();
    };
    let (_, file, line, col, node) = l.rows[i];
    if file == 0 {
        return Vec::new(); // no line information (§15, decided points)
    }
    let name = |n: usize| {
        if n == 0 {
            String::new()
        } else {
            l.strings[l.nodes[n][1] as usize].clone()
        }
    };
    let mut out = vec![(
        name(node as usize),
        l.paths[file as usize].clone(),
        line as u64,
        col,
    )];
    let mut n = node as usize;
    while n != 0 && l.nodes[n][0] != 0 {
        let [p, _, cf, cl, cc] = l.nodes[n];
        out.push((name(p as usize), l.paths[cf as usize].clone(), cl, cc));
        n = p as usize;
    }
    out
}

/// The address of `name` in a ksym-filter list.
fn syms_addr(list: &[u8], name: &str) -> u64 {
    let l = lines(list)
        .find(|l| &l[19..] == name.as_bytes())
        .unwrap_or_else(|| panic!("{name}"));
    u64::from_str_radix(std::str::from_utf8(&l[..16]).unwrap(), 16).unwrap()
}

#[test]
fn lines_decoder_from_the_document_agrees_with_ksym_resolve() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lines");
    let elf = data.join("inl.elf");
    let syms = std::fs::read(data.join("inl.elf.syms")).unwrap();
    // With columns, 32 rows a block: the table's 66 rows decode from three
    // blocks; without, 256 (the default): one.
    for columns in [false, true] {
        let mut args = vec!["--format", "v2", "--lines", elf.to_str().unwrap()];
        if columns {
            args.extend(["--columns", "--line-block", "32"]);
        }
        let blob = run_ok("ksym-pack", &args, &syms);
        let sec = v2_section(&blob, 13);
        assert_eq!(sec[38], if columns { 0 } else { 3 }, "block shift");
        assert!(!columns || u32_at(sec, 4) > 64, "three blocks or more");
        // A host blob shares its function names with the symbols.
        assert_eq!(u32_at(sec, 0) & 2, 2, "flag bit 1");
        // Its rows use the far advance (§15.2), decoded below.
        assert_eq!(u32_at(sec, 0) & 4, 4, "flag bit 2");
        let l = decode_lines(sec, &decode_v2_names(&blob).1);
        assert!(l.nodes.len() > 5 && l.paths.len() > 2);
        let (lo, hi) = (l.rows[0].0, l.rows.last().unwrap().0);
        let addrs: Vec<u64> = (lo..hi).collect();
        let dir = scratch(&format!("lines-doc-{columns}"));
        let path = dir.join("b.v2");
        std::fs::write(&path, &blob).unwrap();
        let input: String = addrs.iter().map(|a| format!("{a:#x}\n")).collect();
        let mut with_columns = 0;
        for (a, got) in addrs.iter().zip(resolved_frames(&path, input.as_bytes())) {
            let want = frames_at(&l, *a);
            with_columns += want.iter().filter(|f| f.3 != 0).count();
            assert_eq!(got, want, "{a:#x}");
        }
        assert_eq!(with_columns > 0, columns);
        // Discriminators: as binutils prints them on oops lines.
        for (i, &d) in l.discs.iter().enumerate() {
            if d != 0 && l.rows[i].1 != 0 {
                let (a, node) = (l.rows[i].0, l.rows[i].4);
                let name = &l.strings[l.nodes[node as usize][1] as usize];
                let off = a - syms_addr(&syms, name);
                let line = format!(" {name}+{off:#x}/0x1\n");
                let out = run_ok("ksym-resolve", &[path.to_str().unwrap()], line.as_bytes());
                let want = format!(":{} (discriminator {d})", l.rows[i].2);
                assert!(String::from_utf8_lossy(&out).contains(&want), "{a:#x}");
            }
        }
    }
}

/// §11.3: the expansion of `coded` (whole codes, no end byte) by the token
/// table `tok`: a count, `count + 1` u16 offsets, the expansions; a byte
/// below `256 - prefixes` is a code, a higher one a prefix that the next
/// (nonzero) byte completes.
fn expand_codes(tok: &[u8], coded: &[u8]) -> Vec<u8> {
    let count = u16::from_le_bytes([tok[0], tok[1]]) as usize;
    let off = |k: usize| u16::from_le_bytes([tok[2 + 2 * k], tok[3 + 2 * k]]) as usize;
    let bytes = &tok[2 + 2 * (count + 1)..];
    assert_eq!((off(0), off(count)), (0, bytes.len()), "§11.3 offsets");
    let prefixes = if count <= 256 {
        0
    } else {
        (count - 256).div_ceil(254)
    };
    let one = 256 - prefixes;
    let mut out = Vec::new();
    let mut i = 0;
    while i < coded.len() {
        let b = coded[i] as usize;
        let c = if b < one {
            i += 1;
            b
        } else {
            let s = coded[i + 1] as usize;
            assert_ne!(s, 0, "§11.3: a second byte is never 0");
            i += 2;
            one + (b - one) * 255 + s - 1
        };
        assert!(c > 0 && c < count, "code {c} of {count}");
        out.extend_from_slice(&bytes[off(c)..off(c + 1)]);
    }
    out
}
