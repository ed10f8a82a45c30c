//! What `ksym-pack` does once its arguments are parsed: read the symbol
//! list, build the blob in the chosen format (with source lines for v2),
//! and send it to stdout, a file (atomically) or an ELF image's reserved
//! section (`--patch-elf`); and `--check` / `--dump` of a blob or reserved
//! region. The binary only parses arguments. Errors are [`CliError`]s
//! naming the input and what was expected.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::blob::list::SymbolList;
use crate::blob::v1::tokens::TokenStrategy;
use crate::blob::v1::write::Layout;
use crate::blob::v2::write::{V2Options, pack_v2};
use crate::blob::{Format, Kallsyms};
use crate::blobfile::AlignedBlob;
use crate::cli::{
    CliError, IN_BUF, open_input, replace_file, stdout_error, stdout_is_terminal, write_atomically,
};

/// Writes the packed blob to a stream (either format).
type WriteBlob<'a> = dyn Fn(&mut dyn Write) -> io::Result<()> + 'a;

/// One packing run, as `ksym-pack`'s options describe it.
#[derive(Debug, Default)]
pub struct PackJob {
    /// The `ADDR TYPE NAME` list: a path, or `-` for stdin.
    pub input: String,
    /// `-o FILE`; `None` for stdout (or `--patch-elf`).
    pub output: Option<PathBuf>,
    /// `-v`: counts and section sizes on stderr.
    pub verbose: bool,
    /// v1's token strategy.
    pub strategy: TokenStrategy,
    /// The blob format (docs/FORMAT.md part I or II).
    pub format: Option<Format>,
    /// v2's identity (release, build-id).
    pub v2: V2Options,
    /// `--lines ELF` and `--columns`.
    pub lines: Option<(PathBuf, bool)>,
    /// `--patch-elf ELF` and its `--section` (docs/FORMAT.md §2.3).
    pub patch: Option<(PathBuf, String)>,
    /// `--modules DIR` and `--skip-bad-modules` (docs/FORMAT.md §16).
    pub modules: Option<(PathBuf, bool)>,
}

fn open_blob(path: &Path) -> Result<AlignedBlob, CliError> {
    AlignedBlob::read_file(path).map_err(|e| CliError::input(path.display(), e))
}

/// What `--check` and `--dump` say of a reserved region's zeros after the blob.
fn padding_note(padding: usize) -> String {
    match padding {
        0 => String::new(),
        n => format!("; followed by {n} bytes of zero padding (a reserved region)"),
    }
}

/// `ksym-pack --check PATH`: the blob (or reserved region) at `path`
/// passes every check of its format; prints what it holds.
///
/// Errors: the file cannot be read, or the first problem with its offset.
pub fn check(path: &Path) -> Result<(), CliError> {
    let blob = open_blob(path)?;
    let fail = |e| CliError::input(path.display(), e);
    let (k, padding) = Kallsyms::from_region(blob.as_bytes(), None, None).map_err(fail)?;
    k.verify().map_err(fail)?;
    println!(
        "{}: ok: {}{}",
        path.display(),
        crate::blob::describe(&k),
        padding_note(padding)
    );
    Ok(())
}

/// `ksym-pack --dump PATH`: the blob's symbols as `ADDR TYPE
/// NAME[\t[module]]` lines on stdout.
///
/// Errors: the file cannot be read or is not a blob, or stdout fails.
pub fn dump(path: &Path) -> Result<(), CliError> {
    let blob = open_blob(path)?;
    let (k, padding) = Kallsyms::from_region(blob.as_bytes(), None, None)
        .map_err(|e| CliError::input(path.display(), e))?;
    if padding > 0 {
        eprintln!("ksym-pack: {}{}", path.display(), padding_note(padding));
    }
    let mut out = io::BufWriter::with_capacity(IN_BUF, io::stdout().lock());
    crate::blob::dump(&k, &mut out).map_err(stdout_error)?;
    out.flush().map_err(stdout_error)
}

