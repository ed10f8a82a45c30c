#!/usr/bin/env bash
# ksym beside its peers on one ELF with DWARF (README "Why ksym"), each run
# in turn on the same addresses: packing (ksym-pack --elf ELF --lines, the
# ELF's own symbols with their sizes, against llvm-gsymutil --convert) and N random .text addresses symbolized
# with inline frames by ksym-resolve, llvm-symbolizer --inlines,
# llvm-gsymutil --address and blazecli (when installed:
# `cargo install blazecli`). Prints one Markdown table: CPU seconds and
# peak RSS from GNU time, lookups per CPU second, output bytes. Then
# scripts/lines-agreement.py: ksym's frames against llvm-symbolizer's.
#   usage: scripts/compare.sh ELF [N]     (N default 100000, seed 1)
# Needs: the release tools (built here), nm, readelf, /usr/bin/time,
# llvm-symbolizer and llvm-gsymutil (LLVM 14 or later).
set -euo pipefail
ELF=$(realpath "$1")
N=${2:-100000}
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin ksym-filter --bin ksym-pack --bin ksym-resolve
B=$PWD/target/release
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
tool() { for t in "$@"; do command -v "$t" && return; done; echo "compare.sh: none of $* found" >&2; exit 1; }
SYMBOLIZER=$(tool llvm-symbolizer llvm-symbolizer-14)
GSYMUTIL=$(tool llvm-gsymutil llvm-gsymutil-14)

# "LABEL<TAB>CPU seconds<TAB>peak KiB" of one command, its stdout to $W/out.
measure() {
    local label=$1; shift
    /usr/bin/time -f "%U %S %M" -o "$W/time" "$@" > "$W/out"
    read -r u s m < "$W/time"
    printf '%s\t%s\t%s\n' "$label" "$(echo "$u + $s" | bc)" "$m"
}

# The text symbols' addresses, for lines-agreement.py's address + 1 probes.
nm -n "$ELF" | "$B/ksym-filter" > "$W/syms.txt"
measure pack-ksym "$B/ksym-pack" --elf "$ELF" --lines "$ELF" -o "$W/k.bin" > "$W/pack"
measure pack-gsym "$GSYMUTIL" --convert "$ELF" --out-file "$W/g.gsym" >> "$W/pack"

python3 - "$ELF" "$N" > "$W/addrs" <<'EOF'
import random, subprocess, sys
out = subprocess.run(["readelf", "-SW", sys.argv[1]], capture_output=True, text=True, check=True).stdout
for line in out.splitlines():
    f = line.replace("[ ", "[").split()
    if len(f) > 5 and f[1] == ".text":
        lo, size = int(f[3], 16), int(f[5], 16)
random.seed(1)
for _ in range(int(sys.argv[2])):
    print(f"0x{random.randrange(lo, lo + size):x}")
EOF

{
    measure ksym-resolve "$B/ksym-resolve" "$W/k.bin" < "$W/addrs"; wc -c < "$W/out"
    measure llvm-symbolizer "$SYMBOLIZER" --inlines --obj="$ELF" < "$W/addrs"; wc -c < "$W/out"
    # One process each, as ksym-resolve runs: llvm-gsymutil reads the
    # addresses from a response file (its --addresses-from-stdin opens the
    # GSYM file again for every line), blazecli as arguments (100,000 fit
    # the kernel's limit on an argument list).
    sed 's/^/--address=/' "$W/addrs" > "$W/gaddrs"
    measure llvm-gsymutil "$GSYMUTIL" "$W/g.gsym" "@$W/gaddrs"; wc -c < "$W/out"
    if command -v blazecli > /dev/null; then
        # shellcheck disable=SC2046
        measure blazecli blazecli symbolize elf --path "$ELF" $(cat "$W/addrs"); wc -c < "$W/out"
    fi
} | paste - - > "$W/runs"

echo "## $ELF: $(wc -l < "$W/syms.txt") text symbols, $N random .text addresses"
echo
echo "| | CPU s | peak RSS | output | lookups / CPU s |"
echo "|---|---|---|---|---|"
while IFS=$'\t' read -r label cpu kib bytes; do
    rate=$(echo "$N / ($cpu + 0.0001)" | bc)
    echo "| $label | $cpu | $((kib / 1024)) MiB | $bytes B | $rate |"
done < "$W/runs"
while IFS=$'\t' read -r label cpu kib; do
    case $label in pack-ksym) f=$W/k.bin ;; *) f=$W/g.gsym ;; esac
    echo "| $label | $cpu | $((kib / 1024)) MiB | $(stat -c %s "$f") B (file) | |"
done < "$W/pack"
# Both files compressed at rest: ksym's as a store keeps it (FORMAT.md §17).
"$B/ksym-pack" --elf "$ELF" --lines "$ELF" --gzip -o "$W/k.bin.gz"
echo "| compressed: ksym-pack --gzip / GSYM through gzip -9 | | | $(stat -c %s "$W/k.bin.gz") B / $(gzip -9 -c "$W/g.gsym" | wc -c) B | |"
echo
python3 scripts/lines-agreement.py "$ELF" "$W/k.bin" "$W/syms.txt" 20000
