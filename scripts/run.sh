#!/usr/bin/env bash
# The main job on this machine: /proc/kallsyms -> ksym-filter -> ksym-pack ->
# ksym-resolve. Falls back to the real sample shipped in tests/data when
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

echo "== ksym-resolve: a few symbols' addresses, +0x10, and one below all symbols"
{
    awk 'NR % 20000 == 2 { print $1 }' "$out/kallsyms.txt" | while read -r a; do
        echo "$a"
        printf '%x\n' $((0x$a + 0x10))
    done
    echo 0x1000
} | "$B/ksym-resolve" "$out/kallsyms.bin"
