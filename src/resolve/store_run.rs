//! `ksym-resolve --store`: each trace of a stream resolved with its own
//! kernel's blob. Lines are passed, in chunks, to a [`Resolver`] per
//! kernel; an oops's `CPU:` line or a perf header's `# os release :` line
//! switches kernels ([`crate::store::select`]). A trace whose kernel the store
//! lacks, or whose release maps to several build-ids with none to choose,
//! passes through unchanged, with one note on stderr: never a guess.

use std::collections::HashMap;
use std::io::{self, BufRead, Write};

use super::{MAX_LINE, OUT_BLOCK, ResolveOptions, Resolver};
use crate::blob::Kallsyms;
use crate::store::fetch::Store;
use crate::store::layout::hex;
use crate::store::select::{KernelRef, kernel_of_line};
use crate::text::lines::{Line, for_each_line};

/// A kernel in use: its blob and view live as long as the process (they
/// are leaked on purpose: a run uses each until it ends, and the resolver
/// borrows them).
struct Kernel {
    map: &'static Kallsyms<'static>,
    resolver: Resolver<'static, 'static>,
    name: String,
}

/// One `ksym-resolve --store` run.
pub struct StoreRun<'s> {
    store: &'s Store,
    opts: ResolveOptions,
    /// A kernel forced by `--build-id`/`--release`: no switching.
    forced: bool,
    kernels: HashMap<Vec<u8>, Option<Kernel>>,
    releases: HashMap<Vec<u8>, Option<Vec<u8>>>,
    current: Option<Vec<u8>>,
    pending: Vec<u8>,
    /// Lines passed through because no kernel was selected.
    unselected: u64,
    notes: Vec<String>,
    /// A store error was met (the exit status says so).
    pub failed: bool,
}

impl<'s> StoreRun<'s> {
    /// A run over `store`; `forced` names the kernel of every input
    /// (`--build-id`, `--release`), else each trace names its own.
    pub fn new(store: &'s Store, opts: ResolveOptions, forced: Option<KernelRef>) -> Self {
        let mut r = StoreRun {
            store,
            opts,
            forced: forced.is_some(),
            kernels: HashMap::new(),
            releases: HashMap::new(),
            current: None,
            pending: Vec::with_capacity(OUT_BLOCK + MAX_LINE),
            unselected: 0,
            notes: Vec::new(),
            failed: false,
        };
        if let Some(k) = forced {
            r.current = r.select(&k);
        }
        r
    }

    /// The build-id a trace's kernel reference resolves to, with its blob
    /// loaded; `None` (and a note) when the store cannot tell.
    fn select(&mut self, k: &KernelRef) -> Option<Vec<u8>> {
        let id = match (&k.build_id, &k.release) {
            (Some(id), _) => id.clone(),
            (None, Some(rel)) => {
                if let Some(c) = self.releases.get(rel) {
                    c.clone()?
                } else {
                    let choice = self.choose_release(rel);
                    self.releases.insert(rel.clone(), choice.clone());
                    choice?
                }
            }
            (None, None) => return None,
        };
        self.load(&id, k.release.as_deref()).then_some(id)
    }

    fn choose_release(&mut self, rel: &[u8]) -> Option<Vec<u8>> {
        let r = String::from_utf8_lossy(rel).into_owned();
        match self.store.release_ids(rel) {
            Err(e) => {
                self.fail(format!("release {r}: {e}"));
                None
            }
            Ok(ids) if ids.is_empty() => {
                self.notes.push(format!(
                    "release {r}: not in the store {}; its traces pass unchanged",
                    self.store.describe()
                ));
                None
            }
            Ok(ids) if ids.len() > 1 => {
                let list: Vec<String> = ids.iter().map(|i| hex(i)).collect();
                self.notes.push(format!(
                    "release {r}: {} builds in the store ({}) and the trace names no build-id; its traces pass unchanged (give --build-id)",
                    ids.len(),
                    list.join(", ")
                ));
                None
            }
            Ok(mut ids) => ids.pop(),
        }
    }

