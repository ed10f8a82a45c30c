//! The four tools' command lines as data: the one source that `--help`,
//! `--version`, the man pages and the shell completions are made from, so
//! they cannot drift apart. The binaries parse with lexopt and print
//! [`Tool::help`] and [`Tool::version`]; `examples/gen-docs.rs` renders the
//! man pages (`ksym-*(1)`, `ksym(5)`) and the bash, zsh and fish
//! completions from the same [`TOOLS`] (docs/development.md "Packages").

use std::fmt::Write as _;

/// What an option's value or an operand is: what a shell completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// A path to a file.
    File,
    /// A path to a directory.
    Dir,
    /// One of these words.
    Choice(&'static [&'static str]),
    /// Anything (a number, a hex string, a URL).
    Text,
}

/// One option.
#[derive(Debug, Clone, Copy)]
pub struct Opt {
    /// The one-letter form (`-o`), if any.
    pub short: Option<char>,
    /// The long form without its dashes (`output`).
    pub long: &'static str,
    /// The value's name in help (`FILE`) and its kind; `None` for a flag.
    pub value: Option<(&'static str, Value)>,
    /// One line of help.
    pub help: &'static str,
}

/// One operand (positional argument).
#[derive(Debug, Clone, Copy)]
pub struct Operand {
    /// Its name in the synopsis (`BLOB`).
    pub name: &'static str,
    /// What it is.
    pub value: Value,
    /// Whether it may be repeated.
    pub many: bool,
}

/// One tool's command line.
#[derive(Debug, Clone, Copy)]
pub struct Tool {
    /// The binary's name.
    pub name: &'static str,
    /// The synopsis lines, each without `usage: ` and the name.
    pub synopsis: &'static [&'static str],
    /// What it does, in one line (the man page's NAME).
    pub about: &'static str,
    /// What it does, in a paragraph (help and DESCRIPTION).
    pub description: &'static str,
    /// Its options, `-h` and `-V` last.
    pub options: &'static [Opt],
    /// Its operands, in order.
    pub operands: &'static [Operand],
    /// Whether `--version` names the blob formats (the tools that read or
    /// write blobs).
    pub formats: Option<&'static str>,
}

const fn flag(long: &'static str, help: &'static str) -> Opt {
    Opt {
        short: None,
        long,
        value: None,
        help,
    }
}

const fn with(long: &'static str, name: &'static str, v: Value, help: &'static str) -> Opt {
    Opt {
        short: None,
        long,
        value: Some((name, v)),
        help,
    }
}

const HELP: Opt = Opt {
    short: Some('h'),
    long: "help",
    value: None,
    help: "print this help and exit",
};
const VERSION: Opt = Opt {
    short: Some('V'),
    long: "version",
    value: None,
    help: "print the version (and the blob formats) and exit",
};
const INPUT: Operand = Operand {
    name: "INPUT",
    value: Value::File,
    many: false,
};
const TOKENS: &[&str] = &["optimal", "seed"];
/// `ksym-pack --line-block`'s values, the rows a block FORMAT.md §15.1 allows.
pub const LINE_BLOCKS: &[&str] = &["32", "64", "128", "256"];

/// `ksym-filter`.
pub const FILTER: Tool = Tool {
    name: "ksym-filter",
    synopsis: &["[OPTIONS] [FILE|-]..."],
    about: "keep the text symbols of nm, System.map or /proc/kallsyms lines",
    description: "Reads nm -n [-C], System.map or /proc/kallsyms lines (stdin without FILE), keeps \
        text symbols (T, t, and weak W inside the text bounds) and the text bounds (_stext, _etext, _sinittext, _einittext, whatever \
        their type), demangles Rust names, writes `ADDR TYPE NAME[\\t[module]]` lines.",
    options: &[
        flag("no-demangle", "keep Rust names as mangled"),
        with(
            "max-errors",
            "N",
            Value::Text,
            "report at most N bad lines on stderr (default 5)",
        ),
        HELP,
        VERSION,
    ],
    operands: &[Operand {
        name: "FILE",
        value: Value::File,
        many: true,
    }],
    formats: None,
};

