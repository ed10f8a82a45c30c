//! Every unit's line table, functions and inline trees, read in one pass
//! per unit (on every core), answering as addr2line 0.27's `Context`
//! answers: its choice of unit (`unit.rs`: `ResUnits::parse` and
//! `find_range`), function, inline chain and location.

use super::dies::{self, Functions, Origins};
use super::lines::{Lines, RowBounds};
use super::{Frame, FrameSource};
use crate::par::try_map_heaviest_first;

/// One unit's part of the boundary walk (`dwarf::boundaries`): its line
/// rows that are not edges, its edges, its rows' discriminators (in table
/// order), whether it is a skeleton unit. The rows and the edges are each
/// sorted, without duplicates: `boundaries` merges the units'.
pub(crate) struct UnitBounds {
    pub bounds: Vec<u64>,
    pub edges: Vec<u64>,
    pub disc: Vec<(u64, u32)>,
    pub split: bool,
}

/// A unit's range, addr2line's `UnitRange`.
struct UnitRange {
    unit: usize,
    /// The least start of this and every later range (in the sort by
    /// end): the search stops where the probe is below it.
    min_begin: u64,
    range: gimli::Range,
}

/// What addr2line keeps of a unit to answer from it.
struct Unit<R: gimli::Reader> {
    offset: gimli::DebugInfoOffset<R::Offset>,
    dw: gimli::Unit<R>,
    lines: Option<Lines<R>>,
    functions: Functions<R>,
}

/// The frames of every address, as addr2line answers them, without its
/// lazy parse: every unit was read when the boundaries were found.
pub(crate) struct Model<R: gimli::Reader> {
    ranges: Box<[UnitRange]>,
    units: Box<[Unit<R>]>,
}

/// A unit as the first pass leaves it.
struct Read<R: gimli::Reader> {
    unit: gimli::Unit<R>,
    /// Its `.debug_info` offset where addr2line keeps it (not a type unit,
    /// a root DIE that is not null).
    kept: Option<gimli::DebugInfoOffset<R::Offset>>,
    /// Its ranges are to be found (not a partial unit).
    ranged: bool,
    lines: Option<Lines<R>>,
    rows: RowBounds,
}

/// Reads every unit of `dwarf` once: the [`Model`] and, in unit order,
/// each unit's [`UnitBounds`] (the rows, and the edges that `keep` keeps,
/// as `dwarf::boundaries` takes them). `Ok(None)` where the model does not
/// apply: split DWARF (its skeletons' DIEs are elsewhere) or a
/// supplementary file.
///
/// Errors: malformed DWARF anywhere in it (addr2line, which reads lazily,
/// may not meet the same error): the caller then asks addr2line itself.
pub(crate) fn build<R>(
    dwarf: &gimli::Dwarf<R>,
    keep: &(impl Fn(u64) -> bool + Sync),
    discriminators: bool,
) -> gimli::Result<Option<(Model<R>, Vec<UnitBounds>)>>
where
    R: gimli::Reader + Send + Sync,
    R::Offset: Send + Sync,
{
    if dwarf.sup.is_some() {
        return Ok(None);
    }
    let mut headers = Vec::new();
    let mut units = dwarf.units();
    while let Some(h) = units.next()? {
        headers.push(h);
    }
    let first = |header: gimli::UnitHeader<R>| -> gimli::Result<Read<R>> {
        let (kind, offset) = (header.type_(), header.debug_info_offset());
        let unit = dwarf.unit(header)?;
        let mut rows = RowBounds::default();
        // A skeleton unit: the model does not apply, its lines are not read.
        let lines = match unit.line_program.clone() {
            Some(p) if unit.dwo_id.is_none() => Some(Lines::read(
                dwarf,
                &unit,
                p,
                keep,
                discriminators,
                &mut rows,
            )?),
            _ => None,
        };
        let typed = matches!(
            kind,
            gimli::UnitType::Type { .. } | gimli::UnitType::SplitType { .. }
        );
        let ranged = kind != gimli::UnitType::Partial;
        // addr2line passes over a unit whose root DIE is null.
        let null_root = ranged && unit.entries_raw(None)?.read_abbreviation()?.is_none();
        let kept = offset.filter(|_| !typed && !null_root);
        // Sorted here, on every core: the units' lists are merged after.
        rows.bounds.sort_unstable();
        rows.bounds.dedup();
        Ok(Read {
            unit,
            kept,
            ranged,
            lines,
            rows,
        })
    };
    let mut read: Vec<Read<R>> = try_map_heaviest_first(headers, unit_weight, first)?;
    if read.iter().any(|r| r.unit.dwo_id.is_some()) {
        return Ok(None);
    }
    // The rows' edges, with the DIEs' added.
    let second = |r: &mut Read<R>| -> gimli::Result<(Functions<R>, Vec<u64>)> {
        let mut edges = std::mem::take(&mut r.rows.edges);
        let f = dies::read(dwarf, &r.unit, keep, &mut edges)?;
        edges.sort_unstable();
        edges.dedup();
        Ok((f, edges))
    };
    let weight = |r: &&mut Read<R>| unit_weight(&r.unit.header);
    let functions: Vec<(Functions<R>, Vec<u64>)> =
        try_map_heaviest_first(read.iter_mut().collect(), weight, second)?;
    let ranges = unit_ranges(dwarf, &read)?;
    let mut units = Vec::new();
    let mut parts = Vec::with_capacity(read.len());
    for (r, (f, edges)) in read.into_iter().zip(functions) {
        let RowBounds { bounds, disc, .. } = r.rows;
        parts.push(UnitBounds {
            bounds,
            edges,
            disc,
            split: false,
        });
        if let Some(offset) = r.kept {
            units.push(Unit {
                offset,
                dw: r.unit,
                lines: r.lines,
                functions: f,
            });
        }
    }
    Ok(Some((
        Model {
            ranges,
            units: units.into_boxed_slice(),
        },
        parts,
    )))
}

