//! Real kernels oops, and ksym-resolve decodes their consoles as the
//! kernel's own tools do. scripts/qemu-oops.sh boots Debian's 6.1 amd64 and
//! arm64 kernels under QEMU (TCG) and loads four test modules built against
//! Debian's headers (tests/data/oops; cross-built for arm64) that WARN()
//! and BUG() and dereference NULL in .text, and dereference NULL in
//! .init.text. Each console is decoded with a blob of that kernel (amd64:
//! its System.map from the shared corpus; arm64, whose packaged System.map
//! is a placeholder: the guest's own /proc/kallsyms; the modules packed
//! with `--modules`, no vmlinux DWARF) and compared with Linux 6.1's
//! scripts/decode_stacktrace.sh and scripts/decodecode:
//! - every `func+0xOFF/0xSIZE` of the console is found and agrees with the
//!   blob, but where the kernel's size ends at a weak (`W`) symbol, which
//!   ksym-filter drops (checked against the System.map itself);
//! - each module frame line is byte-identical to decode_stacktrace.sh's;
//!   vmlinux frame lines, which the script cannot decode without a vmlinux
//!   with DWARF, pass through unchanged;
//! - each kernel `Code:` line's `All code` rows have decodecode's
//!   boundaries, bytes, mnemonics and trapping row;
//! - the console behind journalctl, caller-id and `dmesg -T` prefixes
//!   gives the same JSON.
//!
//! Needs root (to install QEMU, the kernels and headers) and, for amd64,
//! the shared corpus; otherwise SKIPPED, except under `CI=true`, where it
//! fails.

mod common;
use common::disasm::{mnemonic, same};
use common::*;
use std::path::Path;
use std::process::Command;

fn skip_or_fail(why: &str) {
    let ci = std::env::var_os("CI").is_some_and(|v| v == "true");
    assert!(!ci, "{why} (required under CI=true)");
    eprintln!("SKIPPED: {why}");
}

/// `name+0xOFF/0xSIZE` words of a line, as an independent reading.
fn ref_words(line: &str) -> Vec<String> {
    line.split_whitespace()
        .map(|w| w.trim_start_matches('(').trim_end_matches([')', ',']))
        .map(|w| w.rsplit(':').next().unwrap_or(w))
        .filter(|w| {
            let Some((name, rest)) = w.rsplit_once('+') else {
                return false;
            };
            let Some((off, size)) = rest.split_once('/') else {
                return false;
            };
            let hex = |s: &str| {
                s.strip_prefix("0x")
                    .is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()))
            };
            !name.is_empty() && hex(off) && hex(size)
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn a_real_x86_64_oops_decodes_as_decode_stacktrace_and_decodecode_do() {
    let Some(system_map) = corpus("System.map-6.1.0-56-amd64") else {
        return skip_or_fail("the shared corpus is not there");
    };
    let Some(console) = boot("x86_64") else {
        return;
    };
    let want = [
        "WARNING: CPU:",
        "kernel BUG at",
        "invalid opcode",
        "BUG: kernel NULL pointer dereference",
    ];
    check("x86_64", &console, &system_map, &want);
    user_fault(&console);
}

/// The kernel's report of tests/data/segv.c's fault (6.1's bracket: the
/// mapping alone) gets the faulting function and line from a store that
/// holds the program, as `addr2line -f` names the link-time address the
/// report's `ip`, mapping and the program's text segment give.
fn user_fault(console: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let segv = root.join("target/qemu-oops-test-x86_64/build/segv");
    let line = console
        .lines()
        .find(|l| l.contains("segv[") && l.contains("]: segfault at 0 ip "))
        .expect("the console lacks segv's fault report");
    let dir = scratch("qemu-oops-user-fault");
    let store = dir.join("store");
    let (s, p) = (store.to_str().unwrap(), segv.to_str().unwrap());
    run_ok("ksym-pack", &["--store", s, "--lines", "--elf", p], b"");
    let out = run_ok(
        "ksym-resolve",
        &["--store", s],
        format!("{line}\n").as_bytes(),
    );
    let out = String::from_utf8(out).unwrap();
    // The independent reading: ip and `[START+SIZE]` from the line, the
    // text segment from readelf, the function and line from addr2line.
    let field = |after: &str, end: char| {
        let at = line.find(after).unwrap() + after.len();
        let v = &line[at..];
        u64::from_str_radix(&v[..v.find(end).unwrap()], 16).unwrap()
    };
    let (ip, start) = (field(" ip ", ' '), field(" in segv[", '+'));
    let segs = tool("readelf", &["-lW", p]);
    let text = segs
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|w| w.first() == Some(&"LOAD") && w.contains(&"E"))
        .unwrap();
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    let (offset, vaddr) = (hex(text[1]), hex(text[2]));
    let link = ip - start + (offset & !0xfff) - offset + vaddr;
    let a2l = tool("addr2line", &["-f", "-e", p, &format!("{link:#x}")]);
    let (func, place) = a2l.split_once('\n').unwrap();
    let sym = common::nm_functions(&segv)
        .into_iter()
        .find(|f| f.2 == func)
        .unwrap();
    let want = format!(
        "] ({func}+{:#x}/{:#x} {})",
        link - sym.0,
        sym.1,
        place.trim().split(" (").next().unwrap()
    );
    assert!(out.contains(&want), "{out}: lacks {want}");
    eprintln!("user fault: {}", out.trim());
}

