//! What the binaries share: exit codes, error printing, input opening, and a
//! quiet end on a closed pipe (`| head`); [`spec`] holds their command
//! lines as data.
//!
//! Exit codes (docs/packing.md "Exit codes"): 0 ok, 1 bad input or I/O error, 2 usage.

use std::ffi::OsString;
use std::fmt::Display;
use std::fs::File;
use std::io::{self, BufRead, BufReader, IsTerminal, Write};
use std::process::ExitCode;

pub mod spec;

use spec::Tool;

/// `eprintln!` that cannot fail: one line to stderr, a write error
/// ignored. A diagnostic nobody can read (stderr closed early, as in
/// `ksym-pack -v ... 2>&1 | head -1`) must neither panic, as `eprintln!`
/// does on a broken pipe (exit 101), nor stop the job before its output is
/// written.
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stderr(), $($arg)*);
    }};
}

/// Input buffer size of the tools, in bytes.
pub const IN_BUF: usize = 256 * 1024;

/// Why a tool stops.
#[derive(Debug)]
pub enum CliError {
    /// Bad arguments: exit 2.
    Usage(String),
    /// Bad input (or an I/O failure): exit 1.
    Input(String),
    /// An I/O error; a broken pipe ends the tool quietly with exit 0.
    Io(io::Error),
}

impl From<io::Error> for CliError {
    fn from(e: io::Error) -> Self {
        CliError::Io(e)
    }
}

impl From<lexopt::Error> for CliError {
    fn from(e: lexopt::Error) -> Self {
        CliError::Usage(e.to_string())
    }
}

impl Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Usage(m) | CliError::Input(m) => f.write_str(m),
            CliError::Io(e) => e.fmt(f),
        }
    }
}

impl CliError {
    /// An input error whose message is `what: err`.
    pub fn input(what: impl Display, err: impl Display) -> Self {
        CliError::Input(format!("{what}: {err}"))
    }
}

/// A failed write to stdout: named, except a broken pipe, which stays an
/// [`CliError::Io`] so that the tool ends quietly.
pub fn stdout_error(e: io::Error) -> CliError {
    if e.kind() == io::ErrorKind::BrokenPipe {
        CliError::Io(e)
    } else {
        CliError::input("writing stdout", e)
    }
}

/// Runs a tool's body and turns its outcome into an exit code, printing
/// `tool: message` on stderr (and the tool's help after a usage error). A
/// broken pipe is a normal end (exit 0).
pub fn main_with(tool: &Tool, body: impl FnOnce() -> Result<(), CliError>) -> ExitCode {
    match body() {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(CliError::Usage(m)) => {
            crate::note!("{}: {m}\n{}", tool.name, tool.help());
            ExitCode::from(2)
        }
        Err(CliError::Input(m)) => {
            crate::note!("{}: {m}", tool.name);
            ExitCode::from(1)
        }
        Err(CliError::Io(e)) => {
            crate::note!("{}: {e}", tool.name);
            ExitCode::from(1)
        }
    }
}

/// `-h`/`--help` and `-V`/`--version`: prints `text` on stdout and exits
/// 0 (quietly on a closed pipe).
pub fn print_and_exit(text: String) -> ! {
    let _ = writeln!(io::stdout(), "{text}");
    std::process::exit(0)
}

/// Opens an input argument (`-` is stdin) with a large buffer.
///
/// Errors: the file cannot be opened; the message names it.
pub fn open_input(path: &str) -> Result<Box<dyn BufRead>, CliError> {
    if path == "-" {
        return Ok(Box::new(BufReader::with_capacity(
            IN_BUF,
            io::stdin().lock(),
        )));
    }
    let f = File::open(path).map_err(|e| CliError::input(path, e))?;
    Ok(Box::new(BufReader::with_capacity(IN_BUF, f)))
}

/// True when stdout is a terminal (tools that write binary refuse it, the
/// resolver flushes per line to it).
pub fn stdout_is_terminal() -> bool {
    io::stdout().is_terminal()
}

/// Parses an address argument: hex with or without `0x`.
///
/// Errors: a usage error naming the option.
pub fn parse_hex_arg(opt: &str, val: std::ffi::OsString) -> Result<u64, CliError> {
    let s = val.to_string_lossy();
    let d = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(&s);
    crate::text::hex::parse_u64(d.as_bytes())
        .ok_or_else(|| CliError::Usage(format!("{opt}: expected a hex address, got `{s}`")))
}

