//! `ksym-resolve --store DIR --maps FILE`: a process's runtime addresses,
//! each named by the blob of the binary whose mapping holds it (found by
//! the mapped file's build-id), the address less that binary's load bias.
//! First on frames built from a PIE's own printed addresses (every form:
//! bare addresses, perf's `-F ip,sym`, bpftrace's and bcc's), then on a
//! real bpftrace capture of a stripped program that exited before
//! bpftrace printed its stacks, checked frame by frame against `nm` of the
//! unstripped program and of libc's and ld.so's debug files (ld.so is not
//! in the store: its blob is made from its file on this machine). A binary
//! the store lacks gets its lines from its own DWARF with `--inline`.
mod common;

use common::{build_id, cc_pie, debug_file, nm_all, nm_functions, run, run_ok, scratch, tool};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh store under `dir` with the blobs of `elfs`.
fn store_of(dir: &Path, elfs: &[&Path]) -> PathBuf {
    let store = dir.join("store");
    let _ = std::fs::remove_dir_all(&store);
    let mut args = vec!["--store", store.to_str().unwrap()];
    for e in elfs {
        args.extend(["--elf", e.to_str().unwrap()]);
    }
    run_ok("ksym-pack", &args, b"");
    store
}

/// The path libc is mapped from in `maps` (as the process saw it).
fn libc_path(maps: &str) -> String {
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.ends_with("/libc.so.6"))
        .expect("libc in the maps")
        .to_string()
}

/// tests/data/maps.c built as a PIE and run: the program, the runtime
/// addresses it printed (`exported`, `helper`, libc's `puts`) and its maps.
fn maps_program(dir: &Path) -> (PathBuf, std::collections::HashMap<String, u64>, String) {
    let prog = cc_pie(dir, "maps.c", "maps");
    let out = tool(prog.to_str().unwrap(), &[]);
    let mut lines = out.lines();
    let mut addr = std::collections::HashMap::new();
    for _ in 0..3 {
        let (name, a) = lines.next().unwrap().split_once(' ').unwrap();
        addr.insert(name.to_string(), u64::from_str_radix(&a[2..], 16).unwrap());
    }
    let maps_text = lines.collect::<Vec<_>>().join("\n") + "\n";
    (prog, addr, maps_text)
}

