//! `ksym-resolve --perf-map FILE`: a JIT's code, named from the perf map it
//! wrote (`START SIZE NAME`, perf's jit-interface), at the runtime
//! addresses perf prints for anonymous memory. A real `perf record -g` of
//! tests/data/jit.c, whose map is not where perf looks: every JIT frame
//! perf left `[unknown]` gets the name perf itself gives once the map is
//! in /tmp, and every other line is unchanged, also beside a store in one
//! pass. And the kernel's frames
//! stay as perf printed them under a blob that is not the kernel's.
mod common;

use common::{
    data, debug_file, nm_all, perf_record, run, run_ok, scratch, tool, zero_size_functions,
};
use std::path::Path;

#[test]
fn a_jits_frames_get_the_names_perf_gives_with_its_map() {
    let dir = scratch("perf_map_capture");
    let jit = dir.join("jit");
    tool(
        "cc",
        &[
            "-O2",
            "-o",
            jit.to_str().unwrap(),
            data("jit.c").to_str().unwrap(),
        ],
    );
    let perf_data = dir.join("perf.data");
    let d = perf_data.to_str().unwrap();
    let Some(rec) = perf_record(&[
        "-q",
        "-g",
        "-o",
        d,
        "--",
        jit.to_str().unwrap(),
        dir.to_str().unwrap(),
    ]) else {
        return;
    };
    let map = String::from_utf8(rec.stdout).unwrap().trim().to_string();
    let file_name = map.rsplit('/').next().unwrap().to_string();
    let input = tool("perf", &["script", "-i", d]);
    let dso = format!(" (/tmp/{file_name})");
    let jit_frames = input.lines().filter(|l| l.ends_with(&dso)).count();
    assert!(jit_frames >= 50, "{jit_frames} JIT frames:\n{input}");
    assert!(
        input
            .lines()
            .filter(|l| l.ends_with(&dso))
            .all(|l| l.contains(" [unknown] (")),
        "perf found the map by itself"
    );

    let out = run_ok("ksym-resolve", &["--perf-map", &map], input.as_bytes());
    let out = String::from_utf8(out).unwrap();
    // perf's own names: the same capture with the map where perf reads it.
    let in_tmp = std::path::Path::new("/tmp").join(&file_name);
    assert!(
        !in_tmp.exists(),
        "{}: left by another run",
        in_tmp.display()
    );
    std::fs::copy(&map, &in_tmp).unwrap();
    let reference = tool("perf", &["script", "-i", d]);
    std::fs::remove_file(&in_tmp).unwrap();

    assert_eq!(out.lines().count(), input.lines().count());
    let mut named = 0;
    for ((got, was), want) in out.lines().zip(input.lines()).zip(reference.lines()) {
        if was.ends_with(&dso) {
            assert_eq!(got, want, "a JIT frame: perf with its map says otherwise");
            assert!(!got.contains("[unknown]"), "{got}");
            named += 1;
        } else {
            assert_eq!(got, was, "not a JIT frame: unchanged");
        }
    }
    assert_eq!(named, jit_frames);
    for name in ["jit_spin+0x", "Script:~spin b.js:3:7+0x"] {
        assert!(out.contains(name), "no sample in {name}");
    }

    // Whole stacks: with a store (here of the program alone: the kernel's
    // frames pass as perf printed them, libc's and ld.so's are named from
    // their files on this machine), the map names the JIT's frames in the
    // same pass; the whole output is perf's own, but for the aliases ksym
    // prefers (`__open64_nocancel` for perf's `__GI___open64_nocancel`).
    let store = dir.join("store");
    run_ok(
        "ksym-pack",
        &[
            "--store",
            store.to_str().unwrap(),
            "--elf",
            jit.to_str().unwrap(),
        ],
        b"",
    );
    let s = store.to_str().unwrap();
    let out = run_ok(
        "ksym-resolve",
        &["--store", s, "--perf-map", &map],
        input.as_bytes(),
    );
    same_but_aliases(&out, &reference, "--store and --perf-map");
    // Without the map, a note says what is missing; the JIT's frames stay.
    let out = run("ksym-resolve", &["--store", s], input.as_bytes());
    same_but_aliases(&out.stdout, &input, "--store without the map");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("a JIT's code: its frames pass unchanged (give the map with --perf-map)"),
        "{err}"
    );
}

