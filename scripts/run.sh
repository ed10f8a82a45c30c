#!/usr/bin/env bash
# The main job on this machine: /proc/kallsyms -> ksym-filter -> ksym-pack
# (v1 and v2) -> ksym-resolve. Falls back to the real sample shipped in tests/data when
# /proc/kallsyms is unreadable or its addresses are hidden (kptr_restrict).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bins
B=target/release
out=target/run
mkdir -p "$out"

if [ -r /proc/kallsyms ] && grep -qv '^0\{8,16\} ' /proc/kallsyms; then
    echo "== input: /proc/kallsyms of $(uname -r)"
    "$B/ksym-filter" /proc/kallsyms > "$out/kallsyms.txt"
else
    echo "== input: tests/data/kallsyms-6.18-sample.txt.xz (/proc/kallsyms unreadable or zeroed)"
    xz -dc tests/data/kallsyms-6.18-sample.txt.xz | "$B/ksym-filter" > "$out/kallsyms.txt"
fi
echo "== ksym-filter: $(wc -l < "$out/kallsyms.txt") text symbols -> $out/kallsyms.txt"
"$B/ksym-pack" -v -o "$out/kallsyms.bin" "$out/kallsyms.txt"
"$B/ksym-pack" --check "$out/kallsyms.bin"
"$B/ksym-pack" --format v2 --release "$(uname -r)" -v -o "$out/kallsyms.v2.bin" "$out/kallsyms.txt"
"$B/ksym-pack" --check "$out/kallsyms.v2.bin"
# v2 gives back exactly what ksym-filter wrote.
"$B/ksym-pack" --dump "$out/kallsyms.v2.bin" | cmp - "$out/kallsyms.txt"
echo "== ksym-pack --dump of the v2 blob equals ksym-filter's output"

echo "== ksym-resolve: a few symbols' addresses, +0x10, and one below all symbols"
{
    awk 'NR % 20000 == 2 { print $1 }' "$out/kallsyms.txt" | while read -r a; do
        echo "$a"
        printf '%x\n' $((0x$a + 0x10))
    done
    echo 0x1000
} > "$out/addresses.txt"
"$B/ksym-resolve" "$out/kallsyms.bin" "$out/addresses.txt" | tee "$out/resolved.v1.txt"
echo "== the same addresses on the v2 blob"
"$B/ksym-resolve" "$out/kallsyms.v2.bin" "$out/addresses.txt" | tee "$out/resolved.v2.txt"

# Source lines need an ELF file with DWARF (a -dbg vmlinux); this machine's
# kernel rarely has one at hand, so the demo uses the committed test program.
echo "== source lines: ksym-pack --format v2 --lines tests/data/lines/inl.elf (a C program, cc -O2 -g)"
"$B/ksym-pack" --format v2 -v --lines tests/data/lines/inl.elf -o "$out/inl.v2.bin" tests/data/lines/inl.elf.syms
"$B/ksym-pack" --check "$out/inl.v2.bin"
printf '0x11c8\n0x12ec\n' | "$B/ksym-resolve" --strip-prefix /build/ksym "$out/inl.v2.bin"
echo "== an oops line, as scripts/decode_stacktrace.sh prints it"
echo '[   12.345681]  ? checked+0x2c/0x54' | "$B/ksym-resolve" --strip-prefix /build/ksym "$out/inl.v2.bin"
