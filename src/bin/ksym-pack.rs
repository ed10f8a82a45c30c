//! ksym-pack: packs `ADDR TYPE NAME` lines into the zero-copy blob
//! (docs/FORMAT.md); `--check` validates a blob, `--dump` prints one.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ksym::blob::list::SymbolList;
use ksym::blob::v1::tokens::TokenStrategy;
use ksym::blob::v1::write::Layout;
use ksym::blob::v2::write::{V2Options, pack_v2};
use ksym::blobfile::AlignedBlob;
use ksym::cli::{
    CliError, IN_BUF, main_with, open_input, parse_build_id, replace_file, stdout_error,
    stdout_is_terminal, write_atomically,
};
use ksym::{Format, Kallsyms};

const USAGE: &str = "usage: ksym-pack [OPTIONS] [INPUT|-]
       ksym-pack --check BLOB
       ksym-pack --dump BLOB
Packs `ADDR TYPE NAME[\t[module]]` lines (ksym-filter's output) into a kallsyms blob.
  -o, --output FILE     write FILE atomically (temporary file + rename), not stdout
  -v, --verbose         print counts and section sizes on stderr
      --format v1|v2    v1: the seed's format (default); v2: compact, checksummed, with modules
      --tokens optimal|seed   v1 prefix-token strategy (default optimal)
      --release STR     v2: store the kernel release (uname -r)
      --build-id HEX    v2: store the kernel's build-id
      --lines ELF       v2: store source lines and inline frames from ELF's DWARF (vmlinux)
      --columns         with --lines: store column numbers too (bigger blob)
      --patch-elf ELF   write the blob into ELF's reserved section in place, zero-filling the rest
      --section NAME    the section --patch-elf fills (default .ksym)
      --check BLOB      validate a blob of either format; says what and where is wrong
      --dump BLOB       print a blob back as ADDR TYPE NAME[\t[module]] lines
  -h, --help            this text";

/// Writes the packed blob to a stream (either format).
type WriteBlob<'a> = dyn Fn(&mut dyn Write) -> io::Result<()> + 'a;

enum Mode {
    Pack {
        input: String,
        output: Option<PathBuf>,
        verbose: bool,
        strategy: TokenStrategy,
        format: Format,
        v2: Box<V2Options>,
        lines: Option<(PathBuf, bool)>,
        patch: Option<(PathBuf, String)>,
    },
    Check(PathBuf),
    Dump(PathBuf),
}

fn parse_args() -> Result<Mode, CliError> {
    use lexopt::prelude::*;
    let (mut input, mut output, mut verbose, mut strategy) =
        (None, None, false, TokenStrategy::default());
    let (mut format, mut v2) = (Format::V1, V2Options::default());
    let (mut lines, mut columns) = (None::<PathBuf>, false);
    let (mut patch, mut section) = (None::<PathBuf>, None::<String>);
    let mut p = lexopt::Parser::from_env();
    while let Some(arg) = p.next()? {
        match arg {
            Short('o') | Long("output") => output = Some(PathBuf::from(p.value()?)),
            Short('v') | Long("verbose") => verbose = true,
            Long("tokens") => strategy = p.value()?.parse()?,
            Long("format") => {
                format = match p.value()?.to_str() {
                    Some("v1") => Format::V1,
                    Some("v2") => Format::V2,
                    other => {
                        return Err(CliError::Usage(format!(
                            "--format: expected v1 or v2, got `{}`",
                            other.unwrap_or("?")
                        )));
                    }
                }
            }
            Long("release") => v2.release = p.value()?.string()?.into_bytes(),
            Long("build-id") => {
                let s = p.value()?.string()?;
                v2.build_id = parse_build_id(&s).ok_or_else(|| {
                    CliError::Usage(format!("--build-id: expected hex bytes, got `{s}`"))
                })?;
            }
            Long("lines") => lines = Some(p.value()?.into()),
            Long("columns") => columns = true,
            Long("patch-elf") => patch = Some(p.value()?.into()),
            Long("section") => section = Some(p.value()?.string()?),
            Long("check") => return Ok(Mode::Check(p.value()?.into())),
            Long("dump") => return Ok(Mode::Dump(p.value()?.into())),
            Short('h') | Long("help") => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            Value(v) if input.is_none() => input = Some(v.string()?),
            _ => return Err(arg.unexpected().into()),
        }
    }
    if format == Format::V1 && (!v2.release.is_empty() || !v2.build_id.is_empty()) {
        return Err(CliError::Usage(
            "--release and --build-id need --format v2 (v1 has no field for them)".into(),
        ));
    }
    if format == Format::V1 && lines.is_some() {
        return Err(CliError::Usage(
            "--lines needs --format v2 (v1 has no place for source lines)".into(),
        ));
    }
    if section.is_some() && patch.is_none() {
        return Err(CliError::Usage("--section needs --patch-elf ELF".into()));
    }
    if patch.is_some() && output.is_some() {
        return Err(CliError::Usage(
            "--patch-elf and -o both say where the blob goes; give one".into(),
        ));
    }
    if columns && lines.is_none() {
        return Err(CliError::Usage("--columns needs --lines ELF".into()));
    }
    Ok(Mode::Pack {
        lines: lines.map(|l| (l, columns)),
        patch: patch.map(|p| (p, section.unwrap_or_else(|| ".ksym".into()))),
        input: input.unwrap_or_else(|| "-".into()),
        output,
        verbose,
        strategy,
        format,
        v2: Box::new(v2),
    })
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

fn run() -> Result<(), CliError> {
    match parse_args()? {
        Mode::Check(path) => {
            let blob = open_blob(&path)?;
            let fail = |e| CliError::input(path.display(), e);
            let (k, padding) = Kallsyms::from_region(blob.as_bytes(), None, None).map_err(fail)?;
            k.verify().map_err(fail)?;
            println!(
                "{}: ok: {}{}",
                path.display(),
                ksym::blob::describe(&k),
                padding_note(padding)
            );
            Ok(())
        }
        Mode::Dump(path) => {
            let blob = open_blob(&path)?;
            let (k, padding) = Kallsyms::from_region(blob.as_bytes(), None, None)
                .map_err(|e| CliError::input(path.display(), e))?;
            if padding > 0 {
                eprintln!("ksym-pack: {}{}", path.display(), padding_note(padding));
            }
            let mut out = io::BufWriter::with_capacity(IN_BUF, io::stdout().lock());
            ksym::blob::dump(&k, &mut out).map_err(stdout_error)?;
            out.flush().map_err(stdout_error)
        }
        Mode::Pack {
            input,
            output,
            verbose,
            strategy,
            format,
            mut v2,
            lines,
            patch,
        } => {
            if output.is_none() && patch.is_none() && stdout_is_terminal() {
                return Err(CliError::Usage(
                    "refusing to write a binary blob to a terminal; use -o FILE or a pipe".into(),
                ));
            }
            let list = SymbolList::read_lines(open_input(&input)?)
                .map_err(|e| CliError::input(&input, e))?;
            let write: Box<WriteBlob<'_>> = match format {
                Format::V1 => {
                    let layout =
                        Layout::new(&list, strategy).map_err(|e| CliError::input(&input, e))?;
                    if verbose {
                        eprintln!("ksym-pack: {}", layout.describe());
                    }
                    Box::new(move |out| layout.write_to(out))
                }
                Format::V2 => {
                    if let Some((elf, columns)) = lines {
                        let addrs = (0..list.len()).map(|i| list.address(i));
                        let (table, desc) = ksym::dwarf::source_table_for(&elf, addrs)
                            .map_err(|e| CliError::input(&input, e))?;
                        if verbose {
                            eprintln!("ksym-pack: {desc}");
                        }
                        v2.lines = Some((table, columns));
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
}

/// `--patch-elf`: the blob into `section` of `elf`, atomically, with a
/// report on stderr that no address moved.
fn patch_elf(elf: &Path, section: &str, write: &WriteBlob<'_>) -> Result<(), CliError> {
    let mut blob = Vec::new();
    write(&mut blob).map_err(|e| CliError::input("blob", e))?;
    let image = std::fs::read(elf).map_err(|e| CliError::input(elf.display(), e))?;
    let p = ksym::elfpatch::patch_elf(&image, section, &blob)
        .map_err(|e| CliError::input(elf.display(), e))?;
    replace_file(elf, &p.image)?;
    eprintln!(
        "ksym-pack: {}: {}",
        elf.display(),
        p.report(section, blob.len())
    );
    Ok(())
}

fn main() -> ExitCode {
    main_with("ksym-pack", USAGE, run)
}
