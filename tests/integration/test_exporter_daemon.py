# SPDX-License-Identifier: MIT
"""trapstat-exporter against a real trapstatd (bpf suite, root): a workload with exactly known
#UD and #BP traps (tests/helpers/raise-traps), in a unit made of a cgroup named like one (as in
test_unit_totals), shows as exactly that increment of trapstat_traps_total for its unit, also
after it exited; faults held by a userfaultfd handler (tests/helpers/slow-faults) in another
unit show as the daemon's UnitTotals faultTime exactly, seconds and histogram, and its stall
(the kernel's delay accounting) exactly or, where it is null, not at all; the real expositions
pass promtool; --unit-limit 1 gives one unit and "other" per family; a stopped
daemon gives trapstat_up 0."""
import itertools
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import unittest
import urllib.request
from decimal import Decimal

sys.path.insert(0, os.path.dirname(__file__))
from daemon import (T, Daemon, binary, fault_time_bucket, feature_off, make_cgroup, remove_cgroup, require_root_and_bpf,  # noqa: E402
                    require_trap_workloads, run_workload_in_cgroup, settled_unit_row, ticks_after, wait_for)
from varlink_raw import Connection  # noqa: E402

# With the test's pid: two runs side by side on one machine (two checkouts) never share a cgroup.
UNIT = f"trapstat-test-exporter-{os.getpid()}-a.service"
TIME_UNIT = f"trapstat-test-exporter-{os.getpid()}-t.service"
# The histogram's upper edges as Python writes the doubles nearest 2^i us in seconds (its repr,
# like Go's, is the shortest text that reads back the same).
EDGES = [repr((1 << i) * 1000 / 1e9) for i in range(23)] + ["+Inf"]
PROMTOOL = shutil.which("promtool")
N = 150
# The kernel's delay accounting (Counters.stall): family, the causes it has (None: no label
# cause), seconds or waits.
STALL_FAMILIES = {"trapstat_memory_stall_seconds_total": (("swapin", "thrashing", "reclaim", "compact"), "Ns"),
                  "trapstat_memory_stalls_total": (("swapin", "thrashing", "reclaim", "compact"), "Count"),
                  "trapstat_block_io_delay_seconds_total": ((None,), "Ns"),
                  "trapstat_block_io_delays_total": ((None,), "Count")}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=20) as r:
        return r.read().decode()


def sample_text(text, name, **labels):
    """The value of name with exactly these labels (in the exporter's order) as written, or None."""
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    m = re.search(rf"^{re.escape(name)}\{{{re.escape(want)}\}} (\S+)$", text, re.M)
    return m.group(1) if m else None


def value(text, name, **labels):
    """The sample of name with exactly these labels (in the exporter's order), else 0."""
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    m = re.search(rf"^{re.escape(name)}\{{{re.escape(want)}\}} ([0-9]+)$", text, re.M)
    return int(m.group(1)) if m else 0


