#!/usr/bin/env python3
"""Cuts the small real samples under tests/data/ from ../shared/corpus/.

Each sample keeps whole lines of the original file in their original order:
the head of the file, the neighbourhood of the section markers (_etext,
_sinittext, _einittext), the tail, and for the perf samples every symbol group
a sampled kernel address falls in plus the group after it (so sizes match).
Run from the repository root: python3 scripts/make-samples.py
"""
import bisect, lzma, os, sys

CORPUS = os.environ.get("KSYM_CORPUS", "../shared/corpus")
OUT = "tests/data"


def read(name):
    with lzma.open(os.path.join(CORPUS, name + ".xz"), "rb") as f:
        return f.read().splitlines(keepends=True)


def write(name, lines):
    with lzma.open(os.path.join(OUT, name + ".xz"), "wb", preset=9) as f:
        f.writelines(lines)


def around(lines, names, before=40, after=40):
    keep = set()
    for i, l in enumerate(lines):
        parts = l.split()
        if len(parts) >= 3 and parts[2] in names:
            keep.update(range(max(0, i - before), min(len(lines), i + after + 1)))
    return keep


MARKERS = {b"_stext", b"_etext", b"_sinittext", b"_einittext"}

# /proc/kallsyms sample, covering the sampled perf-mix lines.
ks = read("kallsyms-6.18-x86_64.txt")
# Every 15th sample of the capture: all its workloads, a few thousand lines.
def blocks_of(lines):
    blocks, cur = [], []
    for l in lines:
        cur.append(l)
        if l == b"\n":
            blocks.append(cur)
            cur = []
    return blocks


perf = [l for b in blocks_of(read("perf-mix.script.txt"))[::15] for l in b]
# The -F captures have the same samples in the same order (an empty line
# opens each), so the same block numbers cut the same samples.
for name in ("perf-mix.script-F-ip.txt", "perf-mix.script-F-ip-sym-symoff.txt"):
    lines = read(name)
    blocks = blocks_of(lines[1:])  # a leading empty line, then frames + empty line
    write(name.replace(".txt", "-sample.txt"), [l for b in blocks[::15] for l in b][:3000])
keep = set(range(1500)) | around(ks, MARKERS) | set(range(len(ks) - 60, len(ks)))
addrs = [int(l.split()[0], 16) for l in ks]
text = [i for i, l in enumerate(ks) if l.split()[1] in (b"T", b"t")]
text_addrs = [addrs[i] for i in text]
for l in perf:
    p = l.split()
    if len(p) >= 3 and l.startswith(b"\t") and p[-1] == b"([kernel.kallsyms])":
        a = int(p[0], 16)
        k = bisect.bisect_right(text_addrs, a) - 1
        if k < 0:
            continue
        grp = text_addrs[k]
        nxt = next((x for x in text_addrs[k:] if x > grp), None)
        for j in range(bisect.bisect_left(text_addrs, grp), len(text)):
            if text_addrs[j] not in (grp, nxt):
                break
            keep.add(text[j])
write("kallsyms-6.18-sample.txt", [ks[i] for i in sorted(keep)])
write("perf-mix.script-sample.txt", perf)

sm = read("System.map-6.1.0-56-amd64")
keep = set(range(1200)) | around(sm, MARKERS) | set(range(len(sm) - 200, len(sm)))
write("System.map-6.1.0-56-sample", [sm[i] for i in sorted(keep)])

for name in ("rustup-1.29.0.nm-n.txt", "cryptography-rust-abi3.nm-n.txt", "cargo-1.95.0.nm-n.txt"):
    lines = read(name)
    write(name.replace(".txt", "-sample.txt"), lines[:300] + lines[len(lines) // 2 : len(lines) // 2 + 1200])

# Not cut from the corpus: tests/data/System.map-6.1.0-56-cloud-arm64-sample.xz
# holds whole lines of the System.map in Debian's linux-image-6.1.0-56-cloud-arm64-dbg
# (6.1.192-2), where `_etext` is a D symbol: lines 1-40, 42770-42810 (the end of
# .text and `D _etext`), 63330-63345 and 65505-65525 (init text bounds). Made with
#   apt-get download linux-image-6.1.0-56-cloud-arm64-dbg:arm64
#   dpkg-deb --fsys-tarfile *.deb | tar -x --wildcards './usr/lib/debug/boot/System.map*'
#   (sed -n 1,40p; sed -n 42770,42810p; ...) < System.map-6.1.0-56-cloud-arm64 | xz -9
