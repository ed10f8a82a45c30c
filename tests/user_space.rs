//! `ksym-pack --elf`: a user-space binary's functions straight from its
//! ELF symbol table, with sizes (docs/FORMAT.md §10.7), checked against
//! binutils' `nm -S` at every function's first and last byte and in the
//! padding after it; a stripped binary's symbols and lines from its
//! separate debug file (by `.gnu_debuglink`, or by build-id under
//! `--debug-dir`), and `.dynsym` alone when there is none, where a static
//! function's addresses name nothing rather than an exported neighbour.
//! And Debian's libc through `libc6-dbg`, when installed (CI installs it).
mod common;

use common::{bin, data, debug_file, nm_all, nm_functions, run, run_ok, scratch, tool};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// `ksym-resolve BLOB` on bare addresses: the name printed for each, or
/// `None` where it printed none (the address is left as it was).
fn names(blob: &Path, addrs: &[u64]) -> Vec<Option<String>> {
    let input: String = addrs.iter().map(|a| format!("{a:#x}\n")).collect();
    let out = run_ok("ksym-resolve", &[blob.to_str().unwrap()], input.as_bytes());
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| {
            let w = l.split(' ').nth(2)?;
            Some(w.split_once("+0x")?.0.to_string())
        })
        .collect()
}

/// Every function of `reference` (nm -S), at its first and last byte,
/// names it or an alias at its address; the byte after it, where no
/// other function starts, names nothing. Returns how many gaps were seen.
fn check_against_nm(blob: &Path, reference: &Path) -> usize {
    let funcs = nm_functions(reference);
    assert!(funcs.len() >= 4, "{funcs:?}");
    let mut at: HashMap<u64, Vec<&str>> = HashMap::new();
    for (a, _, n) in &funcs {
        at.entry(*a).or_default().push(n);
    }
    let starts: Vec<u64> = nm_all(reference).iter().map(|f| f.0).collect();
    let covered =
        |x: u64| starts.contains(&x) || funcs.iter().any(|(a, s, _)| *a <= x && x < a + s);
    let mut probes = Vec::new();
    for (a, s, _) in &funcs {
        probes.extend([*a, a + s - 1]);
        if !covered(a + s) {
            probes.push(a + s);
        }
    }
    let got = names(blob, &probes);
    let mut gaps = 0;
    for (x, name) in probes.iter().zip(&got) {
        match funcs.iter().find(|(a, s, _)| *a <= *x && *x < a + s) {
            Some((a, _, _)) => {
                let name = name.as_deref().unwrap_or_else(|| panic!("{x:#x}: no name"));
                assert!(
                    at[a].contains(&name),
                    "{x:#x}: {name} is not one of {:?}",
                    at[a]
                );
            }
            None => {
                gaps += 1;
                assert_eq!(name, &None, "{x:#x} is padding, not a function");
            }
        }
    }
    gaps
}