    /// Loads the blob of `id` once; false when the store has none.
    fn load(&mut self, id: &[u8], release: Option<&[u8]>) -> bool {
        if let Some(k) = self.kernels.get(id) {
            return k.is_some();
        }
        let name = match release {
            Some(r) => format!("{} ({})", String::from_utf8_lossy(r), hex(id)),
            None => hex(id),
        };
        let kernel = match self.store.blob(id) {
            Ok(Some(blob)) => {
                let blob: &'static crate::blobfile::AlignedBlob = Box::leak(Box::new(blob));
                match Kallsyms::from_blob(blob.as_bytes(), None, None) {
                    Ok(map) => {
                        let map: &'static Kallsyms<'static> = Box::leak(Box::new(map));
                        Some(Kernel {
                            map,
                            resolver: Resolver::new(map, self.opts.clone()),
                            name,
                        })
                    }
                    Err(e) => {
                        self.fail(format!("kernel {name}: {e}"));
                        None
                    }
                }
            }
            Ok(None) => {
                self.notes.push(format!(
                    "kernel {name}: no blob in the store {}; its traces pass unchanged",
                    self.store.describe()
                ));
                None
            }
            Err(e) => {
                self.fail(format!("kernel {name}: {e}"));
                None
            }
        };
        let ok = kernel.is_some();
        self.kernels.insert(id.to_vec(), kernel);
        ok
    }

    fn fail(&mut self, what: String) {
        self.failed = true;
        self.notes
            .push(format!("error: {what}; its traces pass unchanged"));
    }

    fn flush<W: Write>(&mut self, out: &mut W) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let k = self
            .current
            .as_ref()
            .and_then(|id| self.kernels.get_mut(id))
            .and_then(|k| k.as_mut());
        match k {
            Some(k) => {
                k.resolver.run(&self.pending[..], &mut *out)?;
            }
            None => {
                self.unselected += bytecount_lines(&self.pending);
                if !self.opts.json {
                    out.write_all(&self.pending)?;
                }
            }
        }
        self.pending.clear();
        Ok(())
    }

    /// Resolves one input to `out`.
    ///
    /// Errors: read and write errors (a closed pipe is `BrokenPipe`).
    pub fn run<R: BufRead, W: Write>(&mut self, input: R, out: &mut W) -> io::Result<()> {
        for_each_line(input, MAX_LINE, |_, line| {
            let bytes = match line {
                Line::Full(l) => {
                    if !self.forced
                        && let Some(k) = kernel_of_line(l)
                    {
                        self.flush(out)?;
                        self.current = self.select(&k);
                    }
                    l
                }
                Line::Long { piece, .. } => piece,
            };
            self.pending.extend_from_slice(bytes);
            if self.pending.len() >= OUT_BLOCK || self.opts.line_buffered {
                self.flush(out)?;
            }
            Ok(())
        })?;
        self.flush(out)?;
        out.flush()
    }

    /// Notes for stderr: each kernel's own (KASLR, mismatches), the
    /// store's (unknown kernels, ambiguous releases, errors), and how many
    /// lines no kernel was named for.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = self.notes.clone();
        for k in self.kernels.values().flatten() {
            let st = k.resolver.stats();
            for n in st
                .notes(k.map, self.opts.slide)
                .into_iter()
                .chain(k.resolver.module_notes())
            {
                notes.push(format!("kernel {}: {n}", k.name));
            }
        }
        if self.unselected > 0 && !self.forced {
            notes.push(format!(
                "{} lines came before any kernel was named (an oops `CPU:` line, a perf `# os release :` header) or belong to one the store lacks: passed unchanged",
                self.unselected
            ));
        }
        notes
    }
}

fn bytecount_lines(b: &[u8]) -> u64 {
    b.iter().filter(|&&c| c == b'\n').count() as u64
}

/// Everything `ksym-resolve --store SPEC` does once its arguments are
/// parsed: opens the store (HTTP requests limited to `timeout`, remote
/// blobs cached under [`crate::store::fetch::default_cache_dir`]), resolves each
/// input with its own kernel's blob, prints the notes on stderr.
///
/// Errors: the store cannot be opened, an input cannot be read, stdout
/// fails, or a store error was met during the run (the traces concerned
/// passed unchanged; the message says how many errors).
pub fn resolve_with_store(
    spec: &str,
    timeout: std::time::Duration,
    opts: ResolveOptions,
    forced: Option<KernelRef>,
    inputs: &[String],
) -> Result<(), crate::cli::CliError> {
    use crate::cli::{CliError, open_input};
    let store = Store::open(spec, timeout, crate::store::fetch::default_cache_dir())
        .map_err(|e| CliError::input("--store", e))?;
    let mut run = StoreRun::new(&store, opts, forced);
    let mut out = io::stdout().lock();
    let mut result = Ok(());
    for path in inputs {
        if let Err(e) = open_input(path).and_then(|i| run.run(i, &mut out).map_err(CliError::from))
        {
            result = Err(e);
            break;
        }
    }
    for n in run.notes() {
        eprintln!("ksym-resolve: {n}");
    }
    result?;
    if run.failed {
        return Err(CliError::input(
            format!("--store {spec}"),
            "errors above: their traces passed unchanged",
        ));
    }
    Ok(())
}
