//! The whole pipeline with the real binaries: filter -> pack -> check/dump ->
//! resolve by address and by name, on the committed samples and (when
//! ../shared/corpus exists) on the full corpus; perf agreement.

mod common;
use common::*;
use std::collections::HashMap;
use std::io::Write as _;

struct Filtered {
    lines: Vec<(u64, u8, Vec<u8>)>,
    /// The `\t[module]` column of each line, if any.
    modules: Vec<Option<Vec<u8>>>,
}

fn parse_filtered(f: &[u8]) -> Filtered {
    let mut modules = Vec::new();
    let lines = lines(f)
        .map(|l| {
            assert_eq!(
                l[16],
                b' ',
                "16-digit address then a space: {}",
                String::from_utf8_lossy(l)
            );
            let a = u64::from_str_radix(std::str::from_utf8(&l[..16]).unwrap(), 16).unwrap();
            let rest = &l[19..];
            let (name, module) = match rest.iter().position(|&b| b == b'\t') {
                Some(t) => (&rest[..t], Some(rest[t + 2..rest.len() - 1].to_vec())),
                None => (rest, None),
            };
            assert!(
                l[17] == b'T'
                    || l[17] == b't'
                    || l[17] == b'W'
                    || name.starts_with(b"_e")
                    || name.starts_with(b"_s"),
                "{}",
                String::from_utf8_lossy(l)
            );
            modules.push(module);
            (a, l[17], name.to_vec())
        })
        .collect();
    Filtered { lines, modules }
}

/// filter -> pack (v1 and v2) -> --check -> --dump == filtered; every symbol
/// found again by address (offset 0, first alias; end markers cover nothing)
/// and by name. Returns the v1 and v2 blob sizes.
fn round_trip(test: &str, input: &[u8]) -> (u64, u64) {
    let dir = scratch(test);
    let filtered = run_ok("ksym-filter", &[], input);
    let f = parse_filtered(&filtered);
    assert!(!f.lines.is_empty());
    let list = dir.join("in.txt");
    std::fs::write(&list, &filtered).unwrap();
    let mut sizes = [0u64; 2];
    for (k, format) in ["v1", "v2"].into_iter().enumerate() {
        let blob = pack_file(&dir, &list, format, &[]);
        sizes[k] = std::fs::metadata(&blob).unwrap().len();
        let check = run_ok("ksym-pack", &["--check", blob.to_str().unwrap()], b"");
        assert!(
            String::from_utf8_lossy(&check).contains(&format!(": ok: {format},")),
            "{}",
            String::from_utf8_lossy(&check)
        );
        check_blob(&f, &filtered, blob.to_str().unwrap(), format == "v2");
    }
    (sizes[0], sizes[1])
}

fn check_blob(f: &Filtered, filtered: &[u8], blob: &str, v2: bool) {
    // dump equals the filtered input in address order (input is sorted
    // here); v2 keeps the module column, v1 has no field for it.
    let mut sorted = f.lines.clone();
    sorted.sort_by_key(|s| s.0);
    let dump = run_ok("ksym-pack", &["--dump", blob], b"");
    if v2 {
        assert!(
            dump == filtered,
            "v2 --dump equals ksym-filter's output byte for byte"
        );
    }
    let dumped = parse_filtered(&dump);
    assert_eq!(dumped.lines, sorted);
    if !v2 {
        assert!(dumped.modules.iter().all(|m| m.is_none()));
    }

    // By address: the first alias in input order, offset 0.
    let mut first: HashMap<u64, &[u8]> = HashMap::new();
    let mut group_names: HashMap<u64, Vec<&[u8]>> = HashMap::new();
    for (a, _, n) in &sorted {
        first.entry(*a).or_insert(n);
        group_names.entry(*a).or_default().push(n);
    }
    let addrs: Vec<u8> = sorted
        .iter()
        .flat_map(|s| format!("{:x}\n", s.0).into_bytes())
        .collect();
    let out = run_ok("ksym-resolve", &["--no-size", blob], &addrs);
    let mut checked = 0;
    for ((a, _, _), line) in sorted.iter().zip(lines(&out)) {
        let is_marker = group_names[a]
            .iter()
            .any(|n| *n == b"_etext" || *n == b"_einittext");
        let text = String::from_utf8_lossy(line);
        if is_marker {
            assert!(
                text.ends_with(" ? [unknown]"),
                "end markers cover nothing: {text}"
            );
        } else {
            let want = format!("{a:016x} ");
            assert!(text.starts_with(&want), "{text}");
            let sym = &line[19..];
            // v2 prints ` [module]` after a module symbol.
            let sym = f
                .modules
                .iter()
                .flatten()
                .find_map(|m| {
                    sym.strip_suffix(format!(" [{}]", String::from_utf8_lossy(m)).as_bytes())
                })
                .filter(|_| v2)
                .unwrap_or(sym);
            assert_eq!(
                sym.strip_suffix(b"+0x0").unwrap_or(b"(no +0x0)"),
                first[a],
                "{text}"
            );
            checked += 1;
        }
    }
    assert_eq!(lines(&out).count(), sorted.len());
    assert!(checked + 8 >= sorted.len());

    // By name: every symbol of each name, in address order.
    let mut by_name: Vec<&[u8]> = Vec::new();
    let mut seen: HashMap<&[u8], Vec<u64>> = HashMap::new();
    for (a, _, n) in &sorted {
        let e = seen.entry(n).or_default();
        if e.is_empty() {
            by_name.push(n);
        }
        e.push(*a);
    }
    let q: Vec<u8> = by_name
        .iter()
        .flat_map(|n| [n.to_vec(), b"\n".to_vec()].concat())
        .collect();
    let out = run_ok("ksym-resolve", &["--names", blob], &q);
    let got: Vec<&[u8]> = lines(&out).collect();
    let mut k = 0;
    for n in &by_name {
        for a in &seen[n] {
            let l = got[k];
            assert_eq!(&l[19..], *n);
            assert_eq!(&l[..16], format!("{a:016x}").as_bytes());
            k += 1;
        }
    }
    assert_eq!(k, got.len());
}

