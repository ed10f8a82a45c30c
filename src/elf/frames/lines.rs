//! A unit's line table as addr2line 0.27 keeps it (its `line.rs`):
//! sequences sorted by start, each a run of rows by address, the last row
//! at an address winning; files rendered as its `render_file` renders
//! them, each when first asked for (a unit's file table names hundreds of
//! headers, of which its rows use a few). Read in the same pass that finds
//! the unit's line boundaries.

use std::cmp::Ordering;
use std::num::NonZeroU64;

/// One row: where its instructions start, and their location.
struct Row {
    address: u64,
    file_index: u64,
    line: u32,
    column: u32,
}

/// A sequence's rows, `start..end`.
struct Sequence {
    start: u64,
    end: u64,
    rows: Box<[Row]>,
}

/// A file of the table: its directory (unless the compilation
/// directory) and name, read; the path rendered once.
struct File<R> {
    dir: Option<R>,
    name: Option<R>,
    path: std::sync::OnceLock<String>,
}

/// A unit's line table.
pub(super) struct Lines<R> {
    comp_dir: Option<R>,
    files: Box<[File<R>]>,
    sequences: Box<[Sequence]>,
}

/// What the line program's pass found for the boundary walk besides the
/// table: the rows' addresses, split into edges (a sequence's first row
/// and its end) and the others, and the rows' discriminators.
#[derive(Default)]
pub(crate) struct RowBounds {
    pub bounds: Vec<u64>,
    pub edges: Vec<u64>,
    pub disc: Vec<(u64, u32)>,
}

impl RowBounds {
    /// Takes `row`, if `keep` keeps its address: an edge where a sequence
    /// starts (`starts`, true before the first row and after a sequence's
    /// end) or ends, where a unit's lines start or stop answering (and
    /// addr2line asks the next unit); with `discriminators`, its
    /// discriminator (0 at a sequence's end; at one address the last
    /// row's, as addr2line keeps it).
    pub(crate) fn take(
        &mut self,
        row: &gimli::LineRow,
        starts: &mut bool,
        keep: &impl Fn(u64) -> bool,
        discriminators: bool,
    ) {
        let address = row.address();
        let edge = std::mem::replace(starts, row.end_sequence()) || row.end_sequence();
        if !keep(address) {
            return;
        }
        if edge {
            self.edges.push(address);
        } else {
            self.bounds.push(address);
        }
        if discriminators {
            let d = if row.end_sequence() {
                0
            } else {
                row.discriminator() as u32
            };
            match self.disc.last_mut() {
                Some(l) if l.0 == address => l.1 = d,
                _ => self.disc.push((address, d)),
            }
        }
    }
}

impl<R: gimli::Reader> Lines<R> {
    /// Reads `program` once: the table addr2line's `Lines::parse` builds,
    /// and the rows' boundaries that `keep` keeps (with `discriminators`,
    /// their discriminators: at one address the last row's, 0 at a
    /// sequence's end).
    ///
    /// Errors: those of gimli's row reader and of `.debug_str` and
    /// `.debug_line_str` reads for the file names, where addr2line errs.
    pub(super) fn read(
        dwarf: &gimli::Dwarf<R>,
        unit: &gimli::Unit<R>,
        program: gimli::IncompleteLineProgram<R>,
        keep: &impl Fn(u64) -> bool,
        discriminators: bool,
        found: &mut RowBounds,
    ) -> gimli::Result<Lines<R>> {
        let mut sequences = Vec::new();
        let mut seq_rows: Vec<Row> = Vec::new();
        let mut rows = program.rows();
        let mut starts = true;
        while let Some((_, row)) = rows.next_row()? {
            let address = row.address();
            found.take(row, &mut starts, keep, discriminators);
            if row.end_sequence() {
                if let Some(start) = seq_rows.first().map(|r| r.address) {
                    let rows = std::mem::take(&mut seq_rows);
                    if start < address {
                        sequences.push(Sequence {
                            start,
                            end: address,
                            rows: rows.into_boxed_slice(),
                        });
                    }
                }
                continue;
            }
            let file_index = row.file_index();
            let line = row.line().map(NonZeroU64::get).unwrap_or(0) as u32;
            let column = match row.column() {
                gimli::ColumnType::LeftEdge => 0,
                gimli::ColumnType::Column(x) => x.get() as u32,
            };
            if let Some(last) = seq_rows.last_mut()
                && last.address == address
            {
                (last.file_index, last.line, last.column) = (file_index, line, column);
                continue;
            }
            seq_rows.push(Row {
                address,
                file_index,
                line,
                column,
            });
        }
        sequences.sort_unstable_by_key(|s| s.start);
        let header = rows.header();
        let mut files = Vec::new();
        // DWARF 4 and before may have no file 0.
        if header.file(0).is_none() {
            files.push(File {
                dir: None,
                name: None,
                path: String::new().into(),
            });
        }
        let mut i = files.len() as u64;
        while let Some(file) = header.file(i) {
            // Read now: a string addr2line cannot read fails its table.
            let dir = match file.directory(header) {
                Some(d) if file.directory_index() != 0 => Some(dwarf.attr_string(unit, d)?),
                _ => None,
            };
            files.push(File {
                dir,
                name: Some(dwarf.attr_string(unit, file.path_name())?),
                path: std::sync::OnceLock::new(),
            });
            i += 1;
        }
        Ok(Lines {
            comp_dir: unit.comp_dir.clone(),
            files: files.into_boxed_slice(),
            sequences: sequences.into_boxed_slice(),
        })
    }