fn build(dir: &Path, out: &str, extra: &[&str]) -> PathBuf {
    let elf = dir.join(out);
    let mut args = vec!["-O2", "-g", "-o", elf.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.push(data("funcs.c").to_str().unwrap().to_string().leak());
    tool("cc", &args);
    elf
}

fn pack(dir: &Path, elf: &Path, extra: &[&str]) -> PathBuf {
    let blob = dir.join(format!(
        "{}.ksym",
        elf.file_name().unwrap().to_str().unwrap()
    ));
    let mut args = vec!["--elf", elf.to_str().unwrap(), "-o", blob.to_str().unwrap()];
    args.extend_from_slice(extra);
    run_ok("ksym-pack", &args, b"");
    blob
}

#[test]
fn functions_end_at_their_size_and_the_public_alias_is_printed() {
    let dir = scratch("user-funcs");
    for (out, flags) in [
        ("prog", &["-fPIE", "-pie"][..]),
        ("libf.so", &["-fPIC", "-shared"][..]),
    ] {
        let elf = build(&dir, out, flags);
        let blob = pack(&dir, &elf, &[]);
        let gaps = check_against_nm(&blob, &elf);
        assert!(
            gaps >= 3,
            "{out}: the 64-byte alignment leaves padding: {gaps} gaps"
        );
        // public_fn, not glibc's hidden spelling; the weak function too.
        let funcs = nm_functions(&elf);
        let addr = |n: &str| funcs.iter().find(|f| f.2 == n).unwrap().0;
        let got = names(
            &blob,
            &[addr("public_fn") + 1, addr("weak_fn"), addr("helper")],
        );
        assert_eq!(
            got,
            [
                Some("public_fn".into()),
                Some("weak_fn".into()),
                Some("helper".into())
            ],
            "{out}"
        );
        let check = run_ok("ksym-pack", &["--check", blob.to_str().unwrap()], b"");
        let check = String::from_utf8_lossy(&check);
        assert!(check.contains(" sizes "), "{out}");
        // `segments` holds the executable PT_LOADs alone (FORMAT.md §10.8):
        // 8 bytes, then 24 per segment (form 1: code loaded as stored, `R E`);
        // the binary has read-only and data segments beside them.
        let heads = tool("readelf", &["-lW", elf.to_str().unwrap()]);
        let loads: Vec<&str> = heads
            .lines()
            .filter(|l| l.trim_start().starts_with("LOAD"))
            .collect();
        let exec = loads.iter().filter(|l| l.contains(" R E ")).count();
        assert!(exec >= 1 && loads.len() > exec, "{out}: {loads:?}");
        assert!(
            check.contains(&format!(" segments {}", 8 + 24 * exec)),
            "{out}: {exec} executable of {} PT_LOADs, blob: {check}",
            loads.len()
        );
    }
}

/// A job that reads DWARF starts itself again with glibc's heap tunables
/// (`src/heap.rs`) unless `GLIBC_TUNABLES` is set, an empty value
/// included; the blob is the same either way. A symbol list alone runs as
/// it is.
#[test]
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn a_dwarf_job_gets_huge_pages_for_its_heap_unless_the_user_set_tunables() {
    let dir = scratch("heap-tunables");
    let elf = build(&dir, "funcs", &[]);
    let heap_line = "ksym-pack: heap: GLIBC_TUNABLES=glibc.malloc.hugetlb=1:";
    let pack = |tunables: Option<&str>, args: &[&str], stdin: &[u8]| {
        let mut c = std::process::Command::new(bin("ksym-pack"));
        c.arg("-v").args(args).env_remove("GLIBC_TUNABLES");
        if let Some(t) = tunables {
            c.env("GLIBC_TUNABLES", t);
        }
        let mut child = c
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(stdin).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stderr).unwrap()
    };
    let (a, b) = (dir.join("a.ksym"), dir.join("b.ksym"));
    let (elf, a_out, b_out) = (
        elf.to_str().unwrap(),
        a.to_str().unwrap(),
        b.to_str().unwrap(),
    );
    let err = pack(None, &["--elf", elf, "--lines", "-o", a_out], b"");
    assert!(err.starts_with(heap_line), "{err}");
    let err = pack(Some(""), &["--elf", elf, "--lines", "-o", b_out], b"");
    assert!(!err.contains("heap:"), "{err}");
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    let list = dir.join("list.ksym");
    let err = pack(
        None,
        &["-o", list.to_str().unwrap()],
        b"0000000000001000 T foo\n",
    );
    assert!(!err.contains("heap:"), "{err}");
}

/// `-v` into a stderr whose reader is gone (`2>&1 | head -1`) neither
/// panics (exit 101, as `eprintln!` did) nor stops the job: the blob is
/// written and the exit status is 0, from a symbol list and from an ELF
/// file (whose job runs in a second process, `src/heap.rs`).
#[test]
fn a_closed_stderr_neither_panics_nor_loses_the_blob() {
    let dir = scratch("closed-stderr");
    let elf = build(&dir, "funcs", &[]);
    let list = dir.join("list.txt");
    std::fs::write(&list, "0000000000001000 T foo\n").unwrap();
    let (a, b) = (dir.join("a.ksym"), dir.join("b.ksym"));
    for args in [
        vec![list.to_str().unwrap(), "-o", a.to_str().unwrap()],
        vec![
            "--elf",
            elf.to_str().unwrap(),
            "--lines",
            "-o",
            b.to_str().unwrap(),
        ],
    ] {
        let mut child = std::process::Command::new(bin("ksym-pack"))
            .arg("-v")
            .args(&args)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stderr.take());
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{args:?}");
    }
    assert!(std::fs::metadata(&a).unwrap().len() > 0);
    run_ok("ksym-pack", &["--check", b.to_str().unwrap()], b"");
}

