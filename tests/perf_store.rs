//! Whole stacks from a store: `ksym-pack --store DIR --elf A --elf B
//! --lines` packs a blob per binary by build-id, and `perf script -F
//! ip,dso | ksym-resolve --store DIR` names each callchain frame with its
//! own binary's blob, reading perf's DSO-relative address as a file offset
//! (a library linked by lld, whose text's file offset and link-time
//! address differ, checks that). The binaries are moved away first: the
//! store and perf's build-ids are all there is. Then a real `perf record
//! -g` of a program, its library, libc and the kernel, whose every frame
//! perf named must get the same name (or an alias at its address).
mod common;

use common::{
    build_id, data, debug_file, perf_record, run, run_ok, scratch, tool, zero_size_functions,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Rust's own lld, through the `gcc-ld` wrappers every rustup toolchain
/// ships: a linker whose layout gives text `p_offset != p_vaddr`.
fn lld_dir() -> PathBuf {
    let sysroot = tool("rustc", &["--print", "sysroot"]);
    let host = tool("rustc", &["-vV"])
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .unwrap();
    let dir = Path::new(sysroot.trim()).join(format!("lib/rustlib/{host}/bin/gcc-ld"));
    assert!(dir.join("ld.lld").exists(), "{}: no ld.lld", dir.display());
    dir
}

/// tests/data/perfwork.c as a shared library (linked by lld) and a PIE
/// that calls it, with frame pointers and DWARF, in `dir`.
fn build_workload(dir: &Path) -> (PathBuf, PathBuf) {
    let src = data("perfwork.c");
    let lib = dir.join("libperfwork.so");
    let prog = dir.join("perfwork");
    let b = format!("-B{}", lld_dir().display());
    let common = ["-O1", "-g", "-fno-omit-frame-pointer"];
    let mut args: Vec<&str> = common.to_vec();
    args.extend(["-fPIC", "-shared", "-DLIB", "-fuse-ld=lld", &b, "-o"]);
    args.extend([lib.to_str().unwrap(), src.to_str().unwrap()]);
    tool("cc", &args);
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    let ldir = format!("-L{}", dir.display());
    let mut args: Vec<&str> = common.to_vec();
    args.extend(["-o", prog.to_str().unwrap(), src.to_str().unwrap()]);
    args.extend([ldir.as_str(), "-lperfwork", rpath.as_str()]);
    tool("cc", &args);
    (prog, lib)
}

/// `nm -S --defined-only` of `elf`.
fn nm(elf: &Path) -> String {
    tool("nm", &["-S", "--defined-only", elf.to_str().unwrap()])
}

/// `nm -S`'s functions of `elf`: (address, size, name).
fn functions(elf: &Path) -> Vec<(u64, u64, String)> {
    functions_in(&nm(elf))
}

/// The sized functions of an [`nm`] listing: (address, size, name).
fn functions_in(nm: &str) -> Vec<(u64, u64, String)> {
    nm.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let [a, s, t, n] = f[..] else { return None };
            "TtWwi".contains(t).then(|| {
                (
                    u64::from_str_radix(a, 16).unwrap(),
                    u64::from_str_radix(s, 16).unwrap(),
                    n.split('@').next().unwrap().to_string(),
                )
            })
        })
        .filter(|f| f.1 > 0)
        .collect()
}

/// The file offset of link-time address `addr`, by `readelf -l`'s
/// `PT_LOAD` headers.
fn file_offset(elf: &Path, addr: u64) -> u64 {
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    tool("readelf", &["-lW", elf.to_str().unwrap()])
        .lines()
        .filter(|l| l.trim_start().starts_with("LOAD"))
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (off, vaddr, filesz) = (hex(f[1]), hex(f[2]), hex(f[4]));
            (vaddr <= addr && addr < vaddr + filesz).then(|| addr - vaddr + off)
        })
        .unwrap()
}

/// Names and their addresses, for telling an alias from another function.
fn addresses(syms: impl Iterator<Item = (u64, String)>) -> HashMap<String, Vec<u64>> {
    let mut m: HashMap<String, Vec<u64>> = HashMap::new();
    for (a, n) in syms {
        m.entry(n).or_default().push(a);
    }
    m
}