/// The weight of a unit's work, for [`try_map_heaviest_first`]: its length
/// in `.debug_info`, with which its DIEs and, mostly, its line program
/// grow.
pub(crate) fn unit_weight<R: gimli::Reader>(h: &gimli::UnitHeader<R>) -> u64 {
    gimli::ReaderOffset::into_u64(h.length_including_self())
}

/// The units' ranges as addr2line's `ResUnits::parse` finds them, sorted
/// as it sorts them: a unit's `DW_AT_ranges`, else its `.debug_aranges`
/// sets, else its `DW_AT_low_pc` and `DW_AT_high_pc`, else its line
/// sequences.
fn unit_ranges<R: gimli::Reader>(
    dwarf: &gimli::Dwarf<R>,
    read: &[Read<R>],
) -> gimli::Result<Box<[UnitRange]>> {
    let mut aranges = Vec::new();
    let mut sets = dwarf.debug_aranges.headers();
    while let Some(set) = sets.next()? {
        aranges.push((set.debug_info_offset(), set.offset()));
    }
    aranges.sort_unstable_by_key(|a| a.0);
    let mut out = Vec::new();
    let kept = read.iter().filter(|r| r.kept.is_some());
    for (id, r) in kept.enumerate() {
        let offset = r.kept.expect("kept");
        let mut need = r.ranged;
        if need {
            let mut entries = r.unit.entries_raw(None)?;
            let abbrev = entries.read_abbreviation()?.expect("a kept unit's root");
            let mut ranges = dies::RangeAttrs::default();
            for &spec in abbrev.attributes() {
                let attr = entries.read_attribute(spec)?;
                ranges.take(dwarf, &r.unit, &attr)?;
            }
            let set = match ranges.ranges {
                Some(_) => None,
                None => aranges.binary_search_by_key(&offset, |a| a.0).ok(),
            };
            if let Some(mut i) = set {
                // Several sets for one unit have been seen.
                while i > 0 && aranges[i - 1].0 == offset {
                    i -= 1;
                }
                for &(_, at) in aranges[i..].iter().take_while(|a| a.0 == offset) {
                    let mut entries = dwarf.debug_aranges.header(at)?.entries();
                    while let Some(e) = entries.next().transpose() {
                        // Errors are passed over, as addr2line passes them
                        // (the iterator ends after one it cannot step over).
                        let Ok(e) = e else { continue };
                        if e.length() != 0 {
                            out.push(UnitRange {
                                unit: id,
                                min_begin: 0,
                                range: e.range(),
                            });
                            need = false;
                        }
                    }
                }
            }
            if need {
                need = !ranges.for_each(dwarf, &r.unit, |range| {
                    out.push(UnitRange {
                        unit: id,
                        min_begin: 0,
                        range,
                    })
                })?;
            }
        }
        if need && let Some(lines) = &r.lines {
            for range in lines.ranges() {
                out.push(UnitRange {
                    unit: id,
                    min_begin: 0,
                    range,
                });
            }
        }
    }
    out.sort_unstable_by_key(|u| (u.range.end, u.unit));
    let mut min = u64::MAX;
    for u in out.iter_mut().rev() {
        min = min.min(u.range.begin);
        u.min_begin = min;
    }
    Ok(out.into_boxed_slice())
}

