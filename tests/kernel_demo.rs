//! The kernel side, proven: `scripts/kernel-demo.sh` builds the kernel of
//! examples/kernel for riscv64, riscv32, aarch64 and x86_64, fills its `.ksym`
//! section and boots it under QEMU; the backtrace the kernel prints from
//! its own blob, after a `BUG()` trap and after a `panic!`, must name at
//! every frame the symbol and offset that `nm` gives for the final image
//! (at the pc for the trapping frame, at `ADDR - 1` plus one for return
//! addresses, as Linux's `%pB`), and (v2 with lines) the file, line and
//! inlined functions that `llvm-symbolizer --inlines` gives there. For v1,
//! v2 and v2 with lines, at the example's profile (opt-level "s", LTO) and
//! at cargo's release defaults. The reader's size, as the script measures
//! it, must stay under each setting's ceiling.
mod common;

use std::path::Path;
use std::process::Command;

/// One printed frame: address, symbol, offset, and the chain outermost
/// first as (function or "", file, line).
struct Frame {
    addr: u64,
    symbol: String,
    offset: u64,
    chain: Vec<(String, String, u32)>,
}

/// ` [<ADDR>] NAME+0xOFF/0xSIZE FILE:LINE > FUNC FILE:LINE ...`
fn parse(line: &str) -> Option<Frame> {
    let rest = line.strip_prefix(" [<")?;
    let (addr, rest) = rest.split_once(">] ")?;
    let mut words = rest.split(' ');
    let sym = words.next()?;
    let (symbol, off) = sym.rsplit_once('+')?;
    let offset = u64::from_str_radix(off.split('/').next()?.trim_start_matches("0x"), 16).ok()?;
    let mut chain = Vec::new();
    let mut func = String::new();
    while let Some(w) = words.next() {
        if w == ">" {
            func = words.next()?.to_string();
            continue;
        }
        let (file, l) = w.rsplit_once(':')?;
        chain.push((std::mem::take(&mut func), file.to_string(), l.parse().ok()?));
    }
    Some(Frame {
        addr: u64::from_str_radix(addr, 16).ok()?,
        symbol: symbol.to_string(),
        offset,
        chain,
    })
}

/// nm's symbol at or below `addr`, by address order (text symbols).
fn nm_symbol(nm: &[(u64, String)], addr: u64) -> (String, u64) {
    let i = nm.partition_point(|(a, _)| *a <= addr);
    let (a, n) = &nm[i - 1];
    (n.clone(), addr - a)
}

/// `llvm-symbolizer --inlines` at `addr`: (function, file, line), innermost first.
fn symbolize(elf: &Path, addr: u64) -> Vec<(String, String, u32)> {
    let out = Command::new("llvm-symbolizer")
        .args(["--inlines", "--obj"])
        .arg(elf)
        .arg(format!("{addr:#x}"))
        .output()
        .expect("llvm-symbolizer (CI installs llvm)");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    lines
        .chunks(2)
        .map(|p| {
            let mut loc = p[1].rsplitn(3, ':');
            let (_col, line, file) = (
                loc.next(),
                loc.next().unwrap_or("0"),
                loc.next().unwrap_or(""),
            );
            // LLVM 14 prints legacy Rust names with their hash.
            let f = match p[0].rsplit_once("::h") {
                Some((name, h)) if h.len() == 16 => name.to_string(),
                _ => p[0].to_string(),
            };
            (f, file.to_string(), line.parse().unwrap_or(0))
        })
        .collect()
}

/// The reader's bytes (code, tables) may not pass these, the targets of
/// docs/kernel.md: tables 1 KiB everywhere; names only (v1, and v2
/// without lines) 5,216 bytes of code, 2x Linux's kallsyms lookup code;
/// v2 with lines and inline frames 12 KiB.
fn ceiling(format: &str) -> (u64, u64) {
    const TABLES: u64 = 1024;
    let code = match format {
        "v1" | "v2-nolines" => 5_216,
        "v2" => 12 * 1024,
        _ => unreachable!(),
    };
    (code, TABLES)
}

/// At cargo's release defaults (opt-level 3, no LTO, 16 codegen units, and
/// opt-level "s" in one codegen unit for the ksym-blob package, as
/// docs/kernel.md advises), the reader is not yet within the targets
/// (issue 32): these ceilings are today's largest figures (x86_64's v1
/// 7,386, riscv32's v2 names 7,110, x86_64's lines 13,770 bytes of code)
/// plus 5 %, so that it does not grow unnoticed while it is brought down.
/// v2 names grew by 334 bytes (6,776 to 7,110) and x86_64's lines to
/// 14,250 with version 4's two-byte token codes (FORMAT.md §11.3), which
/// take 75 KB off a 6.18 kernel's table, and to 14,314 with the `lines`
/// far advance (FORMAT.md §15.2; 1.9 % off a vmlinux's section), 31 bytes
/// under its ceiling; the release ceilings above hold.
fn ceiling_default_release(format: &str) -> (u64, u64) {
    match format {
        "v1" => (7_760, 1_024),
        "v2-nolines" => (7_466, 1_024),
        "v2" => (14_345, 1_024),
        _ => unreachable!(),
    }
}