    /// The rendered path of file `index`: addr2line's `render_file`, the
    /// unit's compilation directory, the file's directory and its name
    /// joined by [`path_push`], each converted lossily from UTF-8.
    pub(super) fn file(&self, index: u64) -> Option<&str> {
        let f = self.files.get(usize::try_from(index).ok()?)?;
        Some(f.path.get_or_init(|| {
            let lossy = |r: &R| {
                r.to_string_lossy()
                    .map(|s| s.into_owned())
                    .unwrap_or_default()
            };
            let mut path = self.comp_dir.as_ref().map(lossy).unwrap_or_default();
            if let Some(d) = &f.dir {
                path_push(&mut path, &lossy(d));
            }
            if let Some(n) = &f.name {
                path_push(&mut path, &lossy(n));
            }
            path
        }))
    }

    /// The sequences' ranges, for a unit that declares none.
    pub(super) fn ranges(&self) -> impl Iterator<Item = gimli::Range> + '_ {
        self.sequences.iter().map(|s| gimli::Range {
            begin: s.start,
            end: s.end,
        })
    }

    /// The location of `probe`: its sequence's last row at or below it.
    pub(super) fn find_location(&self, probe: u64) -> Option<addr2line::Location<'_>> {
        let s = self
            .sequences
            .binary_search_by(|s| {
                if probe < s.start {
                    Ordering::Greater
                } else if probe >= s.end {
                    Ordering::Less
                } else {
                    Ordering::Equal
                }
            })
            .ok()?;
        let rows = &self.sequences[s].rows;
        let i = match rows.binary_search_by(|r| r.address.cmp(&probe)) {
            Ok(i) => i,
            Err(0) => return None,
            Err(i) => i - 1,
        };
        let row = &rows[i];
        Some(addr2line::Location {
            file: self.file(row.file_index),
            line: (row.line != 0).then_some(row.line),
            // With a line, the column always has a meaning (0: the left
            // edge).
            column: (row.line != 0).then_some(row.column),
        })
    }
}

/// addr2line's `path_push`: an absolute `p` (Unix or Windows) replaces
/// `path`, a relative one is appended after the separator `path` uses.
fn path_push(path: &mut String, p: &str) {
    let unix_root = |p: &str| p.starts_with('/') || p.get(1..3) == Some(":/");
    let windows_root = |p: &str| p.starts_with('\\') || p.get(1..3) == Some(":\\");
    if unix_root(p) || windows_root(p) {
        *path = p.to_string();
    } else {
        let sep = if windows_root(path.as_str()) {
            '\\'
        } else {
            '/'
        };
        if !path.is_empty() && !path.ends_with(sep) {
            path.push(sep);
        }
        *path += p;
    }
}

#[cfg(test)]
mod tests {
    use super::path_push;

    #[test]
    fn paths_join_as_addr2line_joins_them() {
        let join = |a: &str, b: &str| {
            let mut s = a.to_string();
            path_push(&mut s, b);
            s
        };
        assert_eq!(join("/build", "src/a.c"), "/build/src/a.c");
        assert_eq!(join("/build/", "a.c"), "/build/a.c");
        assert_eq!(join("/build", "/usr/include/x.h"), "/usr/include/x.h");
        assert_eq!(join("", "a.c"), "a.c");
        assert_eq!(join("C:\\b", "a.c"), "C:\\b\\a.c");
        assert_eq!(join("/b", "C:/x.h"), "C:/x.h");
    }
}
