#!/usr/bin/env bash
# Stage timings, peak memory and resolve rates on real inputs, side by side
# with baselines built from this repo (benches/baselines/): a binary
# search over the u64 addresses with no names (the floor; also printing
# names from the symbol list held in plain memory) and a bcc-style
# Vec<(u64, String)> resolver; and ksym-resolve on a v2 blob beside the same
# on v1. Prints ratios; asserts nothing.
#   scripts/bench.sh            (corpus files from ../shared/corpus, else tests/data samples)
#   KSYM_PROFILE=dist scripts/bench.sh   (the same with the dist profile's binaries)
#   SCALE="1000000 3000000 10000000" scripts/bench.sh   (generated lists for the scaling table;
#   SCALE= skips them)
#   KSYM_VMLINUX=path/to/vmlinux scripts/bench.sh   (also source lines: ksym-pack --lines, sizes
#   beside llvm-gsymutil, rates beside llvm-symbolizer, agreement with it);
#   KSYM_VMLINUX=fetch downloads Debian's linux-image-6.1.0-56-amd64-dbg (858 MB) into
#   target/bench first; LINES_ONLY=1 skips the symbol benchmarks)
#   KSYM_USER=fetch scripts/bench.sh   (user-space binaries, packed with
#   ksym-pack --elf --lines: Debian's libc with libc6-dbg and libstdc++'s
#   debug build, both downloaded into target/bench, and this build's own
#   ksym-resolve; or KSYM_USER="BINARY[:DEBUGDIR] ..."; beside llvm-gsymutil,
#   llvm-symbolizer and blazecli; USER_ONLY=1 skips everything else;
#   KSYM_INSTR=1 also counts ksym-resolve's and llvm-gsymutil's instructions
#   under valgrind's callgrind, which a machine short of CPU does not move)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${USER_ONLY:-}" ] && { LINES_ONLY=1; KSYM_VMLINUX=""; }
# KSYM_PROFILE=dist measures the release binaries of docs/development.md "Packages".
PROFILE=${KSYM_PROFILE:-release}
cargo build --profile "$PROFILE" --quiet --bins --examples
B=target/$PROFILE
E=target/$PROFILE/examples
W=target/bench
mkdir -p "$W"
CORPUS=${KSYM_CORPUS:-../shared/corpus}

# once IN OUT CMD...: runs CMD once with IN as stdin and OUT as stdout; sets
# W1 (wall s, from bash's microsecond clock, since time -v rounds to 10 ms;
# it includes starting /usr/bin/time, about 1 ms), C1 (user + system CPU s)
# and R1 (peak RSS, KiB).
once() {
    local in=$1 out=$2 t0 t1; shift 2
    t0=$EPOCHREALTIME
    /usr/bin/time -v -o "$W/time.txt" "$@" < "$in" > "$out"
    t1=$EPOCHREALTIME
    W1=$(awk "BEGIN { print $t1 - $t0 }")
    R1=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$W/time.txt")
    C1=$(awk -F': ' '/(User|System) time/ { c += $2 } END { print c }' "$W/time.txt")
}

# measure LABEL CMD... (stdin/stdout as redirected by the caller): runs CMD
# ${RUNS:-5} times (this VM's wall times drift; the best run is the signal) and
# sets WALL (s, best) and RSS (KiB, largest). Stdin is saved first so every run
# reads all of it.
measure() {
    local label=$1; shift
    local in="$W/stdin.$$" out="$W/stdout.$$"
    cat > "$in"
    WALL=""; RSS=0
    for _ in $(seq "${RUNS:-5}"); do
        once "$in" "$out" "$@"
        if [ -z "$WALL" ] || awk "BEGIN { exit !($W1 < $WALL) }"; then WALL=$W1; fi
        [ "$R1" -gt "$RSS" ] && RSS=$R1
    done
    cat "$out"
    rm -f "$in" "$out"
    printf '%-40s %8.4f s %9d KiB  (best of %d)\n' "$label" "$WALL" "$RSS" "${RUNS:-5}" >&2
}

