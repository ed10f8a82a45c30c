//! Reading source lines and inline frames from an ELF file's DWARF (4 and
//! 5) into a [`SourceTable`]: what `ksym-pack --lines ELF` stores in a v2
//! blob's `lines` section (docs/FORMAT.md §15).
//!
//! gimli's crates do the DWARF work (`object` finds the sections, `gimli`
//! parses them; the frames at an address are `addr2line`'s answer, or the
//! same answer from `super::frames`' model of every unit, read in the one
//! pass that finds the boundaries); this module only decides where the
//! answer can change and records it once per change. Every address where
//! the answer may differ from its predecessor's is a *boundary*: a
//! line-table row, a sequence end, the start or end of a subprogram's or
//! inlined subroutine's range, the edge of an executable section. Between
//! two boundaries every address has the frames of the first one, so asking
//! once per boundary gives the exact answer for every address, which is
//! what makes the table match per-address tools.
//!
//! Relocations are never applied here: a linked executable's DWARF already
//! holds final addresses (Debian's vmlinux keeps 316 MiB of `.rela.debug_*`
//! from `--emit-relocs`, which only slow a reader down), and relocatable
//! objects are refused by [`read_source_table`]. Kernel modules (`.ko`) are
//! relocated by `ksym::elf::kmod`, which hands the result to the same sweep.

use std::fmt;
use std::path::Path;

use object::{Object, ObjectKind, ObjectSection, SectionFlags};

use super::frames::model::{Model, ModelView, UnitBounds};
use super::frames::{Addr2line, FrameSource, RangeEdges, RowBounds};
use super::functions::SharedDemangled;
use super::intern::merge;
pub(crate) use super::sweep::OuterName;
use super::sweep::{SplitOf, Sweep, in_exec, sweep};
use super::symtab::{SymbolTable, llvm_symtab};
use crate::blob::v2::source_lines::write::SourceTable;
use crate::par::{join, try_map_heaviest_first};

/// Why DWARF could not be read.
#[derive(Debug)]
pub struct DwarfError {
    /// What failed, with the section or unit offset when one is known.
    pub what: String,
}

impl fmt::Display for DwarfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)
    }
}

impl std::error::Error for DwarfError {}

fn fail(what: impl fmt::Display) -> DwarfError {
    DwarfError {
        what: what.to_string(),
    }
}

/// Counters of one extraction, for `ksym-pack -v` and the closing notes.
#[derive(Debug, Clone, Default)]
pub struct DwarfStats {
    /// Compilation units read.
    pub units: usize,
    /// Of them, skeleton units of split DWARF (`-gsplit-dwarf`): their
    /// line tables are here, their DIEs (and so inline frames) in `.dwo`
    /// files or a `.dwp` package.
    pub split_units: usize,
    /// The `.dwo` files of skeleton units found nowhere: those units have
    /// lines and no inline frames.
    pub split_missing: Vec<String>,
    /// Addresses at which the frames were asked for (boundaries).
    pub boundaries: usize,
    /// Of them, edges: where more than the innermost location may change,
    /// so the whole frames were asked for (the others asked addr2line for
    /// the location alone).
    pub edges: usize,
    /// The frames came from the model read in the boundary walk's pass
    /// (`super::frames`), not from addr2line (split DWARF, or DWARF on
    /// which that pass met an error).
    pub modelled: bool,
    /// Addresses of the ELF file's function, data and untyped symbols,
    /// ascending: a caller checks that the symbols it packs beside the
    /// lines come from the same file ([`symbols_match`]).
    pub symbol_addresses: Vec<u64>,
}

/// True when at least half of `addresses` (a symbol list's, e.g. the
/// `ADDR` column ksym-pack reads) are addresses of symbols in the ELF
/// file ([`DwarfStats::symbol_addresses`]): the list and the lines describe
/// the same build at the same load address. A /proc/kallsyms of a KASLR
/// kernel, or another build's System.map, fails it.
pub fn symbols_match(stats: &DwarfStats, addresses: impl Iterator<Item = u64>) -> bool {
    let (mut n, mut hit) = (0usize, 0usize);
    for a in addresses {
        n += 1;
        hit += usize::from(stats.symbol_addresses.binary_search(&a).is_ok());
    }
    n == 0 || 2 * hit >= n
}

