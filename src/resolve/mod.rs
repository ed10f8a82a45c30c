//! The resolver stream behind `ksym-resolve`: reads lines, rewrites the ones
//! that carry kernel code addresses, passes every other line through byte for
//! byte.
//!
//! Line kinds (docs/resolve.md shows each with an example):
//! - a bare hex address (`ffffffff81234567`, 5 to 16 digits, or `0x` and 1 to
//!   16 digits; leading blanks allowed) →
//!   `ADDR TYPE NAME+0xOFF/0xSIZE` (kernel `%pS` style), `ADDR ? [unknown]`;
//! - a `perf script` frame whose DSO is `[kernel.kallsyms]`
//!   (`\tADDR SYM+0xOFF (DSO)`, also the one-line sample form) → SYM replaced
//!   by ours, the rest kept;
//! - a `perf script -F ip,sym[,symoff]` or bcc-style frame (`\tADDR SYM`,
//!   `\t0xADDR SYM`, no DSO) at a kernel address (at or above the first
//!   symbol) → SYM replaced likewise;
//! - kernel log lines behind any log prefix (`prefix.rs`: dmesg,
//!   journalctl, syslog, printk caller ids, console levels): raw addresses
//!   in frame positions (`[<ADDR>] 0xADDR`, `RIP: 0010:0xADDR`, each
//!   architecture's pc/lr fields; `logline.rs`) get `func+0x12/0x40`;
//! - every `func+0x12/0x40` word on such a line is left as it is and
//!   checked against the blob ([`ResolveStats::checked`]); with
//!   [`ResolveOptions::kaslr_from_sym`] the first one that comes with an
//!   address sets the KASLR slide;
//! - `Code:` lines are disassembled after the line (`code/`,
//!   `print/code.rs`).
//!
//! Other hex on such lines (RSP, register dumps, timestamps, `Code:` bytes)
//! is data, not code: it is never touched.
//!
//! On a v2 blob with source lines (FORMAT.md §15, docs/lines-and-modules.md):
//! bare addresses get ` FILE:LINE` and ` > FUNC FILE:LINE` per inlined
//! call; oops lines with `func+0xOFF/0xSIZE` are rewritten as
//! `scripts/decode_stacktrace.sh` prints them (`kinds.rs`'s `Stacktrace`);
//! `[<ADDR>] 0xADDR` lines get ` (FILE:LINE ...)` after the symbol; JSON
//! objects get `"frames"`; with [`ResolveOptions::inline`], perf callchains
//! get a `(inlined)` frame line per inlined function.
//!
//! Folders, by job: `recognise/` finds what a line is and where its
//! addresses are (`kinds.rs`; `prefix.rs`, `logline.rs` and `oops.rs` for
//! log lines), `code/` reads and disassembles `Code:` lines, `print/`
//! writes the output forms, `batch/` holds the lookups of a batch of lines
//! and the caches they share. `job.rs` is what the binary runs,
//! `store_run.rs` runs a stream against a store, and this file runs the
//! batched stream.

use std::io::{self, BufRead, Write};

use crate::addrindex::AddressIndex;
use crate::blob::AddressHit;
use crate::blob::Kallsyms;
use crate::blob::v2::module_space::read::ModuleSpace;
use crate::blob::v2::read::{Located, RowHit};
use crate::blob::v2::source_lines::read::{LineTable, SourceRow};
use crate::text::hex;
use crate::text::lines::{Line, for_each_line};

mod batch;
pub mod code;
pub mod job;
mod print;
mod recognise;
pub mod store_run;

use batch::blocks::BlockRows;
use batch::cache::{DecodedCache, NameCache, RowCache};
use batch::rows::RowTable;

pub use batch::modules::LoadedModules;
use batch::plan::{Lookup, Plan};
use recognise::bytes::trim_end_nl;
pub(crate) use recognise::oops::LineRef;
use recognise::{logline, oops};

/// Lines longer than this are passed through in pieces without being parsed.
pub const MAX_LINE: usize = 64 * 1024;

/// Output is handed to the writer in blocks of about this many bytes.
pub const OUT_BLOCK: usize = 64 * 1024;

