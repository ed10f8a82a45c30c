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
    println!("cargo:rustc-link-arg=-T{dir}/linker.ld");
    // A GNU build-id note, which ksym-pack --patch-elf records in the blob.
    println!("cargo:rustc-link-arg=--build-id=sha1");
    println!("cargo:rustc-link-arg=--defsym=KERNEL_BASE={base}");
    println!("cargo:rerun-if-changed=linker.ld");
}