#[test]
fn samples_round_trip() {
    round_trip("kallsyms", &sample("kallsyms-6.18-sample.txt.xz"));
    round_trip("sysmap", &sample("System.map-6.1.0-56-sample.xz"));
    round_trip("rustup", &sample("rustup-1.29.0.nm-n-sample.txt.xz"));
    round_trip(
        "cryptography",
        &sample("cryptography-rust-abi3.nm-n-sample.txt.xz"),
    );
    round_trip("cargo", &sample("cargo-1.95.0.nm-n-sample.txt.xz"));
}

#[test]
fn corpus_round_trip() {
    for name in CORPUS_SYMBOL_LISTS {
        let Some(input) = corpus(name) else { return };
        let (v1, v2) = round_trip(name, &input);
        let n = lines(&run_ok("ksym-filter", &[], &input)).count() as f64;
        // Past libtest's capture: the sizes are a headline figure.
        let _ = writeln!(
            std::io::stderr(),
            "{name}: v1 {:.2} B/symbol, v2 {:.2} B/symbol ({:.3}x)",
            v1 as f64 / n,
            v2 as f64 / n,
            v2 as f64 / v1 as f64
        );
        // The size targets of v2 (issues 9 and 14): a regression here is a format change.
        match name {
            "kallsyms-6.18-x86_64.txt" => assert!(v2 as f64 / n <= 6.5, "{name}"),
            "System.map-6.1.0-56-amd64" | "vmlinux-6.1.0-56-amd64.nm-n-C.txt" => {
                assert!(v2 as f64 / n <= 12.0, "{name}")
            }
            _ => assert!(v2 as f64 <= 0.4 * v1 as f64, "{name}"),
        }
    }
}

#[test]
fn filter_counts_match_the_corpus_readme() {
    // T/t counts from ../shared/corpus/README.md, minus mapping symbols/labels (none there),
    // plus the W (weak function) lines: 304 in kallsyms-6.18, 171 in System.map.
    for (name, want) in [
        ("kallsyms-6.18-x86_64.txt", 121_782 + 304),
        ("System.map-6.1.0-56-amd64", 49_503 + 171),
        ("cargo-1.95.0.nm-n.txt", 40_423),
        ("rustup-1.29.0.nm-n.txt", 22_183),
        ("cryptography-rust-abi3.nm-n.txt", 21_731),
    ] {
        let Some(input) = corpus(name) else { return };
        let out = run_ok("ksym-filter", &[], &input);
        assert_eq!(lines(&out).count(), want, "{name}");
        // Rust names are demangled: no mangled name survives.
        assert!(
            !lines(&out).any(|l| l[19..].starts_with(b"_R") || l[19..].starts_with(b"_ZN")),
            "{name}"
        );
    }
}