# instr INPUT CMD...: the instructions CMD executes reading INPUT, its
# output thrown away (callgrind's total; a few seconds to a minute).
instr() {
    local in=$1; shift
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" < "$in" 2>&1 > /dev/null |
        awk '/ refs:/ { gsub(",", "", $NF); print $NF }'
}

# race INPUT LABEL CMD [LABEL CMD]...: runs the commands in turn, ${RUNS:-7}
# rounds, each reading INPUT, so that the drift of this VM hits them alike;
# sets WALLS[i] (s, best), CPUS[i] (user + system s, best) and RSSES[i]
# (KiB, largest). CMD is split on blanks.
race() {
    local in=$1; shift
    local labels=() cmds=() i
    while [ $# -gt 0 ]; do labels+=("$1"); cmds+=("$2"); shift 2; done
    WALLS=(); CPUS=(); RSSES=()
    for _ in $(seq "${RUNS:-7}"); do
        for i in "${!cmds[@]}"; do
            # shellcheck disable=SC2086
            once "$in" /dev/null ${cmds[$i]}
            if [ -z "${WALLS[$i]:-}" ] || awk "BEGIN { exit !($W1 < ${WALLS[$i]}) }"; then WALLS[$i]=$W1; fi
            if [ -z "${CPUS[$i]:-}" ] || awk "BEGIN { exit !($C1 < ${CPUS[$i]}) }"; then CPUS[$i]=$C1; fi
            if [ -z "${RSSES[$i]:-}" ] || [ "$R1" -gt "${RSSES[$i]}" ]; then RSSES[$i]=$R1; fi
        done
    done
    for i in "${!cmds[@]}"; do
        printf '%-40s %8.4f s %9d KiB  (best of %d, runs interleaved)\n' "${labels[$i]}" "${WALLS[$i]}" "${RSSES[$i]}" "${RUNS:-7}" >&2
    done
}

input() { # NAME -> decompressed path
    if [ -f "$CORPUS/$1.xz" ]; then xz -dc "$CORPUS/$1.xz" > "$W/$1"; else xz -dc "tests/data/$2" > "$W/$1"; fi
    echo "$W/$1"
}


[ -n "${LINES_ONLY:-}" ] || for spec in "kallsyms-6.18-x86_64.txt:kallsyms-6.18-sample.txt.xz:perf-script-kallsyms-6.18.F-ip.txt" \
            "System.map-6.1.0-56-amd64:System.map-6.1.0-56-sample.xz:"; do
    IFS=: read -r name sample capture <<< "$spec"
    src=$(input "$name" "$sample")
    echo "== $name ($(wc -l < "$src") lines)" >&2
    measure "ksym-filter" "$B/ksym-filter" "$src" < /dev/null > "$W/$name.filt"
    measure "ksym-pack (optimal)" "$B/ksym-pack" -o "$W/$name.bin" "$W/$name.filt" < /dev/null
    measure "ksym-pack --tokens seed" "$B/ksym-pack" --tokens seed -o "$W/$name.seed.bin" "$W/$name.filt" < /dev/null
    measure "ksym-pack --format v2" "$B/ksym-pack" --format v2 -o "$W/$name.v2.bin" "$W/$name.filt" < /dev/null
    measure "ksym-pack --check (v2)" "$B/ksym-pack" --check "$W/$name.v2.bin" < /dev/null > /dev/null
    n=$(wc -l < "$W/$name.filt")
    for b in bin seed.bin v2.bin; do
        sz=$(stat -c %s "$W/$name.$b")
        printf '  blob %-9s %9d bytes  %6.2f B/symbol\n' "$b" "$sz" "$(echo "$sz / $n" | bc -l)" >&2
    done
    "$B/ksym-tokens" --summary "$W/$name.filt" >&2

    # 1M addresses: uniform over the text section, and realistic (a perf
    # capture's kernel frames in capture order, or hot symbols + offsets).
    cap=""
    [ -n "$capture" ] && [ -f "$CORPUS/$capture.xz" ] && cap="$CORPUS/$capture.xz"
    python3 - "$W/$name.filt" "$W/$name.random" "$W/$name.realistic" "$cap" <<'PY'
import lzma, random, sys
syms = [int(l.split(" ", 1)[0], 16) for l in open(sys.argv[1])]
etext = [int(l.split(" ", 1)[0], 16) for l in open(sys.argv[1]) if l.rstrip().endswith(" _etext")]
lo, hi = syms[0], (etext[0] if etext else syms[-1])
rng = random.Random(1)
N = 1_000_000
with open(sys.argv[2], "w") as f:
    f.writelines("%x\n" % rng.randrange(lo, hi) for _ in range(N))
if sys.argv[4]:
    with lzma.open(sys.argv[4], "rt") as f:
        caps = [l.strip() for l in f if l.strip().startswith("ffffffff")]
else:
    hot = rng.sample(syms, min(2000, len(syms)))
    caps = ["%x" % (a + rng.randrange(0, 0x80)) for a in (rng.choice(hot) for _ in range(50_000))]
with open(sys.argv[3], "w") as f:
    f.writelines(caps[i % len(caps)] + "\n" for i in range(N))
PY
    blobsz=$(stat -c %s "$W/$name.bin")
    for kind in random realistic; do
        race "$W/$name.$kind" \
            "ksym-resolve ($kind)" "$B/ksym-resolve $W/$name.bin" \
            "floor: u64 binary search ($kind)" "$E/baseline-floor $W/$name.bin" \
            "bcc-style Vec<(u64,String)> ($kind)" "$E/baseline-naive $W/$name.filt" \
            "ksym-resolve on v2 ($kind)" "$B/ksym-resolve $W/$name.v2.bin" \
            "floor printing names ($kind)" "$E/baseline-floor $W/$name.bin $W/$name.filt"
        k_wall=${WALLS[0]}; k_rss=${RSSES[0]}; f_wall=${WALLS[1]}; n_wall=${WALLS[2]}; v_wall=${WALLS[3]}; v_rss=${RSSES[3]}; fn_wall=${WALLS[4]}
        python3 -c "
k, f, n, v, fn = max($k_wall, 1e-3), max($f_wall, 1e-3), max($n_wall, 1e-3), max($v_wall, 1e-3), max($fn_wall, 1e-3)
print('  %-9s ksym %.2f M addr/s | floor %.2f M/s (with names %.2f M/s) | bcc-style %.2f M/s | ksym/floor time %.2fx (with names %.2fx), bcc-style/ksym time %.2fx | resolve RSS %d KiB = blob %d KiB + %d KiB' % (
    '$kind', 1/k, 1/f, 1/fn, 1/n, k/f, k/fn, n/k, $k_rss, $blobsz // 1024, $k_rss - $blobsz // 1024))
print('  %-9s v2: %.2f M addr/s, v2/v1 time %.2fx, RSS %d KiB' % ('$kind', 1/v, v/k, $v_rss))" >&2
    done
done

# Kernel logs: 1M lines of mixed reports (call traces behind the printk,
# caller-id and journalctl prefixes, lockdep and WARNING lines, RIP and
# register dumps, one x86 `Code:` line per report, and plain log lines),
# naming 2,000 of the kallsyms sample's functions (a log repeats its call
# traces; the realistic address streams above use 2,000 hot symbols too)
# with their real sizes. Beside
# ksym-resolve, KSYM_BASELINE_RESOLVE=path/to/an/older/ksym-resolve races
# that binary on the same stream (before/after ratios).
# The worst case beside it: the same log naming every function of the
# sample (a name search each, until ksym-resolve indexes the blob's names),
# and that log without its `Code:` lines (the name searches alone).
if [ -z "${LINES_ONLY:-}" ] && [ -f "$W/kallsyms-6.18-x86_64.txt.filt" ]; then
  for log in mixed worst worst.nocode; do
    [ "$log" = worst.nocode ] && grep -v 'Code: ' "$W/dmesg.worst" > "$W/dmesg.worst.nocode"
    [ "$log" = worst.nocode ] || python3 - "$W/kallsyms-6.18-x86_64.txt.filt" "$W/dmesg.$log" "$log" <<'PY'
import random, sys
rows = [l.split(" ", 2) for l in open(sys.argv[1])]
rows = [(int(a, 16), n.strip()) for a, t, n in rows if t in "tT"]
funcs = [(n, rows[i + 1][0] - a) for i, (a, n) in enumerate(rows[:-1]) if 0 < rows[i + 1][0] - a < 1 << 16]
rng = random.Random(1)
if sys.argv[3] == "mixed":
    funcs = rng.sample(funcs, 2000)
prefixes = ["[%5d.%06d] ", "[%5d.%06d][    C%d] ", "Nov 24 10:00:01 host kernel: [%5d.%06d] "]
code = "Code: " + " ".join("%02x" % rng.randrange(256) for _ in range(42)) + " <0f> 0b " + " ".join("%02x" % rng.randrange(256) for _ in range(20))
def ref():
    n, size = rng.choice(funcs)
    return "%s+0x%x/0x%x" % (n, rng.randrange(size), size)
out = []
t = 0
while len(out) < 1_000_000:
    p = rng.choice(prefixes)
    t += 1
    pre = p % ((t // 1000, t % 1000000, t % 4) if "C%d" in p else (t // 1000, t % 1000000))
    kind = rng.random()
    if kind < 0.04:
        out += [pre + "RIP: 0010:" + ref(), pre + code,
                pre + "RSP: 0018:ffffc90000003e28 EFLAGS: 00010246",
                pre + "RAX: 0000000000000000 RBX: ffff888003e2f098 RCX: 0000000000000000",
                pre + "Call Trace:", pre + " <TASK>"]
    elif kind < 0.70:
        out.append(pre + (" ? " if rng.random() < 0.3 else " ") + ref())
    elif kind < 0.75:
        out.append(pre + " #0: ffff888003e2f098 (&tty->ldisc_sem){++++}-{0:0}, at: " + ref())
    elif kind < 0.77:
        out.append(pre + "WARNING: CPU: 0 PID: 1 at fs/read_write.c:458 " + ref())
    else:
        out.append(pre + "usb 1-1: new high-speed USB device number %d using xhci_hcd" % t)
open(sys.argv[2], "w").write("\n".join(out[:1_000_000]) + "\n")
PY
    echo "== $log kernel log ($(wc -l < "$W/dmesg.$log") lines)" >&2
    k="$W/kallsyms-6.18-x86_64.txt"
    if [ -n "${KSYM_BASELINE_RESOLVE:-}" ]; then
        race "$W/dmesg.$log" \
            "ksym-resolve ($log log)" "$B/ksym-resolve $k.bin" \
            "ksym-resolve on v2 ($log log)" "$B/ksym-resolve $k.v2.bin" \
            "baseline ksym-resolve ($log log)" "$KSYM_BASELINE_RESOLVE $k.bin"
        python3 -c "
k, v, b = max(${WALLS[0]}, 1e-3), max(${WALLS[1]}, 1e-3), max(${WALLS[2]}, 1e-3)
print('  $log log: ksym %.2f M lines/s (v2 %.2f) | baseline %.2f M lines/s | rate ksym/baseline %.2fx (v2 %.2fx)' % (1/k, 1/v, 1/b, b/k, b/v))" >&2
    else
        race "$W/dmesg.$log" "ksym-resolve ($log log)" "$B/ksym-resolve $k.bin" \
            "ksym-resolve on v2 ($log log)" "$B/ksym-resolve $k.v2.bin"
        python3 -c "print('  $log log: ksym %.2f M lines/s (v2 %.2f)' % (1/max(${WALLS[0]}, 1e-3), 1/max(${WALLS[1]}, 1e-3)))" >&2
    fi
  done
fi

# Scaling: generated symbol lists (names reuse the kallsyms vocabulary).
[ -n "${LINES_ONLY:-}" ] || for n in ${SCALE-1000000 3000000}; do
    python3 - "$W/kallsyms-6.18-x86_64.txt.filt" "$n" > "$W/gen.txt" <<'PY'
import sys
names = [l.rstrip("\n").split(" ", 2)[2] for l in open(sys.argv[1])]
n = int(sys.argv[2])
out = sys.stdout
a = 0xffff800000000000  # room for 10M+ symbols below 2^64
for i in range(n):
    out.write("%016x T %s_%d\n" % (a, names[i % len(names)], i // len(names)))
    a += 16 + (i * 7919) % 400
PY
    RUNS=$([ "$n" -le 3000000 ] && echo 3 || echo 1) measure "ksym-pack, $n generated symbols" "$B/ksym-pack" -o "$W/gen.bin" "$W/gen.txt" < /dev/null
    sz=$(stat -c %s "$W/gen.bin")
    python3 -c "print('  n=%d: %.2f s, %.0f ns/symbol, peak RSS %.2fx the blob (%d bytes)' % ($n, $WALL, $WALL * 1e9 / $n, $RSS * 1024 / $sz, $sz))" >&2
done

# Source lines and inline frames (docs/FORMAT.md §15), on a vmlinux with DWARF.
V=${KSYM_VMLINUX:-}
if [ "$V" = fetch ]; then
    V="$W/dbg/usr/lib/debug/boot/vmlinux-6.1.0-56-amd64"
    if [ ! -f "$V" ]; then
        mkdir -p "$W/dbg"
        (cd "$W/dbg" && apt-get download linux-image-6.1.0-56-amd64-dbg &&
            dpkg-deb --fsys-tarfile linux-image-6.1.0-56-amd64-dbg_*.deb |
            tar -x ./usr/lib/debug/boot/vmlinux-6.1.0-56-amd64 && rm -f ./*.deb)
    fi
fi
if [ -n "$V" ]; then
    echo "== source lines: $V" >&2
    nm -n "$V" | "$B/ksym-filter" > "$W/vmlinux.filt"
    RUNS=${LINES_RUNS:-3} measure "ksym-pack --format v2 --lines" "$B/ksym-pack" --format v2 --lines "$V" -o "$W/vmlinux.lines.bin" "$W/vmlinux.filt" < /dev/null
    lines_sz=$("$B/ksym-pack" --check "$W/vmlinux.lines.bin" | grep -o ' lines [0-9]*$' | awk '{print $2}')
    LLVM_BIN=$(dirname "$(command -v llvm-symbolizer || echo /usr/lib/llvm-14/bin/x)")
    GSYMUTIL=$(command -v llvm-gsymutil || ls /usr/lib/llvm-*/bin/llvm-gsymutil 2>/dev/null | tail -1 || true)
    if [ -n "$GSYMUTIL" ]; then
        RUNS=1 measure "llvm-gsymutil --convert" "$GSYMUTIL" --convert "$V" --out-file "$W/vmlinux.gsym" < /dev/null > /dev/null
        gsym_sz=$(stat -c %s "$W/vmlinux.gsym")
        python3 -c "print('  lines section %d bytes; llvm-gsymutil %d bytes: %.3fx' % ($lines_sz, $gsym_sz, $lines_sz / $gsym_sz))" >&2
    else
        echo "  lines section $lines_sz bytes (llvm-gsymutil not installed)" >&2
    fi
    # Streams: 1M uniform over .text; 1M realistic (the perf-mix capture's
    # kernel frames, mapped by name+offset onto this vmlinux's symbols).
    python3 - "$V" "$W/vmlinux.filt" "$CORPUS/perf-mix.script.txt.xz" "$W/lines" <<'PY'
import lzma, os, random, re, subprocess, sys
v, filt, cap, out = sys.argv[1:5]
sec = subprocess.run(["readelf", "-SW", v], capture_output=True, text=True).stdout
for l in sec.splitlines():
    f = l.replace("[ ", "[").split()
    if len(f) > 5 and f[1] == ".text":
        lo, hi = int(f[3], 16), int(f[3], 16) + int(f[5], 16)
rng = random.Random(1)
rand = [rng.randrange(lo, hi) for _ in range(1_000_000)]
rows = [l.split() for l in open(filt)]
syms = {}
for i, (a, t, n) in enumerate(rows):
    if n not in syms and i + 1 < len(rows):
        syms[n] = (int(a, 16), int(rows[i + 1][0], 16) - int(a, 16))
real = []
if os.path.exists(cap):
    for l in lzma.open(cap, "rt"):
        m = re.match(r"\s+[0-9a-f]+ (\S+)\+0x([0-9a-f]+) \(\[kernel.kallsyms\]\)", l)
        if m and m.group(1) in syms and int(m.group(2), 16) < syms[m.group(1)][1]:
            real.append(syms[m.group(1)][0] + int(m.group(2), 16))
if not real:
    hot = rng.sample(sorted(a for a, _ in syms.values()), 2000)
    real = [rng.choice(hot) + rng.randrange(0, 0x80) for _ in range(50_000)]
real = [real[i % len(real)] for i in range(1_000_000)]
for name, xs in (("random", rand), ("realistic", real)):
    with open(f"{out}.{name}", "w") as f:
        f.writelines("%x\n" % a for a in xs)
    with open(f"{out}.{name}.20k", "w") as f:
        f.writelines("0x%x\n" % a for a in xs[:20_000])
PY
    for kind in random realistic; do
        race "$W/lines.$kind" \
            "ksym-resolve, lines ($kind)" "$B/ksym-resolve $W/vmlinux.lines.bin" \
            "ksym-resolve --json, lines ($kind)" "$B/ksym-resolve --json $W/vmlinux.lines.bin"
        k=${WALLS[0]}; j=${WALLS[1]}; krss=${RSSES[0]}
        if [ -x "$LLVM_BIN/llvm-symbolizer" ]; then
            RUNS=1 measure "llvm-symbolizer --inlines, 20k ($kind)" "$LLVM_BIN/llvm-symbolizer" --inlines -e "$V" < "$W/lines.$kind.20k" > /dev/null
            python3 -c "
k, j, l = $k / 1e6, $j / 1e6, $WALL / 2e4
print('  %-9s ksym %.2f M addr/s (json %.2f M/s), RSS %d KiB | llvm-symbolizer %.1f k addr/s | ksym/llvm rate %.0fx' % ('$kind', 1e-6 / k, 1e-6 / j, $krss, 1e-3 / l, l / k))" >&2
        fi
    done
    if [ -x "$LLVM_BIN/llvm-symbolizer" ]; then
        PATH="$LLVM_BIN:$PATH" python3 scripts/lines-agreement.py "$V" "$W/vmlinux.lines.bin" "$W/vmlinux.filt" 20000 >&2
    fi
fi

# User-space binaries (issue 34's table): each packed with ksym-pack --elf
# --lines (symbols from .symtab, lines from DWARF, the debug file found by
# build-id under DEBUGDIR), beside llvm-gsymutil --convert on the ELF that
# holds the DWARF; 100k random function addresses (uniform over functions
# with a size, then over their bytes; seed 1) through ksym-resolve,
# llvm-symbolizer --inlines, llvm-gsymutil and blazecli, in turn; then
# ksym's frames against llvm-symbolizer's (scripts/lines-agreement.py).
if [ -n "${KSYM_USER:-}" ]; then
    specs=$KSYM_USER
    if [ "$KSYM_USER" = fetch ]; then
        U="$W/user-dbg"
        if [ ! -d "$U/usr" ]; then
            mkdir -p "$U"
            (cd "$U" && apt-get download libc6-dbg libstdc++6-12-dbg &&
                for d in ./*.deb; do dpkg-deb -x "$d" .; done && rm -f ./*.deb)
        fi
        cp "$B/ksym-resolve" "$W/ksym-resolve.rust"
        specs="$(readlink -f /lib/x86_64-linux-gnu/libc.so.6):$U/usr/lib/debug
               $U/usr/lib/x86_64-linux-gnu/debug/libstdc++.so.6.0.30 $W/ksym-resolve.rust"
    fi
    LLVM_BIN=$(dirname "$(command -v llvm-symbolizer || echo /usr/lib/llvm-14/bin/x)")
    GSYMUTIL=$(command -v llvm-gsymutil || ls /usr/lib/llvm-*/bin/llvm-gsymutil 2>/dev/null | tail -1 || true)
    BLAZECLI=$(command -v blazecli || true)
    for spec in $specs; do
        IFS=: read -r bin ddir <<< "$spec"
        name=$(basename "$bin")
        # The ELF with the DWARF, for the peers: the binary, or its debug
        # file by build-id.
        dwarf=$bin
        if ! readelf -SW "$bin" | grep -c ' \.debug_info ' > /dev/null; then
            id=$(readelf -n "$bin" | awk '/Build ID/ { print $3 }')
            dwarf="${ddir:-/usr/lib/debug}/.build-id/${id:0:2}/${id:2}.debug"
            [ -f "$dwarf" ] || { echo "== $name: no debug file $dwarf (another build than the -dbg package?)" >&2; continue; }
        fi
        echo "== user space: $name (DWARF in $dwarf)" >&2
        blob="$W/user.$name.ksym"
        args=(--elf "$bin" --lines -o "$blob")
        [ -n "$ddir" ] && args+=(--debug-dir "$ddir")
        RUNS=3 measure "ksym-pack --elf --lines" "$B/ksym-pack" "${args[@]}" < /dev/null
        kp=$WALL
        python3 - "$dwarf" "$W/user.$name.addrs" <<'PY'
import random, subprocess, sys
nm = subprocess.run(["nm", "-S", "--defined-only", sys.argv[1]], capture_output=True, text=True, check=True).stdout
funcs = sorted({(int(f[0], 16), int(f[1], 16)) for f in (l.split() for l in nm.splitlines())
                if len(f) == 4 and f[2] in "tTwWi" and int(f[1], 16) > 0})
rng = random.Random(1)
with open(sys.argv[2], "w") as out:
    for _ in range(100_000):
        a, s = rng.choice(funcs)
        out.write("0x%x\n" % (a + rng.randrange(s)))
PY
        sed 's/^/--address=/' "$W/user.$name.addrs" > "$W/user.$name.grsp"
        ksz=$(stat -c %s "$blob")
        # The same blob compressed at rest (FORMAT.md §17), as a store may
        # keep it: packed, sized and raced beside the plain one.
        RUNS=3 measure "ksym-pack --elf --lines --gzip" "$B/ksym-pack" "${args[@]}" --gzip -o "$blob.gz" < /dev/null
        kpz=$WALL; kzsz=$(stat -c %s "$blob.gz")
        cmds=("ksym-resolve" "$B/ksym-resolve $blob")
        if [ -n "$GSYMUTIL" ]; then
            RUNS=3 measure "llvm-gsymutil --convert" "$GSYMUTIL" --convert "$dwarf" --out-file "$W/user.$name.gsym" < /dev/null > /dev/null
            gp=$WALL; gsz=$(stat -c %s "$W/user.$name.gsym")
            ggz=$(gzip -9 -c "$W/user.$name.gsym" | wc -c)
            python3 -c "print('  %s: blob %d bytes, GSYM %d bytes: %.3fx | pack %.3f s, llvm-gsymutil %.3f s: %.2fx the time' % ('$name', $ksz, $gsz, $ksz / $gsz, $kp, $gp, $kp / $gp))" >&2
            python3 -c "print('  %s --gzip: blob %d bytes: %.3fx GSYM, %.3fx GSYM through gzip -9 (%d bytes) | pack %.3f s: %.2fx the time' % ('$name', $kzsz, $kzsz / $gsz, $kzsz / $ggz, $ggz, $kpz, $kpz / $gp))" >&2
        fi
        # One race, each tool given the same addresses (blazecli takes
        # them as arguments, llvm-gsymutil from a response file: its
        # --addresses-from-stdin opens the GSYM file again for each line).
        [ -x "$LLVM_BIN/llvm-symbolizer" ] && cmds+=("llvm-symbolizer --inlines" "$LLVM_BIN/llvm-symbolizer --inlines -e $dwarf")
        [ -n "$GSYMUTIL" ] && cmds+=("llvm-gsymutil" "$GSYMUTIL $W/user.$name.gsym @$W/user.$name.grsp")
        [ -n "$BLAZECLI" ] && cmds+=("blazecli symbolize elf" "$BLAZECLI symbolize elf --path $dwarf $(tr '\n' ' ' < "$W/user.$name.addrs")")
        cmds+=("ksym-resolve (--gzip blob)" "$B/ksym-resolve $blob.gz")
        RUNS=${RUNS:-3} race "$W/user.$name.addrs" "${cmds[@]}"
        labels=()
        for ((i = 0; i < ${#cmds[@]}; i += 2)); do labels+=("${cmds[$i]}"); done
        for j in "${!labels[@]}"; do
            python3 -c "print('%-40s %9.0f lookups/s wall, %9.0f per CPU s (10 ms ticks) %9d KiB  (best of ${RUNS:-3}, interleaved)' % ('${labels[$j]}', 1e5 / ${WALLS[$j]}, 1e5 / max(${CPUS[$j]}, 1e-2), ${RSSES[$j]}))" >&2
        done
        # Ratios of wall times: these tools run on one thread, and the CPU
        # clock of /usr/bin/time ticks at 10 ms, a quarter of ksym's time.
        [ ${#labels[@]} -gt 1 ] && python3 - "${WALLS[*]}" "${RSSES[*]}" "$(IFS='|'; echo "${labels[*]}")" <<'PY' >&2
import sys
wall = [float(c) for c in sys.argv[1].split()]
rss = [int(r) for r in sys.argv[2].split()]
labels = sys.argv[3].split("|")
ours = [i for i, l in enumerate(labels) if l.startswith("ksym-resolve")]
peers = [i for i in range(len(labels)) if i not in ours]
for k in ours:
    print("  rate %s / peer: " % labels[k] + ", ".join("%s %.1fx" % (labels[p], wall[p] / wall[k]) for p in peers) +
          " | peak memory / lowest peer's %.2f" % (rss[k] / min(rss[p] for p in peers)))
PY
        if [ -n "${KSYM_INSTR:-}" ] && [ -n "$GSYMUTIL" ] && command -v valgrind > /dev/null; then
            ki=$(instr "$W/user.$name.addrs" "$B/ksym-resolve" "$blob")
            gi=$(instr /dev/null "$GSYMUTIL" "$W/user.$name.gsym" "@$W/user.$name.grsp")
            python3 -c "print('  instructions (callgrind): ksym-resolve %.1f M, llvm-gsymutil %.1f M: %.2fx' % ($ki / 1e6, $gi / 1e6, $gi / $ki))" >&2
        fi
        [ -x "$LLVM_BIN/llvm-symbolizer" ] && PATH="$LLVM_BIN:$PATH" KSYM_RESOLVE="$B/ksym-resolve" \
            python3 scripts/lines-agreement.py --addresses "$W/user.$name.addrs" "$dwarf" "$blob" >&2
    done
fi
