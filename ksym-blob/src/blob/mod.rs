//! One format-neutral view of a blob: [`Kallsyms`] is a v1 blob
//! ([`KallsymsMapped`], docs/FORMAT.md part I) or a v2 blob ([`KallsymsV2`],
//! part II), told apart by v2's magic. The resolver, `ksym-pack --check` and
//! `--dump`, and the tests read blobs through it, so no tool has a code path
//! per format. Builds without std.
//!
//! Each format has its own folder ([`v1`], [`v2`]); what both share is
//! [`symbol`] (the reader side: errors, names, symbols, hits) and, with std,
//! [`list`] (the writer side: the symbol list and its error) and
//! [`nameorder`] (name order and the LCP array both writers sort by).

// With neither format built every method is a match on no variant.
#![cfg_attr(
    not(any(feature = "v1", feature = "v2")),
    allow(unused_variables, unreachable_code, dead_code)
)]

pub mod frame;
pub mod problem;
pub mod reserved;
pub mod symbol;
pub mod v1;
pub mod v2;

#[cfg(feature = "std")]
pub mod list;
#[cfg(feature = "std")]
pub mod nameorder;
#[cfg(feature = "std")]
pub mod readback;

pub use frame::FrameKind;
pub use reserved::Reserved;
pub use symbol::{AddressHit, BlobError, BlobErrorKind, Name, Problem, Symbol};
#[cfg(feature = "v1")]
pub use v1::KallsymsMapped;
#[cfg(feature = "v2")]
pub use v2::KallsymsV2;
#[cfg(feature = "modules")]
use v2::module_space::read::ModuleSpace;

/// True when `blob` starts with the v2 magic (FORMAT.md §9.1).
fn is_v2(blob: &[u8]) -> bool {
    blob.starts_with(&v2::layout::MAGIC)
}

/// Which format a blob is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The seed's format (docs/FORMAT.md part I).
    V1,
    /// ksym's compact, self-checking format (docs/FORMAT.md part II).
    V2,
}