#[test]
fn a_stripped_binary_reads_its_debug_file_or_else_dynsym() {
    let dir = scratch("user-stripped");
    for (out, flags) in [
        ("prog", &["-fPIE", "-pie", "-Wl,--build-id=none"][..]),
        ("libf.so", &["-fPIC", "-shared", "-Wl,--build-id=none"][..]),
    ] {
        // No build-id: the debuglink is the only way to the debug file.
        let full = build(&dir, out, flags);
        let stripped = dir.join(format!("stripped-{out}"));
        let debug = dir.join(format!("stripped-{out}.debug"));
        let (f, s, d) = (
            full.to_str().unwrap(),
            stripped.to_str().unwrap(),
            debug.to_str().unwrap(),
        );
        tool("objcopy", &["--only-keep-debug", f, d]);
        tool("strip", &["-o", s, f]);
        tool("objcopy", &[&format!("--add-gnu-debuglink={d}"), s]);
        assert!(nm_functions(&stripped).is_empty(), "strip left a .symtab");
        let blob = pack(&dir, &stripped, &["--lines", s]);
        check_against_nm(&blob, &full);
        // Lines come from the debug file too.
        let funcs = nm_functions(&full);
        let addr = |n: &str| funcs.iter().find(|f| f.2 == n).unwrap().0;
        let line = run_ok(
            "ksym-resolve",
            &[blob.to_str().unwrap()],
            format!("{:#x}\n", addr("main")).as_bytes(),
        );
        let line = String::from_utf8_lossy(&line);
        assert!(line.contains("funcs.c:"), "{out}: {line}");

        // A debug file whose CRC does not match is not the binary's: only
        // .dynsym is left.
        std::fs::write(&debug, b"something else").unwrap();
        if out == "prog" {
            // A PIE exports no function: only its PLT stubs have names, and
            // main names nothing rather than a stub's.
            let blob = pack(&dir, &stripped, &[]);
            assert_eq!(names(&blob, &[addr("main")]), [None]);
            // An ELF without any function is an error: nothing to pack.
            let data = dir.join("data.c");
            std::fs::write(&data, "int x = 1;\n").unwrap();
            let obj = dir.join("data.o");
            tool(
                "cc",
                &["-c", "-o", obj.to_str().unwrap(), data.to_str().unwrap()],
            );
            let err = run("ksym-pack", &["--elf", obj.to_str().unwrap(), "-o", d], b"");
            assert_eq!(err.status.code(), Some(1));
            let msg = String::from_utf8_lossy(&err.stderr);
            assert!(msg.contains("no function symbols"), "{msg}");
            continue;
        }
        // The library's exported functions; the static helper is not
        // there, and its addresses name nothing, not a neighbour.
        let blob = pack(&dir, &stripped, &[]);
        let got = names(&blob, &[addr("exported") + 1, addr("helper")]);
        assert_eq!(got, [Some("exported".into()), None], "{out}");
    }
    let err = run("ksym-pack", &["--elf", "/bin/sh", "--format", "v1"], b"");
    assert_eq!(err.status.code(), Some(2));
}

