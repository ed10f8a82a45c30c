#!/usr/bin/env python3
"""Agreement of ksym-resolve's `Code:` decoding with GNU objdump on real x86-64 code.

usage: scripts/code-agreement.py [N] MODULE.ko...

Takes N (default 300) random instruction starts in the modules' .text (seed
1; objdump -d gives the starts), cuts the 64 bytes the kernel prints around
each (42 before, the trapping instruction and 21 after: arch/x86/kernel/
dumpstack.c, show_opcodes) into a `Code:` line, and decodes it with
`ksym-resolve --arch x86_64` and with `objdump -D -b binary -m i386:x86-64`
as scripts/decodecode does: the whole line, and the bytes from the
trapping one. Compares rows (offset, bytes, text with blanks collapsed)
from the trapping instruction on, in both views. Prints the agreement
and each kind of difference with an example.
"""
import random
import re
import subprocess
import sys
import tempfile
from collections import Counter

KSYM = "target/release/ksym-resolve"
ROW = re.compile(r"^\s*([0-9a-f]+):\*?\t([0-9a-f ]+?)\s*\t(.*)$")
# objdump's bytes of a long instruction, continued on the next line.
MORE = re.compile(r"^\s*([0-9a-f]+):\t([0-9a-f ]+?)\s*$")


def text_bytes(ko):
    with tempfile.NamedTemporaryFile() as f:
        subprocess.run(["objcopy", "-O", "binary", "--only-section=.text", ko, f.name], check=True)
        return open(f.name, "rb").read()


def starts(ko):
    out = subprocess.run(["objdump", "-d", "-j", ".text", ko], capture_output=True, text=True, check=True).stdout
    return [int(m.group(1), 16) for m in re.finditer(r"^\s*([0-9a-f]+):\t", out, re.M)]


def objdump_rows(data):
    with tempfile.NamedTemporaryFile() as f:
        f.write(data)
        f.flush()
        out = subprocess.run(["objdump", "-D", "-b", "binary", "-m", "i386:x86-64", f.name],
                             capture_output=True, text=True, check=True).stdout
    return parse_rows(out.split("<.data>:", 1)[1].splitlines())


def parse_rows(lines):
    rows = []
    for line in lines:
        if line.strip() == "...":
            rows.append(("...", "", "..."))
            continue
        m = ROW.match(line)
        if m:
            text = m.group(3).split("#")[0].replace("<-- trapping instruction", "")
            rows.append((int(m.group(1), 16), m.group(2).strip(), " ".join(text.split())))
        elif (m := MORE.match(line)) and rows:
            off, b, text = rows[-1]
            rows[-1] = (off, f"{b} {m.group(2).strip()}", text)
    return rows


def ksym_views(blocks):
    """Both views of each `Code:` line from one ksym-resolve run."""
    inp = "".join(f"Code: {b}\n" for b in blocks)
    # No RIP line, so no lookup: any blob will do.
    with tempfile.NamedTemporaryFile() as blob:
        subprocess.run(["target/release/ksym-pack", "-o", blob.name], input=b"0000000000001000 T f\n", check=True)
        out = subprocess.run([KSYM, "--arch", "x86_64", blob.name], input=inp, capture_output=True, text=True)
    if out.returncode not in (0, 1):
        sys.exit(out.stderr)
    views = []
    for chunk in out.stdout.split("Code: ")[1:]:
        all_part, _, fault_part = chunk.partition("Code starting with the faulting instruction")
        views.append((parse_rows(all_part.splitlines()), parse_rows(fault_part.splitlines())))
    return views


def main():
    args = sys.argv[1:]
    n = int(args.pop(0)) if args and args[0].isdigit() else 300
    rnd = random.Random(1)
    samples = []
    for ko in args:
        data, st = text_bytes(ko), starts(ko)
        ok = [s for s in st if s >= 42 and s + 22 <= len(data)]
        for s in rnd.sample(ok, min(n // len(args), len(ok))):
            samples.append(data[s - 42:s + 22])
    blocks = [" ".join(f"<{b:02x}>" if i == 42 else f"{b:02x}" for i, b in enumerate(d)) for d in samples]
    views = ksym_views(blocks)
    kinds, examples = Counter(), {}
    same = [0, 0]
    for d, (k_all, k_fault) in zip(samples, views):
        o_all = objdump_rows(d)
        o_fault = objdump_rows(d[42:])
        k_from = [r for r in k_all if r[0] == "..." or r[0] >= 42]
        o_from = [r for r in o_all if r[0] == "..." or r[0] >= 42]
        # Rows of All code before the first row at or after the trap are
        # not compared; a row straddling it is.
        for v, (a, b) in enumerate([(k_from, o_from), (k_fault, o_fault)]):
            if a == b:
                same[v] += 1
                continue
            for x, y in zip(a + [None] * len(b), b + [None] * len(a)):
                if x != y:
                    kind = ("All code from the trap", "from the faulting byte")[v] + ": " + (
                        "offset or length" if not x or not y or x[:2] != y[:2] else
                        "text: " + (y[2].split()[0] if y[2] else "?") + " / " + (x[2].split()[0] if x[2] else "?"))
                    kinds[kind] += 1
                    examples.setdefault(kind, (d.hex(" "), x, y))
                    break
    total = len(samples)
    print(f"{total} Code: lines from {', '.join(args)}")
    print(f"All code, rows from the trapping instruction on: {same[0]}/{total} equal to objdump")
    print(f"Code starting with the faulting instruction: {same[1]}/{total} equal to objdump")
    for k, c in kinds.most_common():
        print(f"  {c:4d} {k}")
        e = examples[k]
        print(f"       bytes {e[0]}\n       ksym {e[1]}\n       objdump {e[2]}")


if __name__ == "__main__":
    main()