/// Lookups handled per batch in [`Resolver::run`] (a bare address or a
/// perf frame is one; a log line has one per reference).
pub const BATCH: usize = 64;

/// Room for one more line's lookups past [`BATCH`].
const LOOKUPS: usize = BATCH + logline::MAX_REFS;

/// How to print.
#[derive(Debug, Clone, Default)]
pub struct ResolveOptions {
    /// Print `/0xSIZE` after offsets (kernel `%pS`); perf frames never get one.
    pub size: bool,
    /// KASLR slide subtracted from every address before lookup; the printed
    /// address is the original.
    pub slide: u64,
    /// Set the slide from the first `[<ADDR>] func+0xOFF` or perf frame whose
    /// symbol is in the blob: `ADDR − OFF − address(func)`.
    pub kaslr_from_sym: bool,
    /// Hand each output line to the writer (and flush) at once.
    pub line_buffered: bool,
    /// One JSON object per address instead of text; other lines are dropped.
    pub json: bool,
    /// perf callchains: insert a frame line for each inlined function before
    /// the frame it was inlined into, as `perf script --inline` does (needs a
    /// blob with source lines).
    pub inline: bool,
    /// A build-directory prefix removed from source paths (with the `/` that
    /// follows it), as decode_stacktrace.sh's base path argument. Oops lines
    /// use the prefix before `/init/main.c` of `kernel_init`'s file when
    /// this is `None`, as the script's `auto` does.
    pub strip_prefix: Option<Vec<u8>>,
    /// The traced machine's /proc/kallsyms (`--loaded FILE`): its `[mod]`
    /// symbols place module sections for raw addresses, its `_stext` gives
    /// vmlinux's slide when `slide` is 0.
    pub loaded: Option<crate::blob::list::SymbolList>,
    /// The instruction set of `Code:` lines (`--arch`); else the report's
    /// register lines tell it, or the width of the code's tokens.
    pub arch: Option<code::Arch>,
    /// `--maps`: the runtime ranges where the blob's binary is mapped;
    /// an address outside them is another binary's and is left as it was
    /// (`slide` is then the binary's load bias). `None`: every address.
    pub ranges: Option<std::sync::Arc<[std::ops::Range<u64>]>>,
    /// `--maps`: the paths the blob's binary is mapped from; a perf frame
    /// ` (PATH)` of one of them, inside `ranges`, is rewritten.
    pub paths: Option<std::sync::Arc<[Vec<u8>]>>,
}

/// What a run saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResolveStats {
    /// Input lines.
    pub lines: u64,
    /// Addresses looked up.
    pub lookups: u64,
    /// Lookups that found a symbol.
    pub resolved: u64,
    /// Kernel addresses that were zero (`kptr_restrict` hides them so).
    pub zero: u64,
    /// `func+0xOFF[/0xSIZE]` references checked against the blob.
    pub checked: u64,
    /// Checked references whose function is not in the blob, or whose offset
    /// or size disagrees with it (another kernel build?).
    pub mismatched: u64,
    /// The slide learnt with `kaslr_from_sym`, and the line it came from.
    pub learnt_slide: Option<(u64, u64)>,
    /// `[mod BUILDID]` references whose build-id is not the blob's module's.
    pub build_id_mismatch: u64,
    /// Lookups in module space (`--modules` blobs).
    pub module_lookups: u64,
}