#[test]
fn the_debug_file_is_found_by_build_id_under_a_debug_dir() {
    let dir = scratch("user-build-id");
    let full = build(&dir, "prog", &["-fPIE", "-pie", "-Wl,--build-id=sha1"]);
    let id = tool("readelf", &["-n", full.to_str().unwrap()]);
    let id = id
        .split("Build ID: ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    let debug_root = dir.join("debug");
    let at = debug_root.join(".build-id").join(&id[..2]);
    std::fs::create_dir_all(&at).unwrap();
    let debug = at.join(format!("{}.debug", &id[2..]));
    tool(
        "objcopy",
        &[
            "--only-keep-debug",
            full.to_str().unwrap(),
            debug.to_str().unwrap(),
        ],
    );
    let stripped = dir.join("stripped");
    tool(
        "strip",
        &["-o", stripped.to_str().unwrap(), full.to_str().unwrap()],
    );
    let blob = pack(
        &dir,
        &stripped,
        &["--debug-dir", debug_root.to_str().unwrap()],
    );
    check_against_nm(&blob, &full);
}

/// Debian's libc 2.36 (stripped) and its `libc6-dbg` debug file, found by
/// build-id under /usr/lib/debug: no address names another function than
/// `nm -S` of the debug file, and padding names nothing.
#[test]
fn debians_libc_through_its_dbg_package() {
    let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
    let dir = scratch("user-libc");
    let Some(debug) = debug_file(libc) else {
        eprintln!("SKIPPED: no libc6-dbg (CI installs it)");
        return;
    };
    let blob = pack(&dir, libc, &[]);
    let gaps = check_against_nm(&blob, &debug);
    assert!(gaps > 100, "{gaps}");
}

/// `--elf --lines` leaves discriminators out unless asked
/// (`--discriminators`): fewer rows, and every address of every libc
/// function prints the same frames from either blob.
#[test]
fn user_space_lines_leave_discriminators_out_and_answer_alike() {
    let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
    let dir = scratch("user-libc-disc");
    let Some(debug) = debug_file(libc) else {
        eprintln!("SKIPPED: no libc6-dbg (CI installs it)");
        return;
    };
    let without = pack(&dir, libc, &["--lines"]);
    let with = dir.join("with.ksym");
    run_ok(
        "ksym-pack",
        &[
            "--elf",
            libc.to_str().unwrap(),
            "--lines",
            "--discriminators",
            "-o",
            with.to_str().unwrap(),
        ],
        b"",
    );
    let rows = |b: &Path| -> u64 {
        let check =
            String::from_utf8(run_ok("ksym-pack", &["--check", b.to_str().unwrap()], b"")).unwrap();
        let at = check.find(" rows").unwrap();
        check[..at].rsplit(' ').next().unwrap().parse().unwrap()
    };
    let (r0, r1) = (rows(&without), rows(&with));
    assert!(r0 < r1, "{r0} rows without discriminators, {r1} with");
    let addrs: String = nm_functions(&debug)
        .iter()
        .flat_map(|&(a, n, _)| [a, a + n / 2, a + n - 1])
        .map(|a| format!("{a:#x}\n"))
        .collect();
    let a = run_ok(
        "ksym-resolve",
        &[without.to_str().unwrap()],
        addrs.as_bytes(),
    );
    let b = run_ok("ksym-resolve", &[with.to_str().unwrap()], addrs.as_bytes());
    assert!(a == b, "frames differ");
    assert!(String::from_utf8_lossy(&a).matches(".c:").count() > 10_000);
    // Kernel packs keep them: the option is for --elf alone.
    let bad = run(
        "ksym-pack",
        &["--discriminators", "--lines", "/bin/true"],
        b"",
    );
    assert_eq!(bad.status.code(), Some(2));
}

/// `ksym-resolve --maps`: a PIE's runtime addresses (it prints them, and
/// its own /proc/self/maps) resolve through its blob's load segments; an
/// address of another binary (libc's `puts`) is left as it was; libc's own
/// blob, its mapping found by build-id, names it.
#[test]
fn runtime_addresses_resolve_through_the_process_maps() {
    let dir = scratch("user-maps");
    let prog = common::cc_pie(&dir, "maps.c", "maps");
    let out = tool(prog.to_str().unwrap(), &[]);
    let mut lines = out.lines();
    let mut addr = HashMap::new();
    for _ in 0..3 {
        let (name, a) = lines.next().unwrap().split_once(' ').unwrap();
        addr.insert(
            name,
            u64::from_str_radix(a.trim_start_matches("0x"), 16).unwrap(),
        );
    }
    let maps = dir.join("maps.txt");
    std::fs::write(&maps, lines.collect::<Vec<_>>().join("\n")).unwrap();
    let blob = pack(&dir, &prog, &[]);
    let resolve = |blob: &Path, extra: &[&str], addrs: &[u64]| {
        let mut args = vec!["--maps", maps.to_str().unwrap()];
        args.extend_from_slice(extra);
        args.push(blob.to_str().unwrap());
        let input: String = addrs.iter().map(|a| format!("{a:#x}\n")).collect();
        String::from_utf8(run_ok("ksym-resolve", &args, input.as_bytes())).unwrap()
    };
    let got = resolve(
        &blob,
        &[],
        &[addr["exported"] + 1, addr["helper"], addr["puts"]],
    );
    let got: Vec<&str> = got.lines().collect();
    assert!(got[0].contains(" exported+0x1/"), "{got:?}");
    assert!(got[1].contains(" helper+0x0/"), "{got:?}");
    assert_eq!(
        got[2],
        format!("{:016x} ? [unknown]", addr["puts"]),
        "libc's address, not the PIE's"
    );
    // Runtime addresses without --maps: the warning points to --maps, not
    // to a kernel's KASLR.
    let input: String = (0..16)
        .map(|k| format!("{:#x}\n", addr["helper"] + k))
        .collect();
    let out = run("ksym-resolve", &[blob.to_str().unwrap()], input.as_bytes());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--maps FILE") && !err.contains("KASLR"),
        "{err}"
    );
    // perf -F ip,sym frames: the binary's own (perf had no symbols for it)
    // is named; another binary's keeps perf's name.
    let mut args = vec!["--maps", maps.to_str().unwrap(), blob.to_str().unwrap()];
    // (The byte after `exported` is padding: perf's text there stays.)
    let size = nm_functions(&prog)
        .iter()
        .find(|f| f.2 == "exported")
        .unwrap()
        .1;
    let frames = format!(
        "\t    {:x} [unknown]\n\t    {:x} _IO_puts\n\t    {:x} perf_said\n",
        addr["exported"] + 1,
        addr["puts"],
        addr["exported"] + size
    );
    let out = String::from_utf8(run_ok("ksym-resolve", &args, frames.as_bytes())).unwrap();
    assert_eq!(
        out,
        format!(
            "\t    {:x} exported+0x1\n\t    {:x} _IO_puts\n\t    {:x} perf_said\n",
            addr["exported"] + 1,
            addr["puts"],
            addr["exported"] + size
        )
    );
    // perf's callchain frames with their DSO: the binary's are named, the
    // text stays where the blob has no answer (perf's `[unknown]` in the
    // padding after `exported`), another DSO's stays.
    let path = std::fs::canonicalize(&prog).unwrap();
    let chain = format!(
        "\t    {:x} [unknown] ({p})\n\t    {:x} [unknown] ({p})\n\t    {:x} _IO_puts+0x0 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n",
        addr["exported"] + 1,
        addr["exported"] + size,
        addr["puts"],
        p = path.display()
    );
    let out = String::from_utf8(run_ok("ksym-resolve", &args, chain.as_bytes())).unwrap();
    let want = chain.replacen("[unknown]", "exported+0x1", 1);
    assert_eq!(out, want);
    // Without --maps, a program's blob cannot tell whose frame it is:
    // every one stays as perf printed it.
    args.drain(..2);
    let out = run_ok("ksym-resolve", &args, frames.as_bytes());
    assert_eq!(out, frames.as_bytes());
    // The same by file name.
    let by_name = resolve(&blob, &["--dso", "maps"], &[addr["exported"]]);
    assert!(by_name.contains(" exported+0x0/"), "{by_name}");
    // libc's blob, when its debug file is installed (for sizes and names).
    let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
    if nm_functions(libc).is_empty() && !debugfile_installed(libc) {
        eprintln!("SKIPPED the libc half: no libc6-dbg");
        return;
    }
    let libc_blob = pack(&dir, libc, &[]);
    let got = resolve(&libc_blob, &[], &[addr["puts"], addr["exported"]]);
    let got: Vec<&str> = got.lines().collect();
    // `puts` is a weak alias of `_IO_puts`: perf and llvm-symbolizer print
    // the global one.
    assert!(got[0].contains(" _IO_puts+0x0/"), "{got:?}");
    assert_eq!(
        got[1],
        format!("{:016x} ? [unknown]", addr["exported"]),
        "the PIE's address, not libc's"
    );
    // A maps file without the blob's binary is an error that says so.
    std::fs::write(
        &maps,
        "7ffd1a3f2000-7ffd1a3f4000 r-xp 00000000 00:00 0 [vdso]\n",
    )
    .unwrap();
    let err = run(
        "ksym-resolve",
        &["--maps", maps.to_str().unwrap(), blob.to_str().unwrap()],
        b"",
    );
    assert_eq!(err.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&err.stderr).contains("no mapping"),
        "{err:?}"
    );
}

