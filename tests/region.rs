//! A blob in a reserved region (FORMAT.md §2.3): the blob, then zeros, as a
//! kernel's `.ksym` section holds it. The library finds the blob's length
//! in its own header and refuses anything but zeros after it; `ksym-pack
//! --check` and `--dump` read such a region and say how much padding
//! follows.
mod common;

use common::*;
use ksym::blob::{BlobErrorKind, Kallsyms};
use ksym::blobfile::AlignedBlob;
use std::path::Path;

/// (label, blob) for v1, v2, and v2 with source lines, packed in a scratch
/// directory of the calling test's own (tests run in parallel).
fn blobs(test: &str) -> Vec<(&'static str, Vec<u8>)> {
    let dir = scratch(&format!("{test}-blobs"));
    let list = dir.join("list.txt");
    std::fs::write(
        &list,
        run_ok("ksym-filter", &[], &sample("kallsyms-6.18-sample.txt.xz")),
    )
    .unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lines");
    let elf = data.join("inl.elf");
    let read = |p: std::path::PathBuf| std::fs::read(p).unwrap();
    vec![
        ("v1", read(pack_file(&dir, &list, "v1", &[]))),
        ("v2", read(pack_file(&dir, &list, "v2", &[]))),
        (
            "v2+lines",
            read(pack_file(
                &dir,
                &data.join("inl.elf.syms"),
                "v2",
                &["--lines", elf.to_str().unwrap()],
            )),
        ),
    ]
}

fn symbols(k: &Kallsyms<'_>) -> Vec<(u64, String)> {
    k.symbols()
        .map(|s| (s.address, s.name.to_string()))
        .collect()
}

#[test]
fn a_padded_region_reads_as_its_blob() {
    for (label, blob) in blobs("region-padded") {
        let alone = AlignedBlob::copy_from(&blob);
        let want = symbols(&Kallsyms::from_blob(alone.as_bytes(), None, None).unwrap());
        // No padding, a few bytes, and up to the next 4 KiB page and beyond.
        for pad in [0, 1, 7, 4096 - blob.len() % 4096, 65536] {
            let mut region = blob.clone();
            region.resize(blob.len() + pad, 0);
            let region = AlignedBlob::copy_from(&region);
            let (k, got_pad) = Kallsyms::from_region(region.as_bytes(), None, None)
                .unwrap_or_else(|e| panic!("{label} + {pad}: {e}"));
            assert_eq!(got_pad, pad, "{label}");
            assert_eq!(symbols(&k), want, "{label} + {pad}");
            if label == "v2+lines" {
                assert!(k.lines().is_some());
            }
        }
    }
}

#[test]
fn a_nonzero_byte_after_the_blob_or_a_short_region_is_refused() {
    for (label, blob) in blobs("region-refused") {
        for at in [0, 5, 100] {
            let mut region = blob.clone();
            region.resize(blob.len() + 128, 0);
            region[blob.len() + at] = 0x5A;
            let region = AlignedBlob::copy_from(&region);
            let e = Kallsyms::from_region(region.as_bytes(), None, None).unwrap_err();
            assert_eq!(e.kind, BlobErrorKind::NonZeroAfterBlob, "{label}");
            assert_eq!(e.offset, blob.len() + at, "{label}");
        }
        // Shorter than the header says: refused at every length, never a panic.
        for cut in (0..blob.len()).step_by(blob.len() / 97 + 1) {
            let region = AlignedBlob::copy_from(&blob[..cut]);
            assert!(
                Kallsyms::from_region(region.as_bytes(), None, None).is_err(),
                "{label} cut to {cut}"
            );
        }
    }
}

#[test]
fn an_all_zero_region_is_not_filled() {
    for len in [1, 8, 4096, 65536] {
        let region = AlignedBlob::copy_from(&vec![0u8; len]);
        let e = Kallsyms::from_region(region.as_bytes(), None, None).unwrap_err();
        assert_eq!((e.kind, e.offset), (BlobErrorKind::NotFilled, 0), "{len}");
        assert!(e.to_string().contains("never filled"), "{e}");
    }
    // One nonzero byte anywhere and the region is a (damaged) blob instead.
    let mut bytes = vec![0u8; 4096];
    bytes[4000] = 1;
    let region = AlignedBlob::copy_from(&bytes);
    let e = Kallsyms::from_region(region.as_bytes(), None, None).unwrap_err();
    assert_ne!(e.kind, BlobErrorKind::NotFilled);
}

#[test]
fn resolve_reads_a_section_dump_and_says_when_one_was_never_filled() {
    let dir = scratch("region-resolve");
    for (label, blob) in blobs("region-resolve") {
        let plain = dir.join(format!("{label}.bin"));
        std::fs::write(&plain, &blob).unwrap();
        let mut region = blob.clone();
        region.resize(blob.len() + 8192, 0);
        let padded = dir.join(format!("{label}.region"));
        std::fs::write(&padded, &region).unwrap();
        let k = AlignedBlob::copy_from(&blob);
        let k = Kallsyms::from_blob(k.as_bytes(), None, None).unwrap();
        let s = k.symbols().nth(k.len() / 2).unwrap();
        let input = format!("{:016x}\n{:016x}\n", s.address, s.address + 1);
        let want = run_ok("ksym-resolve", &[plain.to_str().unwrap()], input.as_bytes());
        let got = run_ok(
            "ksym-resolve",
            &[padded.to_str().unwrap()],
            input.as_bytes(),
        );
        assert_eq!(got, want, "{label}");
        let got = String::from_utf8_lossy(&got);
        assert!(
            got.contains(&s.name.to_string()),
            "{label}: {input} -> {got}"
        );
    }
    let zeros = dir.join("zeros.region");
    std::fs::write(&zeros, vec![0u8; 8192]).unwrap();
    let out = run("ksym-resolve", &[zeros.to_str().unwrap()], b"1000\n");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("never filled") && err.contains("zeros.region"),
        "{err}"
    );
}

#[test]
fn check_and_dump_read_a_region_and_name_its_padding() {
    let dir = scratch("region-tools");
    for (label, blob) in blobs("region-tools") {
        let plain = dir.join(format!("{label}.bin"));
        std::fs::write(&plain, &blob).unwrap();
        let mut region = blob.clone();
        region.resize(blob.len().next_multiple_of(4096) + 4096, 0);
        let padded = dir.join(format!("{label}.region"));
        std::fs::write(&padded, &region).unwrap();
        let pad = region.len() - blob.len();

        let check = run_ok("ksym-pack", &["--check", padded.to_str().unwrap()], b"");
        let check = String::from_utf8(check).unwrap();
        let note = format!("; followed by {pad} bytes of zero padding (a reserved region)");
        assert!(check.trim_end().ends_with(&note), "{check}");
        let plain_check = run_ok("ksym-pack", &["--check", plain.to_str().unwrap()], b"");
        assert!(!String::from_utf8(plain_check).unwrap().contains("padding"));

        let out = run("ksym-pack", &["--dump", padded.to_str().unwrap()], b"");
        assert!(out.status.success());
        assert_eq!(
            out.stdout,
            run_ok("ksym-pack", &["--dump", plain.to_str().unwrap()], b"")
        );
        assert!(String::from_utf8_lossy(&out.stderr).contains(&note));

        region[blob.len() + 3] = 1;
        std::fs::write(&padded, &region).unwrap();
        let out = run("ksym-pack", &["--check", padded.to_str().unwrap()], b"");
        assert_eq!(out.status.code(), Some(1), "{label}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("nonzero byte after the blob")
                && err.contains(&format!("{}", blob.len() + 3)),
            "{label}: {err}"
        );
    }
}