/// `ksym-tokens`.
pub const TOKENS_TOOL: Tool = Tool {
    name: "ksym-tokens",
    synopsis: &["[--tokens optimal|seed] [--summary] [INPUT|-]"],
    about: "print the token table ksym-pack would choose",
    description: "Prints the v1 prefix-token table ksym-pack would choose: `ID USES LEN SAVED \
        TOKEN` per token, then a summary line.",
    options: &[
        with(
            "tokens",
            "optimal|seed",
            Value::Choice(TOKENS),
            "the strategy (default optimal)",
        ),
        flag(
            "summary",
            "only the summaries: both v1 strategies and the v2 blob",
        ),
        HELP,
        VERSION,
    ],
    operands: &[INPUT],
    formats: None,
};

/// `ksym-pack`.
pub const PACK: Tool = Tool {
    name: "ksym-pack",
    synopsis: &[
        "[OPTIONS] [INPUT|-]",
        "[OPTIONS] --elf BINARY",
        "--check BLOB",
        "--dump BLOB",
    ],
    about: "pack kernel symbols into a kallsyms blob; check or dump a blob",
    description: "Packs `ADDR TYPE NAME[\\t[module]]` lines (ksym-filter's output) into a \
        kallsyms blob, or (--elf) a binary's function symbols with their sizes. On Linux with \
        glibc, a job that reads ELF or DWARF files starts itself again with GLIBC_TUNABLES \
        giving malloc's heap huge pages (faster by a tenth or more), unless GLIBC_TUNABLES is \
        set already: set it empty to keep glibc's defaults.",
    options: &[
        Opt {
            short: Some('o'),
            long: "output",
            value: Some(("FILE", Value::File)),
            help: "write FILE atomically, not stdout; with --patch-elf: the patched copy of ELF",
        },
        Opt {
            short: Some('v'),
            long: "verbose",
            value: None,
            help: "print counts and section sizes on stderr",
        },
        with(
            "format",
            "v1|v2",
            Value::Choice(&["v1", "v2"]),
            "v1: the seed's format (default); v2: compact, checksummed, with modules",
        ),
        with(
            "tokens",
            "optimal|seed",
            Value::Choice(TOKENS),
            "v1 prefix-token strategy (default optimal)",
        ),
        with(
            "release",
            "STR",
            Value::Text,
            "v2: store the kernel release (uname -r)",
        ),
        with(
            "build-id",
            "HEX",
            Value::Text,
            "v2: store the kernel's build-id",
        ),
        with(
            "elf",
            "BINARY",
            Value::File,
            "v2: BINARY's functions and sizes (.symtab, debug file's, .dynsym); repeat with --store",
        ),
        with(
            "elf-tree",
            "DIR",
            Value::Dir,
            "with --store: every ELF file under DIR, one per build-id (a /usr/lib/debug)",
        ),
        with(
            "debug-dir",
            "DIR",
            Value::Dir,
            "look for debug files (build-id, debuglink) under DIR before /usr/lib/debug; repeatable",
        ),
        with(
            "lines",
            "ELF",
            Value::File,
            "v2: source lines and inline frames from ELF's DWARF; with --elf, ELF may be left out",
        ),
        flag(
            "columns",
            "with --lines: store column numbers too (bigger blob)",
        ),
        with(
            "line-block",
            "ROWS",
            Value::Choice(LINE_BLOCKS),
            "with --lines: rows a line-table block: 32, 64, 128 or 256 (default; the smallest blob)",
        ),
        flag(
            "gzip",
            "compress the blob file with gzip (smaller stores; the tools inflate it, a kernel cannot)",
        ),
        flag(
            "discriminators",
            "with --elf --lines: keep discriminators, which only oops lines print (kernel packs keep them)",
        ),
        with(
            "modules",
            "DIR",
            Value::Dir,
            "v2: add every *.ko[.xz|.zst|.gz] under DIR (symbols; lines with --lines)",
        ),
        flag(
            "skip-bad-modules",
            "with --modules: leave out modules that cannot be read, and list them",
        ),
        with(
            "store",
            "DIR",
            Value::Dir,
            "v2: add the blob to a store (DIR/buildid/ID/section/.ksym, release list)",
        ),
        with(
            "debuginfod",
            "ID",
            Value::Text,
            "v2: symbols and lines from build-id ID's ELF, fetched from DEBUGINFOD_URLS",
        ),
        with(
            "patch-elf",
            "ELF",
            Value::File,
            "fill ELF's reserved section (in place, or a copy: -o); _etext from ELF when INPUT has none",
        ),
        with(
            "section",
            "NAME",
            Value::Text,
            "the section --patch-elf fills, or --asm writes (default .ksym)",
        ),
        flag(
            "asm",
            "write assembler source for a second link: .byte lines between ksym_blob and ksym_blob_end",
        ),
        with(
            "check",
            "BLOB",
            Value::File,
            "validate a blob of either format; says what and where is wrong",
        ),
        with(
            "dump",
            "BLOB",
            Value::File,
            "print a blob back as ADDR TYPE NAME[\\t[module]] lines",
        ),
        HELP,
        VERSION,
    ],
    operands: &[INPUT],
    formats: Some("writes and reads"),
};

