//! What the resolver does with a line, decided before any lookup: the
//! plan and the lookups it needs, kept in the batch until it is flushed.

/// What to do with one line. The lookups a line needs are kept beside
/// its plan in the batch ([`Lookup`]): one for `Bare` and `Replace`, one
/// per reference for `Log`.
#[derive(Debug, Clone, Copy)]
pub(in crate::resolve) enum Plan {
    /// Copy it unchanged.
    Pass,
    /// A bare address: print `ADDR TYPE NAME+0xOFF/0xSIZE`.
    Bare { addr: u64 },
    /// A perf or bcc frame: replace `body[from..to]` with `NAME+0xOFF`;
    /// perf frames carry their DSO in a column of their own. `from == to`
    /// is a frame without a symbol (`ADDR (DSO)`): ` NAME` goes there.
    Replace {
        addr: u64,
        from: usize,
        to: usize,
        /// A user-space frame (a program's blob): perf's text stays when
        /// the blob has no answer.
        keep: bool,
        /// How the name and offset are written.
        style: FrameStyle,
    },
    /// A kernel log line with code references (`logline.rs`), the
    /// batch's `refs[refs]`, behind a log prefix of `prefix` bytes; with
    /// `script`, rewritten as decode_stacktrace.sh does (a blob with the
    /// source lines of one of its references).
    Log {
        prefix: usize,
        refs: (u32, u32),
        script: bool,
    },
    /// A `Code:` line (`code/`): printed, then disassembled.
    #[cfg_attr(not(feature = "disasm"), allow(dead_code))]
    Code {
        prefix: usize,
        arch: Option<crate::resolve::code::Arch>,
        fault: Option<Fault>,
    },
}

/// How a frame's tool writes `NAME+OFF`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::resolve) enum FrameStyle {
    /// perf and bcc: `NAME+0xOFF`.
    Perf,
    /// bpftrace's `kstack(perf)`/`ustack(perf)`: `NAME+DEC`; with `dso`,
    /// the frame was `ADDR 0xADDR ([unknown])` and from `0xADDR` on it
    /// becomes `NAME+DEC (PATH)`, as bpftrace prints a user frame it
    /// named, PATH the binary's.
    Bpftrace { dso: bool },
}

/// One address a line needs looked up: `addr` (as the input shows it,
/// slide not yet removed) in the kernel's space, or `module_addr` in the
/// module space; `lines` when its output shows source lines.
#[derive(Debug, Clone, Copy, Default)]
pub(in crate::resolve) struct Lookup {
    pub addr: Option<u64>,
    pub module_addr: Option<u64>,
    pub lines: bool,
}

/// Where a report faulted: a runtime address (vmlinux, slide not yet
/// removed), or a module-space address (FORMAT.md §16) for a module's
/// `func+0xOFF/0xSIZE [mod]`, whose runtime address the line does not give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::resolve) struct Fault {
    pub addr: u64,
    pub module: bool,
}
