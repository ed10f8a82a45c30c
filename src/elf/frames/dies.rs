//! A unit's functions and inline trees as addr2line 0.27 keeps them (its
//! `function.rs`), read in one pass over the unit's DIEs that also finds
//! the edges of the boundary walk (docs/lines-and-modules.md).
//!
//! addr2line reads a unit's DIEs once to list its subprograms, then each
//! subprogram's subtree again for its name and inlined subroutines; this
//! pass reads each DIE once and keeps, for every subprogram with an
//! address, what those two reads keep: its ranges and its inlined
//! subroutines with their call depth, ranges and call sites. An inlined
//! subroutine belongs to its nearest enclosing subprogram, as addr2line's
//! walk of a subprogram's children skips nested subprograms. Names
//! (linkage name first, then `DW_AT_name`, then through
//! `DW_AT_abstract_origin` and `DW_AT_specification`, 16 steps at most)
//! are found when a function is first asked for, as addr2line finds them
//! when it first parses the function ([`Function::names`]).

use std::cmp::Ordering;

use gimli::{AttributeValue, ReaderOffset};

/// The unit holding a `.debug_info` offset (a `DW_FORM_ref_addr`
/// reference), and the offset within it; an error where no unit does.
pub(super) type FindUnit<'a, R> = dyn Fn(
        gimli::DebugInfoOffset<<R as gimli::Reader>::Offset>,
    ) -> gimli::Result<(
        &'a gimli::Unit<R>,
        gimli::UnitOffset<<R as gimli::Reader>::Offset>,
    )> + 'a;

/// One address range of a function, `function` indexing
/// [`Functions::functions`].
pub(super) struct FunctionAddress {
    range: gimli::Range,
    function: usize,
}

/// One address range of an inlined subroutine at `call_depth` (0: called
/// from the function itself).
struct InlinedAddress {
    range: gimli::Range,
    call_depth: usize,
    function: usize,
}

/// An inlined subroutine: its DIE and where it was called from.
pub(super) struct Inlined<R: gimli::Reader> {
    offset: gimli::UnitOffset<R::Offset>,
    name: NameRef<R::Offset>,
    pub call_file: Option<u64>,
    pub call_line: u32,
    pub call_column: u32,
}

/// A subprogram with an address.
pub(super) struct Function<R: gimli::Reader> {
    offset: gimli::UnitOffset<R::Offset>,
    name: NameRef<R::Offset>,
    /// Its name and its inlined subroutines' names, found when first
    /// asked for, as addr2line finds them when it first parses the
    /// function (a linker's discarded copies, at address 0, never are).
    names: std::sync::OnceLock<gimli::Result<Box<[Option<R>]>>>,
    inlined: Box<[Inlined<R>]>,
    /// Sorted by call depth, then start (addr2line's order: a binary
    /// search per depth finds the chain).
    inlined_addresses: Box<[InlinedAddress]>,
}

/// A unit's functions, and their ranges sorted by start.
pub(super) struct Functions<R: gimli::Reader> {
    functions: Box<[Function<R>]>,
    addresses: Box<[FunctionAddress]>,
}

/// The range attributes as addr2line reads them: the last of each wins,
/// `DW_AT_ranges` over `DW_AT_high_pc` over a size.
pub(super) struct RangeAttrs<O> {
    low_pc: Option<u64>,
    high_pc: Option<u64>,
    size: Option<u64>,
    pub ranges: Option<gimli::RangeListsOffset<O>>,
}

impl<O> Default for RangeAttrs<O> {
    fn default() -> Self {
        RangeAttrs {
            low_pc: None,
            high_pc: None,
            size: None,
            ranges: None,
        }
    }
}