/// Runs scripts/kernel-demo.sh; `None` when it cannot run here (77).
fn demo(root: &Path, env: &[(&str, &str)]) -> Option<String> {
    let what = format!("{env:?}");
    let out = Command::new("bash")
        .arg(root.join("scripts/kernel-demo.sh"))
        .envs(env.iter().copied())
        .output()
        .expect("bash");
    if out.status.code() == Some(77) {
        // Not root and no QEMU: the script cannot install it. CI runs
        // as root, where a failed install fails the test instead.
        eprintln!(
            "SKIPPED: {}",
            String::from_utf8_lossy(&out.stderr).trim_end()
        );
        return None;
    }
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(stdout)
}

/// The `reader bytes: code N, tables M` line of the script.
fn reader_bytes(what: &str, stdout: &str) -> (u64, u64) {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("reader bytes: code "))
        .and_then(|r| r.split_once(", tables "))
        .map(|(c, t)| (c.parse::<u64>().unwrap(), t.parse::<u64>().unwrap()))
        .unwrap_or_else(|| panic!("{what}: no reader bytes line: {stdout}"))
}

#[test]
fn the_kernel_prints_its_own_backtrace_and_every_frame_is_right() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let runs = ["riscv64", "riscv32", "aarch64", "x86_64"]
        .into_iter()
        .flat_map(|a| {
            ["v2", "v1", "v2-nolines"].into_iter().flat_map(move |f| {
                [
                    ("bug", "release"),
                    ("panic", "release"),
                    ("bug", "default-release"),
                ]
                .map(|(k, p)| (a, f, k, p))
            })
        });
    for (arch, format, fault, profile) in runs {
        let what = format!("{arch} {format} {fault} {profile}");
        let env = [
            ("KSYM_ARCH", arch),
            ("KSYM_FORMAT", format),
            ("KSYM_FAULT", fault),
            ("KSYM_PROFILE", profile),
        ];
        let Some(stdout) = demo(root, &env) else {
            return;
        };
        let sizes = reader_bytes(&what, &stdout);
        eprintln!("{what}: reader bytes: code {}, tables {}", sizes.0, sizes.1);
        let (code, tables) = match profile {
            "release" => ceiling(format),
            _ => ceiling_default_release(format),
        };
        assert!(
            sizes.0 <= code && sizes.1 <= tables,
            "{what}: the reader grew: {sizes:?} > ({code}, {tables})"
        );
        check_frames(root, &what, format, fault, &stdout);
    }
    an_unfilled_section_reads_as_never_filled(root);
    a_table_from_another_build_is_refused(root);
    a_two_pass_link_prints_every_frame(root);
    a_dwarf_cfi_walk_prints_every_frame(root);
}

/// docs/kernel.md, step 3, "Walking by DWARF CFI": the panic path walks
/// `.eh_frame` with the `unwinding` crate instead of frame records, and
/// prints the same frames through the same printer; every one is checked.
/// x86_64 also proves the SSE state the unwinder saves is enabled.
fn a_dwarf_cfi_walk_prints_every_frame(root: &Path) {
    let setting = [("KSYM_FAULT", "panic"), ("KSYM_CFI", "1")];
    boot_and_check_both(root, "panic, DWARF CFI walk", &setting, "panic");
}

/// docs/kernel.md, step 5, "A two-pass link": the first link's table as
/// `ksym-pack --asm` source, linked in by a second link (the script fails
/// when that moves any text symbol); every frame is checked.
fn a_two_pass_link_prints_every_frame(root: &Path) {
    boot_and_check_both(root, "two-pass", &[("KSYM_TWO_PASS", "1")], "bug");
}

/// One setting of the script on riscv64 with lines and on x86_64 with v1,
/// every frame checked.
fn boot_and_check_both(root: &Path, name: &str, setting: &[(&str, &str)], fault: &str) {
    for (arch, format) in [("riscv64", "v2"), ("x86_64", "v1")] {
        let mut env = vec![("KSYM_ARCH", arch), ("KSYM_FORMAT", format)];
        env.extend_from_slice(setting);
        let Some(stdout) = demo(root, &env) else {
            return;
        };
        let what = format!("{arch} {format} {name}");
        let sizes = reader_bytes(&what, &stdout);
        eprintln!("{what}: reader bytes: code {}, tables {}", sizes.0, sizes.1);
        check_frames(root, &what, format, fault, &stdout);
    }
}

/// A kernel booted before the post-link step: the reader says the section
/// was never filled (not "bad blob", whatever the optimiser did with the
/// zeros it was linked with) and the kernel prints raw return addresses.
/// Run after the others: every run writes target/kernel-demo/.
fn an_unfilled_section_reads_as_never_filled(root: &Path) {
    for format in ["v2", "v1"] {
        let env = [
            ("KSYM_ARCH", "riscv64"),
            ("KSYM_FORMAT", format),
            ("KSYM_FILL", "0"),
        ];
        let Some(stdout) = demo(root, &env) else {
            return;
        };
        assert!(
            stdout.contains("ksym: .ksym never filled (ksym-pack --patch-elf)"),
            "{format}: {stdout}"
        );
        assert!(raw_frames(&stdout) >= 4, "{format}: {stdout}");
    }
}

