#!/usr/bin/env python3
"""Bytes of blob per byte of code, for vmlinux and for its modules.

Usage: module-density.py BLOB VMLINUX MODULE_DIR

BLOB is `ksym-pack --format v2 --lines VMLINUX --modules MODULE_DIR`'s
output. Its `module_space` section is the modules' part; the rest (header,
directory, symbols, lines) is vmlinux's. Code is every executable section
(SHF_ALLOC and SHF_EXECINSTR, not NOBITS) of VMLINUX and of each
`*.ko[.xz|.zst|.gz]` under MODULE_DIR, as `ksym-pack --modules` lays them out
(FORMAT.md §16.2).

Code is counted twice: all of it, and without *fill*: runs of at least 64
int3 bytes (0xCC), which no function holds (functions are aligned to 16
bytes). The linker fills vmlinux's `.text` with int3 around the SRSO
thunks' fixed addresses (`srso_alias_untrain_ret`), 3.8 MB on Debian's
6.1 amd64 kernel; modules have next to none.

Needs `ksym-pack` on PATH or in target/release, and `zstd` for .ko.zst.
"""
import gzip
import lzma
import os
import re
import shutil
import struct
import subprocess
import sys

FILL_RUN = 64
FILL = re.compile(rb"\xcc{%d,}" % FILL_RUN)
SHF_ALLOC, SHF_EXECINSTR, SHT_NOBITS = 0x2, 0x4, 8


def read_elf(path):
    if path.endswith(".xz"):
        return lzma.open(path).read()
    if path.endswith(".gz"):
        return gzip.open(path).read()
    if path.endswith(".zst"):
        return subprocess.run(["zstd", "-dc", path], capture_output=True, check=True).stdout
    with open(path, "rb") as f:
        return f.read()


def code_bytes(path):
    """(bytes of executable sections, bytes of int3 fill in them)."""
    b = read_elf(path)
    if b[:4] != b"\x7fELF" or b[4] != 2 or b[5] != 1:
        raise SystemExit(f"{path}: not a little-endian ELF64 file")
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", b, 0x3A)
    total = fill = 0
    for i in range(shnum):
        _, typ, flags, _, off, size = struct.unpack_from("<IIQQQQ", b, shoff + i * shentsize)
        if typ == SHT_NOBITS or size == 0 or flags & (SHF_ALLOC | SHF_EXECINSTR) != SHF_ALLOC | SHF_EXECINSTR:
            continue
        total += size
        fill += sum(m.end() - m.start() for m in FILL.finditer(b, off, off + size))
    return total, fill


def section_sizes(blob):
    tool = shutil.which("ksym-pack") or os.path.join(os.path.dirname(__file__), "..", "target", "release", "ksym-pack")
    out = subprocess.run([tool, "--check", blob], capture_output=True, text=True, check=True).stdout
    return {k: int(v) for k, v in re.findall(r"(\w+) (\d+)", out.split("sections:", 1)[1])}


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    blob, vmlinux, moddir = sys.argv[1:]
    mods = section_sizes(blob).get("module_space")
    if mods is None:
        raise SystemExit(f"{blob}: no module_space section (packed without --modules?)")
    kernel = os.path.getsize(blob) - mods
    vm_code, vm_fill = code_bytes(vmlinux)
    m_code = m_fill = n = 0
    for root, _, files in os.walk(moddir):
        for f in files:
            if re.search(r"\.ko(\.xz|\.zst|\.gz)?$", f):
                c, fl = code_bytes(os.path.join(root, f))
                m_code, m_fill, n = m_code + c, m_fill + fl, n + 1
    print(f"{'':>12} {'blob bytes':>12} {'code bytes':>12} {'int3 fill':>10} {'B/code byte':>12} {'without fill':>13}")
    for what, size, code, fill in [("vmlinux", kernel, vm_code, vm_fill), (f"{n} modules", mods, m_code, m_fill)]:
        print(f"{what:>12} {size:>12,} {code:>12,} {fill:>10,} {size / code:>12.3f} {size / (code - fill):>13.3f}")


if __name__ == "__main__":
    main()