/// Frames of every form a tool prints for a process, at the runtime
/// addresses a PIE printed of its own functions and of libc's `puts`.
#[test]
fn a_process_s_binaries_resolve_through_its_maps_from_a_store() {
    let dir = scratch("process-maps");
    let (prog, addr, maps_text) = maps_program(&dir);
    let libc = libc_path(&maps_text);
    // A mapping of a file deleted since: the file there now is not it.
    let maps_text =
        maps_text + "7e0000000000-7e0000001000 r-xp 00000000 fe:01 9 /tmp/gone.so (deleted)\n";
    let maps = dir.join("maps.txt");
    std::fs::write(&maps, &maps_text).unwrap();
    let store = store_of(&dir, &[&prog, Path::new(&libc)]);
    let real = std::fs::canonicalize(&prog).unwrap();
    let p = real.to_str().unwrap();
    let (e, h, puts) = (addr["exported"], addr["helper"], addr["puts"]);
    // The program's link-time address of `exported` is its file offset
    // (gcc's layout): perf's DSO-relative frame of it, routed by path.
    let link = nm_functions(&prog)
        .into_iter()
        .find(|f| f.2 == "exported")
        .unwrap()
        .0;
    let input = format!(
        "{e1:#x}\n\
         \t    {h:x} [unknown]\n\
         \t{puts:x} 0x{puts:x} ([unknown])\n\
         \t{puts:x} puts+0 ({libc})\n\
         \t1000 0x1000 ([unknown])\n\
         \x20       {e:x} [unknown] [maps]\n\
         \t    {link:x} ({p})\n\
         0x7e0000000010\n",
        e1 = e + 1
    );
    let args = [
        "--store",
        store.to_str().unwrap(),
        "--maps",
        maps.to_str().unwrap(),
    ];
    let got = run("ksym-resolve", &args, input.as_bytes());
    assert!(got.status.success(), "{got:?}");
    let text = String::from_utf8(got.stdout).unwrap();
    let got: Vec<&str> = text.lines().collect();
    assert!(
        got[0].starts_with(&format!("{:016x} T exported+0x1/0x", e + 1)),
        "{got:?}"
    );
    assert_eq!(got[1], format!("\t    {h:x} helper+0x0"));
    // bpftrace's unnamed frame, named as bpftrace names one (`puts` is a
    // weak alias of the global `_IO_puts`, which llvm-symbolizer prints).
    assert_eq!(got[2], format!("\t{puts:x} _IO_puts+0 ({libc})"));
    // bpftrace's own name stays; an address in no mapping stays.
    assert_eq!(got[3], format!("\t{puts:x} puts+0 ({libc})"));
    assert_eq!(got[4], "\t1000 0x1000 ([unknown])");
    // bcc's `[unknown] [MOD]` keeps its module, as bcc prints a name.
    assert_eq!(got[5], format!("        {e:x} exported+0x0 [maps]"));
    assert_eq!(got[6], format!("\t    {link:x} exported ({p})"));
    // An address of the deleted file's mapping stays, with a note.
    assert_eq!(got[7], "0x7e0000000010");
    let err =
        String::from_utf8_lossy(&run("ksym-resolve", &args, input.as_bytes()).stderr).into_owned();
    assert!(err.contains("/tmp/gone.so (deleted): no build-id"), "{err}");
    // --dso picks one blob's binary: meaningless with a store.
    let mut with_dso = args.to_vec();
    with_dso.extend(["--dso", "maps"]);
    assert_eq!(run("ksym-resolve", &with_dso, b"").status.code(), Some(2));
    // A maps file that does not parse: the error names its line.
    std::fs::write(&maps, format!("{maps_text}not a maps line\n")).unwrap();
    let bad = run("ksym-resolve", &args, b"");
    assert_eq!(bad.status.code(), Some(1));
    let line = maps_text.lines().count() + 1;
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains(&format!("line {line}: expected")), "{err}");
}

