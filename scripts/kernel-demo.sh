#!/usr/bin/env bash
# The kernel side, end to end: builds the bare-metal kernel of
# examples/kernel (pass 1: linked with an empty, zero-filled .ksym section),
# packs its own symbols (and, with v2, its DWARF lines) and writes them into
# that section (pass 2: ksym-pack --patch-elf; no address moves), boots it
# under QEMU virt, and prints the console, where the kernel prints its own
# symbolized backtrace. Also builds the same kernel without the reader and
# prints what the reader costs: `reader bytes: code N, tables M` (.text and
# .rodata, the reader build minus the other). Leaves
# target/kernel-demo/kernel.elf and console.txt; exits non-zero when no
# backtrace was printed.
#   KSYM_ARCH=riscv64|riscv32|aarch64|x86_64 (default riscv64)
#   KSYM_FORMAT=v2|v1|v2-nolines        (default v2: with source lines)
#   KSYM_FAULT=bug|panic                (default bug: a BUG() trap)
#   KSYM_PROFILE=release|default-release (default release: opt-level "s",
#                                       LTO; or opt-level 3, no LTO)
#   KSYM_FILL=0                         boot with .ksym never filled: the
#                                       kernel says so and prints raw frames
#   KSYM_CHECK_BUILD_ID=1               the kernel checks the table's
#                                       build-id against its own note
#   KSYM_TWO_PASS=1                     a two-pass link instead of the
#                                       patch: ksym-pack --asm, link again
#   KSYM_CFI=1                          (with KSYM_FAULT=panic) the panic
#                                       path walks by DWARF CFI (.eh_frame,
#                                       the `unwinding` crate)
#   KSYM_STALE=1                        pack the table as another build's
#                                       (--build-id 00...): with the check,
#                                       the kernel refuses it
# Installs what it needs: the Rust target (rustup; for panic, nightly's
# rust-src, since core is rebuilt with frame pointers) and QEMU (Debian's
# qemu-system-misc or qemu-system-arm, as root; exit 77 when it cannot).
set -euo pipefail
cd "$(dirname "$0")/.."
ARCH=${KSYM_ARCH:-riscv64}
FORMAT=${KSYM_FORMAT:-v2}
FAULT=${KSYM_FAULT:-bug}
# release: opt-level "s", LTO, one codegen unit; default-release: cargo's
# release defaults (opt-level 3, no LTO, 16 codegen units).
PROFILE=${KSYM_PROFILE:-release}
OUT=target/kernel-demo

case $ARCH in
    riscv64) TARGET=riscv64gc-unknown-none-elf QEMU=qemu-system-riscv64 PKG=qemu-system-misc
        QARGS=(-machine virt -bios default) ;;
    riscv32) TARGET=riscv32imac-unknown-none-elf QEMU=qemu-system-riscv32 PKG=qemu-system-misc
        QARGS=(-machine virt -bios none) ;;
    aarch64) TARGET=aarch64-unknown-none QEMU=qemu-system-aarch64 PKG=qemu-system-arm
        QARGS=(-machine virt -cpu cortex-a57) ;;
    # PVH entry (the ELF's Xen note); isa-debug-exit powers off.
    x86_64) TARGET=x86_64-unknown-none QEMU=qemu-system-x86_64 PKG=qemu-system-x86
        QARGS=(-machine q35 -device isa-debug-exit,iobase=0xf4,iosize=0x04) ;;
    *) echo "kernel-demo: KSYM_ARCH is riscv64, riscv32, aarch64 or x86_64" >&2; exit 2 ;;
esac
case $FORMAT in
    v1) features=(--features v1) ;;
    v2) features=(--features lines) ;;
    v2-nolines) features=(--features v2) ;;
    *) echo "kernel-demo: KSYM_FORMAT is v1, v2 or v2-nolines" >&2; exit 2 ;;