class ExporterDaemon(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cgroup = make_cgroup(UNIT)
        cls.time_cgroup = make_cgroup(TIME_UNIT)
        cls.daemon, cls.exporters = None, []
        cls.dir = tempfile.mkdtemp(prefix="trapstat-exporter-daemon-")
        try:
            cls.daemon = Daemon().__enter__()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            for p in cls.exporters:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
                    p.wait(timeout=10)

            remove_cgroup(cls.cgroup)
            remove_cgroup(cls.time_cgroup)
        finally:
            if cls.daemon:
                cls.daemon.__exit__(None, None, None)
            shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def exporter(cls, *args):
        port = free_port()
        log = open(os.path.join(cls.dir, f"exporter-{port}.log"), "w")
        p = subprocess.Popen([binary("TRAPSTAT_EXPORTER"), "--socket", cls.daemon.socket,
                              "--listen", f"127.0.0.1:{port}", *args], stderr=log)
        log.close()
        cls.exporters.append(p)

        def listening():
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return True
            except OSError:
                return False
        wait_for(listening, what="the exporter to listen")
        return port

    def workload(self):
        """raise-traps N --only UD,BP in the unit (joined before exec), seen there by the daemon,
        then ended; its own count of traps."""
        cgroup = self.cgroup

        def join():
            with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
                f.write("0")

        p = subprocess.Popen([binary("RAISE_TRAPS"), str(N), "--only", f"{T['UD']},{T['BP']}", "--hold"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, preexec_fn=join)
        out = json.loads(p.stdout.readline())
        with Connection(self.daemon.socket) as c:
            def known():
                ps = c.call("io.trapstat.ListProcesses", {"pid": out["pid"], "includeExited": True})["processes"]
                return ps and ps[0]["unit"] == UNIT
            wait_for(known, what="the workload known in its unit")
        p.stdin.close()
        self.assertEqual(p.wait(timeout=30), 0)
        p.stdout.close()
        return out["traps"]

    def test_traps_of_a_unit(self):
        require_trap_workloads()
        port = self.exporter()
        before = scrape(port)
        self.assertIn("\ntrapstat_up 1\n", "\n" + before)
        start = {v: value(before, "trapstat_traps_total", vector=v, unit=UNIT) for v in (T["UD"], T["BP"])}
        traps = self.workload()
        self.assertEqual({v: traps[v] for v in (T["UD"], T["BP"])}, {T["UD"]: N, T["BP"]: N})

        def counted():
            text = scrape(port)
            return all(value(text, "trapstat_traps_total", vector=v, unit=UNIT) == start[v] + N for v in (T["UD"], T["BP"]))
        wait_for(counted, what=f"{N} #UD and #BP more for {UNIT}")
        # Exactly: nothing more arrives later, and no other vector for the unit.
        ticks_after(self.daemon.socket, 3)
        text = scrape(port)
        for v in (T["UD"], T["BP"]):
            self.assertEqual(value(text, "trapstat_traps_total", vector=v, unit=UNIT), start[v] + N)
        self.assertEqual(sorted(re.findall(rf'^trapstat_traps_total\{{vector="(\w+)",unit="{re.escape(UNIT)}"\}}',
                                           text, re.M)), sorted([T["BP"], T["UD"]]))
        if platform.machine() == "x86_64":  # the access breakdown is x86's
            self.assertGreater(value(text, "trapstat_page_faults_total", mode="user", access="read", unit=UNIT), 0)
        self.assertRegex(text, r'\ntrapstat_drops_total\{kind="fault_map_full"\} [0-9]+\n')
        # The kernel's delay accounting: no family at all where the daemon has none (stall null).
        with Connection(self.daemon.socket) as c:
            known = c.call("io.trapstat.UnitTotals", {"limit": 1})["total"].get("stall") is not None
        for family in STALL_FAMILIES:
            self.assertEqual(f"\n# TYPE {family} counter\n" in text, known, family)
        self.promtool(text)

    def promtool(self, text):
        if PROMTOOL:
            r = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
            self.assertEqual((r.returncode, r.stdout + r.stderr), (0, ""))

    def test_fault_time_of_a_unit(self):
        """slow-faults 40 5 in TIME_UNIT: its faults held 5 ms each. Once the unit's totals
        settled, a scrape between two equal UnitTotals replies shows them exactly: seconds by
        kind (the nanoseconds / 1e9, digit for digit), cumulative buckets (running sums of the
        histogram), +Inf and _count the faults timed, _sum their time; the major faults and their
        seconds by cause."""
        why = feature_off("fault_time", "--enable-source", "fault_time")
        if why:
            self.skipTest(why)
        n, hold_ms = 40, 5
        port = self.exporter()
        run_workload_in_cgroup(self.time_cgroup, "SLOW_FAULTS", n, hold_ms)

        # The held faults are in: n at or above the hold's bucket.
        slow = fault_time_bucket(hold_ms * 1000000)
        settled_unit_row(self.daemon.socket, TIME_UNIT, lambda r: sum(r["counters"]["faultTime"]["histogram"][slow:]) >= n)

        def consistent():
            before = settled_unit_row(self.daemon.socket, TIME_UNIT, lambda r: True, ticks=0)
            text = scrape(port)
            after = settled_unit_row(self.daemon.socket, TIME_UNIT, lambda r: True, ticks=0)
            return (text, after) if before == after else None
        text, row = wait_for(consistent, what=f"a scrape between two equal UnitTotals rows of {TIME_UNIT}")
        ft = row["counters"]["faultTime"]
        # Minor or major by the kernel's accounting (tests/integration/test_fault_time.py).
        self.assertGreaterEqual(ft["minorNs"] + ft["majorNs"], n * hold_ms * 1000000)
        for kind in ("minor", "major", "kernel"):
            seconds = sample_text(text, "trapstat_page_fault_seconds_total", kind=kind, unit=TIME_UNIT)
            self.assertIsNotNone(seconds, kind)
            self.assertEqual(Decimal(seconds) * 10**9, ft[f"{kind}Ns"], kind)
            self.assertEqual(float(seconds), ft[f"{kind}Ns"] / 1e9, kind)
        cumulative = list(itertools.accumulate(ft["histogram"]))
        buckets = [sample_text(text, "trapstat_page_fault_duration_seconds_bucket", unit=TIME_UNIT, le=le)
                   for le in EDGES]
        self.assertEqual([int(b) if b is not None else None for b in buckets], cumulative)
        # In this order, together, and nothing else of the unit's histogram.
        self.assertEqual(re.findall(rf'^trapstat_page_fault_duration_seconds_bucket\{{unit="{re.escape(TIME_UNIT)}",'
                                    rf'le="([^"]+)"\}}', text, re.M), EDGES)
        count = sample_text(text, "trapstat_page_fault_duration_seconds_count", unit=TIME_UNIT)
        self.assertEqual(int(count), sum(ft["histogram"]))
        self.assertEqual(int(count), cumulative[-1])
        total = sample_text(text, "trapstat_page_fault_duration_seconds_sum", unit=TIME_UNIT)
        self.assertEqual(Decimal(total) * 10**9, ft["minorNs"] + ft["majorNs"] + ft["kernelNs"])
        # The held faults above the hold's lower edge: the buckets below it hold the others only.
        self.assertLessEqual(cumulative[slow - 1], cumulative[-1] - n)
        # Major faults and their seconds by cause, as the same row has them; cause "" the rest.
        # Where the daemon does not tell causes: only cause "", all of them, and no seconds.
        f = row["counters"]["faults"]
        causes = f["majorByCause"]
        majors = dict(re.findall(rf'^trapstat_major_faults_total\{{cause="(\w*)",unit="{re.escape(TIME_UNIT)}"\}} (\d+)$',
                                 text, re.M))
        if causes is None:
            self.assertEqual(majors, {"": str(f["major"])})
            self.assertIsNone(sample_text(text, "trapstat_major_fault_seconds_total", cause="file", unit=TIME_UNIT))
        else:
            self.assertEqual(majors, {**{c: str(causes[c]) for c in ("file", "anon", "shmem")},
                                      "": str(max(f["major"] - sum(causes.values()), 0))})
            for cause in ("file", "anon", "shmem"):
                seconds = sample_text(text, "trapstat_major_fault_seconds_total", cause=cause, unit=TIME_UNIT)
                self.assertEqual(Decimal(seconds) * 10**9, ft["majorNsByCause"][cause], cause)
        # The unit's delay accounting as the same row has it, seconds digit for digit; none at all
        # where the row's stall is null.
        stall = row["counters"].get("stall")
        for family, (causes, member) in STALL_FAMILIES.items():
            for cause in causes:
                labels = {"cause": cause, "unit": TIME_UNIT} if cause else {"unit": TIME_UNIT}
                got = sample_text(text, family, **labels)
                if stall is None:
                    self.assertIsNone(got, (family, cause))
                    continue
                want = stall[f"{cause or 'blkio'}{member}"]
                self.assertEqual(Decimal(got) * 10**9 if member == "Ns" else int(got), want, (family, cause))
        self.promtool(text)

    def test_unit_limit(self):
        port = self.exporter("--unit-limit", "1")
        text = scrape(port)
        units = re.findall(r'^trapstat_minor_faults_total\{unit="([^"]*)"\}', text, re.M)
        self.assertLessEqual(len(units), 2)
        self.assertIn("other", units)

    def test_zz_daemon_stopped(self):
        """Last (by name): the daemon is stopped, the exporter says up 0 and nothing else."""
        port = self.exporter("--timeout", "1s")
        self.assertIn("\ntrapstat_up 1\n", "\n" + scrape(port))
        self.assertEqual(self.daemon.stop(), 0)
        text = scrape(port)
        self.assertTrue(text.endswith("\ntrapstat_up 0\n"), text)
        self.assertEqual(text.count("\ntrapstat_"), 1)


if __name__ == "__main__":
    require_root_and_bpf()
    unittest.main(verbosity=2)
