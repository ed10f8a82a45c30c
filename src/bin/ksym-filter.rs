//! ksym-filter: keeps the text symbols (T, t, W in text) of nm, System.map or /proc/kallsyms
//! lines, demangles Rust names, writes `ADDR TYPE NAME` lines.

use std::io::{self, Write};
use std::process::ExitCode;

use ksym::blob::v1::layout::MAX_PAYLOAD_LEN;
use ksym::cli::spec::FILTER;
use ksym::cli::{CliError, IN_BUF, main_with, open_input, print_and_exit};
use ksym::text::demangle::demangle_rust;
use ksym::text::hex;
use ksym::text::lines::{Line, for_each_line};
use ksym::text::nm::{NmLine, TextSymbols, is_mapping_or_local_label, parse_canonical, parse_line};

struct Args {
    demangle: bool,
    max_errors: u64,
    inputs: Vec<String>,
}

fn parse_args() -> Result<Args, CliError> {
    use lexopt::prelude::*;
    let mut a = Args {
        demangle: true,
        max_errors: 5,
        inputs: Vec::new(),
    };
    let mut p = lexopt::Parser::from_env();
    while let Some(arg) = p.next()? {
        match arg {
            Long("no-demangle") => a.demangle = false,
            Long("max-errors") => a.max_errors = p.value()?.parse()?,
            Short('h') | Long("help") => print_and_exit(FILTER.help()),
            Short('V') | Long("version") => print_and_exit(FILTER.version()),
            Value(v) => a.inputs.push(v.string()?),
            _ => return Err(arg.unexpected().into()),
        }
    }
    if a.inputs.is_empty() {
        a.inputs.push("-".into());
    }
    Ok(a)
}

fn run() -> Result<(), CliError> {
    let args = parse_args()?;
    let mut out = io::BufWriter::with_capacity(IN_BUF, io::stdout().lock());
    let (mut bad, mut kept, mut zero) = (0u64, 0u64, 0u64);
    let mut line_out = Vec::with_capacity(256);
    let mut demangled = Vec::with_capacity(256);
    let mut text = TextSymbols::default();
    for path in &args.inputs {
        let input = open_input(path)?;
        let mut report = |lineno: u64, what: &dyn std::fmt::Display| {
            bad += 1;
            if bad <= args.max_errors {
                ksym::note!("ksym-filter: {path}:{lineno}: {what}");
            }
        };
        for_each_line(input, MAX_PAYLOAD_LEN + 256, |lineno, line| {
            let line = match line {
                Line::Full(l) => l,
                Line::Long { first: true, .. } => {
                    report(
                        lineno,
                        &format_args!("line longer than {} bytes, skipped", MAX_PAYLOAD_LEN + 256),
                    );
                    return Ok(());
                }
                Line::Long { .. } => return Ok(()),
            };
            let parsed =
                parse_canonical(line).map_or_else(|| parse_line(line), |s| Ok(NmLine::Symbol(s)));
            let sym = match parsed {
                Ok(NmLine::Symbol(s)) => s,
                Ok(NmLine::Blank | NmLine::NoAddress { .. }) => return Ok(()),
                Err(e) => {
                    report(lineno, &format_args!("not a symbol line ({e}), skipped"));
                    return Ok(());
                }
            };
            if !text.keep(&sym) || is_mapping_or_local_label(sym.name) {
                return Ok(());
            }
            demangled.clear();
            let name = if args.demangle && demangle_rust(sym.name, &mut demangled) {
                &demangled
            } else {
                sym.name
            };
            line_out.clear();
            hex::push_u64_padded(&mut line_out, sym.address);
            line_out.extend_from_slice(&[b' ', sym.symbol_type, b' ']);
            line_out.extend_from_slice(name);
            if let Some(m) = sym.module {
                line_out.extend_from_slice(b"\t[");
                line_out.extend_from_slice(m);
                line_out.push(b']');
            }
            line_out.push(b'\n');
            kept += 1;
            zero += u64::from(sym.address == 0);
            out.write_all(&line_out)
        })?;
    }
    out.flush()?;
    if kept > 0 && zero == kept {
        ksym::note!(
            "ksym-filter: warning: all {kept} addresses are zero: the kernel hides them (kptr_restrict); read /proc/kallsyms as root"
        );
    }
    if bad > 0 {
        if bad > args.max_errors {
            ksym::note!("ksym-filter: ... {} more", bad - args.max_errors);
        }
        return Err(CliError::Input(format!(
            "{bad} line(s) were not symbol lines; the others were written"
        )));
    }
    Ok(())
}

fn main() -> ExitCode {
    main_with(&FILTER, run)
}