/// Reads `path`'s DWARF into a [`SourceTable`] covering its executable
/// sections (SHF_EXECINSTR), addresses as the ELF file gives them (unslid).
///
/// Function names are DWARF's (linkage name first, as llvm-symbolizer
/// prints them), Rust ones demangled like `ksym-filter` does
/// ([`crate::text::demangle`]) and C++ ones as c++filt does (feature
/// `cpp-demangle`); files are joined with their unit's compilation
/// directory and include directory, as `addr2line` and llvm-symbolizer
/// print them.
///
/// With `discriminators`, rows carry the line tables' discriminators, as
/// binutils' addr2line prints them (kernel oops lines); without, every
/// row's is 0 and rows that differ only in it are one row: the table
/// [`SourceTable::drop_discriminators`] leaves, without the cost of
/// reading them (as llvm-symbolizer, perf and GSYM answer).
///
/// Errors: the file cannot be read or is not ELF, is relocatable, has no
/// `.debug_info` or no executable section, or its DWARF is malformed (the
/// message says which).
pub fn read_source_table(
    path: &Path,
    discriminators: bool,
) -> Result<(SourceTable, DwarfStats), DwarfError> {
    read_source_table_in(path, None, discriminators, None)
}

/// [`read_source_table`], naming frames with the symbol list's
/// demanglings of `path`'s symbol table once `names` holds them
/// ([`super::functions::DemangledNames`]: a thread reading the symbols
/// beside this one fills it). The same table, with less work.
///
/// Errors: as [`read_source_table`].
pub fn read_source_table_naming(
    path: &Path,
    discriminators: bool,
    names: SharedDemangled,
) -> Result<(SourceTable, DwarfStats), DwarfError> {
    read_source_table_in(path, None, discriminators, Some(names))
}

/// [`read_source_table`] with the sweep shared by `sharing`'s number of
/// workers, taking over pieces of at least its second number of boundaries
/// (else as many workers as [`default_pieces`] says, and [`MIN_PIECE`]).
fn read_source_table_in(
    path: &Path,
    sharing: Option<(usize, usize)>,
    discriminators: bool,
    names: Option<SharedDemangled>,
) -> Result<(SourceTable, DwarfStats), DwarfError> {
    // Reads only the sections asked for (about a third of a vmlinux), and
    // never maps the file: a rewrite under us cannot raise SIGBUS.
    let cache =
        super::file::ElfFile::open(path).map_err(|e| fail(format!("{}: {e}", path.display())))?;
    let obj = cache
        .parse()
        .map_err(|e| fail(format!("{}: not an ELF file: {e}", path.display())))?;
    // Names are shared by file: the list's file is known canonical.
    let names = names.and_then(|n| Some((std::fs::canonicalize(path).ok()?, n)));
    let out = table_of(&obj, path, sharing, discriminators, true, names, false)?;
    // The section buffers are freed later, once nothing borrows them.
    drop(obj);
    crate::reclaim::drop_later(cache);
    Ok(out)
}

/// [`read_source_table`] of an ELF image in memory, named `name` in
/// errors, swept by one worker and without looking for split DWARF files
/// (fuzzing, tests).
///
/// Errors: as [`read_source_table`].
pub fn source_table_from_bytes(
    data: &[u8],
    name: &Path,
    discriminators: bool,
) -> Result<(SourceTable, DwarfStats), DwarfError> {
    from_bytes(data, name, discriminators, false)
}

/// [`source_table_from_bytes`] asking `addr2line` for the whole frames at
/// every boundary, not for the innermost location alone between edges:
/// the reference the faster sweep must equal, table for table (fuzzing).
///
/// Errors: as [`read_source_table`].
pub fn source_table_from_bytes_asking_every_boundary(
    data: &[u8],
    name: &Path,
    discriminators: bool,
) -> Result<(SourceTable, DwarfStats), DwarfError> {
    from_bytes(data, name, discriminators, true)
}

/// The two readings of an image in memory: one worker, no split DWARF
/// files looked for, `every_frame` as [`table_of`] takes it.
fn from_bytes(
    data: &[u8],
    name: &Path,
    discriminators: bool,
    every_frame: bool,
) -> Result<(SourceTable, DwarfStats), DwarfError> {
    let obj = object::File::parse(data)
        .map_err(|e| fail(format!("{}: not an ELF file: {e}", name.display())))?;
    let sharing = Some((1, MIN_PIECE));
    table_of(
        &obj,
        name,
        sharing,
        discriminators,
        false,
        None,
        every_frame,
    )
}

