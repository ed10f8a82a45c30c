//! The blob writer: a symbol list in, the bytes of FORMAT.md §2 out.
//!
//! Symbols are sorted stably by address (aliases keep input order), names are
//! encoded as one optional token plus raw bytes (§3), `seqs` is the stable name
//! order (§4). The same input always gives the same bytes.

use std::io::{self, Write};

use crate::blob::list::{PackError, PackErrorKind, SymbolList};
use crate::blob::nameorder::{NameList, name_order};
use crate::blob::v1::layout::{RECORD_PREFIX_LEN, TOKEN_MARKER, align_up, token_ref_len};
use crate::blob::v1::tokens::{self, TokenStrategy, TokenTable};

/// A packed blob and what went into it.
#[derive(Debug, Clone)]
pub struct Packed {
    /// The blob (FORMAT.md §2).
    pub blob: Vec<u8>,
    /// The token table used, with per-token statistics.
    pub tokens: TokenTable,
    /// Bytes of the names section (`names_len`).
    pub names_len: usize,
    /// Sum of the raw name lengths, in bytes.
    pub raw_name_bytes: usize,
}

/// Checks that name records of `bytes` bytes in all can be addressed by u32
/// `offsets` (FORMAT.md §2: `names_len < 4 GiB`).
pub fn check_names_len(bytes: u64) -> Result<(), PackError> {
    if bytes > u64::from(u32::MAX) {
        return Err(PackError {
            line: None,
            kind: PackErrorKind::NamesTooLarge { bytes },
        });
    }
    Ok(())
}

/// Packs `list` with the given token strategy into a blob in memory, read
/// back before it is returned ([`crate::blob::readback`]).
///
/// Errors: [`PackErrorKind::NamesTooLarge`] when the records exceed 4 GiB
/// (every other limit was checked by [`SymbolList::push`]), and
/// [`PackErrorKind::ReadBack`].
pub fn pack(list: &SymbolList, strategy: TokenStrategy) -> Result<Packed, PackError> {
    let layout = Layout::new(list, strategy)?;
    let blob = layout.to_vec()?;
    Ok(Packed {
        blob,
        names_len: layout.names_len,
        raw_name_bytes: list.name_bytes(),
        tokens: layout.tokens,
    })
}

/// Everything about a blob but its bytes: address order, name order, the
/// token table and the section sizes. [`Layout::write_to`] streams the bytes,
/// so a large blob never has to sit in memory whole, and every check has
/// passed before the first byte is written.
#[derive(Debug)]
pub struct Layout<'a> {
    list: &'a SymbolList,
    /// Input positions in address order.
    by_addr: Vec<u32>,
    /// Address-order positions in name order (FORMAT.md §4).
    seqs: Vec<u32>,
    /// The token table, with per-token statistics.
    pub tokens: TokenTable,
    /// The strategy that chose it.
    pub strategy: TokenStrategy,
    names_len: usize,
}

impl<'a> Layout<'a> {
    /// Sorts `list` (address order stable, so aliases keep input order),
    /// chooses tokens with `strategy` and sizes the name records.
    ///
    /// Errors: [`PackErrorKind::NamesTooLarge`] when the records exceed
    /// 4 GiB (every other limit was checked by [`SymbolList::push`]).
    pub fn new(list: &'a SymbolList, strategy: TokenStrategy) -> Result<Self, PackError> {
        let n = list.len();
        let by_addr = list.address_order();
        let names = ByAddress {
            list,
            by_addr: &by_addr,
        };
        let order = name_order(&names);
        let tokens = tokens::select(&names, &order, strategy);
        let mut layout = Layout {
            list,
            by_addr,
            seqs: order.by_name,
            tokens,
            strategy,
            names_len: 0,
        };
        let names_len = (0..n).map(|pos| layout.record(pos).len() as u64).sum();
        check_names_len(names_len)?;
        layout.names_len = names_len as usize;
        Ok(layout)
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.by_addr.len()
    }

    /// True when there are no symbols.
    pub fn is_empty(&self) -> bool {
        self.by_addr.is_empty()
    }

    /// Bytes of the names section (`names_len`, FORMAT.md §2).
    pub fn names_len(&self) -> usize {
        self.names_len
    }

    /// Bytes of the token table's strings (`token_table_len`, FORMAT.md §2).
    pub fn token_table_len(&self) -> usize {
        self.tokens.tokens.iter().map(|t| t.bytes.len()).sum()
    }

    /// Bytes the whole blob takes.
    pub fn blob_len(&self) -> usize {
        let n = self.len();
        let head = align_up(8 + 16 * n, 8).expect("fits: checked sizes");
        let names = align_up(head + 8 + self.names_len, 8).expect("fits: checked sizes");
        let table = align_up(names + 8 + self.token_table_len(), 8).expect("fits: checked sizes");
        table + 8 + 4 * self.tokens.tokens.len()
    }

