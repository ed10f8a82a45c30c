//! ksym-resolve: maps a kallsyms blob (or reads a kallsyms text) and rewrites
//! address streams: bare addresses, perf script, oops/dmesg, bcc output.

use std::io;
use std::process::ExitCode;

use ksym::Kallsyms;
use ksym::blobfile::AlignedBlob;
use ksym::cli::{CliError, IN_BUF, main_with, open_input, parse_hex_arg, stdout_is_terminal};
use ksym::resolve::{ResolveOptions, Resolver, resolve_names};

const USAGE: &str = "usage: ksym-resolve [OPTIONS] BLOB [INPUT|-]...
       ksym-resolve [OPTIONS] --kallsyms FILE [INPUT|-]...
Reads hex addresses, perf script, oops/dmesg or bcc output; prints
`ADDR TYPE NAME+0xOFF/0xSIZE` for bare addresses, symbolizes kernel frames,
passes every other line through unchanged. BLOB is a v1 or v2 blob; with
source lines (ksym-pack --lines) bare addresses get `FILE:LINE` and their
inline chain, oops lines are decoded as decode_stacktrace.sh does.
      --no-size         print name+0xoff without /0xsize (as perf and bcc do)
      --json            one JSON object per address; other lines are dropped
      --inline          perf callchains: add a frame line per inlined function (blob with lines)
      --strip-prefix P  remove the build directory P from source paths
      --names           each input line is a name: print every symbol of it
      --offset SLIDE    KASLR: subtract SLIDE (hex) before lookup
      --kaslr-from-sym  learn the slide from the first [<ADDR>] func+0xoff or perf frame
      --stext ADDR      use ADDR as _stext instead of the blob's
      --etext ADDR      use ADDR as _etext (end of text) instead of the blob's
      --kallsyms FILE   resolve from a /proc/kallsyms text instead of a blob
      --loaded FILE     the traced machine's /proc/kallsyms: places module sections
                        for raw addresses (blob packed with --modules) and gives the slide
      --line-buffered   flush after every line (automatic on a terminal)
  -h, --help            this text";

struct Args {
    blob: Option<String>,
    kallsyms: Option<String>,
    inputs: Vec<String>,
    opts: ResolveOptions,
    stext: Option<u64>,
    etext: Option<u64>,
    names: bool,
}

fn parse_args() -> Result<Args, CliError> {
    use lexopt::prelude::*;
    let mut a = Args {
        blob: None,
        kallsyms: None,
        inputs: Vec::new(),
        opts: ResolveOptions {
            size: true,
            ..Default::default()
        },
        stext: None,
        etext: None,
        names: false,
    };
    let mut p = lexopt::Parser::from_env();
    while let Some(arg) = p.next()? {
        match arg {
            Long("no-size") => a.opts.size = false,
            Long("json") => a.opts.json = true,
            Long("inline") => a.opts.inline = true,
            Long("strip-prefix") => a.opts.strip_prefix = Some(p.value()?.string()?.into_bytes()),
            Long("line-buffered") => a.opts.line_buffered = true,
            Long("offset") => a.opts.slide = parse_hex_arg("--offset", p.value()?)?,
            Long("kaslr-from-sym") => a.opts.kaslr_from_sym = true,
            Long("stext") => a.stext = Some(parse_hex_arg("--stext", p.value()?)?),
            Long("etext") => a.etext = Some(parse_hex_arg("--etext", p.value()?)?),
            Long("kallsyms") => a.kallsyms = Some(p.value()?.string()?),
            Long("names") => a.names = true,
            Long("loaded") => {
                let path = p.value()?.string()?;
                let text = std::fs::read(&path).map_err(|e| CliError::input(&path, e))?;
                let list =
                    ksym::resolve::read_loaded(&text).map_err(|e| CliError::input(&path, e))?;
                a.opts.loaded = Some(list);
            }
            Short('h') | Long("help") => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            Value(v) if a.blob.is_none() && a.kallsyms.is_none() => a.blob = Some(v.string()?),
            Value(v) => a.inputs.push(v.string()?),
            _ => return Err(arg.unexpected().into()),
        }
    }
    if a.blob.is_none() && a.kallsyms.is_none() {
        return Err(CliError::Usage("missing BLOB (or --kallsyms FILE)".into()));
    }
    if a.inputs.is_empty() {
        a.inputs.push("-".into());
    }
    a.opts.line_buffered |= stdout_is_terminal();
    Ok(a)
}

fn run() -> Result<(), CliError> {
    let args = parse_args()?;
    // Read, never mapped: a blob rewritten under us must not kill us with
    // SIGBUS (README "Reading blobs").
    let (blob, source) = match (&args.kallsyms, &args.blob) {
        (Some(k), _) => {
            let text = std::fs::read(k).map_err(|e| CliError::input(k, e))?;
            let blob =
                ksym::resolve::pack_kallsyms_text(&text).map_err(|e| CliError::input(k, e))?;
            (blob, k)
        }
        (None, Some(b)) => {
            let blob = AlignedBlob::read_file(b.as_ref()).map_err(|e| CliError::input(b, e))?;
            (blob, b)
        }
        (None, None) => unreachable!("checked in parse_args"),
    };
    let map = Kallsyms::from_blob(blob.as_bytes(), args.stext, args.etext)
        .map_err(|e| CliError::input(source, e))?;
    if args.names {
        return names(&map, &args);
    }
    let mut resolver = Resolver::new(&map, args.opts.clone());
    let mut out = io::stdout().lock();
    for path in &args.inputs {
        resolver.run(open_input(path)?, &mut out)?;
    }
    let notes = resolver.stats().notes(&map, args.opts.slide);
    for note in notes.into_iter().chain(resolver.module_notes()) {
        eprintln!("ksym-resolve: {note}");
    }
    Ok(())
}

/// Reverse mode: each input line is a name; prints every symbol of that name.
fn names(map: &Kallsyms<'_>, args: &Args) -> Result<(), CliError> {
    let mut out = io::BufWriter::with_capacity(IN_BUF, io::stdout().lock());
    for path in &args.inputs {
        resolve_names(
            map,
            open_input(path)?,
            &mut out,
            args.opts.slide,
            args.opts.line_buffered,
        )?;
    }
    Ok(())
}

fn main() -> ExitCode {
    main_with("ksym-resolve", USAGE, run)
}