/// The source table of `obj`, named `path` in errors (and beside which
/// split DWARF is looked for, with `find_splits`); outer frames named with
/// the symbol list's demanglings of `names`' file (canonical) when it is
/// `obj`'s. With `every_frame`, the sweep asks for every boundary's whole
/// frames, not for the innermost location alone between edges: the same
/// table, slower (the tests' reference).
fn table_of<'d, R: object::ReadRef<'d>>(
    obj: &object::File<'d, R>,
    path: &Path,
    sharing: Option<(usize, usize)>,
    discriminators: bool,
    find_splits: bool,
    names: Option<(std::path::PathBuf, SharedDemangled)>,
    every_frame: bool,
) -> Result<(SourceTable, DwarfStats), DwarfError> {
    if obj.kind() == ObjectKind::Relocatable {
        return Err(fail(format!(
            "{}: a relocatable object (.o/.ko); give a linked executable (vmlinux)",
            path.display()
        )));
    }
    let mut exec: Vec<(u64, u64)> = obj
        .sections()
        .filter(|s| match s.flags() {
            SectionFlags::Elf { sh_flags } => {
                sh_flags & u64::from(object::elf::SHF_EXECINSTR) != 0 && s.size() > 0
            }
            _ => false,
        })
        .map(|s| (s.address(), s.address().saturating_add(s.size())))
        .collect();
    exec.sort_unstable();
    if exec.is_empty() {
        return Err(fail(format!("{}: no executable section", path.display())));
    }
    if obj.section_by_name(".debug_info").is_none() {
        return Err(fail(format!(
            "{}: no .debug_info (build with -g, or give the -dbg vmlinux)",
            path.display()
        )));
    }
    let symtab = llvm_symtab(obj, names);
    let endian = if obj.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let sections = super::section::dwarf_sections(obj)
        .map_err(|e| fail(format!("{}: {e}", path.display())))?;
    let mut dwarf = sections.borrow(|s| gimli::EndianSlice::new(s, endian));
    let dwarf_err = |e: gimli::Error| fail(format!("{}: DWARF: {e}", path.display()));
    // One pass per unit reads its boundaries and what the sweep asks (the
    // model); the reference (`every_frame`) asks addr2line itself, as do
    // split DWARF and DWARF on which the pass meets an error.
    let built = match every_frame {
        false => super::frames::model::build(&dwarf, &keeper(&exec), discriminators)
            .ok()
            .flatten(),
        true => None,
    };
    if built.is_none() {
        // Every unit is parsed by the boundary walk, then by each piece's
        // addr2line context: its abbreviations parsed once, not each time
        // (they were a fifth of libc's pack time). The model's pass parses
        // each unit's once, on every core.
        dwarf.populate_abbreviations_cache(gimli::AbbreviationsCacheStrategy::All);
    }
    // Without split units the model was built (none to look for).
    let split_files = if find_splits && built.is_none() {
        super::split::SplitFiles::read(&dwarf, path, endian).map_err(dwarf_err)?
    } else {
        super::split::SplitFiles::default()
    };
    let splits = split_files.borrow(endian);
    let split_of = |id, parent: &gimli::Dwarf<_>| splits.dwarf(id, parent);
    let mut stats = DwarfStats {
        split_missing: split_files.missing.clone(),
        ..DwarfStats::default()
    };
    let (mut found, model) = boundaries(
        &dwarf,
        &split_of,
        &exec,
        &symtab,
        discriminators,
        &mut stats,
        built,
    )
    .map_err(dwarf_err)?;
    if every_frame {
        found.edges.clone_from(&found.bounds);
    }
    stats.boundaries = found.bounds.len();
    stats.edges = found.edges.len();
    stats.modelled = model.is_some();
    let dwarf = std::sync::Arc::new(dwarf);
    stats.symbol_addresses = symtab.syms.iter().map(|s| s.0).collect();
    let sharing = sharing.unwrap_or_else(|| (default_pieces(found.bounds.len()), MIN_PIECE));
    let table = match &model {
        // Every worker reads the one model.
        Some(m) => sweep_in_pieces(
            || Ok(ModelView::new(m, &dwarf)),
            &found,
            sharing,
            &exec,
            &symtab,
            OuterName::SymbolTable,
        ),
        // Else one addr2line context per worker over the one view of the
        // sections (a context parses only the units its addresses reach).
        None => sweep_in_pieces(
            || {
                Ok(Addr2line {
                    ctx: addr2line::Context::from_arc_dwarf(std::sync::Arc::clone(&dwarf))?,
                    split: &split_of,
                })
            },
            &found,
            sharing,
            &exec,
            &symtab,
            OuterName::SymbolTable,
        ),
    }
    .map_err(dwarf_err)?;
    drop(model);
    crate::reclaim::drop_later(symtab);
    Ok((table, stats))
}

