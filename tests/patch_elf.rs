//! `ksym-pack --patch-elf`: a program linked with a zero-filled `.ksym`
//! section (as a kernel reserves it) gets its own symbol table written into
//! that section in place; the image's layout is byte-for-byte what the
//! linker made (readelf agrees), the program still runs, and the section
//! read back as a region resolves the program's functions at nm's
//! addresses. Bad cases change nothing and say why.
mod common;

use common::*;
use ksym::Kallsyms;
use ksym::blobfile::AlignedBlob;
use std::path::{Path, PathBuf};
use std::process::Command;

const PROGRAM: &str = r#"
__attribute__((section(".ksym"), aligned(4096), used))
const unsigned char ksym_reserved[RESERVED] = {0};
__attribute__((noinline)) int fault_here(int x) { return x * 3; }
int main(int argc, char **argv) { (void)argv; return fault_here(argc); }
"#;

/// Builds the program with a `.ksym` section of `reserved` bytes.
fn build(dir: &Path, reserved: usize) -> Option<PathBuf> {
    let src = dir.join("k.c");
    std::fs::write(&src, PROGRAM.replace("RESERVED", &reserved.to_string())).unwrap();
    let exe = dir.join(format!("k{reserved}"));
    let ok = Command::new("cc")
        .args(["-O1", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIPPED: no C compiler (cc); --patch-elf not tested");
        return None;
    }
    Some(exe)
}

fn tool(name: &str, args: &[&str]) -> Vec<u8> {
    let out = Command::new(name).args(args).output().expect(name);
    assert!(out.status.success(), "{name} {args:?}");
    out.stdout
}

/// `nm -n EXE | ksym-filter` written beside it.
fn symbol_list(exe: &Path) -> PathBuf {
    let list = exe.with_extension("syms");
    let nm = tool("nm", &["-n", exe.to_str().unwrap()]);
    std::fs::write(&list, run_ok("ksym-filter", &[], &nm)).unwrap();
    list
}

/// The `.ksym` section's bytes, as the image holds them.
fn section_bytes(exe: &Path) -> Vec<u8> {
    let out = exe.with_extension("ksym");
    tool(
        "objcopy",
        &[
            "-O",
            "binary",
            "--only-section=.ksym",
            exe.to_str().unwrap(),
            out.to_str().unwrap(),
        ],
    );
    std::fs::read(out).unwrap()
}

#[test]
fn the_blob_goes_into_the_section_and_nothing_moves() {
    let dir = scratch("patch-elf");
    let Some(exe) = build(&dir, 65536) else {
        return;
    };
    let list = symbol_list(&exe);
    let nm = String::from_utf8(tool("nm", &[exe.to_str().unwrap()])).unwrap();
    let fault_here = nm
        .lines()
        .find(|l| l.ends_with(" T fault_here"))
        .map(|l| u64::from_str_radix(&l[..16], 16).unwrap())
        .expect("fault_here in nm");
    for format in ["v1", "v2"] {
        let before = tool("readelf", &["-lSW", exe.to_str().unwrap()]);
        let image = std::fs::read(&exe).unwrap();
        let out = run(
            "ksym-pack",
            &[
                "--format",
                format,
                "--patch-elf",
                exe.to_str().unwrap(),
                list.to_str().unwrap(),
            ],
            b"",
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let msg = String::from_utf8_lossy(&out.stderr);
        assert!(
            msg.contains("into .ksym (65536 bytes") && msg.contains("no address moved"),
            "{msg}"
        );
        assert_eq!(tool("readelf", &["-lSW", exe.to_str().unwrap()]), before);
        // Only the section's bytes changed.
        let patched = std::fs::read(&exe).unwrap();
        let region = section_bytes(&exe);
        let at = patched
            .windows(16)
            .position(|w| w == &region[..16])
            .expect("the blob is in the file");
        assert_eq!(patched.len(), image.len());
        assert_eq!(patched[..at], image[..at]);
        assert_eq!(patched[at + region.len()..], image[at + region.len()..]);
        // Still runs, still executable.
        let status = Command::new(&exe).status().unwrap();
        assert_eq!(status.code(), Some(3));
        // The section is a region: the blob, then zeros.
        let region = AlignedBlob::copy_from(&region);
        let (k, pad) = Kallsyms::from_region(region.as_bytes(), None, None).unwrap();
        assert!(pad > 0);
        let hit = k.lookup_address(fault_here + 2).unwrap();
        assert_eq!(
            (hit.symbol.name.to_string().as_str(), hit.offset),
            ("fault_here", 2)
        );
        let check = run_ok(
            "ksym-pack",
            &["--check", exe.with_extension("ksym").to_str().unwrap()],
            b"",
        );
        assert!(String::from_utf8_lossy(&check).contains("bytes of zero padding"));
    }
}

#[test]
fn bad_targets_change_nothing_and_say_why() {
    let dir = scratch("patch-elf-bad");
    let Some(small) = build(&dir, 64) else { return };
    let list = symbol_list(&small);
    let text = dir.join("not-elf.txt");
    std::fs::write(&text, "hello\n").unwrap();
    let cases: [(&Path, &[&str], &str); 4] = [
        (
            &small,
            &[],
            "does not fit section `.ksym` (64 bytes): reserve at least",
        ),
        (&small, &["--section", ".nope"], "no section `.nope`"),
        (
            &small,
            &["--section", ".bss"],
            "has no bytes in the file (NOBITS)",
        ),
        (&text, &[], "not an ELF image"),
    ];
    for (target, extra, want) in cases {
        let before = std::fs::read(target).unwrap();
        let mut args = vec!["--format", "v2", "--patch-elf", target.to_str().unwrap()];
        args.extend_from_slice(extra);
        args.push(list.to_str().unwrap());
        let out = run("ksym-pack", &args, b"");
        assert_eq!(out.status.code(), Some(1), "{want}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{want}: {err}");
        assert_eq!(
            std::fs::read(target).unwrap(),
            before,
            "{want}: file changed"
        );
    }
    // No stray temporary files.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".ksym-pack."))
        .collect();
    assert!(left.is_empty());
    let out = run(
        "ksym-pack",
        &["--section", ".x", list.to_str().unwrap()],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_patched_copy_leaves_the_image_alone_and_text_ends_at_its_code() {
    let dir = scratch("patch-elf-copy");
    let Some(exe) = build(&dir, 65536) else {
        return;
    };
    let list = symbol_list(&exe);
    // A program linked with the default layout has no _etext: ld provides
    // it only when something refers to it, as rust-lld does.
    assert!(!std::fs::read_to_string(&list).unwrap().contains("_etext"));
    // The highest end of an executable (AX) section.
    let end = readelf_sections(&exe)
        .iter()
        .filter(|s| s.flags.contains('X'))
        .map(|s| s.address + s.size)
        .max()
        .expect("an executable section");
    let image = std::fs::read(&exe).unwrap();
    for format in ["v1", "v2"] {
        let copy = dir.join(format!("copy-{format}"));
        let args = [
            "--format",
            format,
            "--patch-elf",
            exe.to_str().unwrap(),
            "-o",
            copy.to_str().unwrap(),
            list.to_str().unwrap(),
        ];
        let out = run("ksym-pack", &args, b"");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            std::fs::read(&exe).unwrap(),
            image,
            "{format}: image changed"
        );
        assert_eq!(Command::new(&copy).status().unwrap().code(), Some(3));
        let region = AlignedBlob::copy_from(&section_bytes(&copy));
        let (k, _) = Kallsyms::from_region(region.as_bytes(), None, None).unwrap();
        assert_eq!(k.etext(), Some(end), "{format}");
        // v2 records the image's build-id (`readelf -n`); v1 has no field.
        let notes = String::from_utf8(tool("readelf", &["-n", exe.to_str().unwrap()])).unwrap();
        let want = notes
            .lines()
            .find_map(|l| l.trim().strip_prefix("Build ID: "))
            .map(str::to_string);
        let got = k
            .build_id()
            .map(|b| b.iter().map(|x| format!("{x:02x}")).collect::<String>());
        match format {
            "v2" => assert_eq!(got, want, "{format}"),
            _ => assert_eq!(got, None, "{format}"),
        }
        let last = k.lookup_address(end - 1).expect("the last function");
        assert_eq!(last.symbol.name.to_string(), "_fini", "{format}");
        for above in [end, end + 0x100, end + 0x10_0000 - 1] {
            assert!(k.lookup_address(above).is_none(), "{format}: {above:#x}");
        }
    }
    // --store with --patch-elf names two destinations.
    let out = run(
        "ksym-pack",
        &[
            "--patch-elf",
            exe.to_str().unwrap(),
            "--format",
            "v2",
            "--store",
            dir.to_str().unwrap(),
            list.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
}