impl ResolveStats {
    /// What a run should tell its user on stderr, one message each: the
    /// learnt KASLR slide; warnings when every address was zero
    /// (kptr_restrict), when most matched nothing while `slide` was 0 and
    /// none was learnt (KASLR; for a program's blob, runtime addresses
    /// without `--maps`), and when `func+0xoff` references
    /// disagreed with `map` (naming its release when it has one).
    pub fn notes(&self, map: &Kallsyms<'_>, slide: u64) -> Vec<String> {
        let st = self;
        let mut notes = Vec::new();
        if let Some((slide, line)) = st.learnt_slide {
            notes.push(format!(
                "KASLR slide {slide:#x} (from the symbol reference on input line {line})"
            ));
        }
        if st.lookups > 0 && st.zero == st.lookups {
            notes.push(
                "warning: every kernel address was zero: the capture was taken under kptr_restrict"
                    .into(),
            );
        } else if st.lookups >= 16
            && st.resolved * 2 < st.lookups
            && slide == 0
            && st.learnt_slide.is_none()
        {
            // A program's or library's blob (ksym-pack --elf) has no KASLR:
            // its runtime addresses are the load bias away.
            let hint = if describes_program(map) {
                "runtime addresses of a program or library need its process's mappings: --maps FILE (a /proc/PID/maps)".to_string()
            } else {
                format!(
                    "if the kernel ran with KASLR, pass --offset SLIDE (runtime _stext minus {:#x}) or --kaslr-from-sym",
                    map.stext().unwrap_or(0)
                )
            };
            notes.push(format!(
                "warning: {} of {} addresses matched no symbol; {hint}",
                st.lookups - st.resolved,
                st.lookups,
            ));
        }
        if st.mismatched > 0 {
            let built = match map.release() {
                Some(r) => format!("the blob is of {}", String::from_utf8_lossy(r)),
                None => "another kernel build?".into(),
            };
            notes.push(format!(
                "warning: {} of {} func+0xoff references in the input disagree with the blob ({built})",
                st.mismatched, st.checked
            ));
        }
        notes
    }
}

/// Whether `map` describes a program or library rather than a kernel: it
/// holds its binary's load segments (FORMAT.md §10.8, `ksym-pack --elf`).
fn describes_program(map: &Kallsyms<'_>) -> bool {
    match map {
        Kallsyms::V2(v) => v.load_segments().next().is_some(),
        Kallsyms::V1(_) => false,
    }
}

/// Rewrites lines against one blob (either format).
#[derive(Debug)]
pub struct Resolver<'m, 'a> {
    map: &'m Kallsyms<'a>,
    opts: ResolveOptions,
    index: AddressIndex,
    first_address: Option<u64>,
    /// The blob describes a program or library (it holds load segments,
    /// `ksym-pack --elf`): a perf frame without a DSO may be any binary's,
    /// so it is rewritten only inside `--maps`' ranges.
    user_binary: bool,
    lineno: u64,
    stats: ResolveStats,
    /// A name expanded for JSON escaping (reused: no allocation per line).
    scratch: Vec<u8>,
    /// [`Resolver::run`]'s output block and batch, kept between calls: a
    /// store run calls it per stretch of one binary's frames.
    spare: (Vec<u8>, Batch),
    answers: Answers<'a>,
    /// A v2 blob's stored rows, decoded, with their names' cache entries
    /// (`None` for v1, or stored addresses spanning 4 GiB or more).
    rows: Option<RowTable>,
    /// Names by name-order rank, for lookups that do not go through `rows`
    /// (the module space's, a v2 blob without `rows`; a v1 blob's names
    /// are not coded and pass straight through).
    names: NameCache,
    /// The blob's source lines and inline frames, when it has them.
    lines: Option<LineTable<'a>>,
    /// Narrows the search of `lines`' row blocks.
    line_index: Option<AddressIndex>,
    /// Rows of recently resolved addresses: traces repeat a few thousand
    /// return addresses, and decoding a row block costs more than a probe.
    row_cache: RowCache,
    /// `lines`' row blocks, decoded once.
    blocks: BlockRows,
    /// The same for the module space's line table: a profile's driver
    /// frames come back to the same blocks as the kernel's do.
    module_blocks: BlockRows,
    /// The prefix oops lines strip from paths (decode_stacktrace.sh's base path).
    oops_prefix: Vec<u8>,
    /// An address's frames, reused.
    frames: Vec<crate::blob::v2::source_lines::read::SourceFrame>,
    /// Source paths (`dir/file`) decoded once, by file id.
    paths: DecodedCache,
    /// Function names of frames decoded once, by string id.
    functions: DecodedCache,
    /// The blob's kernel modules (FORMAT.md §16), when packed with them.
    modules: Option<ModuleSpace<'a>>,
    /// The other space's line table and caches: the fields above belong
    /// to the space being printed, and a module-space line swaps them.
    other: SpaceCaches<'a>,
    /// Module sections placed at runtime (`--loaded`).
    loaded: Option<LoadedModules>,
    /// The module-space address of the line `plan` just looked at.
    module_addr: Option<u64>,
    /// The first `[mod BUILDID]` mismatch, for the closing note.
    build_id_note: Option<String>,
    /// A log line's references and words, reused.
    found: Vec<logline::Reference>,
    words: Vec<(usize, usize)>,
    /// The report being read: its architecture and faulting address.
    report: oops::Report,
    /// The input line number of the line being printed.
    emitting: u64,
    /// Kernel functions of checked references, by name.
    symbols: oops::SymbolCache,
}

