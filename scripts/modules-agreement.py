#!/usr/bin/env python3
"""Agreement of ksym-resolve's module frames with elfutils' eu-addr2line.

Usage: modules-agreement.py [--samples N] [--other N] [--seed S]
                            [--decode-stacktrace] BLOB MODULE_DIR

Picks N random (module, function, offset) triples over every module under
MODULE_DIR (module uniformly, then a function of it, then an offset inside
the function), plus --other triples whose function lies outside `.text`
(`.text.unlikely`, `.init.text`, `.exit.text`...). For each it asks
`eu-addr2line -f -i -a -e MOD.ko func+0xOFF` (which lays a relocatable
file's sections out itself) and `ksym-resolve --json BLOB` on the oops
line `func+0xOFF/0x1 [mod]`, and compares per frame, innermost first: the
function name (the outermost one without .cold/.part.N/.constprop.N/.isra.N
suffixes, since eu-addr2line names it from DWARF), the file and the line.
Prints the agreement, every kind of difference with counts and one example
each, and both tools' rates. With --decode-stacktrace it also runs what
scripts/decode_stacktrace.sh runs for the outside-.text triples (binutils
`addr2line -i -e MOD.ko ADDR`, ADDR = the symbol's value + offset, no
section) and counts how often that agrees with eu-addr2line.

Needs eu-addr2line (Debian package elfutils), readelf and addr2line
(binutils), and ksym-resolve on PATH or in target/release.
"""
import argparse
import collections
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time

SUFFIX = re.compile(r"(\.(cold|part|constprop|isra|lto_priv|llvm)(\.\d+)?)+$")


def strip_suffix(name):
    return SUFFIX.sub("", name)


def module_functions(path):
    """(name, section, value, size) of every sized function symbol in an
    executable section, and the module's name (.modinfo name=)."""
    secs = {}
    out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True, errors="replace").stdout
    for line in out.splitlines():
        m = re.match(r"\s*\[\s*(\d+)\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+[0-9a-f]+\s+\S+\s+(\S*)", line)
        if m and "X" in m.group(3) and "A" in m.group(3):
            secs[int(m.group(1))] = m.group(2)
    funcs = []
    out = subprocess.run(["readelf", "-sW", path], capture_output=True, text=True, errors="replace").stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[3] == "FUNC" and f[6].isdigit() and int(f[6]) in secs:
            size = int(f[2], 0) if f[2].startswith("0x") else int(f[2])
            if size > 0:
                funcs.append((f[7], secs[int(f[6])], int(f[1], 16), size))
    name = None
    out = subprocess.run(["readelf", "-p", ".modinfo", path], capture_output=True, text=True, errors="replace").stdout
    for line in out.splitlines():
        m = re.search(r"\]\s+name=(\S+)", line)
        if m:
            name = m.group(1)
    if name is None:
        name = os.path.basename(path).split(".ko")[0].replace("-", "_")
    return name, funcs


def eu_frames(path, refs):
    """eu-addr2line's frames (function, file, line), innermost first, for
    each `func+0xOFF` of refs (one run per module)."""
    p = subprocess.run(["eu-addr2line", "-f", "-i", "-a", "-e", path],
                       input="".join(r + "\n" for r in refs),
                       capture_output=True, text=True, errors="replace")
    blocks, cur = [], None
    lines = p.stdout.splitlines()
    i = 0
    while i < len(lines):
        l = lines[i]
        if re.fullmatch(r"0x[0-9a-f]+", l):
            cur = []
            blocks.append(cur)
            i += 1
            continue
        func = l.split(" inlined at ")[0]
        loc = lines[i + 1] if i + 1 < len(lines) else "??:0"
        m = re.match(r"(.*?):(\d+)(?::\d+)?$", loc)
        file, line = (m.group(1), int(m.group(2))) if m else (loc, 0)
        if file == "??":
            file, line = "", 0
        cur.append((func, file, line))
        i += 2
    return blocks


def binutils_frames(pick, mods):
    """binutils addr2line -f -i -j SECTION at the function's value + offset."""
    p, fn, sec, off, _ = pick
    value = [f for f in mods[p][1] if f[0] == fn][0][2]
    out = subprocess.run(["addr2line", "-f", "-i", "-j", sec, "-e", p, "%x" % (value + off)],
                         capture_output=True, text=True, errors="replace").stdout.splitlines()
    frames = []
    for func, loc in zip(out[0::2], out[1::2]):
        m = re.match(r"(.*?):(\d+|\?)", loc)
        file, line = (m.group(1), 0 if m.group(2) == "?" else int(m.group(2))) if m else ("", 0)
        frames.append(("" if func == "??" else func, "" if file == "??" else file, line))
    return frames


def ksym_frames(resolve, blob, lines):
    p = subprocess.run([resolve, "--json", blob], input="".join(lines),
                       capture_output=True, text=True, errors="replace")
    out = []
    for l in p.stdout.splitlines():
        o = json.loads(l)
        out.append([(f["function"], f["file"], f["line"]) for f in o.get("frames", [])])
    return out, p.returncode, p.stderr


def normalise(frames):
    if not frames:
        return []
    # A lone frame without a file is "no line information": eu-addr2line
    # prints the symbol's name and ??:0, ksym no frames (FORMAT.md §15),
    # as the vmlinux comparison with llvm-symbolizer counts it.
    if len(frames) == 1 and frames[0][1] in ("", "??") and frames[0][2] == 0:
        return []
    # eu-addr2line prints `??` for a function it cannot name.
    fs = [(("" if f == "??" else f), file, line) for f, file, line in frames]
    f, file, line = fs[-1]
    fs[-1] = (strip_suffix(f), file, line)
    return fs


