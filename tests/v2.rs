//! v2 blobs end to end: every flipped byte is caught and named, the tools
//! refuse a damaged blob with the same message, module symbols and perf
//! frames of modules, identity, the text bounds of arm64 (where `_etext` is
//! a data symbol), and a blob rewritten under a running resolver.

mod common;
use common::*;
use ksym::Kallsyms;
use ksym::blob::v2::KallsymsV2;
use ksym::blob::v2::layout::{SECTIONS, SectionId};
use ksym::blobfile::AlignedBlob;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

const KALLSYMS: &[u8] = b"\
ffffffff81000000 T _stext
ffffffff81000010 T __pfx_do_one
ffffffff81000020 T do_one
ffffffff81000050 t __pfx_helper
ffffffff81000060 t helper
ffffffff81000060 t helper_alias
ffffffff81000090 W weak_one
ffffffff810000c0 T _etext
ffffffff810000d0 W data_weak
ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]
ffffffffc0300000 t ext4_read\t[ext4]
ffffffffc0300040 t __pfx_ext4_write\t[ext4]
ffffffffc0300050 t ext4_write\t[ext4]
";

fn pack_v2(dir: &std::path::Path, input: &[u8], extra: &[&str]) -> std::path::PathBuf {
    let list = dir.join("in.txt");
    std::fs::write(&list, run_ok("ksym-filter", &[], input)).unwrap();
    pack_file(dir, &list, "v2", extra)
}

#[test]
fn filter_keeps_modules_and_dump_gives_them_back() {
    let dir = scratch("v2-modules");
    let filtered = run_ok("ksym-filter", &[], KALLSYMS);
    // A W symbol inside the text bounds is a weak function and kept, one
    // after _etext is data and dropped; every bound marker and module
    // column is kept.
    let text = String::from_utf8_lossy(&filtered);
    assert!(text.contains("ffffffff81000090 W weak_one\n"), "{text}");
    assert!(!text.contains("data_weak"), "{text}");
    assert!(filtered.ends_with(b"ffffffffc0300050 t ext4_write\t[ext4]\n"));
    let blob = pack_v2(&dir, KALLSYMS, &[]);
    let dump = run_ok("ksym-pack", &["--dump", blob.to_str().unwrap()], b"");
    assert_eq!(
        String::from_utf8_lossy(&dump),
        String::from_utf8_lossy(&filtered)
    );

    // `[mod]` from the blob, for bare addresses, JSON and module perf frames.
    let out = run_ok(
        "ksym-resolve",
        &[blob.to_str().unwrap()],
        b"ffffffffc0300054\nffffffffc0300044\nffffffff81000015\n",
    );
    assert_eq!(
        String::from_utf8_lossy(&out),
        "ffffffffc0300054 t ext4_write+0x4 [ext4]\n\
         ffffffffc0300044 t __pfx_ext4_write+0x4/0x10 [ext4]\n\
         ffffffff81000015 T __pfx_do_one+0x5/0x10\n"
    );
    let out = run_ok(
        "ksym-resolve",
        &["--json", blob.to_str().unwrap()],
        b"ffffffffc0300004\n",
    );
    assert!(
        String::from_utf8_lossy(&out)
            .contains(r#""name":"ext4_read","offset":4,"size":64,"module":"ext4""#)
    );
    let perf = b"\tffffffffc0300044 ext4_write+0x0 ([ext4])\n\tffffffffc0300044 x+0x0 ([nosuchmod])\n\t7f00 read+0x1 (/usr/lib/libc.so.6)\n";
    let out = run_ok("ksym-resolve", &[blob.to_str().unwrap()], perf);
    assert_eq!(
        String::from_utf8_lossy(&out),
        "\tffffffffc0300044 __pfx_ext4_write+0x4 ([ext4])\n\tffffffffc0300044 x+0x0 ([nosuchmod])\n\t7f00 read+0x1 (/usr/lib/libc.so.6)\n"
    );
    // Folded `__pfx_` names are found by name, in address order.
    let out = run_ok(
        "ksym-resolve",
        &["--names", blob.to_str().unwrap()],
        b"__pfx_helper\nhelper_alias\n",
    );
    assert_eq!(
        String::from_utf8_lossy(&out),
        "ffffffff81000050 t __pfx_helper\nffffffff81000060 t helper_alias\n"
    );
}

#[test]
fn identity_is_stored_printed_and_named_in_warnings() {
    let dir = scratch("v2-identity");
    let blob = pack_v2(
        &dir,
        KALLSYMS,
        &["--release", "6.18.0-test", "--build-id", "0a1B2c"],
    );
    let check = run_ok("ksym-pack", &["--check", blob.to_str().unwrap()], b"");
    let check = String::from_utf8_lossy(&check);
    assert!(
        check.contains("release 6.18.0-test; build-id 0a1b2c"),
        "{check}"
    );
    assert!(
        check.contains("_stext 0xffffffff81000000; _etext 0xffffffff810000c0"),
        "{check}"
    );
    let out = run(
        "ksym-resolve",
        &[blob.to_str().unwrap()],
        b"RIP: 0010:do_one+0x4/0x99\n",
    );
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("disagree with the blob (the blob is of 6.18.0-test)"),
        "{err}"
    );
    // v1 has no field for identity: refused, not dropped silently.
    let out = run("ksym-pack", &["--release", "x"], KALLSYMS);
    assert_eq!(out.status.code(), Some(2));
    let out = run(
        "ksym-pack",
        &["--format", "v2", "--build-id", "xyz"],
        KALLSYMS,
    );
    assert_eq!(out.status.code(), Some(2));
}