impl PackJob {
    /// Reads the list, packs it and writes the blob where the job says.
    ///
    /// Errors: a bad input line (with its number), a symbol the format
    /// refuses, unreadable DWARF, a blob that does not fit `--patch-elf`'s
    /// section, or an output that cannot be written; nothing is written then.
    pub fn run(self) -> Result<(), CliError> {
        let PackJob {
            input,
            output,
            verbose,
            strategy,
            format,
            mut v2,
            lines,
            patch,
            modules,
        } = self;
        if output.is_none() && patch.is_none() && stdout_is_terminal() {
            return Err(CliError::Usage(
                "refusing to write a binary blob to a terminal; use -o FILE or a pipe".into(),
            ));
        }
        let list =
            SymbolList::read_lines(open_input(&input)?).map_err(|e| CliError::input(&input, e))?;
        let write: Box<WriteBlob<'_>> = match format.unwrap_or(Format::V1) {
            Format::V1 => {
                let layout =
                    Layout::new(&list, strategy).map_err(|e| CliError::input(&input, e))?;
                if verbose {
                    eprintln!("ksym-pack: {}", layout.describe());
                }
                Box::new(move |out| layout.write_to(out))
            }
            Format::V2 => {
                // vmlinux's sweep is one thread; the modules use every core.
                let (vmlinux, mods) = rayon::join(
                    || {
                        lines.as_ref().map(|(elf, _)| {
                            let addrs = (0..list.len()).map(|i| list.address(i));
                            crate::dwarf::source_table_for(elf, addrs)
                        })
                    },
                    || {
                        modules.as_ref().map(|(dir, skip)| {
                            crate::kmod::read_modules(dir, lines.is_some(), *skip)
                        })
                    },
                );
                let columns = lines.as_ref().is_some_and(|l| l.1);
                if let Some(r) = vmlinux {
                    let (table, desc) = r.map_err(|e| CliError::input(&input, e))?;
                    if verbose {
                        eprintln!("ksym-pack: {desc}");
                    }
                    v2.lines = Some((table, columns));
                }
                if let Some(r) = mods {
                    let set = r.map_err(|e| CliError::input("--modules", e))?;
                    v2.module_space = Some(module_space(set, columns, verbose)?);
                }
                let packed = pack_v2(&list, &v2).map_err(|e| CliError::input(&input, e))?;
                if verbose {
                    eprintln!("ksym-pack: {}", packed.describe());
                }
                Box::new(move |out| out.write_all(&packed.blob))
            }
        };
        match (output, patch) {
            (_, Some((elf, section))) => patch_elf(&elf, &section, &*write),
            (Some(path), None) => write_atomically(&path, &*write),
            (None, None) => {
                let mut out = io::BufWriter::with_capacity(IN_BUF, io::stdout().lock());
                write(&mut out).map_err(stdout_error)?;
                out.flush().map_err(stdout_error)
            }
        }
    }
}

/// The `module_space` section (docs/FORMAT.md §16) of a module set, with
/// its skipped modules and notes on stderr.
fn module_space(
    set: crate::kmod::ModuleSet,
    columns: bool,
    verbose: bool,
) -> Result<Vec<u8>, CliError> {
    for e in &set.skipped {
        eprintln!("ksym-pack: skipped {e}");
    }
    for n in &set.notes {
        eprintln!("ksym-pack: note: {n}");
    }
    let opts = V2Options {
        lines: set.lines.map(|t| (t, columns)),
        ..V2Options::default()
    };
    let inner = pack_v2(&set.symbols, &opts).map_err(|e| CliError::input("--modules", e))?;
    let bytes =
        crate::blob::v2::module_space::write::encode_module_space(&set.entries, &inner.blob)
            .map_err(|e| CliError::input("--modules", e))?;
    if verbose {
        eprintln!(
            "ksym-pack: modules: {} modules ({} skipped), {} bytes of code; module_space {} bytes ({:.3} B per code byte); inner {}",
            set.entries.len(),
            set.skipped.len(),
            set.code_bytes,
            bytes.len(),
            bytes.len() as f64 / set.code_bytes.max(1) as f64,
            inner.describe()
        );
    }
    Ok(bytes)
}

/// `--patch-elf`: the blob into `section` of `elf`, atomically, with a
/// report on stderr that no address moved.
fn patch_elf(elf: &Path, section: &str, write: &WriteBlob<'_>) -> Result<(), CliError> {
    let mut blob = Vec::new();
    write(&mut blob).map_err(|e| CliError::input("blob", e))?;
    let image = std::fs::read(elf).map_err(|e| CliError::input(elf.display(), e))?;
    let p = crate::elfpatch::patch_elf(&image, section, &blob)
        .map_err(|e| CliError::input(elf.display(), e))?;
    replace_file(elf, &p.image)?;
    eprintln!(
        "ksym-pack: {}: {}",
        elf.display(),
        p.report(section, blob.len())
    );
    Ok(())
}
