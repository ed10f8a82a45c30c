//! The cargo-runner recipe of docs/kernel.md, step 5, as a kernel author
//! uses it: `cargo run` in examples/kernel with `sh run.sh` as the runner
//! (the file the guide quotes whole) packs the kernel's own symbols into a
//! copy of the ELF cargo made, boots the copy under QEMU, and the console
//! shows the symbolized backtrace; the ELF cargo made stays unfilled. And
//! the guide's make rule, run by make.
mod common;

use common::readelf_sections;

use std::path::Path;
use std::process::Command;

/// `cargo SUBCOMMAND` of the example kernel for riscv64 with lines, in
/// `target_dir`: the program and its arguments.
fn kernel_cargo(subcommand: &str, target_dir: &Path) -> Vec<std::ffi::OsString> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let words = [&cargo[..], subcommand, "--release", "--quiet"];
    let target = ["--target", "riscv64gc-unknown-none-elf"];
    let features = [
        "--no-default-features",
        "--features",
        "lines",
        "--target-dir",
    ];
    words
        .iter()
        .chain(&target)
        .chain(&features)
        .map(Into::into)
        .chain([target_dir.as_os_str().to_owned()])
        .collect()
}

/// PATH with the release tools first (`cargo test --release` builds them).
fn tools_path(root: &Path) -> String {
    let tools = root.join("target/release");
    assert!(
        tools.join("ksym-pack").exists(),
        "cargo test --release builds the tools"
    );
    format!(
        "{}:{}",
        tools.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn cargo_run_with_the_guides_runner_boots_a_filled_copy() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if Command::new("qemu-system-riscv64")
        .arg("--version")
        .output()
        .is_err()
    {
        // tests/kernel_demo.rs runs first and installs QEMU as root (CI).
        eprintln!("SKIPPED: no qemu-system-riscv64");
        return;
    }
    let target_dir = root.join("target/kernel-runner");
    let out = Command::new("timeout")
        .arg("300")
        .args(kernel_cargo("run", &target_dir))
        .current_dir(root.join("examples/kernel"))
        .env("PATH", tools_path(root))
        .env(
            "CARGO_TARGET_RISCV64GC_UNKNOWN_NONE_ELF_RUNNER",
            "sh run.sh",
        )
        .output()
        .expect("cargo");
    let console = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        console.contains("Call Trace:")
            && console.contains("ksym_kernel_demo::fault_here+0x")
            && console.contains(" src/main.rs:"),
        "{console}\n{err}"
    );
    assert!(err.contains("no address moved"), "{err}");
    // cargo's own ELF is as the linker left it, its .ksym still zeros;
    // the copy holds the blob there and differs nowhere else.
    let elf = target_dir.join("riscv64gc-unknown-none-elf/release/ksym-kernel-demo");
    let copy = elf.with_extension("ksym");
    let (a, b) = (std::fs::read(&elf).unwrap(), std::fs::read(&copy).unwrap());
    let ksym = readelf_sections(&elf)
        .into_iter()
        .find(|s| s.name == ".ksym")
        .expect(".ksym in readelf -S");
    let (off, size) = (ksym.offset as usize, ksym.size as usize);
    assert_eq!(a.len(), b.len());
    assert!(
        a[off..off + size].iter().all(|&x| x == 0),
        "cargo's ELF was patched"
    );
    assert!(
        b[off..off + size].iter().any(|&x| x != 0),
        "the copy holds no blob"
    );
    assert_eq!(a[..off], b[..off]);
    assert_eq!(a[off + size..], b[off + size..]);
}

