# SPDX-License-Identifier: MIT
"""Why a process waited on memory: its major faults by cause, told in the kernel at each major
fault's completion. A FUSE file read page by page (file), anonymous memory and a memfd pushed out
to swap on zram and read back (anon, shmem): each count against the workload's own rusage, the
whole against wait4's; the time of those faults by cause; Top sorted by a cause. Where they
happened: Sites of kind major, every one at its instruction (the swap-in helper's read_back()) with
what it waited for (anonymous memory, the memfd, the FUSE file) and its time. With the source
disabled, and on a kernel that cannot tell, majorByCause is null and GetStatus says why, and the
major faults stay exact."""
import csv
import io
import json
import os
import re
import resource
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import (Daemon, SharedDaemonTest, Swap, binary, exited_history, feature_off,  # noqa: E402
                    read_slow_file, require_root_and_bpf, trapstat, trapstat_json, wait_for, zram_missing)

# The memfd of swap-in, as the process's maps name it, or as BPF walked its path once it was gone.
MEMFD = re.compile(r"^/memfd:swap-in( \(deleted\))?$")


def run_rusage(args, timeout=120):
    """Runs args to its end; its stdout and its major faults as wait4() reports them (all of its
    life, its exit too)."""
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate(timeout=timeout)
    # communicate() reaped it: its rusage is in this process's children's.
    return p.returncode, out, err