/// A checked view of a blob of either format. A variant exists when its
/// feature (`v1`, `v2`; std turns on both) does: a kernel links the code
/// of the format it embeds only.
// Built once per blob and passed by reference; boxing the larger v2 view
// would need an allocator, which the no_std reader does not have.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy)]
pub enum Kallsyms<'a> {
    /// A v1 blob.
    #[cfg(feature = "v1")]
    V1(KallsymsMapped<'a>),
    /// A v2 blob.
    #[cfg(feature = "v2")]
    V2(KallsymsV2<'a>),
    /// Neither format feature is on: no view can be built.
    #[cfg(not(any(feature = "v1", feature = "v2")))]
    #[doc(hidden)]
    Disabled(core::convert::Infallible, core::marker::PhantomData<&'a ()>),
}

/// As `each!`, for a method returning an iterator: one [`Either`] side per
/// format.
macro_rules! each_either {
    ($self:expr, $m:ident => $e:expr) => {
        // With one format built, the other side is an empty iterator.
        match $self {
            #[cfg(all(feature = "v1", feature = "v2"))]
            Kallsyms::V1($m) => Either::A($e),
            #[cfg(all(feature = "v1", feature = "v2"))]
            Kallsyms::V2($m) => Either::B($e),
            #[cfg(all(feature = "v1", not(feature = "v2")))]
            Kallsyms::V1($m) => Either::<_, core::iter::Empty<_>>::A($e),
            #[cfg(all(feature = "v2", not(feature = "v1")))]
            Kallsyms::V2($m) => Either::<core::iter::Empty<_>, _>::B($e),
            #[cfg(not(any(feature = "v1", feature = "v2")))]
            Kallsyms::Disabled(never, _) => {
                Either::<core::iter::Empty<_>, core::iter::Empty<_>>::A(match *never {})
            }
        }
    };
}

/// An iterator over one of two iterator types.
#[derive(Debug, Clone)]
pub enum Either<A, B> {
    /// The first kind.
    A(A),
    /// The second kind.
    B(B),
}

impl<T, A: Iterator<Item = T>, B: Iterator<Item = T>> Iterator for Either<A, B> {
    type Item = T;
    #[cfg_attr(feature = "std", inline)]
    fn next(&mut self) -> Option<T> {
        match self {
            Either::A(a) => a.next(),
            Either::B(b) => b.next(),
        }
    }
}

macro_rules! each {
    ($self:expr, $m:ident => $e:expr) => {
        match $self {
            #[cfg(feature = "v1")]
            Kallsyms::V1($m) => $e,
            #[cfg(feature = "v2")]
            Kallsyms::V2($m) => $e,
            #[cfg(not(any(feature = "v1", feature = "v2")))]
            Kallsyms::Disabled(never, _) => match *never {},
        }
    };
}

/// The error when the format a blob is in was not built (feature `v1` or
/// `v2` off): the blob's first byte is where the format shows.
#[allow(dead_code)]
fn not_built(format: &'static str) -> BlobError {
    BlobError {
        offset: 0,
        kind: BlobErrorKind::FormatNotBuilt(format),
    }
}

impl<'a> Kallsyms<'a> {
    /// Checks `blob` and returns a view of it: v2 when it starts with the v2
    /// magic (FORMAT.md §9.1), v1 otherwise. `stext`/`etext` override the
    /// blob's own bounds.
    ///
    /// Errors: [`BlobError`] with the byte offset (and, for v2, the section)
    /// of the first problem. A v1 blob is validated whole (linear time, and
    /// must start 8-byte aligned); a v2 blob by its CRCs and (feature
    /// `shape-checks`) its section shapes, its `module_space` (FORMAT.md
    /// §16, feature `modules`) included.
    pub fn from_blob(
        blob: &'a [u8],
        stext: Option<u64>,
        etext: Option<u64>,
    ) -> Result<Self, BlobError> {
        if is_v2(blob) {
            #[cfg(feature = "v2")]
            {
                let v = KallsymsV2::from_blob(blob, stext, etext)?;
                #[cfg(feature = "modules")]
                ModuleSpace::of(&v)?;
                Ok(Kallsyms::V2(v))
            }
            #[cfg(not(feature = "v2"))]
            Err(not_built("v2"))
        } else {
            #[cfg(feature = "v1")]
            return KallsymsMapped::from_blob(blob, stext, etext).map(Kallsyms::V1);
            #[cfg(not(feature = "v1"))]
            Err(not_built("v1"))
        }
    }

    /// Opens the blob at the start of a reserved region: `region` is a blob
    /// followed by zero bytes, as in a kernel section reserved before the
    /// blob's size was known and filled afterwards (FORMAT.md §2.3). The
    /// blob's length comes from its own header (v1: its counts; v2: its
    /// directory), the rest must be zeros, and the blob is then checked as
    /// [`from_blob`](Self::from_blob) checks it. Returns the view and the
    /// number of padding bytes. No allocation, no copy.
    ///
    /// A region of zeros only, which is what a reserved section holds
    /// before `ksym-pack --patch-elf` fills it, is
    /// [`BlobErrorKind::NotFilled`] whatever format features are built, so
    /// a kernel tells "no table yet" from a damaged table. A kernel
    /// declares the region with [`reserve!`](crate::reserve) and opens it
    /// with [`Reserved::open`](crate::Reserved::open), which reads it so
    /// that no optimiser folds the reads to the zeros it was linked with.
    ///
    /// Errors: [`BlobError`] with the byte offset in `region`: `NotFilled`
    /// (offset 0), the region ends before the blob its header describes
    /// (`Truncated`), a nonzero byte follows the blob (`NonZeroAfterBlob`),
    /// or any error of `from_blob`.
    pub fn from_region(
        region: &'a [u8],
        stext: Option<u64>,
        etext: Option<u64>,
    ) -> Result<(Self, usize), BlobError> {
        if !is_v2(region) {
            #[cfg(feature = "v1")]
            return KallsymsMapped::from_region(region, stext, etext)
                .map(|(m, padding)| (Kallsyms::V1(m), padding));
            #[cfg(not(feature = "v1"))]
            return symbol::check_filled(region).and(Err(not_built("v1")));
        }
        #[cfg(not(feature = "v2"))]
        return Err(not_built("v2"));
        #[cfg(feature = "v2")]
        {
            let (v, padding) = KallsymsV2::from_region(region, stext, etext)?;
            #[cfg(feature = "modules")]
            ModuleSpace::of(&v)?;
            Ok((Kallsyms::V2(v), padding))
        }
    }

    /// Opens the bytes of a blob file: exactly a blob
    /// ([`from_blob`](Self::from_blob); an empty v1 blob is 32 zero bytes)
    /// or a reserved region, such as a kernel's `.ksym` section dumped whole
    /// ([`from_region`](Self::from_region)). What the tools read a `BLOB`
    /// argument with (FORMAT.md §2.3). Returns the view and the number of
    /// zero bytes after the blob.
    ///
    /// Errors: as [`from_region`](Self::from_region); `NotFilled` for zeros
    /// only that are not an empty v1 blob.
    pub fn from_file_bytes(
        bytes: &'a [u8],
        stext: Option<u64>,
        etext: Option<u64>,
    ) -> Result<(Self, usize), BlobError> {
        match Self::from_region(bytes, stext, etext) {
            Err(e) if e.kind == BlobErrorKind::NotFilled => Self::from_blob(bytes, stext, etext)
                .map(|k| (k, 0))
                .map_err(|_| e),
            r => r,
        }
    }

    /// The blob's format.
    pub fn format(&self) -> Format {
        match self {
            #[cfg(feature = "v1")]
            Kallsyms::V1(_) => Format::V1,
            #[cfg(feature = "v2")]
            Kallsyms::V2(_) => Format::V2,
            #[cfg(not(any(feature = "v1", feature = "v2")))]
            Kallsyms::Disabled(never, _) => match *never {},
        }
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        each!(self, m => m.len())
    }

    /// True when the blob holds no symbol.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `_stext` bound in use, if any.
    pub fn stext(&self) -> Option<u64> {
        each!(self, m => m.stext())
    }

    /// The `_etext` bound in use, if any.
    pub fn etext(&self) -> Option<u64> {
        each!(self, m => m.etext())
    }

    /// The kernel release stored in a v2 blob (`ksym-pack --release`), if any.
    pub fn release(&self) -> Option<&'a [u8]> {
        #[cfg(feature = "v2")]
        if let Some(v) = self.v2() {
            return Some(v.meta().release).filter(|r| !r.is_empty());
        }
        None
    }

    /// The build-id stored in a v2 blob (`ksym-pack --build-id`, else the
    /// GNU build-id note of the ELF given to `--lines` or `--patch-elf`),
    /// if any: the bytes of the note's descriptor, as `readelf -n` prints
    /// them in hex. A kernel that finds its own note can tell a table
    /// packed from another build.
    pub fn build_id(&self) -> Option<&'a [u8]> {
        #[cfg(feature = "v2")]
        if let Some(v) = self.v2() {
            return Some(v.meta().build_id).filter(|r| !r.is_empty());
        }
        None
    }

    /// Whether this table was packed for the image whose GNU build-id
    /// note is `note` (the bytes of the running kernel's
    /// `.note.gnu.build-id` section: `namesz`, `descsz` and `type` as
    /// native-endian `u32`s, `"GNU\0"`, then the build-id; ELF spec,
    /// "Note Section"; `NT_GNU_BUILD_ID` is 3). `Some(true)` when the
    /// blob's [`build_id`](Self::build_id) equals the note's, `Some(false)`
    /// when it differs: a table from another build, whose names would be
    /// wrong. `None` when it cannot tell: a v1 blob or a v2 blob packed
    /// with no build-id, or `note` is not a GNU build-id note.
    ///
    /// Compares byte by byte (no `memcmp` for a kernel to link). The
    /// image's note is not changed by `ksym-pack --patch-elf`, which
    /// records it (docs/kernel.md, step 4).
    pub fn matches_build_id_note(&self, note: &[u8]) -> Option<bool> {
        let ours = self.build_id()?;
        let theirs = gnu_build_id(note)?;
        Some(ours.len() == theirs.len() && ours.iter().zip(theirs).all(|(a, b)| a == b))
    }

    /// The v2 view, `None` for a v1 blob.
    #[cfg(feature = "v2")]
    fn v2(&self) -> Option<&KallsymsV2<'a>> {
        match self {
            #[cfg(feature = "v2")]
            Kallsyms::V2(v) => Some(v),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// The source lines and inline frames of a v2 blob packed with
    /// `--lines` (FORMAT.md §15); `None` for v1 and for v2 without them.
    /// Feature `lines`.
    #[cfg(feature = "lines")]
    pub fn lines(&self) -> Option<&crate::blob::v2::source_lines::read::LineTable<'a>> {
        self.v2().and_then(|v| v.lines())
    }

    /// The kernel modules' symbols and lines of a v2 blob packed with
    /// `ksym-pack --modules DIR` (FORMAT.md §16); `None` otherwise. Opens
    /// the inner blob anew (one CRC pass over it): call it once per blob.
    /// Feature `modules`.
    #[cfg(feature = "modules")]
    pub fn module_space(&self) -> Option<ModuleSpace<'a>> {
        self.v2().and_then(|v| ModuleSpace::of(v).ok().flatten())
    }

    /// True when a v2 blob's module table names `module`.
    pub fn has_module(&self, module: &[u8]) -> bool {
        #[cfg(feature = "v2")]
        if let Some(v) = self.v2() {
            return v.has_module(module);
        }
        let _ = module;
        false
    }

    /// The symbol covering `addr` (FORMAT.md §5.2; §12.1 for v2).
    #[cfg_attr(feature = "std", inline)]
    pub fn lookup_address(&self, addr: u64) -> Option<AddressHit<'a>> {
        each!(self, m => m.lookup_address(addr))
    }

    /// The first symbol in address order named `name`.
    pub fn lookup_name(&self, name: &[u8]) -> Option<Symbol<'a>> {
        each!(self, m => m.lookup_name(name))
    }

    /// Every symbol named `name`, in address order.
    pub fn lookup_name_all<'s>(&'s self, name: &[u8]) -> impl Iterator<Item = Symbol<'a>> + 's {
        each_either!(self, m => m.lookup_name_all(name))
    }

    /// All symbols in address order, aliases in input order.
    pub fn symbols(&self) -> impl Iterator<Item = Symbol<'a>> + '_ {
        each_either!(self, m => m.symbols())
    }

    /// The first step of a lookup, for callers that batch many: the number
    /// of (v1) addresses or (v2) stored rows at or below `addr`, searched
    /// inside `window` (see [`KallsymsMapped::rank_in`]; `0..usize::MAX`
    /// searches everything).
    #[cfg_attr(feature = "std", inline)]
    pub fn rank_in(&self, addr: u64, window: core::ops::Range<usize>) -> usize {
        each!(self, m => m.rank_in(addr, window))
    }

    /// The second step: the answer for `addr` given its [`rank_in`](Self::rank_in).
    #[cfg_attr(feature = "std", inline)]
    pub fn lookup_ranked(&self, addr: u64, rank: usize) -> Option<AddressHit<'a>> {
        each!(self, m => m.lookup_ranked(addr, rank))
    }

    /// Reads what a lookup at `rank` will read first, so that a batch of
    /// lookups overlaps its cache misses; returns a byte to keep it alive.
    #[cfg_attr(feature = "std", inline)]
    pub fn touch(&self, rank: usize) -> u8 {
        match self {
            #[cfg(feature = "v1")]
            Kallsyms::V1(m) if rank > 0 && rank <= m.len() => m.symbol_type(rank - 1),
            #[cfg(feature = "v2")]
            Kallsyms::V2(v) => v.touch(rank),
            #[allow(unreachable_patterns)]
            _ => 0,
        }
    }

    /// Everything `from_blob` does not check: for v1 nothing (it checked
    /// all), for v2 [`KallsymsV2::verify`]. What `ksym-pack --check` runs.
    ///
    /// Errors: the first problem, as [`BlobError`].
    #[cfg(feature = "std")]
    pub fn verify(&self) -> Result<(), BlobError> {
        let Some(v) = self.v2() else {
            return Ok(());
        };
        v.verify()?;
        match ModuleSpace::of(v)? {
            Some(ms) => ms.verify(),
            None => Ok(()),
        }
    }
}

