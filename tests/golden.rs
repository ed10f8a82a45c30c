//! Golden files for each line kind ksym-resolve understands: tests/golden/
//! NAME.in through `ksym-resolve ARGS` must give NAME.out byte for byte. The
//! blob is packed from the real kallsyms sample; the perf inputs are cut from
//! real captures (tests/data); the `lines-*` cases use a blob with source
//! lines packed from a committed test program. `KSYM_BLESS=1 cargo test --test golden`
//! rewrites the .out files (review the diff before committing).

mod common;
use common::*;
use std::path::Path;

const CASES: &[(&str, &str, &[&str])] = &[
    ("bare", "bare.in", &[]),
    ("bare-no-size", "bare.in", &["--no-size"]),
    ("bare-json", "bare.in", &["--json"]),
    (
        "bare-kaslr-offset",
        "bare-slid.in",
        &["--offset", "0x1c000000"],
    ),
    ("perf-script", "perf-script.in", &[]),
    ("perf-one-line", "perf-one-line.in", &[]),
    ("perf-F-ip", "perf-F-ip.in", &[]),
    ("perf-F-ip-sym-symoff", "perf-F-ip-sym-symoff.in", &[]),
    ("oops", "oops.in", &[]),
    ("oops-kaslr-from-sym", "oops-slid.in", &["--kaslr-from-sym"]),
    ("bcc", "bcc.in", &[]),
    // bpftrace's kstack(perf) and ustack(perf): kernel frames keep its
    // decimal offsets, a module's frame the blob lacks keeps bpftrace's
    // name; a user frame without --maps stays.
    ("bpftrace", "bpftrace.in", &[]),
    // Real report forms: every log prefix, references anywhere on a line,
    // return addresses at a function's end, `Code:` lines (x86 bytes cut
    // from a Debian 6.1 module's BUG()).
    ("reports", "reports.in", &[]),
    ("reports-json", "reports.in", &["--json"]),
    // Each architecture's register and trace lines (naming the sample's
    // x86 functions) and `Code:` forms (arm64, Thumb-2, ARM, RISC-V words
    // cut from Debian's libc builds; the ARM word sequence is a prologue
    // and `udf`).
    ("reports-arch", "reports-arch.in", &[]),
    ("reports-arch-json", "reports-arch.in", &["--json"]),
    ("names", "names.in", &["--names"]),
];

#[test]
fn golden_files() {
    let dir = scratch("golden");
    let kallsyms = sample("kallsyms-6.18-sample.txt.xz");
    let blob = dir.join("k.bin");
    std::fs::write(
        &blob,
        run_ok("ksym-pack", &[], &run_ok("ksym-filter", &[], &kallsyms)),
    )
    .unwrap();
    let ktext = dir.join("kallsyms.txt");
    std::fs::write(&ktext, &kallsyms).unwrap();
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let bless = std::env::var_os("KSYM_BLESS").is_some();

    let mut cases: Vec<(String, String, Vec<String>)> = CASES
        .iter()
        .map(|(n, i, a)| {
            let mut args: Vec<String> = a.iter().map(|s| s.to_string()).collect();
            args.push(blob.to_str().unwrap().into());
            (n.to_string(), i.to_string(), args)
        })
        .collect();
    // --kallsyms: straight from the text, module symbols print `[mod]`.
    for (name, extra) in [
        ("kallsyms-modules", None),
        ("kallsyms-modules-json", Some("--json")),
    ] {
        let mut args: Vec<String> = extra.into_iter().map(String::from).collect();
        args.extend(["--kallsyms".into(), ktext.to_str().unwrap().into()]);
        cases.push((name.into(), "modules.in".into(), args));
    }

    // Source lines: a blob with a `lines` section from the committed test
    // program (tests/data/lines/inl.c built with `cc -O2 -g
    // -fdebug-prefix-map=…=/build/ksym`), so these outputs do not depend on
    // the compiler of the machine running the tests.
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lines");
    let lblob = dir.join("inl.v2");
    run_ok(
        "ksym-pack",
        &[
            "--format",
            "v2",
            "--lines",
            data.join("inl.elf").to_str().unwrap(),
            "-o",
            lblob.to_str().unwrap(),
            data.join("inl.elf.syms").to_str().unwrap(),
        ],
        b"",
    );
    let lb = lblob.to_str().unwrap();
    for (name, input, a) in [
        ("lines-bare", "lines-bare.in", &[][..]),
        (
            "lines-bare-strip",
            "lines-bare.in",
            &["--strip-prefix", "/build/ksym"][..],
        ),
        ("lines-json", "lines-bare.in", &["--json"][..]),
        (
            "lines-oops",
            "lines-oops.in",
            &["--strip-prefix", "/build/ksym/"][..],
        ),
        ("lines-oops-full-paths", "lines-oops.in", &[][..]),
        ("lines-perf", "lines-perf.in", &[][..]),
        ("lines-perf-inline", "lines-perf.in", &["--inline"][..]),
    ] {
        let mut args: Vec<String> = a.iter().map(|s| s.to_string()).collect();
        args.push(lb.into());
        cases.push((name.into(), input.into(), args));
    }

    let mut failed = Vec::new();
    for (name, input, args) in &cases {
        let inp = std::fs::read(golden.join(input)).unwrap();
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let got = run_ok("ksym-resolve", &argv, &inp);
        let want_path = golden.join(format!("{name}.out"));
        if bless {
            std::fs::write(&want_path, &got).unwrap();
            continue;
        }
        let want =
            std::fs::read(&want_path).unwrap_or_else(|e| panic!("{}: {e}", want_path.display()));
        if got != want {
            failed.push(name.clone());
            let (g, w) = (
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&want),
            );
            for (k, (a, b)) in g.lines().zip(w.lines()).enumerate() {
                if a != b {
                    eprintln!(
                        "{name}: line {}: got  {a}\n{name}: line {}: want {b}",
                        k + 1,
                        k + 1
                    );
                    break;
                }
            }
        }
    }
    assert!(failed.is_empty(), "golden files differ: {failed:?}");
}

#[test]
fn perf_golden_outputs_differ_from_perf_only_in_alias_names() {
    // perf-script.out is perf's own text with our symbols: every changed line
    // must keep the address, offset and DSO.
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    for case in ["perf-script", "perf-one-line", "perf-F-ip-sym-symoff"] {
        let inp = std::fs::read(golden.join(format!("{case}.in"))).unwrap();
        let out = std::fs::read(golden.join(format!("{case}.out"))).unwrap();
        let (a, b): (Vec<&[u8]>, Vec<&[u8]>) = (lines(&inp).collect(), lines(&out).collect());
        assert_eq!(a.len(), b.len());
        let off = |s: &[u8]| s[s.iter().rposition(|&c| c == b'+').unwrap_or(0)..].to_vec();
        for (x, y) in a.iter().zip(&b) {
            if x != y && !x.windows(9).any(|w| w == b"[unknown]") {
                assert_eq!(x[..18], y[..18], "{case}");
                assert_eq!(off(x), off(y), "{case}");
            }
        }
    }
}
