//! Source lines and inline frames (`ksym-pack --lines`, FORMAT.md §15):
//! programs compiled at test time (C with `static inline` functions several
//! levels deep, Rust with debug line tables), every answer compared with
//! llvm-symbolizer, or binutils' addr2line where LLVM is missing; the perf
//! `--inline` output read by inferno's collapser; bad ELF inputs refused.
//! `KSYM_LINES_REFERENCE=addr2line` compares with binutils even where LLVM
//! is installed.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ksym::blob::v2::layout::SectionId;
use object::{Object, ObjectSection};

/// One frame as compared: (function, file, line).
type Frame = (String, String, u64);

fn has(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/lines")
        .join(name)
}

/// `.text` of an ELF file as (start, end).
fn text_range(elf: &Path) -> (u64, u64) {
    let bytes = std::fs::read(elf).unwrap();
    let f = object::File::parse(&*bytes).unwrap();
    let s = f.section_by_name(".text").expect(".text");
    (s.address(), s.address() + s.size())
}

/// `nm -n ELF | ksym-filter | ksym-pack --format v2 --lines ELF`.
fn pack_with_lines(dir: &Path, elf: &Path) -> PathBuf {
    let nm = Command::new("nm").arg("-n").arg(elf).output().expect("nm");
    assert!(nm.status.success());
    let list = dir.join("syms");
    std::fs::write(&list, run_ok("ksym-filter", &[], &nm.stdout)).unwrap();
    pack_file(dir, &list, "v2", &["--lines", elf.to_str().unwrap()])
}

fn hex_lines(addrs: &[u64]) -> Vec<u8> {
    addrs
        .iter()
        .map(|a| format!("{a:#x}\n"))
        .collect::<String>()
        .into_bytes()
}

/// ksym-resolve --json's frames of each address.
fn ours(blob: &Path, addrs: &[u64]) -> Vec<Vec<Frame>> {
    let out = run_ok(
        "ksym-resolve",
        &["--json", blob.to_str().unwrap()],
        &hex_lines(addrs),
    );
    lines(&out)
        .map(|l| {
            let v: serde_json::Value = serde_json::from_slice(l).unwrap();
            v["frames"]
                .as_array()
                .expect("frames")
                .iter()
                .map(|f| {
                    (
                        f["function"].as_str().unwrap().to_owned(),
                        f["file"].as_str().unwrap().to_owned(),
                        f["line"].as_u64().unwrap(),
                    )
                })
                .collect()
        })
        .collect()
}

/// Rust names as ksym stores them (`rustc-demangle`'s alternate form).
fn demangle(name: &str) -> String {
    let mut out = Vec::new();
    if ksym::text::demangle::demangle_rust(name.as_bytes(), &mut out) {
        String::from_utf8(out).unwrap()
    } else {
        name.to_owned()
    }
}

/// `llvm-symbolizer --inlines` (names left mangled, then demangled as ksym
/// does). Without line information it prints one frame at line 0 named from
/// the symbol table (its file an STT_FILE base name or empty): an empty list
/// in ksym's JSON.
fn llvm(elf: &Path, addrs: &[u64]) -> Vec<Vec<Frame>> {
    let mut child = Command::new("llvm-symbolizer")
        .args(["--inlines", "--no-demangle", "--output-style=JSON", "-e"])
        .arg(elf)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let input = hex_lines(addrs);
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, &input));
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap().unwrap();
    lines(&out.stdout)
        .map(|l| {
            let v: serde_json::Value = serde_json::from_slice(l).unwrap();
            let fr: Vec<Frame> = v["Symbol"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| {
                    (
                        demangle(s["FunctionName"].as_str().unwrap()),
                        s["FileName"].as_str().unwrap().to_owned(),
                        s["Line"].as_u64().unwrap(),
                    )
                })
                .collect();
            if fr.len() == 1 && fr[0].2 == 0 && !fr[0].1.contains('/') {
                Vec::new()
            } else {
                fr
            }
        })
        .collect()
}

/// binutils' `addr2line -f -i -a`: the same frames, but it names the
/// outermost frame from DWARF (`checked`, where llvm-symbolizer and ksym say
/// `checked.cold`), prints `?` for line 0 and may add `(discriminator N)`.
fn gnu(elf: &Path, addrs: &[u64]) -> Vec<Vec<Frame>> {
    let out = Command::new("addr2line")
        .args(["-f", "-i", "-a", "-e"])
        .arg(elf)
        .args(addrs.iter().map(|a| format!("{a:#x}")))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut res: Vec<Vec<Frame>> = Vec::new();
    let mut it = text.lines().peekable();
    while let Some(l) = it.next() {
        if l.starts_with("0x") {
            res.push(Vec::new());
            continue;
        }
        let func = demangle(l);
        let loc = it.next().unwrap_or("??:0");
        let loc = loc.split(" (discriminator").next().unwrap();
        let (file, line) = loc.rsplit_once(':').unwrap();
        let frames = res.last_mut().unwrap();
        if file != "??" {
            frames.push((func, file.to_owned(), line.parse().unwrap_or(0)));
        }
    }
    // No line information, as for llvm-symbolizer: `FILE:?` from the unit.
    for fr in &mut res {
        if fr.len() == 1 && fr[0].2 == 0 && !fr[0].1.contains('/') {
            fr.clear();
        }
    }
    res
}

