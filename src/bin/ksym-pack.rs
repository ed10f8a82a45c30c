//! ksym-pack: packs `ADDR TYPE NAME` lines into the zero-copy blob
//! (docs/FORMAT.md); `--check` validates a blob, `--dump` prints one. It
//! parses arguments; `ksym::packjob` does the work.

use std::path::PathBuf;
use std::process::ExitCode;

use ksym::Format;
use ksym::blob::v1::tokens::TokenStrategy;
use ksym::blob::v2::write::V2Options;
use ksym::cli::spec::PACK;
use ksym::cli::{
    CliError, lines_without_elf, main_with, parse_build_id, parse_line_block, print_and_exit,
};
use ksym::packjob::PackJob;

enum Mode {
    Pack(Box<PackJob>),
    Check(PathBuf),
    Dump(PathBuf),
}

fn parse_args() -> Result<Mode, CliError> {
    use lexopt::prelude::*;
    let (mut input, mut output, mut verbose, mut strategy) =
        (None, None, false, TokenStrategy::default());
    let (mut format, mut v2) = (None, V2Options::default());
    let (mut lines, mut columns, mut discriminators) = (None::<PathBuf>, false, false);
    let (mut patch, mut section) = (None::<PathBuf>, None::<String>);
    let (mut modules, mut skip_bad) = (None::<PathBuf>, false);
    let (mut store, mut debuginfod) = (None::<PathBuf>, None);
    let (mut asm, mut gzip) = (false, false);
    let (mut elf, mut debug_dirs) = (Vec::<PathBuf>::new(), Vec::new());
    let mut trees = Vec::new();
    let mut p = lexopt::Parser::from_args(lines_without_elf(std::env::args_os().skip(1)));
    while let Some(arg) = p.next()? {
        match arg {
            Short('o') | Long("output") => output = Some(PathBuf::from(p.value()?)),
            Short('v') | Long("verbose") => verbose = true,
            Long("tokens") => strategy = p.value()?.parse()?,
            Long("format") => {
                format = match p.value()?.to_str() {
                    Some("v1") => Some(Format::V1),
                    Some("v2") => Some(Format::V2),
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
            Long("elf") => elf.push(p.value()?.into()),
            Long("elf-tree") => trees.push(PathBuf::from(p.value()?)),
            Long("debug-dir") => debug_dirs.push(p.value()?.into()),
            Long("lines") => lines = Some(p.value()?.into()),
            Long("columns") => columns = true,
            Long("discriminators") => discriminators = true,
            Long("line-block") => {
                v2.line_block_shift = Some(parse_line_block(&p.value()?.string()?)?);
            }
            Long("modules") => modules = Some(p.value()?.into()),
            Long("skip-bad-modules") => skip_bad = true,
            Long("store") => store = Some(p.value()?.into()),
            Long("debuginfod") => {
                let s = p.value()?.string()?;
                debuginfod = Some(parse_build_id(&s).ok_or_else(|| {
                    CliError::Usage(format!("--debuginfod: expected a hex build-id, got `{s}`"))
                })?);
            }
            Long("patch-elf") => patch = Some(p.value()?.into()),
            Long("section") => section = Some(p.value()?.string()?),
            Long("asm") => asm = true,
            Long("gzip") => gzip = true,
            Long("check") => return Ok(Mode::Check(p.value()?.into())),
            Long("dump") => return Ok(Mode::Dump(p.value()?.into())),
            Short('h') | Long("help") => print_and_exit(PACK.help()),
            Short('V') | Long("version") => print_and_exit(PACK.version()),
            Value(v) if input.is_none() => input = Some(v.string()?),
            _ => return Err(arg.unexpected().into()),
        }
    }
    let needs = |what: &str| Err(CliError::Usage(what.to_string()));

    if skip_bad && modules.is_none() {
        return needs("--skip-bad-modules needs --modules DIR");
    }
    if section.is_some() && patch.is_none() && !asm {
        return needs("--section needs --patch-elf ELF or --asm");
    }
    if columns && lines.is_none() && debuginfod.is_none() {
        return needs("--columns needs --lines ELF");
    }
    if v2.line_block_shift.is_some() && lines.is_none() && debuginfod.is_none() {
        return needs("--line-block needs --lines ELF");
    }
    let job = PackJob {
        lines: lines.map(|l| (l, columns)),
        modules: modules.map(|m| (m, skip_bad)),
        store,
        debuginfod,
        asm: asm.then(|| section.clone().unwrap_or_else(|| ".ksym".into())),
        patch: patch.map(|p| (p, section.unwrap_or_else(|| ".ksym".into()))),
        input: input.unwrap_or_else(|| "-".into()),
        output,
        verbose,
        strategy,
        format,
        v2,
        elf,
        elf_trees: trees,
        debug_dirs,
        discriminators,
        gzip,
    };
    job.check_options()?;
    Ok(Mode::Pack(Box::new(job)))
}

fn run() -> Result<(), CliError> {
    match parse_args()? {
        Mode::Check(path) => ksym::packjob::check(&path),
        Mode::Dump(path) => ksym::packjob::dump(&path),
        Mode::Pack(job) => {
            if job.reads_binaries() {
                // May start this program again, with huge pages for the heap.
                ksym::heap::use_huge_pages();
                if job.verbose && ksym::heap::huge_pages_in_effect() {
                    ksym::note!("ksym-pack: heap: GLIBC_TUNABLES={}", ksym::heap::TUNABLES);
                }
            }
            job.run()
        }
    }
}

fn main() -> ExitCode {
    main_with(&PACK, run)
}