/// One line describing a checked blob, as `ksym-pack --check` prints it:
/// format, counts, size, and for v2 identity, text bounds and sections.
#[cfg(feature = "std")]
pub fn describe(k: &Kallsyms<'_>) -> std::string::String {
    use std::fmt::Write as _;
    let mut s = std::string::String::new();
    match k {
        Kallsyms::V1(m) => {
            let z = m.section_sizes();
            let _ = write!(
                s,
                "v1, {} symbols, {} tokens, {} bytes",
                z.num_syms, z.tokens, z.total
            );
        }
        Kallsyms::V2(v) => {
            let total: usize = v.sections().map(|x| x.offset + x.len).max().unwrap_or(0);
            let _ = write!(
                s,
                "v2, {} symbols ({} stored), {} pair codes, {} bytes ({:.2} B/symbol)",
                v.len(),
                v.stored(),
                v.num_tokens(),
                total,
                total as f64 / v.len().max(1) as f64
            );
            if let Some(l) = v.lines() {
                let (lo, hi) = l.span();
                let _ = write!(
                    s,
                    "; source lines {lo:#x}..{hi:#x}: {} rows ({} a block), {} inline-tree nodes{}",
                    l.rows(),
                    l.rows_per_block(),
                    l.nodes() - 1,
                    if l.has_columns() { ", columns" } else { "" }
                );
            }
            if let Ok(Some(ms)) = ModuleSpace::of(v) {
                let inner = ms.symbols();
                let _ = write!(
                    s,
                    "; {} modules: {} sections, {} symbols{}",
                    ms.len(),
                    ms.num_sections(),
                    inner.len(),
                    match ms.lines() {
                        Some(l) => format!(
                            ", source lines: {} rows, {} inline-tree nodes",
                            l.rows(),
                            l.nodes() - 1
                        ),
                        None => std::string::String::new(),
                    }
                );
            }
            let meta = v.meta();
            if !meta.release.is_empty() {
                let _ = write!(
                    s,
                    "; release {}",
                    std::string::String::from_utf8_lossy(meta.release)
                );
            }
            if !meta.build_id.is_empty() {
                s.push_str("; build-id ");
                for b in meta.build_id {
                    let _ = write!(s, "{b:02x}");
                }
            }
            for (i, name) in crate::blob::v2::layout::BOUND_NAMES.iter().enumerate() {
                if let Some(a) = meta.bound(i) {
                    let _ = write!(s, "; {} {a:#x}", std::string::String::from_utf8_lossy(name));
                }
            }
            s.push_str("; sections:");
            for x in v.sections() {
                let _ = write!(s, " {} {}", x.id.name(), x.len);
            }
        }
    }
    s
}