#[test]
fn a_real_arm64_oops_decodes_as_decode_stacktrace_and_decodecode_do() {
    let Some(text) = boot("arm64") else { return };
    // The guest's kallsyms follows the reports.
    let (console, rest) = text
        .split_once("ksym-qemu-oops: kallsyms\n")
        .expect("kallsyms dump");
    let kallsyms = rest.split("ksym-qemu-oops: done").next().unwrap();
    let want = [
        "WARNING: CPU:",
        "kernel BUG at",
        "Internal error",
        "Unable to handle kernel NULL pointer dereference",
    ];
    check(
        "arm64",
        &format!("{console}ksym-qemu-oops: done\n"),
        kallsyms.as_bytes(),
        &want,
    );
}

/// Runs scripts/qemu-oops.sh for `arch`; its console, or `None` (SKIPPED).
/// One at a time: both may run apt-get, and they share the fetched
/// scripts.
fn boot(arch: &str) -> Option<String> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out_dir = root.join(format!("target/qemu-oops-test-{arch}"));
    let st = Command::new("bash")
        .arg(root.join("scripts/qemu-oops.sh"))
        .arg(&out_dir)
        .env("KSYM_ARCH", arch)
        .status()
        .unwrap();
    if st.code() == Some(77) {
        skip_or_fail("scripts/qemu-oops.sh cannot install QEMU and the kernel (not root)");
        return None;
    }
    assert!(st.success(), "scripts/qemu-oops.sh failed");
    Some(std::fs::read_to_string(out_dir.join("console.txt")).unwrap())
}

