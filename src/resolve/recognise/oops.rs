//! Kernel log lines: their references checked against the blob and
//! turned into lookups, the report's architecture and faulting address
//! followed from line to line for its `Code:` line.

use super::bytes::{is_blank, parse_sym_off};
use super::logline::{Found, Reference, scan};
use super::prefix::prefix_len;
use crate::resolve::batch::plan::{Fault, Lookup, Plan};
use crate::resolve::code::Arch;
use crate::resolve::*;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, DefaultHasher, Hasher};

/// What a `func+0xOFF/0xSIZE` reference is to the blob (JSON `"status"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::resolve) enum Status {
    /// The function is there and the offset lies in it, with that size.
    Ok,
    /// The function is there, but its size differs or the offset lies
    /// past it (another build); or a `[mod BUILDID]` of another build.
    Mismatch,
    /// No such function (or its module is not in the blob).
    Unknown,
}

impl Status {
    pub(in crate::resolve) fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Mismatch => "mismatch",
            Status::Unknown => "unknown",
        }
    }
}

/// A reference of a log line with what the plan learnt of it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LineRef {
    pub(in crate::resolve) r: Reference,
    pub(in crate::resolve) status: Status,
    /// The runtime address it stands for, when known (JSON `"addr"`).
    pub(in crate::resolve) addr: Option<u64>,
    /// Its lookup is in the module space.
    pub(in crate::resolve) module: bool,
    /// Its space has source lines for it: the line is printed as
    /// decode_stacktrace.sh prints it.
    pub(in crate::resolve) decodable: bool,
}

/// The report state that carries over lines: which architecture printed
/// it, and where it faulted (for the `Code:` line that follows).
#[derive(Debug, Default, Clone, Copy)]
pub(in crate::resolve) struct Report {
    pub arch: Option<Arch>,
    pub fault: Option<Fault>,
}

/// The architecture a register line's first word shows, if any.
fn arch_of(msg: &[u8]) -> Option<Arch> {
    let m = &msg[msg.iter().take_while(|&&b| is_blank(b)).count()..];
    if m.starts_with(b"RIP: ") {
        Some(Arch::X86_64)
    } else if m.starts_with(b"pc : [<") || m.starts_with(b"PC is at ") {
        Some(Arch::Arm)
    } else if m.starts_with(b"pc : ") || m.starts_with(b"pstate: ") || m.starts_with(b"x29: ") {
        Some(Arch::Arm64)
    } else if m.starts_with(b"epc : ") {
        Some(Arch::Riscv64)
    } else {
        None
    }
}

/// True for the line whose first reference is the faulting address.
fn is_fault_line(msg: &[u8]) -> bool {
    let m = &msg[msg.iter().take_while(|&&b| is_blank(b)).count()..];
    [
        &b"RIP: "[..],
        b"pc : ",
        b"PC is at ",
        b"epc : ",
        b"NIP ",
        b"Krnl PSW ",
    ]
    .iter()
    .any(|k| m.starts_with(k))
}

impl Resolver<'_, '_> {
    /// Plans a line that is neither a bare address nor a perf frame.
    pub(in crate::resolve) fn log_line(
        &mut self,
        body: &[u8],
        lookups: &mut Vec<Lookup>,
        refs: &mut Vec<LineRef>,
    ) -> Plan {
        let prefix = prefix_len(body);
        let msg = &body[prefix..];
        if let Some(a) = arch_of(msg) {
            self.report.arch = Some(a);
        }
        // Without the decoder a `Code:` line passes through as it is.
        if cfg!(feature = "disasm") && crate::resolve::code::is_code_line(msg) {
            return Plan::Code {
                prefix,
                arch: self.opts.arch.or(self.report.arch),
                fault: self.report.fault.take(),
            };
        }
        let fault_line = is_fault_line(msg);
        if fault_line {
            self.report.fault = None;
        }
        let mut found = std::mem::take(&mut self.found);
        scan(body, prefix, &mut self.words, &mut found);
        if found.is_empty() {
            self.found = found;
            return Plan::Pass;
        }
        let start = refs.len();
        let first_lookup = lookups.len();
        let mut script = false;
        for r in &found {
            let lr = self.reference(body, *r, lookups);
            script |= lr.decodable;
            refs.push(lr);
        }
        if fault_line {
            let r = refs[start];
            self.report.fault = match (r.module, lookups[first_lookup].module_addr) {
                (true, Some(addr)) => Some(Fault { addr, module: true }),
                _ => r.addr.map(|addr| Fault {
                    addr,
                    module: false,
                }),
            };
        }
        self.found = found;
        Plan::Log {
            prefix,
            refs: (start as u32, refs.len() as u32),
            script,
        }
    }