/// [`sweep`] of `bounds` by `workers` workers (rayon's threads with the
/// `parallel` feature), each with its own `addr2line` context from
/// `context`, each sweeping consecutive pieces of `bounds` as
/// [`share`](super::share::share) deals them out (an equal cut first, then
/// halves of what is left, of at least `min_piece` boundaries), then
/// [`merge`]d: the table one sweep would build (ids are numbered in order
/// of first use by address either way), wherever the cuts fall. Each
/// context parses the units its addresses reach, so a unit with code in two
/// pieces (a kernel's `.text` and `.init.text`) is parsed twice: on
/// Debian's vmlinux and 2 cores, 0.74x one worker's time for 1.21x its
/// peak memory (docs/lines-and-modules.md).
#[allow(clippy::too_many_arguments)]
fn sweep_in_pieces<R, S, F>(
    context: F,
    found: &Boundaries,
    (workers, min_piece): (usize, usize),
    exec: &[(u64, u64)],
    symtab: &SymbolTable,
    outer_name: OuterName,
) -> Result<SourceTable, gimli::Error>
where
    R: gimli::Reader,
    S: FrameSource<R>,
    F: Fn() -> Result<S, gimli::Error> + Sync,
{
    let bounds = &found.bounds[..];
    let walk = |ctx: &S, piece: &mut dyn Iterator<Item = u64>| {
        let at = Sweep {
            exec,
            edges: &found.edges,
            symtab,
            discriminators: &found.discriminators,
            outer_name,
        };
        sweep(ctx, piece, &at)
    };
    if workers <= 1 || bounds.len() < 2 {
        return Ok(walk(&context()?, &mut bounds.iter().copied())?.table);
    }
    let pieces = super::share::share(bounds.len(), workers, min_piece, &context, |ctx, claim| {
        walk(ctx, &mut claim.map(|i| bounds[i]))
    })?;
    Ok(merge(pieces.into_iter().map(|(_, t)| t).collect()))
}

/// The fewest boundaries a worker takes over from another: a piece costs
/// its units parsed again and a table merged.
const MIN_PIECE: usize = 16_384;

/// How many workers [`sweep_in_pieces`] shares `n` boundaries among: one
/// per rayon thread (feature `parallel`), none under [`MIN_PIECE`]
/// boundaries (below that a second context costs more than it saves).
fn default_pieces(n: usize) -> usize {
    #[cfg(feature = "parallel")]
    {
        (n / MIN_PIECE).clamp(1, rayon::current_num_threads())
    }
    #[cfg(not(feature = "parallel"))]
    {
        let _ = n;
        1
    }
}

/// A step of the discriminator function: (address, discriminator).
type Discriminator = (u64, u32);

/// What [`boundaries`] finds: where to ask for frames, and where more than
/// the innermost location may change.
struct Boundaries {
    /// Every address where the frames may change, sorted, inside or at the
    /// end of an executable section.
    bounds: Vec<u64>,
    /// The addresses, sorted, where anything but the innermost frame's
    /// location may change (docs/lines-and-modules.md): the starts and
    /// ends of executable sections, symbols, functions, inlined
    /// subroutines, line sequences and units' ranges. Between two of them,
    /// a line row changes only the innermost location.
    edges: Vec<u64>,
    /// With `discriminators`, the line tables' discriminators as (address,
    /// discriminator) steps, sorted (addr2line's `Location` has no
    /// discriminator; binutils' addr2line prints it, so oops lines need
    /// it).
    discriminators: Vec<Discriminator>,
}

/// Whether a boundary at `a` is kept: inside an executable range of
/// `exec`, or at the end of one.
fn keeper(exec: &[(u64, u64)]) -> impl Fn(u64) -> bool + Sync + '_ {
    |a| in_exec(exec, a) || exec.iter().any(|&(_, e)| e == a)
}

