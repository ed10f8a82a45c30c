//! ksym-pack: packs `ADDR TYPE NAME` lines into the zero-copy blob
//! (docs/FORMAT.md); `--check` validates a blob, `--dump` prints one.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ksym::blobfile::MappedBlob;
use ksym::cli::{CliError, IN_BUF, main_with, open_input, stdout_error, stdout_is_terminal};
use ksym::hex;
use ksym::reader::KallsymsMapped;
use ksym::tokens::TokenStrategy;
use ksym::writer::{Layout, SymbolList};

const USAGE: &str = "usage: ksym-pack [-o FILE] [-v] [--tokens optimal|seed] [INPUT|-]
       ksym-pack --check BLOB
       ksym-pack --dump BLOB
Packs `ADDR TYPE NAME` lines (ksym-filter's output) into a kallsyms blob.";

enum Mode {
    Pack {
        input: String,
        output: Option<PathBuf>,
        verbose: bool,
        strategy: TokenStrategy,
    },
    Check(PathBuf),
    Dump(PathBuf),
}

fn parse_args() -> Result<Mode, CliError> {
    use lexopt::prelude::*;
    let (mut input, mut output, mut verbose, mut strategy) =
        (None, None, false, TokenStrategy::default());
    let mut p = lexopt::Parser::from_env();
    while let Some(arg) = p.next()? {
        match arg {
            Short('o') | Long("output") => output = Some(PathBuf::from(p.value()?)),
            Short('v') | Long("verbose") => verbose = true,
            Long("tokens") => strategy = p.value()?.parse()?,
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
    Ok(Mode::Pack {
        input: input.unwrap_or_else(|| "-".into()),
        output,
        verbose,
        strategy,
    })
}

fn open_blob(path: &Path) -> Result<MappedBlob, CliError> {
    MappedBlob::open(path).map_err(|e| CliError::input(path.display(), e))
}

fn run() -> Result<(), CliError> {
    match parse_args()? {
        Mode::Check(path) => {
            let blob = open_blob(&path)?;
            let m = KallsymsMapped::from_blob(blob.as_bytes(), None, None)
                .map_err(|e| CliError::input(path.display(), e))?;
            let s = m.section_sizes();
            println!(
                "{}: ok: {} symbols, {} tokens, {} bytes",
                path.display(),
                s.num_syms,
                s.tokens,
                s.total
            );
            Ok(())
        }
        Mode::Dump(path) => {
            let blob = open_blob(&path)?;
            let m = KallsymsMapped::from_blob(blob.as_bytes(), None, None)
                .map_err(|e| CliError::input(path.display(), e))?;
            let mut out = io::BufWriter::with_capacity(IN_BUF, io::stdout().lock());
            let mut line = Vec::with_capacity(256);
            for s in m.symbols() {
                line.clear();
                hex::push_u64_padded(&mut line, s.address);
                line.extend_from_slice(&[b' ', s.symbol_type, b' ']);
                s.name.extend_into(&mut line);
                line.push(b'\n');
                out.write_all(&line)?;
            }
            Ok(out.flush()?)
        }
        Mode::Pack {
            input,
            output,
            verbose,
            strategy,
        } => {
            if output.is_none() && stdout_is_terminal() {
                return Err(CliError::Usage(
                    "refusing to write a binary blob to a terminal; use -o FILE or a pipe".into(),
                ));
            }
            let list = SymbolList::read_lines(open_input(&input)?)
                .map_err(|e| CliError::input(&input, e))?;
            let layout = Layout::new(&list, strategy).map_err(|e| CliError::input(&input, e))?;
            if verbose {
                eprintln!("ksym-pack: {}", layout.describe());
            }
            match output {
                Some(path) => write_atomically(&path, &layout),
                None => {
                    let mut out = io::BufWriter::with_capacity(IN_BUF, io::stdout().lock());
                    layout.write_to(&mut out).map_err(stdout_error)?;
                    out.flush().map_err(stdout_error)
                }
            }
        }
    }
}

/// Writes to a temporary file beside `path` and renames it over `path`:
/// readers see the old file or the whole new one, never a part. No fsync: the
/// blob is a build output, which linkers and objcopy do not sync either.
fn write_atomically(path: &Path, layout: &Layout<'_>) -> Result<(), CliError> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let fail = |e: io::Error| CliError::input(path.display(), e);
    let mut b = tempfile::Builder::new();
    b.prefix(".ksym-pack.");
    // 0666 less the umask, as `> FILE` would give (tempfile's default is 0600).
    #[cfg(unix)]
    b.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let mut tmp = b.tempfile_in(dir).map_err(fail)?;
    let mut out = io::BufWriter::with_capacity(IN_BUF, tmp.as_file_mut());
    layout.write_to(&mut out).map_err(fail)?;
    out.flush().map_err(fail)?;
    drop(out);
    tmp.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}

fn main() -> ExitCode {
    main_with("ksym-pack", USAGE, run)
}
