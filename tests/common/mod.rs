//! Helpers shared by the integration tests: running the real binaries, reading
//! the xz samples and the shared corpus.
#![allow(dead_code)]

pub mod disasm;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Path of a binary built by cargo for the tests.
pub fn bin(name: &str) -> PathBuf {
    match name {
        "ksym-filter" => env!("CARGO_BIN_EXE_ksym-filter").into(),
        "ksym-pack" => env!("CARGO_BIN_EXE_ksym-pack").into(),
        "ksym-resolve" => env!("CARGO_BIN_EXE_ksym-resolve").into(),
        "ksym-tokens" => env!("CARGO_BIN_EXE_ksym-tokens").into(),
        _ => panic!("unknown binary {name}"),
    }
}

/// Runs `name args` with `stdin`; returns its output (whatever the status).
pub fn run(name: &str, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(bin(name))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut input = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let out = child.wait_with_output().expect("wait");
    feeder.join().unwrap();
    out
}

/// Runs and requires exit status 0; returns stdout.
pub fn run_ok(name: &str, args: &[&str], stdin: &[u8]) -> Vec<u8> {
    let out = run(name, args, stdin);
    assert!(
        out.status.success(),
        "{name} {args:?} failed: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Decompresses an .xz file.
pub fn read_xz(path: &Path) -> Vec<u8> {
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    lzma_rs::xz_decompress(&mut std::io::BufReader::new(f), &mut out).expect("xz");
    out
}

/// A committed sample under tests/data.
pub fn sample(name: &str) -> Vec<u8> {
    read_xz(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(name),
    )
}

/// The shared corpus directory, when present (CI has it; a fresh clone may not).
pub fn corpus_dir() -> Option<PathBuf> {
    let d = std::env::var_os("KSYM_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    d.join("README.md").exists().then_some(d)
}

/// A corpus file, decompressed; `None` (with a note on stderr) when the corpus is absent.
pub fn corpus(name: &str) -> Option<Vec<u8>> {
    match corpus_dir() {
        Some(d) => Some(read_xz(&d.join(format!("{name}.xz")))),
        None => {
            // Straight to the handle: libtest captures only the print macros,
            // and a skip must be seen.
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: ../shared/corpus not found; full-corpus check of {name} not run"
            );
            None
        }
    }
}

/// The corpus' symbol lists (what `ksym-filter` reads), for the tests that
/// go over all of them.
pub const CORPUS_SYMBOL_LISTS: [&str; 9] = [
    "kallsyms-6.18-x86_64.txt",
    "System.map-6.1.0-56-amd64",
    "vmlinux-6.1.0-56-amd64.nm-n-C.txt",
    "cargo-1.95.0.nm-n.txt",
    "cargo-1.95.0.nm-n-C.txt",
    "rustup-1.29.0.nm-n.txt",
    "rustup-1.29.0.nm-n-C.txt",
    "cryptography-rust-abi3.nm-n.txt",
    "cryptography-rust-abi3.nm-n-C.txt",
];

/// Packs the `ADDR TYPE NAME` list at `list` with `ksym-pack --format
/// FORMAT EXTRA... -o DIR/k.FORMAT`; returns the blob's path.
pub fn pack_file(dir: &Path, list: &Path, format: &str, extra: &[&str]) -> PathBuf {
    let blob = dir.join(format!("k.{format}"));
    let mut args = vec!["--format", format, "-o", blob.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.push(list.to_str().unwrap());
    run_ok("ksym-pack", &args, b"");
    blob
}

/// A scratch directory for one test.
pub fn scratch(test: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(test);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Lines of a byte buffer, without their `\n`.
pub fn lines(b: &[u8]) -> impl Iterator<Item = &[u8]> {
    b.split(|&c| c == b'\n').filter(|l| !l.is_empty())
}

/// One row of `readelf -SW`: name, address, file offset, size (bytes), flags.
pub struct ElfSection {
    pub name: String,
    pub address: u64,
    pub offset: u64,
    pub size: u64,
    pub flags: String,
}

/// The section headers of `elf` as binutils' `readelf -SW` prints them
/// (`[Nr] Name Type Address Off Size ES Flg ...`): the reference the
/// tests compare the tools' ELF reading with.
pub fn readelf_sections(elf: &Path) -> Vec<ElfSection> {
    let out = Command::new("readelf")
        .arg("-SW")
        .arg(elf)
        .output()
        .expect("readelf");
    assert!(out.status.success(), "readelf -SW {}", elf.display());
    let hex = |x: &str| u64::from_str_radix(x, 16).unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(']').nth(1)?.split_whitespace().collect();
            // A section with no flags has no Flg column; NULL has no name.
            (f.len() >= 7 && u64::from_str_radix(f[2], 16).is_ok()).then(|| ElfSection {
                name: f[0].to_string(),
                address: hex(f[2]),
                offset: hex(f[3]),
                size: hex(f[4]),
                flags: f[6].to_string(),
            })
        })
        .collect()
}

/// A file under tests/data.
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// Runs a host tool (CI installs gcc, binutils, linux-perf), which must
/// succeed; returns its stdout.
pub fn tool(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e} (.ci/run installs it)"));
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `perf record ARGS`: its output, or `None` (said on stderr) when the
/// machine does not let perf record (events not permitted or not
/// supported), which is not ours to fail. Any other failure fails the test.
pub fn perf_record(args: &[&str]) -> Option<Output> {
    let rec = Command::new("perf")
        .arg("record")
        .args(args)
        .output()
        .expect("perf (CI installs linux-perf)");
    let err = String::from_utf8_lossy(&rec.stderr);
    let unavailable = [
        "perf_event_paranoid",
        "Permission denied",
        "not supported",
        "No permission",
    ]
    .iter()
    .any(|w| err.contains(w));
    if !rec.status.success() && unavailable {
        eprintln!("perf record cannot run on this machine, not checked: {err}");
        return None;
    }
    assert!(rec.status.success(), "perf record: {err}");
    Some(rec)
}

/// `nm -S --defined-only` of `elf`'s functions (`T t W w i`) with a size:
/// address, size and name, without symbol versions.
pub fn nm_functions(elf: &Path) -> Vec<(u64, u64, String)> {
    nm_all(elf).into_iter().filter(|(_, s, _)| *s > 0).collect()
}

/// As [`nm_functions`], those without a size (assembly labels) too.
pub fn nm_all(elf: &Path) -> Vec<(u64, u64, String)> {
    tool("nm", &["-S", "--defined-only", elf.to_str().unwrap()])
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (a, s, t, n) = match f[..] {
                [a, s, t, n] => (a, s, t, n),
                [a, t, n] => (a, "0", t, n),
                _ => return None,
            };
            "TtWwi"
                .contains(t)
                .then(|| {
                    (
                        u64::from_str_radix(a, 16).unwrap(),
                        u64::from_str_radix(s, 16).unwrap(),
                    )
                })
                .map(|(a, s)| (a, s, n.split('@').next().unwrap().to_string()))
        })
        .collect()
}