/// A symbol space's line table and decoded-string caches (the kernel's,
/// or the modules'), kept apart because their ids overlap.
#[derive(Debug, Default)]
struct SpaceCaches<'a> {
    lines: Option<LineTable<'a>>,
    names: NameCache,
    paths: DecodedCache,
    functions: DecodedCache,
}

/// [`Resolver::flush_batch`]'s per-lookup answers, kept between batches
/// and reset for the batch's lookups only: a store run flushes a batch per
/// stretch of one binary's frames, often a line or two, and zeroing
/// arrays sized for the largest batch (~16 KiB) cost more than its lookups.
#[derive(Debug, Default)]
struct Answers<'a> {
    ranks: Vec<usize>,
    hits: Vec<Option<AddressHit<'a>>>,
    row_hits: Vec<Option<RowHit>>,
    rows: Vec<Option<SourceRow>>,
    blocks: Vec<usize>,
    shown: Vec<Option<print::Hit<'a>>>,
}

impl Answers<'_> {
    /// Every answer empty, for `n` lookups.
    fn reset(&mut self, n: usize) {
        fn fill<T: Clone>(v: &mut Vec<T>, n: usize, x: T) {
            v.clear();
            v.resize(n, x);
        }
        fill(&mut self.ranks, n, 0);
        fill(&mut self.hits, n, None);
        fill(&mut self.row_hits, n, None);
        fill(&mut self.rows, n, None);
        fill(&mut self.blocks, n, usize::MAX);
        fill(&mut self.shown, n, None);
    }
}

/// Lines waiting for their lookups.
#[derive(Debug, Default)]
struct Batch {
    text: Vec<u8>,
    /// Per line: its text in `text`, its plan, its lookups in `lookups`.
    plans: Vec<(std::ops::Range<usize>, Plan, std::ops::Range<usize>)>,
    lookups: Vec<Lookup>,
    /// The references of log lines ([`Plan::Log`]), in line order.
    refs: Vec<LineRef>,
}

impl Batch {
    fn clear(&mut self) {
        self.text.clear();
        self.plans.clear();
        self.lookups.clear();
        self.refs.clear();
    }
}

impl<'m, 'a> Resolver<'m, 'a> {
    /// Turns `--inline` on or off for the lines run from now on (a store
    /// run replaces perf's own nameless `(inlined)` lines so).
    pub fn set_inline(&mut self, on: bool) {
        self.opts.inline = on;
    }

