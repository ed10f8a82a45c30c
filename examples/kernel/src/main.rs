//! A bare-metal riscv64 kernel for QEMU's `virt` machine (OpenSBI, S-mode)
//! that prints its own symbolized backtrace, with source lines and inline
//! frames, from a ksym blob embedded in its image: the kernel side of
//! README "In your kernel". `scripts/kernel-demo.sh` builds it, fills
//! `.ksym` with `ksym-pack --patch-elf` and boots it.
//!
//! `fault_here` hits `BUG()` the way Linux does on riscv (an `ebreak`); the
//! trap handler takes the trapping pc and frame pointer, walks the frame
//! records (`-C force-frame-pointers=yes`), prints one line per frame, then
//! panics. The first frame is the trapping pc itself; the others are return
//! addresses, printed as they are, their lines looked up at `ADDR - 1` (the
//! call instruction), as decode_stacktrace.sh and perf do.
#![no_std]
#![no_main]

use core::arch::{asm, global_asm};
use core::fmt::{self, Write};

#[cfg(feature = "reader")]
use ksym::Kallsyms;
#[cfg(feature = "reader")]
use ksym::blob::v2::source_lines::read::{LineTable, SourceFrame};

/// Reserved for the blob, zero until `ksym-pack --patch-elf` fills it.
#[unsafe(link_section = ".ksym")]
#[used]
static KSYM: [u8; 64 * 1024] = [0; 64 * 1024];

global_asm!(
    r#"
    .section .text.entry, "ax"
    .globl _start
_start:
    la sp, _stack_top
    li s0, 0
    la t0, trap_entry
    csrw stvec, t0
    call kmain
1:  wfi
    j 1b

    .text
    .balign 4
trap_entry:
    csrr a0, sepc
    csrr a1, scause
    mv a2, s0
    call on_trap
"#
);

unsafe extern "C" {
    static _stack_bottom: u8;
    static _stack_top: u8;
}

/// The ns16550 UART of QEMU `virt`.
struct Uart;

impl Uart {
    fn bytes(&mut self, b: &[u8]) {
        for &c in b {
            // SAFETY: the UART's transmit register, always mapped on `virt`.
            unsafe { core::ptr::write_volatile(0x1000_0000 as *mut u8, c) }
        }
    }
}

impl Write for Uart {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.bytes(s.as_bytes());
        Ok(())
    }
}

#[unsafe(no_mangle)]
extern "C" fn kmain() -> ! {
    let _ = writeln!(Uart, "ksym demo kernel: booted");
    let r = level1(core::hint::black_box(7));
    let _ = writeln!(Uart, "not reached: {r}");
    poweroff()
}

#[inline(never)]
fn level1(x: u64) -> u64 {
    core::hint::black_box(level2(x + 1)) + 1
}

#[inline(never)]
fn level2(x: u64) -> u64 {
    core::hint::black_box(fault_here(x * 2)) + 2
}

#[inline(never)]
fn fault_here(x: u64) -> u64 {
    check_invariant(x);
    x
}

/// Inlined into `fault_here`: the backtrace shows it as an inline frame.
#[inline(always)]
fn check_invariant(x: u64) {
    if core::hint::black_box(x) != 0 {
        // SAFETY: a breakpoint trap, as Linux's BUG() on riscv.
        unsafe { asm!("ebreak") }
    }
}

#[unsafe(no_mangle)]
extern "C" fn on_trap(sepc: usize, scause: usize, mut fp: usize) -> ! {
    let _ = writeln!(
        Uart,
        "kernel BUG: trap (scause {scause:#x}) at pc {sepc:#x}"
    );
    // black_box: the compiler must not read the zeros the image was linked with.
    let region: &[u8] = core::hint::black_box(&KSYM[..]);
    #[cfg(feature = "reader")]
    let k = match Kallsyms::from_region(region, None, None) {
        Ok((k, _)) if !k.is_empty() => k,
        Ok(_) => panic!("no symbols: .ksym was never filled (ksym-pack --patch-elf)"),
        Err(e) => panic!("ksym: {e}"),
    };
    #[cfg(not(feature = "reader"))]
    let k = core::hint::black_box(region.len());
    let _ = writeln!(Uart, "Call Trace:");
    frame(&k, sepc as u64, false);
    let (lo, hi) = (
        &raw const _stack_bottom as usize,
        &raw const _stack_top as usize,
    );
    for _ in 0..32 {
        if fp <= lo + 16 || fp > hi || !fp.is_multiple_of(8) {
            break;
        }
        // SAFETY: fp lies inside the stack, checked just above; the frame
        // record is {ra at fp-8, caller's fp at fp-16}.
        let (ra, prev) = unsafe { (*((fp - 8) as *const usize), *((fp - 16) as *const usize)) };
        if ra == 0 {
            break;
        }
        frame(&k, ra as u64, true);
        fp = prev;
    }
    panic!("BUG in fault_here");
}

