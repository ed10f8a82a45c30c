//! Kernel modules (`ksym-pack --modules DIR`, FORMAT.md §16): a relocatable
//! object built like a module at test time (two C files with `static
//! inline` chains, functions in `.text`, `.text.unlikely`, `.init.text` and
//! `.exit.text`, `cc -O2 -g -c` then `ld -r` with a `.modinfo` name), every
//! address of every function compared with elfutils' `eu-addr2line`; the
//! compressed, corrupt and DWARF-less variants; a `--loaded` snapshot that
//! places each section elsewhere; golden outputs of the committed copy
//! (tests/data/kmod/ksym_test.ko) for oops lines, JSON and perf frames.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// One frame as compared: (function, file, line).
type Frame = (String, String, u64);

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn has(tool: &str, arg: &str) -> bool {
    Command::new(tool)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn sh(cmd: &mut Command) -> Vec<u8> {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Builds the test module in `dir` from tests/data/kmod's C files with the
/// compiler `cc` and linker `ld` (the host's, or a cross toolchain's).
fn build_module(dir: &Path, cc: &str, ld: &str) -> PathBuf {
    let src = data("kmod");
    for (c, o) in [("kmod_main.c", "a.o"), ("kmod_helper.c", "b.o")] {
        sh(Command::new(cc)
            .args(["-O2", "-g", "-c"])
            .arg(src.join(c))
            .arg("-o")
            .arg(dir.join(o)));
    }
    let ko = dir.join("ksym_test.ko");
    sh(Command::new(ld)
        .args(["-r", "--build-id=sha1", "-o"])
        .arg(&ko)
        .arg(dir.join("a.o"))
        .arg(dir.join("b.o")));
    ko
}

/// `ksym-pack --format v2 --modules DIR --lines ELF` with an empty kernel
/// list (the lines ELF is a small linked program: module lines need one).
fn pack_modules(out_dir: &Path, mods: &Path, extra: &[&str]) -> std::process::Output {
    let blob = out_dir.join("m.bin");
    let inl = data("lines/inl.elf");
    let mut args = vec![
        "--format",
        "v2",
        "--modules",
        mods.to_str().unwrap(),
        "--lines",
        inl.to_str().unwrap(),
        "-o",
        blob.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run("ksym-pack", &args, b"")
}

/// (name, section, value, size) of the module's sized function symbols.
fn functions(ko: &Path) -> Vec<(String, String, u64, u64)> {
    let bytes = std::fs::read(ko).unwrap();
    let f = object::File::parse(&*bytes).unwrap();
    use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};
    f.symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0)
        .filter_map(|s| {
            let sec = f.section_by_index(s.section_index()?).ok()?;
            Some((
                s.name().ok()?.to_string(),
                sec.name().ok()?.to_string(),
                s.address(),
                s.size(),
            ))
        })
        .collect()
}

/// eu-addr2line's frames, innermost first, of each `func+0xOFF`.
fn eu_frames(ko: &Path, refs: &[String]) -> Vec<Vec<Frame>> {
    let out = sh(Command::new("eu-addr2line")
        .args(["-f", "-i", "-a", "-e"])
        .arg(ko)
        .args(refs));
    let text = String::from_utf8(out).unwrap();
    let mut blocks: Vec<Vec<Frame>> = Vec::new();
    let mut it = text.lines();
    while let Some(l) = it.next() {
        if l.starts_with("0x") && !l.contains(' ') {
            blocks.push(Vec::new());
            continue;
        }
        let func = l.split(" inlined at ").next().unwrap().to_string();
        let loc = it.next().unwrap_or("??:0");
        let mut parts = loc.rsplitn(3, ':').collect::<Vec<_>>();
        parts.reverse();
        // file:line:column, or file:line
        let (file, line) = match parts.as_slice() {
            [f, l, c] if c.parse::<u64>().is_ok() && l.parse::<u64>().is_ok() => {
                (f.to_string(), l.parse().unwrap())
            }
            [f, l] | [_, f, l] => (f.to_string(), l.parse().unwrap_or(0)),
            _ => (String::new(), 0),
        };
        let file = if file == "??" { String::new() } else { file };
        let func = if func == "??" { String::new() } else { func };
        blocks
            .last_mut()
            .expect("address first")
            .push((func, file, line));
    }
    blocks
}

/// ksym-resolve --json's frames for oops references `func+0xOFF/0x1 [mod]`.
fn ksym_frames(blob: &Path, module: &str, refs: &[String]) -> Vec<Vec<Frame>> {
    let input: String = refs
        .iter()
        // A size no offset equals: `off == size` is a `%pB` return
        // address, decoded at ADDR - 1.
        .map(|r| format!("[    1.000000]  {r}/0xffffff [{module}]\n"))
        .collect();
    let out = run_ok(
        "ksym-resolve",
        &["--json", blob.to_str().unwrap()],
        input.as_bytes(),
    );
    out.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_slice(l).unwrap();
            v["frames"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| {
                    (
                        f["function"].as_str().unwrap().to_string(),
                        f["file"].as_str().unwrap().to_string(),
                        f["line"].as_u64().unwrap(),
                    )
                })
                .collect()
        })
        .collect()
}