    /// A resolver over `map`.
    pub fn new(map: &'m Kallsyms<'a>, opts: ResolveOptions) -> Self {
        let first_address = map.symbols().next().map(|s| s.address);
        // Runtime ranges (--maps, --perf-map) belong to one user-space
        // binary or JIT, whatever the blob holds.
        let user_binary = describes_program(map) || opts.ranges.is_some();
        let lines = map.lines().copied();
        let modules = map.module_space();
        let rows = match map {
            Kallsyms::V2(v) => RowTable::new(v),
            Kallsyms::V1(_) => None,
        };
        let index = match &rows {
            Some(t) => AddressIndex::over(t.len(), |j| t.address(j)),
            None => AddressIndex::for_blob(map),
        };
        let mut r = Resolver {
            map,
            opts,
            index,
            first_address,
            user_binary,
            lineno: 0,
            stats: ResolveStats::default(),
            scratch: Vec::with_capacity(256),
            spare: (Vec::new(), Batch::default()),
            answers: Answers::default(),
            // Only a v2 blob without `rows` looks its names up by rank.
            names: match (map, &rows) {
                (Kallsyms::V2(v), None) => NameCache::with_slots(v.stored()),
                _ => NameCache::default(),
            },
            rows,
            lines,
            line_index: lines.map(|l| AddressIndex::over(l.blocks(), |b| l.block_address(b))),
            oops_prefix: Vec::new(),
            row_cache: RowCache::default(),
            blocks: BlockRows::new(lines.as_ref()),
            module_blocks: BlockRows::new(modules.as_ref().and_then(|m| m.lines())),
            frames: Vec::new(),
            paths: DecodedCache::default(),
            functions: DecodedCache::default(),
            modules,
            other: SpaceCaches {
                lines: modules.and_then(|m| m.lines().copied()),
                names: NameCache::with_slots(modules.map_or(0, |m| m.symbols().stored())),
                ..SpaceCaches::default()
            },
            loaded: None,
            module_addr: None,
            build_id_note: None,
            found: Vec::new(),
            words: Vec::new(),
            report: oops::Report::default(),
            emitting: 0,
            symbols: oops::SymbolCache::default(),
        };
        if let Some(snapshot) = r.opts.loaded.take() {
            let l = LoadedModules::new(&snapshot, map, modules.as_ref());
            if r.opts.slide == 0 {
                r.opts.slide = l.slide.unwrap_or(0);
            }
            r.loaded = Some(l);
        }
        r.oops_prefix = match &r.opts.strip_prefix {
            Some(p) => p.clone(),
            None => r.auto_prefix(),
        };
        r
    }