impl<O: gimli::ReaderOffset> RangeAttrs<O> {
    /// Takes `attr` if it is a range attribute in a form addr2line reads:
    /// a low or high address (`DW_FORM_addr`, `DW_FORM_addrx`), a size
    /// (a constant), a range list.
    pub(super) fn take<R: gimli::Reader<Offset = O>>(
        &mut self,
        dwarf: &gimli::Dwarf<R>,
        unit: &gimli::Unit<R>,
        attr: &gimli::Attribute<R>,
    ) -> gimli::Result<()> {
        match attr.name() {
            gimli::DW_AT_low_pc => {
                if let Some(a) = dwarf.attr_address(unit, attr.value())? {
                    self.low_pc = Some(a);
                }
            }
            gimli::DW_AT_high_pc => match attr.value() {
                AttributeValue::Udata(v) => self.size = Some(v),
                v => {
                    if let Some(a) = dwarf.attr_address(unit, v)? {
                        self.high_pc = Some(a);
                    }
                }
            },
            gimli::DW_AT_ranges => self.ranges = dwarf.attr_ranges_offset(unit, attr.value())?,
            _ => {}
        }
        Ok(())
    }

    /// Calls `f` with each non-empty range; whether there was one.
    pub(super) fn for_each<R: gimli::Reader<Offset = O>>(
        &self,
        dwarf: &gimli::Dwarf<R>,
        unit: &gimli::Unit<R>,
        mut f: impl FnMut(gimli::Range),
    ) -> gimli::Result<bool> {
        let mut any = false;
        let mut add = |r: gimli::Range| {
            if r.begin < r.end {
                f(r);
                any = true;
            }
        };
        if let Some(offset) = self.ranges {
            let mut list = dwarf.ranges(unit, offset)?;
            while let Some(r) = list.next()? {
                add(r);
            }
        } else if let (Some(begin), Some(end)) = (self.low_pc, self.high_pc) {
            add(gimli::Range { begin, end });
        } else if let (Some(begin), Some(size)) = (self.low_pc, self.size) {
            // A -1 tombstone wraps, and is dropped as empty.
            add(gimli::Range {
                begin,
                end: begin.wrapping_add(size),
            });
        }
        Ok(any)
    }
}

/// The edges of a DIE's ranges (docs/lines-and-modules.md): every range
/// list's ends, and its low address with each form of its end, where a
/// forged DIE repeats them (addr2line reads the last list and prefers an
/// end address to a size, gimli's `die_ranges` the reverse). A low address
/// plus a size past 2^64 is left out: `die_ranges` (gimli 0.32 to 0.34)
/// adds the two unchecked, addr2line drops such a range.
#[derive(Default)]
pub(crate) struct RangeEdges {
    low: Option<u64>,
    high: Option<u64>,
    size: Option<u64>,
}

