//! AArch64 at EL1, as QEMU `virt` starts an ELF given to `-kernel`. Frame
//! records (AAPCS64): `x29` points to the caller's `x29`, with the return
//! address (`x30`) in the next word.

use core::arch::{asm, global_asm};

global_asm!(
    r#"
    .section .text.entry, "ax"
    .globl _start
_start:
    adrp x0, _stack_top
    add x0, x0, :lo12:_stack_top
    mov sp, x0
    // FP/SIMD on at EL1: compiled code may use the vector registers.
    mrs x0, cpacr_el1
    orr x0, x0, #(3 << 20)
    msr cpacr_el1, x0
    adr x0, vectors
    msr vbar_el1, x0
    isb
    mov x29, #0
    mov x30, #0
    bl kmain
1:  wfe
    b 1b

    .text
    // Every exception vector goes to one handler.
    .balign 2048
vectors:
    .rept 16
    .balign 128
    b trap_entry
    .endr
trap_entry:
    mrs x0, elr_el1
    mrs x1, esr_el1
    mov x2, x29
    bl on_trap
"#
);

/// Writes one byte to the PL011 UART of `virt`.
pub fn putc(c: u8) {
    // SAFETY: the UART's data register, always mapped on `virt`.
    unsafe { core::ptr::write_volatile(0x0900_0000 as *mut u8, c) }
}

/// Linux's `BUG()` on arm64: `brk #0x800` (`BUG_BRK_IMM`).
#[cfg_attr(feature = "fault-panic", allow(dead_code))]
#[inline(always)]
pub fn bug() {
    // SAFETY: a breakpoint exception, handled by `trap_entry`.
    unsafe { asm!("brk #0x800") }
}

/// The current frame pointer (`x29`).
#[cfg_attr(feature = "cfi-unwind", allow(dead_code))] // the CFI walk reads none
#[inline(always)]
pub fn frame_pointer() -> usize {
    let fp;
    // SAFETY: reads a register.
    unsafe { asm!("mov {}, x29", out(reg) fp) }
    fp
}

/// The frame record at `fp`: (return address, caller's frame pointer),
/// when the record lies inside the stack `lo..hi`.
pub fn record(fp: usize, lo: usize, hi: usize) -> Option<(usize, usize)> {
    if fp < lo || fp + 16 > hi || !fp.is_multiple_of(16) {
        return None;
    }
    // SAFETY: both words lie inside the stack, checked just above.
    unsafe { Some((*((fp + 8) as *const usize), *(fp as *const usize))) }
}

/// Powers off: PSCI `SYSTEM_OFF`, which QEMU `virt` serves over `hvc`
/// when it boots a kernel at EL1.
pub fn poweroff() -> ! {
    // SAFETY: a PSCI call; it does not return when it succeeds.
    unsafe { asm!("hvc #0", in("x0") 0x8400_0008usize) }
    loop {
        // SAFETY: waits for an event; nothing else runs.
        unsafe { asm!("wfe") }
    }
}