impl<R: gimli::Reader> Model<R> {
    /// The units whose ranges hold `probe`, in addr2line's order (the same
    /// unit may come more than once).
    fn units_at(&self, probe: u64) -> impl Iterator<Item = &Unit<R>> {
        let pos = match self.ranges.binary_search_by_key(&probe, |u| u.range.end) {
            Ok(i) => i + 1,
            Err(i) => i,
        };
        self.ranges[pos..]
            .iter()
            // addr2line's `probe + 1`, wrapping in a release build.
            .take_while(move |u| probe.wrapping_add(1) > u.min_begin)
            .filter(move |u| !(probe >= u.range.end || probe.wrapping_add(1) <= u.range.begin))
            .map(|u| &self.units[u.unit])
    }
}

/// A [`Model`] with the DWARF it was read from: the frame source the
/// sweep asks (function names are found there when first asked for).
pub(crate) struct ModelView<'a, R: gimli::Reader> {
    pub model: &'a Model<R>,
    pub dwarf: &'a gimli::Dwarf<R>,
    /// The names found through origins, and the unit they are of (its
    /// address in the model): neighbouring addresses are of one unit.
    origins: std::cell::RefCell<(usize, Origins<R>)>,
    /// The inline chain of the address asked for, reused.
    chain: std::cell::RefCell<Vec<usize>>,
}

impl<'a, R: gimli::Reader> ModelView<'a, R> {
    /// A worker's view of `model`, read from `dwarf`.
    pub(crate) fn new(model: &'a Model<R>, dwarf: &'a gimli::Dwarf<R>) -> Self {
        ModelView {
            model,
            dwarf,
            origins: std::cell::RefCell::new((usize::MAX, Origins::default())),
            chain: std::cell::RefCell::default(),
        }
    }
}

impl<R: gimli::Reader> Model<R> {
    /// addr2line's `find_unit`: the kept unit holding `dr` (the last
    /// starting before it: there is never a DIE at a unit's own offset),
    /// and the offset within it.
    fn unit_at(
        &self,
        dr: gimli::DebugInfoOffset<R::Offset>,
    ) -> gimli::Result<(&gimli::Unit<R>, gimli::UnitOffset<R::Offset>)> {
        use gimli::ReaderOffset;
        let missing = || gimli::Error::NoEntryAtGivenOffset(dr.0.into_u64());
        let i = match self.units.binary_search_by_key(&dr.0, |u| u.offset.0) {
            Ok(_) | Err(0) => return Err(missing()),
            Err(i) => i - 1,
        };
        let other = &self.units[i].dw;
        Ok((other, dr.to_unit_offset(&other.header).ok_or_else(missing)?))
    }
}

impl<R: gimli::Reader> FrameSource<R> for ModelView<'_, R> {
    fn location(&self, addr: u64) -> gimli::Result<Option<addr2line::Location<'_>>> {
        Ok(self
            .model
            .units_at(addr)
            .find_map(|u| u.lines.as_ref()?.find_location(addr)))
    }

    fn frames<'a>(&'a self, addr: u64, out: &mut Vec<Frame<'a, R>>) -> gimli::Result<()> {
        for u in self.model.units_at(addr) {
            let function = u.functions.find(addr);
            let location = u.lines.as_ref().and_then(|l| l.find_location(addr));
            let Some(function) = function else {
                if location.is_some() {
                    out.push(Frame {
                        name: None,
                        has_die: false,
                        location,
                    });
                    return Ok(());
                }
                continue;
            };
            let find = |dr| self.model.unit_at(dr);
            let names = {
                let mut cache = self.origins.borrow_mut();
                let (at, origins) = &mut *cache;
                let this = std::ptr::from_ref(u) as usize;
                if *at != this {
                    origins.clear();
                    *at = this;
                }
                function.names(self.dwarf, &u.dw, &find, origins)?
            };
            let mut chain = self.chain.borrow_mut();
            chain.clear();
            function.inlined_at(addr, &mut chain);
            // Innermost first: each inlined frame is at the location of the
            // frame inside it, the innermost at the address's row.
            let mut next = location;
            for &i in chain.iter().rev() {
                let inl = function.inlined(i);
                out.push(Frame {
                    name: names[1 + i].clone(),
                    has_die: true,
                    location: next,
                });
                next = Some(addr2line::Location {
                    file: inl
                        .call_file
                        .and_then(|f| u.lines.as_ref().and_then(|l| l.file(f))),
                    line: (inl.call_line != 0).then_some(inl.call_line),
                    column: (inl.call_column != 0).then_some(inl.call_column),
                });
            }
            out.push(Frame {
                name: names[0].clone(),
                has_die: true,
                location: next,
            });
            return Ok(());
        }
        Ok(())
    }
}
