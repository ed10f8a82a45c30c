//! Kernel log lines: their references checked against the blob and
//! turned into lookups, the report's architecture and faulting address
//! followed from line to line for its `Code:` line.

use super::bytes::{is_blank, parse_sym_off};
use super::logline::{Found, Reference, scan};
use super::prefix::prefix_len;
use crate::resolve::batch::plan::{Fault, Lookup, Plan};
use crate::resolve::code::Arch;
use crate::resolve::*;

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
/// Keyed by a 64-bit SipHash of the name: two names of one log share a key
/// with odds near 2^-29 even at the cache's full size, and the cost of
/// one is a wrong `"status"`, never a wrong symbol printed.
#[derive(Debug, Default)]
pub(in crate::resolve) struct SymbolCache {
    map: std::collections::HashMap<u64, Option<(u64, Option<u64>)>>,
}

/// Entries kept before the cache starts over: about 10 MB at most.
const SYMBOL_CACHE: usize = 1 << 18;

impl Resolver<'_, '_> {
    /// The address and extent (bytes to the next distinct address, as
    /// `%pS` sizes it) of the kernel function `name`, `None` when the
    /// blob has none.
    fn kernel_symbol(&mut self, name: &[u8]) -> Option<(u64, Option<u64>)> {
        use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
        let key = BuildHasherDefault::<DefaultHasher>::default().hash_one(name);
        if let Some(&known) = self.symbols.map.get(&key) {
            return known;
        }
        let found = self.map.lookup_name(name).map(|s| {
            (
                s.address,
                self.map.lookup_address(s.address).and_then(|h| h.size),
            )
        });
        if self.symbols.map.len() >= SYMBOL_CACHE {
            self.symbols.map.clear();
        }
        self.symbols.map.insert(key, found);
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