/// Which section (by name) holds byte `at`, or None for header/padding.
fn section_at(v: &KallsymsV2<'_>, at: usize) -> Option<&'static str> {
    v.sections()
        .find(|s| s.offset <= at && at < s.offset + s.len)
        .map(|s| s.id.name())
}

#[test]
fn every_flipped_byte_is_detected_and_its_section_named() {
    let dir = scratch("v2-flip");
    let blob = std::fs::read(pack_v2(&dir, KALLSYMS, &["--release", "r"])).unwrap();
    let good = AlignedBlob::copy_from(&blob);
    let v = KallsymsV2::from_blob(good.as_bytes(), None, None).unwrap();
    let mut named = 0;
    for at in 0..blob.len() {
        for bit in [0x01u8, 0x80] {
            let mut bad = blob.clone();
            bad[at] ^= bit;
            let Err(e) = Kallsyms::from_blob(&bad, None, None) else {
                panic!("flipping bit {bit:#x} of byte {at} went unnoticed");
            };
            let msg = e.to_string();
            if let Some(name) = section_at(&v, at) {
                assert!(
                    msg.contains(&format!("section `{name}`: CRC32C mismatch")),
                    "byte {at}: {msg}"
                );
                named += 1;
            }
        }
    }
    assert!(named > blob.len(), "most bytes lie in sections");
    // The tools say the same, and exit 1.
    let mut bad = blob.clone();
    let names_at = v
        .sections()
        .find(|s| s.id.name() == "names")
        .unwrap()
        .offset;
    bad[names_at + 2] ^= 0x10;
    let path = dir.join("bad.v2");
    std::fs::write(&path, &bad).unwrap();
    for (tool, args) in [
        ("ksym-pack", vec!["--check"]),
        ("ksym-pack", vec!["--dump"]),
        ("ksym-resolve", vec![]),
    ] {
        let mut a = args.clone();
        a.push(path.to_str().unwrap());
        let out = run(tool, &a, b"ffffffff81000020\n");
        assert_eq!(out.status.code(), Some(1), "{tool} {args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("section `names`: CRC32C mismatch (the blob is damaged)"),
            "{tool}: {err}"
        );
        assert!(out.stdout.is_empty(), "{tool} wrote nothing");
    }
    // Every section but `lines`, `module_space`, `sizes` and `segments`
    // (packed only with --lines, --modules and --elf) and `name_to_addr`
    // (no cycle of this short list needs a shortcut, FORMAT.md §10.4) is
    // there with its own CRC.
    assert!(v.sections().all(|s| s.id != SectionId::NameToAddr));
    assert_eq!(v.sections().count(), SECTIONS.len() - 5);
}

#[test]
fn arm64_etext_is_a_data_symbol_yet_bounds_the_text() {
    // Debian's 6.1 arm64 System.map: `ffff800008be0000 D _etext`, right after
    // `T __idmap_text_end` at ...bd2930.
    let dir = scratch("v2-arm64");
    let map = sample("System.map-6.1.0-56-cloud-arm64-sample.xz");
    let filtered = run_ok("ksym-filter", &[], &map);
    assert!(String::from_utf8_lossy(&filtered).contains("ffff800008be0000 D _etext\n"));
    let list = dir.join("in.txt");
    std::fs::write(&list, &filtered).unwrap();
    for format in ["v1", "v2"] {
        let blob = pack_file(&dir, &list, format, &[]);
        let out = run_ok(
            "ksym-resolve",
            &[blob.to_str().unwrap()],
            b"ffff800008be27d0\nffff800008bd2931\nffff800009390010\n",
        );
        let out = String::from_utf8_lossy(&out);
        let l: Vec<&str> = out.lines().collect();
        assert_eq!(
            l[0], "ffff800008be27d0 ? [unknown]",
            "{format}: rodata after _etext"
        );
        assert_eq!(
            l[1], "ffff800008bd2931 T __idmap_text_end+0x1/0xd6d0",
            "{format}: capped at _etext"
        );
        assert!(
            l[2].starts_with("ffff800009390010 T "),
            "{format}: init text resolves: {}",
            l[2]
        );
    }
}

#[test]
fn a_blob_rewritten_under_a_running_resolver_does_not_kill_it() {
    let dir = scratch("v2-rewrite");
    let blob = pack_v2(&dir, KALLSYMS, &[]);
    let old = std::fs::read(&blob).unwrap();
    for format_blob in [blob.clone(), {
        let p = dir.join("k.v1");
        let list = dir.join("in.txt");
        run_ok(
            "ksym-pack",
            &["-o", p.to_str().unwrap(), list.to_str().unwrap()],
            b"",
        );
        p
    }] {
        let mut child = Command::new(bin("ksym-resolve"))
            .args(["--line-buffered", format_blob.to_str().unwrap()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdin.write_all(b"ffffffff81000024\n").unwrap();
        stdout.read_line(&mut line).unwrap();
        assert_eq!(line, "ffffffff81000024 T do_one+0x4/0x30\n");
        // Rewrite in place, as `ksym-pack > k.bin` does: truncate, then
        // write something else (and shorter) over it.
        std::fs::write(&format_blob, &old[..40]).unwrap();
        for _ in 0..1000 {
            stdin.write_all(b"ffffffff81000064\n").unwrap();
        }
        drop(stdin);
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
        let status = child.wait().unwrap();
        assert!(status.success(), "{status:?}");
        assert_eq!(rest.lines().count(), 1000);
        assert!(
            rest.lines()
                .all(|l| l == "ffffffff81000064 t helper+0x4/0x30")
        );
    }
}

#[test]
fn tokens_summary_has_a_v2_line() {
    let out = run_ok(
        "ksym-tokens",
        &["--summary"],
        &run_ok("ksym-filter", &[], KALLSYMS),
    );
    let out = String::from_utf8_lossy(&out);
    assert!(
        out.lines()
            .any(|l| l.starts_with("# v2: 12 symbols (9 stored, 3 folded __pfx_)")),
        "{out}"
    );
}

#[test]
fn same_bytes_on_one_thread_or_two() {
    // 16,384 names and more are sorted on two threads when the process may
    // use two CPUs; `taskset -c 0` leaves it one (available_parallelism
    // follows the affinity mask).
    let Some(input) = corpus("kallsyms-6.18-x86_64.txt") else {
        return;
    };
    if Command::new("taskset").arg("-V").output().is_err() {
        let _ = writeln!(std::io::stderr(), "SKIPPED: taskset not found");
        return;
    }
    let dir = scratch("v2-threads");
    let list = dir.join("in.txt");
    std::fs::write(&list, run_ok("ksym-filter", &[], &input)).unwrap();
    let mut blobs = Vec::new();
    for pin in [true, false] {
        let out = dir.join(format!("k{pin}"));
        let mut cmd = if pin {
            let mut c = Command::new("taskset");
            c.args(["-c", "0"]).arg(bin("ksym-pack"));
            c
        } else {
            Command::new(bin("ksym-pack"))
        };
        let st = cmd
            .args([
                "--format",
                "v2",
                "-o",
                out.to_str().unwrap(),
                list.to_str().unwrap(),
            ])
            .status()
            .unwrap();
        assert!(st.success());
        blobs.push(std::fs::read(&out).unwrap());
    }
    assert!(blobs[0] == blobs[1], "v2 bytes depend on the thread count");
}

#[test]
fn a_misaligned_v2_blob_reads_the_same() {
    // The reader takes any address; aligned blobs take a faster block search.
    let dir = scratch("v2-misaligned");
    let blob = std::fs::read(pack_v2(&dir, &sample("kallsyms-6.18-sample.txt.xz"), &[])).unwrap();
    let aligned = AlignedBlob::copy_from(&blob);
    let mut shifted = vec![0u8; blob.len() + 1];
    shifted[1..].copy_from_slice(&blob);
    let a = KallsymsV2::from_blob(aligned.as_bytes(), None, None).unwrap();
    let b = KallsymsV2::from_blob(&shifted[1..], None, None).unwrap();
    let mut probes = 0;
    for s in a.symbols() {
        for p in [
            s.address.wrapping_sub(1),
            s.address,
            s.address + 1,
            s.address + 0x40,
        ] {
            let ha = a
                .lookup_address(p)
                .map(|h| (h.symbol.index, h.offset, h.size));
            let hb = b
                .lookup_address(p)
                .map(|h| (h.symbol.index, h.offset, h.size));
            assert_eq!(ha, hb, "{p:#x}");
            probes += 1;
        }
    }
    assert!(probes > 1000);
}

#[test]
fn inputs_that_crashed_the_v2_fuzzer_stay_fixed() {
    // Each file is a reader_v2 fuzz input: the harness forces the magic and
    // version and reseals every CRC, as here. `inverse-walk-overflow` made
    // the name-to-row walk overflow; `block-base-not-first` passed verify()
    // with a block whose base was not its first address, so a lookup below
    // the first symbol returned it with offset -1.
    for name in ["inverse-walk-overflow", "block-base-not-first"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/fuzz-v2")
            .join(name);
        let mut blob = std::fs::read(&path).unwrap();
        blob[..8].copy_from_slice(&ksym::blob::v2::layout::MAGIC);
        blob[8..10].copy_from_slice(&ksym::blob::v2::layout::VERSION.to_le_bytes());
        ksym::blob::v2::write::reseal(&mut blob);
        let aligned = AlignedBlob::copy_from(&blob);
        let Ok(v) = KallsymsV2::from_blob(aligned.as_bytes(), None, None) else {
            // This one must reach verify(), or the test checks nothing (it
            // stopped at open from version 3 until its bucket table was added).
            assert_ne!(name, "block-base-not-first", "it must reach verify()");
            continue;
        };
        let check = v.verify();
        if name == "block-base-not-first" {
            let msg = check.as_ref().unwrap_err().to_string();
            assert!(
                msg.contains("a block's base is not its first address"),
                "{msg}"
            );
        }
        let sound = check.is_ok();
        let mut n = Vec::new();
        for s in v.symbols().take(4096) {
            n.clear();
            s.name.extend_into(&mut n);
            let _ = v.lookup_name(&n);
            for p in [
                s.address,
                s.address.wrapping_add(1),
                s.address.wrapping_sub(1),
            ] {
                if let (true, Some(h)) = (sound, v.lookup_address(p)) {
                    assert_eq!(h.symbol.address.wrapping_add(h.offset), p, "{name}");
                    assert!(h.size.is_none_or(|z| h.offset < z), "{name}: {p:#x}");
                }
            }
        }
    }
}

#[test]
fn an_older_version_blob_is_refused_with_a_repack_hint() {
    // Version 3 changed addr_blocks and the rank samples, version 4 the
    // token table (FORMAT.md §9.1): an older header, even with every CRC
    // right, is refused by the library and by every tool, naming both
    // versions.
    let dir = scratch("v2-old-version");
    let path = pack_v2(&dir, KALLSYMS, &[]);
    let fresh = std::fs::read(&path).unwrap();
    for old in [2u16, 3] {
        let mut blob = fresh.clone();
        blob[8..10].copy_from_slice(&old.to_le_bytes());
        ksym::blob::v2::write::reseal(&mut blob);
        let err = Kallsyms::from_blob(&blob, None, None).unwrap_err();
        assert_eq!(err.offset, 8);
        let want =
            format!("version {old}, expected 4 (repack the symbol list with this ksym-pack)");
        assert!(err.to_string().contains(&want), "{err}");
        std::fs::write(&path, &blob).unwrap();
        for (tool, args) in [
            ("ksym-pack", vec!["--check", path.to_str().unwrap()]),
            ("ksym-resolve", vec![path.to_str().unwrap()]),
        ] {
            let out = run(tool, &args, b"ffffffff81000024\n");
            assert_eq!(out.status.code(), Some(1), "{tool}");
            assert!(
                String::from_utf8_lossy(&out.stderr).contains(&want),
                "{tool}"
            );
            assert!(out.stdout.is_empty(), "{tool}");
        }
    }
}

#[test]
fn a_v2_blob_spanning_2_63_bytes_in_one_block_opens_and_resolves() {
    // One address block from 0x1000 to kernel text: no shift of 0..=63
    // gives one bucket, so the rule's shift is 63 with 2 buckets (FORMAT.md
    // §10.2). The reader used to refuse what the writer wrote.
    let dir = scratch("v2-span-2-63");
    let input = b"0000000000001000 T low_one\nffffffff81000000 T _stext\nffffffff81000040 T high_one\nffffffff81000080 T _etext\n";
    let blob_path = pack_v2(&dir, input, &[]);
    let blob = AlignedBlob::copy_from(&std::fs::read(&blob_path).unwrap());
    let k = Kallsyms::from_blob(blob.as_bytes(), None, None).unwrap();
    k.verify().unwrap();
    let v1 = dir.join("v1.bin");
    run_ok("ksym-pack", &["-o", v1.to_str().unwrap()], input);
    let addrs = b"0000000000001008\nffffffff81000044\n";
    let out = run_ok("ksym-resolve", &[blob_path.to_str().unwrap()], addrs);
    assert_eq!(
        String::from_utf8_lossy(&out),
        "0000000000001008 T low_one+0x8/0xffffffff80fff000\nffffffff81000044 T high_one+0x4/0x40\n"
    );
    assert_eq!(out, run_ok("ksym-resolve", &[v1.to_str().unwrap()], addrs));
}