    /// One line of counts and section sizes in bytes, for `ksym-pack -v`:
    /// symbols, tokens, blob size and bytes per symbol, then each section of
    /// FORMAT.md §2 (and the raw name bytes beside `names`).
    pub fn describe(&self) -> String {
        let n = self.len();
        format!(
            "{n} symbols, {} tokens ({:?}); blob {} bytes ({:.2} B/symbol): addresses {}, offsets {}, \
             seqs {}, names {} (raw {}), token_table {}, token_index {}",
            self.tokens.tokens.len(),
            self.strategy,
            self.blob_len(),
            self.blob_len() as f64 / n.max(1) as f64,
            8 * n,
            4 * n,
            4 * n,
            self.names_len,
            self.list.name_bytes(),
            self.token_table_len(),
            4 * self.tokens.tokens.len(),
        )
    }

    /// The record of the name at address-order position `pos` (FORMAT.md §3).
    fn record(&self, pos: usize) -> Record<'a> {
        let name = self.list.name(self.by_addr[pos] as usize);
        let (token, rest) = match self.tokens.matches[pos] {
            tokens::NO_TOKEN => (None, name),
            id => (
                Some(id),
                &name[self.tokens.tokens[id as usize].bytes.len()..],
            ),
        };
        Record {
            symbol_type: self.list.symbol_type(self.by_addr[pos] as usize),
            token,
            rest,
        }
    }

    /// The blob in memory, read back against the list before it is
    /// returned ([`crate::blob::readback`]): what `ksym-pack` writes.
    ///
    /// Errors: [`PackErrorKind::ReadBack`].
    pub fn to_vec(&self) -> Result<Vec<u8>, PackError> {
        let mut blob = Vec::with_capacity(self.blob_len());
        self.write_to(&mut blob)
            .expect("writing to a Vec cannot fail");
        crate::blob::readback::read_back_in(self.list, &self.by_addr, &blob)?;
        Ok(blob)
    }

    /// Writes the blob (FORMAT.md §2), front to back.
    ///
    /// Errors: only those of `out`. `out` should be buffered: the sections go
    /// out a few bytes at a time.
    pub fn write_to<W: Write>(&self, out: W) -> io::Result<()> {
        let n = self.len();
        let mut out = Counted { out, at: 0 };
        out.put(&(n as u64).to_le_bytes())?;
        for &i in &self.by_addr {
            out.put(&self.list.address(i as usize).to_le_bytes())?;
        }
        let mut off = 0u32; // fits: Layout::new checked names_len
        for pos in 0..n {
            out.put(&off.to_le_bytes())?;
            off += self.record(pos).len() as u32;
        }
        for s in &self.seqs {
            out.put(&s.to_le_bytes())?;
        }
        out.pad8()?;
        out.put(&(self.names_len as u64).to_le_bytes())?;
        let mut rec = Vec::with_capacity(256);
        for pos in 0..n {
            rec.clear();
            self.record(pos).encode_into(&mut rec);
            out.put(&rec)?;
        }
        out.pad8()?;
        out.put(&(self.token_table_len() as u64).to_le_bytes())?;
        for t in &self.tokens.tokens {
            out.put(&t.bytes)?;
        }
        out.pad8()?;
        out.put(&(self.tokens.tokens.len() as u64).to_le_bytes())?;
        let mut start = 0u32;
        for t in &self.tokens.tokens {
            out.put(&start.to_le_bytes())?;
            start += t.bytes.len() as u32;
        }
        debug_assert_eq!(out.at, self.blob_len());
        Ok(())
    }
}

/// A writer that counts the bytes it was given, for the section padding.
struct Counted<W> {
    out: W,
    at: usize,
}

impl<W: Write> Counted<W> {
    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.at += bytes.len();
        self.out.write_all(bytes)
    }

    /// Zero bytes up to the next multiple of 8 (FORMAT.md §2).
    fn pad8(&mut self) -> io::Result<()> {
        let pad = self.at.next_multiple_of(8) - self.at;
        self.put(&[0u8; 8][..pad])
    }
}

/// The list's names in address order, read in place.
struct ByAddress<'a> {
    list: &'a SymbolList,
    by_addr: &'a [u32],
}

impl NameList for ByAddress<'_> {
    fn len(&self) -> usize {
        self.by_addr.len()
    }

    fn name(&self, pos: usize) -> &[u8] {
        self.list.name(self.by_addr[pos] as usize)
    }

    fn all_ascii(&self) -> bool {
        self.list.names_are_ascii()
    }
}

/// One name record before encoding (FORMAT.md §3).
struct Record<'a> {
    symbol_type: u8,
    token: Option<u16>,
    rest: &'a [u8],
}

