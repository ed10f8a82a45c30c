//! Links with linker.ld (by absolute path: the linker runs elsewhere), at
//! the address QEMU `virt` starts the kernel at on each architecture.
fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let base = match std::env::var("CARGO_CFG_TARGET_ARCH").unwrap().as_str() {
        // After OpenSBI (-bios default), in S-mode.
        "riscv64" => "0x80200000",
        // -bios none: the kernel is the first code, in M-mode.
        "riscv32" => "0x80000000",
        // RAM starts at 0x40000000; the ELF is loaded where it says.
        "aarch64" => "0x40080000",
        // PVH: loaded where the ELF says, above the first MiB.
        "x86_64" => "0x200000",
        other => panic!("no QEMU virt layout for {other}"),
    };
    let out = std::env::var("OUT_DIR").unwrap();
    let eh_frame = match std::env::var_os("CARGO_FEATURE_CFI_UNWIND") {
        Some(_) => ".eh_frame : ALIGN(8) { __eh_frame = .; KEEP(*(.eh_frame)) }\n",
        None => "/DISCARD/ : { *(.eh_frame) }\n",
    };
    std::fs::write(format!("{out}/eh_frame.ld"), eh_frame).unwrap();
    println!("cargo:rustc-link-arg=-L{out}");
    println!("cargo:rustc-link-arg=-T{dir}/linker.ld");
    // A GNU build-id note, which ksym-pack --patch-elf records in the blob.
    println!("cargo:rustc-link-arg=--build-id=sha1");
    println!("cargo:rustc-link-arg=--defsym=KERNEL_BASE={base}");
    println!("cargo:rerun-if-changed=linker.ld");
    // A two-pass link (feature two-pass): the first link takes an empty
    // table; the second, KSYM_ASM, the source ksym-pack --asm wrote.
    println!("cargo:rerun-if-env-changed=KSYM_ASM");
    if std::env::var_os("CARGO_FEATURE_TWO_PASS").is_some() {
        match std::env::var("KSYM_ASM") {
            Ok(path) => println!("cargo:rerun-if-changed={path}"),
            Err(_) => {
                let empty = format!("{}/ksym-empty.S", std::env::var("OUT_DIR").unwrap());
                std::fs::write(
                    &empty,
                    "/* The first link of two: no table yet (docs/kernel.md, step 5). */\n\
                     \t.section .ksym,\"a\"\n\t.balign 8\n\t.globl ksym_blob\nksym_blob:\n\
                     \t.globl ksym_blob_end\nksym_blob_end:\n",
                )
                .unwrap();
                println!("cargo:rustc-env=KSYM_ASM={empty}");
            }
        }
    }
}
