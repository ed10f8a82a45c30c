//! Text input, apart from any blob format: [`nm`] parses `nm -n`,
//! System.map and /proc/kallsyms lines, [`lines`] streams lines with a length
//! limit, [`hex`] parses and prints addresses, [`demangle`] turns Rust
//! symbol names into what people read. All need std.

pub mod demangle;
pub mod hex;
pub mod lines;
pub mod nm;
