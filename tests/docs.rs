//! `--version`, `--help`, the man pages and the completions agree: they
//! come from one source (src/cli/spec.rs), and these tests check what
//! reaches a user. The man pages and completions are rendered by
//! `examples/gen-docs.rs` into a temporary directory; groff checks the
//! pages, bash itself (on a pseudo-terminal) drives the completion.
mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use ksym::cli::spec::TOOLS;

/// The rendered pages and completions, once per test binary.
fn assets() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("ksym-docs-{}", std::process::id()));
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let st = Command::new(cargo)
            .args(["run", "--release", "--quiet", "--example", "gen-docs", "--"])
            .arg(&dir)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("cargo");
        assert!(st.success(), "gen-docs failed");
        dir
    })
}

fn bin(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("target/release/{name}"))
}

fn run(name: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin(name))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("tool");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// `-x` and `--long` words at the start of option lines.
fn options_in_help(help: &str) -> BTreeSet<String> {
    help.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
        .flat_map(|l| {
            l.split_whitespace()
                .take(2)
                .map(|w| w.trim_end_matches(',').to_string())
                .filter(|w| w.starts_with('-'))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Options as the page spells them: `\-x` and `\-\-long` at the start of
/// a tagged paragraph's tag.
fn options_in_man(page: &str) -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    let mut lines = page.lines();
    while let Some(l) = lines.next() {
        if l == ".TP" {
            let tag = lines.next().unwrap_or("").replace("\\-", "-");
            let tag = tag
                .replace("\\fB", "")
                .replace("\\fR", "")
                .replace("\\fI", "");
            for w in tag.split(['|', ' ', ',', '=', '[', ']']) {
                if w.starts_with('-') && w.len() > 1 {
                    set.insert(w.to_string());
                }
            }
        }
    }
    set
}

#[test]
fn version_names_the_crate_and_the_blob_formats() {
    for t in TOOLS {
        for flag in ["-V", "--version"] {
            let (code, out, _) = run(t.name, &[flag]);
            assert_eq!(code, 0, "{} {flag}", t.name);
            let first = out.lines().next().unwrap_or("");
            assert_eq!(first, format!("{} {}", t.name, env!("CARGO_PKG_VERSION")));
        }
    }
    let (_, out, _) = run("ksym-pack", &["--version"]);
    let v2 = ksym::blob::v2::layout::VERSION;
    assert!(
        out.contains("writes and reads: v1") && out.contains(&format!("v2 version {v2}")),
        "{out}"
    );
    let (_, out, _) = run("ksym-resolve", &["-V"]);
    assert!(out.contains("reads: v1"), "{out}");
}

#[test]
fn every_option_in_help_is_in_the_man_page_and_back() {
    for t in TOOLS {
        let (code, help, _) = run(t.name, &["--help"]);
        assert_eq!(code, 0);
        let page = std::fs::read_to_string(assets().join(format!("man/{}.1", t.name))).unwrap();
        let (h, m) = (options_in_help(&help), options_in_man(&page));
        assert!(h.len() >= 4, "{}: {h:?}", t.name);
        assert_eq!(h, m, "{}: --help against {}.1", t.name, t.name);
    }
}

#[test]
fn groff_renders_every_page_without_a_warning() {
    if Command::new("groff").arg("--version").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "CI installs groff");
        eprintln!("SKIPPED: no groff");
        return;
    }
    let mut pages: Vec<String> = TOOLS.iter().map(|t| format!("{}.1", t.name)).collect();
    pages.push("ksym.5".into());
    for p in pages {
        let out = Command::new("groff")
            .args(["-man", "-ww", "-z"])
            .arg(assets().join("man").join(&p))
            .output()
            .unwrap();
        assert!(out.status.success(), "{p}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{p}");
    }
}

