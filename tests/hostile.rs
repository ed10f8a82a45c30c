//! Hostile input, one row per case of issue #3: every bad input gets a clear
//! error (naming the line or byte offset) or a correct answer; nothing panics
//! (exit 101) and nothing is lost.

mod common;
use common::*;
use ksym::blob::list::SymbolList;
use ksym::blob::v1::tokens::TokenStrategy;
use ksym::blob::v1::write::pack;
use ksym::blob::{BlobErrorKind, KallsymsMapped};
use ksym::blobfile::AlignedBlob;
use std::io::{Read, Write};
use std::process::{Command, Stdio};

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// filter -> pack -> dump, returning the dump.
fn through(input: &[u8]) -> Vec<u8> {
    let filtered = run_ok("ksym-filter", &[], input);
    let blob = run_ok("ksym-pack", &[], &filtered);
    let dir = scratch(&format!("through-{}", input.len()));
    let p = dir.join("b.bin");
    std::fs::write(&p, blob).unwrap();
    run_ok("ksym-pack", &["--dump", p.to_str().unwrap()], b"")
}

#[test]
fn input_lines_table() {
    let long_name = vec![b'x'; 5000];
    let mut long_line = b"ffffffff81000000 T ".to_vec();
    long_line.extend_from_slice(&long_name);
    long_line.push(b'\n');
    // (case, input, expected dump)
    let rows: Vec<(&str, Vec<u8>, Vec<u8>)> = vec![
        ("line over 4096 bytes", long_line.clone(), long_line.clone()),
        (
            "non-UTF-8 bytes",
            b"0000000000001000 T caf\xe9_\x80\n".to_vec(),
            b"0000000000001000 T caf\xe9_\x80\n".to_vec(),
        ),
        (
            "windows line endings and blank lines",
            b"\r\n0000000000001000 T a\r\n\n   \n0000000000001010 t b\r\n".to_vec(),
            b"0000000000001000 T a\n0000000000001010 t b\n".to_vec(),
        ),
        (
            "nm lines with no address",
            b"                 U memcpy\n                 w __gmon_start__\n0000000000001000 T main\n".to_vec(),
            b"0000000000001000 T main\n".to_vec(),
        ),
        (
            "8- and 16-digit addresses",
            b"c0100000 T _text\nffffffff81000000 T _stext\n".to_vec(),
            b"00000000c0100000 T _text\nffffffff81000000 T _stext\n".to_vec(),
        ),
        (
            "addresses out of order, aliases keep input order",
            b"0000000000002000 T b\n0000000000001000 T a1\n0000000000001000 T a0\n".to_vec(),
            b"0000000000001000 T a1\n0000000000001000 T a0\n0000000000002000 T b\n".to_vec(),
        ),
        (
            "duplicate names",
            b"0000000000001000 t dup\n0000000000002000 t dup\n".to_vec(),
            b"0000000000001000 t dup\n0000000000002000 t dup\n".to_vec(),
        ),
        (
            "non-text symbols, mapping symbols and local labels dropped",
            b"0000000000001000 D data\n0000000000001000 T $x\n0000000000001004 t .Ltmp1\n0000000000001008 T f\n".to_vec(),
            b"0000000000001008 T f\n".to_vec(),
        ),
    ];
    for (case, input, want) in rows {
        assert_eq!(through(&input), want, "{case}");
    }
}

#[test]
fn names_at_and_past_the_record_limit() {
    let mut ok = b"0000000000001000 T ".to_vec();
    ok.extend(std::iter::repeat_n(b'n', 65_535));
    ok.push(b'\n');
    assert_eq!(through(&ok), ok);

    let mut too_long = b"0000000000001000 T a\n0000000000001010 T ".to_vec();
    too_long.extend(std::iter::repeat_n(b'n', 65_536));
    too_long.push(b'\n');
    let out = run("ksym-pack", &[], &too_long);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "no partial blob");
    let e = stderr(&out);
    assert!(e.contains("line 2") && e.contains("65536 bytes"), "{e}");
}