esac
[ "${KSYM_CHECK_BUILD_ID:-0}" = 1 ] && features+=(--features build-id-check)
TWO_PASS=${KSYM_TWO_PASS:-0}
[ "$TWO_PASS" = 1 ] && features+=(--features two-pass)
case $FAULT in
    bug) TOOLCHAIN=() BUILD_STD=() fault=() ;;
    # The panic path walks through core::panicking: core must keep frame
    # pointers, so it is rebuilt with the kernel's flags.
    panic) TOOLCHAIN=(+nightly) fault=(--features fault-panic)
        BUILD_STD=(-Zbuild-std=core -Zbuild-std-features=compiler-builtins-mem) ;;
    *) echo "kernel-demo: KSYM_FAULT is bug or panic" >&2; exit 2 ;;
esac
if [ "${KSYM_CFI:-0}" = 1 ]; then
    [ "$FAULT" = panic ] || { echo "kernel-demo: KSYM_CFI=1 walks the panic path: KSYM_FAULT=panic" >&2; exit 2; }
    # Both builds: the reader's cost stays the difference between them.
    # Unwind tables for every crate, core included (added to the target's
    # rustflags of .cargo/config.toml, which cargo merges).
    fault+=(--features cfi-unwind)
    export "CARGO_TARGET_$(echo "$TARGET" | tr a-z- A-Z_)_RUSTFLAGS=-C force-unwind-tables=yes"
fi
case $PROFILE in
    release|default-release) ;;
    *) echo "kernel-demo: KSYM_PROFILE is release or default-release" >&2; exit 2 ;;
esac

rustup "${TOOLCHAIN[@]}" target list --installed 2>/dev/null | grep -qx "$TARGET" ||
    rustup "${TOOLCHAIN[@]}" target add "$TARGET"
if [ "$FAULT" = panic ]; then
    rustup component list --toolchain nightly --installed | grep -q '^rust-src' ||
        rustup component add rust-src --toolchain nightly
fi
if ! command -v "$QEMU" >/dev/null; then
    # 77: cannot run here (the test says SKIPPED); as root it is installed.
    if [ "$(id -u)" != 0 ]; then echo "kernel-demo: needs $QEMU (apt-get install $PKG)" >&2; exit 77; fi
    bash scripts/apt-qemu.sh "$PKG"
fi

cargo build --release --quiet --bins
B=$PWD/target/release
mkdir -p "$OUT"
KT=$PWD/examples/kernel/target
# Each setting in its own target dir: the two builds never share objects.
DIR=$KT/$ARCH-$FORMAT-$FAULT-$PROFILE${KSYM_CHECK_BUILD_ID:+-idcheck}${KSYM_TWO_PASS:+-twopass}${KSYM_CFI:+-cfi}
# (Two-pass: the first link, with build.rs's empty table.)
(cd examples/kernel && unset KSYM_ASM &&
    cargo "${TOOLCHAIN[@]}" build --profile "$PROFILE" --quiet --target "$TARGET" "${BUILD_STD[@]}" \
        --no-default-features "${features[@]}" "${fault[@]}" --target-dir "$DIR" &&
    cargo "${TOOLCHAIN[@]}" build --profile "$PROFILE" --quiet --target "$TARGET" "${BUILD_STD[@]}" \
        --no-default-features "${fault[@]}" \
        --target-dir "$DIR-noreader")
LINKED=$DIR/$TARGET/$PROFILE/ksym-kernel-demo
ELF=$OUT/kernel.elf

case $FORMAT in
    v1) pack=(--format v1) ;;
    v2) pack=(--format v2) ;;
    v2-nolines) pack=(--format v2) ;;
esac
# The linked image stays as cargo made it (cargo re-creates it on every
# build); the patched copy is what boots.
if [ "${KSYM_FILL:-1}" = 0 ]; then
    echo "== $ARCH, $FAULT; KSYM_FILL=0: .ksym left unfilled"
    cp "$LINKED" "$ELF"