def classify(ours, theirs):
    if len(ours) != len(theirs):
        return "frame count %d vs %d" % (len(ours), len(theirs))
    for k, (a, b) in enumerate(zip(ours, theirs)):
        if a[1] != b[1]:
            return "file differs (frame %s)" % ("innermost" if k == 0 else k)
        if a[2] != b[2]:
            return "line differs (frame %s)" % ("innermost" if k == 0 else k)
        if a[0] != b[0]:
            return "function name differs (%s)" % ("outermost" if k == len(ours) - 1 else "inlined")
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=20000)
    ap.add_argument("--other", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--decode-stacktrace", action="store_true")
    ap.add_argument("blob")
    ap.add_argument("dir")
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    resolve = shutil.which("ksym-resolve") or os.path.join(here, "..", "target", "release", "ksym-resolve")
    paths = sorted(os.path.join(d, f) for d, _, fs in os.walk(a.dir) for f in fs if f.endswith(".ko"))
    rnd = random.Random(a.seed)
    mods = {}
    t0 = time.time()
    for p in paths:
        mods[p] = module_functions(p)
    print("read %d modules' symbol tables in %.1f s" % (len(paths), time.time() - t0), file=sys.stderr)
    withf = [p for p in paths if mods[p][1]]
    other = [p for p in withf if any(f[1] != ".text" for f in mods[p][1])]
    picks = []  # (path, func, section, off, set)
    for _ in range(a.samples):
        p = rnd.choice(withf)
        f = rnd.choice(mods[p][1])
        picks.append((p, f[0], f[1], rnd.randrange(f[3]), "random"))
    for _ in range(a.other):
        p = rnd.choice(other)
        f = rnd.choice([f for f in mods[p][1] if f[1] != ".text"])
        picks.append((p, f[0], f[1], rnd.randrange(f[3]), "outside .text"))
    by_mod = collections.defaultdict(list)
    for i, (p, fn, sec, off, _) in enumerate(picks):
        by_mod[p].append(i)
    theirs = [None] * len(picks)
    t0 = time.time()
    for p, idx in by_mod.items():
        blocks = eu_frames(p, ["%s+%#x" % (picks[i][1], picks[i][3]) for i in idx])
        for i, b in zip(idx, blocks):
            theirs[i] = b
    t_eu = time.time() - t0
    lines = ["[    1.000000]  %s+%#x/0x1 [%s]\n" % (fn, off, mods[p][0]) for p, fn, _, off, _ in picks]
    t0 = time.time()
    ours, rc, err = ksym_frames(resolve, a.blob, lines)
    t_ksym = time.time() - t0
    if rc != 0 or len(ours) != len(picks):
        sys.exit("ksym-resolve failed (%d objects for %d lines): %s" % (len(ours), len(picks), err))
    for kind in ("random", "outside .text"):
        n = agree = 0
        diffs = collections.Counter()
        judge = collections.Counter()
        example = {}
        for i, pk in enumerate(picks):
            if pk[4] != kind:
                continue
            n += 1
            o, t = normalise(ours[i]), normalise(theirs[i] or [])
            c = classify(o, t)
            if c is None:
                agree += 1
            else:
                diffs[c] += 1
                example.setdefault(c, (pk, o, t))
                b = normalise(binutils_frames(pk, mods))
                judge["sides with ksym" if b == o else "sides with eu-addr2line" if b == t else "agrees with neither"] += 1
        print("%s: %d / %d agree (%.3f %%)" % (kind, agree, n, 100.0 * agree / max(n, 1)))
        for c, k in diffs.most_common():
            pk, o, t = example[c]
            print("  %6d  %s; e.g. %s %s+%#x (%s):\n          ksym %s\n          eu   %s" % (
                k, c, os.path.basename(pk[0]), pk[1], pk[3], pk[2], o, t))
        print("  third opinion on every difference, binutils addr2line -f -i -j SECTION (the right section):")
        print("    " + ", ".join("%s %d" % kv for kv in sorted(judge.items())))
    print("rate: eu-addr2line %.0f refs/s (%.1f s, one run per module), ksym-resolve %.0f refs/s (%.2f s, one run, blob opening included): %.0fx"
          % (len(picks) / t_eu, t_eu, len(picks) / t_ksym, t_ksym, t_eu / t_ksym))
    if a.decode_stacktrace:
        n = agree = 0
        for i, (p, fn, sec, off, kind) in enumerate(picks):
            if kind != "outside .text":
                continue
            value = [f for f in mods[p][1] if f[0] == fn][0][2]
            out = subprocess.run(["addr2line", "-i", "-e", p, "%x" % (value + off)],
                                 capture_output=True, text=True, errors="replace").stdout.split()
            locs = []
            for l in out:
                m = re.match(r"(.*?):(\d+|\?)", l)
                if m:
                    locs.append((m.group(1), 0 if m.group(2) == "?" else int(m.group(2))))
            want = [(f[1], f[2]) for f in (theirs[i] or [])]
            n += 1
            agree += locs == want
            if n <= 3:
                print("decode_stacktrace.sh for %s %s+%#x (%s): addr2line -i %#x prints %s; eu-addr2line: %s"
                      % (os.path.basename(p), fn, off, sec, value + off, locs, want))
        print("decode_stacktrace.sh (binutils addr2line without a section) agrees with eu-addr2line on %d / %d outside-.text references (%.1f %%)"
              % (agree, n, 100.0 * agree / max(n, 1)))


if __name__ == "__main__":
    main()