    /// Checks one reference and pushes its lookup.
    fn reference(&mut self, body: &[u8], r: Reference, lookups: &mut Vec<Lookup>) -> LineRef {
        let (raw, module, build_id) = match r.found {
            Found::Raw { addr, .. } => {
                let module_addr = self.loaded.as_ref().and_then(|l| l.to_module_space(addr));
                lookups.push(Lookup {
                    addr: Some(addr),
                    module_addr,
                    lines: true,
                });
                return LineRef {
                    r,
                    status: Status::Ok,
                    addr: Some(addr),
                    module: module_addr.is_some(),
                    decodable: false,
                };
            }
            Found::Sym {
                raw,
                module,
                build_id,
                ..
            } => (raw, module, build_id),
        };
        let tok = &body[r.from..r.to];
        let Some((name, off, Some(size))) = parse_sym_off(tok) else {
            unreachable!("logline::scan reports only name+0xOFF/0xSIZE references")
        };
        // `%pB` prints a return address as the function of ADDR − 1 with
        // ADDR's offset: a call at a function's very end names that
        // function, with an offset equal to its size (`end` below).
        let end = off == size && off > 0;
        if let Some(a) = raw {
            self.learn_slide(a, tok);
        }
        let slide = self.opts.slide;
        let mut lr = LineRef {
            r,
            status: Status::Unknown,
            addr: raw,
            module: false,
            decodable: false,
        };
        let mut lookup = Lookup::default();
        let in_space = |s: &Self, m: &[u8]| {
            s.modules
                .as_ref()
                .is_some_and(|ms| ms.find_module(m).is_some())
        };
        match module.map(|(a, b)| &body[a..b]) {
            Some(m) if in_space(self, m) => {
                self.stats.checked += 1;
                let bid = build_id.map(|(a, b)| &body[a..b]);
                let before = self.stats.build_id_mismatch;
                if let Some(a) = self.module_ref(m, bid, name, off) {
                    // The end of the function in the blob, though the
                    // kernel sized it to the end of the module's memory.
                    let start = a.wrapping_sub(off);
                    let ends = |ms: &ModuleSpace<'_>| {
                        off > 0
                            && ms.lookup_address(a.wrapping_sub(1)).is_some_and(|h| {
                                a.wrapping_sub(1).wrapping_sub(h.hit.offset) == start
                            })
                            && ms
                                .lookup_address(a)
                                .is_none_or(|h| a.wrapping_sub(h.hit.offset) != start)
                    };
                    let back = u64::from(end || self.modules.as_ref().is_some_and(ends));
                    let at = a.wrapping_sub(back);
                    let ok = self.modules.as_ref().is_some_and(|ms| {
                        ms.lookup_address(at).is_some_and(|h| {
                            let start = at.wrapping_sub(h.hit.offset);
                            // The kernel sizes a section's last function up
                            // to the end of the module's memory, which the
                            // blob does not know: a larger size agrees.
                            let last = |z: u64| {
                                ms.section_at(start.wrapping_add(z)) != ms.section_at(start)
                            };
                            h.hit.offset == off - back
                                && h.hit
                                    .size
                                    .is_none_or(|z| z == size || (size > z && last(z)))
                        })
                    });
                    lr.status = if ok { Status::Ok } else { Status::Mismatch };
                    lr.module = true;
                    lr.decodable = self.modules.as_ref().is_some_and(|ms| ms.lines().is_some())
                        || self.opts.json;
                    lookup.module_addr = Some(at);
                } else if self.stats.build_id_mismatch > before {
                    lr.status = Status::Mismatch;
                }
                self.stats.mismatched += u64::from(lr.status != Status::Ok);
            }
            // A module the blob's module space lacks is not checked.
            Some(_) if self.modules.is_some() => {}
            _ => {
                self.stats.checked += 1;
                // vmlinux's lines do not cover a module's `func [mod]`.
                lr.decodable = self.lines.is_some() && module.is_none();
                if let Some((start, extent)) = self.kernel_symbol(name) {
                    let a = start.wrapping_add(off);
                    let back = u64::from(end);
                    // The offset lies in the function, whose size agrees.
                    let ok = extent == Some(size) && off - back < size;
                    lr.status = if ok { Status::Ok } else { Status::Mismatch };
                    lr.addr = lr.addr.or(Some(a.wrapping_add(slide)));
                    // Looked up only when its answer is printed.
                    if lr.decodable || self.opts.json {
                        lookup.addr = Some(a.wrapping_sub(back).wrapping_add(slide));
                    }
                }
                self.stats.mismatched += u64::from(lr.status != Status::Ok);
            }
        }
        lookup.lines = lr.decodable || self.opts.json;
        lookups.push(lookup);
        lr
    }
}