/// `ksym-resolve`.
pub const RESOLVE: Tool = Tool {
    name: "ksym-resolve",
    synopsis: &[
        "[OPTIONS] BLOB [INPUT|-]...",
        "[OPTIONS] --kallsyms FILE [INPUT|-]...",
        "[OPTIONS] --perf-map FILE [INPUT|-]...",
        "[OPTIONS] --store DIR|URL [INPUT|-]...",
    ],
    about: "symbolize kernel addresses, traces and crash reports",
    description: "Reads hex addresses, perf script, kernel logs (dmesg, journalctl, syslog, \
        consoles, any architecture) or bcc output; prints `ADDR TYPE NAME+0xOFF/0xSIZE` for bare \
        addresses, symbolizes kernel frames, checks every func+0xOFF/0xSIZE, disassembles Code: \
        lines as decodecode does, and passes every other line through unchanged. BLOB is a v1 or \
        v2 blob, plain or gzip-compressed (ksym-pack --gzip); with source lines (ksym-pack \
        --lines) bare addresses get `FILE:LINE` and their inline chain, oops lines are decoded as decode_stacktrace.sh does. With --store, perf \
        callchain frames of user-space binaries (`ADDR (PATH)`, perf's file offset), sanitizer \
        frames (`(PATH+0xOFF)`) and glibc backtraces (`PATH(+0xOFF)`) are named by the blob of \
        PATH's build-id (ksym-pack --store --elf), the kernel's user-space fault reports \
        (`segfault at ... in NAME[...]`) by the blob the store lists under NAME; with --maps too, a process's runtime \
        addresses (bare, perf `-F ip,sym`, bpftrace's `ADDR 0xADDR ([unknown])`, bcc's) by the \
        blob of the binary mapped there. With --perf-map, a JIT's frames \
        (`ADDR [unknown] (/tmp/perf-PID.map)`) and bare addresses are named from its perf map.",
    options: &[
        flag(
            "no-size",
            "print name+0xoff without /0xsize (as perf and bcc do)",
        ),
        flag(
            "json",
            "one JSON object per reference and Code: line; other lines are dropped",
        ),
        with(
            "arch",
            "ARCH",
            Value::Choice(&["x86_64", "arm64", "arm", "riscv64"]),
            "Code: lines are x86_64, arm64, arm or riscv64 (default: from the report)",
        ),
        flag(
            "inline",
            "perf callchains: a line per inlined function (blob with lines; --store: local files get lines)",
        ),
        with(
            "strip-prefix",
            "P",
            Value::Dir,
            "remove the build directory P from source paths",
        ),
        flag(
            "names",
            "each input line is a name: print every symbol of it",
        ),
        with(
            "offset",
            "SLIDE",
            Value::Text,
            "KASLR: subtract SLIDE (hex) before lookup",
        ),
        flag(
            "kaslr-from-sym",
            "learn the slide from the first [<ADDR>] func+0xoff or perf frame",
        ),
        with(
            "stext",
            "ADDR",
            Value::Text,
            "use ADDR as _stext instead of the blob's",
        ),
        with(
            "etext",
            "ADDR",
            Value::Text,
            "use ADDR as _etext (end of text) instead of the blob's",
        ),
        with(
            "kallsyms",
            "FILE",
            Value::File,
            "resolve from a /proc/kallsyms text instead of a blob",
        ),
        with(
            "perf-map",
            "FILE",
            Value::File,
            "resolve a JIT's frames from its /tmp/perf-PID.map instead of a blob; with --store, repeatable",
        ),
        with(
            "store",
            "DIR|URL",
            Value::Dir,
            "each trace's kernel and each perf frame's binary by their blobs in a store (or KSYM_STORE)",
        ),
        with(
            "build-id",
            "HEX",
            Value::Text,
            "with --store: the kernel of every input, by build-id",
        ),
        with(
            "release",
            "R",
            Value::Text,
            "with --store: the kernel of every input, by release",
        ),
        with(
            "build-ids",
            "FILE",
            Value::File,
            "with --store: perf buildid-list's output, the build-id of each binary perf names",
        ),
        with(
            "loaded",
            "FILE",
            Value::File,
            "the traced machine's /proc/kallsyms: places modules (--modules blob), gives the slide",
        ),
        with(
            "maps",
            "FILE",
            Value::File,
            "a process's /proc/PID/maps: runtime addresses of the blob's binary (--store: of every binary)",
        ),
        with(
            "dso",
            "NAME",
            Value::Text,
            "with --maps and a BLOB: the binary's mappings are those of path or file name NAME",
        ),
        flag(
            "line-buffered",
            "flush after every line (automatic on a terminal)",
        ),
        HELP,
        VERSION,
    ],
    operands: &[
        Operand {
            name: "BLOB",
            value: Value::File,
            many: false,
        },
        Operand {
            name: "INPUT",
            value: Value::File,
            many: true,
        },
    ],
    formats: Some("reads"),
};

