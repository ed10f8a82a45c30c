//! x86_64, booted by QEMU's PVH entry (`-kernel` with an ELF that carries
//! the `XEN_ELFNOTE_PHYS32_ENTRY` note): the entry runs in 32-bit protected
//! mode without paging, maps the first GiB one to one with 2 MiB pages,
//! enters long mode and calls `kmain`. Frame records (System V with frame
//! pointers): `rbp` points to the caller's `rbp`, with the return address
//! in the next word. `BUG()` is `ud2`, as Linux's; its #UD exception, and
//! every other CPU exception, goes to `on_trap` through the IDT with the
//! vector as the cause.

use core::arch::{asm, global_asm};

global_asm!(
    r#"
    // The PVH entry point, as an ELF note (Xen's public/elfnote.h).
    .section .note.Xen, "a", @note
    .balign 4
    .long 4, 4, 18
    .asciz "Xen"
    .balign 4
    .long _start
    .balign 4

    .section .text.entry, "ax"
    .code32
    .globl _start
_start:
    // PML4[0] -> PDPT, PDPT[0] -> PD, PD: 512 2 MiB pages from 0.
    lea pdpt, %eax
    or $3, %eax
    mov %eax, pml4
    lea pd, %eax
    or $3, %eax
    mov %eax, pdpt
    xor %ecx, %ecx
1:  mov %ecx, %eax
    shl $21, %eax
    or $0x83, %eax
    mov %eax, pd(, %ecx, 8)
    inc %ecx
    cmp $512, %ecx
    jne 1b
    lea pml4, %eax
    mov %eax, %cr3
    // PAE, and SSE's state (OSFXSR, OSXMMEXCPT): the `unwinding` crate
    // (feature cfi-unwind) saves MXCSR, which is #UD without them. Then
    // long mode (EFER.LME), then paging.
    mov %cr4, %eax
    or $0x620, %eax
    mov %eax, %cr4
    mov $0xc0000080, %ecx
    rdmsr
    or $0x100, %eax
    wrmsr
    // Paging and protection; MP set and EM clear, for SSE.
    mov %cr0, %eax
    and $~4, %eax
    or $0x80000003, %eax
    mov %eax, %cr0
    lgdt gdt_ptr
    ljmp $8, $.Llong_mode

    .code64
.Llong_mode:
    mov $16, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %ax, %ss
    lea _stack_top(%rip), %rsp
    xor %ebp, %ebp
    call x86_idt_init
    call kmain
2:  hlt
    jmp 2b

    // One 16-byte stub per CPU exception vector: it pushes the vector.
    .balign 16
    .globl x86_trap_stubs
x86_trap_stubs:
    .irp v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
    .balign 16
    push $\v
    jmp trap_common
    .endr
trap_common:
    pop %rsi
    // Vectors 8, 10-14, 17, 21, 29 and 30 push an error code (Intel SDM
    // vol. 3, table 6-1): the trapping rip is one word further.
    mov $0x60227d00, %eax
    bt %esi, %eax
    jnc 3f
    add $8, %rsp
3:  mov (%rsp), %rdi
    mov %rbp, %rdx
    and $-16, %rsp
    call on_trap

    .section .rodata
    .balign 8
gdt:
    .quad 0
    .quad 0x00af9a000000ffff
    .quad 0x00cf92000000ffff
gdt_ptr:
    .word gdt_ptr - gdt - 1
    .quad gdt

    .section .bss
    .balign 4096
pml4: .skip 4096
pdpt: .skip 4096
pd: .skip 4096
"#,
    options(att_syntax)
);

unsafe extern "C" {
    /// 32 stubs of 16 bytes, one per exception vector.
    fn x86_trap_stubs();
}

/// The interrupt descriptor table: 32 CPU exceptions, 16 bytes each.
static mut IDT: [u64; 64] = [0; 64];

/// Fills the IDT's 32 exception gates (64-bit interrupt gates on the code
/// segment, selector 8) and loads it.
#[unsafe(no_mangle)]
extern "C" fn x86_idt_init() {
    let stubs = x86_trap_stubs as *const () as u64;
    for v in 0..32 {
        let f = stubs + 16 * v as u64;
        let low = (f & 0xffff) | (8 << 16) | (0x8e << 40) | ((f >> 16) & 0xffff) << 48;
        // SAFETY: one thread, before any interrupt can be taken.
        unsafe {
            IDT[2 * v] = low;
            IDT[2 * v + 1] = f >> 32;
        }
    }
    let limit = (core::mem::size_of::<[u64; 64]>() - 1) as u16;
    let mut ptr = [0u8; 10];
    ptr[..2].copy_from_slice(&limit.to_le_bytes());
    ptr[2..].copy_from_slice(&(&raw const IDT as u64).to_le_bytes());
    // SAFETY: the pointer names a valid, static IDT.
    unsafe { asm!("lidt [{}]", in(reg) &ptr) }
}

/// Writes one byte to COM1, which QEMU's `-nographic` shows.
pub fn putc(c: u8) {
    // SAFETY: the UART's transmit register, an I/O port.
    unsafe { asm!("out dx, al", in("dx") 0x3f8u16, in("al") c) }
}

/// Linux's `BUG()` on x86: `ud2`.
#[cfg_attr(feature = "fault-panic", allow(dead_code))]
#[inline(always)]
pub fn bug() {
    // SAFETY: an invalid-opcode exception (#UD, vector 6), handled by
    // `trap_common`.
    unsafe { asm!("ud2") }
}

/// The current frame pointer (`rbp`).
#[cfg_attr(feature = "cfi-unwind", allow(dead_code))] // the CFI walk reads none
#[inline(always)]
pub fn frame_pointer() -> usize {
    let fp;
    // SAFETY: reads a register.
    unsafe { asm!("mov {}, rbp", out(reg) fp) }
    fp
}

/// The frame record at `fp`: (return address, caller's frame pointer),
/// when the record lies inside the stack `lo..hi`.
pub fn record(fp: usize, lo: usize, hi: usize) -> Option<(usize, usize)> {
    if fp < lo || fp + 16 > hi || !fp.is_multiple_of(8) {
        return None;
    }
    // SAFETY: both words lie inside the stack, checked just above.
    unsafe { Some((*((fp + 8) as *const usize), *(fp as *const usize))) }
}

/// Powers off through QEMU's `isa-debug-exit` device at port 0xf4.
pub fn poweroff() -> ! {
    // SAFETY: an I/O port write that QEMU answers by exiting.
    unsafe { asm!("out dx, al", in("dx") 0xf4u16, in("al") 0u8) }
    loop {
        // SAFETY: waits for an interrupt; nothing else runs.
        unsafe { asm!("hlt") }
    }
}
