#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Fails when the daemon's rooms are crossed: the store (daemon/store/) and the collector
(daemon/collector/) are static libraries of their own, each with public headers in its include/
and internal headers beside its sources. The build already refuses an internal header outside its
room (the room's dependency carries include/ only); this checks the text as well, so that a
relative include or a new include directory cannot get around it.

usage: rooms.py SOURCE_ROOT

Checks every .c and .h file of the tree (build directories left out):
  - outside a room, no #include names one of the room's internal headers, except in the room's own
    unit tests (ROOM_TESTS below: they test the insides);
  - inside a room, every #include of a project header names a header of the room itself or of
    common/ (and, for the collector, bpf/: the skeleton and the shared record layouts);
  - a header named PREFIX-internal.h (common/'s varlink library) is included only by the files of
    its directory whose names start with PREFIX;
  - no two project headers share a name, since includes name headers by their bare name.
Prints each breach as "FILE:LINE: message" and exits 1; exits 0 when there is none."""
import os
import re
import sys

ROOMS = {
    "store": {"dir": "daemon/store", "may_include": ["common"]},
    "collector": {"dir": "daemon/collector", "may_include": ["common", "bpf"]},
}
# Tests that test a room's insides, and why each needs them.
ROOM_TESTS = {
    "store": ["tests/unit/test-store", "tests/unit/test-tier-util.c", "tests/unit/unit-store"],
    # fuzz-methods.c fakes the collector behind GetStatus with the real drop kinds' names.
    "collector": ["tests/unit/test-cgroup-util.c", "tests/unit/test-collector-util.c", "tests/unit/test-proc-util.c",
                  "tests/unit/test-kernel-caps.c", "tests/unit/test-proc-index.c",
                  "tests/unit/test-symbolize.c", "tests/fuzz/fuzz-methods.c"],
}
SKIP_DIRS = {".git", "debian"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def sources(root):
    for top, dirs, files in os.walk(root):
        rel_top = os.path.relpath(top, root)
        # Build directories hold generated headers and copies of the tree: build* (the CI legs',
        # with their root filesystems) and any other meson build directory (meson-private/ marks it).
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("build")
                         and not (rel_top == "." and d.startswith("."))
                         and not os.path.isdir(os.path.join(top, d, "meson-private")))
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                yield os.path.normpath(os.path.join(rel_top, f))


def main():
    if len(sys.argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    root = sys.argv[1]
    files = list(sources(root))
    headers = {}
    breaches = []
    for f in files:
        if f.endswith(".h") and not f.startswith("tests/"):
            name = os.path.basename(f)
            if name in headers and name != "vmlinux.h":
                breaches.append(f"{f}:1: header name also used by {headers[name]}")
            headers.setdefault(name, f)

    def room_of(path):
        for room, r in ROOMS.items():
            if path.startswith(r["dir"] + "/"):
                return room
        return None

    internal = {}  # header name -> room
    for f in files:
        room = room_of(f)
        if room and f.endswith(".h") and os.path.dirname(f) == ROOMS[room]["dir"]:
            internal[os.path.basename(f)] = room

    for f in files:
        room = room_of(f)
        with open(os.path.join(root, f), encoding="utf-8") as src:
            for n, line in enumerate(src, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                name = os.path.basename(m.group(1))
                if name.endswith("-internal.h"):
                    prefix = name[:-len("-internal.h")].split("-")[0]
                    target = headers.get(name, "")
                    if (os.path.dirname(target) != os.path.dirname(f)
                            or not os.path.basename(f).startswith(prefix)):
                        breaches.append(f"{f}:{n}: includes {name}, internal to {os.path.dirname(target)}/{prefix}-*")
                    continue
                if room is None:
                    owner = internal.get(name)
                    if owner and not any(f.startswith(t) for t in ROOM_TESTS[owner]):
                        breaches.append(f"{f}:{n}: includes {name}, internal to the {owner} room "
                                        f"({ROOMS[owner]['dir']}/): use its include/ headers")
                    continue
                target = headers.get(name)
                if target is None or target.endswith(".skel.h"):
                    continue  # generated (the skeleton, embedded files): the build's business
                allowed = [ROOMS[room]["dir"] + "/"] + [d + "/" for d in ROOMS[room]["may_include"]]
                if not any(target.startswith(a) for a in allowed):
                    breaches.append(f"{f}:{n}: the {room} room includes {target}: a room includes only itself and "
                                    + ", ".join(ROOMS[room]["may_include"]) + "/")
    for b in breaches:
        print(b)
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
