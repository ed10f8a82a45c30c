//! [`Problem`]: what a v2 reader found wrong, as a byte. A leaf: the
//! readers and `symbol`'s error type import it, it imports nothing of ours.

use core::fmt;

/// What is wrong inside a v2 header or section (`BlobErrorKind::BadHeader`,
/// `BlobErrorKind::BadSection`; the rules are docs/FORMAT.md part II): a
/// byte, so that a kernel's reader links no message text. [`Problem::as_str`]
/// and `Display` give the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
    /// length does not match the symbol count.
    LengthNotSymbolCount,
    /// no v2 magic.
    NoMagic,
    /// unknown flags set.
    UnknownFlags,
    /// header length and section count disagree.
    HeaderLengthVsCount,
    /// unknown section id.
    UnknownSectionId,
    /// shorter than its mark bitvector.
    ShorterThanMarks,
    /// length does not match its marks.
    LengthNotMarks,
    /// length is not a multiple of 8.
    LengthNotMultipleOf8,
    /// address-bucket table missing.
    BucketTableMissing,
    /// address-bucket shift or count out of range.
    BucketShiftOrCountRange,
    /// address-bucket table length does not match its count.
    BucketTableLength,
    /// block width, shift or bit position out of range.
    BlockFieldRange,
    /// lengths or bound bits out of range.
    MetaFieldRange,
    /// a padding gap or size exception gives no size (form 1).
    SizeGaps,
    /// unknown form, width out of range (1 to 64; 1 to 16 in form 1) or
    /// reserved bytes not zero.
    SizesHeader,
    /// counts too large.
    CountsTooLarge,
    /// counts do not match the length.
    CountsNotLength,
    /// stored plus folded symbols is not num_syms.
    FoldedCount,
    /// address-bucket count or shift is not the rule's.
    BucketRule,
    /// an address bucket does not start at its first block.
    BucketStart,
    /// addresses not ascending.
    AddressesNotAscending,
    /// a block's base is not its first address.
    BlockBase,
    /// a folded symbol does not fit below its partner.
    FoldedPlacement,
    /// symbol type is not printable ASCII.
    SymbolType,
    /// addr_to_name and name_to_addr are not inverse permutations.
    PermutationsNotInverse,
    /// rows not ascending.
    RowsNotAscending,
    /// rank samples do not count the bits before them.
    RankSamples,
    /// runs out of order or module id out of range.
    ModuleRuns,
    /// name offsets not ascending.
    NameOffsetsNotAscending,
    /// an expansion holds byte 0.
    ExpansionHoldsZero,
    /// code 0 has an expansion.
    CodeZeroExpands,
    /// shorter than its index says.
    ShorterThanIndex,
    /// a two-byte code is cut short, or a code is past the token table.
    CodeNotWhole,
    /// bucket offsets not contiguous.
    BucketOffsets,
    /// bad LCP varint.
    BadLcpVarint,
    /// name without its end byte.
    NameUnterminated,
    /// LCP longer than the previous name.
    LcpTooLong,
    /// LCP not exact or name empty.
    LcpNotExact,
    /// name empty or longer than 65,535 bytes.
    NameLength,
    /// names not in name order.
    NameOrder,
    /// name decodes two ways.
    NameAmbiguous,
    /// bytes after a bucket's last name.
    BytesAfterBucket,
    /// bytes after the last bucket.
    BytesAfterLastBucket,
    /// offsets do not start at 0 and end at the table's end.
    OffsetsBounds,
    /// offsets not ascending.
    OffsetsNotAscending,
    /// shorter than its header.
    ShorterThanHeader,
    /// unknown flags or nonzero reserved bytes.
    UnknownFlagsOrReserved,
    /// field wider than 32 bits.
    FieldTooWide,
    /// block shift above 3 (FORMAT.md §15.1).
    BlockShift,
    /// nonzero reserved bytes.
    NonZeroReserved,
    /// part longer than the section.
    PartTooLong,
    /// nonzero padding after a part.
    NonZeroPartPadding,
    /// parts do not fill the section.
    PartsNotFilling,
    /// counts, widths and part lengths disagree.
    PartShapes,
    /// a row block does not decode, ascend or stay in its tables.
    RowBlock,
    /// the coded rows' code tables run past their part or are
    /// over-subscribed (FORMAT.md §15.6).
    RowCode,
    /// a node refers past its table or to a later parent.
    NodeRef,
    /// a file refers past the strings.
    FileRef,
    /// string offsets not ascending.
    StringOffsetsNotAscending,
    /// lengths do not add up to the section.
    LengthsNotSection,
    /// nonzero padding.
    NonZeroPadding,
    /// inner blob holds modules itself.
    NestedModules,
    /// module name or build-id past the pool.
    ModuleNamePastPool,
    /// module names empty or not in strict name order.
    ModuleNamesOrder,
    /// module sections not ascending.
    ModuleSectionsNotAscending,
    /// section name past the pool.
    SectionNamePastPool,
    /// sections empty, overlapping or not ascending.
    ModuleSectionsOverlap,
    /// a module symbol outside every section.
    ModuleSymbolOutside,
}