def run_workload_wait4(name, *args):
    """A workload helper ($NAME) run to its end: the JSON it prints and its major faults as
    wait4() counts them."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_majflt
    code, out, err = run_rusage([binary(name), *map(str, args)])
    majflt = resource.getrusage(resource.RUSAGE_CHILDREN).ru_majflt - before
    if code == 77:
        raise unittest.SkipTest(f"{name}: {err.strip()}")
    if code != 0:
        raise AssertionError(f"{name} {args} failed ({code}): {err.strip()}")
    return json.loads(out), majflt


def source(st, name):
    return next(s for s in st["sources"] if s["name"] == name)


class MajorCause(SharedDaemonTest):
    """The shared daemon times faults too (Daemon() turns fault_time on)."""

    def major_sites(self, pid, ready):
        """The major sites of pid (trapstat sites --major), once ready(sites) holds: a site's
        symbol comes from the symbol worker a tick or so after the site is stored."""
        last = []

        def get():
            p = trapstat(self.daemon.socket, "--json", "sites", str(pid), "--major", "--limit", "10000", check=False)
            sites = json.loads(p.stdout)["sites"] if p.returncode == 0 else None
            last[:] = [sites]
            return sites if sites is not None and ready(sites) else None

        try:
            sites = wait_for(get, timeout=30, what=f"the major sites of {pid}")
        except AssertionError as e:
            raise AssertionError(f"{e}: {json.dumps(last, indent=1)}") from None
        for s in sites:  # every one counted, none sampled
            self.assertEqual((s["kind"], s["vector"], s["sampled"], s["period"], s["estimated"]),
                             ("major", "PF", False, 1, s["count"]), s)
        return sites

    def assert_swap_in_sites(self, kind, w, h):
        """Every swap-in of the read phase at its instruction in read_back(), memory what it read
        back: as many as majorByCause counts, with the same time."""
        by, t = h["total"]["faults"]["majorByCause"], h["total"]["faultTime"]["majorNsByCause"]
        helper = os.path.realpath(binary("SWAP_IN"))

        def swapped(s):
            return s["memory"] == "anon" if kind == "anon" else \
                s["memory"] == "file" and MEMFD.match(s["memoryObject"] or "") is not None

        sites = self.major_sites(w["pid"], lambda sites: sum(s["count"] for s in sites if swapped(s)) >= by[kind]
                                 and all(s["symbol"] for s in sites if swapped(s)))
        mine = [s for s in sites if swapped(s)]
        self.assertEqual(sum(s["count"] for s in mine), by[kind], json.dumps(sites, indent=1))
        self.assertEqual(by[kind], w["majflt"])
        self.assertEqual({(s["object"], s["symbol"]) for s in mine}, {(helper, "read_back")}, mine)
        # The swap-ins happened in user mode: the sites have all of their time.
        self.assertEqual(sum(s["timeNs"] for s in mine), t[kind], (mine, t))
        # The rest were read from files (start-up): no more sites than major faults.
        self.assertLessEqual(sum(s["count"] for s in sites), sum(by.values()))
        self.assertTrue(all(swapped(s) or s["memory"] == "file" for s in sites), sites)
        return sites

    @classmethod
    def setUpClass(cls):
        why = feature_off("major_cause")
        if why:
            raise unittest.SkipTest(why)  # NoCause below asserts what such a kernel replies
        super().setUpClass()

    def swapped_in(self, kind, pages=2048):
        """A swap-in workload's exit: its history checked against its rusage (the read phase's
        major faults all of kind, all its major faults told)."""
        why = zram_missing()
        if why:
            self.skipTest(why)
        with Swap():
            w, majflt = run_workload_wait4("SWAP_IN", kind, pages)
        # Reclaim may pass over a page it finds busy: the pages that went out are what is read back.
        self.assertGreater(w["out"], 0, f"no page went out to swap: {w}")
        self.assertGreater(w["majflt"], 0, w)
        h = exited_history(self.daemon, w["pid"])
        faults, ft = h["total"]["faults"], h["total"]["faultTime"]
        by = faults["majorByCause"]
        self.assertEqual(faults["major"], majflt, h["total"])
        self.assertEqual(by[kind], w["majflt"], f"{kind} swap-ins of the read phase: {w}, {by}")
        # The rest (start-up: its binary's pages, if not cached) were read from files.
        self.assertEqual(sum(by.values()), majflt, by)
        self.assertEqual(by["file"], majflt - w["majflt"], by)
        # Every swap-in was timed, from its entry to its completion: its time is a part of the
        # major time (user mode here), and each took some.
        t = ft["majorNsByCause"]
        self.assertGreaterEqual(t[kind], w["majflt"], t)
        self.assertLessEqual(sum(t.values()), ft["majorNs"] + ft["kernelNs"], ft)
        self.assertGreaterEqual(sum(t.values()), ft["majorNs"], ft)
        return w, h

    def test_anonymous_memory_swapped_in(self):
        w, h = self.swapped_in("anon")
        # Anonymous pages swapped out on zram come back one fault each (no swap readahead on a
        # synchronous device).
        self.assertEqual(w["majflt"], w["out"], w)
        sites = self.assert_swap_in_sites("anon", w, h)
        # trapstat's table: kind major, exact counts and times (no "~"); its CSV: not sampled.
        table = trapstat(self.daemon.socket, "sites", str(w["pid"]), "--major", "--limit", "10000").stdout
        self.assertNotIn("~", table)
        self.assertRegex(table, r"\nmajor +#PF +\S+ +\S+ +\S*swap-in +read_back\+0x[0-9a-f]+ +\[anon\]\n")
        rows = list(csv.DictReader(io.StringIO(
            trapstat(self.daemon.socket, "sites", str(w["pid"]), "--major", "--csv", "--limit", "10000").stdout)))
        self.assertEqual(sorted(int(r["count"]) for r in rows), sorted(s["count"] for s in sites))
        self.assertEqual({(r["kind"], r["sampled"], r["period"]) for r in rows}, {("major", "false", "1")})
        # Other kinds leave them out.
        faults = trapstat_json(self.daemon.socket, "sites", str(w["pid"]), "--faults", "--limit", "10000")
        self.assertEqual({s["kind"] for s in faults["sites"]} - {"fault"}, set())

    def test_shared_memory_swapped_in(self):
        w, h = self.swapped_in("shmem")
        sites = self.assert_swap_in_sites("shmem", w, h)
        self.assertFalse([s for s in sites if s["memory"] == "anon"], sites)

    def test_file_read_page_by_page(self):
        """A file whose every read waits 2 ms, read page by page (read_slow_file()): each read a
        major fault on a file mapping."""
        pid, reads, majflt, path = read_slow_file(64, 2)
        h = exited_history(self.daemon, pid)
        faults = h["total"]["faults"]
        self.assertGreaterEqual(reads, 1)
        self.assertGreaterEqual(majflt, reads)
        self.assertEqual(faults["major"], majflt, faults)
        self.assertEqual(faults["majorByCause"], {"file": majflt, "anon": 0, "shmem": 0})
        self.assertGreater(h["total"]["faultTime"]["majorNsByCause"]["file"], 0)
        # Each at its instruction (in Python's mmap code), waiting for the slow file: the reads
        # of the file are major faults in it, and every major fault of the reader has its site.
        sites = self.major_sites(pid, lambda sites: sum(s["count"] for s in sites) >= majflt)
        self.assertEqual(sum(s["count"] for s in sites), majflt, json.dumps(sites, indent=1))
        self.assertTrue(all(s["memory"] == "file" for s in sites), sites)
        # A daemon in a chroot (the distribution leg's) names the file by the kernel's path from
        # the real root: the chroot's own path in front of the one the test knows.
        slow = [s for s in sites if (s["memoryObject"] or "").endswith(path)]
        self.assertGreaterEqual(sum(s["count"] for s in slow), reads, (path, sites))
        # All in user mode: the sites have all of their time.
        self.assertEqual(sum(s["timeNs"] for s in sites), h["total"]["faultTime"]["majorNsByCause"]["file"])

    def test_top_sorts_by_cause(self):
        w, h = self.swapped_in("anon", pages=512)
        reply = json.loads(trapstat(self.daemon.socket, "call", "io.trapstat.Top",
                                    '{"windowSec": 3600, "sortBy": "majorAnon", "limit": 10000}').stdout)
        anon = [r["counters"]["faults"]["majorByCause"]["anon"] for r in reply["rows"]]
        self.assertEqual(anon, sorted(anon, reverse=True))
        row = next(r for r in reply["rows"] if r["process"]["pid"] == w["pid"])
        self.assertEqual(row["counters"]["faults"]["majorByCause"], h["total"]["faults"]["majorByCause"])


class NoCause(unittest.TestCase):
    """The source disabled, or a kernel without bpf_find_vma (before 5.17): majorByCause null in
    every reply, GetStatus says why, and the major faults stay exact."""

    def check_null(self, d, reason):
        st = trapstat_json(d.socket, "status")
        src = source(st, "major_cause")
        self.assertFalse(src["active"])
        self.assertEqual(src["reason"], reason)
        w, majflt = run_workload_wait4("FAULT_PAGES", 100)
        h = exited_history(d, w["pid"])
        self.assertIsNone(h["total"]["faults"]["majorByCause"])
        self.assertEqual(h["total"]["faults"]["major"], majflt)
        self.assertTrue(all(s["counters"]["faults"]["majorByCause"] is None for s in h["samples"]))
        top = json.loads(trapstat(d.socket, "call", "io.trapstat.Top", '{"windowSec": 3600, "limit": 5}').stdout)
        self.assertTrue(top["rows"])
        self.assertTrue(all(r["counters"]["faults"]["majorByCause"] is None for r in top["rows"]))

    def test_disabled(self):
        with Daemon(extra_args=("--disable-source", "major_cause")) as d:
            self.check_null(d, "disabled by --disable-source")

    def test_kernel(self):
        """A kernel that tells the causes has the source on; one that cannot (before 5.17) says
        what it needs, and every reply has null."""
        with Daemon() as d:
            src = source(trapstat_json(d.socket, "status"), "major_cause")
            if not feature_off("major_cause"):
                self.assertEqual((src["active"], src.get("reason")), (True, None))
                return
            self.assertRegex(src["reason"], r"^needs \S+ \(Linux [0-9.]+\)$")
            self.check_null(d, src["reason"])


if __name__ == "__main__":
    require_root_and_bpf()
    unittest.main(verbosity=2)