fn strip_suffixes(name: &str) -> String {
    let mut n = name;
    while let Some(i) = n.rfind('.') {
        let (base, suf) = (&n[..i], &n[i + 1..]);
        if ["cold", "part", "constprop", "isra"].contains(&suf) || suf.parse::<u32>().is_ok() {
            n = base;
        } else {
            break;
        }
    }
    n.to_string()
}

fn eu_addr2line_or_skip() -> bool {
    if has("eu-addr2line", "--version") {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "eu-addr2line (Debian package elfutils) is missing; .ci/run installs it"
    );
    eprintln!("SKIPPED: eu-addr2line not installed (apt-get install elfutils)");
    false
}

/// Every address of every function of the module, in every section, gets
/// eu-addr2line's frames (file, line and inlined names innermost first;
/// the outermost name without `.cold`-style suffixes): an x86-64 module
/// built by the host's compiler.
#[test]
fn every_address_agrees_with_eu_addr2line() {
    if eu_addr2line_or_skip() {
        agrees_with_eu_addr2line("modules-agree", "cc", "ld");
    }
}

/// The same for an arm64 module (AArch64 relocations in its debug
/// sections, `$x`/`$d` mapping symbols), built by Debian's cross
/// toolchain (`gcc-aarch64-linux-gnu`, which `.ci/run` installs).
#[test]
fn arm64_module_agrees_with_eu_addr2line() {
    if !eu_addr2line_or_skip() {
        return;
    }
    let (cc, ld) = ("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-ld");
    if !has(cc, "--version") || !has(ld, "--version") {
        assert!(
            std::env::var_os("CI").is_none(),
            "{cc} is missing; .ci/run installs it"
        );
        eprintln!("SKIPPED: no {cc} (apt-get install gcc-aarch64-linux-gnu)");
        return;
    }
    agrees_with_eu_addr2line("modules-agree-arm64", cc, ld);
}