/// Writes every symbol of `k` as `ADDR TYPE NAME[\t[module]]` lines, in
/// address order (`ksym-pack --dump`): for v2, exactly what ksym-filter
/// wrote (FORMAT.md part II).
///
/// Errors: write errors.
#[cfg(feature = "std")]
pub fn dump(k: &Kallsyms<'_>, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let mut line = std::vec::Vec::with_capacity(256);
    for s in k.symbols() {
        line.clear();
        crate::text::hex::push_u64_padded(&mut line, s.address);
        line.extend_from_slice(&[b' ', s.symbol_type, b' ']);
        s.name.extend_into(&mut line);
        if let Some(m) = s.module {
            line.extend_from_slice(b"\t[");
            line.extend_from_slice(m);
            line.push(b']');
        }
        line.push(b'\n');
        out.write_all(&line)?;
    }
    if let Some(ms) = k.module_space() {
        dump_modules(&ms, out)?;
    }
    Ok(())
}

/// The module space after the kernel's symbols: per module a `# module
/// NAME build-id HEX` line, a `# section NAME BASE SIZE` line per
/// section, then its symbols as `ADDR TYPE NAME\t[module]` at module-space
/// addresses (FORMAT.md §16.2).
#[cfg(feature = "std")]
fn dump_modules(ms: &ModuleSpace<'_>, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    use std::string::String;
    let mut syms = ms.symbols().symbols().peekable();
    for m in ms.modules() {
        let bid: String = m.build_id.iter().map(|b| format!("{b:02x}")).collect();
        writeln!(
            out,
            "# module {} build-id {}",
            String::from_utf8_lossy(m.name),
            if bid.is_empty() { "-" } else { &bid }
        )?;
        let mut end = 0;
        for s in m.sections.clone().filter_map(|s| ms.section(s)) {
            writeln!(
                out,
                "# section {} {:#x} {:#x}",
                String::from_utf8_lossy(s.name),
                s.base,
                s.size
            )?;
            end = s.base + s.size;
        }
        let mut line = std::vec::Vec::with_capacity(256);
        while let Some(s) = syms.next_if(|s| s.address < end) {
            line.clear();
            crate::text::hex::push_u64_padded(&mut line, s.address);
            line.extend_from_slice(&[b' ', s.symbol_type, b' ']);
            s.name.extend_into(&mut line);
            line.extend_from_slice(b"\t[");
            line.extend_from_slice(m.name);
            line.extend_from_slice(b"]\n");
            out.write_all(&line)?;
        }
    }
    Ok(())
}