/// ` [<ADDR>]` alone: the kernel without the reader, for its code size.
#[cfg(not(feature = "reader"))]
fn frame(_: &usize, addr: u64, _: bool) {
    let _ = writeln!(Uart, " [<{addr:016x}>]");
}

/// ` [<ADDR>] NAME+0xOFF/0xSIZE FILE:LINE > INLINED FILE:LINE`, as
/// ksym-resolve prints a bare address of a blob with lines.
#[cfg(feature = "reader")]
fn frame(k: &Kallsyms<'_>, addr: u64, is_return: bool) {
    let u = &mut Uart;
    let _ = write!(u, " [<{addr:016x}>] ");
    match k.lookup_address(addr) {
        Some(h) => {
            h.symbol.name.for_each_run(|r| u.bytes(r));
            let _ = write!(u, "+{:#x}", h.offset);
            if let Some(size) = h.size {
                let _ = write!(u, "/{size:#x}");
            }
        }
        None => u.bytes(b"?"),
    }
    if let Some(lines) = k.lines() {
        let at = if is_return { addr - 1 } else { addr };
        match lines.find(at) {
            Some(row) => {
                // Innermost first from the reader; printed outermost first.
                let mut chain = [None::<SourceFrame>; 16];
                let mut n = 0;
                for f in lines.frames(&row).take(chain.len()) {
                    chain[n] = Some(f);
                    n += 1;
                }
                for (i, f) in chain[..n].iter().rev().flatten().enumerate() {
                    if i > 0 {
                        u.bytes(b" > ");
                        if let Some(name) = lines.string(f.function) {
                            name.runs().for_each(|r| u.bytes(r));
                        }
                    }
                    u.bytes(b" ");
                    path(u, lines, f);
                    let _ = write!(u, ":{}", f.line);
                }
            }
            None => u.bytes(b" ??:0"),
        }
    }
    u.bytes(b"\n");
}

/// `dir/base`, without this crate's directory.
#[cfg(feature = "reader")]
fn path(u: &mut Uart, lines: &LineTable<'_>, f: &SourceFrame) {
    let Some((dir, base)) = lines.file(f.file) else {
        u.bytes(b"??");
        return;
    };
    let mut d = [0u8; 256];
    let mut len = 0;
    for r in dir.runs() {
        let take = r.len().min(d.len() - len);
        d[len..len + take].copy_from_slice(&r[..take]);
        len += take;
    }
    let here = env!("CARGO_MANIFEST_DIR").as_bytes();
    let d = &d[..len];
    match d.strip_prefix(here) {
        Some(rest) => {
            let rest = rest.strip_prefix(b"/").unwrap_or(rest);
            u.bytes(rest);
            if !rest.is_empty() {
                u.bytes(b"/");
            }
        }
        None if !d.is_empty() => {
            u.bytes(d);
            u.bytes(b"/");
        }
        None => {}
    }
    base.runs().for_each(|r| u.bytes(r));
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    let _ = writeln!(Uart, "Kernel panic - not syncing: {}", info.message());
    poweroff()
}

/// SBI system reset (shutdown); QEMU's test device if the SBI lacks it.
fn poweroff() -> ! {
    // SAFETY: an SBI call (SRST extension, shutdown) and, should it return,
    // a write to the sifive_test device that `virt` maps at 0x100000.
    unsafe {
        asm!("ecall", in("a7") 0x5352_5354usize, in("a6") 0usize,
             inlateout("a0") 0usize => _, inlateout("a1") 0usize => _);
        core::ptr::write_volatile(0x10_0000 as *mut u32, 0x5555);
    }
    loop {
        // SAFETY: waits for an interrupt; nothing else runs.
        unsafe { asm!("wfi") }
    }
}
