# SPDX-License-Identifier: MIT
"""Running totals per unit (io.trapstat.UnitTotals) against a real trapstatd and workloads with
exactly known traps (tests/helpers/raise-traps), put into units by cgroups named like units, as
in test_unit_filters.

And the same totals as io.systemd.Metrics on the report socket (--report-socket), fault time
(faults held by tests/helpers/slow-faults) included, equal to UnitTotals' faultTime.

Unit A: root's "tt-ud" (300 #UD) and "tt-bp" (200 #BP); unit B: the test user's "tt-ub" (25 #UD,
25 #BP). All of them exit during the test: their totals stay."""
import json
import os
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import (T, user_name, Daemon, binary, cgroup2_root, create_user, fault_time_bucket, feature_off,  # noqa: E402
                    remove_cgroup, remove_user, require_root_and_bpf, require_trap_workloads, run_workload_in_cgroup,
                    settled_unit_row, skip, ticks_after, wait_for)
from varlink_raw import Connection  # noqa: E402

USER = user_name("trapstat-totals-test")
# With the test's pid: two runs side by side on one machine (two checkouts) never share a cgroup.
PREFIX = f"trapstat-test-totals-{os.getpid()}-"
UNITS = {name: f"{PREFIX}{name}.service" for name in "ab"}
# The smallest bound trapstatd takes: 14 drop kinds, units not reported, and one unit's 59 twice.
MAX_METRICS = 133
DROP_KINDS = 14
# The metrics by cause, and the parts of Faults and FaultTime they are.
BY_CAUSE = {"io.trapstat.MajorFaultsByCause": ("faults", "majorByCause"),
            "io.trapstat.MajorFaultTimeNsByCause": ("faultTime", "majorNsByCause")}
# The metrics of the kernel's delay accounting: the causes (None: no field) and the member of
# Stall ("<cause>Ns" or "<cause>Count", blkio's where there is no cause).
STALL = {"io.trapstat.MemoryStallNs": (("swapin", "thrashing", "reclaim", "compact"), "Ns"),
         "io.trapstat.MemoryStalls": (("swapin", "thrashing", "reclaim", "compact"), "Count"),
         "io.trapstat.BlockIoDelayNs": ((None,), "Ns"),
         "io.trapstat.BlockIoDelays": ((None,), "Count")}


def invalid(member):
    return {"error": "org.varlink.service.InvalidParameter", "parameters": {"parameter": member}}


def row(reply, unit):
    rows = [u for u in reply["units"] if u["unit"] == unit]
    return rows[0] if rows else None


def counters_le(a, b):
    """Every counter of a at most b's: b is a later reply of the same series."""
    def le(x, y):
        if isinstance(x, dict):  # majorByCause
            return all(le(v, (y or {}).get(k, 0)) for k, v in x.items())
        # A part the daemon does not count is null in both (the access kind on arm64, the
        # major causes before Linux 5.17).
        return x is None or x <= y
    return all(le(a[key], b[key]) for key in ("faults", "traps", "signals", "signalCodes"))


