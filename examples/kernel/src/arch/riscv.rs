//! RISC-V: riscv64 runs in S-mode after OpenSBI (`-bios default`),
//! riscv32 in M-mode with no firmware (`-bios none`: Debian ships no
//! 32-bit OpenSBI). Frame records (psABI with frame pointers): `s0` points
//! just above the saved `ra` (at `s0 - XLEN`) and the caller's `s0` (at
//! `s0 - 2 * XLEN`).

use core::arch::{asm, global_asm};

// The trap CSRs: S-mode's under OpenSBI (riscv64), M-mode's without
// firmware (riscv32). The rest of the entry is the same.
#[cfg(target_arch = "riscv64")]
macro_rules! csr {
    ($name:literal) => {
        concat!("s", $name)
    };
}
#[cfg(target_arch = "riscv32")]
macro_rules! csr {
    ($name:literal) => {
        concat!("m", $name)
    };
}

global_asm!(concat!(
    r#"
    .section .text.entry, "ax"
    .globl _start
_start:
    la sp, _stack_top
    li s0, 0
    la t0, trap_entry
    csrw "#,
    csr!("tvec"),
    r#", t0
    call kmain
1:  wfi
    j 1b

    .text
    .balign 4
trap_entry:
    csrr a0, "#,
    csr!("epc"),
    r#"
    csrr a1, "#,
    csr!("cause"),
    r#"
    mv a2, s0
    call on_trap
"#
));

/// Writes one byte to the ns16550 UART of `virt`.
pub fn putc(c: u8) {
    // SAFETY: the UART's transmit register, always mapped on `virt`.
    unsafe { core::ptr::write_volatile(0x1000_0000 as *mut u8, c) }
}

/// Linux's `BUG()` on riscv: an `ebreak`.
#[cfg_attr(feature = "fault-panic", allow(dead_code))]
#[inline(always)]
pub fn bug() {
    // SAFETY: a breakpoint trap, handled by `trap_entry`.
    unsafe { asm!("ebreak") }
}

/// The current frame pointer (`s0`).
#[cfg_attr(feature = "cfi-unwind", allow(dead_code))] // the CFI walk reads none
#[inline(always)]
pub fn frame_pointer() -> usize {
    let fp;
    // SAFETY: reads a register.
    unsafe { asm!("mv {}, s0", out(reg) fp) }
    fp
}

/// The frame record at `fp`: (return address, caller's frame pointer),
/// when the record lies inside the stack `lo..hi`.
pub fn record(fp: usize, lo: usize, hi: usize) -> Option<(usize, usize)> {
    let w = core::mem::size_of::<usize>();
    if fp < lo + 2 * w || fp > hi || !fp.is_multiple_of(w) {
        return None;
    }
    // SAFETY: both words lie inside the stack, checked just above.
    unsafe { Some((*((fp - w) as *const usize), *((fp - 2 * w) as *const usize))) }
}

/// Powers off: SBI system reset on riscv64, then (or on riscv32, which
/// has no SBI) QEMU's sifive_test device at 0x100000.
pub fn poweroff() -> ! {
    // SAFETY: an SBI call (SRST extension, shutdown), then a write to the
    // test device that `virt` maps.
    unsafe {
        #[cfg(target_arch = "riscv64")]
        asm!("ecall", in("a7") 0x5352_5354usize, in("a6") 0usize,
             inlateout("a0") 0usize => _, inlateout("a1") 0usize => _);
        core::ptr::write_volatile(0x10_0000 as *mut u32, 0x5555);
    }
    loop {
        // SAFETY: waits for an interrupt; nothing else runs.
        unsafe { asm!("wfi") }
    }
}