/// The build-id in a GNU build-id note (ELF spec, "Note Section"; the
/// `.note.gnu.build-id` section `ld --build-id` writes): the descriptor
/// of a note of type 3 (`NT_GNU_BUILD_ID`) named `"GNU"`, its header
/// fields native-endian as the image that holds it. `None` for anything
/// else, including a note cut short.
pub fn gnu_build_id(note: &[u8]) -> Option<&[u8]> {
    let word = |i: usize| -> Option<usize> {
        let b = note.get(4 * i..4 * i + 4)?;
        Some(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    let (namesz, descsz, kind, name) = (word(0)?, word(1)?, word(2)?, word(3)?);
    // The name as a word: no slice comparison, which may call `memcmp`.
    if kind != 3 || namesz != 4 || name != u32::from_ne_bytes(*b"GNU\0") as usize {
        return None;
    }
    note.get(16..16usize.checked_add(descsz)?)
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;
    use crate::blob::list::SymbolList;
    use crate::blob::v2::write::{V2Options, pack_v2};
    use crate::blobfile::AlignedBlob;

    /// A GNU build-id note of `id`, as `ld --build-id` writes it here.
    fn note(id: &[u8]) -> Vec<u8> {
        let mut n = Vec::new();
        for w in [4u32, id.len() as u32, 3] {
            n.extend_from_slice(&w.to_ne_bytes());
        }
        n.extend_from_slice(b"GNU\0");
        n.extend_from_slice(id);
        n
    }

    #[test]
    fn a_table_knows_the_image_it_was_packed_for() {
        let mut list = SymbolList::new();
        list.push(0x1000, b'T', b"f").unwrap();
        let id = [0x5a, 0x01, 0xfe, 0x77];
        let opts = V2Options {
            build_id: id.to_vec(),
            ..V2Options::default()
        };
        let blob = AlignedBlob::copy_from(&pack_v2(&list, &opts).unwrap().blob);
        let k = Kallsyms::from_blob(blob.as_bytes(), None, None).unwrap();
        assert_eq!(gnu_build_id(&note(&id)), Some(&id[..]));
        assert_eq!(k.matches_build_id_note(&note(&id)), Some(true));
        // Another build, a shorter id, a cut note, another note type.
        assert_eq!(
            k.matches_build_id_note(&note(&[0x5a, 0x01, 0xfe, 0x78])),
            Some(false)
        );
        assert_eq!(k.matches_build_id_note(&note(&id[..3])), Some(false));
        assert_eq!(k.matches_build_id_note(&note(&id)[..18]), None);
        let mut other = note(&id);
        other[8] = 1;
        assert_eq!(k.matches_build_id_note(&other), None);
        // No build-id in the blob: it cannot tell.
        let plain = AlignedBlob::copy_from(&pack_v2(&list, &V2Options::default()).unwrap().blob);
        let p = Kallsyms::from_blob(plain.as_bytes(), None, None).unwrap();
        assert_eq!(p.matches_build_id_note(&note(&id)), None);
    }
}