/// The parser knows every option the spec lists: given one (with a value
/// where it takes one), no tool answers that the option is unknown.
#[test]
fn the_parsers_accept_every_option_of_the_spec() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let missing = missing.to_str().unwrap();
    for t in TOOLS {
        for o in t.options {
            let long = format!("--{}", o.long);
            let mut args = vec![long.as_str()];
            if let Some((_, v)) = o.value {
                args.push(match v {
                    ksym::cli::spec::Value::Choice(words) => words[0],
                    _ => missing,
                });
            }
            let (_, _, err) = run(t.name, &args);
            assert!(
                !err.contains("invalid option") && !err.contains("unexpected argument"),
                "{} {args:?}: {err}",
                t.name
            );
        }
    }
}

/// bash completes options and files for ksym-resolve, driven on a
/// pseudo-terminal as a user's TAB drives it.
#[test]
fn bash_completes_options_and_blob_files() {
    if Command::new("bash").arg("--version").output().is_err()
        || Command::new("python3").arg("--version").output().is_err()
    {
        eprintln!("SKIPPED: no bash or python3");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("vmlinux-6.1.bin"), b"").unwrap();
    let script = assets().join("complete/ksym-resolve.bash");
    // python3's pty: bash -i reads keys from a terminal and prints what
    // completion shows; the screen is what a user would see.
    let driver = r#"
import os, pty, sys, time, select
script, cwd = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    os.chdir(cwd)
    os.environ["TERM"] = "dumb"
    os.execvp("bash", ["bash", "--norc", "--noprofile", "-i"])
def drain(wait):
    out, end = b"", time.time() + wait
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                out += os.read(fd, 4096)
            except OSError:
                break
    return out.decode(errors="replace")
os.write(fd, b"PS1='$ '; bind 'set show-all-if-ambiguous on'; source " + script.encode() + b"\n")
drain(1.5)
os.write(fd, b"ksym-resolve --st\t")
a = drain(1.5)
os.write(fd, b"\x15ksym-resolve vml\t")
b = drain(1.5)
os.write(fd, b"\x15exit\n")
drain(0.5)
print("OPTIONS:" + a.replace("\r", " ").replace("\n", " "))
print("FILES:" + b.replace("\r", " ").replace("\n", " "))
"#;
    let out = Command::new("python3")
        .args(["-c", driver])
        .arg(&script)
        .arg(dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let options = text
        .lines()
        .find(|l| l.starts_with("OPTIONS:"))
        .unwrap_or("");
    for want in ["--stext", "--store", "--strip-prefix"] {
        assert!(options.contains(want), "{want} not offered: {text}");
    }
    assert!(!options.contains("--json"), "{text}");
    let files = text.lines().find(|l| l.starts_with("FILES:")).unwrap_or("");
    assert!(
        files.contains("vmlinux-6.1.bin"),
        "BLOB not completed: {text}"
    );
}

/// The kernel guide's code is the code the example kernel builds (and
/// tests/kernel_demo.rs boots with LTO and without): docs/kernel.md quotes
/// examples/kernel/src/symbols.rs whole, in one `rust` block, and
/// examples/kernel/src/cfi.rs in another.
#[test]
fn the_kernel_guide_quotes_the_file_the_example_kernel_builds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let guide = std::fs::read_to_string(root.join("docs/kernel.md")).unwrap();
    let file = std::fs::read_to_string(root.join("examples/kernel/src/symbols.rs")).unwrap();
    let blocks: Vec<&str> = guide
        .split("```rust\n")
        .skip(1)
        .filter_map(|b| b.split_once("```\n").map(|(code, _)| code))
        .collect();
    assert!(
        blocks.contains(&file.as_str()),
        "docs/kernel.md has no rust block equal to examples/kernel/src/symbols.rs"
    );
    // Step 3's DWARF CFI walk, whole too.
    let cfi = std::fs::read_to_string(root.join("examples/kernel/src/cfi.rs")).unwrap();
    assert!(
        blocks.contains(&cfi.as_str()),
        "docs/kernel.md has no rust block equal to examples/kernel/src/cfi.rs"
    );
    // The cargo runner (tests/kernel_runner.rs runs it), indented in a list.
    let runner = std::fs::read_to_string(root.join("examples/kernel/run.sh")).unwrap();
    let indented: String = runner
        .lines()
        .map(|l| {
            if l.is_empty() {
                "\n".to_string()
            } else {
                format!("  {l}\n")
            }
        })
        .collect();
    assert!(
        guide.contains(&indented),
        "docs/kernel.md does not quote examples/kernel/run.sh"
    );
    // The README sends kernel authors to the guide, and its abridged
    // snippet is lines of the same file: whitespace and a trailing comma
    // aside, each line of its rust block (but comments) is in it.
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(readme.contains("(docs/kernel.md)"));
    let squeeze = |s: &str| -> String {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        s.replace(",)", ")")
    };
    let file =
        squeeze(&std::fs::read_to_string(root.join("examples/kernel/src/symbols.rs")).unwrap());
    let block = readme
        .split("```rust\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("README has a rust block");
    for line in block.lines().filter(|l| !l.trim_start().starts_with("//")) {
        assert!(
            file.contains(&squeeze(line)),
            "README's rust line is not in symbols.rs: {line}"
        );
    }
}

/// The README and every guide under docs/.
fn guides(root: &Path) -> Vec<(String, String)> {
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
        .into_iter()
        .map(|p| {
            let name = p.strip_prefix(root).unwrap().display().to_string();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

/// `--long` words in `s`, as `--` followed by lower-case letters, digits
/// and `-`.
fn long_options(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(i) = rest.find("--") {
        let after = &rest[i + 2..];
        let n = after
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
            .unwrap_or(after.len());
        let before = rest[..i].chars().next_back();
        // `--st<TAB>`: a completion being typed, not an option.
        let typing = after[n..].starts_with('<');
        if n > 0
            && !typing
            && after.as_bytes()[0].is_ascii_lowercase()
            && !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            out.push(&rest[i..i + 2 + n]);
        }
        rest = &after[n..];
    }
    out
}

/// Options of other programs that the README and guides name beside
/// ksym's (cargo, perf, LLVM, binutils, dmesg, apt, valgrind).
const OTHER_PROGRAMS_OPTIONS: &[&str] = &[
    "--inlines",
    "--convert",
    "--header",
    "--show-mmap-events",
    "--buildid-mmap",
    "--call-graph",
    "--path",
    "--no-default-features",
    "--features",
    "--bin",
    "--release",
    "--profile",
    "--target",
    "--lib",
    "--list",
    "--dry-run",
    "--example",
    "--fsys-tarfile",
    "--add-section",
    "--remap-path-prefix",
    "--nocapture",
    "--test",
    "--target-dir",
    "--locked",
    "--quiet",
    "--output-style",
    "--inline",
    "--debug-line",
    "--out-file",
    "--address",
    "--obj",
    "--package",
    "--no-show-raw-insn",
    "--print-imm-hex",
    "--only-section",
    "--fair-sched",
];

/// Paths of the Linux tree that the guides name (its scripts our output is
/// compared with).
const LINUX_PATHS: &[&str] = &[
    "scripts/decode_stacktrace.sh",
    "scripts/decodecode",
    "scripts/kallsyms",
];

/// Everything the README and the guides tell a user to type exists: each
/// `ksym-TOOL` command line uses only that tool's options, each other
/// `--option` is one of some tool's (or a named other program's), and each
/// repository path (`scripts/…`, `docs/…`, `tests/…`, `src/…`,
/// `examples/…`, `ksym-blob/…`, `benches/…`, `fuzz/…`) is there. Man pages
/// hold every option (the test above), so the guides need not list them.
#[test]
fn the_readme_and_guides_name_only_what_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tool_opts = |name: &str| -> BTreeSet<String> {
        let t = TOOLS.iter().find(|t| t.name == name).unwrap();
        let mut s: BTreeSet<String> = t.options.iter().map(|o| format!("--{}", o.long)).collect();
        s.extend(["--help", "--version"].map(String::from));
        s
    };
    let all: BTreeSet<String> = TOOLS.iter().flat_map(|t| tool_opts(t.name)).collect();
    let mut wrong = Vec::new();
    for (file, text) in guides(root) {
        for (n, line) in text.lines().enumerate() {
            let at = format!("{file}:{}", n + 1);
            // A command: from `ksym-TOOL` to the end of the line, a pipe,
            // a backtick or a parenthesis.
            let mut rest = line;
            while let Some(i) = rest.find("ksym-") {
                let cmd = &rest[i..];
                let name_len = cmd
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                    .unwrap_or(cmd.len());
                let name = &cmd[..name_len];
                let before = &line[..line.len() - cmd.len()];
                rest = &cmd[name_len..];
                // `--bin ksym-pack`: the tool is cargo's argument here.
                if !TOOLS.iter().any(|t| t.name == name) || before.ends_with("--bin ") {
                    continue;
                }
                let end = rest.find(['|', '`', '(', ')', ';']).unwrap_or(rest.len());
                let opts = tool_opts(name);
                for o in long_options(&rest[..end]) {
                    if !opts.contains(o) {
                        wrong.push(format!("{at}: {name} has no option {o}"));
                    }
                }
            }
            for o in long_options(line) {
                if !all.contains(o) && !OTHER_PROGRAMS_OPTIONS.contains(&o) {
                    wrong.push(format!("{at}: no tool has {o}"));
                }
            }
            for p in repo_paths(line) {
                // `src/main.rs:94`: a source location the example kernel
                // printed, relative to its own crate.
                let location = line.contains(&format!("{p}:")) && p.ends_with(".rs");
                if !location && !LINUX_PATHS.contains(&p.as_str()) && !path_exists(root, &p) {
                    wrong.push(format!("{at}: no such path {p}"));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Words of `line` that start with one of the repository's top folders,
/// brace lists expanded (`src/{a,b}.rs`), trailing punctuation dropped.
fn repo_paths(line: &str) -> Vec<String> {
    const ROOTS: &[&str] = &[
        "scripts/",
        "docs/",
        "tests/",
        "src/",
        "examples/",
        "ksym-blob/",
        "benches/",
        "fuzz/",
        ".ci/",
    ];
    // Commas inside braces belong to the word.
    let mut depth = 0;
    let line: String = line
        .chars()
        .map(|c| {
            depth += i32::from(c == '{') - i32::from(c == '}');
            if c == ',' && depth > 0 { '\u{1}' } else { c }
        })
        .collect();
    let mut out = Vec::new();
    for word in line.split(|c: char| c.is_whitespace() || "`\"'(),;:<>[]".contains(c)) {
        let starts = ROOTS.iter().any(|r| word.starts_with(r));
        let inside = word
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '.');
        if !starts || !inside {
            continue;
        }
        let w = word.trim_end_matches(['.', ',']);
        match (w.find('{'), w.find('}')) {
            (Some(a), Some(b)) if a < b => {
                for alt in w[a + 1..b].split('\u{1}') {
                    out.push(format!("{}{alt}{}", &w[..a], &w[b + 1..]));
                }
            }
            _ => out.push(w.to_string()),
        }
    }
    out
}

/// `p` exists under `root`; a trailing `*` matches any file of that
/// prefix, and `…` or a placeholder in capitals (`DIR`, `FILE`) is no path.
fn path_exists(root: &Path, p: &str) -> bool {
    if p.contains('…')
        || p.split('/')
            .any(|c| c.len() > 1 && c.chars().all(|c| c.is_ascii_uppercase()))
    {
        return true;
    }
    match p.strip_suffix('*') {
        Some(prefix) => {
            let full = root.join(prefix);
            let (dir, stem) = (
                full.parent().unwrap(),
                full.file_name().unwrap().to_string_lossy(),
            );
            std::fs::read_dir(dir).is_ok_and(|mut d| {
                d.any(|e| e.unwrap().file_name().to_string_lossy().starts_with(&*stem))
            })
        }
        None => root.join(p).exists(),
    }
}
