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
/// examples/kernel/src/symbols.rs whole, in one `rust` block.
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
    // The README sends kernel authors to the guide.
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(readme.contains("(docs/kernel.md)"));
}
