//! ksym-resolve: maps a kallsyms blob and rewrites address streams (bare
//! addresses, perf script output) with `name+0xoff/0xsize`.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use ksym::blobfile::MappedBlob;
use ksym::cli::{CliError, IN_BUF, main_with, open_input, parse_hex_arg, stdout_is_terminal};
use ksym::hex;
use ksym::reader::KallsymsMapped;
use ksym::resolve::{ResolveOptions, Resolver};

const USAGE: &str = "usage: ksym-resolve [OPTIONS] BLOB [INPUT|-]...
Options: --no-size  --offset SLIDE  --stext ADDR  --etext ADDR  --line-buffered
         --names (NAME lines in, `ADDR TYPE NAME` out, every symbol of that name)
Reads hex addresses or `perf script` output; prints `ADDR TYPE NAME+0xOFF/0xSIZE`
for addresses, re-symbolizes kernel frames, passes every other line through.";

struct Args {
    blob: PathBuf,
    inputs: Vec<String>,
    opts: ResolveOptions,
    stext: Option<u64>,
    etext: Option<u64>,
    names: bool,
}

fn parse_args() -> Result<Args, CliError> {
    use lexopt::prelude::*;
    let mut opts = ResolveOptions {
        size: true,
        ..Default::default()
    };
    let (mut stext, mut etext, mut names, mut pos) = (None, None, false, Vec::new());
    let mut p = lexopt::Parser::from_env();
    while let Some(arg) = p.next()? {
        match arg {
            Long("no-size") => opts.size = false,
            Long("line-buffered") => opts.line_buffered = true,
            Long("offset") => opts.slide = parse_hex_arg("--offset", p.value()?)?,
            Long("stext") => stext = Some(parse_hex_arg("--stext", p.value()?)?),
            Long("etext") => etext = Some(parse_hex_arg("--etext", p.value()?)?),
            Long("names") => names = true,
            Short('h') | Long("help") => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            Value(v) => pos.push(v.string()?),
            _ => return Err(arg.unexpected().into()),
        }
    }
    let mut pos = pos.into_iter();
    let blob = pos
        .next()
        .ok_or_else(|| CliError::Usage("missing BLOB".into()))?
        .into();
    let mut inputs: Vec<String> = pos.collect();
    if inputs.is_empty() {
        inputs.push("-".into());
    }
    opts.line_buffered |= stdout_is_terminal();
    Ok(Args {
        blob,
        inputs,
        opts,
        stext,
        etext,
        names,
    })
}

fn run() -> Result<(), CliError> {
    let args = parse_args()?;
    let blob = MappedBlob::open(&args.blob).map_err(|e| CliError::input(args.blob.display(), e))?;
    let map = KallsymsMapped::from_blob(blob.as_bytes(), args.stext, args.etext)
        .map_err(|e| CliError::input(args.blob.display(), e))?;
    let stdout = io::stdout().lock();
    if args.names {
        return names(&map, &args, stdout);
    }
    let mut resolver = Resolver::new(&map, args.opts);
    let mut out = stdout;
    for path in &args.inputs {
        resolver.run(open_input(path)?, &mut out)?;
    }
    let st = resolver.stats();
    if st.lookups > 0 && st.zero == st.lookups {
        eprintln!(
            "ksym-resolve: warning: every kernel address was zero: the capture was taken under kptr_restrict"
        );
    } else if st.lookups >= 16 && st.resolved * 2 < st.lookups && args.opts.slide == 0 {
        eprintln!(
            "ksym-resolve: warning: {} of {} addresses matched no symbol; if the kernel ran with KASLR, pass --offset SLIDE (runtime _stext minus {:#x})",
            st.lookups - st.resolved,
            st.lookups,
            map.stext().unwrap_or(0)
        );
    }
    Ok(())
}

/// Reverse mode: each input line is a name; prints every symbol of that name.
fn names(map: &KallsymsMapped<'_>, args: &Args, out: impl Write) -> Result<(), CliError> {
    let mut out = io::BufWriter::with_capacity(IN_BUF, out);
    let mut line = Vec::with_capacity(256);
    for path in &args.inputs {
        ksym::lines::for_each_line(open_input(path)?, ksym::resolve::MAX_LINE, |_, l| {
            let ksym::lines::Line::Full(l) = l else {
                return Ok(());
            };
            let name = l.strip_suffix(b"\n").unwrap_or(l);
            let name = name.strip_suffix(b"\r").unwrap_or(name);
            let mut found = false;
            for s in map.lookup_name_all(name) {
                found = true;
                line.clear();
                hex::push_u64_padded(&mut line, s.address.wrapping_add(args.opts.slide));
                line.extend_from_slice(&[b' ', s.symbol_type, b' ']);
                s.name.extend_into(&mut line);
                line.push(b'\n');
                out.write_all(&line)?;
            }
            if !found {
                out.write_all(b"? ? ")?;
                out.write_all(name)?;
                out.write_all(b"\n")?;
            }
            if args.opts.line_buffered {
                out.flush()?;
            }
            Ok(())
        })?;
    }
    Ok(out.flush()?)
}

fn main() -> ExitCode {
    main_with("ksym-resolve", USAGE, run)
}