/// Kernel functions already named by a reference: logs repeat the same
/// frames, and a name lookup costs a search through the coded names.
/// Keyed by 128 bits of the name (two SipHashes, [`name_key`]): two names
/// of one log share a key with odds near 2^-93 even with every kernel
/// name in the table.
///
/// A log that names many different functions (a fleet's reports, merged)
/// would search the blob for each: once it has searched for as many as
/// [`index_after`] allows, every name of the blob goes into `all` in one
/// pass, and later names are found there.
#[derive(Debug, Default)]
pub(in crate::resolve) struct SymbolCache {
    map: HashMap<u128, Option<(u64, Option<u64>)>, Keyed>,
    /// Names searched for in the blob so far.
    searched: usize,
    /// Every name of the blob, once indexed (then `map` is dropped).
    all: Option<NameIndex>,
}

/// The hasher of maps keyed by [`name_key`].
type Keyed = BuildHasherDefault<Prehashed>;

/// Entries kept before the cache starts over: about 10 MB at most.
const SYMBOL_CACHE: usize = 1 << 18;

/// Names searched for before the blob's names are indexed: one pass over
/// all `symbols` costs about as much as an eighth of them searched one by
/// one (a decode and two hashes a name, against a binary search through
/// the coded names).
fn index_after(symbols: usize) -> usize {
    (symbols / 8).max(1024)
}

/// 128 bits of `name`: SipHash-1-3 twice, with a different first byte.
fn name_key(name: &[u8]) -> u128 {
    let half = |salt: u8| {
        let mut h = DefaultHasher::new();
        h.write_u8(salt);
        h.write(name);
        h.finish()
    };
    u128::from(half(0)) << 64 | u128::from(half(1))
}

/// The hasher of maps keyed by [`name_key`]: the key is already a hash.
#[derive(Debug, Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u128(&mut self, k: u128) {
        self.0 = k as u64;
    }
}

/// Every name of a blob with the first address it has (in address
/// order), as [`Kallsyms::lookup_name`] answers, and its extent once asked
/// for: `(key, address, extent)` sorted by [`name_key`], 32 bytes a name,
/// and the first entry of each of
/// `2^bits` key ranges (two to four names a range), so a lookup reads one
/// or two cache lines.
#[derive(Debug)]
struct NameIndex {
    entries: Vec<(u128, u64, u64)>,
    starts: Vec<u32>,
    bits: u32,
}

/// A [`NameIndex`] extent not looked up yet, and one the blob has none of
/// (extents are far below either: a function's bytes).
const NOT_YET: u64 = u64::MAX;
const NONE: u64 = u64::MAX - 1;

/// The key range of `key`: its top `bits` bits (none: range 0).
fn range_of(key: u128, bits: u32) -> usize {
    key.checked_shr(128 - bits).unwrap_or(0) as usize
}

impl NameIndex {
    /// One pass over `map`'s symbols: a decode and two hashes a name.
    fn new(map: &Kallsyms<'_>) -> Self {
        let mut entries = Vec::with_capacity(map.len());
        let mut name = Vec::with_capacity(128);
        for s in map.symbols() {
            name.clear();
            s.name.extend_into(&mut name);
            entries.push((name_key(&name), s.address, NOT_YET));
        }
        // A stable sort keeps address order among equal keys: the first
        // of a name is kept.
        entries.sort_by_key(|e| e.0);
        entries.dedup_by_key(|e| e.0);
        let bits = (entries.len() / 2).max(1).ilog2().min(24);
        let mut starts = Vec::with_capacity((1 << bits) + 1);
        let mut at = 0;
        for r in 0..=(1u64 << bits) {
            while at < entries.len() && (range_of(entries[at].0, bits) as u64) < r {
                at += 1;
            }
            starts.push(at as u32);
        }
        NameIndex {
            entries,
            starts,
            bits,
        }
    }

    /// The first address named by the name of `key`, if the blob has it,
    /// with its extent (`extent` finds it the first time).
    fn get(
        &mut self,
        key: u128,
        extent: impl FnOnce(u64) -> Option<u64>,
    ) -> Option<(u64, Option<u64>)> {
        let r = range_of(key, self.bits);
        let range = &mut self.entries[self.starts[r] as usize..self.starts[r + 1] as usize];
        let e = range.iter_mut().find(|e| e.0 == key)?;
        if e.2 == NOT_YET {
            e.2 = extent(e.1).map_or(NONE, |x| x.min(NONE - 1));
        }
        Some((e.1, (e.2 != NONE).then_some(e.2)))
    }
}

