#!/usr/bin/env python3
"""Agreement of ksym-resolve's inline frames with llvm-symbolizer --inlines.

usage: scripts/lines-agreement.py VMLINUX BLOB SYMBOLS [N_RANDOM]
       scripts/lines-agreement.py --addresses FILE ELF BLOB

VMLINUX (ELF): the ELF with DWARF the blob's lines came from; BLOB: a v2 blob
packed with --lines (ksym-pack --elf ELF --lines for a user-space binary);
SYMBOLS: the ksym-filter output it was packed from.
Addresses: N_RANDOM (default 20000) random addresses inside .text (seed 1)
and every symbol's address + 1; or the hex addresses of FILE, one a line.
For each, compares the frame lists (function, file, line; innermost first).
Where llvm-symbolizer finds no line (its symbol table alone names the
address), compares that name with ksym's symbol name instead. Prints the
agreement rate and counts the kinds of difference with an example of each.
"""
import json
import os
import re
import random
import subprocess
import sys
from collections import Counter, defaultdict

LLVM = "llvm-symbolizer"


def text_range(vmlinux):
    out = subprocess.run(["readelf", "-SW", vmlinux], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.replace("[ ", "[").split()
        if len(f) > 5 and f[1] == ".text":
            start, size = int(f[3], 16), int(f[5], 16)
            return start, start + size
    sys.exit(".text not found")


def ours(blob, addrs, ksym):
    """ksym's frames of each address, and its symbol (name, start) or None."""
    p = subprocess.run([ksym, "--json", blob], input="".join(f"0x{a:x}\n" for a in addrs),
                       capture_output=True, text=True, check=True)
    res, syms = [], []
    for line in p.stdout.splitlines():
        o = json.loads(line)
        res.append([(f["function"], f["file"], f["line"]) for f in o["frames"]])
        syms.append((o["name"], int(o["addr"], 16) - o["offset"]) if o.get("name") else None)
    return res, syms


def llvm_symbols(elf, addrs, flags):
    """llvm-symbolizer's JSON `Symbol` list (frames, innermost first) of each address."""
    p = subprocess.run([LLVM, "--inlines", "--output-style=JSON", *flags, "-e", elf],
                       input="".join(f"0x{a:x}\n" for a in addrs),
                       capture_output=True, text=True, check=True)
    return [json.loads(line)["Symbol"] for line in p.stdout.splitlines()]


def llvm(vmlinux, addrs, flags):
    res, syms = [], []
    for symbol in llvm_symbols(vmlinux, addrs, flags):
        fr = [(s["FunctionName"], s["FileName"], s["Line"]) for s in symbol]
        sym = None
        # No line information: llvm prints one frame at line 0, its name
        # and file from the symbol table (STT_FUNC, and STT_FILE: a base
        # name or nothing); ksym's JSON gives an empty list.
        if len(fr) == 1 and fr[0][2] == 0 and "/" not in fr[0][1]:
            s0 = symbol[0]
            if s0["FunctionName"] not in ("??", ""):
                sym = (s0["FunctionName"], int(s0.get("StartAddress") or "0x0", 16))
            fr = []
        res.append(fr)
        syms.append(sym)
    return res, syms


def doubled_dir0(ours, theirs):
    """llvm-symbolizer (14) and binutils join a DWARF 5 line table's
    directory 0, which is the compilation directory, to it a second time:
    `./stdlib/./stdlib/abort.c` where ksym prints `./stdlib/abort.c`."""
    d, _, rest = ours.rpartition("/")
    return bool(d) and theirs == f"{d}/{d}/{rest}".replace("//", "/") or theirs == f"{d}/./{d.lstrip('./')}/{rest}"


RUST_ESCAPES = {"$LT$": "<", "$GT$": ">", "$u20$": " ", "$C$": ",", "$RF$": "&", "$BP$": "*",
                "$LP$": "(", "$RP$": ")", "$u5b$": "[", "$u5d$": "]", "$u7b$": "{", "$u7d$": "}",
                "$u3b$": ";", "$u3d$": "=", "$u27$": "'", "$u2b$": "+", "$u22$": '"', "$SP$": "@"}


def rust_legacy(name):
    """A Rust legacy symbol as LLVM 14 prints it (`$LT$` escapes, `..`,
    the `::h<16 hex>` hash), spelled as rustc-demangle's `{:#}` does."""
    name = re.sub(r" \(\.llvm\.\d+\)$", "", name)
    head, _, tail = name.rpartition("::h")
    if len(tail) == 16 and all(c in "0123456789abcdef" for c in tail):
        name = head
    if name.startswith("_$"):
        name = name[1:]
    name = name.replace("::_$", "::$")
    for k, v in RUST_ESCAPES.items():
        name = name.replace(k, v)
    return name.replace("..", "::")


def cxx_gnu(name):
    """A C++ name as LLVM 14's demangler prints it, spelled as GNU's
    (libstdc++'s `__cxa_demangle`, which ksym, perf and c++filt use) does:
    clone suffixes `(.cold)` as `[clone .cold]`, `std::nullptr_t` as
    `decltype(nullptr)`, literals `1ul` as `(unsigned long)1`."""
    def clones(m):
        parts = re.findall(r"\.[A-Za-z_]+(?:\.\d+)?", m.group(1))
        return "".join(f" [clone {p}]" for p in parts)
    name = re.sub(r" \((\.[^()]*)\)$", clones, name)
    name = name.replace("std::nullptr_t", "decltype(nullptr)")
    lits = {"ul": "unsigned long", "l": "long", "u": "unsigned int", "ull": "unsigned long long",
            "ll": "long long"}
    name = re.sub(r"(?<![\w.])(-?\d+)(ull|ul|ll|l|u)\b", lambda m: f"({lits[m.group(2)]}){m.group(1)}", name)
    return re.sub(r"operator(<<|>>|<|>)<", r"operator\1 <", name)


def spelling(a, b):
    """Which spellings alone tell frame lists `a` (ksym) and `b` (llvm) apart."""
    if len(a) != len(b) or any(x[2] != y[2] for x, y in zip(a, b)):
        return None
    kinds = set()
    for x, y in zip(a, b):
        if x[0] != y[0]:
            if x[0] == rust_legacy(y[0]):
                kinds.add("Rust names half-demangled by llvm 14")
            elif x[0] == cxx_gnu(y[0]):
                kinds.add("C++ demangled by GNU's rules, not LLVM's")
            elif y[0].startswith("_Z") and not x[0].startswith("_Z"):
                kinds.add("C++ names llvm 14 leaves mangled")
            else:
                return None
        if x[1] != y[1]:
            if not doubled_dir0(x[1], y[1]):
                return None
            kinds.add("directory 0 joined twice by llvm")
    return ", ".join(sorted(kinds))


def kind(a, b):
    s = spelling(a, b)
    if s:
        return f"spelling only ({s})"
    if len(a) != len(b):
        return "frame count"
    for x, y in zip(a, b):
        if x[0] != y[0]:
            return "function name" + (" (outermost)" if x is a[-1] else " (inlined)")
        if x[1] != y[1]:
            return "file"
        if x[2] != y[2]:
            return "line" + (" (outermost)" if x is a[-1] else " (inlined)")
    return "?"


def gnu_demangled(elf, addrs):
    """llvm-symbolizer's frames of `addrs` with mangled names, each
    demangled by GNU's c++filt (one run for all)."""
    frames = [[(s["FunctionName"], s["FileName"], s["Line"]) for s in symbol]
              for symbol in llvm_symbols(elf, addrs, ["--no-demangle"])]
    names = [f[0] for fr in frames for f in fr]
    # -i: standard substitutions short (std::ostream), as __cxa_demangle prints them.
    out = subprocess.run(["c++filt", "-i"], input="".join(n + "\n" for n in names),
                         capture_output=True, text=True, check=True).stdout.splitlines()
    it = iter(out)
    return [[(next(it), f[1], f[2]) for f in fr] for fr in frames]


def name_kind(x, y):
    """Where llvm named an address from its symbol table alone: how ksym's
    symbol `x` and llvm's `y`, each (name, start) or None, differ."""
    if x is None or y is None:
        return "name: ksym none" if x is None else "name: llvm none"
    if x[0] == rust_legacy(y[0]) or x[0] == cxx_gnu(y[0]):
        return "spelling only (name)"
    if x[1] == y[1]:
        return "name: another alias at the same address"
    return "name: another function"


def main():
    ksym = os.environ.get("KSYM_RESOLVE", "target/release/ksym-resolve")
    if sys.argv[1] == "--addresses":
        afile, vmlinux, blob = sys.argv[2:5]
        with open(afile) as f:
            sets = {"addresses of " + os.path.basename(afile): [int(l, 16) for l in f if l.strip()]}
    else:
        vmlinux, blob, symbols = sys.argv[1:4]
        n = int(sys.argv[4]) if len(sys.argv) > 4 else 20000
        lo, hi = text_range(vmlinux)
        rnd = random.Random(1)
        sets = {"random .text": sorted(rnd.randrange(lo, hi) for _ in range(n))}
        starts = []
        with open(symbols) as f:
            for line in f:
                a = int(line.split()[0], 16)
                starts.append(a + 1)
        sets["symbol start + 1"] = starts
    for flags_name, flags in [("default", [])]:
        for name, addrs in sets.items():
            (a, asym), (b, bsym) = ours(blob, addrs, ksym), llvm(vmlinux, addrs, flags)
            kinds, ex = Counter(), defaultdict(list)
            # C++ names that differ: llvm's mangled names (--no-demangle)
            # through GNU's c++filt, the demangler ksym uses.
            odd = [i for i, (x, y) in enumerate(zip(a, b)) if x != y and spelling(x, y) is None
                   and len(x) == len(y) and any(f[0] != g[0] for f, g in zip(x, y))]
            gnu = gnu_demangled(vmlinux, [addrs[i] for i in odd]) if odd else []
            for i, g in zip(odd, gnu):
                if g == a[i]:
                    b[i] = a[i]
                    kinds["spelling only (C++: llvm's mangled name through GNU's c++filt -i)"] += 1
            for addr, x, y, xs, ys in zip(addrs, a, b, asym, bsym):
                if not x and not y and ys is not None and (xs is None or xs[0] != ys[0]):
                    k = name_kind(xs, ys)
                    kinds[k] += 1
                    if len(ex[k]) < 2:
                        ex[k].append((hex(addr), xs, ys))
                elif x != y:
                    k = kind(x, y)
                    kinds[k] += 1
                    if len(ex[k]) < 2:
                        ex[k].append((hex(addr), x, y))
            same = len(addrs) - sum(kinds.values())
            spelled = sum(c for k, c in kinds.items() if k.startswith("spelling only"))
            print(f"llvm-symbolizer {flags_name}, {name}: {same}/{len(addrs)} equal ({100 * same / len(addrs):.3f} %), "
                  f"{same + spelled}/{len(addrs)} up to spelling ({100 * (same + spelled) / len(addrs):.3f} %)")
            for k, c in kinds.most_common():
                print(f"  {c:6d} {k}")
                for e in ex[k]:
                    print(f"         {e[0]}\n           ksym: {e[1]}\n           llvm: {e[2]}")


if __name__ == "__main__":
    main()