/// Writes to a temporary file beside `path` and renames it over `path`:
/// readers see the old file or the whole new one, never a part. No fsync: the
/// blob is a build output, which linkers and objcopy do not sync either.
///
/// Errors: the temporary file cannot be made, written or renamed (named
/// after `path`); a failed write leaves no file behind.
pub fn write_atomically(
    path: &std::path::Path,
    write: &dyn Fn(&mut dyn io::Write) -> io::Result<()>,
) -> Result<(), CliError> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let fail = |e: io::Error| CliError::input(path.display(), e);
    let mut b = tempfile::Builder::new();
    b.prefix(".ksym-pack.");
    // 0666 less the umask, as `> FILE` would give (tempfile's default is 0600).
    #[cfg(unix)]
    b.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let mut tmp = b.tempfile_in(dir).map_err(fail)?;
    let mut out = io::BufWriter::with_capacity(IN_BUF, tmp.as_file_mut());
    write(&mut out).map_err(fail)?;
    out.flush().map_err(fail)?;
    drop(out);
    tmp.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}

/// Replaces the existing file `path` by `bytes` atomically (a temporary
/// file beside it, then a rename), keeping its permissions (an ELF image
/// stays executable). On any error the file is left as it was.
///
/// Errors: [`CliError::Input`] naming `path`: it cannot be read, or the
/// temporary file cannot be written or renamed.
pub fn replace_file(path: &std::path::Path, bytes: &[u8]) -> Result<(), CliError> {
    write_file_like(path, bytes, path)
}

/// Writes `bytes` to `path` atomically (a temporary file beside it, then a
/// rename) with the permissions of the existing file `like`: a patched
/// copy of an ELF image is as executable as the image. On any error
/// nothing is left at `path` that was not there before.
///
/// Errors: [`CliError::Input`] naming `like` when it cannot be read, or
/// `path` when the temporary file cannot be written or renamed.
pub fn write_file_like(
    path: &std::path::Path,
    bytes: &[u8],
    like: &std::path::Path,
) -> Result<(), CliError> {
    let perms = std::fs::metadata(like)
        .map_err(|e| CliError::input(like.display(), e))?
        .permissions();
    let fail = |e: io::Error| CliError::input(path.display(), e);
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".ksym-pack.")
        .tempfile_in(dir)
        .map_err(fail)?;
    io::Write::write_all(tmp.as_file_mut(), bytes).map_err(fail)?;
    tmp.as_file().set_permissions(perms).map_err(fail)?;
    tmp.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}

/// `ksym-pack`'s arguments, where a `--lines` with no ELF after it (the
/// last argument, or one before another option) becomes `--lines=`: each
/// `--elf` binary's own DWARF.
pub fn lines_without_elf(args: impl Iterator<Item = OsString>) -> Vec<OsString> {
    let mut args: Vec<OsString> = args.collect();
    for i in 0..args.len() {
        let bare = args.get(i + 1).is_none_or(|next| {
            let n = next.as_encoded_bytes();
            n.starts_with(b"-") && n != b"-"
        });
        if args[i] == "--lines" && bare {
            args[i] = "--lines=".into();
        }
    }
    args
}

/// `ksym-pack --line-block ROWS`: the block shift of FORMAT.md §15.1 for
/// 32, 64, 128 or 256 rows a block.
///
/// Errors: [`CliError::Usage`] naming the values allowed.
pub fn parse_line_block(s: &str) -> Result<u8, CliError> {
    spec::LINE_BLOCKS
        .iter()
        .position(|&v| v == s)
        .map(|i| i as u8)
        .ok_or_else(|| {
            CliError::Usage(format!(
                "--line-block: expected 32, 64, 128 or 256 rows, got `{s}`"
            ))
        })
}

/// Hex bytes, an even number of digits, optionally after `0x` (a build-id
/// as `file` or `readelf -n` prints it); `None` otherwise.
pub fn parse_build_id(s: &str) -> Option<Vec<u8>> {
    let d = s.strip_prefix("0x").unwrap_or(s).as_bytes();
    if d.is_empty() || !d.len().is_multiple_of(2) {
        return None;
    }
    d.chunks(2)
        .map(|c| crate::text::hex::parse_u64(c).map(|v| v as u8))
        .collect()
}
