//! A bare-metal kernel for QEMU, one source for riscv64 (`virt`, S-mode
//! under OpenSBI), riscv32 (`virt`, M-mode, no firmware), aarch64 (`virt`,
//! EL1) and x86_64 (`q35`, PVH entry, long mode), that prints its own symbolized backtrace, with source lines and inline
//! frames, from a ksym blob embedded in its image: the kernel side of
//! docs/kernel.md. `scripts/kernel-demo.sh` builds it, fills
//! `.ksym` with `ksym-pack --patch-elf` and boots it.
//!
//! `fault_here` fails in one of two ways:
//! - `BUG()` (default): a breakpoint trap, as Linux's `BUG()` on these
//!   architectures (`ebreak`, `brk #0x800`, `ud2`). The trap handler prints the
//!   trapping pc, then walks the frame records from the trapped frame
//!   pointer, then panics.
//! - `panic!` (feature `fault-panic`): the panic handler walks the frame
//!   records from its own frame. It passes through `core::panicking`, so
//!   `core` must keep frame pointers too: the script builds it with
//!   `-Zbuild-std` on nightly (the precompiled `core` has none).
//!
//! The frame walk is this kernel's (`arch::record`: the frame-record layout
//! of each ABI, `-C force-frame-pointers=yes`); each frame is printed by
//! `Kallsyms::write_frame`.
#![no_std]
#![no_main]

#[cfg_attr(
    any(target_arch = "riscv64", target_arch = "riscv32"),
    path = "arch/riscv.rs"
)]
#[cfg_attr(target_arch = "aarch64", path = "arch/aarch64.rs")]
#[cfg_attr(target_arch = "x86_64", path = "arch/x86_64.rs")]
mod arch;
#[cfg(any(feature = "v1", feature = "v2"))]
#[cfg_attr(feature = "two-pass", path = "symbols_two_pass.rs")]
mod symbols;

/// Without a reader: the same reservation and raw addresses only, the
/// build the reader's cost is measured against.
#[cfg(not(any(feature = "v1", feature = "v2")))]
mod symbols {
    use core::fmt::Write;

    ksym::reserve!(static KSYM: 64 * 1024);

    pub fn open(_: &mut impl Write) -> Option<usize> {
        Some(KSYM.bytes().len())
    }

    pub fn print_frame(out: &mut impl Write, _: Option<&usize>, addr: usize, _: bool) {
        let w = 2 * core::mem::size_of::<usize>();
        let _ = writeln!(out, " [<{addr:0w$x}>]");
    }
}

use core::fmt::{self, Write};
use core::sync::atomic::{AtomicBool, Ordering};

/// Set once a backtrace was printed: the panic that ends an oops does not
/// print a second one.
static OOPS: AtomicBool = AtomicBool::new(false);

unsafe extern "C" {
    static _stack_bottom: u8;
    static _stack_top: u8;
    static __build_id_note: u8;
    static __build_id_note_end: u8;
}

/// This image's GNU build-id note (linker.ld's `.note.gnu.build-id`).
#[cfg_attr(not(feature = "build-id-check"), allow(dead_code))]
pub fn build_id_note() -> &'static [u8] {
    let start = &raw const __build_id_note;
    let len = &raw const __build_id_note_end as usize - start as usize;
    // SAFETY: the linker script brackets the note section with these two
    // symbols; it is loaded, read-only and lives as long as the kernel.
    unsafe { core::slice::from_raw_parts(start, len) }
}

/// The console UART (`virt`'s; COM1 on x86_64).
struct Uart;

impl Write for Uart {
    // One copy of the byte loop: at opt-level 3 an inlined copy per
    // constant string becomes one store per byte.
    #[inline(never)]
    fn write_str(&mut self, s: &str) -> fmt::Result {
        s.bytes().for_each(arch::putc);
        Ok(())
    }
}

#[unsafe(no_mangle)]
extern "C" fn kmain() -> ! {
    let _ = writeln!(Uart, "ksym demo kernel: booted");
    let r = level1(core::hint::black_box(7));
    let _ = writeln!(Uart, "not reached: {r}");
    arch::poweroff()
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
        #[cfg(feature = "fault-panic")]
        panic!("invariant broken: x = {x}");
        #[cfg(not(feature = "fault-panic"))]
        arch::bug();
    }
}

/// Called by the architecture's trap entry with the trapping pc, the
/// trap's cause register and the trapped frame pointer.
#[unsafe(no_mangle)]
extern "C" fn on_trap(pc: usize, cause: usize, fp: usize) -> ! {
    let _ = writeln!(Uart, "kernel BUG: trap (cause {cause:#x}) at pc {pc:#x}");
    OOPS.store(true, Ordering::Relaxed);
    backtrace(Some(pc), fp);
    panic!("Fatal exception");
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    let _ = writeln!(Uart, "Kernel panic - not syncing: {}", info.message());
    if !OOPS.swap(true, Ordering::Relaxed) {
        #[cfg(not(feature = "cfi-unwind"))]
        backtrace(None, arch::frame_pointer());
        // The DWARF CFI walk prints the frames above this one: those whose
        // stack pointer is above this local's address.
        #[cfg(feature = "cfi-unwind")]
        {
            let here = 0u8;
            backtrace(None, core::hint::black_box(&raw const here) as usize);
        }
    }
    arch::poweroff()
}

#[cfg(feature = "cfi-unwind")]
mod cfi;

/// `Call Trace:`, the trapping pc if there is one, then one line per frame
/// record from `fp` up, while it stays on the stack and goes up (with
/// `cfi-unwind`, the panic path walks by DWARF CFI instead).
fn backtrace(pc: Option<usize>, mut fp: usize) {
    let k = symbols::open(&mut Uart);
    let _ = writeln!(Uart, "Call Trace:");
    if let Some(pc) = pc {
        symbols::print_frame(&mut Uart, k.as_ref(), pc, false);
    }
    // `fp` is then an address in the panic handler's frame.
    #[cfg(feature = "cfi-unwind")]
    if pc.is_none() {
        cfi::walk(fp, 32, &mut |ret| {
            symbols::print_frame(&mut Uart, k.as_ref(), ret, true)
        });
        return;
    }
    let (lo, hi) = (
        &raw const _stack_bottom as usize,
        &raw const _stack_top as usize,
    );
    for _ in 0..32 {
        let Some((ret, prev)) = arch::record(fp, lo, hi) else {
            break;
        };
        if ret == 0 {
            break;
        }
        symbols::print_frame(&mut Uart, k.as_ref(), ret, true);
        if prev <= fp {
            break;
        }
        fp = prev;
    }
}