/// A binary the store lacks, named from its file on this machine: names
/// only, but with `--inline`, when it has DWARF, its lines too, as the
/// blob `ksym-pack --elf --lines` makes of it prints them.
#[test]
fn a_binary_the_store_lacks_gets_its_lines_from_its_file_with_inline() {
    let dir = scratch("local-lines");
    let (prog, addr, maps_text) = maps_program(&dir);
    let input: String = ["exported", "helper"]
        .iter()
        .map(|f| format!("{:#x}\n{:#x}\n", addr[*f], addr[*f] + 1))
        .collect();
    let maps = dir.join("maps.txt");
    std::fs::write(&maps, &maps_text).unwrap();
    let libc = libc_path(&maps_text);
    let store = store_of(&dir, &[Path::new(&libc)]);
    let blob = dir.join("maps.ksym");
    run_ok(
        "ksym-pack",
        &[
            "--elf",
            prog.to_str().unwrap(),
            "--lines",
            "-o",
            blob.to_str().unwrap(),
        ],
        b"",
    );
    let (s, m) = (store.to_str().unwrap(), maps.to_str().unwrap());
    // The addresses through the store and the maps file, with `extra`.
    let through_store = |extra: &[&str]| {
        let out = run(
            "ksym-resolve",
            &[&["--store", s, "--maps", m][..], extra].concat(),
            input.as_bytes(),
        );
        assert!(out.status.success(), "{out:?}");
        out
    };
    let want = String::from_utf8(run_ok(
        "ksym-resolve",
        &["--maps", m, "--dso", "maps", blob.to_str().unwrap()],
        input.as_bytes(),
    ))
    .unwrap();
    assert!(want.contains("maps.c:"), "{want}");
    let inline = through_store(&["--inline"]);
    assert_eq!(String::from_utf8_lossy(&inline.stdout), want);
    let err = String::from_utf8_lossy(&inline.stderr);
    assert!(
        err.contains("named from the file on this machine, lines from"),
        "{err}"
    );
    // A mapped binary no address lands in is never loaded: ld.so's DWARF
    // is not read.
    assert!(!err.contains("ld-linux"), "{err}");
    // Without --inline: the same names, no lines.
    let names = through_store(&[]);
    let text = String::from_utf8_lossy(&names.stdout);
    assert!(!text.contains("maps.c"), "{text}");
    for (n, w) in text.lines().zip(want.lines()) {
        assert!(w.starts_with(n), "{n} / {w}");
    }
    assert!(
        String::from_utf8_lossy(&names.stderr).contains("(names only: --inline"),
        "{names:?}"
    );
    // DWARF that does not read costs the lines, never the names: the
    // program again, its .debug_info overwritten (same build-id).
    let junk = dir.join("junk");
    std::fs::write(&junk, [0xffu8; 64]).unwrap();
    let broken = dir.join("broken");
    tool(
        "objcopy",
        &[
            "--update-section",
            &format!(".debug_info={}", junk.display()),
            prog.to_str().unwrap(),
            broken.to_str().unwrap(),
        ],
    );
    let real = std::fs::canonicalize(&prog).unwrap();
    let moved = maps_text.replace(real.to_str().unwrap(), broken.to_str().unwrap());
    assert_ne!(moved, maps_text);
    std::fs::write(&maps, moved).unwrap();
    let got = through_store(&["--inline"]);
    assert_eq!(String::from_utf8_lossy(&got.stdout), text);
    let err = String::from_utf8_lossy(&got.stderr);
    assert!(
        err.contains("broken") && err.contains(": names only"),
        "{err}"
    );
}

/// A binary's functions by `nm` (of its debug file when it has one) and
/// its PLT stubs by objdump, and
/// the load bias its mapping at file offset 0 gives (the first `PT_LOAD`
/// of gcc's and glibc's layouts is at address 0).
struct Truth {
    funcs: Vec<(u64, u64, String)>,
    /// Symbols without a size (assembly entry points: ld.so's
    /// `_dl_start_user`), which name the gap after them.
    labels: Vec<(u64, String)>,
    bias: u64,
    exec: Vec<std::ops::Range<u64>>,
    path: String,
}

impl Truth {
    fn new(maps: &str, path: &str, symbols: &Path) -> Truth {
        let mut bias = None;
        let mut exec = Vec::new();
        for l in maps.lines() {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 6 || f[5] != path {
                continue;
            }
            let (s, e) = f[0].split_once('-').unwrap();
            let (s, e) = (
                u64::from_str_radix(s, 16).unwrap(),
                u64::from_str_radix(e, 16).unwrap(),
            );
            if f[2] == "00000000" {
                bias.get_or_insert(s);
            }
            if f[1].contains('x') {
                exec.push(s..e);
            }
        }
        // PLT stubs, as objdump names them (16 bytes each on x86-64).
        let mut funcs = nm_functions(symbols);
        let plt = tool(
            "objdump",
            &[
                "-d",
                "-j",
                ".plt",
                "-j",
                ".plt.sec",
                symbols.to_str().unwrap(),
            ],
        );
        for l in plt.lines() {
            if let Some((a, n)) = l.strip_suffix("@plt>:").and_then(|l| l.split_once(" <")) {
                funcs.push((u64::from_str_radix(a, 16).unwrap(), 16, format!("{n}@plt")));
            }
        }
        let labels = nm_all(symbols)
            .into_iter()
            .filter(|f| f.1 == 0)
            .map(|f| (f.0, f.2))
            .collect();
        Truth {
            funcs,
            labels,
            bias: bias.expect("a mapping at offset 0"),
            exec,
            path: path.to_string(),
        }
    }