impl Problem {
    /// The problem in words, as error messages print it.
    pub fn as_str(self) -> &'static str {
        use Problem::*;
        match self {
            LengthNotSymbolCount => "length does not match the symbol count",
            SizeGaps => "a padding gap or size exception gives no size (form 1)",
            SizesHeader => {
                "unknown form, width out of range (1 to 64; 1 to 16 in form 1) or reserved bytes not zero"
            }
            NoMagic => "no v2 magic",
            UnknownFlags => "unknown flags set",
            HeaderLengthVsCount => "header length and section count disagree",
            UnknownSectionId => "unknown section id",
            ShorterThanMarks => "shorter than its mark bitvector",
            LengthNotMarks => "length does not match its marks",
            LengthNotMultipleOf8 => "length is not a multiple of 8",
            BucketTableMissing => "address-bucket table missing",
            BucketShiftOrCountRange => "address-bucket shift or count out of range",
            BucketTableLength => "address-bucket table length does not match its count",
            BlockFieldRange => "block width, shift or bit position out of range",
            MetaFieldRange => "lengths or bound bits out of range",
            CountsTooLarge => "counts too large",
            CountsNotLength => "counts do not match the length",
            FoldedCount => "stored plus folded symbols is not num_syms",
            BucketRule => "address-bucket count or shift is not the rule's",
            BucketStart => "an address bucket does not start at its first block",
            AddressesNotAscending => "addresses not ascending",
            BlockBase => "a block's base is not its first address",
            FoldedPlacement => "a folded symbol does not fit below its partner",
            SymbolType => "symbol type is not printable ASCII",
            PermutationsNotInverse => "addr_to_name and name_to_addr are not inverse permutations",
            RowsNotAscending => "rows not ascending",
            RankSamples => "rank samples do not count the bits before them",
            ModuleRuns => "runs out of order or module id out of range",
            NameOffsetsNotAscending => "name offsets not ascending",
            ExpansionHoldsZero => "an expansion holds byte 0",
            CodeZeroExpands => "code 0 has an expansion",
            ShorterThanIndex => "shorter than its index says",
            CodeNotWhole => "a two-byte code is cut short, or a code is past the token table",
            BucketOffsets => "bucket offsets not contiguous",
            BadLcpVarint => "bad LCP varint",
            NameUnterminated => "name without its end byte",
            LcpTooLong => "LCP longer than the previous name",
            LcpNotExact => "LCP not exact or name empty",
            NameLength => "name empty or longer than 65,535 bytes",
            NameOrder => "names not in name order",
            NameAmbiguous => "name decodes two ways",
            BytesAfterBucket => "bytes after a bucket's last name",
            BytesAfterLastBucket => "bytes after the last bucket",
            OffsetsBounds => "offsets do not start at 0 and end at the table's end",
            OffsetsNotAscending => "offsets not ascending",
            ShorterThanHeader => "shorter than its header",
            UnknownFlagsOrReserved => "unknown flags or nonzero reserved bytes",
            FieldTooWide => "field wider than 32 bits",
            BlockShift => "block shift above 3 (more than 256 rows a block)",
            NonZeroReserved => "nonzero reserved bytes",
            PartTooLong => "part longer than the section",
            NonZeroPartPadding => "nonzero padding after a part",
            PartsNotFilling => "parts do not fill the section",
            PartShapes => "counts, widths and part lengths disagree",
            RowBlock => "a row block does not decode, ascend or stay in its tables",
            RowCode => "row code tables run past their part or are over-subscribed",
            NodeRef => "a node refers past its table or to a later parent",
            FileRef => "a file refers past the strings",
            StringOffsetsNotAscending => "string offsets not ascending",
            LengthsNotSection => "lengths do not add up to the section",
            NonZeroPadding => "nonzero padding",
            NestedModules => "inner blob holds modules itself",
            ModuleNamePastPool => "module name or build-id past the pool",
            ModuleNamesOrder => "module names empty or not in strict name order",
            ModuleSectionsNotAscending => "module sections not ascending",
            SectionNamePastPool => "section name past the pool",
            ModuleSectionsOverlap => "sections empty, overlapping or not ascending",
            ModuleSymbolOutside => "a module symbol outside every section",
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