/// The [`Boundaries`] of `dwarf` in the executable ranges `exec`, each
/// unit's part from `built` (the model's pass) or, without it, read here;
/// the model passed through.
fn boundaries<R>(
    dwarf: &gimli::Dwarf<R>,
    split: SplitOf<'_, R>,
    exec: &[(u64, u64)],
    symtab: &SymbolTable,
    discriminators: bool,
    stats: &mut DwarfStats,
    built: Option<(Model<R>, Vec<UnitBounds>)>,
) -> gimli::Result<(Boundaries, Option<Model<R>>)>
where
    R: gimli::Reader + Send + Sync,
    R::Offset: Send + Sync,
{
    // The edges of the sections, the symbols and the address ranges.
    let mut ends: Vec<u64> = exec.iter().flat_map(|&(s, e)| [s, e]).collect();
    let keep = keeper(exec);
    for &(a, size, _) in &symtab.syms {
        for x in [a, a.wrapping_add(size)] {
            if keep(x) {
                ends.push(x);
            }
        }
    }
    // A unit's ranges may come from .debug_aranges (addr2line's choice
    // where it has no DW_AT_ranges): every set's ends are edges.
    // Malformed sets are skipped, as addr2line skips them (it relies on the
    // entries' iterator ending after an error it cannot step over).
    let mut sets = dwarf.debug_aranges.headers();
    while let Ok(Some(set)) = sets.next() {
        let mut entries = set.entries();
        while let Some(r) = entries.next().transpose() {
            if let Ok(r) = r {
                let r = r.range();
                ends.extend([r.begin, r.end].into_iter().filter(|&a| keep(a)));
            }
        }
    }
    // The units' parts from the model's pass, else read here alone.
    let (parts, model) = match built {
        Some((m, parts)) => (parts, Some(m)),
        None => {
            let mut headers = Vec::new();
            let mut units = dwarf.units();
            while let Some(header) = units.next()? {
                headers.push(header);
            }
            // Units are read on every core (feature `parallel`), the
            // largest first, their parts joined in unit order: the table
            // one walk in order gives.
            let one = |header| unit_bounds(dwarf, split, header, &keep, discriminators);
            let weight = super::frames::model::unit_weight;
            (try_map_heaviest_first(headers, weight, one)?, None)
        }
    };
    let mut rows: Vec<u64> = Vec::with_capacity(parts.iter().map(|p| p.bounds.len()).sum());
    let mut e: Vec<u64> =
        Vec::with_capacity(parts.iter().map(|p| p.edges.len()).sum::<usize>() + ends.len());
    let mut disc: Vec<(u64, u32)> = Vec::with_capacity(parts.iter().map(|p| p.disc.len()).sum());
    for p in parts {
        stats.units += 1;
        stats.split_units += usize::from(p.split);
        rows.extend(p.bounds);
        e.extend(p.edges);
        disc.extend(p.disc);
    }
    // The rows and the edges are sorted apart, on two cores, then merged
    // into the boundaries.
    let sorted = |v: &mut Vec<u64>| {
        sort_runs(v, |&a| a);
        v.dedup();
    };
    let edges = || {
        ends.sort_unstable();
        e.extend_from_slice(&ends);
        sorted(&mut e);
    };
    let both = || join(|| sorted(&mut rows), edges);
    // Stable: at one address, the later row (table order) wins.
    join(both, || sort_runs(&mut disc, |d| d.0));
    let b = union(&rows, &e);
    let mut steps: Vec<(u64, u32)> = Vec::with_capacity(disc.len());
    for d in disc {
        match steps.last_mut() {
            Some(l) if l.0 == d.0 => *l = d,
            _ => steps.push(d),
        }
    }
    Ok((
        Boundaries {
            bounds: b,
            edges: e,
            discriminators: steps,
        },
        model,
    ))
}

/// Sorts `v` by `key`, stably. Each unit's list is sorted: where the
/// units follow one another in address (a Rust binary's, a kernel's), a
/// run-adaptive sort merges their runs in a pass or two over memory in
/// order; where they interleave (a C++ library's, for its templates'
/// COMDAT copies: 110 runs among libstdc++'s 181 units), a radix sort
/// takes fewer steps (21.1 M instructions against 44.5 M, on two cores).
fn sort_runs<T: Copy>(v: &mut [T], key: impl Fn(&T) -> u64 + Copy) {
    let runs = 1 + v.windows(2).filter(|w| key(&w[1]) < key(&w[0])).count();
    if runs <= FEW_RUNS {
        v.sort_by_key(key);
    } else {
        radsort::sort_by_key(v, key);
    }
}

/// The most runs [`sort_runs`] merges rather than radix-sorts: `log2`
/// of it passes over the list against radsort's three or four (the bytes
/// in which a binary's addresses differ), whose writes scatter.
const FEW_RUNS: usize = 8;

