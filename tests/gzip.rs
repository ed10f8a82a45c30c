//! `ksym-pack --gzip` (docs/FORMAT.md §17): a blob file compressed at rest
//! is the very blob inside one gzip member (what `gzip -dc` gives back),
//! and every tool that reads blobs answers from it as from the plain blob:
//! `ksym-resolve BLOB`, `ksym-resolve --store`, `--check`, `--dump`. A
//! damaged member is an error naming what is wrong, before any output; a
//! kernel's blob is never compressed.
mod common;

use common::{build_id, cc_pie, nm_functions, run, run_ok, scratch};
use std::path::Path;
use std::process::Command;

fn pack(elf: &Path, out: &Path, extra: &[&str]) {
    let mut args = vec![
        "--elf",
        elf.to_str().unwrap(),
        "--lines",
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run_ok("ksym-pack", &args, b"");
}

fn gunzip(path: &Path) -> Vec<u8> {
    let out = Command::new("gzip")
        .arg("-dc")
        .arg(path)
        .output()
        .expect("gzip (Debian's essential set has it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn a_compressed_blob_answers_as_the_plain_one() {
    let dir = scratch("gzip-blob");
    let elf = cc_pie(&dir, "funcs.c", "prog");
    let elf_s = elf.to_str().unwrap();
    let (plain, gz) = (dir.join("prog.ksym"), dir.join("prog.ksym.gz"));
    pack(&elf, &plain, &[]);
    pack(&elf, &gz, &["--gzip"]);
    let plain_bytes = std::fs::read(&plain).unwrap();
    let gz_bytes = std::fs::read(&gz).unwrap();
    assert_eq!(&gz_bytes[..3], &[0x1f, 0x8b, 8]);
    assert!(
        gz_bytes.len() < plain_bytes.len(),
        "{} bytes",
        gz_bytes.len()
    );
    assert_eq!(gunzip(&gz), plain_bytes, "gzip -dc gives the blob back");

    // Every function's first, middle and last byte, with lines.
    let funcs = nm_functions(&elf);
    assert!(funcs.len() >= 4, "{funcs:?}");
    let addrs: String = funcs
        .iter()
        .flat_map(|(a, s, _)| [*a, a + s / 2, a + s - 1])
        .map(|a| format!("{a:#x}\n"))
        .collect();
    let ask = |blob: &Path| run_ok("ksym-resolve", &[blob.to_str().unwrap()], addrs.as_bytes());
    let want = ask(&plain);
    assert_eq!(ask(&gz), want);
    let text = String::from_utf8(want).unwrap();
    // Aliases (funcs.c's `__GI_public_fn`) print as one name.
    for (a, _, _) in &funcs {
        assert!(
            funcs
                .iter()
                .any(|(b, _, n)| b == a && text.contains(&format!(" {n}+0x"))),
            "{a:#x} unnamed:\n{text}"
        );
    }
    assert!(text.contains("funcs.c:"), "no lines:\n{text}");

    let check =
        String::from_utf8(run_ok("ksym-pack", &["--check", gz.to_str().unwrap()], b"")).unwrap();
    assert!(
        check.contains(&format!(
            ": ok: gzip-compressed in {} bytes, v2, ",
            gz_bytes.len()
        )),
        "{check}"
    );
    assert_eq!(
        run_ok("ksym-pack", &["--dump", gz.to_str().unwrap()], b""),
        run_ok("ksym-pack", &["--dump", plain.to_str().unwrap()], b"")
    );

    // The same blob packed again gives the same bytes (no time stamp).
    let again = dir.join("again.gz");
    pack(&elf, &again, &["--gzip"]);
    assert_eq!(std::fs::read(&again).unwrap(), gz_bytes);

    // Damage: a flipped byte inside the DEFLATE data, the member cut short,
    // bytes after it. Each is an error before any output.
    let n = gz_bytes.len();
    let mut flipped = gz_bytes.clone();
    flipped[n / 2] ^= 0x40;
    let mut trailing = gz_bytes.clone();
    trailing.extend_from_slice(b"\0\0\0\0");
    for (what, bytes, says) in [
        (
            "flipped",
            &flipped[..],
            "gzip-compressed blob: ".to_string(),
        ),
        (
            "cut",
            &gz_bytes[..n - 5],
            "gzip-compressed blob: ".to_string(),
        ),
        (
            "trailing",
            &trailing[..],
            format!("gzip-compressed blob: 4 bytes after its gzip member, at byte offset {n}"),
        ),
    ] {
        let bad = dir.join(what);
        std::fs::write(&bad, bytes).unwrap();
        let out = run("ksym-resolve", &[bad.to_str().unwrap()], addrs.as_bytes());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {err}");
        assert!(out.stdout.is_empty(), "{what}: printed before the error");
        assert!(err.contains(&says), "{what}: {err}");
        let out = run("ksym-pack", &["--check", bad.to_str().unwrap()], b"");
        assert_eq!(out.status.code(), Some(1), "{what}");
    }

    // A kernel reads its blob in place: no --gzip for --patch-elf or --asm.
    for extra in [&["--patch-elf", elf_s][..], &["--asm"][..]] {
        let mut args = vec!["--gzip"];
        args.extend_from_slice(extra);
        let out = run("ksym-pack", &args, b"ffffffff81000000 T f\n");
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("a kernel reads its blob in place"),
            "{extra:?}"
        );
    }
}

#[test]
fn a_store_of_compressed_blobs_answers_as_a_plain_store() {
    let dir = scratch("gzip-store");
    let elf = cc_pie(&dir, "funcs.c", "prog");
    let funcs = nm_functions(&elf);
    let frames: String = funcs
        .iter()
        .map(|(a, s, _)| format!("\t    {:x} ({})\n", a + s / 2, elf.display()))
        .collect();
    for (store, extra) in [("plain", &[][..]), ("gz", &["--gzip"][..])] {
        let store = dir.join(store);
        std::fs::create_dir_all(&store).unwrap();
        let mut args = vec!["--store", store.to_str().unwrap(), "--elf"];
        args.extend_from_slice(&[elf.to_str().unwrap(), "--lines"]);
        args.extend_from_slice(extra);
        run_ok("ksym-pack", &args, b"");
    }
    // The stores alone: with the binary moved away, a store miss would
    // leave its frames as they were.
    // `perf buildid-list`'s lines say whose frames they are.
    let ids = dir.join("build-ids");
    std::fs::write(&ids, format!("{} {}\n", build_id(&elf), elf.display())).unwrap();
    std::fs::rename(&elf, dir.join("moved")).unwrap();
    let outs: Vec<String> = ["plain", "gz"]
        .iter()
        .map(|s| {
            let store = dir.join(s);
            let args = [
                "--store",
                store.to_str().unwrap(),
                "--build-ids",
                ids.to_str().unwrap(),
            ];
            let out = run_ok("ksym-resolve", &args, frames.as_bytes());
            String::from_utf8(out).unwrap()
        })
        .collect();
    assert_eq!(outs[0], outs[1]);
    for (a, _, _) in &funcs {
        assert!(
            funcs
                .iter()
                .any(|(b, _, n)| b == a && outs[1].contains(&format!(" {n} ("))),
            "{a:#x} unnamed:\n{}",
            outs[1]
        );
    }
}

/// A v1 blob of exactly 559,903 symbols starts with `1F 8B 08` (its
/// `num_syms`, FORMAT.md §2.1): it does not inflate, opens as a blob, and
/// is read as one.
#[test]
fn the_v1_blob_that_looks_like_gzip_is_read_as_a_blob() {
    let dir = scratch("gzip-lookalike");
    let list: String = (0..0x88b1f_u64)
        .map(|i| format!("{:016x} T f{i}\n", 0xffff_ffff_8100_0000 + 16 * i))
        .collect();
    let blob = dir.join("k.v1");
    run_ok(
        "ksym-pack",
        &["--format", "v1", "-o", blob.to_str().unwrap()],
        list.as_bytes(),
    );
    assert_eq!(&std::fs::read(&blob).unwrap()[..3], &[0x1f, 0x8b, 8]);
    let out = run_ok(
        "ksym-resolve",
        &[blob.to_str().unwrap()],
        b"0xffffffff81000012\n",
    );
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "ffffffff81000012 T f1+0x2/0x10\n"
    );
    let check = run_ok("ksym-pack", &["--check", blob.to_str().unwrap()], b"");
    assert!(
        String::from_utf8_lossy(&check).contains(": ok: v1, 559903 symbols"),
        "{}",
        String::from_utf8_lossy(&check)
    );
}
