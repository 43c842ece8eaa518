#!/usr/bin/env python3
"""Fails when the skeletons of the BPF objects differ in anything but their name and bytes.

The daemon opens every object through the first skeleton (trapstat_bpf), giving libbpf the other
object's bytes: its maps and programs are then found by name, and its global variables are read
and written through trapstat_bpf's structs. So the objects must declare the same maps, programs
and variables, of the same types, in the same order. Usage: check-skeletons.py STAMP SKEL.h...
"""
import re
import sys


def shape(path):
    text = open(path).read()
    name = re.search(r"^struct (\w+)_bpf \{", text, re.M).group(1)
    # The embedded object: the only part that may differ.
    text = re.sub(r"(__elf_bytes\(size_t \*sz\)\n\{).*?\n\}\n", r"\1}\n", text, flags=re.S)
    return name, text.replace(name + "_bpf", "NAME_bpf").replace(name.upper() + "_BPF", "NAME_BPF")


def main():
    stamp, first, *others = sys.argv[1:]
    name0, shape0 = shape(first)
    for path in others:
        name, text = shape(path)
        if text != shape0:
            a, b = shape0.splitlines(), text.splitlines()
            line = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            got = b[line] if line < len(b) else "(end)"
            want = a[line] if line < len(a) else "(end)"
            sys.exit(f"{path}: the skeleton of {name} differs from {name0}'s at line {line + 1}: "
                     f"{got.strip()!r} where {name0} has {want.strip()!r}; the objects must declare the "
                     "same maps, programs and global variables (bpf/trapstat.bpf.c)")
    open(stamp, "w").write("ok\n")


if __name__ == "__main__":
    main()
