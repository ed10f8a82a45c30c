#!/usr/bin/env bash
# The kernel side, end to end: builds the bare-metal riscv64 kernel of
# examples/kernel (pass 1: linked with an empty, zero-filled .ksym section),
# packs its own symbols (and, with v2, its DWARF lines) and writes them into
# that section (pass 2: ksym-pack --patch-elf; no address moves), boots it
# under QEMU virt with OpenSBI, and prints the console, where the kernel
# prints its own symbolized backtrace. Leaves target/kernel-demo/kernel.elf
# and console.txt; exits non-zero when no backtrace was printed.
#   bash scripts/kernel-demo.sh            (v2 with source lines)
#   KSYM_FORMAT=v1|v2-nolines bash scripts/kernel-demo.sh
# Installs what it needs: the riscv64gc-unknown-none-elf target (rustup)
# and QEMU (Debian's qemu-system-misc, as root).
set -euo pipefail
cd "$(dirname "$0")/.."
FORMAT=${KSYM_FORMAT:-v2}
OUT=target/kernel-demo
TARGET=riscv64gc-unknown-none-elf

rustup target list --installed 2>/dev/null | grep -qx "$TARGET" || rustup target add "$TARGET"
if ! command -v qemu-system-riscv64 >/dev/null; then
    # 77: cannot run here (the test says SKIPPED); as root it is installed.
    if [ "$(id -u)" != 0 ]; then echo "kernel-demo: needs qemu-system-riscv64 (apt-get install qemu-system-misc)" >&2; exit 77; fi
    apt-get install -y -qq qemu-system-misc >/dev/null 2>&1 ||
        { apt-get update -qq && apt-get install -y -qq qemu-system-misc >/dev/null; }
fi

cargo build --release --quiet --bins
B=$PWD/target/release
mkdir -p "$OUT"
(cd examples/kernel && cargo build --release --quiet &&
    cargo build --release --quiet --no-default-features --target-dir target/noreader)
K=examples/kernel/target/$TARGET/release/ksym-kernel-demo
cp "$K" "$OUT/kernel.elf"
ELF=$OUT/kernel.elf

case $FORMAT in
    v1) pack=(--format v1) ;;
    v2) pack=(--format v2 --lines "$ELF") ;;
    v2-nolines) pack=(--format v2) ;;
    *) echo "kernel-demo: KSYM_FORMAT is v1, v2 or v2-nolines" >&2; exit 2 ;;
esac
echo "== pass 2: nm -n | ksym-filter | ksym-pack ${pack[*]} --patch-elf $ELF"
nm -n "$ELF" | "$B/ksym-filter" | "$B/ksym-pack" "${pack[@]}" --patch-elf "$ELF"

# Sizes: the blob beside the code, and the reader's own code. Section
# fields from readelf (name, type, address, offset, size), since host
# objcopy may not know the machine.
field() { echo $((16#$(readelf -SW "$1" | sed 's/^ *\[ *[0-9]*\] *//' | awk -v s="$2" -v f="$3" '$1 == s { print $f }'))); }
NOREADER=examples/kernel/target/noreader/$TARGET/release/ksym-kernel-demo
text=$(field "$ELF" .text 5); rodata=$(field "$ELF" .rodata 5)
text0=$(field "$NOREADER" .text 5); rodata0=$(field "$NOREADER" .rodata 5)
dd if="$ELF" of="$OUT/ksym.bin" bs=4096 iflag=skip_bytes,count_bytes \
    skip="$(field "$ELF" .ksym 4)" count="$(field "$ELF" .ksym 5)" status=none
"$B/ksym-pack" --check "$OUT/ksym.bin" | sed 's/; sections:[^;]*//'
echo "== sizes: .text $text bytes, .rodata $rodata bytes; without the reader .text $text0, .rodata $rodata0 (the reader: $((text - text0)) + $((rodata - rodata0)) bytes)"

echo "== qemu-system-riscv64 -machine virt -bios default -kernel $ELF"
timeout 60 qemu-system-riscv64 -machine virt -bios default -nographic -m 128M \
    -kernel "$ELF" </dev/null | tr -d '\r' | sed -n '/ksym demo kernel/,$p' | tee "$OUT/console.txt"
grep -q '^Call Trace:' "$OUT/console.txt" && grep -q 'fault_here' "$OUT/console.txt" ||
    { echo "kernel-demo: no backtrace on the console" >&2; exit 1; }
