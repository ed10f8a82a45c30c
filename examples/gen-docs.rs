//! Renders the tools' man pages and shell completions from their command
//! lines (`ksym::cli::spec`, the source `--help` prints from), by clap's
//! generators: clap describes the command lines here, lexopt still parses
//! them in the tools.
//!
//!     cargo run --release --example gen-docs -- DIR
//!
//! writes `DIR/man/ksym-{filter,tokens,pack,resolve}.1`, `DIR/man/ksym.5`
//! (the blob formats, a summary of docs/FORMAT.md), and
//! `DIR/complete/{NAME.bash,_NAME,NAME.fish}` for bash, zsh and fish.
//! scripts/package.sh runs it before `cargo deb`.

use std::fs;
use std::io;
use std::path::Path;

use clap::builder::PossibleValuesParser;
use clap::{Arg, ArgAction, Command, ValueHint};
use clap_complete::Shell;
use clap_mangen::Man;
use clap_mangen::roff::{Roff, bold, italic, roman};
use ksym::cli::spec::{TOOLS, Tool, Value};

/// The tool as a clap command, with exactly the spec's options: clap's own
/// `-h`/`-V` are off, the spec's are added like any other.
fn command(t: &Tool) -> Command {
    let usage: Vec<String> = t
        .synopsis
        .iter()
        .map(|s| format!("{} {s}", t.name))
        .collect();
    let mut c = Command::new(t.name)
        .version(env!("CARGO_PKG_VERSION"))
        .about(t.about)
        .long_about(t.description)
        .override_usage(usage.join("\n       "))
        .disable_help_flag(true)
        .disable_version_flag(true);
    for o in t.options {
        let mut a = Arg::new(o.long).long(o.long).help(o.help);
        if let Some(s) = o.short {
            a = a.short(s);
        }
        a = match o.value {
            None => a.action(ArgAction::SetTrue),
            Some((name, v)) => hint(a.value_name(name).action(ArgAction::Set), v),
        };
        c = c.arg(a);
    }
    for (i, op) in t.operands.iter().enumerate() {
        let mut a = Arg::new(op.name).value_name(op.name).index(i + 1);
        if op.many {
            a = a.num_args(0..).action(ArgAction::Append);
        }
        c = c.arg(hint(a, op.value));
    }
    c
}

fn hint(a: Arg, v: Value) -> Arg {
    match v {
        Value::File => a.value_hint(ValueHint::FilePath),
        Value::Dir => a.value_hint(ValueHint::DirPath),
        Value::Choice(words) => a.value_parser(PossibleValuesParser::new(words.iter().copied())),
        Value::Text => a.value_hint(ValueHint::Other),
    }
}

/// Sections every page ends with.
fn tail(r: &mut Roff, t: &Tool) {
    r.control("SH", ["EXIT STATUS"]);
    r.text([roman(
        "0 on success (also when a reader closes the pipe early); 1 on bad input or an I/O \
         error, the message naming the file and line or the blob's byte offset; 2 on a usage \
         error.",
    )]);
    if t.name == "ksym-resolve" || t.name == "ksym-pack" {
        r.control("SH", ["ENVIRONMENT"]);
        r.control("TP", []);
        r.text([bold("DEBUGINFOD_URLS")]);
        r.text([roman("debuginfod servers, as elfutils reads them.")]);
        if t.name == "ksym-resolve" {
            r.control("TP", []);
            r.text([bold("KSYM_STORE")]);
            r.text([roman("the store when no BLOB and no --store is given.")]);
        }
    }
    r.control("SH", ["SEE ALSO"]);
    let others: Vec<_> = TOOLS.iter().filter(|o| o.name != t.name).collect();
    let mut refs = Vec::new();
    for o in others {
        refs.push(bold(o.name));
        refs.push(roman("(1), "));
    }
    refs.extend([
        bold("ksym"),
        roman("(5), "),
        bold("nm"),
        roman("(1), "),
        bold("addr2line"),
        roman("(1), "),
        bold("perf-script"),
        roman("(1)"),
    ]);
    r.text(refs);
}

