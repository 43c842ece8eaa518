#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Fails when a C function in the given directories is longer than the limit (80 lines, from the
line its declaration starts on to its closing brace), so that entry points stay thin.

usage: function-length.py [--max N] DIR...

Reads every DIR/*.c. Comments and string literals are blanked first; a function is a top-level
brace block whose declaration has a parameter list and no '=' before it (initialisers and
struct, enum and union definitions are not functions). Prints each one over the limit as
"LINES FILE:LINE NAME" and exits 1; exits 0 when there is none."""
import argparse
import glob
import os
import re
import sys


def blank(src):
    """src with comments and string and character literals emptied, line numbers kept."""
    src = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), src, flags=re.S)
    src = re.sub(r"//[^\n]*", "", src)
    src = re.sub(r'"(\\.|[^"\\\n])*"', '""', src)
    return re.sub(r"'(\\.|[^'\\\n])*'", "''", src)


def functions(path):
    """(first line, lines, name) of every function defined in path."""
    lines = blank(open(path, encoding="utf-8").read()).split("\n")
    depth, start, name = 0, None, None
    for i, line in enumerate(lines):
        if depth == 0 and "{" in line:
            j = i
            while j > 0 and not re.match(r"[A-Za-z_]", lines[j]):
                j -= 1
            head = " ".join(lines[j:i + 1])
            m = re.search(r"(\w+)\s*\(", head)
            is_function = (m and "=" not in head.split("(")[0]
                           and not re.match(r"(struct|enum|union|typedef)\b[^(]*\{", head))
            start, name = (j, m.group(1)) if is_function else (None, None)
        depth += line.count("{") - line.count("}")
        if depth == 0 and start is not None and "}" in line:
            yield start + 1, i - start + 1, name
            start = None


def main():
    p = argparse.ArgumentParser(description="C functions longer than a limit")
    p.add_argument("--max", type=int, default=80)
    p.add_argument("dirs", nargs="+")
    args = p.parse_args()
    long = []
    for d in args.dirs:
        for path in sorted(glob.glob(os.path.join(d, "*.c"))):
            long += [(n, f"{path}:{line}", name) for line, n, name in functions(path) if n > args.max]
    for n, where, name in sorted(long, reverse=True):
        print(f"{n} {where} {name}")
    if long:
        print(f"{len(long)} function(s) over {args.max} lines", file=sys.stderr)
    return 1 if long else 0


if __name__ == "__main__":
    sys.exit(main())