impl Resolver<'_, '_> {
    /// The address and extent (bytes to the next distinct address, as
    /// `%pS` sizes it) of the kernel function `name`, `None` when the
    /// blob has none.
    fn kernel_symbol(&mut self, name: &[u8]) -> Option<(u64, Option<u64>)> {
        let key = name_key(name);
        if let Some(&known) = self.symbols.map.get(&key) {
            return known;
        }
        let cache = &mut self.symbols;
        if cache.all.is_none() {
            cache.searched += 1;
            if cache.searched > index_after(self.map.len()) {
                cache.all = Some(NameIndex::new(self.map));
                // The index answers as fast as the cache would: no need
                // to keep both.
                cache.map = HashMap::default();
            }
        }
        // The address index narrows the search, as for addresses read.
        let (map, index) = (&self.map, &self.index);
        let size = |a: u64| {
            map.lookup_ranked(a, map.rank_in(a, index.window(a)))
                .and_then(|h| h.size)
        };
        if let Some(all) = &mut cache.all {
            return all.get(key, size);
        }
        let found = self
            .map
            .lookup_name(name)
            .map(|s| (s.address, size(s.address)));
        if cache.map.len() >= SYMBOL_CACHE {
            cache.map.clear();
        }
        cache.map.insert(key, found);
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-pass index answers every name as the blob's own name
    /// search does, on both formats: static functions that share a name
    /// (the first in address order wins), aliases, `__pfx_` companions
    /// (folded in v2), and names the blob lacks.
    #[test]
    fn the_name_index_answers_as_lookup_name() {
        use crate::blob::list::SymbolList;
        use crate::blob::v1::tokens::TokenStrategy;
        use crate::blobfile::AlignedBlob;
        let mut l = SymbolList::new();
        let mut a = 0xffff_ffff_8100_0000u64;
        for i in 0..3000u64 {
            if i % 5 == 0 {
                l.push(a, b't', format!("__pfx_f{i}").as_bytes()).unwrap();
                a += 16;
            }
            // Every 13th a static `dup{i % 40}`: one name at many addresses.
            let name = match i % 13 {
                0 => format!("dup{}", i % 40),
                _ => format!("f{i}"),
            };
            l.push(a, if i % 3 == 0 { b't' } else { b'T' }, name.as_bytes())
                .unwrap();
            if i % 9 == 0 {
                l.push(a, b'T', format!("alias{i}").as_bytes()).unwrap();
            }
            a += 32 + i % 7 * 8;
        }
        let blobs = [
            crate::blob::v1::write::pack(&l, TokenStrategy::Optimal)
                .unwrap()
                .blob,
            crate::blob::v2::write::pack_v2(&l, &Default::default())
                .unwrap()
                .blob,
        ];
        for b in blobs {
            let b = AlignedBlob::copy_from(&b);
            let map = Kallsyms::from_blob(b.as_bytes(), None, None).unwrap();
            let mut all = NameIndex::new(&map);
            let mut names: Vec<Vec<u8>> = map
                .symbols()
                .map(|s| {
                    let mut n = Vec::new();
                    s.name.extend_into(&mut n);
                    n
                })
                .collect();
            names.extend([
                b"absent".to_vec(),
                b"f".to_vec(),
                b"dup".to_vec(),
                Vec::new(),
            ]);
            for n in &names {
                let want = map.lookup_name(n).map(|s| s.address);
                let got = all.get(name_key(n), |a| map.lookup_address(a).and_then(|h| h.size));
                assert_eq!(got.map(|g| g.0), want, "{}", n.escape_ascii());
            }
            assert!(names.iter().any(|n| n == b"dup0"));
        }
        assert_ne!(name_key(b"ab"), name_key(b"ba"));
    }

    #[test]
    fn architecture_from_register_lines() {
        assert_eq!(arch_of(b"RIP: 0010:foo+0x1/0x2"), Some(Arch::X86_64));
        assert_eq!(arch_of(b"pc : foo+0x1/0x2"), Some(Arch::Arm64));
        assert_eq!(arch_of(b"x29: ffff80000a4bbd30 x28: 0"), Some(Arch::Arm64));
        assert_eq!(
            arch_of(b"pc : [<c0110a2c>]    lr : [<c0110a10>]    psr: 60000013"),
            Some(Arch::Arm)
        );
        assert_eq!(arch_of(b"PC is at foo+0x1/0x2"), Some(Arch::Arm));
        assert_eq!(
            arch_of(b" epc : ffffffff80002fa4 ra : ffffffff80002f9c"),
            Some(Arch::Riscv64)
        );
        assert_eq!(arch_of(b"Call Trace:"), None);
    }
}