/// `got` is `want` line for line, but for aliases: where a frame's name
/// differs, both names are functions at one address of the frame's binary
/// (by `nm` of its debug file when installed), as ksym's alias rule picks
/// another than perf (`brk` for perf's `__brk`, `__open64_nocancel` for
/// `__GI___open64_nocancel`).
fn same_but_aliases(got: &[u8], want: &str, what: &str) {
    let got = String::from_utf8_lossy(got);
    assert_eq!(got.lines().count(), want.lines().count(), "{what}");
    // `\tADDR NAME+0xOFF (PATH)`: (ADDR, NAME, OFF, PATH).
    let frame = |l: &str| {
        let (rest, path) = l.trim().strip_suffix(')')?.rsplit_once(" (")?;
        let (addr, sym) = rest.split_once(' ')?;
        let (name, off) = sym.rsplit_once("+0x")?;
        Some((
            addr.to_string(),
            name.to_string(),
            off.to_string(),
            path.to_string(),
        ))
    };
    for (g, w) in got.lines().zip(want.lines()) {
        if g == w {
            continue;
        }
        let (Some(gf), Some(wf)) = (frame(g), frame(w)) else {
            panic!("{what}: {g} is not perf's {w}");
        };
        // A PLT stub perf could not name (libc's `@plt` for its stub of
        // ld.so's `__tunable_get_val`, as tests/perf_store.rs meets it):
        // ksym's name is objdump's label for the stub.
        if wf.1 == "@plt"
            && gf.1.ends_with("@plt")
            && (&gf.0, &gf.2, &gf.3) == (&wf.0, &wf.2, &wf.3)
        {
            let hex = |s: &str| u64::from_str_radix(s, 16).expect("hex");
            let start = hex(&gf.0) - hex(&gf.2);
            let dis = tool(
                "objdump",
                &[
                    "-d",
                    &format!("--start-address={start:#x}"),
                    &format!("--stop-address={:#x}", start + 1),
                    &gf.3,
                ],
            );
            assert!(
                dis.contains(&format!("{start:016x} <{}>:", gf.1)),
                "{what}: {g}: not objdump's name for the stub perf left nameless:\n{dis}"
            );
            continue;
        }
        // perf's name stretched past its section (`_init` over the PLT,
        // reached in lazy binding): ksym names the stub there as objdump
        // does, checked in tests/user_space.rs.
        let nm = tool("nm", &["-S", "--defined-only", &gf.3]);
        let offset = u64::from_str_radix(&gf.0, 16).ok();
        let beyond = zero_size_functions(Path::new(&gf.3), &nm)
            .get(&wf.1)
            .zip(offset)
            .is_some_and(|(&(start, end), o)| o < start || o >= end);
        if beyond && gf.1.ends_with("@plt") && (&gf.0, &gf.3) == (&wf.0, &wf.3) {
            continue;
        }
        assert!(
            gf.0 == wf.0 && gf.2 == wf.2 && gf.3 == wf.3,
            "{what}: {g} is not perf's {w}"
        );
        let elf = Path::new(&gf.3);
        let symbols = debug_file(elf).unwrap_or_else(|| elf.to_path_buf());
        let funcs = nm_all(&symbols);
        let at = |n: &str| {
            let n = n.split('@').next().unwrap();
            funcs.iter().find(|f| f.2 == n).map(|f| f.0)
        };
        assert!(
            at(&gf.1).is_some() && at(&gf.1) == at(&wf.1),
            "{what}: {g}: {} is no alias of perf's {}",
            gf.1,
            wf.1
        );
    }
}

/// Frames of the kernel and of its modules are the kernel blob's to name;
/// under a program's blob or a perf map they stay byte for byte (they
/// became `[unknown]` under a program's blob before).
#[test]
fn kernel_frames_stay_under_a_programs_blob_or_a_perf_map() {
    let dir = scratch("perf_map_kernel_frames");
    let map = dir.join("perf-77.map");
    std::fs::write(&map, "7f0000001000 40 jit_a\n").unwrap();
    let prog = dir.join("prog");
    tool(
        "cc",
        &[
            "-O2",
            "-o",
            prog.to_str().unwrap(),
            data("funcs.c").to_str().unwrap(),
        ],
    );
    let blob = dir.join("prog.ksym");
    run_ok(
        "ksym-pack",
        &[
            "--elf",
            prog.to_str().unwrap(),
            "-o",
            blob.to_str().unwrap(),
        ],
        b"",
    );
    let kernel = "\t    ffffffff81000010 do_syscall_64+0x10 ([kernel.kallsyms])\n\
                  \t    ffffffffc0a01234 nft_do_chain+0x34 ([nf_tables])\n\
                  sh 77 [000] 1.0: 1 cycles: ffffffff81000010 do_syscall_64+0x10 ([kernel.kallsyms])\n";
    let jit = "\t    7f0000001008 [unknown] (/tmp/perf-77.map)\n";
    let input = format!("{kernel}{jit}");
    let out = run_ok(
        "ksym-resolve",
        &["--perf-map", map.to_str().unwrap()],
        input.as_bytes(),
    );
    assert_eq!(
        String::from_utf8(out).unwrap(),
        format!("{kernel}\t    7f0000001008 jit_a+0x8 (/tmp/perf-77.map)\n")
    );
    let out = run_ok("ksym-resolve", &[blob.to_str().unwrap()], input.as_bytes());
    assert_eq!(String::from_utf8(out).unwrap(), input);
}

/// A JIT reuses freed code memory: entries that overlap name nothing
/// (the map cannot say which was there when perf sampled), with a note.
#[test]
fn overlapping_entries_are_left_unnamed_with_a_note() {
    let dir = scratch("perf_map_overlap");
    let map = dir.join("perf-9.map");
    std::fs::write(&map, "1000 100 old\n1080 100 new\n2000 10 kept\n").unwrap();
    let input = "\t    10a0 [unknown] (/tmp/perf-9.map)\n\t    2004 [unknown] (/tmp/perf-9.map)\n";
    let out = run(
        "ksym-resolve",
        &["--perf-map", map.to_str().unwrap()],
        input.as_bytes(),
    );
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "\t    10a0 [unknown] (/tmp/perf-9.map)\n\t    2004 kept+0x4 (/tmp/perf-9.map)\n"
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("2 entries overlap another"), "{err}");
    // A line that is not an entry: the file and line are named, exit 1.
    std::fs::write(&map, "1000 100 ok\nnot a map line\n").unwrap();
    let out = run("ksym-resolve", &["--perf-map", map.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("perf-9.map") && err.contains("line 2: expected"),
        "{err}"
    );
    // The map takes the place of a blob, once (a store takes several).
    let m = map.to_str().unwrap();
    for args in [
        &["--perf-map", m, "--perf-map", m][..],
        &[m, "--perf-map", m],
    ] {
        let out = run("ksym-resolve", args, b"");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}
