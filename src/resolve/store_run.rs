//! `ksym-resolve --store`: each trace of a stream resolved with its own
//! kernel's blob, and each perf callchain frame of a user-space binary
//! with that binary's blob. Lines are passed, in chunks, to a [`Resolver`]
//! per blob; an oops's `CPU:` line, a perf header's `# os release :` line
//! or the kernel's build-id in perf's records switches kernels
//! ([`crate::store::select`]). A frame ` (PATH)` of a mapped file goes to
//! the blob of PATH's build-id ([`crate::normalize::perf`]: from `perf
//! buildid-list`, perf's MMAP2 records, or the file on this machine), its
//! DSO-relative address read as a file offset. The kernel's report of a
//! user-space fault ([`crate::normalize::fault`]) names its binary by file
//! name: `--build-ids`'s one path of that name, else the store's one
//! build-id listed under it. A trace whose kernel the
//! store lacks, a binary it has no blob for, or a release that maps to
//! several build-ids with none to choose, passes through unchanged, with
//! one note on stderr: never a guess.

use std::collections::HashMap;
use std::io::{self, BufRead, Write};

use super::{MAX_LINE, OUT_BLOCK, ResolveOptions, Resolver};
use crate::blob::Kallsyms;
use crate::normalize::fault::{UserFault, user_fault};
use crate::normalize::offsets::{OffsetFrame, Reporter, offset_frame};
use crate::normalize::perf::{
    callchain_address, callchain_path, file_offset_space, mmap2_build_id, nameless_inline,
};
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

/// Whose resolver the pending lines go to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// The current kernel's (or none: lines pass unchanged).
    Kernel,
    /// A user-space binary's: `binaries[i]`.
    Binary(usize),
}

/// perf's name for vmlinux in `buildid-list` and in its MMAP2 records
/// (`[kernel.kallsyms]_text`).
const KERNEL_DSO: &[u8] = b"[kernel.kallsyms]";

/// One `ksym-resolve --store` run.
pub struct StoreRun<'s> {
    store: &'s Store,
    opts: ResolveOptions,
    /// A kernel forced by `--build-id`/`--release`: no switching.
    forced: bool,
    kernels: HashMap<Vec<u8>, Option<Kernel>>,
    releases: HashMap<Vec<u8>, Option<Vec<u8>>>,
    current: Option<Vec<u8>>,
    /// User-space binaries with a blob, loaded once per (path, build-id).
    binaries: Vec<Kernel>,
    loaded: HashMap<(Vec<u8>, Vec<u8>), Option<usize>>,
    /// Build-ids given (`perf buildid-list`) or read from perf's records.
    path_ids: HashMap<Vec<u8>, Vec<u8>>,
    /// Each path met so far: its binary (`None`: no build-id or no blob).
    path_bin: HashMap<Vec<u8>, Option<usize>>,
    /// Each file name a kernel fault report named: its blob (`None`: no
    /// single build-id for it, or no blob).
    named: HashMap<Vec<u8>, Option<&'static Kallsyms<'static>>>,
    /// A process's address space (`--maps`): each executable mapping's
    /// runtime addresses, its file (an index into `mapped`) and its path,
    /// by start address.
    spaces: Vec<(std::ops::Range<u64>, usize, Vec<u8>)>,
    /// The files of `--maps`, each loaded when an address first lands in
    /// it: a process maps dozens of libraries, a trace hits a few, and one
    /// the store lacks is packed from its file (with --inline, its DWARF
    /// read).
    mapped: Vec<Mapped>,
    target: Target,
    pending: Vec<u8>,
    /// Resolved text on its way to stdout: one write per block, not one per
    /// stretch of a binary's frames.
    written: Vec<u8>,
    /// perf's nameless `ADDR (inlined)` lines at `held_addr`, waiting for
    /// the frame they belong to: that frame's binary names them.
    held: Vec<u8>,
    held_addr: u64,
    /// Lines passed through because no kernel was selected.
    unselected: u64,
    notes: Vec<String>,
    /// A store error was met (the exit status says so).
    pub failed: bool,
}

