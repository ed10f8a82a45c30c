//! ELF input, in one home: what the tools read from an ELF file (a
//! vmlinux, a kernel module, a bare-metal kernel) and the one thing they
//! write into one. Each reads through the `object` crate and gimli's
//! (ELF spec, System V gABI; DWARF 4 and 5).
//!
//! - [`symbols`]: a kernel's text symbols, the text bounds of an ELF's
//!   executable sections;
//! - [`functions`]: a user-space binary's function symbols with their
//!   sizes, aliases ordered as symbolizers print them;
//! - [`local`]: a binary on this machine packed in memory, lines and all;
//! - [`cxx`]: C++ names demangled by the system's libstdc++;
//! - [`debugfile`]: a stripped binary's separate debug file (build-id,
//!   `.gnu_debuglink`);
//! - [`dwarf`]: DWARF line programs and inline trees to a source table;
//! - `frames`: the frames at an address, from addr2line or from a model
//!   of every unit read in the boundary walk's one pass;
//! - `intern`: the source table's ids, and a cut sweep's pieces merged;
//! - `split`: the `.dwo` files and `.dwp` package of split DWARF;
//! - `sweep`: the frames at each boundary, interned into a source table;
//! - `symtab`: the symbol table as llvm-symbolizer names frames from it;
//! - `file`: an ELF file read in pieces, its string tables whole;
//! - `section`: a section's bytes, decompressed;
//! - `share`: indices dealt out among workers, halves taken over;
//! - [`kmod`]: kernel modules: sections laid out, DWARF relocated, their
//!   symbols and lines for the module space;
//! - [`plt`]: names for x86-64 PLT stubs (`NAME@plt`);
//! - [`tree`]: the ELF files under a directory, one per build-id;
//! - [`patch`]: a blob written into an ELF image's reserved section.

#[cfg(feature = "cpp-demangle")]
#[allow(unsafe_code)]
pub mod cxx;
pub mod debugfile;
pub mod dwarf;
pub(crate) mod file;
pub(crate) mod frames;
pub mod functions;
pub(crate) mod intern;
pub mod kmod;
pub mod local;
pub mod patch;
pub mod plt;
pub(crate) mod section;
pub(crate) mod share;
pub(crate) mod split;
pub(crate) mod sweep;
pub mod symbols;
pub(crate) mod symtab;
pub mod tree;
