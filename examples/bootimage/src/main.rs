//! A kernel we did not shape for ksym: the `bootloader` crate (0.9) loads
//! it from a disk image that `bootimage` builds, rust-lld links it with no
//! linker script, and it runs in long mode with the bootloader's page
//! tables. Its panic handler prints the panic and the frame-record walk
//! through the kernel guide's step 4 file, used as it is, then powers off.
#![no_std]
#![no_main]

#[path = "../../kernel/src/symbols.rs"]
mod symbols;

use core::fmt::{self, Write};

/// COM1, which QEMU's `-serial stdio` shows; no set-up needed under QEMU.
struct Serial;

impl Write for Serial {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            // SAFETY: COM1's transmit register, an I/O port.
            unsafe { core::arch::asm!("out dx, al", in("dx") 0x3f8u16, in("al") b) }
        }
        Ok(())
    }
}

// The entry clears rbp before the first Rust frame, as Linux's does: the
// frame-record walk ends there, not in the bootloader's stack, which the
// kernel cannot read.
core::arch::global_asm!(
    ".globl _start",
    "_start:",
    "xor ebp, ebp",
    "call kmain",
    "ud2"
);

#[unsafe(no_mangle)]
extern "C" fn kmain() -> ! {
    let _ = writeln!(Serial, "ksym bootimage demo: booted");
    deep(core::hint::black_box(3));
    unreachable!()
}

#[inline(never)]
fn deep(n: u32) -> u32 {
    if n == 0 {
        panic!("bootimage demo panic");
    }
    core::hint::black_box(deep(n - 1)) + 1
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    let _ = writeln!(Serial, "Kernel panic - not syncing: {}", info.message());
    let k = symbols::open(&mut Serial);
    let _ = writeln!(Serial, "Call Trace:");
    let mut fp: usize;
    // SAFETY: reads a register.
    unsafe { core::arch::asm!("mov {}, rbp", out(reg) fp) };
    // x86_64 frame records (docs/kernel.md, step 3): [rbp] the caller's
    // rbp, [rbp + 8] the return address; up the stack, at most 16.
    for _ in 0..16 {
        if fp == 0 || !fp.is_multiple_of(8) {
            break;
        }
        // SAFETY: fp is a frame record on this kernel's stack: each rbp
        // points above the last, and the walk ends at 0 (the entry's).
        let (ret, prev) = unsafe { (*((fp + 8) as *const usize), *(fp as *const usize)) };
        if ret == 0 {
            break;
        }
        symbols::print_frame(&mut Serial, k.as_ref(), ret, true);
        if prev <= fp {
            break;
        }
        fp = prev;
    }
    // isa-debug-exit: QEMU exits with (0x10 << 1) | 1.
    // SAFETY: an I/O port write that QEMU answers by exiting.
    unsafe { core::arch::asm!("out dx, eax", in("dx") 0xf4u16, in("eax") 0x10u32) }
    loop {
        core::hint::spin_loop();
    }
}