#[test]
fn bad_lines_are_named_and_counted() {
    let input = b"0000000000001000 T a\nffffffff81000000 T \ngarbage here\n0000000000002000 T b\n";
    let out = run("ksym-filter", &[], input);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        out.stdout, b"0000000000001000 T a\n0000000000002000 T b\n",
        "good lines still written"
    );
    let e = stderr(&out);
    assert!(
        e.contains("-:2: not a symbol line (expected a symbol name"),
        "{e}"
    );
    assert!(
        e.contains("-:3: not a symbol line (expected an address"),
        "{e}"
    );
    assert!(e.contains("2 line(s)"), "{e}");

    let out = run(
        "ksym-pack",
        &[],
        b"0000000000001000 T a\n                 U memcpy\n",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("line 2: expected an address"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_name_with_0xff_is_refused_and_no_file_is_left() {
    let dir = scratch("ff-name");
    let target = dir.join("k.bin");
    let out = run(
        "ksym-pack",
        &["-o", target.to_str().unwrap()],
        b"0000000000001000 T ok\n0000000000001010 T \xffbad\n",
    );
    assert_eq!(out.status.code(), Some(1));
    let e = stderr(&out);
    assert!(
        e.contains("line 2") && e.contains("0xFF at offset 0"),
        "{e}"
    );
    assert!(!target.exists());
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "no temporary file left"
    );
}

#[test]
fn a_full_disk_is_an_error_and_a_missing_directory_is_named() {
    let dir = scratch("full");
    let input = dir.join("in.txt");
    std::fs::write(&input, sample("System.map-6.1.0-56-sample.xz")).unwrap();
    // The blob streams out in pieces: the first failed write ends the run.
    if let Ok(full) = std::fs::File::create("/dev/full") {
        let out = Command::new(bin("ksym-pack"))
            .arg(&input)
            .stdout(full)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("writing stdout: No space left"),
            "{}",
            stderr(&out)
        );
    }
    // -o gives the mode `> FILE` would (0666 less the umask), not tempfile's 0600.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let (blob, plain) = (dir.join("k.bin"), dir.join("plain"));
        run_ok(
            "ksym-pack",
            &["-o", blob.to_str().unwrap(), input.to_str().unwrap()],
            b"",
        );
        std::fs::File::create(&plain).unwrap();
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode();
        assert_eq!(mode(&blob), mode(&plain));
    }
    let missing = dir.join("no/such/dir/k.bin");
    let out = run(
        "ksym-pack",
        &["-o", missing.to_str().unwrap(), input.to_str().unwrap()],
        b"",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no/such/dir/k.bin"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn usage_errors_exit_2() {
    for (bin, args) in [
        ("ksym-pack", &["--frobnicate"][..]),
        ("ksym-resolve", &[][..]),
        ("ksym-filter", &["--max-errors"][..]),
    ] {
        let out = run(bin, args, b"");
        assert_eq!(
            out.status.code(),
            Some(2),
            "{bin} {args:?}: {}",
            stderr(&out)
        );
    }
}

fn good_blob() -> Vec<u8> {
    let mut l = SymbolList::new();
    let names: &[&[u8]] = &[
        b"_stext",
        b"startup_64",
        b"startup_64_alias",
        b"__pfx_do_fork_common",
        b"do_fork_common_a",
        b"do_fork_common_b",
        b"do_fork_common_c",
        b"_etext",
        b"_sinittext",
        b"init_a",
        b"_einittext",
    ];
    let addrs = [
        0x1000, 0x1000, 0x1000, 0x1100, 0x1110, 0x1200, 0x1300, 0x1400, 0x9000, 0x9000, 0x9100,
    ];
    for (n, a) in names.iter().zip(addrs) {
        l.push(a, b'T', n).unwrap();
    }
    // Many shared prefixes so that tokens are used.
    for i in 0..40u64 {
        l.push(
            0x1310 + i,
            b't',
            format!("do_fork_common_helper_{i}").as_bytes(),
        )
        .unwrap();
    }
    pack(&l, TokenStrategy::Optimal).unwrap().blob
}