/// Every tool, in pipeline order.
pub const TOOLS: [&Tool; 4] = [&FILTER, &TOKENS_TOOL, &PACK, &RESOLVE];

/// The column where option help starts in `--help`.
const HELP_COLUMN: usize = 24;

impl Opt {
    /// `-o, --output FILE` / `    --json`: the option as help and the man
    /// page show it.
    pub fn spelling(&self) -> String {
        let mut s = match self.short {
            Some(c) => format!("-{c}, --{}", self.long),
            None => format!("    --{}", self.long),
        };
        if let Some((name, _)) = self.value {
            s.push(' ');
            s.push_str(name);
        }
        s
    }
}

impl Tool {
    /// The `--help` text: synopsis, description (wrapped at 80 columns),
    /// one line per option. No trailing newline.
    pub fn help(&self) -> String {
        let mut s = String::new();
        for (i, line) in self.synopsis.iter().enumerate() {
            let lead = if i == 0 { "usage: " } else { "       " };
            let _ = writeln!(s, "{lead}{} {line}", self.name);
        }
        wrap(&mut s, self.description, 80);
        for o in self.options {
            let left = format!("  {}", o.spelling());
            let pad = if left.len() < HELP_COLUMN - 1 {
                HELP_COLUMN - left.len()
            } else {
                2
            };
            let _ = writeln!(s, "{left}{:pad$}{}", "", o.help);
        }
        s.pop();
        s
    }

    /// The `--version` text: `NAME VERSION`, and for the tools that read
    /// or write blobs a second line naming the formats (docs/FORMAT.md).
    pub fn version(&self) -> String {
        let mut s = format!("{} {}", self.name, env!("CARGO_PKG_VERSION"));
        if let Some(verb) = self.formats {
            let _ = write!(
                s,
                "\nblob formats it {verb}: v1 (docs/FORMAT.md part I), v2 version {} (part II)",
                crate::blob::v2::layout::VERSION
            );
        }
        s
    }
}

/// Appends `text` wrapped at `width` columns, then a newline.
fn wrap(s: &mut String, text: &str, width: usize) {
    let mut col = 0;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if col > 0 && col + 1 + word.len() > width {
            s.push('\n');
            col = 0;
        }
        if col > 0 {
            s.push(' ');
            col += 1;
        }
        s.push_str(word);
        col += word.len();
    }
    s.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_lists_every_option_once_and_aligns_them() {
        for t in TOOLS {
            let h = t.help();
            assert!(h.starts_with(&format!("usage: {} ", t.name)));
            for o in t.options {
                let word = format!("--{}", o.long);
                let spelled = o.spelling();
                let lines: Vec<&str> = h
                    .lines()
                    .filter(|l| {
                        l.trim_start()
                            .strip_prefix(spelled.trim_start())
                            .is_some_and(|r| r.starts_with(' '))
                    })
                    .collect();
                assert_eq!(lines.len(), 1, "{}: {word}", t.name);
                assert!(lines[0].ends_with(o.help), "{}: {word}", t.name);
            }
            assert!(h.lines().all(|l| l.len() <= 120), "{}", t.name);
        }
    }

    #[test]
    fn version_names_the_formats_where_blobs_are_read() {
        assert_eq!(
            FILTER.version(),
            format!("ksym-filter {}", env!("CARGO_PKG_VERSION"))
        );
        let v = RESOLVE.version();
        assert!(v.contains("reads: v1") && v.contains("v2 version"), "{v}");
    }
}