/// Compares every address; returns how many differ (printing the first few).
fn compare(elf: &Path, blob: &Path, addrs: &[u64]) -> usize {
    let a = ours(blob, addrs);
    assert_eq!(a.len(), addrs.len());
    // KSYM_LINES_REFERENCE=addr2line tests against binutils on a machine
    // that has both.
    let want = std::env::var("KSYM_LINES_REFERENCE").unwrap_or_default();
    let (b, strict) = if want != "addr2line" && has("llvm-symbolizer") {
        (llvm(elf, addrs), true)
    } else {
        assert!(has("addr2line"), "neither llvm-symbolizer nor addr2line");
        (gnu(elf, addrs), false)
    };
    assert_eq!(b.len(), addrs.len());
    let mut bad = 0;
    for ((addr, x), y) in addrs.iter().zip(&a).zip(&b) {
        let same = if strict {
            x == y
        } else {
            // addr2line names the outermost frame from DWARF, not from the
            // symbol table (`checked` for `checked.cold`, padding between
            // functions, identical-code-folded aliases): compare its file
            // and line only.
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .enumerate()
                    .all(|(k, (p, q))| p.1 == q.1 && p.2 == q.2 && (p.0 == q.0 || k + 1 == x.len()))
        };
        if !same {
            bad += 1;
            if bad <= 5 {
                eprintln!("{addr:#x}\n  ksym: {x:?}\n  ref:  {y:?}");
            }
        }
    }
    let with_inline = a.iter().filter(|f| f.len() > 1).count();
    assert!(
        with_inline > 0,
        "no address had inline frames: nothing was tested"
    );
    bad
}

#[test]
fn c_program_frames_equal_the_symbolizer_at_every_text_byte() {
    let dir = scratch("lines-c");
    let elf = dir.join("inl");
    let cc = Command::new("cc")
        .args(["-O2", "-g", "-o"])
        .arg(&elf)
        .arg(data("inl.c"))
        .status()
        .expect("cc (a C compiler is needed: CI installs gcc)");
    assert!(cc.success());
    let blob = pack_with_lines(&dir, &elf);
    let (lo, hi) = text_range(&elf);
    let addrs: Vec<u64> = (lo..hi).collect();
    assert_eq!(compare(&elf, &blob, &addrs), 0);
    // The deepest chain is there: leaf > level1 > level2 > level3 > hdr_mix.
    let depth = ours(&blob, &addrs).iter().map(Vec::len).max().unwrap();
    assert!(depth >= 5, "deepest inline chain {depth}");
}

#[test]
fn rust_program_frames_equal_the_symbolizer() {
    let dir = scratch("lines-rust");
    let elf = dir.join("inlrs");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let st = Command::new(rustc)
        .args(["-C", "opt-level=2", "-C", "debuginfo=1", "-o"])
        .arg(&elf)
        .arg(data("inl.rs"))
        .status()
        .expect("rustc");
    assert!(st.success());
    let blob = pack_with_lines(&dir, &elf);
    let (lo, hi) = text_range(&elf);
    // 4,000 addresses spread over .text (std included) and every byte of
    // the program's own functions.
    let mut addrs: Vec<u64> = (0..4000u64).map(|i| lo + (hi - lo) * i / 4000).collect();
    let syms = std::fs::read_to_string(dir.join("syms")).unwrap();
    let own: Vec<u64> = syms
        .lines()
        .filter(|l| l.contains(" inl::"))
        .map(|l| u64::from_str_radix(&l[..16], 16).unwrap())
        .collect();
    assert!(!own.is_empty());
    for a in own {
        addrs.extend(a..a + 64);
    }
    let bad = compare(&elf, &blob, &addrs);
    assert_eq!(bad, 0, "{bad} of {} addresses differ", addrs.len());
}