    /// The label at or below runtime address `a` in padding (no sized
    /// function starts between them), and the offset from it.
    fn label(&self, a: u64) -> Option<(&str, u64)> {
        let x = a - self.bias;
        let (at, name) = self
            .labels
            .iter()
            .filter(|l| l.0 <= x)
            .max_by_key(|l| l.0)?;
        let sized_between = self.funcs.iter().any(|f| *at < f.0 && f.0 <= x);
        (!sized_between).then_some((name.as_str(), x - at))
    }

    /// Every name `nm` gives the function holding runtime address `a`,
    /// and the offset into it; `None` in padding.
    fn at(&self, a: u64) -> Option<(Vec<&str>, u64)> {
        let x = a - self.bias;
        let (start, _, _) = self.funcs.iter().find(|(s, z, _)| *s <= x && x < s + z)?;
        let names = self
            .funcs
            .iter()
            .filter(|f| f.0 == *start)
            .map(|f| f.2.as_str());
        Some((names.collect(), x - start))
    }
}

/// A real bpftrace capture (`ustack(perf)`, `-c`): the program has exited
/// when bpftrace prints, so every user frame is `ADDR 0xADDR ([unknown])`.
/// Through the store and the maps file the program wrote, each frame in
/// the program or libc gets `NAME+DEC (PATH)` as bpftrace prints a frame
/// it names, NAME one of `nm`'s names at that function and DEC the offset;
/// frames in padding and every other line stay byte for byte.
#[test]
fn bpftrace_stacks_of_an_exited_process_are_named() {
    if Command::new("bpftrace").arg("--version").output().is_err() {
        eprintln!("SKIPPED: no bpftrace (CI installs it)");
        return;
    }
    let dir = scratch("process-bpftrace");
    let prog = cc_pie(&dir, "spin.c", "spin");
    let stripped = dir.join("spin.stripped");
    tool(
        "strip",
        &["-o", stripped.to_str().unwrap(), prog.to_str().unwrap()],
    );
    let maps = dir.join("maps.txt");
    let _ = std::fs::remove_file(&maps);
    let cmd = format!("{} {}", stripped.display(), maps.display());
    let bt = Command::new("bpftrace")
        .args([
            "-e",
            "profile:hz:997 /pid == cpid/ { @[ustack(perf)] = count(); }",
            "-c",
            &cmd,
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&bt.stderr);
    if !bt.status.success() || !maps.exists() {
        // Not ours to fail: the machine does not let bpftrace attach
        // (no root, no BPF, a kernel without the profile probe).
        eprintln!("SKIPPED: bpftrace cannot run here: {stderr}");
        return;
    }
    let maps_text = std::fs::read_to_string(&maps).unwrap();
    let libc = libc_path(&maps_text);
    let stripped_path = std::fs::canonicalize(&stripped).unwrap();
    // The program, libc, and ld.so: not in the store, named from its file
    // on this machine.
    let ld = maps_text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.contains("/ld-linux"))
        .expect("ld.so in the maps")
        .to_string();
    let system = |p: &str| debug_file(Path::new(p)).unwrap_or_else(|| PathBuf::from(p));
    let truths = [
        Truth::new(&maps_text, stripped_path.to_str().unwrap(), &prog),
        Truth::new(&maps_text, &libc, &system(&libc)),
        Truth::new(&maps_text, &ld, &system(&ld)),
    ];
    // The unstripped program's blob: the same build-id as the copy that ran.
    let store = store_of(&dir, &[&prog, Path::new(&libc)]);
    let got = run_ok(
        "ksym-resolve",
        &[
            "--store",
            store.to_str().unwrap(),
            "--maps",
            maps.to_str().unwrap(),
        ],
        &bt.stdout,
    );
    let (before, after) = (
        String::from_utf8_lossy(&bt.stdout),
        String::from_utf8_lossy(&got),
    );
    assert_eq!(before.lines().count(), after.lines().count());
    let mut named = [0usize; 3];
    let mut functions = std::collections::BTreeSet::new();
    for (b, a) in before.lines().zip(after.lines()) {
        let frame = b
            .strip_prefix('\t')
            .and_then(|f| f.strip_suffix(" ([unknown])"))
            .and_then(|f| f.split_once(' '))
            .filter(|(x, y)| y.strip_prefix("0x") == Some(*x));
        let Some((hex, _)) = frame else {
            assert_eq!(a, b, "not an unnamed bpftrace frame: unchanged");
            continue;
        };
        let x = u64::from_str_radix(hex, 16).unwrap();
        let Some((k, t)) = truths
            .iter()
            .enumerate()
            .find(|(_, t)| t.exec.iter().any(|r| r.contains(&x)))
        else {
            assert_eq!(a, b, "{x:#x} is in no binary's code");
            continue;
        };
        match t.at(x) {
            // Padding stays, but for the gap an assembly label names.
            None if a == b => {}
            None => {
                let (label, off) = t
                    .label(x)
                    .unwrap_or_else(|| panic!("{x:#x} is padding in {}: {a}", t.path));
                assert_eq!(a, format!("\t{hex} {label}+{off} ({})", t.path));
            }
            Some((names, off)) => {
                let (name, rest) = a
                    .strip_prefix(&format!("\t{hex} "))
                    .and_then(|r| r.rsplit_once('+'))
                    .unwrap_or_else(|| panic!("{x:#x} not named: {a}"));
                assert!(
                    names.contains(&name),
                    "{x:#x}: {name} is not one of {names:?}"
                );
                assert_eq!(rest, format!("{off} ({})", t.path), "{a}");
                named[k] += 1;
                functions.insert(name.to_string());
            }
        }
    }
    eprintln!("named {named:?} frames of the program, libc and ld.so: {functions:?}");
    // bpftrace counts each distinct stack once, and libc has no frame
    // pointers: most stacks end in libc, and how many distinct ones reach
    // the program varies from run to run (6 in a CI run of 0.3 s, 18 to
    // 24 in four runs of 0.6 s).
    assert!(named[0] >= 4 && named[1] >= 20, "{named:?}\n{before}");
    for f in ["main", "spin"] {
        assert!(functions.contains(f), "{f} never named: {functions:?}");
    }
}

