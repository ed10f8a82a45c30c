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
    /// A JIT's perf map (`--perf-map FILE`,
    /// [`crate::normalize::perf_map`]).
    PerfMap(String),
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
    /// of them are the blob's binary (with `--store`, every binary of the
    /// process, by build-id; no `--dso`).
    pub maps: Option<(String, Option<String>)>,
    /// `--build-ids FILE` (with `--store`): `perf buildid-list`'s output,
    /// naming the build-id of each binary perf's frames name by path.
    pub build_ids: Option<String>,
    /// `--perf-map FILE`s with `--store`: JITs whose frames their maps name.
    pub perf_maps: Vec<String>,
}

impl ResolveJob {
    /// Runs the job.
    ///
    /// Errors: an unreadable or malformed blob or kallsyms text (naming it
    /// and the offset or line), an unreadable input, stdout failing (a
    /// closed pipe is `BrokenPipe`), and store errors.
    pub fn run(self) -> Result<(), CliError> {
        let mut perf_map = None;
        let (blob, name) = match &self.source {
            Source::Store(spec, forced) => {
                let secs = std::env::var("KSYM_TIMEOUT")
                    .ok()
                    .and_then(|s| s.parse().ok());
                let timeout = std::time::Duration::from_secs_f64(secs.unwrap_or(30.0));
                let ids = match &self.build_ids {
                    Some(f) => {
                        let text = std::fs::read(f).map_err(|e| CliError::input(f, e))?;
                        crate::normalize::perf::parse_buildid_list(&text)
                            .map_err(|e| CliError::input(f, e))?
                    }
                    None => Vec::new(),
                };
                let mut jits = Vec::new();
                for m in &self.perf_maps {
                    jits.push((m.clone(), jit_space(m)?));
                }
                let maps = match &self.maps {
                    Some((f, _)) => Some((f, std::fs::read(f).map_err(|e| CliError::input(f, e))?)),
                    None => None,
                };
                return super::store_run::resolve_with_store(
                    spec,
                    timeout,
                    self.opts.clone(),
                    forced.clone(),
                    super::store_run::Known {
                        build_ids: &ids,
                        jits,
                        maps: maps.as_ref().map(|(f, t)| (f.as_str(), &t[..])),
                    },
                    &self.inputs,
                );
            }
            Source::Kallsyms(k) => {
                let text = std::fs::read(k).map_err(|e| CliError::input(k, e))?;
                let blob = super::pack_kallsyms_text(&text).map_err(|e| CliError::input(k, e))?;
                (blob, k)
            }
            Source::PerfMap(m) => {
                let jit = jit_space(m)?;
                let blob = AlignedBlob::copy_from(&jit.blob);
                perf_map = Some((jit.range, jit.paths));
                (blob, m)
            }
            // Read, never mapped: a blob rewritten under us must not kill
            // us with SIGBUS (docs/packing.md "Reading blobs").
            Source::Blob(b) => (
                crate::gzip::read_blob(b.as_ref()).map_err(|e| CliError::input(b, e))?,
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
        // Runtime addresses of anonymous memory, as perf prints them: no
        // bias; frames of the map's path, inside its code.
        if let Some((range, paths)) = perf_map {
            opts.ranges = Some(vec![range].into());
            opts.paths = Some(paths.into());
        }
        if let Some((path, dso)) = &self.maps {
            let text = std::fs::read(path).map_err(|e| CliError::input(path, e))?;
            let b = crate::normalize::maps::locate_binary(&map, &text, dso.as_deref())
                .map_err(|e| CliError::input(path, e))?;
            opts.slide = b.bias;
            opts.ranges = Some(b.ranges.into());
            opts.paths = Some(b.paths.into());
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
            crate::note!("ksym-resolve: {note}");
        }
        Ok(())
    }
}

/// The perf map at `path`, packed ([`crate::normalize::perf_map`]), with a
/// note on stderr counting the entries left out for overlapping.
///
/// Errors: the file cannot be read or is not a perf map (line and what
/// was expected).
fn jit_space(path: &str) -> Result<crate::normalize::perf_map::JitSpace, CliError> {
    let text = std::fs::read(path).map_err(|e| CliError::input(path, e))?;
    let jit = crate::normalize::perf_map::jit_space(path.as_bytes(), &text)
        .map_err(|e| CliError::input(path, e))?;
    if jit.overlapping > 0 {
        crate::note!(
            "ksym-resolve: {path}: {} entries overlap another (code the JIT replaced); their addresses are left unnamed",
            jit.overlapping
        );
    }
    Ok(jit)
}