/// With the example's `build-id-check`, the kernel compares the blob's
/// build-id with its own note: its own table prints every frame, one
/// packed as another build's (`--build-id 00…`) is refused and the frames
/// print raw. Without the check that table is used (it cannot tell).
fn a_table_from_another_build_is_refused(root: &Path) {
    let own = [
        ("KSYM_ARCH", "riscv64"),
        ("KSYM_FORMAT", "v2"),
        ("KSYM_CHECK_BUILD_ID", "1"),
    ];
    let Some(stdout) = demo(root, &own) else {
        return;
    };
    let sizes = reader_bytes("build-id check", &stdout);
    eprintln!(
        "riscv64 v2 bug release, build-id check: reader bytes: code {}, tables {}",
        sizes.0, sizes.1
    );
    check_frames(root, "build-id check", "v2", "bug", &stdout);
    let stale = [own[0], own[1], own[2], ("KSYM_STALE", "1")];
    let stdout = demo(root, &stale).expect("ran once");
    assert!(
        stdout.contains("ksym: .ksym holds another build's table"),
        "{stdout}"
    );
    assert!(!stdout.contains("fault_here"), "{stdout}");
    assert!(raw_frames(&stdout) >= 4, "{stdout}");
}

/// Frames printed without a table: ` [<ADDR>]` alone on a line.
fn raw_frames(stdout: &str) -> usize {
    stdout
        .lines()
        .filter(|l| l.starts_with(" [<") && l.ends_with(">]"))
        .count()
}

fn check_frames(root: &Path, what: &str, format: &str, fault: &str, stdout: &str) {
    let elf = root.join("target/kernel-demo/kernel.elf");
    let nm_out = Command::new("nm").arg("-n").arg(&elf).output().unwrap();
    let nm: Vec<(u64, String)> = String::from_utf8_lossy(&nm_out.stdout)
        .lines()
        .filter_map(|l| {
            let mut w = l.split(' ');
            let (a, t, n) = (w.next()?, w.next()?, w.next()?);
            // What ksym-filter keeps: text symbols, not local labels.
            (matches!(t, "T" | "t") && !ksym::text::nm::is_mapping_or_local_label(n.as_bytes()))
                .then(|| (u64::from_str_radix(a, 16).ok(), n))
        })
        .filter_map(|(a, n)| Some((a?, n.to_string())))
        .collect();
    let frames: Vec<Frame> = stdout.lines().filter_map(parse).collect();
    let names: Vec<&str> = frames.iter().map(|f| f.symbol.as_str()).collect();
    // Innermost first; legacy Rust symbols as ksym-filter demangles them.
    let mut want = vec![
        "ksym_kernel_demo::fault_here",
        "ksym_kernel_demo::level2",
        "ksym_kernel_demo::level1",
        "kmain",
        "_start",
    ];
    if fault == "panic" {
        want.insert(0, "core::panicking::panic_fmt");
    }
    assert_eq!(names, want, "{what}: {stdout}");
    for (i, f) in frames.iter().enumerate() {
        // The BUG() trap's first frame is the trapping pc; every other
        // address is a return address, looked up at ADDR - 1.
        let ret = u64::from(fault == "panic" || i > 0);
        let at = f.addr - ret;
        let (sym, off) = nm_symbol(&nm, at);
        let mut demangled = Vec::new();
        let sym = if ksym::text::demangle::demangle_rust(sym.as_bytes(), &mut demangled) {
            String::from_utf8(demangled).unwrap()
        } else {
            sym
        };
        assert_eq!(
            (&f.symbol, f.offset),
            (&sym, off + ret),
            "{what}: frame {i}"
        );
        if format != "v2" {
            assert!(f.chain.is_empty(), "{what}: no lines without --lines");
            continue;
        }
        let want = symbolize(&elf, at);
        if want.iter().all(|w| w.2 == 0) {
            assert_eq!(
                f.chain,
                [(String::new(), "??".into(), 0)],
                "{what}: frame {i}"
            );
            continue;
        }
        // Ours outermost first; llvm's innermost first.
        let ours: Vec<_> = f.chain.iter().rev().collect();
        assert_eq!(
            ours.len(),
            want.len(),
            "{what}: frame {i}: {:?} vs {want:?}",
            f.chain
        );
        for (k, ((func, file, line), (wf, wfile, wline))) in ours.iter().zip(&want).enumerate() {
            assert_eq!(line, wline, "{what}: frame {i}.{k}");
            assert!(
                wfile.ends_with(file.as_str()),
                "{what}: frame {i}.{k}: {wfile} vs {file}"
            );
            // Inlined frames are named by DWARF; the outermost by the symbol table.
            if k + 1 < want.len() {
                assert_eq!(func, wf, "{what}: frame {i}.{k}");
            }
        }
    }
    if format == "v2" {
        assert!(
            stdout.contains("> ksym_kernel_demo::check_invariant src/main.rs:"),
            "{what}: {stdout}"
        );
    }
}