/// The kernel's report of a user-space fault (`segfault at … ip … in
/// NAME[…]`, x86's `trap`, any architecture's `[OFF,START+SIZE]`) gets the
/// faulting function after its bracket, from the blob the store lists
/// under that file name, with the program moved away: Linux 6.9+'s file
/// offset and the older bracket (the mapping alone, placed by the `ip`).
/// Built from the PIE's own runtime addresses and maps, as the kernel
/// prints them (mm/memory.c `print_vma_addr`).
#[test]
fn kernel_fault_reports_name_the_faulting_function_from_the_store() {
    let dir = scratch("fault-reports");
    let (prog, addr, maps_text) = maps_program(&dir);
    let libc = libc_path(&maps_text);
    let store = store_of(&dir, &[&prog, Path::new(&libc)]);
    let s = store.to_str().unwrap();
    std::fs::rename(&prog, dir.join("moved")).unwrap();
    // The executable mapping holding `a`: (file name, start, size, offset).
    let mapping = |a: u64| {
        maps_text
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let (lo, hi) = f.first()?.split_once('-')?;
                let (lo, hi) = (
                    u64::from_str_radix(lo, 16).ok()?,
                    u64::from_str_radix(hi, 16).ok()?,
                );
                let name = f.get(5)?.rsplit('/').next()?.to_string();
                let off = u64::from_str_radix(f[2], 16).ok()?;
                (f[1].contains('x') && lo <= a && a < hi).then_some((name, lo, hi - lo, off))
            })
            .next()
            .expect("an executable mapping")
    };
    let mut input = String::new();
    let mut wants = Vec::new();
    for (func, ip, named) in [
        ("exported", addr["exported"] + 1, "exported+0x1/0x"),
        ("helper", addr["helper"] + 2, "helper+0x2/0x"),
        // `puts` is a weak alias of libc's global `_IO_puts`.
        ("puts", addr["puts"] + 3, "_IO_puts+0x3/0x"),
    ] {
        let (name, start, size, off) = mapping(ip);
        let at = ip - start + off;
        for (line, cut) in [
            (
                format!(
                    "[ 9.5] maps[42]: segfault at 0 ip {ip:016x} sp 00007ffd5b2c8e40 error 4 in {name}[{at:x},{start:x}+{size:x}] likely on CPU 0 (core 0, socket 0)"
                ),
                " likely",
            ),
            (
                format!(
                    "Nov 27 02:00:01 h kernel: maps[42]: segfault at 0 ip {ip:016x} sp 00007ffd5b2c8e40 error 4 in {name}[{start:x}+{size:x}]"
                ),
                "",
            ),
            (
                format!(
                    "[ 9.6] traps: maps[43] trap invalid opcode ip:{ip:x} sp:7ffd5b2c8e40 error:0 in {name}[{start:x}+{size:x}]"
                ),
                "",
            ),
        ] {
            let k = if cut.is_empty() {
                line.len()
            } else {
                line.find(cut).unwrap()
            };
            wants.push((
                format!("{} ({named}", &line[..k]),
                format!("){}", &line[k..]),
                func,
            ));
            input += &line;
            input.push('\n');
        }
    }
    // A mapping that is not one segment (the size), a file the store does
    // not list, a line that is no report: all pass unchanged.
    let (name, start, size, _) = mapping(addr["exported"]);
    let ip = addr["exported"];
    let unchanged = [
        format!(
            "maps[42]: segfault at 0 ip {ip:016x} sp 0 error 4 in {name}[{start:x}+{:x}]",
            size + 0x1000
        ),
        format!(
            "x[42]: segfault at 0 ip {ip:016x} sp 0 error 4 in unlisted.so[{start:x}+{size:x}]"
        ),
        format!("in {name}[{start:x}+{size:x}]"),
    ];
    for l in &unchanged {
        input += l;
        input.push('\n');
    }
    let got = run("ksym-resolve", &["--store", s], input.as_bytes());
    assert!(got.status.success(), "{got:?}");
    let text = String::from_utf8(got.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), wants.len() + unchanged.len(), "{text}");
    for (l, (head, tail, func)) in lines.iter().zip(&wants) {
        assert!(
            l.starts_with(head.as_str()) && l.ends_with(tail.as_str()),
            "{func}: {l}\nnot {head}…{tail}"
        );
    }
    assert_eq!(
        lines[wants.len()..],
        unchanged.iter().map(String::as_str).collect::<Vec<_>>()[..]
    );
    let err = String::from_utf8_lossy(&got.stderr);
    assert!(err.contains("lines up with no executable segment"), "{err}");
    assert!(
        err.contains("unlisted.so: no binary of that name in the store"),
        "{err}"
    );

    // Two builds under one name: no guess, until --build-ids names one.
    std::fs::create_dir_all(dir.join("o2")).unwrap();
    let other = cc_pie(&dir.join("o2"), "funcs.c", "maps");
    let first = input.lines().next().unwrap().to_string() + "\n";
    run_ok(
        "ksym-pack",
        &["--store", s, "--elf", other.to_str().unwrap()],
        b"",
    );
    let got = run("ksym-resolve", &["--store", s], first.as_bytes());
    assert_eq!(String::from_utf8_lossy(&got.stdout), first);
    assert!(
        String::from_utf8_lossy(&got.stderr).contains("maps: 2 builds of that name"),
        "{got:?}"
    );
    let ids = dir.join("ids");
    let id = build_id(&dir.join("moved"));
    std::fs::write(&ids, format!("{id} /usr/local/bin/maps\n")).unwrap();
    let got = run_ok(
        "ksym-resolve",
        &["--store", s, "--build-ids", ids.to_str().unwrap()],
        first.as_bytes(),
    );
    assert!(
        String::from_utf8_lossy(&got).contains(" (exported+0x1/0x"),
        "{got:?}"
    );
}