/// The checks of the module doc on one console; `symbols` is the kernel's
/// System.map or kallsyms text, `want` what the console must show.
fn check(arch: &str, console: &str, symbols: &[u8], want: &[&str]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out_dir = root.join(format!("target/qemu-oops-test-{arch}"));
    let cross = if arch == "arm64" {
        "aarch64-linux-gnu-"
    } else {
        ""
    };
    for w in want.iter().chain(&["ksym_oops_init+", "Code: "]) {
        assert!(console.contains(w), "the console lacks {w:?}");
    }
    let system_map = symbols;

    let dir = scratch(&format!("qemu-oops-{arch}"));
    let blob = dir.join("k.bin");
    let filtered = run_ok("ksym-filter", &[], system_map);
    let mods = out_dir.join("modules");
    run_ok(
        "ksym-pack",
        &[
            "--format",
            "v2",
            "--modules",
            mods.to_str().unwrap(),
            "-o",
            blob.to_str().unwrap(),
        ],
        &filtered,
    );
    let b = blob.to_str().unwrap();

    // 1. Every reference found, and each agrees with the blob.
    let json = run_ok("ksym-resolve", &["--json", b], console.as_bytes());
    let objs: Vec<serde_json::Value> = lines(&json)
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    let refs: Vec<&serde_json::Value> = objs.iter().filter(|o| o["ref"].is_string()).collect();
    let independent: usize = console.lines().map(|l| ref_words(l).len()).sum();
    assert_eq!(refs.len(), independent, "references found");
    assert!(
        independent >= 40,
        "only {independent} references in the console"
    );
    // The System.map's own order: which symbol follows each function.
    let map_text = String::from_utf8_lossy(system_map).into_owned();
    let all: Vec<(u64, &str, &str)> = map_text
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((
                u64::from_str_radix(w.next()?, 16).ok()?,
                w.next()?,
                w.next()?,
            ))
        })
        .collect();
    let mut weak_ends = 0;
    for r in &refs {
        let line = r["line"].as_u64().unwrap();
        if r["status"] == "ok" {
            continue;
        }
        assert!(r["module"].is_null(), "line {line}: {r}");
        let name = r["name"].as_str().unwrap();
        let size = r["size"].as_u64().unwrap();
        let i = all
            .iter()
            .position(|s| s.2 == name)
            .unwrap_or_else(|| panic!("{name} not in System.map"));
        let next = all[i + 1..].iter().find(|s| s.0 > all[i].0).unwrap();
        assert!(
            next.1 == "W" && next.0 == all[i].0 + size,
            "line {line}: {r} disagrees, and not at a weak symbol ({next:?})"
        );
        weak_ends += 1;
    }
    eprintln!(
        "{} references, {} agree, {weak_ends} end at a weak symbol",
        refs.len(),
        refs.len() - weak_ends
    );

    // 2. Frame lines against decode_stacktrace.sh (Code: lines apart:
    // decodecode's blocks are compared below; `CPU: … PID: N Comm:` lines
    // apart too: with debuginfod-find installed the script reads them for a
    // build-id and prints nothing).
    let no_code: String = console
        .lines()
        .filter(|l| {
            let pid_line = l.contains(" PID: ") && l.contains(" Comm: ");
            !(l.contains("Code:") || pid_line)
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let ours = run_ok("ksym-resolve", &[b], no_code.as_bytes());
    let script = Command::new("bash")
        .arg(out_dir.join("scripts/decode_stacktrace.sh"))
        .args(["/dev/null", "/nonexistent", mods.to_str().unwrap()])
        .env("CROSS_COMPILE", cross)
        .stdin(
            std::fs::File::open({
                let p = dir.join("no-code.txt");
                std::fs::write(&p, &no_code).unwrap();
                p
            })
            .unwrap(),
        )
        .output()
        .unwrap();
    let theirs = String::from_utf8_lossy(&script.stdout);
    let ours = String::from_utf8_lossy(&ours);
    let (input, ours, theirs): (Vec<&str>, Vec<&str>, Vec<&str>) = (
        no_code.lines().collect(),
        ours.lines().collect(),
        theirs.lines().collect(),
    );
    assert_eq!(input.len(), ours.len());
    assert_eq!(input.len(), theirs.len());
    let (mut module_lines, mut vmlinux_lines, mut script_right) = (0, 0, 0);
    for ((i, o), t) in input.iter().zip(&ours).zip(&theirs) {
        let words = ref_words(i);
        if words.is_empty() {
            continue;
        }
        if let Some(m) = i
            .trim_end()
            .strip_suffix(']')
            .and_then(|l| l.rsplit_once(" ["))
            .map(|x| x.1)
        {
            // The script runs `addr2line -i` on the module without a
            // section: a function outside the first code section gets
            // another section's line. The truth is `addr2line -j SECTION`;
            // the rest of the script's line is kept.
            let want = with_code(t, &truth(cross, &mods.join(format!("{m}.ko")), &words[0]));
            assert_eq!(*o, want, "module frame: {i}\n   script: {t}");
            script_right += usize::from(*t == want);
            module_lines += 1;
        } else {
            assert_eq!(o, i, "vmlinux frame: {i}");
            vmlinux_lines += 1;
        }
    }
    eprintln!(
        "{module_lines} module frame lines, {script_right} byte-identical to decode_stacktrace.sh; {vmlinux_lines} vmlinux frame lines unchanged"
    );
    assert!(
        module_lines >= 10 && vmlinux_lines >= 20,
        "{module_lines} module, {vmlinux_lines} vmlinux frame lines"
    );

    // 3. Kernel Code: lines against decodecode.
    let decoded =
        String::from_utf8_lossy(&run_ok("ksym-resolve", &[b], console.as_bytes())).into_owned();
    let mut blocks = 0;
    for code in console
        .lines()
        .filter(|l| l.contains("Code: ") && !l.contains("Unable to access"))
    {
        let dc = Command::new("bash")
            .arg(out_dir.join("scripts/decodecode"))
            .env("CROSS_COMPILE", cross)
            .env("ARCH", arch)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin
                    .take()
                    .unwrap()
                    .write_all(format!("{code}\n").as_bytes())?;
                c.wait_with_output()
            })
            .unwrap();
        let theirs = all_code(&String::from_utf8_lossy(&dc.stdout));
        let at = decoded.find(code).unwrap();
        let ours = all_code(&decoded[at..]);
        assert_eq!(ours.len(), theirs.len(), "rows of `{code}`");
        for (o, t) in ours.iter().zip(&theirs) {
            assert_eq!((o.0, &o.1, o.3), (t.0, &t.1, t.3), "row of `{code}`");
            assert!(
                same(arch, o.1.len() / 2, &o.2, &t.2),
                "`{code}` at {:#x}: {} vs {}",
                o.0,
                o.2,
                t.2
            );
        }
        blocks += 1;
    }
    assert!(blocks >= 3, "{blocks} Code: lines compared");

    // 4. The same console behind other prefixes gives the same JSON.
    for (what, f) in [
        (
            "journalctl",
            &(|l: &str| format!("Nov 24 10:00:01 qemu kernel: {l}")) as &dyn Fn(&str) -> String,
        ),
        ("caller id", &|l: &str| match l.find("] ") {
            Some(e) if l.starts_with('[') => format!("{}[    T85]{}", &l[..=e], &l[e + 1..]),
            _ => l.to_string(),
        }),
        ("dmesg -T", &|l: &str| match l.find("] ") {
            Some(e) if l.starts_with('[') => format!("[Tue Nov 24 10:00:01 2026]{}", &l[e + 1..]),
            _ => l.to_string(),
        }),
    ] {
        let text: String = console.lines().map(|l| f(l) + "\n").collect();
        let j = run_ok("ksym-resolve", &["--json", b], text.as_bytes());
        assert_eq!(
            String::from_utf8_lossy(&j),
            String::from_utf8_lossy(&json),
            "{what} prefixes"
        );
    }
}