class UnitTotals(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        root = cgroup2_root()
        if not root:
            skip("no cgroup2 hierarchy: no process can be put into a unit")
        cls.uid = create_user(USER).pw_uid
        cls.cgroups, cls.held = {}, []
        cls.daemon = None
        try:
            for name, unit in UNITS.items():
                cls.cgroups[name] = os.path.join(root, unit)
                if os.path.isdir(cls.cgroups[name]):
                    os.rmdir(cls.cgroups[name])
                os.mkdir(cls.cgroups[name])
            cls.daemon = Daemon()
            cls.report = os.path.join(cls.daemon.dir, "report")
            cls.daemon.args += ["--report-socket", cls.report, "--report-max-metrics", str(MAX_METRICS)]
            cls.daemon.__enter__()
            os.chmod(cls.daemon.dir, 0o755)
            cls.trapstat_copy = shutil.copy2(binary("TRAPSTAT"), os.path.join(cls.daemon.dir, "trapstat"))
            os.chmod(cls.trapstat_copy, 0o755)
            cls.ud = cls.workload("a", "tt-ud", ["300", "--only", T["UD"]])
            cls.bp = cls.workload("a", "tt-bp", ["200", "--only", T["BP"]])
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            for w in list(cls.held):
                cls.release(w)
            for cgroup in cls.cgroups.values():
                remove_cgroup(cgroup)
        finally:
            try:
                if cls.daemon:
                    cls.daemon.__exit__(None, None, None)
            finally:
                remove_user(USER)

    @classmethod
    def workload(cls, unit, comm, args, user=False, seen_first=True):
        """raise-traps ARGS --hold named comm in the unit's cgroup (joined before exec), as the
        test user or root; held until release()."""
        path = os.path.join(cls.daemon.dir, comm)
        if not os.path.exists(path):
            shutil.copy2(binary("RAISE_TRAPS"), path)
            os.chmod(path, 0o755)
        cgroup = cls.cgroups[unit]

        def join():
            # As test_unit_filters: fault and be seen outside the unit first, as a service
            # manager's child; the unit is the one the process execs in.
            if seen_first:
                bytearray(1 << 20)
                time.sleep(0.3)
            with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
                f.write("0")

        argv = [path, *args, "--hold"]
        if user:
            argv = ["setpriv", f"--reuid={cls.uid}", f"--regid={cls.uid}", "--init-groups", *argv]
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, preexec_fn=join)
        out = json.loads(p.stdout.readline())
        w = {"proc": p, "pid": out["pid"], "unit": UNITS[unit]}
        cls.held.append(w)
        # The daemon reads a process's unit from /proc while it runs: one that exits before it
        # was seen in its unit would count in no unit.
        with Connection(cls.daemon.socket) as c:
            def known():
                ps = c.call("io.trapstat.ListProcesses", {"pid": w["pid"], "includeExited": True})["processes"]
                return ps and ps[0]["unit"] == w["unit"] and ps[0]["comm"] == comm

            wait_for(known, what=f"{comm} known in {w['unit']}")
        return w

    @classmethod
    def release(cls, w):
        if w in cls.held:
            cls.held.remove(w)
            w["proc"].stdin.close()
            w["proc"].wait(timeout=30)
            w["proc"].stdout.close()

    def call(self, method, parameters=None):
        with Connection(self.daemon.socket) as c:
            c.send(method, parameters or {})
            return c.read()

    def totals(self, **parameters):
        reply = self.call("io.trapstat.UnitTotals", parameters)
        self.assertNotIn("error", reply)
        return reply["parameters"]

    def as_user(self, *args):
        p = subprocess.run(["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--init-groups",
                            self.trapstat_copy, "--socket", self.daemon.socket, *args],
                           capture_output=True, text=True, timeout=30, check=True)
        return p.stdout

    def units_with_traps(self):
        """{unit: traps} of UnitTotals, and the test's workloads as ListProcesses has them: what a
        failure says."""
        with Connection(self.daemon.socket) as c:
            procs = [(p["pid"], p["comm"], p["unit"]) for w in self.held
                     for p in c.call("io.trapstat.ListProcesses", {"pid": w["pid"], "includeExited": True})["processes"]]
        return {u["unit"]: u["counters"]["traps"] for u in self.totals(limit=100000)["units"]
                if u["counters"]["traps"]}, procs

    def test_totals(self):
        a = wait_for(lambda: (lambda r: r if r and r["counters"]["traps"] == {T["UD"]: 300, T["BP"]: 200} else None)(
            row(self.totals(limit=100000), UNITS["a"])),
            what=lambda: f"unit A's 300 #UD and 200 #BP in UnitTotals; its row: {row(self.totals(limit=100000), UNITS['a'])}"
                         f", the units with traps: {self.units_with_traps()}")
        self.assertEqual(a["processes"], 2)
        self.assertEqual(a["counters"]["signals"], {"SIGILL": 300, "SIGTRAP": 200})
        # The processes exit: their totals stay, and nothing goes down.
        before = self.totals(limit=100000)
        self.release(self.ud)
        self.release(self.bp)
        ticks_after(self.daemon.socket, 3)  # the exits are drained
        after = self.totals(limit=100000)
        a2 = row(after, UNITS["a"])
        self.assertEqual(a2["counters"]["traps"], {T["UD"]: 300, T["BP"]: 200})
        self.assertEqual(a2["processes"], 2)
        self.assertTrue(counters_le(row(before, UNITS["a"])["counters"], a2["counters"]))
        for r in before["units"]:
            later = row(after, r["unit"])
            self.assertIsNotNone(later, r["unit"])
            self.assertTrue(counters_le(r["counters"], later["counters"]), r["unit"])
            self.assertGreaterEqual(later["processes"], r["processes"])
        self.assertTrue(counters_le(before["total"], after["total"]))
        self.assertEqual(after["sinceUsec"], before["sinceUsec"])
        # Sorted by page faults and traps, most first.
        events = [sum(r["counters"]["faults"][k] for k in ("user", "kernel")) + sum(r["counters"]["traps"].values())
                  for r in after["units"]]
        self.assertEqual(events, sorted(events, reverse=True))

    def test_unprivileged(self):
        # The user's workload traps only now, so the test does not depend on test_totals' order.
        w = self.workload("b", "tt-ub", ["25", "--only", f"{T['UD']},{T['BP']}"], user=True)
        self.release(w)

        def own():
            r = json.loads(self.as_user("call", "io.trapstat.UnitTotals", "{}"))
            b = row(r, UNITS["b"])
            return r if b and b["counters"]["traps"] == {T["UD"]: 25, T["BP"]: 25} else None

        r = wait_for(own, what="the user's 25 #UD and 25 #BP in unit B")
        # Only their own: not root's unit A.
        self.assertIsNone(row(r, UNITS["a"]))
        self.assertEqual(row(r, UNITS["b"])["processes"], 1)
        # Root sees B too, with the same counts.
        self.assertEqual(row(self.totals(), UNITS["b"])["counters"]["traps"], {T["UD"]: 25, T["BP"]: 25})

    def test_limit(self):
        full = wait_for(lambda: (lambda r: r if len(r["units"]) >= 2 else None)(self.totals(limit=100000)),
                        what="two units in UnitTotals")
        self.assertEqual(full["otherUnits"], 0)
        one = self.call("io.trapstat.UnitTotals", {"limit": 1})["parameters"]
        self.assertEqual(len(one["units"]), 1)
        # Units are counted since the daemon started: at least A, B and the test's own.
        self.assertGreaterEqual(one["otherUnits"], len(full["units"]) - 1)
        self.assertEqual(len(one["units"]) + one["otherUnits"], len(self.totals(limit=100000)["units"]))
        for bad in (0, -1, 100001):
            self.assertEqual(self.call("io.trapstat.UnitTotals", {"limit": bad}), invalid("limit"))
        self.assertEqual(self.call("io.trapstat.UnitTotals", {"limit": "1"}), invalid("limit"))

    def stream(self, method, more=True, report=None):
        """Every reply to one call on the report socket, up to the one without continues."""
        replies = []
        with Connection(report or self.report) as c:
            c.send(method, {}, more=more)
            while True:
                replies.append(c.read())
                if not replies[-1].get("continues"):
                    return replies

    def metrics(self, report=None):
        replies = self.stream("io.systemd.Metrics.List", report=report)
        for r in replies:
            self.assertNotIn("error", r)
        return [r["parameters"] for r in replies]

    @staticmethod
    def value(metrics, name, obj=None, **fields):
        found = [m["value"] for m in metrics if m["name"] == name and m.get("object") == obj
                 and all(m.get("fields", {}).get(k) == v for k, v in fields.items())]
        return found[0] if found else None

    def test_metrics_list(self):
        def traps():
            ms = self.metrics()
            return ms if (self.value(ms, "io.trapstat.Traps", UNITS["a"], vector=T["UD"]) == 300
                          and self.value(ms, "io.trapstat.Traps", UNITS["a"], vector=T["BP"]) == 200) else None

        ms = wait_for(traps, what=lambda: f"unit A's traps as io.trapstat.Traps; its row in UnitTotals: "
                                          f"{row(self.totals(limit=100000), UNITS['a'])}, the units with traps: "
                                          f"{self.units_with_traps()}")
        self.assertLessEqual(len(ms), MAX_METRICS)
        self.assertEqual(self.value(ms, "io.trapstat.Processes", UNITS["a"]), 2)
        self.assertIsNone(self.value(ms, "io.trapstat.Traps", UNITS["a"], vector=T["GP"]))
        for m in ms:
            self.assertTrue(m["name"].startswith("io.trapstat."), m)
            self.assertIsInstance(m["value"], int)
            for v in m.get("fields", {}).values():
                self.assertIsInstance(v, str)
        # System-wide: one Drops per kind, without object, also at zero; UnitsNotReported.
        drops = [m for m in ms if m["name"] == "io.trapstat.Drops"]
        self.assertEqual(len(drops), DROP_KINDS)
        self.assertTrue(all("object" not in m for m in drops))
        status = self.call("io.trapstat.GetStatus")["parameters"]
        self.assertEqual({m["fields"]["kind"] for m in drops}, {d["kind"] for d in status["dropsByKind"]})
        not_reported = self.value(ms, "io.trapstat.UnitsNotReported")
        self.assertIsNotNone(not_reported)
        # Within the bound: every unit of UnitTotals reported or counted as not reported.
        units = {u["unit"] for u in self.totals(limit=100000)["units"]} - {"other"}
        objects = {m["object"] for m in ms if "object" in m} - {"other"}
        self.assertEqual(len(objects) + not_reported, len(units))
        # The user's page faults add up to user faults: mode user by access.
        a = row(self.totals(limit=100000), UNITS["a"])
        user = sum(self.value(ms, "io.trapstat.PageFaults", UNITS["a"], mode="user", access=k) or 0
                   for k in ("read", "write", "exec"))
        self.assertLessEqual(user, a["counters"]["faults"]["user"])
        # Major faults by cause: one field, cause; none at all where the daemon does not tell
        # causes (majorByCause null). (Their sum is not compared with MajorFaults here: that is
        # the kernel's accounting read at the tick, the causes are drained from BPF, and on a busy
        # machine the two need not agree at every tick.)
        by_cause = [m for m in ms if m["name"] in BY_CAUSE]
        if self.totals(limit=1)["total"]["faults"]["majorByCause"] is None:
            self.assertEqual(by_cause, [])
        for m in by_cause:
            self.assertEqual(set(m["fields"]), {"cause"}, m)
            self.assertIn(m["fields"]["cause"], ("file", "anon", "shmem"), m)
        # The delay accounting: none at all where the daemon has none (stall null); else a memory
        # one has the field cause alone, a block I/O one no fields.
        stalls = [m for m in ms if m["name"] in STALL]
        if self.totals(limit=1)["total"].get("stall") is None:
            self.assertEqual(stalls, [])
        for m in stalls:
            causes = STALL[m["name"]][0]
            if causes == (None,):
                self.assertNotIn("fields", m)
            else:
                self.assertEqual(set(m["fields"]), {"cause"}, m)
                self.assertIn(m["fields"]["cause"], causes, m)

    def test_max_unit_totals(self):
        # A daemon that keeps one unit name: of two units of its own whose workloads run after it
        # started, at least one is summed into "other", with its traps, and no more than one is
        # named.
        root = cgroup2_root()
        for name in ("x", "y"):
            UNITS[name] = f"{PREFIX}{name}.service"
            self.cgroups[name] = os.path.join(root, UNITS[name])
            if os.path.isdir(self.cgroups[name]):
                os.rmdir(self.cgroups[name])
            os.mkdir(self.cgroups[name])
        with Daemon(extra_args=["--max-unit-totals", "1"]) as d:
            for name, vector in (("x", T["UD"]), ("y", T["BP"])):
                w = self.workload(name, f"tt-max-{name}", ["40", "--only", vector], seen_first=False)
                # This daemon too must have seen it in its unit before it exits.
                with Connection(d.socket) as c:
                    wait_for(lambda: [p for p in c.call("io.trapstat.ListProcesses", {"pid": w["pid"]})["processes"]
                                      if p["unit"] == w["unit"]], what=f"{w['unit']} known to the second daemon")
                self.release(w)

            def both():
                with Connection(d.socket) as c:
                    r = c.call("io.trapstat.UnitTotals", {"limit": 100000})
                traps = {}
                for u in r["units"]:
                    if u["unit"] in (UNITS["x"], UNITS["y"], "other"):
                        for k, v in u["counters"]["traps"].items():
                            traps[k] = traps.get(k, 0) + v
                return r if traps.get(T["UD"], 0) >= 40 and traps.get(T["BP"], 0) >= 40 else None

            r = wait_for(both, what="both units' traps in the unit kept or in other")
            named = [u["unit"] for u in r["units"] if u["unit"] not in (None, "other")]
            self.assertLessEqual(len(named), 1)
            self.assertIn("other", [u["unit"] for u in r["units"]])

    def test_metrics_bound(self):
        # 30 more units of one #UD each: more than 133 replies' worth (15 system-wide, about 7
        # series a unit), so that some go into "other".
        root = cgroup2_root()
        names = [f"m{i:02d}" for i in range(30)]
        for name in names:
            UNITS[name] = f"{PREFIX}{name}.service"
            self.cgroups[name] = os.path.join(root, UNITS[name])
            if os.path.isdir(self.cgroups[name]):
                os.rmdir(self.cgroups[name])
            os.mkdir(self.cgroups[name])
            self.release(self.workload(name, "tt-m", ["1", "--only", T["UD"]], seen_first=False))
        def all_counted(ms):
            """ms once units go unreported and every test unit's #UD is in (its object or "other"):
            on a busy machine the last workloads' traps may come a tick after the first unit
            went into "other"."""
            objects = {m["object"] for m in ms if "object" in m}
            reported = sum(1 for name in names if UNITS[name] in objects)
            other = self.value(ms, "io.trapstat.Traps", "other", vector=T["UD"]) or 0
            return ms if self.value(ms, "io.trapstat.UnitsNotReported") and other >= 30 - reported else None

        ms = wait_for(lambda: all_counted(self.metrics()), what="units not reported and every #UD counted")
        self.assertLessEqual(len(ms), MAX_METRICS)
        # Room for at most (133 - 15) / 3 objects: each has a page fault, minor faults and processes.
        objects = {m["object"] for m in ms if "object" in m}
        self.assertIn("other", objects)
        self.assertLessEqual(len(objects), (MAX_METRICS - DROP_KINDS - 1) // 3)
        self.assertEqual(self.value(ms, "io.trapstat.Processes", "other") >= self.value(ms, "io.trapstat.UnitsNotReported"),
                         True)
        # Each unit whole or not at all: a reported test unit has its #UD and its process.
        for name in names:
            if UNITS[name] in objects:
                self.assertEqual(self.value(ms, "io.trapstat.Traps", UNITS[name], vector=T["UD"]), 1)
                self.assertEqual(self.value(ms, "io.trapstat.Processes", UNITS[name]), 1)
        # Every test unit's #UD is somewhere: in its object or in "other".
        reported = sum(1 for name in names if UNITS[name] in objects)
        self.assertGreaterEqual(self.value(ms, "io.trapstat.Traps", "other", vector=T["UD"]) or 0, 30 - reported)

    def test_fault_time_metrics(self):
        """slow-faults 40 5 in a unit of its own: io.trapstat.PageFaultTimeNs of the unit by kind
        equals UnitTotals' faultTime exactly (a kind at zero is not listed), and so do its major
        faults and their time by cause (none where the daemon does not tell). A daemon of its own
        with the default --report-max-metrics (1000), so that the unit is reported whatever else
        the machine runs and whichever test ran before."""
        why = feature_off("fault_time", "--enable-source", "fault_time")
        if why:
            self.skipTest(why)
        n, hold_ms = 40, 5
        UNITS["t"] = f"{PREFIX}t.service"
        self.cgroups["t"] = os.path.join(cgroup2_root(), UNITS["t"])
        if os.path.isdir(self.cgroups["t"]):
            os.rmdir(self.cgroups["t"])
        os.mkdir(self.cgroups["t"])
        d = Daemon()
        report = os.path.join(d.dir, "report")
        d.args += ["--report-socket", report]
        with d:
            run_workload_in_cgroup(self.cgroups["t"], "SLOW_FAULTS", n, hold_ms)
            slow = fault_time_bucket(hold_ms * 1000000)
            settled_unit_row(d.socket, UNITS["t"], lambda r: sum(r["counters"]["faultTime"]["histogram"][slow:]) >= n)

            def consistent():
                before = settled_unit_row(d.socket, UNITS["t"], lambda r: True, ticks=0)
                ms = self.metrics(report)
                after = settled_unit_row(d.socket, UNITS["t"], lambda r: True, ticks=0)
                return (ms, after) if before == after else None
            ms, row = wait_for(consistent, what=f"a List between two equal UnitTotals rows of {UNITS['t']}")
        ft = row["counters"]["faultTime"]
        # Minor or major by the kernel's accounting (tests/integration/test_fault_time.py).
        self.assertGreaterEqual(ft["minorNs"] + ft["majorNs"], n * hold_ms * 1000000)
        self.assertIn(UNITS["t"], {m.get("object") for m in ms})
        for kind in ("minor", "major", "kernel"):
            got = self.value(ms, "io.trapstat.PageFaultTimeNs", UNITS["t"], kind=kind)
            self.assertEqual(got or 0, ft[f"{kind}Ns"], kind)
            if ft[f"{kind}Ns"] == 0:
                self.assertIsNone(got, kind)
        times = [m for m in ms if m["name"] == "io.trapstat.PageFaultTimeNs"]
        self.assertTrue(all(set(m["fields"]) == {"kind"} for m in times), times)
        self.assertTrue(all(m["fields"]["kind"] in ("minor", "major", "kernel") for m in times), times)
        self.assertEqual(self.value(ms, "io.trapstat.MajorFaults", UNITS["t"]) or 0, row["counters"]["faults"]["major"])
        for name, (group, member) in BY_CAUSE.items():
            told = row["counters"][group].get(member)
            if row["counters"]["faults"]["majorByCause"] is None:
                told = None
            for cause in ("file", "anon", "shmem"):
                got = self.value(ms, name, UNITS["t"], cause=cause)
                if told is None or told[cause] == 0:
                    self.assertIsNone(got, (name, cause))
                else:
                    self.assertEqual(got, told[cause], (name, cause))
        # The delay accounting as the same row has it (a zero not listed), none where it is null.
        stall = row["counters"].get("stall")
        for name, (causes, member) in STALL.items():
            for cause in causes:
                got = self.value(ms, name, UNITS["t"], **({"cause": cause} if cause else {}))
                want = stall[f"{cause or 'blkio'}{member}"] if stall else 0
                if want == 0:
                    self.assertIsNone(got, (name, cause))
                else:
                    self.assertEqual(got, want, (name, cause))

    def test_metrics_protocol(self):
        self.assertEqual(self.stream("io.systemd.Metrics.List", more=False),
                         [{"error": "org.varlink.service.ExpectedMore", "parameters": {}}])
        self.assertEqual(self.stream("io.systemd.Metrics.Describe", more=False),
                         [{"error": "org.varlink.service.ExpectedMore", "parameters": {}}])
        families = {r["parameters"]["name"]: r["parameters"]["type"] for r in self.stream("io.systemd.Metrics.Describe")}
        self.assertEqual(families, {"io.trapstat.Traps": "counter", "io.trapstat.PageFaults": "counter",
                                    "io.trapstat.MinorFaults": "counter", "io.trapstat.MajorFaults": "counter",
                                    "io.trapstat.MajorFaultsByCause": "counter",
                                    "io.trapstat.PageFaultTimeNs": "counter",
                                    "io.trapstat.MajorFaultTimeNsByCause": "counter",
                                    "io.trapstat.MemoryStallNs": "counter", "io.trapstat.MemoryStalls": "counter",
                                    "io.trapstat.BlockIoDelayNs": "counter", "io.trapstat.BlockIoDelays": "counter",
                                    "io.trapstat.Processes": "counter", "io.trapstat.Drops": "counter",
                                    "io.trapstat.UnitsNotReported": "gauge"})
        # The report socket serves nothing else; the main socket no io.systemd.Metrics.
        with Connection(self.report) as c:
            info = c.call("org.varlink.service.GetInfo")
            self.assertEqual(sorted(info["interfaces"]), ["io.systemd.Metrics", "org.varlink.service"])
            c.send("io.trapstat.GetStatus")
            self.assertEqual(c.read()["error"], "org.varlink.service.InterfaceNotFound")
        self.assertEqual(self.call("io.systemd.Metrics.List")["error"], "org.varlink.service.InterfaceNotFound")
        self.assertEqual(os.stat(self.report).st_mode & 0o777, 0o600)


if __name__ == "__main__":
    require_root_and_bpf()
    require_trap_workloads()
    unittest.main(verbosity=2)