/// `elf`'s separate debug file under `/usr/lib/debug/.build-id/` (Debian's
/// `-dbg` packages), if installed.
pub fn debug_file(elf: &Path) -> Option<PathBuf> {
    let notes = tool("readelf", &["-n", elf.to_str().unwrap()]);
    let id = notes
        .split("Build ID: ")
        .nth(1)?
        .split_whitespace()
        .next()?;
    let f = PathBuf::from(format!(
        "/usr/lib/debug/.build-id/{}/{}.debug",
        id.get(..2)?,
        id.get(2..)?
    ));
    f.exists().then_some(f)
}

/// `tests/data/SRC` built into `dir/OUT` as a PIE with `-O2 -g` and frame
/// pointers (for profilers' stacks).
pub fn cc_pie(dir: &Path, src: &str, out: &str) -> PathBuf {
    let elf = dir.join(out);
    tool(
        "cc",
        &[
            "-O2",
            "-g",
            "-fPIE",
            "-pie",
            "-fno-omit-frame-pointer",
            "-o",
            elf.to_str().unwrap(),
            data(src).to_str().unwrap(),
        ],
    );
    elf
}

/// The GNU build-id of `elf`, lower-case hex, by `readelf -n`.
pub fn build_id(elf: &Path) -> String {
    tool("readelf", &["-n", elf.to_str().unwrap()])
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: ").map(str::to_string))
        .unwrap_or_else(|| panic!("{}: no build-id", elf.display()))
}

/// `elf`'s functions of size 0 (`_init`, from crti.S's `.type` with no
/// `.size`), each with the file offsets of its executable section: perf
/// and llvm-symbolizer stretch such a symbol to the next one, so perf
/// names the PLT header after `.init` `_init`; ksym stops at the section's
/// end and says `[unknown]` there (or names a PLT stub). `nm` is the listing of the file
/// with the names (`nm -S --defined-only`; a debug file's section
/// offsets mean nothing).
pub fn zero_size_functions(elf: &Path, nm: &str) -> std::collections::HashMap<String, (u64, u64)> {
    let hex = |s: &str| u64::from_str_radix(s, 16).ok();
    let sections: Vec<(u64, u64, u64)> = tool("readelf", &["-SW", elf.to_str().unwrap()])
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_once(']')?.1.split_whitespace().collect();
            let flags = f.get(6)?;
            flags.contains('X').then_some(())?;
            Some((hex(f[2])?, hex(f[3])?, hex(f[4])?))
        })
        .collect();
    nm.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let [a, t, n] = f[..] else { return None };
            "Tt".contains(t).then_some(())?;
            let a = hex(a)?;
            let &(addr, off, size) = sections.iter().find(|s| s.0 <= a && a < s.0 + s.2)?;
            Some((n.to_string(), (off + (a - addr), off + size)))
        })
        .collect()
}
