//! Blob bytes do not change unless the format does: every sample (and every
//! corpus list, when present) is packed in each format and strategy, and the
//! blob's length and CRC-64 must equal `tests/golden/blob-digests.txt`.
//!
//! A change that moves code without changing the format must leave this file
//! alone. A deliberate format change regenerates it with
//! `KSYM_BLESS=1 cargo test --release --test identity` and says so in its
//! commit.
mod common;

use common::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

const CRC64: crc::Crc<u64> = crc::Crc::<u64>::new(&crc::CRC_64_XZ);

/// (label, extra ksym-pack arguments, format).
const VARIANTS: [(&str, &[&str], &str); 3] = [
    ("v1-optimal", &["--tokens", "optimal"], "v1"),
    ("v1-seed", &["--tokens", "seed"], "v1"),
    ("v2", &["--release", "6.18.0-test"], "v2"),
];

const SAMPLES: [&str; 6] = [
    "kallsyms-6.18-sample.txt.xz",
    "System.map-6.1.0-56-sample.xz",
    "System.map-6.1.0-56-cloud-arm64-sample.xz",
    "cargo-1.95.0.nm-n-sample.txt.xz",
    "cryptography-rust-abi3.nm-n-sample.txt.xz",
    "rustup-1.29.0.nm-n-sample.txt.xz",
];

fn digest(path: &Path) -> String {
    let b = std::fs::read(path).unwrap();
    format!("{} {:016x}", b.len(), CRC64.checksum(&b))
}

/// Filters `raw` and packs it in every variant into `out` under `label`.
fn pack_all(dir: &Path, label: &str, raw: &[u8], out: &mut BTreeMap<String, String>) {
    let list = dir.join("list.txt");
    std::fs::write(&list, run_ok("ksym-filter", &[], raw)).unwrap();
    for (variant, extra, format) in VARIANTS {
        let blob = pack_file(dir, &list, format, extra);
        out.insert(format!("{label} {variant}"), digest(&blob));
    }
}

#[test]
fn blobs_are_byte_identical_to_the_recorded_digests() {
    let dir = scratch("identity");
    let mut got = BTreeMap::new();
    for s in SAMPLES {
        pack_all(&dir, &format!("sample/{s}"), &sample(s), &mut got);
    }
    let lines_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lines");
    let elf = lines_dir.join("inl.elf");
    let syms = lines_dir.join("inl.elf.syms");
    for (label, extra) in [
        ("lines", vec!["--lines", elf.to_str().unwrap()]),
        (
            "lines-columns",
            vec!["--lines", elf.to_str().unwrap(), "--columns"],
        ),
    ] {
        let blob = pack_file(&dir, &syms, "v2", &extra);
        got.insert(format!("data/lines/inl.elf {label}"), digest(&blob));
    }
    let have_corpus = corpus_dir().is_some();
    if have_corpus {
        for name in CORPUS_SYMBOL_LISTS {
            pack_all(
                &dir,
                &format!("corpus/{name}"),
                &corpus(name).unwrap(),
                &mut got,
            );
        }
    } else {
        let _ = corpus("kallsyms-6.18-x86_64.txt"); // prints the skip note
    }

    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/blob-digests.txt");
    if std::env::var_os("KSYM_BLESS").is_some() {
        assert!(have_corpus, "bless with ../shared/corpus present");
        let mut text = String::from("# label variant: length crc64-xz (tests/identity.rs)\n");
        for (k, v) in &got {
            writeln!(text, "{k}: {v}").unwrap();
        }
        std::fs::write(&golden, text).unwrap();
        return;
    }
    let text = std::fs::read_to_string(&golden).unwrap();
    let want: BTreeMap<String, String> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut checked = 0;
    for (k, v) in &got {
        let w = want
            .get(k)
            .unwrap_or_else(|| panic!("{k}: no recorded digest"));
        assert_eq!(v, w, "{k}: blob bytes changed (length crc64)");
        checked += 1;
    }
    // Samples (18) and lines (2) always; the corpus (27) when present.
    assert_eq!(checked, if have_corpus { 47 } else { 20 });
}