#[test]
fn perf_inline_output_reads_in_inferno() {
    use inferno::collapse::Collapse;
    let dir = scratch("lines-inferno");
    let list = data("inl.elf.syms");
    let blob = pack_file(
        &dir,
        &list,
        "v2",
        &["--lines", data("inl.elf").to_str().unwrap()],
    );
    let input =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/lines-perf.in"))
            .unwrap();
    let out = run_ok(
        "ksym-resolve",
        &["--inline", blob.to_str().unwrap()],
        &input,
    );
    let mut opts = inferno::collapse::perf::Options::default();
    opts.nthreads = 1;
    let mut folded = Vec::new();
    inferno::collapse::perf::Folder::from(opts)
        .collapse(&out[..], &mut folded)
        .unwrap();
    let folded = String::from_utf8(folded).unwrap();
    assert!(
        folded.contains("inl;__libc_start_call_main;main;leaf;level1;level2;level3;hdr_mix 1"),
        "{folded}"
    );
    assert!(
        folded.contains("main;checked;level2;level3;hdr_mix 1"),
        "{folded}"
    );
    // Without --inline the same stacks stop at the symbols.
    let out = run_ok("ksym-resolve", &[blob.to_str().unwrap()], &input);
    let mut folded = Vec::new();
    let mut opts = inferno::collapse::perf::Options::default();
    opts.nthreads = 1;
    inferno::collapse::perf::Folder::from(opts)
        .collapse(&out[..], &mut folded)
        .unwrap();
    assert!(String::from_utf8(folded).unwrap().contains("main;leaf 1"));
}

#[test]
fn bad_lines_inputs_are_refused_with_a_message() {
    let dir = scratch("lines-bad");
    let list = data("inl.elf.syms");
    let l = list.to_str().unwrap();
    let o = dir.join("out.v2");
    let o = o.to_str().unwrap();
    let elf = data("inl.elf");
    let elf = elf.to_str().unwrap();
    let cases: [(&[&str], i32, &str); 5] = [
        (
            &["--format", "v2", "--lines", l, "-o", o, l],
            1,
            "not an ELF file",
        ),
        (
            &["--format", "v2", "--lines", "/nonexistent", "-o", o, l],
            1,
            "/nonexistent",
        ),
        (
            &["--lines", elf, "-o", o, l],
            2,
            "--lines needs --format v2",
        ),
        (
            &["--format", "v2", "--columns", "-o", o, l],
            2,
            "--columns needs --lines",
        ),
        (
            &[
                "--format",
                "v2",
                "--lines",
                env!("CARGO_BIN_EXE_ksym-pack"),
                "-o",
                o,
                l,
            ],
            1,
            "different builds",
        ),
    ];
    for (args, code, msg) in cases {
        let out = run("ksym-pack", args, b"");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(msg), "{args:?}: {err}");
        if code != 0 {
            assert!(!Path::new(o).exists(), "{args:?} left an output file");
        }
        let _ = std::fs::remove_file(o);
    }
    // Symbols of another load address (a KASLR /proc/kallsyms) or build.
    let slid: String = std::fs::read_to_string(&list)
        .unwrap()
        .lines()
        .map(|l| {
            let a = u64::from_str_radix(&l[..16], 16).unwrap() + 0x100_0000;
            format!("{a:016x}{}\n", &l[16..])
        })
        .collect();
    let slid_path = dir.join("slid.syms");
    std::fs::write(&slid_path, slid).unwrap();
    let out = run(
        "ksym-pack",
        &[
            "--format",
            "v2",
            "--lines",
            elf,
            "-o",
            o,
            slid_path.to_str().unwrap(),
        ],
        b"",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("different builds, or the list is slid"),
        "{err}"
    );
    assert!(!Path::new(o).exists());
    // A relocatable object and an executable without DWARF.
    let obj = dir.join("inl.o");
    let st = Command::new("cc")
        .args(["-O2", "-g", "-c", "-o"])
        .arg(&obj)
        .arg(data("inl.c"))
        .status()
        .unwrap();
    assert!(st.success());
    let stripped = dir.join("inl-stripped");
    let st = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&stripped)
        .arg(data("inl.c"))
        .status()
        .unwrap();
    assert!(st.success());
    for (elf, msg) in [(&obj, "relocatable object"), (&stripped, "no .debug_info")] {
        let out = run(
            "ksym-pack",
            &[
                "--format",
                "v2",
                "--lines",
                elf.to_str().unwrap(),
                "-o",
                o,
                l,
            ],
            b"",
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(msg), "{err}");
        assert!(!Path::new(o).exists());
    }
}