fn debugfile_installed(elf: &Path) -> bool {
    common::debug_file(elf).is_some()
}

/// `-gsplit-dwarf`: the skeleton units' line tables are in the binary,
/// their DIEs (so inline chains) in a `.dwo` file (DWARF 5, and GCC's
/// DWARF 4 extension) or, packed by binutils' `dwp`, in `PROG.dwp`: each
/// found, every address prints what the same program built without split
/// DWARF prints, inline chains included; with neither, ksym-pack packs the
/// lines and says which file it lacked.
#[test]
fn split_dwarf_is_read_from_dwo_files_and_dwp_packages() {
    let dir = scratch("user-split");
    let build = |out: &str, extra: &[&str]| {
        let elf = dir.join(out);
        let mut args = vec!["-O2", "-g", "-fPIE", "-pie", "-o", elf.to_str().unwrap()];
        args.extend_from_slice(extra);
        let src = data("inlines.c");
        args.push(src.to_str().unwrap());
        // GCC writes the .dwo beside the output: OUT-inlines.dwo.
        tool("cc", &args);
        elf
    };
    let plain = build("plain", &[]);
    let funcs = nm_functions(&plain);
    let work = funcs.iter().find(|f| f.2 == "work").unwrap();
    let addrs: String = (work.0..work.0 + work.1)
        .map(|a| format!("{a:#x}\n"))
        .collect();
    let resolve = |elf: &Path| {
        let blob = dir.join(format!(
            "{}.ksym",
            elf.file_name().unwrap().to_str().unwrap()
        ));
        let (e, b) = (elf.to_str().unwrap(), blob.to_str().unwrap());
        let out = run("ksym-pack", &["--elf", e, "--lines", "-o", b], b"");
        assert!(out.status.success(), "{out:?}");
        let text = run_ok("ksym-resolve", &[b], addrs.as_bytes());
        (
            String::from_utf8(text).unwrap(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (want, err) = resolve(&plain);
    assert!(err.is_empty(), "{err}");
    let chains = want
        .lines()
        .filter(|l| l.contains(" > twice ") && l.contains(" > step "))
        .count();
    assert!(chains > 20, "{want}");
    for (name, flags) in [
        ("split5", &["-gsplit-dwarf"][..]),
        ("split4", &["-gsplit-dwarf", "-gdwarf-4"][..]),
    ] {
        let elf = build(name, flags);
        let dwo = dir.join(format!("{name}-inlines.dwo"));
        assert!(dwo.exists(), "{}", dwo.display());
        let (got, err) = resolve(&elf);
        assert!(err.is_empty(), "{name}: {err}");
        assert_eq!(got, want, "{name}: .dwo");
        // Without its .dwo: the lines, no chains, and a warning naming it.
        let away = dir.join(format!("{name}.away"));
        std::fs::rename(&dwo, &away).unwrap();
        let (got, err) = resolve(&elf);
        assert!(
            err.contains("warning:") && err.contains(dwo.to_str().unwrap()),
            "{err}"
        );
        assert!(
            got.lines().all(|l| !l.contains(" > ")) && got.contains("inlines.c:"),
            "{got}"
        );
        std::fs::rename(&away, &dwo).unwrap();
        // binutils' dwp packs DWARF 4 units (it fails on DWARF 5's).
        if name == "split4" {
            let dwp = dir.join("split4.dwp");
            tool(
                "dwp",
                &["-e", elf.to_str().unwrap(), "-o", dwp.to_str().unwrap()],
            );
            std::fs::rename(&dwo, &away).unwrap();
            let (got, err) = resolve(&elf);
            assert!(err.is_empty(), "dwp: {err}");
            assert_eq!(got, want, ".dwp");
        }
    }
}

/// C++ names come out as c++filt prints them (`nm -C`), parameters and
/// template arguments included, where perf prints the same.
#[cfg(feature = "cpp-demangle")]
#[test]
fn cpp_names_are_demangled_as_cxxfilt_does() {
    let dir = scratch("user_space_cpp");
    let elf = dir.join("funcs-cc");
    let src = data("funcs.cc");
    tool(
        "g++",
        &[
            "-O1",
            "-g",
            "-o",
            elf.to_str().unwrap(),
            src.to_str().unwrap(),
        ],
    );
    let blob = pack(&dir, &elf, &[]);
    let demangled = tool("nm", &["-S", "-C", "--defined-only", elf.to_str().unwrap()]);
    let mut at: HashMap<u64, Vec<String>> = HashMap::new();
    for l in demangled.lines() {
        let f: Vec<&str> = l.splitn(4, ' ').collect();
        if let [a, s, t, n] = f[..]
            && "TtWw".contains(t)
            && s != "0000000000000000"
        {
            at.entry(u64::from_str_radix(a, 16).unwrap())
                .or_default()
                .push(n.to_string());
        }
    }
    let input: String = at.keys().map(|a| format!("{a:#x}\n")).collect();
    let out = String::from_utf8(run_ok(
        "ksym-resolve",
        &[blob.to_str().unwrap()],
        input.as_bytes(),
    ))
    .unwrap();
    let mut seen = Vec::new();
    for (line, a) in out.lines().zip(at.keys()) {
        // `ADDR TYPE NAME+0x0/0xSIZE`, NAME with spaces.
        let name = line
            .splitn(3, ' ')
            .nth(2)
            .and_then(|r| r.rsplit_once("+0x"))
            .unwrap()
            .0;
        assert!(
            at[a].iter().any(|n| n == name),
            "{a:#x}: {name} is not one of {:?}",
            at[a]
        );
        seen.push(name.to_string());
    }
    for want in [
        "shapes::Box<int>::twice() const",
        "shapes::area(int, int)",
        "shapes::area(double)",
        "(anonymous namespace)::hidden(char const*, unsigned long)",
    ] {
        assert!(seen.iter().any(|n| n == want), "no {want} in {seen:?}");
    }
}

/// x86-64 PLT stubs are named `NAME@plt`, each as objdump names it, at
/// every byte of the stub.
#[cfg(target_arch = "x86_64")]
#[test]
fn plt_stubs_are_named_as_objdump_names_them() {
    let dir = scratch("user_space_plt");
    let mut found = 0;
    for (out, extra) in [
        ("plt-pie", &[][..]),
        ("plt-ibt", &["-fcf-protection=full", "-Wl,-z,ibtplt"][..]),
    ] {
        let elf = build(&dir, out, extra);
        let blob = pack(&dir, &elf, &[]);
        let stubs: Vec<(u64, String)> = tool("objdump", &["-d", elf.to_str().unwrap()])
            .lines()
            .filter_map(|l| {
                let (a, rest) = l.split_once(" <")?;
                let name = rest.strip_suffix(">:")?.strip_suffix("@plt")?;
                Some((u64::from_str_radix(a, 16).ok()?, format!("{name}@plt")))
            })
            .collect();
        assert!(stubs.len() >= 2, "{out}: {stubs:?}");
        let probes: Vec<u64> = stubs.iter().flat_map(|(a, _)| [*a, a + 7]).collect();
        let got = names(&blob, &probes);
        for (k, (a, want)) in stubs.iter().enumerate() {
            for g in &got[2 * k..2 * k + 2] {
                assert_eq!(g.as_deref(), Some(want.as_str()), "{out} {a:#x}");
            }
        }
        found += stubs.len();
    }
    assert!(found >= 4);
}

/// Symbol names are read whole from the string table, however long: a
/// 5,000-byte name (past the 4 KiB `object`'s read cache reads a string
/// in) is packed and printed; one of 70,000 bytes, more than a name record
/// holds (FORMAT.md §3.2), names nothing rather than failing the pack or
/// lending its addresses to a neighbour.
#[test]
fn long_symbol_names_are_read_whole_or_name_nothing() {
    let dir = scratch("long_symbol_names");
    let (long, huge) = ("b".repeat(5_000), "a".repeat(70_000));
    let src = dir.join("long.c");
    std::fs::write(
        &src,
        format!(
            "void huge(void) __asm__(\"{huge}\");\nvoid huge(void) {{ __asm__ volatile(\"nop; nop; nop; nop\"); }}\n\
             void longer(void) __asm__(\"{long}\");\nvoid longer(void) {{ __asm__ volatile(\"nop; nop\"); }}\n\
             int main(void) {{ huge(); longer(); return 0; }}\n"
        ),
    )
    .unwrap();
    let elf = dir.join("long");
    tool(
        "cc",
        &[
            "-O1",
            "-g",
            "-o",
            elf.to_str().unwrap(),
            src.to_str().unwrap(),
        ],
    );
    let addr = |name: &str| {
        nm_functions(&elf)
            .into_iter()
            .find(|f| f.2 == name)
            .unwrap_or_else(|| panic!("no {}…", &name[..8]))
            .0
    };
    let blob = pack(&dir, &elf, &["--lines"]);
    let got = names(&blob, &[addr(&long), addr(&huge) + 1, addr("main")]);
    assert_eq!(got[0].as_deref(), Some(&long[..]));
    assert_eq!(got[1], None, "the 70,000-byte name names nothing");
    assert_eq!(got[2].as_deref(), Some("main"));
}
