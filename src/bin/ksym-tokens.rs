//! ksym-tokens: prints the token table ksym-pack would choose for `ADDR TYPE
//! NAME` lines: id, uses, length, bytes saved, token.

use std::io::{self, Write};
use std::process::ExitCode;

use ksym::blob::list::SymbolList;
use ksym::blob::v1::tokens::TokenStrategy;
use ksym::blob::v1::write::Layout;
use ksym::blob::v2::write::{V2Options, pack_v2};
use ksym::cli::spec::TOKENS_TOOL;
use ksym::cli::{CliError, IN_BUF, main_with, open_input, print_and_exit};

fn run() -> Result<(), CliError> {
    use lexopt::prelude::*;
    let (mut input, mut strategy, mut summary_only) = (None, TokenStrategy::default(), false);
    let mut p = lexopt::Parser::from_env();
    while let Some(arg) = p.next()? {
        match arg {
            Long("tokens") => strategy = p.value()?.parse()?,
            Long("summary") => summary_only = true,
            Short('h') | Long("help") => print_and_exit(TOKENS_TOOL.help()),
            Short('V') | Long("version") => print_and_exit(TOKENS_TOOL.version()),
            Value(v) if input.is_none() => input = Some(v.string()?),
            _ => return Err(arg.unexpected().into()),
        }
    }
    let input = input.unwrap_or_else(|| "-".into());
    let list =
        SymbolList::read_lines(open_input(&input)?).map_err(|e| CliError::input(&input, e))?;
    let mut out = io::BufWriter::with_capacity(IN_BUF, io::stdout().lock());
    let strategies: &[TokenStrategy] = if summary_only {
        &[TokenStrategy::Seed, TokenStrategy::Optimal]
    } else {
        std::slice::from_ref(&strategy)
    };
    for &s in strategies {
        let layout = Layout::new(&list, s).map_err(|e| CliError::input(&input, e))?;
        let t = &layout.tokens;
        if !summary_only {
            writeln!(out, "# id\tuses\tlen\tsaved\ttoken")?;
            for (id, tok) in t.tokens.iter().enumerate() {
                write!(
                    out,
                    "{id}\t{}\t{}\t{}\t",
                    tok.uses,
                    tok.bytes.len(),
                    tok.saved
                )?;
                out.write_all(&tok.bytes)?;
                out.write_all(b"\n")?;
            }
        }
        writeln!(
            out,
            "# {}: {} symbols, {} tokens, {} uses, names {} bytes (raw {}; saved {}), blob {} bytes ({:.2} B/symbol)",
            if s == TokenStrategy::Seed {
                "seed"
            } else {
                "optimal"
            },
            list.len(),
            t.tokens.len(),
            t.tokens.iter().map(|k| k.uses).sum::<usize>(),
            layout.names_len(),
            list.name_bytes(),
            t.saved(),
            layout.blob_len(),
            layout.blob_len() as f64 / list.len().max(1) as f64,
        )?;
    }
    if summary_only {
        let v2 = pack_v2(&list, &V2Options::default()).map_err(|e| CliError::input(&input, e))?;
        writeln!(out, "# {}", v2.describe())?;
    }
    Ok(out.flush()?)
}

fn main() -> ExitCode {
    main_with(&TOKENS_TOOL, run)
}