elif [ "$TWO_PASS" = 1 ]; then
    # docs/kernel.md, step 5, "A two-pass link": the table of the first
    # link, as assembler source, linked in by a second; its code must not
    # move (.ksym is last in linker.ld).
    case $FORMAT in v2) pack+=(--lines "$LINKED") ;; esac
    echo "== $ARCH, $FAULT; nm -n | ksym-filter | ksym-pack ${pack[*]} --asm -o ksym.S; link again with KSYM_ASM=ksym.S"
    nm -n "$LINKED" > "$OUT/pass1.nm"
    nm -n "$LINKED" | "$B/ksym-filter" | "$B/ksym-pack" "${pack[@]}" --asm -o "$OUT/ksym.S"
    (cd examples/kernel &&
        KSYM_ASM=$(realpath "../../$OUT/ksym.S") cargo "${TOOLCHAIN[@]}" build --profile "$PROFILE" --quiet \
            --target "$TARGET" "${BUILD_STD[@]}" --no-default-features "${features[@]}" "${fault[@]}" \
            --target-dir "$DIR")
    diff <(grep ' [Tt] ' "$OUT/pass1.nm") <(nm -n "$LINKED" | grep ' [Tt] ') >/dev/null ||
        { echo "kernel-demo: the second link moved the kernel's code" >&2; exit 1; }
    cp "$LINKED" "$ELF"
else
    case $FORMAT in v2) pack+=(--lines "$LINKED") ;; esac
    # Another build's table, as far as its build-id says.
    [ "${KSYM_STALE:-0}" = 1 ] && pack+=(--build-id 0000000000000000000000000000000000000000)
    echo "== $ARCH, $FAULT; pass 2: nm -n | ksym-filter | ksym-pack ${pack[*]} --patch-elf LINKED -o $ELF"
    nm -n "$LINKED" | "$B/ksym-filter" | "$B/ksym-pack" "${pack[@]}" --patch-elf "$LINKED" -o "$ELF"
fi

# Section fields from readelf (name, type, address, offset, size), since
# host objcopy may not know the machine.
field() { echo $((16#$(readelf -SW "$1" | sed 's/^ *\[ *[0-9]*\] *//' | awk -v s="$2" -v f="$3" '$1 == s { print $f }'))); }
NOREADER=$DIR-noreader/$TARGET/$PROFILE/ksym-kernel-demo
text=$(field "$ELF" .text 5); rodata=$(field "$ELF" .rodata 5)
text0=$(field "$NOREADER" .text 5); rodata0=$(field "$NOREADER" .rodata 5)
dd if="$ELF" of="$OUT/ksym.bin" bs=4096 iflag=skip_bytes,count_bytes \
    skip="$(field "$ELF" .ksym 4)" count="$(field "$ELF" .ksym 5)" status=none
[ "${KSYM_FILL:-1}" = 0 ] || "$B/ksym-pack" --check "$OUT/ksym.bin" | sed 's/; sections:[^;]*//'
echo "== sizes: .text $text bytes, .rodata $rodata bytes; without the reader .text $text0, .rodata $rodata0"
echo "reader bytes: code $((text - text0)), tables $((rodata - rodata0))"

echo "== $QEMU ${QARGS[*]} -kernel $ELF"
# The console decides, not QEMU's status: x86_64's isa-debug-exit always
# exits non-zero ((value << 1) | 1).
{ timeout 60 "$QEMU" "${QARGS[@]}" -nographic -m 128M -kernel "$ELF" </dev/null || true; } |
    tr -d '\r' | sed -n 's/.*\(ksym demo kernel\)/\1/; /ksym demo kernel/,$p' | tee "$OUT/console.txt"
grep -q '^Call Trace:' "$OUT/console.txt" &&
    { [ "${KSYM_FILL:-1}" = 0 ] || [ "${KSYM_STALE:-0}" = 1 ] || grep -q 'fault_here' "$OUT/console.txt"; } ||
    { echo "kernel-demo: no backtrace on the console" >&2; exit 1; }
