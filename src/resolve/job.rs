//! What `ksym-resolve` does once its arguments are parsed: open the blob
//! (or pack a /proc/kallsyms text, or open a store), run the stream or the
//! reverse `--names` lookups over every input, print the notes. The binary
//! only parses arguments.

use std::io;

use super::{ResolveOptions, Resolver, resolve_names};
use crate::blob::Kallsyms;
use crate::blobfile::AlignedBlob;
use crate::cli::{CliError, IN_BUF, open_input};
use crate::store::select::KernelRef;

/// Where the symbols come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A blob file (v1 or v2).
    Blob(String),
    /// A /proc/kallsyms text (`--kallsyms FILE`).
    Kallsyms(String),
    /// A store (`--store DIR|URL`), and the kernel `--build-id`/`--release` force.
    Store(String, Option<KernelRef>),
}

/// One `ksym-resolve` run.
#[derive(Debug, Clone)]
pub struct ResolveJob {
    /// The symbols.
    pub source: Source,
    /// Input paths (`-` for stdin).
    pub inputs: Vec<String>,
    /// How to print.
    pub opts: ResolveOptions,
    /// `--stext`/`--etext` overrides.
    pub bounds: (Option<u64>, Option<u64>),
    /// `--names`: each input line is a name.
    pub names: bool,
    /// `--maps FILE` and `--dso NAME`: the process's mappings, and which
    /// of them are the blob's binary.
    pub maps: Option<(String, Option<String>)>,
}

impl ResolveJob {
    /// Runs the job.
    ///
    /// Errors: an unreadable or malformed blob or kallsyms text (naming it
    /// and the offset or line), an unreadable input, stdout failing (a
    /// closed pipe is `BrokenPipe`), and store errors.
    pub fn run(self) -> Result<(), CliError> {
        let (blob, name) = match &self.source {
            Source::Store(spec, forced) => {
                let secs = std::env::var("KSYM_TIMEOUT")
                    .ok()
                    .and_then(|s| s.parse().ok());
                let timeout = std::time::Duration::from_secs_f64(secs.unwrap_or(30.0));
                return super::store_run::resolve_with_store(
                    spec,
                    timeout,
                    self.opts.clone(),
                    forced.clone(),
                    &self.inputs,
                );
            }
            Source::Kallsyms(k) => {
                let text = std::fs::read(k).map_err(|e| CliError::input(k, e))?;
                let blob = super::pack_kallsyms_text(&text).map_err(|e| CliError::input(k, e))?;
                (blob, k)
            }
            // Read, never mapped: a blob rewritten under us must not kill
            // us with SIGBUS (docs/packing.md "Reading blobs").
            Source::Blob(b) => (
                AlignedBlob::read_file(b.as_ref()).map_err(|e| CliError::input(b, e))?,
                b,
            ),
        };
        // A blob alone, or a kernel's section dump (the blob, then the
        // section's zeros; FORMAT.md §2.3), as --check reads it.
        let (map, _) = Kallsyms::from_file_bytes(blob.as_bytes(), self.bounds.0, self.bounds.1)
            .map_err(|e| CliError::input(name, e))?;
        if self.names {
            let mut out = io::BufWriter::with_capacity(IN_BUF, io::stdout().lock());
            for path in &self.inputs {
                let (slide, lb) = (self.opts.slide, self.opts.line_buffered);
                resolve_names(&map, open_input(path)?, &mut out, slide, lb)?;
            }
            return Ok(());
        }
        let mut opts = self.opts.clone();
        if let Some((path, dso)) = &self.maps {
            let (bias, ranges) = map_binary(&map, path, dso.as_deref())?;
            opts.slide = bias;
            opts.ranges = Some(ranges.into());
        }
        let mut resolver = Resolver::new(&map, opts);
        let mut out = io::stdout().lock();
        for path in &self.inputs {
            resolver.run(open_input(path)?, &mut out)?;
        }
        // The slide notes are the kernel's KASLR; a binary's load bias is not one.
        let slide = if self.maps.is_some() {
            0
        } else {
            self.opts.slide
        };
        let notes = resolver.stats().notes(&map, slide);
        for note in notes.into_iter().chain(resolver.module_notes()) {
            eprintln!("ksym-resolve: {note}");
        }
        Ok(())
    }
}

/// `--maps`: the load bias of the blob's binary in the process whose maps
/// file is `path`, and the executable ranges where it is mapped. Its
/// mappings are those whose path is `dso` or ends in `/dso`, else those
/// whose file (read on this machine) has the blob's build-id.
///
/// Errors: the maps file cannot be read or parsed (the line named), the
/// blob holds no load segments (not made by `ksym-pack --elf`), no mapping
/// is the binary's, or its mappings do not line up with its segments.
fn map_binary(
    map: &Kallsyms<'_>,
    path: &str,
    dso: Option<&str>,
) -> Result<(u64, Vec<std::ops::Range<u64>>), CliError> {
    use crate::normalize::maps;
    let text = std::fs::read(path).map_err(|e| CliError::input(path, e))?;
    let all = maps::parse(&text).map_err(|e| CliError::input(path, e))?;
    let fail = |what: String| Err(CliError::input(path, what));
    let segments: Vec<_> = match map {
        Kallsyms::V2(v) => v.load_segments().collect(),
        _ => Vec::new(),
    };
    if segments.is_empty() {
        return fail(
            "--maps needs a blob that holds its binary's load segments (ksym-pack --elf)".into(),
        );
    }
    let build_id = map.build_id();
    let mine: Vec<&maps::Mapping> = all
        .iter()
        .filter(|m| !m.path.is_empty() && !m.path.starts_with(b"["))
        .filter(|m| match dso {
            Some(d) => m.path == d.as_bytes() || m.path.ends_with(format!("/{d}").as_bytes()),
            None => build_id.is_some_and(|id| file_build_id(&m.path).as_deref() == Some(id)),
        })
        .collect();
    if mine.is_empty() {
        return fail(match dso {
            Some(d) => format!("no mapping of `{d}`"),
            None => "no mapping of a file with the blob's build-id (give --dso NAME)".into(),
        });
    }
    let Some(bias) = maps::load_bias(&mine, &segments) else {
        return fail(
            "the binary's mappings do not line up with the blob's load segments (another build?)"
                .into(),
        );
    };
    let ranges = mine
        .iter()
        .filter(|m| m.exec)
        .map(|m| m.range.clone())
        .collect();
    Ok((bias, ranges))
}

/// The GNU build-id of the ELF file at `path` on this machine, if any.
fn file_build_id(path: &[u8]) -> Option<Vec<u8>> {
    use object::Object;
    let path = std::path::Path::new(std::str::from_utf8(path).ok()?);
    let data = std::fs::read(path).ok()?;
    let obj = object::File::parse(&*data).ok()?;
    obj.build_id().ok().flatten().map(<[u8]>::to_vec)
}