fn check(bytes: &[u8]) -> Result<(), BlobErrorKind> {
    let a = AlignedBlob::copy_from(bytes);
    KallsymsMapped::from_blob(a.as_bytes(), None, None)
        .map(|_| ())
        .map_err(|e| e.kind)
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn malformed_blobs_table() {
    let good = good_blob();
    assert_eq!(check(&good), Ok(()));
    let a = AlignedBlob::copy_from(&good);
    let m = KallsymsMapped::from_blob(a.as_bytes(), None, None).unwrap();
    assert!(m.num_tokens() > 0, "the blob uses tokens");
    let n = m.len();
    let (addr_at, off_at, seq_at) = (8, 8 + 8 * n, 8 + 12 * n);
    let names_at = (seq_at + 4 * n).div_ceil(8) * 8 + 8;
    let s = m.section_sizes();
    let table_len_at = (names_at + s.names).div_ceil(8) * 8;
    let index_at = (table_len_at + 8 + s.token_table).div_ceil(8) * 8 + 8;

    type Mutation = Box<dyn Fn(&mut Vec<u8>)>;
    type Row = (&'static str, Mutation, fn(&BlobErrorKind) -> bool);
    let rows: Vec<Row> = vec![
        ("empty", Box::new(|b| b.clear()), |k| {
            matches!(k, BlobErrorKind::Truncated(_))
        }),
        (
            "num_syms huge (overflow)",
            Box::new(|b| b[..8].copy_from_slice(&(u64::MAX / 4).to_le_bytes())),
            |k| {
                matches!(
                    k,
                    BlobErrorKind::CountOverflow(_) | BlobErrorKind::Truncated(_)
                )
            },
        ),
        (
            "num_syms past u32",
            Box::new(|b| b[..8].copy_from_slice(&(1u64 << 32).to_le_bytes())),
            |k| matches!(k, BlobErrorKind::CountOverflow(_)),
        ),
        (
            "offset past the end",
            Box::new(move |b| put_u32(b, off_at + 4, 0x7fff_0000)),
            |k| matches!(k, BlobErrorKind::RecordsNotContiguous { index: 1 }),
        ),
        (
            "record length past the end",
            Box::new(move |b| b[names_at + 1..names_at + 3].copy_from_slice(&[0xff, 0xff])),
            |k| {
                matches!(
                    k,
                    BlobErrorKind::RecordPastEnd { index: 0 }
                        | BlobErrorKind::RecordsNotContiguous { .. }
                )
            },
        ),
        (
            "token id past the table",
            Box::new(move |b| {
                // The first record using a 1-byte token reference gets id 250.
                let mut at = names_at;
                loop {
                    let len = u16::from_le_bytes([b[at + 1], b[at + 2]]) as usize;
                    if b[at + 3] == 0xFF {
                        b[at + 4] = 250;
                        break;
                    }
                    at += 3 + len;
                }
            }),
            |k| matches!(k, BlobErrorKind::TokenIdOutOfRange { id: 250, .. }),
        ),
        (
            "token_index out of order",
            Box::new(move |b| put_u32(b, index_at, 1)),
            |k| matches!(k, BlobErrorKind::BadTokenIndex { id: 0 }),
        ),
        (
            "token_len too many tokens",
            Box::new(move |b| b[index_at - 8..index_at].copy_from_slice(&600u64.to_le_bytes())),
            |k| matches!(k, BlobErrorKind::TooManyTokens),
        ),
        (
            "seqs not a permutation",
            Box::new(move |b| {
                let v = u32::from_le_bytes(b[seq_at..seq_at + 4].try_into().unwrap());
                put_u32(b, seq_at + 4, v)
            }),
            |k| matches!(k, BlobErrorKind::NameOrder { rank: 1 }),
        ),
        (
            "seqs index out of range",
            Box::new(move |b| put_u32(b, seq_at, 1_000_000)),
            |k| matches!(k, BlobErrorKind::NameOrder { rank: 0 }),
        ),
        (
            "addresses not ascending",
            Box::new(move |b| b[addr_at + 8..addr_at + 16].copy_from_slice(&5u64.to_le_bytes())),
            |k| matches!(k, BlobErrorKind::AddressesNotAscending { index: 1 }),
        ),
        (
            "nonzero padding",
            Box::new(move |b| b[table_len_at - 1] = 1),
            |k| {
                matches!(
                    k,
                    BlobErrorKind::NonZeroPadding | BlobErrorKind::RecordsNotContiguous { .. }
                )
            },
        ),
        (
            "trailing garbage",
            Box::new(|b| b.extend_from_slice(&[0; 8])),
            |k| matches!(k, BlobErrorKind::TrailingBytes("token_index")),
        ),
        (
            "raw 0xFF in a name",
            Box::new(move |b| b[names_at + 4] = 0xFF),
            |k| {
                matches!(
                    k,
                    BlobErrorKind::MarkerInName { .. } | BlobErrorKind::BadTokenRef { .. }
                )
            },
        ),
    ];
    for (case, mutate, expect) in rows {
        let mut b = good.clone();
        mutate(&mut b);
        match check(&b) {
            Err(k) => assert!(expect(&k), "{case}: unexpected {k:?}"),
            Ok(()) => panic!("{case}: accepted"),
        }
    }
}

#[test]
fn truncated_at_every_byte_is_refused() {
    let good = good_blob();
    for len in 0..good.len() {
        assert!(
            check(&good[..len]).is_err(),
            "prefix of {len} bytes accepted"
        );
    }
}

#[test]
fn misaligned_buffer_is_refused_not_misread() {
    let good = good_blob();
    let mut shifted = vec![0u8; 1];
    shifted.extend_from_slice(&good);
    let a = AlignedBlob::copy_from(&shifted);
    let e = KallsymsMapped::from_blob(&a.as_bytes()[1..], None, None).unwrap_err();
    assert_eq!(e.kind, BlobErrorKind::Misaligned);
    assert!(e.to_string().contains("aligned"));
}

#[test]
fn check_reports_the_offset() {
    // Zeros after a blob are a reserved region's padding (FORMAT.md §2.3,
    // tests/region.rs); anything else there is named with its offset.
    let dir = scratch("check");
    let p = dir.join("bad.bin");
    let mut b = good_blob();
    b.extend_from_slice(&[0, 0, 0x11, 0, 0, 0, 0, 0]);
    std::fs::write(&p, &b).unwrap();
    let out = run("ksym-pack", &["--check", p.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(1));
    let e = stderr(&out);
    assert!(
        e.contains(&format!("byte offset {}", b.len() - 6))
            && e.contains("nonzero byte after the blob"),
        "{e}"
    );
    std::fs::write(&p, b"").unwrap();
    let out = run("ksym-resolve", &[p.to_str().unwrap()], b"1000\n");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("num_syms"), "{}", stderr(&out));
}

#[test]
fn lookups_at_the_edges() {
    let good = good_blob();
    let a = AlignedBlob::copy_from(&good);
    let m = KallsymsMapped::from_blob(a.as_bytes(), None, None).unwrap();
    assert_eq!(m.etext(), Some(0x1400));
    let name = |addr| {
        m.lookup_address(addr)
            .map(|h| (h.symbol.name.to_string(), h.offset, h.size))
    };
    assert_eq!(name(0xfff), None, "below the first symbol");
    assert_eq!(
        name(0x1000),
        Some(("_stext".into(), 0, Some(0x100))),
        "first alias of the group"
    );
    assert_eq!(name(0x1005), Some(("_stext".into(), 5, Some(0x100))));
    assert_eq!(
        name(0x1337),
        Some(("do_fork_common_helper_39".into(), 0, Some(0x1400 - 0x1337))),
        "ends at etext"
    );
    assert_eq!(name(0x1400), None, "exactly at etext");
    assert_eq!(name(0x5000), None, "past etext, before init text");
    assert_eq!(
        name(0x9001),
        Some(("_sinittext".into(), 1, Some(0x100))),
        "init text resolves"
    );
    assert_eq!(name(0x9100), None, "_einittext covers nothing");
    assert_eq!(name(u64::MAX), None);
    // Without an etext bound (overridden to a low value, then none at all).
    let mut l = SymbolList::new();
    l.push(0x1000, b'T', b"a").unwrap();
    l.push(0x2000, b'T', b"last").unwrap();
    let b2 = AlignedBlob::copy_from(&pack(&l, TokenStrategy::Optimal).unwrap().blob);
    let m2 = KallsymsMapped::from_blob(b2.as_bytes(), None, None).unwrap();
    let h = m2.lookup_address(0x2345).unwrap();
    assert_eq!(
        (h.offset, h.size),
        (0x345, None),
        "the last symbol has no known end"
    );
    assert!(m2.lookup_address(0x2000 + 0xf_ffff).is_some());
    assert!(
        m2.lookup_address(0x2000 + 0x10_0000).is_none(),
        "at most 1 MiB past the last symbol"
    );
    let m3 = KallsymsMapped::from_blob(b2.as_bytes(), None, Some(0x3000)).unwrap();
    assert_eq!(
        m3.lookup_address(0x2345).unwrap().size,
        Some(0x1000),
        "last symbol below --etext ends there"
    );
    assert!(m3.lookup_address(0x3000).is_none());
    // Names.
    assert!(m.lookup_name(b"").is_none());
    assert!(m.lookup_name(b"\x01before_all").is_none());
    assert!(m.lookup_name(b"~~after_all").is_none());
    assert!(m.lookup_name(&[b'a'; 600]).is_none());
    assert!(
        m.lookup_name(b"do_fork_common").is_none(),
        "a prefix of names is not a name"
    );
    assert_eq!(
        m.lookup_name(b"do_fork_common_helper_7").unwrap().address,
        0x1317
    );
    assert_eq!(m.lookup_name(b"startup_64_alias").unwrap().address, 0x1000);
}

#[test]
fn resolve_stream_garbage_nul_and_long_lines_pass_through() {
    let dir = scratch("stream");
    let p = dir.join("k.bin");
    std::fs::write(&p, good_blob()).unwrap();
    let input: &[u8] = b"hello world\n\0\0\0\n0x1005\nzz 1005 zz\n\xff\xfe\n   \n";
    let out = run_ok("ksym-resolve", &[p.to_str().unwrap()], input);
    assert_eq!(
        out,
        b"hello world\n\0\0\0\n0000000000001005 T _stext+0x5/0x100\nzz 1005 zz\n\xff\xfe\n   \n"
            .as_slice()
    );
}

/// ksym-resolve over the test blob, stdin and stdout piped.
fn resolver_child(test: &str) -> std::process::Child {
    let dir = scratch(test);
    let p = dir.join("k.bin");
    std::fs::write(&p, good_blob()).unwrap();
    Command::new(bin("ksym-resolve"))
        .arg(&p)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Peak resident memory of a running process, in KiB (Linux).
fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn resolve_streams_a_1_gib_line_in_bounded_memory() {
    let mut child = resolver_child("gib");
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let feeder = std::thread::spawn(move || {
        let chunk = vec![b'a'; 1 << 20];
        for _ in 0..1024 {
            stdin.write_all(&chunk).unwrap();
        }
        // Hold the line open until the reader has measured the child.
        let _ = done_rx.recv();
        stdin.write_all(b"\n0x1005\n").unwrap();
    });
    let mut stdout = child.stdout.take().unwrap();
    let (mut total, mut tail, mut peak) = (0usize, Vec::new(), None);
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let k = stdout.read(&mut buf).unwrap();
        if k == 0 {
            break;
        }
        total += k;
        tail.extend_from_slice(&buf[..k]);
        if tail.len() > 4096 {
            tail.drain(..tail.len() - 4096);
        }
        // Most of the line is through; the rest may sit in the output buffer.
        if total >= (1 << 30) - (1 << 20) && peak.is_none() {
            peak = vm_hwm_kib(pid);
            let _ = done_tx.send(());
        }
    }
    feeder.join().unwrap();
    assert!(child.wait().unwrap().success());
    let want_tail = b"\n0000000000001005 T _stext+0x5/0x100\n";
    assert_eq!(total, (1 << 30) + want_tail.len());
    assert!(tail.ends_with(want_tail));
    // The 1 GiB line went through in pieces, never held whole.
    if cfg!(target_os = "linux") {
        let peak = peak.expect("VmHWM of the running resolver");
        assert!(peak < 32 * 1024, "peak RSS {peak} KiB for a 1 GiB line");
    }
}

#[test]
fn resolve_into_head_ends_quietly() {
    let mut child = resolver_child("head");
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        for _ in 0..200_000 {
            if stdin.write_all(b"0x1005\n").is_err() {
                break;
            }
        }
    });
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 10];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout); // like `| head -1`
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
}