#[test]
fn every_byte_of_a_lines_section_forged_past_its_crc_is_handled() {
    // Flip each byte of the lines section, recompute the CRCs (so the
    // reader gets past them), and open, look up and verify: an error or an
    // answer, never a panic or a hang.
    let dir = scratch("lines-forged");
    let blob_path = pack_file(
        &dir,
        &data("inl.elf.syms"),
        "v2",
        &["--lines", data("inl.elf").to_str().unwrap()],
    );
    let blob = std::fs::read(&blob_path).unwrap();
    let k = ksym::blob::v2::KallsymsV2::from_blob(&blob, None, None).unwrap();
    let sec = k
        .sections()
        .find(|s| s.id == SectionId::Lines)
        .expect("lines");
    let (lo, hi) = text_range(&data("inl.elf"));
    // Each accepted forgery also goes through the resolver, every output
    // form that prints frames: plain, inline frames, JSON.
    let input: Vec<u8> = (lo..hi)
        .step_by(7)
        .flat_map(|a| format!("{a:x}\n").into_bytes())
        .collect();
    let mut refused = 0;
    for at in sec.offset..sec.offset + sec.len {
        for flip in [0x01u8, 0x80] {
            let mut b = blob.clone();
            b[at] ^= flip;
            ksym::blob::v2::write::reseal(&mut b);
            let Ok(v) = ksym::blob::v2::KallsymsV2::from_blob(&b, None, None) else {
                refused += 1;
                continue;
            };
            let Some(l) = v.lines() else { continue };
            let mut frames = 0;
            for a in (lo..hi).step_by(3) {
                if let Some(r) = l.find(a) {
                    frames += l.frames(&r).count();
                }
            }
            assert!(frames < 100_000);
            refused += usize::from(v.verify().is_err());
            let map = ksym::blob::Kallsyms::V2(v);
            for (inline, json) in [(false, false), (true, false), (false, true)] {
                let opts = ksym::resolve::ResolveOptions {
                    inline,
                    json,
                    ..Default::default()
                };
                let mut out = Vec::new();
                ksym::resolve::Resolver::new(&map, opts)
                    .run(&input[..], &mut out)
                    .unwrap();
            }
        }
    }
    assert!(refused > 0);
}

#[test]
fn inputs_that_crashed_the_lines_fuzzer_are_handled() {
    // fuzz/fuzz_targets/lines.rs's checks on the inputs it once crashed on
    // (kept here: `cargo fuzz cmin` may drop them from the corpus).
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz-lines");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let data = std::fs::read(e.unwrap().path()).unwrap();
        n += 1;
        let Ok(t) = ksym::blob::v2::source_lines::read::LineTable::parse(&data, 0) else {
            continue;
        };
        let _ = t.verify();
        let (lo, hi) = t.span();
        let step = (hi.saturating_sub(lo) / 512).max(1);
        let mut a = lo.saturating_sub(2);
        while a <= hi.saturating_add(2) {
            if let Some(r) = t.find(a) {
                assert!(t.frames(&r).count() <= t.nodes() + 1);
            }
            match a.checked_add(step) {
                Some(x) => a = x,
                None => break,
            }
        }
    }
    assert!(n > 0);
}

#[test]
fn kaslr_slide_applies_to_source_lines() {
    // The same addresses slid by 0x1c000000: --offset and --kaslr-from-sym
    // give the lines of the unslid ones; the printed addresses stay slid.
    let dir = scratch("lines-kaslr");
    let blob = pack_file(
        &dir,
        &data("inl.elf.syms"),
        "v2",
        &["--lines", data("inl.elf").to_str().unwrap()],
    );
    let b = blob.to_str().unwrap();
    let slide = 0x1c00_0000u64;
    let addrs = [0x1084u64, 0x11c8, 0x12ec];
    let plain = run_ok("ksym-resolve", &[b], &hex_lines(&addrs));
    let slid: Vec<u64> = addrs.iter().map(|a| a + slide).collect();
    let got = run_ok(
        "ksym-resolve",
        &["--offset", "0x1c000000", b],
        &hex_lines(&slid),
    );
    let unslide = |out: &[u8]| -> Vec<String> {
        lines(out)
            .map(|l| String::from_utf8_lossy(&l[16..]).into_owned())
            .collect()
    };
    assert_eq!(unslide(&plain), unslide(&got));
    assert!(String::from_utf8_lossy(&got).contains("inl.c:28 > level1"));
    // Learnt from an oops line: the decode_stacktrace form uses name+offset,
    // the raw-address line after it needs the slide.
    let oops = format!(
        "[    1.000000]  [<{:016x}>] leaf+0x28/0x70\n[    1.000001]  [<{:016x}>] 0x{:x}\n",
        0x11c8 + slide,
        0x12ec + slide,
        0x12ec + slide
    );
    let out = run_ok("ksym-resolve", &["--kaslr-from-sym", b], oops.as_bytes());
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("leaf (/build/ksym/inl_hdr.h:6"), "{out}");
    assert!(
        out.contains("checked+0x2c/0x54 (/build/ksym/inl_hdr.h:6"),
        "{out}"
    );
}