/// Names (first field) of a symbol that sits at the same address as `name`.
fn aliases<'a>(kallsyms: &'a [u8], addr: &str) -> Vec<&'a [u8]> {
    lines(kallsyms)
        .filter(|l| l.starts_with(addr.as_bytes()) && (l[17] == b'T' || l[17] == b't'))
        .map(|l| l[19..].split(|&c| c == b'\t').next().unwrap())
        .collect()
}

/// Resolves perf's ground-truth addresses; every difference must be an alias
/// of the same group (perf prints the last alias, we the first) with the same offset.
fn perf_agreement(truth_file: &str) -> Option<(usize, usize)> {
    let kallsyms = corpus("kallsyms-6.18-x86_64.txt")?;
    let truth = corpus(truth_file)?;
    let dir = scratch(truth_file);
    let filtered = run_ok("ksym-filter", &[], &kallsyms);
    let blob = dir.join("k.bin");
    std::fs::write(&blob, run_ok("ksym-pack", &[], &filtered)).unwrap();
    let addrs: Vec<u8> = lines(&truth)
        .flat_map(|l| [l.split(|&c| c == b'\t').next().unwrap(), b"\n"].concat())
        .collect();
    let out = run_ok(
        "ksym-resolve",
        &["--no-size", blob.to_str().unwrap()],
        &addrs,
    );
    let (mut same, mut total) = (0, 0);
    for (t, o) in lines(&truth).zip(lines(&out)) {
        total += 1;
        let perf = &t[17..];
        let ours = &o[19..];
        if perf == ours {
            same += 1;
            continue;
        }
        let split = |s: &[u8]| {
            let p = s.iter().rposition(|&c| c == b'+').unwrap();
            (s[..p].to_vec(), s[p..].to_vec())
        };
        let ((pn, po), (on, oo)) = (split(perf), split(ours));
        assert_eq!(po, oo, "offsets differ: {}", String::from_utf8_lossy(t));
        let a = String::from_utf8_lossy(&o[..16]).into_owned();
        let group_addr = {
            let off = u64::from_str_radix(
                po.strip_prefix(b"+0x")
                    .unwrap()
                    .iter()
                    .map(|&c| c as char)
                    .collect::<String>()
                    .as_str(),
                16,
            )
            .unwrap();
            format!("{:016x}", u64::from_str_radix(&a, 16).unwrap() - off)
        };
        let group = aliases(&kallsyms, &group_addr);
        assert!(
            group.contains(&pn.as_slice()) && group.contains(&on.as_slice()),
            "not an alias difference: {}",
            String::from_utf8_lossy(t)
        );
    }
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "{truth_file}: {same}/{total} equal to perf; the rest are alias choices"
    );
    Some((same, total))
}

#[test]
fn agrees_with_perf_on_perf_mix() {
    if let Some((same, total)) = perf_agreement("perf-mix.kernel-answers.tsv") {
        assert_eq!((same, total), (1448, 1450));
    }
}

#[test]
fn agrees_with_perf_on_system_wide_capture() {
    if let Some((same, total)) = perf_agreement("perf-script-kallsyms-6.18.kernel-truth.tsv") {
        assert_eq!(total, 57_897);
        assert!(same >= 57_880, "{same}");
    }
}

#[test]
fn perf_script_sample_is_rewritten_only_in_kernel_symbols() {
    let dir = scratch("perf-sample");
    let blob = dir.join("k.bin");
    let filtered = run_ok("ksym-filter", &[], &sample("kallsyms-6.18-sample.txt.xz"));
    std::fs::write(&blob, run_ok("ksym-pack", &[], &filtered)).unwrap();
    let script = sample("perf-mix.script-sample.txt.xz");
    let out = run_ok("ksym-resolve", &[blob.to_str().unwrap()], &script);
    let (a, b): (Vec<&[u8]>, Vec<&[u8]>) = (
        script.split(|&c| c == b'\n').collect(),
        out.split(|&c| c == b'\n').collect(),
    );
    assert_eq!(a.len(), b.len());
    let mut changed = 0;
    for (x, y) in a.iter().zip(&b) {
        if x != y {
            changed += 1;
            // Same address, same offset, same DSO: only an alias name differs.
            assert!(x.ends_with(b" ([kernel.kallsyms])") && y.ends_with(b" ([kernel.kallsyms])"));
            assert_eq!(x[..18], y[..18]);
            let off = |s: &[u8]| s[s.iter().rposition(|&c| c == b'+').unwrap()..].to_vec();
            assert_eq!(off(x), off(y));
        }
    }
    assert!(changed <= 2, "{changed} lines changed");
    assert!(script.len() > 100_000);
}
