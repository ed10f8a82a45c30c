#!/usr/bin/env bash
# Runs each cargo-fuzz target for a given time (default 60 s) or a number of
# runs, then minimises its corpus under fuzz/corpus/TARGET.
#   scripts/fuzz.sh [SECONDS] [TARGET...]          e.g. scripts/fuzz.sh 1800 reader
#   RUNS=10000000 scripts/fuzz.sh 0 reader         (stop after N executions)
# Needs the nightly toolchain and cargo-fuzz (cargo install cargo-fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(reader reader_v2 lines nm_line roundtrip resolve_stream reports module_space kmod_elf elf_functions elf_lines perf_map process_maps gzip)
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
# Input caps per target: every code path is reached well below them, and a
# run's cost grows with its input (roundtrip packs it, resolve_stream
# resolves it), so small inputs keep each target above 2,000 runs/s.
max_len() {
    case $1 in
        roundtrip) echo 256 ;;
        resolve_stream | reports) echo 512 ;;
        nm_line) echo 65536 ;;
        kmod_elf | elf_functions | elf_lines) echo 32768 ;;
        *) echo 4096 ;;
    esac
}
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t"
    args=(-max_len="$(max_len "$t")" -print_final_stats=1)
    [ "$secs" -gt 0 ] && args+=(-max_total_time="$secs")
    [ -n "${RUNS:-}" ] && args+=(-runs="$RUNS")
    echo "== $t"
    cargo +nightly fuzz run -O "$t" "fuzz/corpus/$t" -- "${args[@]}" 2>&1 |
        grep -E '^(stat::|==[0-9]+== ERROR|SUMMARY|Done)|panicked|crash-' || true
    cargo +nightly fuzz cmin "$t" "fuzz/corpus/$t" >/dev/null 2>&1 || true
    echo "corpus: $(ls "fuzz/corpus/$t" | wc -l) files; crashes: $(ls "fuzz/artifacts/$t" 2>/dev/null | wc -l)"
done