/// `addr2line -i -j SECTION` of `name+0xOFF` in module `ko` (at OFF − 1
/// when OFF is the function's size: a `%pB` return address), joined as
/// decode_stacktrace.sh joins them.
fn truth(cross: &str, ko: &Path, reference: &str) -> String {
    let (name, rest) = reference.rsplit_once('+').unwrap();
    let off =
        u64::from_str_radix(rest.split('/').next().unwrap().trim_start_matches("0x"), 16).unwrap();
    let table = Command::new(format!("{cross}objdump"))
        .arg("-t")
        .arg(ko)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    // `0000000000000000 l     F .init.text\t000000000000003a ksym_oops_init`
    let (value, section, size) = table
        .lines()
        .find_map(|l| {
            let (head, tail) = l.split_once('\t')?;
            let mut t = tail.split_whitespace();
            let size = u64::from_str_radix(t.next()?, 16).ok()?;
            (t.next()? == name).then_some(())?;
            let mut h = head.split_whitespace();
            let value = u64::from_str_radix(h.next()?, 16).ok()?;
            Some((value, h.last()?.to_string(), size))
        })
        .unwrap_or_else(|| panic!("{name} not in {}", ko.display()));
    let at = value + off - u64::from(off == size);
    let out = Command::new(format!("{cross}addr2line"))
        .args(["-i", "-j", &section, "-e"])
        .arg(ko)
        .arg(format!("{at:x}"))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .collect::<Vec<_>>()
        .join(" ")
}

/// decode_stacktrace.sh's `PREFIX name (CODE) module` with another CODE.
fn with_code(script_line: &str, code: &str) -> String {
    let (a, b) = (
        script_line.find(" (").unwrap(),
        script_line.rfind(") ").unwrap(),
    );
    format!("{} ({code}{}", &script_line[..a], &script_line[b..])
}

/// `All code` rows: (offset, bytes, mnemonic, trapping).
fn all_code(text: &str) -> Vec<(usize, String, String, bool)> {
    let mut rows = Vec::new();
    let mut inside = false;
    for l in text.lines() {
        if l == "All code" {
            inside = true;
            continue;
        }
        if inside && (l.is_empty() || l.starts_with("Code starting")) {
            break;
        }
        let Some((off, rest)) = l.trim_start().split_once(':') else {
            continue;
        };
        let Ok(off) = usize::from_str_radix(off, 16) else {
            continue;
        };
        let trap = rest.starts_with('*');
        let mut cols = rest
            .trim_start_matches('*')
            .trim_start_matches('\t')
            .splitn(2, '\t');
        let bytes: String = cols.next().unwrap_or("").split_whitespace().collect();
        let text = cols.next().unwrap_or("");
        // objdump continues an instruction of over 7 bytes on a row of its own.
        if let (true, Some(last)) = (text.trim().is_empty(), rows.last_mut()) {
            let last: &mut (usize, String, String, bool) = last;
            last.1.push_str(&bytes);
            continue;
        }
        rows.push((
            off,
            bytes,
            mnemonic(text.split('\t').next().unwrap_or(text)),
            trap,
        ));
    }
    rows
}
