//! Conventions of the kernel's own symbol tables that the text parser and
//! both blob formats follow: the names of the text bounds and how far the
//! last symbol reaches. A leaf module (no imports), so the input layer
//! (`text`) and the formats (`blob`) share it without depending on each
//! other. Builds without std.

/// Names of the four text-bound symbols, in v2 `meta` order (docs/FORMAT.md
/// §10.6); `ksym-filter` keeps them whatever their symbol type (arm64's
/// `_etext` is a `D` symbol, §5.2).
pub const BOUND_NAMES: [&[u8]; 4] = [b"_stext", b"_etext", b"_sinittext", b"_einittext"];

/// How far above the last symbol (when its end is unknown: it is not below
/// etext) an address still resolves to it, in bytes (docs/FORMAT.md §5.2
/// rule 6). Farther addresses (module space, other mappings) have no symbol.
pub const LAST_SYMBOL_MAX_SPAN: u64 = 1 << 20;