fn agrees_with_eu_addr2line(test: &str, cc: &str, ld: &str) {
    let dir = scratch(test);
    let mods = dir.join("mods");
    std::fs::create_dir_all(&mods).unwrap();
    let ko = build_module(&mods, cc, ld);
    let out = pack_modules(&dir, &mods, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let blob = dir.join("m.bin");
    let funcs = functions(&ko);
    let sections: std::collections::BTreeSet<&str> = funcs.iter().map(|f| f.1.as_str()).collect();
    for want in [".text", ".text.unlikely", ".init.text", ".exit.text"] {
        assert!(
            sections.contains(want),
            "the test module lacks {want}: {sections:?}"
        );
    }
    let refs: Vec<String> = funcs
        .iter()
        .flat_map(|(n, _, _, size)| (0..*size).map(move |o| format!("{n}+{o:#x}")))
        .collect();
    let theirs = eu_frames(&ko, &refs);
    let ours = ksym_frames(&blob, "ksym_test", &refs);
    assert_eq!(theirs.len(), refs.len());
    assert_eq!(ours.len(), refs.len());
    let mut inlined = 0;
    for ((r, o), t) in refs.iter().zip(&ours).zip(&theirs) {
        let norm = |f: &[Frame]| -> Vec<Frame> {
            let mut f = f.to_vec();
            if let Some(l) = f.last_mut() {
                l.0 = strip_suffixes(&l.0);
            }
            f
        };
        assert_eq!(norm(o), norm(t), "{r}: ksym vs eu-addr2line");
        inlined += usize::from(o.len() > 1);
    }
    assert!(inlined > 20, "only {inlined} addresses with inline frames");
}

/// decode_stacktrace.sh's output for module lines, and the build-id rules.
#[test]
fn oops_lines_with_modules_decode() {
    let dir = scratch("modules-oops");
    let mods = dir.join("mods");
    std::fs::create_dir_all(&mods).unwrap();
    std::fs::copy(data("kmod/ksym_test.ko"), mods.join("ksym_test.ko")).unwrap();
    let out = pack_modules(&dir, &mods, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let blob = dir.join("m.bin");
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let bless = std::env::var_os("KSYM_BLESS").is_some();
    for (name, input, args) in [
        ("modules-oops", "modules-oops.in", &[][..]),
        ("modules-oops-json", "modules-oops.in", &["--json"][..]),
        ("modules-perf", "modules-perf.in", &[][..]),
        ("modules-perf-inline", "modules-perf.in", &["--inline"][..]),
    ] {
        let mut a: Vec<&str> = args.to_vec();
        a.push(blob.to_str().unwrap());
        let out = run(
            "ksym-resolve",
            &a,
            &std::fs::read(golden.join(input)).unwrap(),
        );
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let path = golden.join(format!("{name}.out"));
        let mut got = out.stdout.clone();
        got.extend_from_slice(b"--- stderr\n");
        got.extend_from_slice(&out.stderr);
        if bless {
            std::fs::write(&path, &got).unwrap();
        }
        let want = std::fs::read(&path).unwrap_or_default();
        assert!(
            got == want,
            "{name}: output differs from {}:\n{}",
            path.display(),
            String::from_utf8_lossy(&got)
        );
    }
}

/// `.ko.xz`, `.ko.zst` and `.ko.gz` read as the plain file; a corrupt or
/// truncated module and an unknown compression are errors naming the file
/// that write no blob, unless `--skip-bad-modules`, which lists them.
#[test]
fn compressed_corrupt_and_dwarfless_modules() {
    let dir = scratch("modules-variants");
    let plain = dir.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let ko = plain.join("ksym_test.ko");
    std::fs::copy(data("kmod/ksym_test.ko"), &ko).unwrap();
    assert!(pack_modules(&dir, &plain, &[]).status.success());
    let dump = |blob: &Path| run_ok("ksym-pack", &["--dump", blob.to_str().unwrap()], b"");
    let want = dump(&dir.join("m.bin"));
    assert!(String::from_utf8_lossy(&want).contains("ksym_test_read\t[ksym_test]"));

    for (tool, ext) in [("xz", "xz"), ("zstd", "zst"), ("gzip", "gz")] {
        if !has(tool, "--version") {
            eprintln!("no {tool}: .ko.{ext} not tried");
            continue;
        }
        let d = dir.join(ext);
        std::fs::create_dir_all(d.join("sub")).unwrap();
        let packed = sh(Command::new(tool).arg("-c").arg(&ko));
        std::fs::write(d.join("sub").join(format!("ksym_test.ko.{ext}")), &packed).unwrap();
        let out = pack_modules(&dir, &d, &[]);
        assert!(
            out.status.success(),
            ".{ext}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(dump(&dir.join("m.bin")), want, ".ko.{ext} reads as the .ko");

        // Truncated: an error naming the file, and no blob written.
        let bad = dir.join(format!("bad-{ext}"));
        std::fs::create_dir_all(&bad).unwrap();
        std::fs::copy(&ko, bad.join("ksym_test.ko")).unwrap();
        let cut = bad.join(format!("other.ko.{ext}"));
        std::fs::write(&cut, &packed[..packed.len() / 2]).unwrap();
        let _ = std::fs::remove_file(dir.join("m.bin"));
        let out = pack_modules(&dir, &bad, &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(&format!("other.ko.{ext}")), "{err}");
        assert!(
            !dir.join("m.bin").exists(),
            "a blob was written despite the error"
        );
        let out = pack_modules(&dir, &bad, &["--skip-bad-modules"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(
            err.contains("skipped") && err.contains(&format!("other.ko.{ext}")),
            "{err}"
        );
        assert_eq!(dump(&dir.join("m.bin")), want);
    }

    // A corrupt plain .ko and an unknown compression.
    let bad = dir.join("bad-plain");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("junk.ko"), b"\x7fELF\x02\x01\x01 not really").unwrap();
    std::fs::write(bad.join("odd.ko.bz2"), b"BZh9").unwrap();
    let out = pack_modules(&dir, &bad, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("junk.ko") || err.contains("odd.ko.bz2"),
        "{err}"
    );
    assert!(err.contains("1 more bad module"), "{err}");

    // Without DWARF: symbols stay, one note, no lines for it.
    let nodw = dir.join("nodwarf");
    std::fs::create_dir_all(&nodw).unwrap();
    sh(Command::new("objcopy")
        .arg("--strip-debug")
        .arg(&ko)
        .arg(nodw.join("ksym_test.ko")));
    let out = pack_modules(&dir, &nodw, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(err.matches("no DWARF").count(), 1, "{err}");
    assert_eq!(
        dump(&dir.join("m.bin")),
        want,
        "the same symbols without DWARF"
    );
    let r = run_ok(
        "ksym-resolve",
        &["--json", dir.join("m.bin").to_str().unwrap()],
        b"[ 1.0]  ksym_test_read+0x10/0x7d [ksym_test]\n",
    );
    let r = String::from_utf8_lossy(&r);
    assert!(
        r.contains("\"name\":\"ksym_test_read\"") && !r.contains("\"frames\":[{"),
        "{r}"
    );
}

/// Raw addresses of a traced machine: `--loaded` places each section of
/// the module at its own runtime address (as the kernel's loader does,
/// apart from each other) and the answers equal the `func+0xOFF` ones.
#[test]
fn loaded_snapshot_places_sections() {
    let dir = scratch("modules-loaded");
    let mods = dir.join("mods");
    std::fs::create_dir_all(&mods).unwrap();
    let ko = mods.join("ksym_test.ko");
    std::fs::copy(data("kmod/ksym_test.ko"), &ko).unwrap();
    assert!(pack_modules(&dir, &mods, &[]).status.success());
    let blob = dir.join("m.bin");
    let funcs = functions(&ko);
    let runtime = |sec: &str| -> u64 {
        match sec {
            ".text" => 0xffff_ffff_c0a0_0000,
            ".text.unlikely" => 0xffff_ffff_c0a0_2041,
            ".init.text" => 0xffff_ffff_c0b0_0000,
            ".exit.text" => 0xffff_ffff_c0a0_3000,
            other => panic!("unexpected section {other}"),
        }
    };
    let mut snapshot = String::from("ffffffff81000000 T _stext\n");
    for (n, sec, v, _) in &funcs {
        snapshot.push_str(&format!("{:016x} t {n}\t[ksym_test]\n", runtime(sec) + v));
    }
    let snap = dir.join("kallsyms");
    std::fs::write(&snap, &snapshot).unwrap();
    let (mut raw, mut named) = (String::new(), String::new());
    for (n, sec, v, size) in &funcs {
        for o in [0, size / 2, size - 1] {
            raw.push_str(&format!("{:#x}\n", runtime(sec) + v + o));
            named.push_str(&format!("[ 1.0]  {n}+{o:#x}/{size:#x} [ksym_test]\n"));
        }
    }
    let b = blob.to_str().unwrap();
    let by_addr = run(
        "ksym-resolve",
        &["--json", "--loaded", snap.to_str().unwrap(), b],
        raw.as_bytes(),
    );
    assert!(
        by_addr.status.success(),
        "{}",
        String::from_utf8_lossy(&by_addr.stderr)
    );
    let by_name = run_ok("ksym-resolve", &["--json", b], named.as_bytes());
    let field = |o: &serde_json::Value, k: &str| o[k].clone();
    let parse = |b: &[u8]| -> Vec<serde_json::Value> {
        b.split(|&c| c == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect()
    };
    let (a, n) = (parse(&by_addr.stdout), parse(&by_name));
    assert_eq!(a.len(), n.len());
    for (x, y) in a.iter().zip(&n) {
        for k in ["name", "offset", "module", "frames"] {
            assert_eq!(field(x, k), field(y, k), "{k}: {x} vs {y}");
        }
        assert!(x["addr"].is_string() && y["addr"].is_null(), "{x} {y}");
    }
    let err = String::from_utf8_lossy(&by_addr.stderr);
    assert!(err.contains("4 module sections placed"), "{err}");
    // Text form: the runtime address, the module's symbol and its lines.
    let one = format!("{:x}\n", runtime(".init.text") + 5);
    let out = run_ok(
        "ksym-resolve",
        &["--loaded", snap.to_str().unwrap(), b],
        one.as_bytes(),
    );
    let s = String::from_utf8_lossy(&out);
    assert!(
        s.starts_with("ffffffffc0b00005 t ksym_test_init+0x5/0x8d [ksym_test] "),
        "{s}"
    );
    assert!(s.contains("kmod_main.c:"), "{s}");
}

/// A v2 blob with a module space passes `--check`, and every way of
/// damaging the module section is caught by the reader, never a panic.
#[test]
fn damaged_module_space_is_refused() {
    let dir = scratch("modules-damage");
    let mods = dir.join("mods");
    std::fs::create_dir_all(&mods).unwrap();
    std::fs::copy(data("kmod/ksym_test.ko"), mods.join("ksym_test.ko")).unwrap();
    assert!(pack_modules(&dir, &mods, &[]).status.success());
    let blob = std::fs::read(dir.join("m.bin")).unwrap();
    let k = ksym::Kallsyms::from_blob(&blob, None, None).unwrap();
    k.verify().unwrap();
    let ms = k.module_space().expect("module space");
    assert_eq!(ms.len(), 1);
    let m = ms.find_module(b"ksym_test").unwrap();
    assert_eq!(m.build_id.len(), 20);
    assert_eq!(ms.num_sections(), 4);
    // Flip each byte of the module space (CRCs resealed, so the structure
    // checks are what must catch it).
    let sec = match k {
        ksym::Kallsyms::V2(v) => v.module_space_section().unwrap().1,
        _ => unreachable!(),
    };
    let (mut refused, mut tried) = (0, 0);
    for i in sec..blob.len() {
        let mut b = blob.clone();
        b[i] ^= 0x55;
        ksym::blob::v2::write::reseal(&mut b);
        tried += 1;
        if let Ok(k) = ksym::Kallsyms::from_blob(&b, None, None) {
            // Accepted: lookups must still not panic.
            if let Some(ms) = k.module_space() {
                for a in 0..0x1400u64 {
                    let _ = ms.lookup_address(a);
                }
                let _ = k.verify();
            }
        } else {
            refused += 1;
        }
    }
    assert!(
        refused * 2 > tried,
        "only {refused} of {tried} damaged bytes refused"
    );
}