impl Record<'_> {
    /// Bytes of the encoded record: type, u16 length, payload.
    fn len(&self) -> usize {
        RECORD_PREFIX_LEN + self.token.map_or(0, token_ref_len) + self.rest.len()
    }

    fn encode_into(&self, out: &mut Vec<u8>) {
        let payload_len = self.len() - RECORD_PREFIX_LEN;
        out.push(self.symbol_type);
        out.extend_from_slice(&(payload_len as u16).to_le_bytes());
        match self.token {
            Some(id) if id < crate::blob::v1::layout::ONE_BYTE_IDS => {
                out.extend_from_slice(&[TOKEN_MARKER, id as u8, TOKEN_MARKER]);
            }
            Some(id) => {
                let [hi, lo] = id.to_be_bytes();
                out.extend_from_slice(&[TOKEN_MARKER, hi, lo, TOKEN_MARKER]);
            }
            None => {}
        }
        out.extend_from_slice(self.rest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob::v1::read::KallsymsMapped;
    use crate::blobfile::AlignedBlob;

    #[test]
    fn empty_input_gives_a_valid_blob() {
        let p = pack(&SymbolList::new(), TokenStrategy::Optimal).unwrap();
        assert_eq!(p.blob.len(), 8 + 8 + 8 + 8);
        let a = AlignedBlob::copy_from(&p.blob);
        let m = KallsymsMapped::from_blob(a.as_bytes(), None, None).unwrap();
        assert!(m.is_empty());
        assert!(m.lookup_address(0x1000).is_none());
        assert!(m.lookup_name(b"x").is_none());
    }

    #[test]
    fn layout_streams_the_blob_and_stops_at_a_write_error() {
        let input = b"0000000000001000 T do_one\n0000000000001100 T do_two\n0000000000001200 T x\n";
        let list = SymbolList::read_lines(&input[..]).unwrap();
        let layout = Layout::new(&list, TokenStrategy::Optimal).unwrap();
        let mut v = Vec::new();
        layout.write_to(&mut v).unwrap();
        assert_eq!(v.len(), layout.blob_len());
        assert_eq!(v, pack(&list, TokenStrategy::Optimal).unwrap().blob);
        /// Takes `0` more bytes, then reports a full disk.
        struct Full(usize);
        impl Write for Full {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                if self.0 == 0 {
                    return Err(io::ErrorKind::StorageFull.into());
                }
                let n = b.len().min(self.0);
                self.0 -= n;
                Ok(n)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        for room in [0, 7, 40, v.len() - 1] {
            let e = layout.write_to(Full(room)).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        }
        layout.write_to(Full(v.len())).unwrap();
    }

    #[test]
    fn seed_example_round_trips() {
        let input = b"0000000000001000 T _start\n0000000000001100 T do_fork\n0000000000001200 T cpu_startup_entry\n";
        let list = SymbolList::read_lines(&input[..]).unwrap();
        for s in [TokenStrategy::Seed, TokenStrategy::Optimal] {
            let p = pack(&list, s).unwrap();
            let a = AlignedBlob::copy_from(&p.blob);
            let m = KallsymsMapped::from_blob(a.as_bytes(), None, None).unwrap();
            let got: Vec<(u64, u8, String)> = m
                .symbols()
                .map(|s| (s.address, s.symbol_type, s.name.to_string()))
                .collect();
            assert_eq!(
                got,
                vec![
                    (0x1000, b'T', "_start".into()),
                    (0x1100, b'T', "do_fork".into()),
                    (0x1200, b'T', "cpu_startup_entry".into())
                ]
            );
            let by_name: Vec<String> = m.symbols_by_name().map(|s| s.name.to_string()).collect();
            assert_eq!(by_name, ["_start", "cpu_startup_entry", "do_fork"]);
        }
    }

    #[test]
    fn push_refuses_what_a_record_cannot_hold() {
        let mut l = SymbolList::new();
        assert!(l.push(1, b'T', &vec![b'a'; 65_535]).is_ok());
        assert!(matches!(
            l.push(1, b'T', &vec![b'a'; 65_536]).unwrap_err().kind,
            PackErrorKind::NameTooLong { len: 65_536 }
        ));
        assert!(matches!(
            l.push(1, b'T', b"\xffabc").unwrap_err().kind,
            PackErrorKind::MarkerInName { at: 0 }
        ));
        assert!(matches!(
            l.push(1, b'T', b"").unwrap_err().kind,
            PackErrorKind::EmptyName
        ));
        assert!(matches!(
            l.push(1, b' ', b"x").unwrap_err().kind,
            PackErrorKind::BadSymbolType
        ));
        assert_eq!(l.len(), 1);
    }

    #[test]
    fn names_over_4_gib_are_refused() {
        assert!(check_names_len(u64::from(u32::MAX)).is_ok());
        let e = check_names_len(1 << 32).unwrap_err();
        assert!(e.to_string().contains("4 GiB"), "{e}");
    }

    #[test]
    fn read_lines_names_the_bad_line() {
        let e = SymbolList::read_lines(&b"0000000000001000 T a\nnot a symbol\n"[..]).unwrap_err();
        assert_eq!(e.line, Some(2));
        assert!(
            e.to_string().starts_with("line 2: expected an address"),
            "{e}"
        );
    }
}
