# SPDX-License-Identifier: MIT
"""Why a process waited on memory: its major faults by cause, told in the kernel at each major
fault's completion. A FUSE file read page by page (file), anonymous memory and a memfd pushed out
to swap on zram and read back (anon, shmem): each count against the workload's own rusage, the
whole against wait4's; the time of those faults by cause; Top sorted by a cause. With the source
disabled, and on a kernel that cannot tell, majorByCause is null and GetStatus says why, and the
major faults stay exact."""
import json
import os
import resource
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import (Daemon, SharedDaemonTest, Swap, binary, exited_history, feature_off,  # noqa: E402
                    read_slow_file, require_root_and_bpf, trapstat, trapstat_json, zram_missing)


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
        w, _ = self.swapped_in("anon")
        # Anonymous pages swapped out on zram come back one fault each (no swap readahead on a
        # synchronous device).
        self.assertEqual(w["majflt"], w["out"], w)

    def test_shared_memory_swapped_in(self):
        self.swapped_in("shmem")

    def test_file_read_page_by_page(self):
        """A file whose every read waits 2 ms, read page by page (read_slow_file()): each read a
        major fault on a file mapping."""
        pid, reads, majflt = read_slow_file(64, 2)
        h = exited_history(self.daemon, pid)
        faults = h["total"]["faults"]
        self.assertGreaterEqual(reads, 1)
        self.assertGreaterEqual(majflt, reads)
        self.assertEqual(faults["major"], majflt, faults)
        self.assertEqual(faults["majorByCause"], {"file": majflt, "anon": 0, "shmem": 0})
        self.assertGreater(h["total"]["faultTime"]["majorNsByCause"]["file"], 0)

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