fn man_page(t: &Tool) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    Man::new(command(t)).manual("ksym").render(&mut out)?;
    let mut r = Roff::new();
    tail(&mut r, t);
    out.extend(r.to_roff().into_bytes());
    Ok(out)
}

/// ksym(5): what a blob is, pointing to FORMAT.md for the bytes.
fn formats_page() -> String {
    let v = env!("CARGO_PKG_VERSION");
    let v2 = ksym::blob::v2::layout::VERSION.to_string();
    let mut r = Roff::new();
    r.control("TH", ["KSYM", "5", "", &format!("ksym {v}"), "ksym"]);
    r.control("SH", ["NAME"]);
    r.text([roman("ksym - kallsyms blob formats v1 and v2")]);
    r.control("SH", ["DESCRIPTION"]);
    r.text([
        roman(
            "A ksym blob holds a kernel's text symbols (kallsyms) so that a kernel, or a tool \
         reading its traces, maps an address to ",
        ),
        italic("name"),
        roman(
            "+0xOFF/0xSIZE without parsing text and without copying: the reader works on the \
         bytes in place, with no allocation. ksym-pack(1) writes blobs, ksym-resolve(1) and \
         kernels read them. All integers are little-endian.",
        ),
    ]);
    r.control("SS", ["v1"]);
    r.text([roman(
        "The seed's format: num_syms; then the symbol addresses (u64, ascending), the offsets \
         of their name records (u32) and their name order (u32 seqs); the name records (type \
         byte, length, at most one token reference, raw bytes); the prefix-token table and its \
         index. Sections are padded to 8 bytes and the blob must be 8-byte aligned in memory. \
         A reader validates it whole at open.",
    )]);
    r.control("SS", [format!("v2 (format version {v2})").as_str()]);
    r.text([roman(
        "ksym's own: a header with a magic and a section directory, a CRC32C per section, \
         addresses packed in blocks of bit-packed deltas, names coded by byte-pair tokens, \
         symbol types as bits with exceptions, and optional sections for module names, the \
         kernel's release and build-id, the text bounds, source lines with inline frames \
         (ksym-pack --lines), and the modules' symbols and lines (ksym-pack --modules). Any \
         alignment.",
    )]);
    r.control("SS", ["Compressed files"]);
    r.text([roman(
        "A blob file the tools read may be one gzip member around either format (ksym-pack \
         --gzip; gzip -dc gives the blob back): they inflate it at open. A kernel's blob is \
         never compressed.",
    )]);
    r.control("SS", ["In a kernel image"]);
    r.text([roman(
        "A kernel reserves a zero-filled section (.ksym), links, then has ksym-pack \
         --patch-elf write the blob into it in place; the zeros after the blob are part of \
         the region and are checked to be zero.",
    )]);
    r.control("SH", ["FILES"]);
    r.text([roman(
        "/usr/share/doc/ksym/FORMAT.md: the byte-exact specification of both formats \
         (docs/FORMAT.md in the source).",
    )]);
    r.control("SH", ["SEE ALSO"]);
    r.text([
        bold("ksym-pack"),
        roman("(1), "),
        bold("ksym-resolve"),
        roman("(1), "),
        bold("ksym-filter"),
        roman("(1), "),
        bold("ksym-tokens"),
        roman("(1)"),
    ]);
    r.render()
}

fn main() -> io::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "target/assets".into());
    let dir = Path::new(&dir);
    let (man, complete) = (dir.join("man"), dir.join("complete"));
    fs::create_dir_all(&man)?;
    fs::create_dir_all(&complete)?;
    for t in TOOLS {
        fs::write(man.join(format!("{}.1", t.name)), man_page(t)?)?;
        for (shell, file) in [
            (Shell::Bash, format!("{}.bash", t.name)),
            (Shell::Zsh, format!("_{}", t.name)),
            (Shell::Fish, format!("{}.fish", t.name)),
        ] {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut command(t), t.name, &mut out);
            fs::write(complete.join(file), out)?;
        }
    }
    fs::write(man.join("ksym.5"), formats_page())?;
    Ok(())
}
