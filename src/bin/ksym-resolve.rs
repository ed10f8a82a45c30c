//! ksym-resolve: maps a kallsyms blob (or reads a kallsyms text) and rewrites
//! address streams: bare addresses, perf script, oops/dmesg, bcc output.
//! It parses arguments; `ksym::resolve::job` does the work.

use std::process::ExitCode;

use ksym::cli::spec::RESOLVE;
use ksym::cli::{
    CliError, main_with, parse_build_id, parse_hex_arg, print_and_exit, stdout_is_terminal,
};
use ksym::resolve::code::Arch;
use ksym::resolve::job::{ResolveJob, Source};
use ksym::resolve::{ResolveOptions, read_loaded};
use ksym::store::select::KernelRef;

fn parse_args() -> Result<ResolveJob, CliError> {
    use lexopt::prelude::*;
    let (mut blob, mut kallsyms, mut inputs) = (None, None, Vec::new());
    let mut perf_maps = Vec::new();
    let mut store = std::env::var("KSYM_STORE").ok().filter(|s| !s.is_empty());
    let mut forced: Option<KernelRef> = None;
    let mut opts = ResolveOptions {
        size: true,
        ..Default::default()
    };
    let (mut stext, mut etext, mut names) = (None, None, false);
    let (mut maps, mut dso, mut build_ids) = (None, None, None);
    let mut p = lexopt::Parser::from_env();
    while let Some(arg) = p.next()? {
        match arg {
            Long("no-size") => opts.size = false,
            Long("json") => opts.json = true,
            Long("arch") => {
                let v = p.value()?.string()?;
                opts.arch = Some(Arch::parse(&v).ok_or_else(|| {
                    CliError::Usage(format!(
                        "--arch: expected x86_64, arm64, arm or riscv64, got `{v}`"
                    ))
                })?);
            }
            Long("inline") => opts.inline = true,
            Long("strip-prefix") => opts.strip_prefix = Some(p.value()?.string()?.into_bytes()),
            Long("line-buffered") => opts.line_buffered = true,
            Long("offset") => opts.slide = parse_hex_arg("--offset", p.value()?)?,
            Long("kaslr-from-sym") => opts.kaslr_from_sym = true,
            Long("stext") => stext = Some(parse_hex_arg("--stext", p.value()?)?),
            Long("etext") => etext = Some(parse_hex_arg("--etext", p.value()?)?),
            Long("kallsyms") => kallsyms = Some(p.value()?.string()?),
            Long("perf-map") => perf_maps.push(p.value()?.string()?),
            Long("names") => names = true,
            Long("store") => store = Some(p.value()?.string()?),
            Long("build-id") => {
                let v = p.value()?.string()?;
                let id = parse_build_id(&v).ok_or_else(|| {
                    CliError::Usage(format!("--build-id: expected hex, got `{v}`"))
                })?;
                forced.get_or_insert_default().build_id = Some(id);
            }
            Long("release") => {
                forced.get_or_insert_default().release = Some(p.value()?.string()?.into_bytes())
            }
            Long("loaded") => {
                let path = p.value()?.string()?;
                let text = std::fs::read(&path).map_err(|e| CliError::input(&path, e))?;
                let list = read_loaded(&text).map_err(|e| CliError::input(&path, e))?;
                opts.loaded = Some(list);
            }
            Long("maps") => maps = Some(p.value()?.string()?),
            Long("dso") => dso = Some(p.value()?.string()?),
            Long("build-ids") => build_ids = Some(p.value()?.string()?),
            Short('h') | Long("help") => print_and_exit(RESOLVE.help()),
            Short('V') | Long("version") => print_and_exit(RESOLVE.version()),
            Value(v)
                if blob.is_none()
                    && kallsyms.is_none()
                    && perf_maps.is_empty()
                    && store.is_none() =>
            {
                blob = Some(v.string()?)
            }
            Value(v) => inputs.push(v.string()?),
            _ => return Err(arg.unexpected().into()),
        }
    }
    let source = match (kallsyms, blob, store) {
        (Some(k), ..) if perf_maps.is_empty() => Source::Kallsyms(k),
        (None, Some(b), _) if perf_maps.is_empty() => Source::Blob(b),
        (None, None, Some(s)) => Source::Store(s, forced.take()),
        (None, None, None) if perf_maps.len() == 1 => Source::PerfMap(perf_maps.remove(0)),
        (None, None, None) if perf_maps.is_empty() => {
            return Err(CliError::Usage(
                "missing BLOB (or --kallsyms FILE, --perf-map FILE, --store)".into(),
            ));
        }
        _ => {
            return Err(CliError::Usage(
                "--perf-map takes the place of BLOB, once; with --store, each one's frames are named by it".into(),
            ));
        }
    };
    if maps.is_some() && matches!(source, Source::PerfMap(_)) {
        return Err(CliError::Usage(
            "--maps places an ELF's blob; a perf map's addresses are already runtime ones".into(),
        ));
    }
    if forced.is_some() {
        return Err(CliError::Usage(
            "--build-id and --release need --store".into(),
        ));
    }
    if build_ids.is_some() && !matches!(source, Source::Store(..)) {
        return Err(CliError::Usage("--build-ids needs --store".into()));
    }
    if dso.is_some() && maps.is_none() {
        return Err(CliError::Usage("--dso needs --maps FILE".into()));
    }
    if dso.is_some() && matches!(source, Source::Store(..)) {
        return Err(CliError::Usage(
            "--dso picks one blob's binary; with --store every binary of --maps is found by build-id".into(),
        ));
    }
    if inputs.is_empty() {
        inputs.push("-".into());
    }
    opts.line_buffered |= stdout_is_terminal();
    Ok(ResolveJob {
        source,
        inputs,
        opts,
        bounds: (stext, etext),
        names,
        maps: maps.map(|m| (m, dso)),
        build_ids,
        perf_maps,
    })
}

fn main() -> ExitCode {
    main_with(&RESOLVE, || parse_args()?.run())
}