/// The sorted union of the sorted, deduplicated `a` and `b`, without
/// duplicates.
fn union(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        out.push(x.min(y));
        i += usize::from(x <= y);
        j += usize::from(y <= x);
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// The boundaries of the unit at `header`, sorted: its line rows, and as
/// edges its functions' starts and ends (a skeleton's from its split unit),
/// its line sequences' and its own ranges'; with `discriminators`, its
/// rows' discriminators.
fn unit_bounds<R: gimli::Reader>(
    dwarf: &gimli::Dwarf<R>,
    split: SplitOf<'_, R>,
    header: gimli::UnitHeader<R>,
    keep: &impl Fn(u64) -> bool,
    discriminators: bool,
) -> gimli::Result<UnitBounds> {
    let unit = dwarf.unit(header)?;
    let mut rows = RowBounds::default();
    if let Some(program) = unit.line_program.clone() {
        let mut program = program.rows();
        let mut starts = true;
        while let Some((_, row)) = program.next_row()? {
            rows.take(row, &mut starts, keep, discriminators);
        }
    }
    let RowBounds {
        bounds: mut b,
        edges: mut e,
        disc,
    } = rows;
    function_bounds(dwarf, &unit, keep, &mut e)?;
    // A skeleton's functions are in its split unit.
    if let Some(sd) = unit.dwo_id.and_then(|id| split(id, dwarf))
        && let Some(header) = sd.units().next()?
    {
        let mut su = sd.unit(header)?;
        su.copy_relocated_attributes(&unit);
        function_bounds(&sd, &su, keep, &mut e)?;
    }
    // Sorted here, on every core: the units' lists are then merged.
    b.sort_unstable();
    b.dedup();
    e.sort_unstable();
    e.dedup();
    Ok(UnitBounds {
        bounds: b,
        edges: e,
        disc,
        split: unit.dwo_id.is_some(),
    })
}

/// The starts and ends of `unit`'s subprograms and inlined subroutines,
/// and of the unit's own ranges, that `keep` keeps, pushed onto `b` as
/// [`RangeEdges`] takes them: where the model does not apply (split DWARF,
/// modules), which reads the same edges in its own pass. Read from the raw
/// entries: every other attribute is skipped by its form, not parsed (a
/// third of the time, on libstdc++).
fn function_bounds<R: gimli::Reader>(
    dwarf: &gimli::Dwarf<R>,
    unit: &gimli::Unit<R>,
    keep: &impl Fn(u64) -> bool,
    b: &mut Vec<u64>,
) -> gimli::Result<()> {
    let mut entries = unit.entries_raw(None)?;
    while !entries.is_empty() {
        let Some(abbrev) = entries.read_abbreviation()? else {
            continue;
        };
        // A unit's own ranges are where addr2line starts or stops asking
        // it (where it has no .debug_aranges set).
        let unit_die = matches!(
            abbrev.tag(),
            gimli::DW_TAG_compile_unit | gimli::DW_TAG_skeleton_unit
        );
        if !unit_die
            && !matches!(
                abbrev.tag(),
                gimli::DW_TAG_subprogram | gimli::DW_TAG_inlined_subroutine
            )
        {
            entries.skip_attributes(abbrev.attributes())?;
            continue;
        }
        let mut push = |a: u64| {
            if keep(a) {
                b.push(a);
            }
        };
        let mut ends = RangeEdges::default();
        let specs = abbrev.attributes();
        let mut i = 0;
        while i < specs.len() {
            // The attributes between two address attributes (names, types,
            // declaration lines) are skipped by their forms in one step, not
            // parsed: on libstdc++ that parsing was 29 M of this walk's 135 M
            // instructions.
            let skip = specs[i..]
                .iter()
                .take_while(|s| {
                    !matches!(
                        s.name(),
                        gimli::DW_AT_low_pc | gimli::DW_AT_high_pc | gimli::DW_AT_ranges
                    )
                })
                .count();
            if skip > 0 {
                entries.skip_attributes(&specs[i..i + skip])?;
                i += skip;
                continue;
            }
            let attr = entries.read_attribute(specs[i])?;
            i += 1;
            ends.take(dwarf, unit, &attr, &mut push)?;
        }
        ends.finish(&mut push);
    }
    Ok(())
}

/// The source table of already-loaded DWARF over the executable ranges
/// `exec` (sorted `(start, end)`), outermost frames named from `symtab`:
/// the same boundaries and sweep as [`read_source_table`], for DWARF that
/// a caller relocated (kernel modules, `ksym::elf::kmod`). Returns the table,
/// the number of units and of boundaries.
///
/// Errors: malformed DWARF.
pub(crate) fn table_from_dwarf<R>(
    dwarf: gimli::Dwarf<R>,
    exec: &[(u64, u64)],
    symtab: &SymbolTable,
    outer: OuterName,
) -> Result<(SourceTable, usize, usize), gimli::Error>
where
    R: gimli::Reader + Send + Sync,
    R::Offset: Send + Sync,
{
    let mut stats = DwarfStats::default();
    // A kernel module's DWARF is never split.
    let (found, _) = boundaries(&dwarf, &|_, _| None, exec, symtab, true, &mut stats, None)?;
    let ctx = Addr2line {
        ctx: addr2line::Context::from_dwarf(dwarf)?,
        split: &|_, _| None,
    };
    let at = Sweep {
        exec,
        edges: &found.edges,
        symtab,
        discriminators: &found.discriminators,
        outer_name: outer,
    };
    let swept = sweep(&ctx, &mut found.bounds.iter().copied(), &at)?;
    Ok((swept.table, stats.units, found.bounds.len()))
}

/// [`read_source_table`], then [`symbols_match`] against the `addresses`
/// of the symbol list packed beside it: what `ksym-pack --lines ELF` does.
/// Returns the table, a one-line summary for `-v`, and a warning to print
/// whatever `-v` says: split DWARF units, whose inline frames are missing.
///
/// Errors: those of [`read_source_table`], and a list whose addresses are
/// mostly not the ELF file's symbols (another build, or a KASLR-slid
/// /proc/kallsyms).
pub fn source_table_for(
    elf: &Path,
    addresses: impl Iterator<Item = u64>,
    discriminators: bool,
) -> Result<(SourceTable, String, Option<String>), DwarfError> {
    checked_source_table(elf, read_source_table(elf, discriminators)?, addresses)
}

/// The second half of [`source_table_for`], for a caller that read `elf`'s
/// table (by [`read_source_table`]) while it read its symbol list.
///
/// Errors: a list whose addresses are mostly not the ELF file's symbols.
pub fn checked_source_table(
    elf: &Path,
    (table, stats): (SourceTable, DwarfStats),
    addresses: impl Iterator<Item = u64>,
) -> Result<(SourceTable, String, Option<String>), DwarfError> {
    if !symbols_match(&stats, addresses) {
        return Err(fail(format!(
            "most symbol addresses are not symbols of {}: the list and the ELF file are of different builds, or the list is slid (a KASLR /proc/kallsyms; use `nm -n {}`)",
            elf.display(),
            elf.display()
        )));
    }
    let desc = format!(
        "{}: {} units, {} boundaries ({} edges), {} rows, {} inline nodes, {} files, {} strings",
        elf.display(),
        stats.units,
        stats.boundaries,
        stats.edges,
        table.rows.len(),
        table.nodes.len(),
        table.files.len(),
        table.strings.len()
    );
    let warning = (!stats.split_missing.is_empty()).then(|| {
        let m = &stats.split_missing;
        format!(
            "{}: {} of {} split DWARF units (-gsplit-dwarf) have neither their .dwo file nor a \
             {}.dwp package here ({}{}): their lines are packed, their inline frames are not",
            elf.display(),
            m.len(),
            stats.split_units,
            elf.display(),
            m[0],
            if m.len() > 1 { ", …" } else { "" }
        )
    });
    Ok((table, desc, warning))
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The boundaries' merge gives the sorted union, and the runs' sort
        /// (merged or radix-sorted, by the number of runs) sorts as the
        /// standard sort does.
        #[test]
        fn boundaries_merge_into_the_sorted_union(
            a in proptest::collection::btree_set(0u64..200, 0..60),
            b in proptest::collection::btree_set(0u64..200, 0..60),
            runs in proptest::collection::vec(proptest::collection::vec(0u64..1000, 0..30), 0..20),
        ) {
            let (a, b): (Vec<u64>, Vec<u64>) = (a.into_iter().collect(), b.into_iter().collect());
            let mut want = [&a[..], &b[..]].concat();
            want.sort_unstable();
            want.dedup();
            proptest::prop_assert_eq!(union(&a, &b), want);
            let mut v: Vec<u64> = runs
                .into_iter()
                .flat_map(|mut r| {
                    r.sort_unstable();
                    r
                })
                .collect();
            let mut std = v.clone();
            std.sort();
            // Stable, as the discriminators' steps need: tagged by place.
            let mut tagged: Vec<(u64, u32)> = v.iter().map(|&x| x / 8).zip(0..).collect();
            let mut stable = tagged.clone();
            stable.sort_by_key(|t| t.0);
            sort_runs(&mut v, |&x| x);
            sort_runs(&mut tagged, |t| t.0);
            proptest::prop_assert_eq!(v, std);
            proptest::prop_assert_eq!(tagged, stable);
        }
    }

    /// A forged size past the address space covers to its end (kmod_elf).
    #[test]
    fn a_size_past_the_address_space_covers_to_its_end() {
        let t = SymbolTable::from_symbols(vec![(u64::MAX - 4, 16, b"f".to_vec())]);
        assert_eq!(t.symbol_at(&mut 0, u64::MAX - 1), Some(0));
        assert_eq!(t.symbol_at(&mut 0, 5), None);
    }

    /// Shared by workers, cut into pieces wherever they take over, and
    /// merged, the sweep of this test binary's own DWARF (line tables and
    /// inline frames: `debug = 1`) is the one sweep's table, id for id.
    #[test]
    fn pieces_merge_into_the_one_sweeps_table() {
        let exe = std::env::current_exe().unwrap();
        let (whole, stats) = read_source_table_in(&exe, Some((1, 1)), true, None).unwrap();
        assert!(
            stats.boundaries > 1000 && whole.nodes.len() > 100,
            "{stats:?}"
        );
        // Equal cuts (a piece too large to take over), then workers that
        // take over pieces down to one boundary.
        let never = usize::MAX;
        for sharing in [
            (2, never),
            (3, never),
            (64, never),
            (509, never),
            (2, 1),
            (7, 1),
            (3, 300),
        ] {
            let (cut, _) = read_source_table_in(&exe, Some(sharing), true, None).unwrap();
            assert_eq!(cut.strings, whole.strings, "{sharing:?}");
            assert_eq!(cut.files, whole.files, "{sharing:?}");
            assert_eq!(cut.nodes, whole.nodes, "{sharing:?}");
            assert_eq!(cut.rows, whole.rows, "{sharing:?}");
        }
    }

    /// Asked for the innermost location alone between edges, the sweep
    /// builds the table it builds when it asks for every boundary's whole
    /// frames: on this test binary (Rust, inline frames), on gcc's inline
    /// chains with discriminators, and on both cut among workers.
    #[test]
    fn locations_between_edges_give_the_whole_frames_table() {
        let exe = std::env::current_exe().unwrap();
        let inl = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lines/inl.elf");
        for (path, sharing) in [
            (&exe, (1, 1)),
            (&exe, (3, 1)),
            (&inl, (1, 1)),
            (&inl, (2, 1)),
        ] {
            let cache = super::super::file::ElfFile::open(path).unwrap();
            let obj = cache.parse().unwrap();
            let read = |every| table_of(&obj, path, Some(sharing), true, false, None, every);
            let (fast, stats) = read(false).unwrap();
            let (every, every_stats) = read(true).unwrap();
            // The fast path was taken, for most boundaries of the Rust
            // binary, and for some of gcc's.
            assert!(stats.edges < stats.boundaries, "{stats:?}");
            assert_eq!(every_stats.edges, every_stats.boundaries);
            // The model answered, and addr2line the reference.
            assert!(stats.modelled && !every_stats.modelled);
            assert!(fast.rows.len() > 20, "{}", fast.rows.len());
            assert_eq!(fast.rows, every.rows, "{path:?} {sharing:?}");
            assert_eq!(fast.nodes, every.nodes);
            assert_eq!(fast.files, every.files);
            assert_eq!(fast.strings, every.strings);
        }
    }

    /// The symbol list's demanglings name the frames they cover as the
    /// sweep's own would (the same table), and it is they that name them
    /// (a forged one shows), for the file they were read from alone.
    #[test]
    fn the_lists_demanglings_name_frames_as_the_sweep_would() {
        use super::super::functions::{DemangledNames, function_symbols};
        let exe = std::env::current_exe().unwrap();
        let sharing = Some((2, MIN_PIECE));
        let read = |names: Option<DemangledNames>| {
            let shared = names.map(|n| {
                let s = SharedDemangled::default();
                s.set(n).unwrap();
                s
            });
            read_source_table_in(&exe, sharing, true, shared).unwrap().0
        };
        let own = read(None);
        let f = function_symbols(&exe, &Default::default()).unwrap();
        let (file, names) = (f.demangled.file.clone(), f.demangled.names.clone());
        assert!(file.is_some() && names.len() > 1000, "{}", names.len());
        let with = read(Some(f.demangled));
        assert_eq!(with.strings, own.strings);
        assert_eq!(with.nodes, own.nodes);
        assert_eq!(with.rows, own.rows);
        let forged = |file| DemangledNames {
            file,
            names: (names.iter())
                .map(|(i, n)| (*i, [&b"forged::"[..], n].concat()))
                .collect(),
        };
        let shown = read(Some(forged(file)));
        assert!(shown.strings.iter().any(|s| s.starts_with(b"forged::")));
        let elsewhere = read(Some(forged(Some("/elsewhere".into()))));
        assert_eq!(elsewhere.strings, own.strings);
    }

    /// Read without discriminators, a table is the one read with them and
    /// then dropped (tests/data/lines/inl.elf: gcc -O2 gives 16 rows one).
    #[test]
    fn a_table_read_without_discriminators_is_one_they_were_dropped_from() {
        let elf = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lines/inl.elf");
        let (mut with, _) = read_source_table_in(&elf, Some((1, 1)), true, None).unwrap();
        assert!(with.rows.iter().any(|r| r.discriminator != 0));
        let (without, _) = read_source_table_in(&elf, Some((1, 1)), false, None).unwrap();
        assert!(without.rows.iter().all(|r| r.discriminator == 0));
        assert!(without.rows.len() < with.rows.len());
        with.drop_discriminators();
        assert_eq!(without.rows, with.rows);
        assert_eq!(without.nodes, with.nodes);
        assert_eq!(without.strings, with.strings);
    }

    /// An image in memory reads as the file does (what the fuzz target
    /// `elf_lines` relies on); a relocatable one is refused, by name.
    #[test]
    fn bytes_read_as_the_file_does() {
        let elf = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lines/inl.elf");
        let (file, _) = read_source_table_in(&elf, Some((1, MIN_PIECE)), true, None).unwrap();
        let bytes = std::fs::read(&elf).unwrap();
        let (mem, _) = source_table_from_bytes(&bytes, Path::new("inl.elf"), true).unwrap();
        assert!(file.rows.len() > 20);
        assert_eq!(mem.rows, file.rows);
        assert_eq!(mem.nodes, file.nodes);
        assert_eq!(mem.files, file.files);
        assert_eq!(mem.strings, file.strings);
        let ko = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kmod/ksym_test.ko");
        let e = source_table_from_bytes(&std::fs::read(ko).unwrap(), Path::new("m.ko"), true);
        assert!(
            e.unwrap_err()
                .what
                .starts_with("m.ko: a relocatable object")
        );
    }
}