/// The make recipe of docs/kernel.md, step 5, taken from the guide itself
/// (its `make` block, under `KERNEL := ` the ELF cargo built): `make
/// kernel.elf` writes a filled copy, which boots and prints its frames.
#[test]
fn make_with_the_guides_rule_boots_a_filled_copy() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let have = |cmd: &str| Command::new(cmd).arg("--version").output().is_ok();
    if !have("qemu-system-riscv64") || !have("make") {
        eprintln!("SKIPPED: no qemu-system-riscv64 or make");
        return;
    }
    let guide = std::fs::read_to_string(root.join("docs/kernel.md")).unwrap();
    let rule = guide
        .split("```make\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("docs/kernel.md has a make block");
    // The block is indented as a list item's; make wants the tab first.
    let rule: String = rule
        .lines()
        .map(|l| format!("{}\n", l.strip_prefix("  ").unwrap_or(l)))
        .collect();
    let target_dir = root.join("target/kernel-make");
    let cargo = kernel_cargo("build", &target_dir);
    let st = Command::new(&cargo[0])
        .args(&cargo[1..])
        .current_dir(root.join("examples/kernel"))
        .status()
        .expect("cargo");
    assert!(st.success());
    let elf = target_dir.join("riscv64gc-unknown-none-elf/release/ksym-kernel-demo");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("Makefile"),
        format!("KERNEL := {}\n{rule}", elf.display()),
    )
    .unwrap();
    let out = Command::new("make")
        .arg("kernel.elf")
        .current_dir(dir.path())
        .env("PATH", tools_path(root))
        .output()
        .expect("make");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let boot = Command::new("timeout")
        .args([
            "60",
            "qemu-system-riscv64",
            "-machine",
            "virt",
            "-bios",
            "default",
        ])
        .args(["-nographic", "-m", "128M", "-kernel"])
        .arg(dir.path().join("kernel.elf"))
        .output()
        .expect("qemu");
    let console = String::from_utf8_lossy(&boot.stdout).replace('\r', "");
    assert!(
        console.contains("ksym_kernel_demo::fault_here+0x") && console.contains(" src/main.rs:"),
        "{console}"
    );
}

/// The bootloader-tool recipe of docs/kernel.md, step 5, on a kernel laid
/// out as the `bootloader` crate (0.9) wants it (examples/bootimage: a JSON
/// target, no linker script, `-Zbuild-std`): `cargo run` calls `sh run.sh`,
/// which fills `.ksym` in a copy and hands the copy to `bootimage runner`,
/// which builds the disk image from it and boots it. The console shows the
/// panic's frames, symbolized by the guide's step 4 file, used as it is.
#[test]
fn bootimage_builds_the_disk_image_from_a_filled_copy() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let have = |cmd: &str| Command::new(cmd).arg("--version").output().is_ok();
    if !have("qemu-system-x86_64") || !have("bootimage") {
        // .ci/run installs bootimage; tests/kernel_demo.rs installs QEMU
        // as root.
        eprintln!("SKIPPED: no qemu-system-x86_64 or bootimage");
        return;
    }
    let out = Command::new("timeout")
        .args(["600", "cargo", "+nightly", "run", "--release", "--quiet"])
        .current_dir(root.join("examples/bootimage"))
        // The nightly of `+nightly` for every cargo bootimage runs, not
        // the toolchain of this test's own cargo.
        .env_remove("RUSTUP_TOOLCHAIN")
        .env("PATH", tools_path(root))
        .output()
        .expect("cargo");
    let console = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    let err = String::from_utf8_lossy(&out.stderr);
    // isa-debug-exit: the panic handler's 0x10 makes QEMU exit 33.
    assert_eq!(out.status.code(), Some(33), "{console}\n{err}");
    assert!(err.contains("no address moved"), "{err}");
    let frames: Vec<&str> = console
        .lines()
        .filter_map(|l| l.strip_prefix(" [<")?.split_once(">] ").map(|(_, f)| f))
        .collect();
    let names: Vec<&str> = frames
        .iter()
        .map(|f| f.split('+').next().unwrap_or(""))
        .collect();
    assert_eq!(
        names,
        [
            "core::panicking::panic_fmt",
            "ksym_bootimage_demo::deep",
            "ksym_bootimage_demo::deep",
            "ksym_bootimage_demo::deep",
            "ksym_bootimage_demo::deep",
            "kmain",
            "_start",
        ],
        "{console}"
    );
    // Lines from the kernel's own DWARF, paths relative to its crate.
    assert!(
        frames[1].ends_with(" src/main.rs:48")
            && frames[2].ends_with(" src/main.rs:50")
            && frames[5].ends_with(" src/main.rs:41"),
        "{console}"
    );
}