fn same_or_alias(ours: &str, perf: &str, names: &HashMap<String, Vec<u64>>) -> bool {
    ours == perf
        || matches!((names.get(ours), names.get(perf)),
            (Some(a), Some(b)) if a.iter().any(|x| b.contains(x)))
}

#[test]
fn a_store_names_perf_file_offsets_without_the_binaries() {
    let dir = scratch("perf_store_offsets");
    let (prog, lib) = build_workload(&dir);
    let store = dir.join("store");
    let s = store.to_str().unwrap();
    let (p, l) = (prog.to_str().unwrap(), lib.to_str().unwrap());
    let out = run(
        "ksym-pack",
        &["--store", s, "--lines", "--elf", p, "--elf", l],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (pid, lid) = (build_id(&prog), build_id(&lib));
    for id in [&pid, &lid] {
        assert!(store.join(format!("buildid/{id}/section/.ksym")).is_file());
    }
    // perf's callchain frames: each function's first and last byte, as
    // file offsets, without a symbol (-F ip,dso) and with perf's own.
    let mut input = String::new();
    let mut want = Vec::new();
    let mut names = Vec::new();
    for elf in [&prog, &lib] {
        let funcs = functions(elf);
        names.extend(funcs.iter().map(|f| (f.0, f.2.clone())));
        for (a, s, n) in &funcs {
            for x in [*a, a + s - 1] {
                let off = file_offset(elf, x);
                input.push_str(&format!("\t{off:16x} ({})\n", elf.display()));
                want.push((n.clone(), None));
                input.push_str(&format!("\t{off:16x} perf_name+0x3 ({})\n", elf.display()));
                want.push((n.clone(), Some(x - a)));
            }
        }
    }
    assert!(want.len() >= 16, "{want:?}");
    let names = addresses(names.into_iter());
    // A binary the store lacks and one with no build-id stay as they are.
    let other = "\t            1234 (/usr/lib/x86_64-linux-gnu/libnotstored.so)\n";
    let unknown = "\t            1234 (/nonexistent/libgone.so)\n";
    input.push_str(other);
    input.push_str(unknown);
    let gone = dir.join("gone");
    std::fs::create_dir_all(&gone).unwrap();
    std::fs::rename(&prog, gone.join("perfwork")).unwrap();
    std::fs::rename(&lib, gone.join("libperfwork.so")).unwrap();
    let ids = dir.join("buildids");
    std::fs::write(
        &ids,
        format!(
            "{pid} {p}\n{lid} {l}\n0123456789abcdef0123456789abcdef01234567 /usr/lib/x86_64-linux-gnu/libnotstored.so\n"
        ),
    )
    .unwrap();
    // The build-ids by `perf buildid-list`, then by MMAP2 records.
    let mmap2 = format!(
        "perfwork 7 1.0: PERF_RECORD_MMAP2 7/7: [0x55d000001000(0x1000) @ 0x1000 <{pid}>]: r-xp {p}\n\
         perfwork 7 1.0: PERF_RECORD_MMAP2 7/7: [0x7f0000001000(0x1000) @ 0 <{lid}>]: r-xp {l}\n"
    );
    for (args, prefix) in [
        (
            vec!["--store", s, "--build-ids", ids.to_str().unwrap()],
            String::new(),
        ),
        (vec!["--store", s], mmap2.clone()),
    ] {
        let all = format!("{prefix}{input}");
        let out = run("ksym-resolve", &args, all.as_bytes());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let got: Vec<&str> = text.lines().skip(prefix.lines().count()).collect();
        for ((line, (name, off)), inp) in got.iter().zip(&want).zip(input.lines()) {
            let inner = line.rsplit_once(" (").unwrap().0.trim();
            let (_, sym) = inner
                .split_once(' ')
                .unwrap_or_else(|| panic!("{inp} → {line}"));
            let (n, o) = match off {
                Some(_) => {
                    let (n, o) = sym.split_once("+0x").unwrap();
                    (n, Some(u64::from_str_radix(o, 16).unwrap()))
                }
                None => (sym, None),
            };
            assert!(same_or_alias(n, name, &names), "{inp} → {line}, not {name}");
            assert_eq!(o, *off, "{inp} → {line}");
        }
        assert_eq!(got[got.len() - 2..], [other.trim_end(), unknown.trim_end()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("libgone.so: no build-id"), "{err}");
        if prefix.is_empty() {
            assert!(err.contains("libnotstored.so (0123456789abcdef"), "{err}");
            assert!(err.contains("no blob in the store"), "{err}");
        }
    }
}

#[test]
fn a_real_perf_capture_gets_perfs_names_from_the_store_alone() {
    check_capture("perf_store_capture_fp", &["-g"], false);
}

/// perf unwinds with the binaries' DWARF CFI and prints an inlined
/// function's frame as `ADDR (inlined)` before the frame it is inlined in:
/// the store's blob names those too.
#[test]
fn a_dwarf_unwound_capture_gets_perfs_inline_frames_too() {
    check_capture("perf_store_capture_dwarf", &["--call-graph", "dwarf"], true);
}

/// One capture of tests/data/perfwork.c with `call_graph`; `inline`: perf
/// prints the inlined `step` as a nameless frame of its own.
fn check_capture(name: &str, call_graph: &[&str], inline: bool) {
    let dir = scratch(name);
    let (prog, lib) = build_workload(&dir);
    let data = dir.join("perf.data");
    let d = data.to_str().unwrap();
    let mut args = vec!["-q", "-o", d];
    args.extend_from_slice(call_graph);
    args.extend(["--", prog.to_str().unwrap()]);
    if perf_record(&args).is_none() {
        return;
    }
    let ids = tool("perf", &["buildid-list", "-i", d]);
    let ids_file = dir.join("buildids");
    std::fs::write(&ids_file, &ids).unwrap();
    let input = tool("perf", &["script", "-i", d, "-F", "ip,dso"]);
    let reference = tool("perf", &["script", "-i", d, "-F", "ip,sym,dso"]);
    let libc = ids
        .lines()
        .find_map(|l| l.split_once(' ').filter(|(_, p)| p.contains("/libc.so")))
        .map(|(id, p)| (id.to_string(), PathBuf::from(p)))
        .expect("libc in perf buildid-list");
    let store = dir.join("store");
    let s = store.to_str().unwrap();
    let (p, l, c) = (
        prog.to_str().unwrap(),
        lib.to_str().unwrap(),
        libc.1.to_str().unwrap(),
    );
    run_ok(
        "ksym-pack",
        &["--store", s, "--lines", "--elf", p, "--elf", l, "--elf", c],
        b"",
    );
    // Every name of each binary (libc's from its debug file, which CI
    // installs with libc6-dbg), for telling aliases apart.
    let debug = PathBuf::from(format!(
        "/usr/lib/debug/.build-id/{}/{}.debug",
        &libc.0[..2],
        &libc.0[2..]
    ));
    let mut syms: Vec<(u64, String)> = Vec::new();
    let mut stretched = HashMap::new();
    for (elf, path) in [(&prog, p), (&lib, l), (&libc.1, c)] {
        let symbols = if elf == &libc.1 && debug.exists() {
            &debug
        } else {
            elf
        };
        let nm = nm(symbols);
        syms.extend(functions_in(&nm).into_iter().map(|f| (f.0, f.2)));
        stretched.insert(path.to_string(), zero_size_functions(elf, &nm));
    }
    // The kernel, by the build-id perf recorded, when /proc/kallsyms
    // shows addresses (root).
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    let kernel = kallsyms.lines().any(|l| {
        l.split(' ')
            .next()
            .is_some_and(|a| !a.trim_start_matches('0').is_empty())
    });
    if kernel {
        let kid = ids
            .lines()
            .find_map(|l| l.strip_suffix(" [kernel.kallsyms]"))
            .expect("the kernel in perf buildid-list");
        let list = run_ok("ksym-filter", &[], kallsyms.as_bytes());
        run_ok(
            "ksym-pack",
            &["--format", "v2", "--build-id", kid, "--store", s],
            &list,
        );
        syms.extend(kallsyms.lines().filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((
                u64::from_str_radix(f.first()?, 16).ok()?,
                f.get(2)?.to_string(),
            ))
        }));
    }
    let names = addresses(syms.into_iter());
    let gone = dir.join("gone");
    std::fs::create_dir_all(&gone).unwrap();
    std::fs::rename(&prog, gone.join("perfwork")).unwrap();
    std::fs::rename(&lib, gone.join("libperfwork.so")).unwrap();
    let out = run(
        "ksym-resolve",
        &["--store", s, "--build-ids", ids_file.to_str().unwrap()],
        input.as_bytes(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ours = String::from_utf8(out.stdout).unwrap();
    assert_eq!(ours.lines().count(), reference.lines().count());
    let stored = |line: &str| {
        [p, l, c].iter().any(|b| line.ends_with(&format!(" ({b})")))
            || kernel && line.ends_with(" ([kernel.kallsyms])")
    };
    let (mut checked, mut aliases) = (HashMap::<&str, usize>::new(), 0);
    let nameless = |line: &str| {
        line.strip_suffix(" (inlined)")
            .is_some_and(|h| h.trim().chars().all(|c| c.is_ascii_hexdigit()))
    };
    for ((o, r), i) in ours.lines().zip(reference.lines()).zip(input.lines()) {
        if nameless(i) {
            // Named by the frame after it, when that frame's binary is in
            // the store at the same address; perf also marks some real
            // frames so, with no DSO to tell (those stay).
            if o != i {
                let inner = |l: &str| l.trim().split_once(' ').map(|x| x.1.to_string());
                assert_eq!(inner(o), inner(r), "{i} → {o}; perf: {r}");
                *checked.entry("inline").or_default() += 1;
                if o.ends_with(" step (inlined)") {
                    *checked.entry("step").or_default() += 1;
                }
            }
            continue;
        }
        let name = |line: &str| {
            line.rsplit_once(" (")
                .unwrap()
                .0
                .trim()
                .split_once(' ')
                .map(|x| x.1.to_string())
        };
        if !stored(r) {
            // A binary the store lacks (ld.so) is named from its file on
            // this machine, by its build-id: perf's name, but for glibc's
            // internal alias spelling; or it stays as perf printed it.
            if o != i {
                let (on, rn) = (name(o).unwrap_or_default(), name(r).unwrap_or_default());
                let strip = |n: &str| {
                    n.split("+0x")
                        .next()
                        .unwrap()
                        .split('@')
                        .next()
                        .unwrap()
                        .to_string()
                };
                let (on, rn) = (strip(&on), strip(&rn));
                // Another alias at the same address, by nm of its debug file.
                let path = r.rsplit_once(" (").unwrap().1.trim_end_matches(')');
                let elf = Path::new(path);
                let funcs = common::nm_all(&debug_file(elf).unwrap_or_else(|| elf.to_path_buf()));
                let at = |n: &str| funcs.iter().find(|f| f.2 == n).map(|f| f.0);
                assert!(
                    on == rn || at(&on).is_some() && at(&on) == at(&rn),
                    "{i} → {o}; perf: {r}"
                );
                *checked.entry("from a file the store lacks").or_default() += 1;
            }
            continue;
        }
        let (on, rn) = (name(o), name(r));
        let (Some(on), Some(rn)) = (on, rn) else {
            panic!("{i} → {o}; perf: {r}")
        };
        // perf keeps symbol versions (`cfree@GLIBC_2.2.5`); ksym drops
        // them. Both name PLT stubs `malloc@plt`.
        let rn = match rn.strip_suffix("@plt") {
            Some(_) => rn,
            None => rn.split('@').next().unwrap().to_string(),
        };
        if rn == "[unknown]" {
            continue;
        }
        // A PLT stub perf could not name (libc's `@plt` for its stub of
        // ld.so's `__tunable_get_val`): ksym's stub names are checked
        // against objdump's in tests/user_space.rs.
        if rn == "@plt" && on.ends_with("@plt") {
            *checked.entry("a PLT stub perf left nameless").or_default() += 1;
            continue;
        }
        // perf's name stretched past its symbol's section (the PLT header
        // after `.init`, reached in lazy binding; lld's `.plt` after
        // `_fini`): ksym's `[unknown]` or stub name is the truth there,
        // checked by the offset being outside that section.
        let path = r.rsplit_once(" (").unwrap().1.trim_end_matches(')');
        let offset = u64::from_str_radix(i.split_whitespace().next().unwrap(), 16).unwrap();
        let beyond = stretched
            .get(path)
            .and_then(|m| m.get(&rn))
            .is_some_and(|&(start, end)| offset < start || offset >= end);
        if beyond && (on == "[unknown]" || on.ends_with("@plt")) {
            *checked.entry("beyond a size-0 symbol").or_default() += 1;
            continue;
        }
        assert!(same_or_alias(&on, &rn, &names), "{i} → {o}; perf: {r}");
        aliases += usize::from(on != rn);
        *checked
            .entry(if r.contains("[kernel") {
                "kernel"
            } else {
                "user"
            })
            .or_default() += 1;
        for f in ["own_work", "lib_inner", "both", "main"] {
            if on == f {
                *checked.entry(f).or_default() += 1;
            }
        }
    }
    eprintln!("frames checked: {checked:?}, {aliases} of them an alias of perf's name");
    let step = ["step"].into_iter().filter(|_| inline);
    for f in ["own_work", "lib_inner", "both", "main"]
        .into_iter()
        .chain(step)
    {
        assert!(
            checked.get(f).is_some_and(|&n| n > 0),
            "no {f} frame: {checked:?}"
        );
    }
    if kernel {
        assert!(checked.get("kernel").is_some_and(|&n| n > 0), "{checked:?}");
    }
}

/// Sanitizer reports (`#N 0xPC  (PATH+0xOFF)`) and glibc's
/// `backtrace_symbols` (`PATH(+0xOFF)[0xPC]`) get their functions' names
/// from the store, as each reporter prints a named frame, with the
/// binaries moved away.
#[test]
fn sanitizer_and_glibc_backtraces_are_named_from_the_store() {
    let dir = scratch("perf_store_crash");
    let src = data("crash.c");
    let asan = dir.join("crash-asan");
    let plain = dir.join("crash-plain");
    let common = ["-O1", "-g", "-fno-omit-frame-pointer", "-o"];
    let mut args = common.to_vec();
    args.extend([
        asan.to_str().unwrap(),
        "-fsanitize=address",
        src.to_str().unwrap(),
    ]);
    tool("cc", &args);
    let mut args = common.to_vec();
    args.extend([plain.to_str().unwrap(), src.to_str().unwrap()]);
    tool("cc", &args);
    let report = Command::new(&asan)
        .env("ASAN_OPTIONS", "symbolize=0")
        .output()
        .unwrap();
    let report = String::from_utf8(report.stderr).unwrap();
    let trace = Command::new(&plain).output().unwrap();
    let trace = String::from_utf8(trace.stderr).unwrap();
    let store = dir.join("store");
    let s = store.to_str().unwrap();
    let (a, p) = (asan.to_str().unwrap(), plain.to_str().unwrap());
    run_ok("ksym-pack", &["--store", s, "--elf", a, "--elf", p], b"");
    let mut funcs: Vec<(u64, u64, String)> = [&asan, &plain]
        .iter()
        .flat_map(|e| {
            let path = e.to_str().unwrap().to_string();
            functions(e)
                .into_iter()
                .map(move |(x, n, f)| (x, n, format!("{path}\t{f}")))
        })
        .collect();
    // The other binaries the reports name (libasan, libc) are not in the
    // store: named from their files here, by nm of each (its debug file's
    // when installed).
    let mut others: Vec<&str> = report
        .lines()
        .filter_map(|l| l.split_once("  (")?.1.rsplit_once("+0x").map(|x| x.0))
        .chain(
            trace
                .lines()
                .filter_map(|l| l.split_once("(+0x").map(|x| x.0)),
        )
        .filter(|p| *p != asan.to_str().unwrap() && *p != plain.to_str().unwrap())
        .collect();
    others.sort_unstable();
    others.dedup();
    for path in others {
        let symbols = debug_file(Path::new(path)).unwrap_or_else(|| PathBuf::from(path));
        funcs.extend(
            functions(&symbols)
                .into_iter()
                .map(|(x, n, f)| (x, n, format!("{path}\t{f}"))),
        );
    }
    let ids = dir.join("buildids");
    std::fs::write(
        &ids,
        format!("{} {a}\n{} {p}\n", build_id(&asan), build_id(&plain)),
    )
    .unwrap();
    let gone = dir.join("gone");
    std::fs::create_dir_all(&gone).unwrap();
    std::fs::rename(&asan, gone.join("a")).unwrap();
    std::fs::rename(&plain, gone.join("p")).unwrap();
    // The function of PATH holding link-time address X, by nm -S: each of
    // its names (aliases), and X's offset into it.
    let holder = |path: &str, x: u64| {
        let k = format!("{path}\t");
        let (start, _, _) = funcs
            .iter()
            .find(|(f, n, name)| name.starts_with(&k) && *f <= x && x < f + n)?;
        let names: Vec<String> = funcs
            .iter()
            .filter(|(f, _, name)| f == start && name.starts_with(&k))
            .map(|(_, _, name)| name[k.len()..].to_string())
            .collect();
        Some((names, x - start))
    };
    // What each input line must become: named by the rule of its
    // reporter, or as it was.
    let expect = |i: &str| -> Option<Vec<String>> {
        if let Some(rest) = i.trim().strip_prefix('#') {
            let (_, frame) = rest.split_once("  (")?;
            let (path, off) = frame.strip_suffix(')')?.rsplit_once("+0x")?;
            let (names, _) = holder(path, u64::from_str_radix(off, 16).ok()?)?;
            return Some(
                names
                    .iter()
                    .map(|n| i.replacen("  (", &format!(" in {n} ("), 1))
                    .collect(),
            );
        }
        let (path, r) = i.split_once("(+0x")?;
        let (off, pc) = r.split_once(')')?;
        let (names, delta) = holder(path, u64::from_str_radix(off, 16).ok()?)?;
        Some(
            names
                .iter()
                .map(|n| format!("{path}({n}+{delta:#x}){pc}"))
                .collect(),
        )
    };
    let args = ["--store", s, "--build-ids", ids.to_str().unwrap()];
    for (input, kind) in [(&report, "sanitizer"), (&trace, "glibc")] {
        let out = String::from_utf8(run_ok("ksym-resolve", &args, input.as_bytes())).unwrap();
        assert_eq!(out.lines().count(), input.lines().count());
        let mut named = 0;
        for (o, i) in out.lines().zip(input.lines()) {
            match expect(i) {
                Some(wants) => {
                    assert!(wants.iter().any(|w| w == o), "{o}: not one of {wants:?}");
                    named += 1;
                }
                None => assert_eq!(o, i, "another binary's frame, or not a frame, stays"),
            }
        }
        assert!(named >= 4, "{kind}: {out}");
    }
}

/// `--elf-tree`: every ELF file under a directory, one blob per
/// build-id; a binary and its separate debug file count once, links are
/// not followed, files that are not ELF and ELF files without a build-id
/// are left out (the latter with a note).
#[test]
fn an_elf_tree_packs_one_blob_per_build_id() {
    let dir = scratch("perf_store_tree");
    let tree = dir.join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    let (prog, lib) = build_workload(&tree.join("sub"));
    let debug = tree.join("sub/perfwork.debug");
    tool(
        "objcopy",
        &[
            "--only-keep-debug",
            prog.to_str().unwrap(),
            debug.to_str().unwrap(),
        ],
    );
    std::os::unix::fs::symlink(&lib, tree.join("link.so")).unwrap();
    std::fs::write(tree.join("notes.txt"), "not ELF\n").unwrap();
    let noid = tree.join("noid");
    let src = tree.join("noid.c");
    std::fs::write(&src, "int main(void) { return 0; }\n").unwrap();
    tool(
        "cc",
        &[
            "-Wl,--build-id=none",
            "-o",
            noid.to_str().unwrap(),
            src.to_str().unwrap(),
        ],
    );
    let store = dir.join("store");
    let out = run(
        "ksym-pack",
        &[
            "--store",
            store.to_str().unwrap(),
            "--lines",
            "--elf-tree",
            tree.to_str().unwrap(),
        ],
        b"",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("1 ELF files without a build-id left out"),
        "{err}"
    );
    let mut blobs: Vec<String> = std::fs::read_dir(store.join("buildid"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    blobs.sort();
    let mut want = vec![build_id(&prog), build_id(&lib)];
    want.sort();
    assert_eq!(blobs, want);
    // Without --store there is nowhere to put them.
    let out = run("ksym-pack", &["--elf-tree", tree.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(2));
}