    /// decode_stacktrace.sh's `auto` base path: what precedes the last
    /// `/init/main.c:` in `kernel_init`'s `addr2line -i` output.
    fn auto_prefix(&self) -> Vec<u8> {
        let (Some(lines), Some(s)) = (&self.lines, self.map.lookup_name(b"kernel_init")) else {
            return Vec::new();
        };
        let mut code = Vec::new();
        if let Some(row) = lines.find(s.address) {
            for f in lines.frames(&row) {
                print::push_path(&mut code, lines, &f);
                code.extend_from_slice(format!(":{} ", f.line).as_bytes());
            }
        }
        match bstr::ByteSlice::rfind(&code[..], b"/init/main.c:") {
            Some(i) => code[..i].to_vec(),
            None => Vec::new(),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> ResolveStats {
        self.stats
    }

    /// What the module side has to say at the end: the first build-id
    /// mismatch, and what `--loaded` placed.
    pub fn module_notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if let Some(n) = &self.build_id_note {
            notes.push(format!(
                "warning: {n} ({} such references in all)",
                self.stats.build_id_mismatch
            ));
        }
        if let Some(l) = &self.loaded {
            notes.push(format!(
                "--loaded: {} module sections placed; KASLR slide {:#x}{}",
                l.placed_sections(),
                self.opts.slide,
                if l.disagreeing > 0 {
                    format!("; warning: {} module symbols disagree with their section's placement (another build?)", l.disagreeing)
                } else {
                    String::new()
                }
            ));
            if !l.unknown_modules.is_empty() {
                notes.push(format!(
                    "--loaded: {} modules are not in the blob (their addresses stay unresolved), e.g. {}",
                    l.unknown_modules.len(),
                    String::from_utf8_lossy(&l.unknown_modules[0])
                ));
            }
        }
        notes
    }

    /// Appends the name of the hit being printed: from the row table when
    /// the hit came from it, else through the name cache.
    #[inline]
    fn push_name(&mut self, out: &mut Vec<u8>, name: print::HitName<'_>) {
        match (name, &mut self.rows, self.map) {
            (print::HitName::Row { row, folded }, Some(t), Kallsyms::V2(v)) => {
                t.push_name(row, folded, out, v)
            }
            (print::HitName::Row { row, folded }, _, Kallsyms::V2(v)) => {
                self.names.push(out, &v.row_name(row, folded))
            }
            (print::HitName::Name(n), ..) => self.names.push(out, &n),
            // Rows come from v2 blobs only.
            (print::HitName::Row { .. }, _, Kallsyms::V1(_)) => {}
        }
    }

    /// Exchanges the kernel's and the modules' line tables and caches.
    fn swap_spaces(&mut self) {
        std::mem::swap(&mut self.lines, &mut self.other.lines);
        std::mem::swap(&mut self.names, &mut self.other.names);
        std::mem::swap(&mut self.paths, &mut self.other.paths);
        std::mem::swap(&mut self.functions, &mut self.other.functions);
    }

    #[inline]
    fn count(&mut self, addr: u64, hit: bool) {
        self.stats.lookups += 1;
        self.stats.zero += u64::from(addr == 0);
        self.stats.resolved += u64::from(hit);
    }

    /// Resolves `input` to `output` until the input ends.
    ///
    /// Lines are handled in batches (up to [`BATCH`] lines or [`OUT_BLOCK`]
    /// bytes; one line with `line_buffered`, or while `kaslr_from_sym` has not
    /// found the slide yet): all lookups of a batch run back to back so their
    /// cache misses overlap.
    ///
    /// Errors: read or write errors (a closed pipe surfaces as
    /// `ErrorKind::BrokenPipe`; callers end quietly on it).
    pub fn run<R: BufRead, W: Write>(
        &mut self,
        input: R,
        mut output: W,
    ) -> io::Result<ResolveStats> {
        let (mut out, mut batch) = std::mem::take(&mut self.spare);
        out.clear();
        batch.clear();
        out.reserve(2 * OUT_BLOCK + MAX_LINE);
        let line_buffered = self.opts.line_buffered;
        for_each_line(input, MAX_LINE, |_, line| {
            match line {
                Line::Full(l) => {
                    let first = batch.lookups.len();
                    let plan = self.plan(l, &mut batch.lookups, &mut batch.refs);
                    let start = batch.text.len();
                    batch.text.extend_from_slice(l);
                    let lookups = first..batch.lookups.len();
                    batch.plans.push((start..batch.text.len(), plan, lookups));
                    let learning = self.opts.kaslr_from_sym && self.stats.learnt_slide.is_none();
                    if line_buffered
                        || learning
                        || batch.lookups.len() >= BATCH
                        || batch.plans.len() >= BATCH
                        || batch.text.len() >= OUT_BLOCK
                    {
                        self.flush_batch(&mut batch, &mut out);
                    }
                }
                Line::Long { piece, first } => {
                    self.flush_batch(&mut batch, &mut out);
                    if first {
                        self.lineno += 1;
                        self.stats.lines += 1;
                    }
                    if !self.opts.json {
                        out.extend_from_slice(piece);
                    }
                }
            }
            if line_buffered || out.len() >= OUT_BLOCK {
                output.write_all(&out)?;
                out.clear();
                if line_buffered {
                    output.flush()?;
                }
            }
            Ok(())
        })?;
        self.flush_batch(&mut batch, &mut out);
        output.write_all(&out)?;
        self.spare = (out, batch);
        output.flush()?;
        Ok(self.stats)
    }

    fn flush_batch(&mut self, batch: &mut Batch, out: &mut Vec<u8>) {
        // Phases whose loops are short and whose loads are independent, so the
        // CPU overlaps the cache misses of different lookups: rank each
        // address, touch each symbol's record, then look up (now from cache)
        // and print.
        let n = batch.lookups.len();
        debug_assert!(n <= LOOKUPS);
        let slide = self.opts.slide;
        // Another binary's address (--maps) is not looked up: no name
        // rather than a wrong one.
        let ranges = self.opts.ranges.clone();
        let mine = |a: &u64| {
            ranges
                .as_ref()
                .is_none_or(|r| r.iter().any(|x| x.contains(a)))
        };
        let kernel_addr = |l: &Lookup| l.addr.filter(|a| l.module_addr.is_none() && mine(a));
        let mut answers = std::mem::take(&mut self.answers);
        answers.reset(n);
        let Answers {
            ranks,
            hits,
            row_hits,
            rows,
            blocks,
            shown,
        } = &mut answers;
        for (r, l) in ranks.iter_mut().zip(&batch.lookups) {
            if let Some(addr) = kernel_addr(l) {
                let a = addr.wrapping_sub(slide);
                let w = self.index.window(a);
                *r = match &self.rows {
                    Some(t) => t.rank(w, a),
                    None => self.map.rank_in(a, w),
                };
            }
        }
        let mut touch = 0u8;
        // A v2 blob's pfx and type bits are a few KB and stay cached.
        if self.rows.is_none() {
            for &r in &ranks[..n] {
                touch ^= self.map.touch(r);
            }
        }
        // v1 blobs and module references: full answers; v2: where each
        // lands, the rest read when printed (most of it cached per row).
        for (i, l) in batch.lookups.iter().enumerate() {
            let Some(addr) = kernel_addr(l) else {
                continue;
            };
            let a = addr.wrapping_sub(slide);
            let found = match self.map {
                Kallsyms::V2(v) => {
                    let loc = match &self.rows {
                        Some(t) => t.located(ranks[i]),
                        None => Located {
                            rank: ranks[i],
                            ..Located::default()
                        },
                    };
                    row_hits[i] = v.locate_row(a, loc);
                    row_hits[i].is_some()
                }
                Kallsyms::V1(_) => {
                    hits[i] = self.map.lookup_ranked(a, ranks[i]);
                    hits[i].is_some()
                }
            };
            self.count(addr, found);
        }
        // v2: the decoded names these hits print, before printing.
        if let Some(t) = &self.rows {
            for h in row_hits[..n].iter().flatten() {
                touch ^= t.touch_name(h.row);
            }
        }
        std::hint::black_box(touch);
        if let Some(lines) = &self.lines {
            // The same phases for the line table: find each block, touch
            // its rows, then decode.
            for ((b, r), l) in blocks.iter_mut().zip(rows.iter_mut()).zip(&batch.lookups) {
                if let Some(addr) = kernel_addr(l).filter(|_| l.lines) {
                    let a = addr.wrapping_sub(slide);
                    if let Some(cached) = self.row_cache.get(a) {
                        *r = cached;
                        continue;
                    }
                    let window = self
                        .line_index
                        .as_ref()
                        .map_or(0..usize::MAX, |i| i.window(a));
                    *b = lines.block_of(a, window).unwrap_or(usize::MAX - 1);
                }
            }
            let mut t = 0u8;
            for (&b, l) in blocks[..n].iter().zip(&batch.lookups) {
                if let (Some(addr), true) = (l.addr, b < usize::MAX - 1) {
                    t ^= self.blocks.touch(lines, b, addr.wrapping_sub(slide));
                }
            }
            std::hint::black_box(t);
            for ((r, &b), l) in rows.iter_mut().zip(blocks.iter()).zip(&batch.lookups) {
                if let (Some(addr), true) = (l.addr, b != usize::MAX) {
                    let a = addr.wrapping_sub(slide);
                    *r = self.blocks.find(lines, b, a);
                    self.row_cache.put(a, *r);
                }
            }
            let mut t = 0u8;
            for r in rows[..n].iter().flatten() {
                t ^= lines.touch_node(r);
            }
            std::hint::black_box(t);
        }
        // Module references: fewer, looked up one by one (their blocks
        // decoded once, as the kernel's).
        for (i, l) in batch.lookups.iter().enumerate() {
            let (Some(ma), Some(ms)) = (l.module_addr, &self.modules) else {
                continue;
            };
            let hit = ms.lookup_address(ma).map(|h| h.hit);
            self.stats.module_lookups += 1;
            self.stats.resolved += u64::from(hit.is_some());
            hits[i] = hit;
            rows[i] = ms.lines().filter(|_| l.lines).and_then(|t| {
                let b = t.block_of(ma, 0..usize::MAX)?;
                self.module_blocks.find(t, b, ma)
            });
        }
        for (i, s) in shown.iter_mut().enumerate() {
            *s = match (row_hits[i], self.map) {
                (Some(h), Kallsyms::V2(v)) => Some(print::Hit {
                    symbol_type: match &mut self.rows {
                        Some(t) => t.symbol_type(h.row, v),
                        None => v.row_symbol_type(h.row),
                    },
                    offset: h.offset,
                    size: h.size,
                    module: v.row_module(h.row),
                    name: print::HitName::Row {
                        row: h.row,
                        folded: h.folded,
                    },
                }),
                _ => hits[i].as_ref().map(print::Hit::from),
            };
        }
        let plans = std::mem::take(&mut batch.plans);
        // Lines are numbered as read; a batch holds consecutive lines.
        self.emitting = self.lineno - plans.len() as u64;
        for (range, plan, ls) in &plans {
            self.emitting += 1;
            let line = &batch.text[range.clone()];
            let module = ls.len() == 1 && batch.lookups[ls.start].module_addr.is_some();
            let ctx = print::Looked {
                hits: &shown[ls.clone()],
                rows: &rows[ls.clone()],
                lookups: &batch.lookups[ls.clone()],
            };
            match *plan {
                Plan::Log { refs, .. } => {
                    let refs = &batch.refs[refs.0 as usize..refs.1 as usize];
                    self.emit_log(line, *plan, refs, &ctx, out);
                }
                _ => self.in_space(module, |me| me.emit(line, *plan, &ctx, out)),
            }
        }
        batch.plans = plans;
        batch.clear();
        self.answers = answers;
    }
}

/// The text symbols of a /proc/kallsyms text, with their `[module]`
/// column, the text bounds whatever their type and the weak functions
/// inside them (as `ksym-filter` keeps them, `text::nm::TextSymbols`): what `ksym-resolve --kallsyms FILE` packs and `--loaded
/// FILE` places module sections from.
///
/// Errors: the first line that is not a symbol line, with its number.
pub fn read_loaded(
    text: &[u8],
) -> Result<crate::blob::list::SymbolList, crate::blob::list::PackError> {
    use crate::blob::list::{PackError, PackErrorKind, SymbolList};
    use crate::text::nm::{NmLine, TextSymbols, parse_line};
    let mut list = SymbolList::new();
    let mut keep = TextSymbols::default();
    for (n, line) in text.split(|&b| b == b'\n').enumerate() {
        let at_line = |kind| PackError {
            line: Some(n as u64 + 1),
            kind,
        };
        match parse_line(line) {
            Ok(NmLine::Symbol(s)) if keep.keep(&s) => {
                list.push(s.address, s.symbol_type, s.name)
                    .map_err(|e| at_line(e.kind))?;
                if let Some(m) = s.module {
                    list.set_last_module(m);
                }
            }
            Ok(_) => {}
            Err(e) => return Err(at_line(PackErrorKind::Line(e))),
        }
    }
    Ok(list)
}

/// Packs [`read_loaded`]'s symbols of a /proc/kallsyms text in memory as a
/// v2 blob, which keeps the `[module]` column (FORMAT.md §10.5): what
/// `ksym-resolve --kallsyms FILE` resolves against.
///
/// Errors: the first line that is not a symbol line (with its number), or a
/// symbol the writer refuses.
pub fn pack_kallsyms_text(
    text: &[u8],
) -> Result<crate::blobfile::AlignedBlob, crate::blob::list::PackError> {
    use crate::blob::v2::write::{V2Options, pack_v2};
    let packed = pack_v2(&read_loaded(text)?, &V2Options::default())?;
    Ok(crate::blobfile::AlignedBlob::copy_from(&packed.blob))
}

/// Reverse lookups: each input line is a name; writes `ADDR TYPE NAME` for
/// every symbol of that name (address order, `slide` added), or `? ? NAME`.
///
/// Errors: read and write errors.
pub fn resolve_names<R: BufRead, W: Write>(
    map: &Kallsyms<'_>,
    input: R,
    mut out: W,
    slide: u64,
    line_buffered: bool,
) -> io::Result<()> {
    let mut line = Vec::with_capacity(256);
    for_each_line(input, MAX_LINE, |_, l| {
        let Line::Full(l) = l else { return Ok(()) };
        let (name, _) = trim_end_nl(l);
        line.clear();
        if name.is_empty() {
            line.push(b'\n');
        }
        for s in map.lookup_name_all(name) {
            hex::push_u64_padded(&mut line, s.address.wrapping_add(slide));
            line.extend_from_slice(&[b' ', s.symbol_type, b' ']);
            s.name.extend_into(&mut line);
            line.push(b'\n');
        }
        if line.is_empty() {
            line.extend_from_slice(b"? ? ");
            line.extend_from_slice(name);
            line.push(b'\n');
        }
        out.write_all(&line)?;
        if line_buffered {
            out.flush()?;
        }
        Ok(())
    })?;
    out.flush()
}