/// A file of `--maps`: its mappings until it is loaded, then its binary.
#[derive(Debug)]
struct Mapped {
    maps: Vec<crate::normalize::maps::Mapping>,
    /// `None`: not loaded yet; `Some(None)`: no binary for it.
    binary: Option<Option<usize>>,
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
            binaries: Vec::new(),
            loaded: HashMap::new(),
            path_ids: HashMap::new(),
            path_bin: HashMap::new(),
            named: HashMap::new(),
            spaces: Vec::new(),
            mapped: Vec::new(),
            target: Target::Kernel,
            pending: Vec::with_capacity(OUT_BLOCK + MAX_LINE),
            written: Vec::with_capacity(2 * OUT_BLOCK + MAX_LINE),
            held: Vec::new(),
            held_addr: 0,
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
        let kernel = self
            .fetch(id, None, &format!("kernel {name}"), "traces")
            .map(|map| Kernel {
                map,
                resolver: Resolver::new(map, self.opts.clone()),
                name,
            });
        let ok = kernel.is_some();
        self.kernels.insert(id.to_vec(), kernel);
        ok
    }

    /// Records `path`'s build-id (`perf buildid-list`, an MMAP2 record);
    /// vmlinux's selects the kernel unless one was forced.
    pub fn learn_build_id(&mut self, path: &[u8], id: Vec<u8>) {
        let kernel = path
            .strip_prefix(KERNEL_DSO)
            .is_some_and(|t| t.is_empty() || t == b"_text");
        if kernel {
            if !self.forced && self.current.as_deref() != Some(&id[..]) {
                let k = KernelRef {
                    build_id: Some(id),
                    release: None,
                };
                self.current = self.select(&k);
            }
        } else if self.path_ids.get(path) != Some(&id) {
            self.path_bin.remove(path);
            self.path_ids.insert(path.to_vec(), id);
        }
    }

    /// `path`'s build-id: as given (`--build-ids`, perf's records), else,
    /// when `on_disk`, the file's on this machine.
    fn build_id_of(&self, path: &[u8], on_disk: bool) -> Option<Vec<u8>> {
        (self.path_ids.get(path).cloned())
            .or_else(|| on_disk.then(|| crate::normalize::maps::file_build_id(path))?)
    }

    /// The binary a callchain frame of `path` belongs to, with its blob
    /// loaded; `None` (and one note) when its build-id or blob is unknown.
    fn binary_of(&mut self, path: &[u8]) -> Option<usize> {
        if let Some(b) = self.path_bin.get(path) {
            return *b;
        }
        let id = self.build_id_of(path, true);
        let b = match id {
            Some(id) => {
                let key = (path.to_vec(), id);
                match self.loaded.get(&key) {
                    Some(b) => *b,
                    None => {
                        let b = self.load_binary(&key.0, &key.1).map(|k| {
                            self.binaries.push(k);
                            self.binaries.len() - 1
                        });
                        self.loaded.insert(key, b);
                        b
                    }
                }
            }
            None if is_perf_map(path) => {
                self.notes.push(format!(
                    "{}: a JIT's code: its frames pass unchanged (give the map with --perf-map)",
                    String::from_utf8_lossy(path)
                ));
                None
            }
            None => {
                self.notes.push(format!(
                    "{}: no build-id (not on this machine; give --build-ids from `perf buildid-list`, or record with --buildid-mmap): its frames pass unchanged",
                    String::from_utf8_lossy(path)
                ));
                None
            }
        };
        self.path_bin.insert(path.to_vec(), b);
        b
    }

    /// The blob of `id` from the store, opened for the rest of the run; a
    /// binary the store lacks whose file `local` is on this machine with
    /// that build-id is packed from it, with its lines under `--inline`
    /// ([`crate::elf::local::local_blob`]). `None`, with a note naming
    /// `name` (a failure is an error), when neither has it or it cannot be
    /// opened: its `what` pass unchanged.
    fn fetch(
        &mut self,
        id: &[u8],
        local: Option<&[u8]>,
        name: &str,
        what: &str,
    ) -> Option<&'static Kallsyms<'static>> {
        let blob = match self.store.blob(id) {
            Ok(Some(blob)) => blob,
            Ok(None) if let Some(blob) = local.and_then(|p| self.pack_local(id, p, name)) => blob,
            Ok(None) => {
                self.notes.push(format!(
                    "{name}: no blob in the store {}; its {what} pass unchanged",
                    self.store.describe()
                ));
                return None;
            }
            Err(e) => {
                self.fail(format!("{name}: {e}"));
                return None;
            }
        };
        match open_for_the_run(blob) {
            Ok(map) => Some(map),
            Err(e) => {
                self.fail(format!("{name}: {e}"));
                None
            }
        }
    }

    /// `path`'s blob when the file there has build-id `id`, with a note
    /// that the store lacked it; `None` (and a note) when packing fails.
    /// Names only, but with `--inline`: inline frames need the lines, and
    /// reading DWARF takes a library's size in time (0.3 s for libc's).
    fn pack_local(
        &mut self,
        id: &[u8],
        path: &[u8],
        name: &str,
    ) -> Option<crate::blobfile::AlignedBlob> {
        if crate::normalize::maps::file_build_id(path).as_deref() != Some(id) {
            return None;
        }
        let file = std::path::Path::new(std::str::from_utf8(path).ok()?);
        let lines = self.opts.inline;
        match crate::elf::local::local_blob(file, &Default::default(), lines) {
            Ok(local) => {
                let store = self.store.describe();
                self.notes.push(match &local.lines_from {
                    Some(dwarf) => format!(
                        "{name}: not in the store {store}; named from the file on this machine, lines from {}",
                        dwarf.display()
                    ),
                    None if lines => format!(
                        "{name}: not in the store {store}; named from the file on this machine (names only{})",
                        if local.warning.is_some() { "" } else { ": no DWARF in it or a debug file here" }
                    ),
                    None => format!(
                        "{name}: not in the store {store}; named from the file on this machine (names only: --inline, or ksym-pack --store DIR --lines --elf {}, adds its lines)",
                        file.display()
                    ),
                });
                if let Some(w) = local.warning {
                    self.notes.push(w);
                }
                Some(crate::blobfile::AlignedBlob::copy_from(&local.blob))
            }
            Err(e) => {
                self.notes
                    .push(format!("{name}: not in the store, and {e}"));
                None
            }
        }
    }

    fn load_binary(&mut self, path: &[u8], id: &[u8]) -> Option<Kernel> {
        let name = format!("{} ({})", String::from_utf8_lossy(path), hex(id));
        let map = self.fetch(id, Some(path), &name, "frames")?;
        let segments: Vec<_> = match map {
            Kallsyms::V2(v) => v.load_segments().collect(),
            Kallsyms::V1(_) => Vec::new(),
        };
        let Some(space) = file_offset_space(&segments, path) else {
            self.notes.push(format!(
                "{name}: its blob has no executable load segment with one file-offset bias (ksym-pack --elf writes them): its frames pass unchanged"
            ));
            return None;
        };
        Some(self.binary_resolver(map, space.bias, space.ranges, space.paths, name))
    }

    /// A user-space binary's (or a JIT's) resolver: addresses inside
    /// `ranges` less `bias`, perf frames of `paths`.
    fn binary_resolver(
        &self,
        map: &'static Kallsyms<'static>,
        bias: u64,
        ranges: Vec<std::ops::Range<u64>>,
        paths: Vec<Vec<u8>>,
        name: String,
    ) -> Kernel {
        let opts = ResolveOptions {
            slide: bias,
            kaslr_from_sym: false,
            ranges: Some(ranges.into()),
            paths: Some(paths.into()),
            ..self.opts.clone()
        };
        Kernel {
            map,
            resolver: Resolver::new(map, opts),
            name,
        }
    }

    /// Routes the frames of a JIT's perf map ([`crate::normalize::perf_map`])
    /// to its entries: perf's runtime addresses, no bias, inside its code.
    ///
    /// Errors: the packed map does not open (a bug: it was just packed).
    pub fn add_jit(&mut self, jit: crate::normalize::perf_map::JitSpace) -> Result<(), String> {
        let blob = crate::blobfile::AlignedBlob::copy_from(&jit.blob);
        let map = open_for_the_run(blob).map_err(|e| e.to_string())?;
        let name = String::from_utf8_lossy(&jit.paths[0]).into_owned();
        let jit_resolver = self.binary_resolver(map, 0, vec![jit.range], jit.paths.clone(), name);
        self.binaries.push(jit_resolver);
        for p in jit.paths {
            self.path_bin.insert(p, Some(self.binaries.len() - 1));
        }
        Ok(())
    }

    /// Places the binaries of a process's `/proc/PID/maps` (`--maps`):
    /// lines whose leading address is a runtime address inside one of
    /// their executable mappings go to that binary's blob, the address
    /// less its load bias. A binary's build-id comes from `--build-ids` or
    /// from the file on this machine (never for a `(deleted)` one: the file
    /// there now is another build); without one, or without a blob, or
    /// when its mappings do not line up with the blob's load segments, its
    /// addresses pass unchanged, with a note. Each binary is found when an
    /// address first lands in it.
    ///
    /// Errors: the maps file does not parse (the line named).
    pub fn add_maps(&mut self, text: &[u8]) -> Result<(), String> {
        use crate::normalize::maps::{file_mappings, parse};
        let all = parse(text)?;
        for (path, maps) in file_mappings(&all) {
            let j = self.mapped.len();
            self.spaces.extend(
                maps.iter()
                    .filter(|m| m.exec)
                    .map(|m| (m.range.clone(), j, path.to_vec())),
            );
            self.mapped.push(Mapped {
                maps: maps.into_iter().cloned().collect(),
                binary: None,
            });
        }
        self.spaces.sort_by_key(|s| s.0.start);
        Ok(())
    }

    /// The binary of `--maps` file `j`, loaded on first use; `None` (with
    /// a note, once) when it has no build-id, no blob or a blob whose
    /// segments its mappings do not match.
    fn mapped_binary(&mut self, j: usize) -> Option<usize> {
        if let Some(b) = self.mapped[j].binary {
            return b;
        }
        let b = self.load_mapped(j);
        self.mapped[j].binary = Some(b);
        b
    }

    fn load_mapped(&mut self, j: usize) -> Option<usize> {
        use crate::normalize::maps::load_bias;
        let maps = std::mem::take(&mut self.mapped[j].maps);
        let path = maps.first()?.path.clone();
        let (file, deleted) = match path.strip_suffix(b" (deleted)") {
            Some(f) => (f, true),
            None => (&path[..], false),
        };
        let shown = String::from_utf8_lossy(&path);
        let Some(id) = self.build_id_of(file, !deleted) else {
            self.notes.push(format!(
                "{shown}: no build-id (not on this machine; give --build-ids): its addresses pass unchanged"
            ));
            return None;
        };
        let name = format!("{shown} ({})", hex(&id));
        let map = self.fetch(&id, (!deleted).then_some(file), &name, "addresses")?;
        let segments: Vec<_> = match map {
            Kallsyms::V2(v) => v.load_segments().collect(),
            Kallsyms::V1(_) => Vec::new(),
        };
        let refs: Vec<_> = maps.iter().collect();
        let Some(bias) = load_bias(&refs, &segments) else {
            self.notes.push(format!(
                "{name}: its mappings do not line up with its blob's load segments (another build?): its addresses pass unchanged"
            ));
            return None;
        };
        let ranges = maps
            .iter()
            .filter(|m| m.exec)
            .map(|m| m.range.clone())
            .collect();
        let resolver = self.binary_resolver(map, bias, ranges, vec![file.to_vec()], name);
        self.binaries.push(resolver);
        Some(self.binaries.len() - 1)
    }

    /// The binary of `--maps` whose code holds the runtime address `line`
    /// starts with; not for a perf frame of another path (its address is
    /// that file's offset, not a runtime one).
    fn space_of(&mut self, line: &[u8]) -> Option<usize> {
        if self.spaces.is_empty() {
            return None;
        }
        let a = crate::normalize::maps::leading_address(line)?;
        let k = self.spaces.partition_point(|s| s.0.start <= a);
        let (range, j, path) = &self.spaces[k.checked_sub(1)?];
        if !range.contains(&a) {
            return None;
        }
        match callchain_path(line) {
            Some(p) if p != &path[..] => None,
            _ => self.mapped_binary(*j),
        }
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
        let k = match &self.target {
            Target::Kernel => self
                .current
                .as_ref()
                .and_then(|id| self.kernels.get_mut(id))
                .and_then(|k| k.as_mut()),
            Target::Binary(i) => self.binaries.get_mut(*i),
        };
        match k {
            Some(k) => {
                k.resolver.run(&self.pending[..], &mut self.written)?;
            }
            None => {
                self.unselected += bytecount_lines(&self.pending);
                if !self.opts.json {
                    self.written.extend_from_slice(&self.pending);
                }
            }
        }
        self.pending.clear();
        if self.written.len() >= OUT_BLOCK || self.opts.line_buffered {
            self.write_out(out)?;
        }
        Ok(())
    }

    fn write_out<W: Write>(&mut self, out: &mut W) -> io::Result<()> {
        out.write_all(&self.written)?;
        self.written.clear();
        out.flush()
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
                    if let Some((path, id)) = mmap2_build_id(l) {
                        self.flush(out)?;
                        self.learn_build_id(path, id);
                    }
                    // A crash report's line names its binary itself.
                    let named = match offset_frame(l) {
                        _ if self.opts.json => None,
                        Some(f) => self.name_offset_frame(l, &f),
                        None => user_fault(l).and_then(|f| self.name_fault(l, &f)),
                    };
                    if let Some(named) = named {
                        // Named here, in its place in the output.
                        self.release_held();
                        self.flush(out)?;
                        self.written.extend_from_slice(&named);
                        return Ok(());
                    }
                    if let Some(a) = nameless_inline(l) {
                        if a != self.held_addr {
                            self.release_held();
                        }
                        self.held_addr = a;
                        self.held.extend_from_slice(l);
                        return Ok(());
                    }
                    let target = match self.space_of(l) {
                        Some(i) => Target::Binary(i),
                        None => callchain_path(l)
                            .and_then(|p| self.binary_of(p))
                            .map_or(Target::Kernel, Target::Binary),
                    };
                    if let Target::Binary(i) = target
                        && !self.held.is_empty()
                        && !self.opts.json
                        && self.binaries[i].map.lines().is_some()
                        && callchain_address(l) == Some(self.held_addr)
                    {
                        // The binary's own inline chain replaces perf's
                        // nameless lines: the frame alone, with --inline.
                        self.held.clear();
                        self.flush(out)?;
                        self.target = target;
                        self.pending.extend_from_slice(l);
                        self.binaries[i].resolver.set_inline(true);
                        let done = self.flush(out);
                        self.binaries[i].resolver.set_inline(self.opts.inline);
                        return done;
                    }
                    self.release_held();
                    if target != self.target {
                        self.flush(out)?;
                        self.target = target;
                    }
                    l
                }
                Line::Long { piece, .. } => {
                    self.release_held();
                    piece
                }
            };
            self.pending.extend_from_slice(bytes);
            if self.pending.len() >= OUT_BLOCK || self.opts.line_buffered {
                self.flush(out)?;
            }
            Ok(())
        })?;
        self.release_held();
        self.flush(out)?;
        self.write_out(out)
    }

    /// A sanitizer's or glibc's frame ([`crate::normalize::offsets`]) with
    /// its function's name put in as that reporter prints a named frame;
    /// `None` when its binary, blob or function is unknown.
    fn name_offset_frame(&mut self, line: &[u8], f: &OffsetFrame<'_>) -> Option<Vec<u8>> {
        if let Some(id) = &f.build_id {
            self.learn_build_id(f.path, id.clone());
        }
        let i = self.binary_of(f.path)?;
        let hit = self.binaries[i].map.lookup_address(f.address)?;
        if hit.size.is_some_and(|s| hit.offset >= s) {
            return None;
        }
        let mut out = Vec::with_capacity(line.len() + 64);
        out.extend_from_slice(&line[..f.at]);
        match f.reporter {
            Reporter::Sanitizer => {
                out.extend_from_slice(b" in ");
                hit.symbol.name.extend_into(&mut out);
                out.push(b' ');
                out.extend_from_slice(line[f.at..].trim_ascii_start());
            }
            Reporter::Glibc => {
                hit.symbol.name.extend_into(&mut out);
                out.push(b'+');
                crate::text::hex::push_u64_0x(&mut out, hit.offset);
                let rest = &line[f.at..];
                let close = rest.iter().position(|&b| b == b')').unwrap_or(0);
                out.extend_from_slice(&rest[close..]);
            }
        }
        if !out.ends_with(b"\n") {
            out.push(b'\n');
        }
        Some(out)
    }

    /// A kernel fault report ([`crate::normalize::fault`]) with
    /// ` (NAME+0xOFF/0xSIZE[ FILE:LINE])` after its `in FILE[…]`: the
    /// faulting instruction's function and, when the blob has lines, its
    /// innermost source line. `None` when its binary, its place in it or
    /// its function is unknown.
    fn name_fault(&mut self, line: &[u8], f: &UserFault<'_>) -> Option<Vec<u8>> {
        let map = self.blob_named(f.name)?;
        let Kallsyms::V2(v) = map else { return None };
        let segments: Vec<_> = v.load_segments().collect();
        let Some(addr) = f.link_address(&segments) else {
            let note = format!(
                "{}: a fault report's mapping [{:x}+{:x}] lines up with no executable segment of its blob (another build?): it passes unchanged",
                String::from_utf8_lossy(f.name),
                f.vma.0,
                f.vma.1
            );
            // One note per mapping, however many reports it has.
            if !self.notes.contains(&note) {
                self.notes.push(note);
            }
            return None;
        };
        let hit = map.lookup_address(addr)?;
        if hit.size.is_some_and(|s| hit.offset >= s) {
            return None;
        }
        let mut out = Vec::with_capacity(line.len() + 96);
        out.extend_from_slice(&line[..f.at]);
        out.extend_from_slice(b" (");
        hit.symbol.name.extend_into(&mut out);
        out.push(b'+');
        crate::text::hex::push_u64_0x(&mut out, hit.offset);
        if let Some(size) = hit.size {
            out.push(b'/');
            crate::text::hex::push_u64_0x(&mut out, size);
        }
        let inner = map.lines().and_then(|t| Some((t, t.find(addr)?)));
        if let Some((table, row)) = inner
            && let Some(frame) = table.frames(&row).next()
            && frame.file != 0
        {
            let mut path = Vec::new();
            super::print::push_path(&mut path, table, &frame);
            out.push(b' ');
            let prefix = self.opts.strip_prefix.as_deref().unwrap_or_default();
            super::print::push_stripped(&mut out, &path, prefix);
            out.push(b':');
            super::print::push_u32(&mut out, frame.line);
        }
        out.push(b')');
        out.extend_from_slice(&line[f.at..]);
        Some(out)
    }

    /// The blob of the binary a fault report names by file name alone:
    /// the one path of `--build-ids` (or perf's records) with that name,
    /// else the one build-id the store lists under it (`ksym-pack --store
    /// --elf`). `None`, with one note, when there is none or more than one.
    fn blob_named(&mut self, name: &[u8]) -> Option<&'static Kallsyms<'static>> {
        if let Some(b) = self.named.get(name) {
            return *b;
        }
        let shown = String::from_utf8_lossy(name).into_owned();
        let file_name = |p: &[u8]| p.rsplit(|&b| b == b'/').next() == Some(name);
        let mut given: Vec<(&Vec<u8>, &Vec<u8>)> =
            self.path_ids.iter().filter(|(p, _)| file_name(p)).collect();
        given.sort_by(|a, b| (a.1, a.0).cmp(&(b.1, b.0)));
        given.dedup_by(|a, b| a.1 == b.1);
        let blob = match given[..] {
            [(path, id)] => {
                let (path, id) = (path.clone(), id.clone());
                let label = format!("{} ({})", String::from_utf8_lossy(&path), hex(&id));
                self.fetch(&id, Some(&path), &label, "fault reports")
            }
            [..] if given.len() > 1 => {
                self.notes.push(format!(
                    "{shown}: {} binaries of that name in --build-ids; its fault reports pass unchanged",
                    given.len()
                ));
                None
            }
            _ => match self.store.name_ids(name) {
                Err(e) => {
                    self.fail(format!("{shown}: {e}"));
                    None
                }
                Ok(ids) if ids.len() == 1 => {
                    let label = format!("{shown} ({})", hex(&ids[0]));
                    self.fetch(&ids[0], None, &label, "fault reports")
                }
                Ok(ids) if ids.is_empty() => {
                    self.notes.push(format!(
                        "{shown}: no binary of that name in the store {} (ksym-pack --store DIR --elf PATH lists it) or in --build-ids; its fault reports pass unchanged",
                        self.store.describe()
                    ));
                    None
                }
                Ok(ids) => {
                    let list: Vec<String> = ids.iter().map(|i| hex(i)).collect();
                    self.notes.push(format!(
                        "{shown}: {} builds of that name in the store ({}) and the report names no build-id; its fault reports pass unchanged (give --build-ids)",
                        ids.len(),
                        list.join(", ")
                    ));
                    None
                }
            },
        };
        self.named.insert(name.to_vec(), blob);
        blob
    }

    /// perf's inline lines that no frame of a blob with lines followed:
    /// they pass as they came, before the line that follows them.
    fn release_held(&mut self) {
        self.pending.extend_from_slice(&self.held);
        self.held.clear();
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
        // A user-space report (binaries, no kernel) has text around its
        // frames, not kernel traces waiting for a kernel.
        let user_only = !self.binaries.is_empty() && self.kernels.is_empty();
        if self.unselected > 0 && !self.forced && !user_only {
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

/// `blob` opened for the rest of the process: a run uses each blob until
/// it ends, and resolvers borrow it (see [`Kernel`]).
///
/// Errors: the blob does not open (FORMAT.md §13).
fn open_for_the_run(
    blob: crate::blobfile::AlignedBlob,
) -> Result<&'static Kallsyms<'static>, crate::blob::BlobError> {
    let blob: &'static crate::blobfile::AlignedBlob = Box::leak(Box::new(blob));
    Ok(Box::leak(Box::new(Kallsyms::from_blob(
        blob.as_bytes(),
        None,
        None,
    )?)))
}

/// Whether `path` is perf's name for a JIT's anonymous code,
/// `/tmp/perf-PID.map`.
fn is_perf_map(path: &[u8]) -> bool {
    path.strip_prefix(b"/tmp/perf-")
        .and_then(|r| r.strip_suffix(b".map"))
        .is_some_and(|pid| !pid.is_empty() && pid.iter().all(u8::is_ascii_digit))
}

/// What a store run knows of the traced machine before its first line.
#[derive(Default)]
pub struct Known<'a> {
    /// `(path, build-id)` pairs of `perf buildid-list` (`--build-ids`).
    pub build_ids: &'a [crate::normalize::perf::PathBuildId],
    /// JIT perf maps (`--perf-map`), each with its file's name.
    pub jits: Vec<(String, crate::normalize::perf_map::JitSpace)>,
    /// A process's `/proc/PID/maps` (`--maps`): its file's name and text
    /// ([`StoreRun::add_maps`]).
    pub maps: Option<(&'a str, &'a [u8])>,
}

/// Everything `ksym-resolve --store SPEC` does once its arguments are
/// parsed: opens the store (HTTP requests limited to `timeout`, remote
/// blobs cached under [`crate::store::fetch::default_cache_dir`]), learns
/// what is `known`, resolves each input with its own kernel's and
/// binaries' blobs, prints the notes on stderr.
///
/// Errors: the store cannot be opened, a perf map or maps file is not
/// one (its line named), an input cannot be read, stdout fails, or a
/// store error was met during the run (the traces concerned passed
/// unchanged; the message says how many errors).
pub fn resolve_with_store(
    spec: &str,
    timeout: std::time::Duration,
    opts: ResolveOptions,
    forced: Option<KernelRef>,
    known: Known<'_>,
    inputs: &[String],
) -> Result<(), crate::cli::CliError> {
    use crate::cli::{CliError, open_input};
    let store = Store::open(spec, timeout, crate::store::fetch::default_cache_dir())
        .map_err(|e| CliError::input("--store", e))?;
    let mut run = StoreRun::new(&store, opts, forced);
    for (path, id) in known.build_ids {
        run.learn_build_id(path, id.clone());
    }
    for (file, jit) in known.jits {
        run.add_jit(jit).map_err(|e| CliError::input(&file, e))?;
    }
    if let Some((file, text)) = known.maps {
        run.add_maps(text).map_err(|e| CliError::input(file, e))?;
    }
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
        crate::note!("ksym-resolve: {n}");
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
