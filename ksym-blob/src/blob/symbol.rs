//! What both blob formats share: the error a reader returns
//! ([`BlobError`]), a stored name ([`Name`]), a symbol ([`Symbol`]) and the
//! answer to an address lookup ([`AddressHit`]). The format readers
//! (`v1::read`, `v2::read`) build them; the format-neutral view
//! (`blob::Kallsyms`) hands them out. A lower layer than both: it imports
//! only the leaves it wraps (v2's coded names, v1's token limit).
//! Rules: docs/FORMAT.md §5 (lookups) and §11 (v2 names). Builds without std.

use core::cmp::Ordering;
use core::fmt;

pub use super::problem::Problem;

use super::v1::layout::MAX_TOKENS;
use super::v2::layout::VERSION;
#[cfg(feature = "v2")]
use super::v2::names::CodedName;

/// What is wrong with a blob; `offset` is the byte offset in the blob where the
/// problem was found (FORMAT.md §2 gives the layout the offsets refer to).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobError {
    /// Byte offset in the blob.
    pub offset: usize,
    /// What was expected there.
    pub kind: BlobErrorKind,
}

/// The kinds of [`BlobError`]. Fields: `index` is a symbol index in address
/// order, `id` a token id, `rank` a position in name order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum BlobErrorKind {
    /// The buffer does not start at an 8-byte aligned address (FORMAT.md §2.2).
    Misaligned,
    /// The blob ends inside the named section.
    Truncated(&'static str),
    /// A count or length whose byte size overflows the address space.
    CountOverflow(&'static str),
    /// A padding byte is not zero.
    NonZeroPadding,
    /// Bytes follow the blob's last section, which is named (v1:
    /// `token_index`; v2: the last section of the directory).
    TrailingBytes(&'static str),
    /// A reserved region (FORMAT.md §2.3) holds only zero bytes: it was
    /// never filled (`ksym-pack --patch-elf` writes the blob into it).
    /// Whatever format features are on, this is how an unfilled `.ksym`
    /// section reads, so a kernel tells "no table yet" from a damaged one.
    NotFilled,
    /// A reserved region holds a nonzero byte after the blob its header
    /// describes (FORMAT.md §2.3).
    NonZeroAfterBlob,
    /// `addresses[index]` is below `addresses[index - 1]`.
    AddressesNotAscending { index: usize },
    /// `offsets[index]` is not where the previous record ends.
    RecordsNotContiguous { index: usize },
    /// The record of symbol `index` runs past the end of the names section.
    RecordPastEnd { index: usize },
    /// The symbol type byte of symbol `index` is not printable ASCII.
    BadSymbolType { index: usize },
    /// The record of symbol `index` has an empty name.
    EmptyName { index: usize },
    /// The token reference of symbol `index` is malformed.
    BadTokenRef { index: usize },
    /// The token reference of symbol `index` names a token past the table.
    TokenIdOutOfRange { index: usize, id: u16 },
    /// A raw byte 0xFF in the name of symbol `index`.
    MarkerInName { index: usize },
    /// More than 511 tokens.
    TooManyTokens,
    /// `token_index` does not start at 0 or is not strictly ascending, or a
    /// token is empty or runs past the table.
    BadTokenIndex { id: usize },
    /// A token holds the byte 0xFF.
    MarkerInToken { id: usize },
    /// `seqs[rank]` is out of range or breaks name order (so `seqs` is not the
    /// name-order permutation of FORMAT.md §4).
    NameOrder { rank: usize },
    /// v2: the header is not what FORMAT.md §9.1 describes.
    BadHeader(Problem),
    /// v2: a version this reader does not implement.
    UnsupportedVersion { version: u16 },
    /// v2: a section's bytes do not match its CRC32C (FORMAT.md §9.2).
    SectionChecksum { section: &'static str },
    /// The blob is in a format whose reader this build leaves out (cargo
    /// feature `v1` or `v2` off).
    FormatNotBuilt(&'static str),
    /// v2: a section's contents break a rule of FORMAT.md part II.
    BadSection {
        section: &'static str,
        what: Problem,
    },
}

/// `Err(NotFilled)` at offset 0 when `region` holds zero bytes only: a
/// reserved region that `ksym-pack --patch-elf` never filled (FORMAT.md
/// §2.3). An empty region is left to the format's reader (it is
/// truncated); a filled one stops the scan at its first byte.
pub(crate) fn check_filled(region: &[u8]) -> Result<(), BlobError> {
    match region.is_empty() || region.iter().any(|&b| b != 0) {
        true => Ok(()),
        false => Err(BlobError {
            offset: 0,
            kind: BlobErrorKind::NotFilled,
        }),
    }
}

impl fmt::Display for BlobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use BlobErrorKind::*;
        write!(f, "malformed blob at byte offset {}: ", self.offset)?;
        match self.kind {
            Misaligned => write!(
                f,
                "buffer is not 8-byte aligned (map or copy it to an aligned address)"
            ),
            Truncated(s) => write!(f, "blob ends inside {s}"),
            CountOverflow(s) => write!(f, "{s} is too large for this machine"),
            NonZeroPadding => write!(f, "expected a zero padding byte"),
            TrailingBytes(s) => write!(
                f,
                "expected the end of the blob after its last section, {s} (a section dump with \
                 zeros after the blob reads as a reserved region)"
            ),
            NotFilled => write!(
                f,
                "the region holds only zeros: never filled (ksym-pack --patch-elf writes the blob into it)"
            ),
            NonZeroAfterBlob => write!(
                f,
                "nonzero byte after the blob: a reserved region must be the blob, then zeros"
            ),
            AddressesNotAscending { index } => {
                write!(f, "addresses[{index}] is below addresses[{}]", index - 1)
            }
            RecordsNotContiguous { index } => {
                write!(
                    f,
                    "offsets[{index}] does not point where the previous name record ends"
                )
            }
            RecordPastEnd { index } => write!(f, "name record {index} runs past the names section"),
            BadSymbolType { index } => {
                write!(f, "name record {index}: symbol type is not printable ASCII")
            }
            EmptyName { index } => write!(f, "name record {index}: empty name"),
            BadTokenRef { index } => write!(f, "name record {index}: malformed token reference"),
            TokenIdOutOfRange { index, id } => {
                write!(
                    f,
                    "name record {index}: token id {id} is past the token table"
                )
            }
            MarkerInName { index } => write!(f, "name record {index}: raw byte 0xFF in name"),
            TooManyTokens => write!(f, "more than {MAX_TOKENS} tokens"),
            BadTokenIndex { id } => {
                write!(
                    f,
                    "token_index[{id}]: expected 0 first, then strictly ascending offsets inside token_table"
                )
            }
            MarkerInToken { id } => write!(f, "token {id} holds the byte 0xFF"),
            NameOrder { rank } => {
                write!(
                    f,
                    "seqs[{rank}] is out of range or out of name order (not a permutation sorted by name)"
                )
            }
            BadHeader(what) => write!(f, "v2 header: {what}"),
            UnsupportedVersion { version } => {
                write!(
                    f,
                    "v2 header: version {version}, expected {VERSION} (repack the symbol list with this ksym-pack)"
                )
            }
            SectionChecksum { section } => write!(
                f,
                "section `{section}`: CRC32C mismatch (the blob is damaged)"
            ),
            BadSection { section, what } => write!(f, "section `{section}`: {what}"),
            FormatNotBuilt(format) => write!(
                f,
                "a {format} blob, and this build has no {format} reader (cargo feature `{format}`)"
            ),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for BlobError {}

/// A stored name, borrowed from the blob: a v1 record (at most one token
/// followed by raw bytes, FORMAT.md §3.2) or a v2 coded name (§11), decoded
/// as it is read. Comparing or printing it allocates nothing.
#[derive(Clone, Copy)]
pub struct Name<'a>(Repr<'a>);

#[derive(Clone, Copy)]
#[cfg_attr(not(feature = "v1"), allow(dead_code))]
enum Repr<'a> {
    Plain {
        token: &'a [u8],
        rest: &'a [u8],
    },
    // Without v2 no name is coded, and a v1-only kernel links no decoder.
    #[cfg(feature = "v2")]
    Coded(CodedName<'a>),
}

#[cfg_attr(not(feature = "v1"), allow(dead_code))]
impl<'a> Name<'a> {
    /// A v1 name: `token` (empty for none) then `rest`.
    pub(crate) fn plain(token: &'a [u8], rest: &'a [u8]) -> Self {
        Name(Repr::Plain { token, rest })
    }
    /// A v2 name.
    #[cfg(feature = "v2")]
    pub(crate) fn from_coded(c: CodedName<'a>) -> Self {
        Name(Repr::Coded(c))
    }
    /// Calls `f` with the name's bytes in runs, in order.
    #[cfg_attr(feature = "std", inline)]
    pub fn for_each_run(&self, mut f: impl FnMut(&'a [u8])) {
        match self.0 {
            Repr::Plain { token, rest } => {
                f(token);
                f(rest);
            }
            #[cfg(feature = "v2")]
            Repr::Coded(c) => c.for_each_run(f),
        }
    }
    /// For a v2 name, the coded form (for callers that cache decoded names
    /// by [`CodedName::key`](CodedName::key)).
    #[cfg(feature = "v2")]
    pub fn coded(&self) -> Option<&CodedName<'a>> {
        match &self.0 {
            Repr::Plain { .. } => None,
            Repr::Coded(c) => Some(c),
        }
    }
    /// Length of the expanded name in bytes.
    pub fn len(&self) -> usize {
        let mut n = 0;
        self.for_each_run(|r| n += r.len());
        n
    }
    /// True for an empty name (never in a well-formed blob).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Byte-order comparison of this name with `key` (the name order of FORMAT.md §4).
    pub fn cmp_bytes(&self, key: &[u8]) -> Ordering {
        match self.0 {
            Repr::Plain { token, rest } => cmp_parts(token, rest, key),
            #[cfg(feature = "v2")]
            Repr::Coded(c) => c.cmp_key(key).0,
        }
    }
    /// Byte-order comparison of two v1 names (what v1 validation needs);
    /// a v2 name compares as empty here: use [`Name::cmp_bytes`].
    pub(crate) fn cmp_plain(&self, other: &Name<'_>) -> Ordering {
        let parts = |n: &Name<'a>| match n.0 {
            Repr::Plain { token, rest } => (token, rest),
            #[cfg(feature = "v2")]
            Repr::Coded(_) => (&[][..], &[][..]),
        };
        let (t1, r1) = parts(self);
        let (t2, r2) = match other.0 {
            Repr::Plain { token, rest } => (token, rest),
            #[cfg(feature = "v2")]
            Repr::Coded(_) => (&[][..], &[][..]),
        };
        if t1.len() == t2.len() && t1 == t2 {
            return r1.cmp(r2);
        }
        // Byte by byte across token and rest: no iterator adapters, which
        // a kernel reading its blob would link for this alone.
        let at = |t: &[u8], r: &[u8], i: usize| {
            let b = if i < t.len() {
                t.get(i)
            } else {
                r.get(i - t.len())
            };
            b.copied().unwrap_or(0)
        };
        let (n1, n2) = (t1.len() + r1.len(), t2.len() + r2.len());
        for i in 0..n1.min(n2) {
            match at(t1, r1, i).cmp(&at(t2, r2, i)) {
                Ordering::Equal => {}
                o => return o,
            }
        }
        n1.cmp(&n2)
    }
    /// True when the name equals `key` byte for byte.
    pub fn eq_bytes(&self, key: &[u8]) -> bool {
        match self.0 {
            Repr::Plain { token, rest } => {
                key.len() == token.len() + rest.len()
                    && key.starts_with(token)
                    && &key[token.len()..] == rest
            }
            #[cfg(feature = "v2")]
            Repr::Coded(c) => c.cmp_key(key).0 == Ordering::Equal,
        }
    }
    /// Appends the expanded name to `out`.
    #[cfg(feature = "std")]
    #[cfg_attr(feature = "std", inline)]
    pub fn extend_into(&self, out: &mut std::vec::Vec<u8>) {
        self.for_each_run(|r| out.extend_from_slice(r));
    }
}

/// Byte-order comparison of `token` followed by `rest` with `key`.
#[cfg_attr(feature = "std", inline)]
pub(crate) fn cmp_parts(token: &[u8], rest: &[u8], key: &[u8]) -> Ordering {
    let t = token.len().min(key.len());
    match token[..t].cmp(&key[..t]) {
        Ordering::Equal if t < token.len() => Ordering::Greater,
        Ordering::Equal => rest.cmp(&key[t..]),
        o => o,
    }
}

impl PartialEq<[u8]> for Name<'_> {
    fn eq(&self, other: &[u8]) -> bool {
        self.eq_bytes(other)
    }
}

/// Prints the name, with invalid UTF-8 replaced by U+FFFD.
impl fmt::Display for Name<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A run may end inside a UTF-8 character only for non-UTF-8 names,
        // which print lossily either way.
        let mut res = Ok(());
        self.for_each_run(|part| {
            for chunk in part.utf8_chunks() {
                if res.is_ok() {
                    res = f.write_str(chunk.valid());
                }
                if !chunk.invalid().is_empty() && res.is_ok() {
                    res = f.write_str("\u{FFFD}");
                }
            }
        });
        res
    }
}

impl fmt::Debug for Name<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

/// One symbol of the blob.
#[derive(Debug, Clone, Copy)]
pub struct Symbol<'a> {
    /// Position in address order (index into `addresses`).
    pub index: usize,
    /// Virtual address.
    pub address: u64,
    /// Symbol type, as `nm` prints it (`b'T'`, `b't'`, ...).
    pub symbol_type: u8,
    /// The name.
    pub name: Name<'a>,
    /// The module it belongs to (the `[module]` column of /proc/kallsyms);
    /// always `None` in a v1 blob, which has no field for it (FORMAT.md §6).
    pub module: Option<&'a [u8]>,
}

/// The answer to an address lookup (FORMAT.md §5.2).
#[derive(Debug, Clone, Copy)]
pub struct AddressHit<'a> {
    /// The first alias at the symbol's address, in address order.
    pub symbol: Symbol<'a>,
    /// `address - symbol.address`, in bytes.
    pub offset: u64,
    /// Bytes from the symbol's address to the next distinct address, capped at
    /// etext for symbols below etext; `None` for the last symbol above etext,
    /// whose end is unknown (it covers at most
    /// [`crate::kernel::LAST_SYMBOL_MAX_SPAN`] bytes).
    pub size: Option<u64>,
}