impl RangeEdges {
    /// Takes `attr` if it is `DW_AT_low_pc`, `DW_AT_high_pc` or
    /// `DW_AT_ranges`, a range list's ends onto `push` at once (a low or
    /// high address in a form that is not an address is passed over, as
    /// addr2line passes it over).
    ///
    /// Errors: an address index or range list that cannot be read.
    pub(crate) fn take<R: gimli::Reader>(
        &mut self,
        dwarf: &gimli::Dwarf<R>,
        unit: &gimli::Unit<R>,
        attr: &gimli::Attribute<R>,
        push: &mut impl FnMut(u64),
    ) -> gimli::Result<()> {
        match attr.name() {
            gimli::DW_AT_low_pc => self.low = dwarf.attr_address(unit, attr.value())?.or(self.low),
            gimli::DW_AT_high_pc => match attr.value() {
                AttributeValue::Udata(v) => self.size = Some(v),
                v => self.high = dwarf.attr_address(unit, v)?.or(self.high),
            },
            gimli::DW_AT_ranges => {
                if let Some(mut ranges) = dwarf.attr_ranges(unit, attr.value())? {
                    while let Some(r) = ranges.next()? {
                        push(r.begin);
                        push(r.end);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The low address and each end onto `push`.
    pub(crate) fn finish(self, push: &mut impl FnMut(u64)) {
        let Some(begin) = self.low else { return };
        for end in [self.high, self.size.and_then(|s| begin.checked_add(s))]
            .into_iter()
            .flatten()
        {
            push(begin);
            push(end);
        }
    }
}

/// Names found through origins, by the origin's offset in its unit: a
/// worker's, for one unit at a time.
pub(super) type Origins<R> = crate::elf::intern::Map<u64, Option<R>>;

/// Whether attribute `at` is one addr2line names a function by: a linkage
/// name, a name, or the DIE an abstract origin or specification refers to.
fn names_function(at: gimli::DwAt) -> bool {
    matches!(
        at,
        gimli::DW_AT_linkage_name
            | gimli::DW_AT_MIPS_linkage_name
            | gimli::DW_AT_name
            | gimli::DW_AT_abstract_origin
            | gimli::DW_AT_specification
    )
}

/// A DIE's name attributes in their order (linkage name, name, abstract
/// origin or specification): addr2line's choice depends on it.
type Names<R> = Vec<(gimli::DwAt, AttributeValue<R>)>;

/// What one DIE's attributes say, read once for both readers (its names
/// are read again when asked for: [`Function::names`]).
struct Die<R: gimli::Reader> {
    ranges: RangeAttrs<R::Offset>,
    name: NameRef<R::Offset>,
    call_file: Option<u64>,
    call_line: u32,
    call_column: u32,
}

/// How a DIE's name is found: it has no name attribute; its only one is
/// an origin or specification within the unit (an inlined copy's, most
/// often: many share one origin, whose name is then found once); or its
/// attributes are to be read again.
#[derive(Clone, Copy)]
enum NameRef<O> {
    None,
    Origin(gimli::UnitOffset<O>),
    Reread,
}

/// An open subprogram or inlined subroutine on the walk's stack.
enum Open {
    /// A subprogram at this depth; its index among the functions with an
    /// address.
    Function(isize, Option<usize>),
    /// An inlined subroutine at this depth.
    Inlined(isize),
}

impl Open {
    fn depth(&self) -> isize {
        match *self {
            Open::Function(d, _) | Open::Inlined(d) => d,
        }
    }
}

/// Reads `unit`'s DIEs once: its [`Functions`], and onto `edges` the
/// starts and ends of its subprograms', inlined subroutines' and own
/// ranges that `keep` keeps, every range list and both forms of an end
/// (what either addr2line or gimli's `die_ranges` may take).
///
/// Errors: every error addr2line would meet reading any of these
/// functions, and some it would not (an attribute it only skips); the
/// caller then falls back to addr2line itself.
pub(super) fn read<R: gimli::Reader>(
    dwarf: &gimli::Dwarf<R>,
    unit: &gimli::Unit<R>,
    keep: &impl Fn(u64) -> bool,
    edges: &mut Vec<u64>,
) -> gimli::Result<Functions<R>> {
    let mut functions: Vec<Function<R>> = Vec::new();
    let mut inlined: Vec<(Vec<Inlined<R>>, Vec<InlinedAddress>)> = Vec::new();
    let mut addresses = Vec::new();
    let mut stack: Vec<Open> = Vec::new();
    let mut entries = unit.entries_raw(None)?;
    while !entries.is_empty() {
        let offset = entries.next_offset();
        let depth = entries.next_depth();
        let Some(abbrev) = entries.read_abbreviation()? else {
            continue;
        };
        // Every DIE closes the subtrees it is not in (a lexical block after
        // a nested declaration closes the declaration's).
        while stack.last().is_some_and(|o| o.depth() >= depth) {
            stack.pop();
        }
        let tag = abbrev.tag();
        let unit_die = matches!(
            tag,
            gimli::DW_TAG_compile_unit | gimli::DW_TAG_skeleton_unit
        );
        let is_fn = tag == gimli::DW_TAG_subprogram;
        let is_inl = tag == gimli::DW_TAG_inlined_subroutine;
        if !unit_die && !is_fn && !is_inl {
            entries.skip_attributes(abbrev.attributes())?;
            continue;
        }
        let die = read_die(dwarf, unit, &mut entries, abbrev.attributes(), keep, edges)?;
        if unit_die {
            continue;
        }
        if is_fn {
            let index = functions.len();
            let has_address = die.ranges.for_each(dwarf, unit, |range| {
                addresses.push(FunctionAddress {
                    range,
                    function: index,
                })
            })?;
            let mut slot = None;
            if has_address {
                functions.push(Function {
                    offset,
                    name: die.name,
                    names: std::sync::OnceLock::new(),
                    inlined: Box::default(),
                    inlined_addresses: Box::default(),
                });
                inlined.push((Vec::new(), Vec::new()));
                slot = Some(index);
            }
            stack.push(Open::Function(depth, slot));
            continue;
        }
        // An inlined subroutine: of its nearest subprogram, at the depth
        // of the inlined subroutines between them.
        let mut call_depth = 0;
        let mut owner = None;
        for o in stack.iter().rev() {
            match *o {
                Open::Inlined(_) => call_depth += 1,
                Open::Function(_, f) => {
                    owner = f;
                    break;
                }
            }
        }
        stack.push(Open::Inlined(depth));
        let Some(f) = owner else { continue };
        let (list, ranges) = &mut inlined[f];
        let index = list.len();
        list.push(Inlined {
            offset,
            name: die.name,
            call_file: die.call_file,
            call_line: die.call_line,
            call_column: die.call_column,
        });
        die.ranges.for_each(dwarf, unit, |range| {
            ranges.push(InlinedAddress {
                range,
                call_depth,
                function: index,
            })
        })?;
    }
    // addr2line reads a function's subtree to its end: one the unit cuts
    // short is an error there.
    if stack
        .iter()
        .any(|o| matches!(*o, Open::Function(d, Some(_)) if entries.next_depth() > d))
    {
        return Err(gimli::Error::UnexpectedEof(gimli::ReaderOffsetId(0)));
    }
    for (f, (list, mut ranges)) in functions.iter_mut().zip(inlined) {
        // The comparison addr2line's sort makes, so that equal keys end in
        // the same order.
        ranges.sort_unstable_by(|a, b| {
            (a.call_depth, a.range.begin).cmp(&(b.call_depth, b.range.begin))
        });
        f.inlined = list.into_boxed_slice();
        f.inlined_addresses = ranges.into_boxed_slice();
    }
    addresses.sort_unstable_by_key(|a: &FunctionAddress| a.range.begin);
    Ok(Functions {
        functions: functions.into_boxed_slice(),
        addresses: addresses.into_boxed_slice(),
    })
}

/// Reads a unit, subprogram or inlined subroutine DIE's attributes
/// `specs`: its ranges as addr2line takes them, its name attributes and
/// call site, and onto `edges` every range's ends that `keep` keeps.
fn read_die<R: gimli::Reader>(
    dwarf: &gimli::Dwarf<R>,
    unit: &gimli::Unit<R>,
    entries: &mut gimli::EntriesRaw<'_, R>,
    specs: &[gimli::AttributeSpecification],
    keep: &impl Fn(u64) -> bool,
    edges: &mut Vec<u64>,
) -> gimli::Result<Die<R>> {
    let mut die = Die {
        ranges: RangeAttrs::default(),
        name: NameRef::None,
        call_file: None,
        call_line: 0,
        call_column: 0,
    };
    let mut push = |a: u64| {
        if keep(a) {
            edges.push(a);
        }
    };
    let mut ends = RangeEdges::default();
    for &spec in specs {
        let attr = entries.read_attribute(spec)?;
        // Only the attributes read below are normalised (`value`).
        match attr.name() {
            gimli::DW_AT_low_pc | gimli::DW_AT_high_pc | gimli::DW_AT_ranges => {
                ends.take(dwarf, unit, &attr, &mut push)?;
                die.ranges.take(dwarf, unit, &attr)?;
            }
            at if names_function(at) => {
                die.name = match (die.name, attr.name(), attr.value()) {
                    (
                        NameRef::None,
                        gimli::DW_AT_abstract_origin | gimli::DW_AT_specification,
                        AttributeValue::UnitRef(o),
                    ) => NameRef::Origin(o),
                    _ => NameRef::Reread,
                };
            }
            gimli::DW_AT_call_file => {
                // DWARF 5 numbers files from 0; before, 0 is "no file".
                if let AttributeValue::FileIndex(fi) = attr.value()
                    && (fi > 0 || unit.header.version() >= 5)
                {
                    die.call_file = Some(fi);
                }
            }
            gimli::DW_AT_call_line => die.call_line = attr.udata_value().unwrap_or(0) as u32,
            gimli::DW_AT_call_column => die.call_column = attr.udata_value().unwrap_or(0) as u32,
            _ => {}
        }
    }
    ends.finish(&mut push);
    Ok(die)
}

/// A function's or inlined subroutine's name from its name attributes in
/// order, as addr2line's `Function::parse` and `InlinedFunction::parse`
/// choose it: a linkage name that reads, else the first `DW_AT_name` that
/// reads, else what the first origin or specification reached before
/// either names.
fn name_of<R: gimli::Reader>(
    dwarf: &gimli::Dwarf<R>,
    unit: &gimli::Unit<R>,
    units: &FindUnit<'_, R>,
    names: &[(gimli::DwAt, AttributeValue<R>)],
) -> gimli::Result<Option<R>> {
    let mut name = None;
    for (at, value) in names {
        match *at {
            gimli::DW_AT_linkage_name | gimli::DW_AT_MIPS_linkage_name => {
                if let Ok(v) = dwarf.attr_string(unit, value.clone()) {
                    name = Some(v);
                }
            }
            gimli::DW_AT_name => {
                if name.is_none() {
                    name = dwarf.attr_string(unit, value.clone()).ok();
                }
            }
            _ => {
                if name.is_none() {
                    name = name_attr(dwarf, unit, units, value.clone(), 16)?;
                }
            }
        }
    }
    Ok(name)
}

/// The name of the function or inlined subroutine DIE at `offset`, its
/// name attributes read again (into `scratch`) and chosen by [`name_of`].
fn name_at<R: gimli::Reader>(
    dwarf: &gimli::Dwarf<R>,
    unit: &gimli::Unit<R>,
    units: &FindUnit<'_, R>,
    offset: gimli::UnitOffset<R::Offset>,
    scratch: &mut Names<R>,
) -> gimli::Result<Option<R>> {
    let mut entries = unit.entries_raw(Some(offset))?;
    let Some(abbrev) = entries.read_abbreviation()? else {
        return Err(gimli::Error::NoEntryAtGivenOffset(offset.0.into_u64()));
    };
    scratch.clear();
    for &spec in abbrev.attributes() {
        let attr = entries.read_attribute(spec)?;
        if names_function(attr.name()) {
            scratch.push((attr.name(), attr.value()));
        }
    }
    name_of(dwarf, unit, units, scratch)
}

/// addr2line's `name_attr`: the name at a reference, within the unit or
/// into another; none for other forms, a supplementary file's, or past
/// `limit` steps.
fn name_attr<R: gimli::Reader>(
    dwarf: &gimli::Dwarf<R>,
    unit: &gimli::Unit<R>,
    units: &FindUnit<'_, R>,
    value: AttributeValue<R>,
    limit: usize,
) -> gimli::Result<Option<R>> {
    if limit == 0 {
        return Ok(None);
    }
    match value {
        AttributeValue::UnitRef(offset) => name_entry(dwarf, unit, units, offset, limit),
        AttributeValue::DebugInfoRef(dr) => {
            let (other, offset) = units(dr)?;
            name_entry(dwarf, other, units, offset, limit)
        }
        _ => Ok(None),
    }
}

/// addr2line's `name_entry`: the DIE at `offset`'s linkage name, else its
/// name, else its origin's or specification's (the last given).
fn name_entry<R: gimli::Reader>(
    dwarf: &gimli::Dwarf<R>,
    unit: &gimli::Unit<R>,
    units: &FindUnit<'_, R>,
    offset: gimli::UnitOffset<R::Offset>,
    limit: usize,
) -> gimli::Result<Option<R>> {
    let mut entries = unit.entries_raw(Some(offset))?;
    let Some(abbrev) = entries.read_abbreviation()? else {
        return Err(gimli::Error::NoEntryAtGivenOffset(offset.0.into_u64()));
    };
    let (mut name, mut next) = (None, None);
    for &spec in abbrev.attributes() {
        let attr = entries.read_attribute(spec)?;
        match attr.name() {
            gimli::DW_AT_linkage_name | gimli::DW_AT_MIPS_linkage_name => {
                if let Ok(v) = dwarf.attr_string(unit, attr.value()) {
                    return Ok(Some(v));
                }
            }
            gimli::DW_AT_name => {
                if let Ok(v) = dwarf.attr_string(unit, attr.value()) {
                    name = Some(v);
                }
            }
            gimli::DW_AT_abstract_origin | gimli::DW_AT_specification => {
                next = Some(attr.value());
            }
            _ => {}
        }
    }
    if name.is_some() {
        return Ok(name);
    }
    match next {
        Some(next) => name_attr(dwarf, unit, units, next, limit - 1),
        None => Ok(None),
    }
}

impl<R: gimli::Reader> Functions<R> {
    /// The function whose range holds `probe` (addr2line's binary search,
    /// whose pick among overlapping ranges this repeats).
    pub(super) fn find(&self, probe: u64) -> Option<&Function<R>> {
        let i = self
            .addresses
            .binary_search_by(|a| {
                if probe < a.range.begin {
                    Ordering::Greater
                } else if probe >= a.range.end {
                    Ordering::Less
                } else {
                    Ordering::Equal
                }
            })
            .ok()?;
        Some(&self.functions[self.addresses[i].function])
    }
}

impl<R: gimli::Reader> Function<R> {
    /// The function's name, then its inlined subroutines' in
    /// [`Function::inlined`]'s order, found at the first call (as
    /// addr2line finds them when it first parses the function, with the
    /// same errors, which every later call returns too).
    ///
    /// Errors: a name reference that cannot be followed.
    pub(super) fn names(
        &self,
        dwarf: &gimli::Dwarf<R>,
        unit: &gimli::Unit<R>,
        units: &FindUnit<'_, R>,
        origins: &mut Origins<R>,
    ) -> gimli::Result<&[Option<R>]> {
        let found = self.names.get_or_init(|| {
            let mut scratch = Vec::new();
            let mut one = |offset, name: NameRef<R::Offset>| match name {
                NameRef::None => Ok(None),
                // What `name_attr` does with an origin's reference.
                NameRef::Origin(o) => {
                    let key = o.0.into_u64();
                    if let Some(n) = origins.get(&key) {
                        return Ok(n.clone());
                    }
                    let n = name_entry(dwarf, unit, units, o, 16)?;
                    origins.insert(key, n.clone());
                    Ok(n)
                }
                NameRef::Reread => name_at(dwarf, unit, units, offset, &mut scratch),
            };
            std::iter::once((self.offset, self.name))
                .chain(self.inlined.iter().map(|i| (i.offset, i.name)))
                .map(|(o, n)| one(o, n))
                .collect::<gimli::Result<Vec<_>>>()
                .map(Vec::into_boxed_slice)
        });
        match found {
            Ok(names) => Ok(names),
            Err(e) => Err(*e),
        }
    }

    /// Inlined subroutine `i`.
    pub(super) fn inlined(&self, i: usize) -> &Inlined<R> {
        &self.inlined[i]
    }

    /// The inlined subroutines holding `probe`, outermost first, onto
    /// `out` (their indices).
    pub(super) fn inlined_at(&self, probe: u64, out: &mut Vec<usize>) {
        let mut rest = &self.inlined_addresses[..];
        loop {
            let depth = out.len();
            let found = rest.binary_search_by(|r| {
                if r.call_depth > depth {
                    Ordering::Greater
                } else if r.call_depth < depth {
                    Ordering::Less
                } else if r.range.begin > probe {
                    Ordering::Greater
                } else if r.range.end <= probe {
                    Ordering::Less
                } else {
                    Ordering::Equal
                }
            });
            let Ok(i) = found else { break };
            out.push(rest[i].function);
            rest = &rest[i + 1..];
        }
    }
}
