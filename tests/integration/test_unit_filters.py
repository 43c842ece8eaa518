# SPDX-License-Identifier: MIT
"""Processes by unit, comm, pid and user: the filters of Top and Watch, Watch's exited list,
UnitHistory and `trapstat history --unit`, against a real trapstatd and workloads with exactly
known traps (tests/helpers/raise-traps), put into units by cgroups named like units.

Unit A: root's "ut-ud" (300 #UD, exited) and "ut-bp" (200 #BP, still running).
Unit B: root's "ut-gp" (100 #GP, exited) and the test user's "ut-de" (50 #DE, exited).
The Watch test uses units C and D of its own, so that the sums above stay what they are."""
import csv
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import (T, user_name, Daemon, binary, create_user, exited_history, history, make_cgroup, remove_cgroup, remove_user,  # noqa: E402
                    require_root_and_bpf, require_trap_workloads, wait_for)
from varlink_raw import Connection  # noqa: E402

USER = user_name("trapstat-unit-test")
# What trapstat prints beside the undefined instruction and the breakpoint (common/trap-vectors.h).
DESCRIPTIONS = {"UD": "invalid opcode", "BP": "breakpoint", "UNKNOWN": "undefined instruction",
                "BRK64": "BRK instruction"}
# With the test's pid: two runs side by side on one machine (two checkouts) never share a cgroup.
PREFIX = f"trapstat-test-units-{os.getpid()}-"
UNITS = {name: f"{PREFIX}{name}.service" for name in "abcd"}
# Both test units, not the Watch test's: a glob the other tests' processes do not match.
AB = f"{PREFIX}[ab].service"


def invalid(member):
    return {"error": "org.varlink.service.InvalidParameter", "parameters": {"parameter": member}}


def total_traps(history):
    """The TRAPS cell of the total line of trapstat history: the last, after the fault counts."""
    line = next(line for line in history.splitlines() if line.startswith("total "))
    return line.split()[-1]


class UnitFilters(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.uid = create_user(USER).pw_uid
        cls.cgroups, cls.held = {}, []
        cls.daemon = None
        try:
            for name, unit in UNITS.items():
                cls.cgroups[name] = make_cgroup(unit)
            cls.daemon = Daemon().__enter__()
            os.chmod(cls.daemon.dir, 0o755)
            cls.trapstat_copy = shutil.copy2(binary("TRAPSTAT"), os.path.join(cls.daemon.dir, "trapstat"))
            os.chmod(cls.trapstat_copy, 0o755)
            cls.ud = cls.workload("a", "ut-ud", 300, T["UD"])
            cls.bp = cls.workload("a", "ut-bp", 200, T["BP"])
            cls.gp = cls.workload("b", "ut-gp", 100, T["GP"])
            cls.de = cls.workload("b", "ut-de", 50, T["DE"], user=True)
            for w in (cls.ud, cls.gp, cls.de):
                cls.release(w)
            for w in (cls.ud, cls.gp, cls.de):
                exited_history(cls.daemon, w["pid"])
            # The running one's traps are stored too.
            wait_for(lambda: (history(cls.daemon, cls.bp["pid"]) or {}).get("total", {}).get("traps") == {T["BP"]: 200},
                     what="the 200 #BP of the running workload in its history")
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        # The daemon is stopped whatever failed before: one left running would take every later
        # test's VMA lookups (sites) and count their processes twice.
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
    def workload(cls, unit, comm, n, vector, user=False):
        """raise-traps N --only VECTOR --hold, named comm, in the unit's cgroup (joined between fork
        and exec, after the child faulted and was seen outside it), as the test user or root;
        once it raised its traps and trapstatd knows it in its unit. Holds until release()."""
        path = os.path.join(cls.daemon.dir, comm)
        if not os.path.exists(path):
            shutil.copy2(binary("RAISE_TRAPS"), path)
            os.chmod(path, 0o755)
        cgroup = cls.cgroups[unit]

        def join():
            # As a service manager's child may: fault first (trapstatd sees the child, still
            # outside the unit, at its next tick), then move into the unit and exec. The unit
            # is the one the process execs in.
            bytearray(1 << 20)
            time.sleep(0.3)
            with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
                f.write("0")

        argv = [path, str(n), "--only", vector, "--hold"]
        if user:
            argv = ["setpriv", f"--reuid={cls.uid}", f"--regid={cls.uid}", "--init-groups", *argv]
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, preexec_fn=join)
        out = json.loads(p.stdout.readline())
        w = {"proc": p, "pid": out["pid"], "unit": UNITS[unit], "comm": comm, "traps": {vector: n}}
        cls.held.append(w)
        with Connection(cls.daemon.socket) as c:
            def known():
                ps = c.call("io.trapstat.ListProcesses", {"pid": w["pid"], "includeExited": True})["processes"]
                return ps[0] if ps and ps[0]["unit"] == w["unit"] and ps[0]["comm"] == comm else None

            w["startTime"] = wait_for(known, what=f"{comm} known in {w['unit']}")["startTime"]
        return w

    @classmethod
    def release(cls, w):
        if w in cls.held:
            cls.held.remove(w)
            w["proc"].stdin.close()
            w["proc"].wait(timeout=30)
            w["proc"].stdout.close()

    def call(self, method, parameters):
        """The reply to one call as root, error or not."""
        with Connection(self.daemon.socket) as c:
            c.send(method, parameters)
            return c.read()

    def top(self, **filters):
        """Top's rows as {pid: traps} (an hour's window, every row), as root."""
        reply = self.call("io.trapstat.Top", {"windowSec": 3600, "limit": 10000, **filters})
        self.assertNotIn("error", reply)
        return {r["process"]["pid"]: r["counters"]["traps"] for r in reply["parameters"]["rows"]}

    def expect(self, *workloads):
        return {w["pid"]: w["traps"] for w in workloads}

    def as_user(self, *args, check=True):
        p = subprocess.run(["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--init-groups",
                            self.trapstat_copy, "--socket", self.daemon.socket, *args],
                           capture_output=True, text=True, timeout=30)
        if check and p.returncode != 0:
            raise AssertionError(f"trapstat {args} as {USER} exited {p.returncode}: {p.stderr.strip()}")
        return p

    def test_top_filters(self):
        self.assertEqual(self.top(unit=UNITS["a"]), self.expect(self.ud, self.bp))
        self.assertEqual(self.top(unit=AB), self.expect(self.ud, self.bp, self.gp, self.de))
        self.assertEqual(self.top(unit=f"{PREFIX}[^a].service", comm="ut-*"), self.expect(self.gp, self.de))
        self.assertEqual(self.top(comm="ut-[bg]p"), self.expect(self.bp, self.gp))
        self.assertEqual(self.top(pids=[self.ud["pid"], self.gp["pid"]]), self.expect(self.ud, self.gp))
        self.assertEqual(self.top(unit=AB, uid=self.uid), self.expect(self.de))
        self.assertEqual(self.top(unit=AB, uid=0), self.expect(self.ud, self.bp, self.gp))
        # All of them at once: the processes in every one.
        self.assertEqual(self.top(pids=[self.ud["pid"], self.bp["pid"], self.de["pid"]], unit="*-a.service",
                                  comm="ut-*", uid=0), self.expect(self.ud, self.bp))
        # The user's own Top: only theirs, and nothing of root's when asked for.
        rows = json.loads(self.as_user("call", "io.trapstat.Top", json.dumps({"windowSec": 3600, "unit": AB})).stdout)
        self.assertEqual({r["process"]["pid"]: r["counters"]["traps"] for r in rows["rows"]}, self.expect(self.de))
        rows = json.loads(self.as_user("call", "io.trapstat.Top", json.dumps({"windowSec": 3600, "uid": 0})).stdout)
        self.assertEqual(rows["rows"], [])

    def unit_history(self, unit):
        reply = self.call("io.trapstat.UnitHistory", {"unit": unit})
        self.assertNotIn("error", reply)
        h = reply["parameters"]
        # The total is the sum of the samples, key by key.
        summed = {}
        for s in h["samples"]:
            for k, v in s["counters"]["traps"].items():
                summed[k] = summed.get(k, 0) + v
        self.assertEqual(summed, h["total"]["traps"])
        return h

    def test_unit_history(self):
        h = self.unit_history(UNITS["a"])
        self.assertEqual(h["units"], [UNITS["a"]])
        self.assertEqual(h["total"]["traps"], {T["UD"]: 300, T["BP"]: 200})
        self.assertEqual(h["total"]["signals"], {"SIGILL": 300, "SIGTRAP": 200})
        self.assertEqual((h["processes"], h["running"]), (2, 1))
        h = self.unit_history(UNITS["b"])
        self.assertEqual(h["total"]["traps"], {T["GP"]: 100, T["DE"]: 50})
        self.assertEqual((h["processes"], h["running"]), (2, 0))
        h = self.unit_history(AB)
        self.assertEqual(h["units"], [UNITS["a"], UNITS["b"]])
        self.assertEqual(h["total"]["traps"], {T["UD"]: 300, T["BP"]: 200, T["GP"]: 100, T["DE"]: 50})
        self.assertEqual((h["processes"], h["running"]), (4, 1))
        # A range before all of them: the units are known, with nothing in it.
        reply = self.call("io.trapstat.UnitHistory", {"unit": AB, "untilUsec": 1000000})
        self.assertEqual((reply["parameters"]["processes"], reply["parameters"]["samples"]), (0, []))

        unknown = f"{PREFIX}none.service"
        self.assertEqual(self.call("io.trapstat.UnitHistory", {"unit": unknown}),
                         {"error": "io.trapstat.NoSuchUnit", "parameters": {"unit": unknown}})

    def test_unprivileged(self):
        # Only their own process of unit B; NoSuchUnit for A, which has only root's.
        h = json.loads(self.as_user("--json", "history", "--unit", UNITS["b"]).stdout)
        self.assertEqual(h["units"], [UNITS["b"]])
        self.assertEqual(h["total"]["traps"], {T["DE"]: 50})
        self.assertEqual((h["processes"], h["running"]), (1, 0))
        h = json.loads(self.as_user("call", "io.trapstat.UnitHistory", json.dumps({"unit": AB})).stdout)
        self.assertEqual((h["units"], h["total"]["traps"]), ([UNITS["b"]], {T["DE"]: 50}))
        p = self.as_user("history", "--unit", UNITS["a"], check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"no process of a unit matching '{UNITS['a']}'", p.stderr)

    def test_invalid_parameters(self):
        pids65 = list(range(1, 66))
        cases = [
            ("io.trapstat.Top", {"pids": pids65}, "pids"),
            ("io.trapstat.Top", {"pids": []}, "pids"),
            ("io.trapstat.Top", {"pids": [0]}, "pids"),
            ("io.trapstat.Top", {"pids": [1, 2 ** 31]}, "pids"),
            ("io.trapstat.Top", {"uid": -1}, "uid"),
            ("io.trapstat.Top", {"uid": 2 ** 32}, "uid"),
            ("io.trapstat.Top", {"unit": "u" * 257}, "unit"),
            ("io.trapstat.Top", {"comm": "c" * 257}, "comm"),
            ("io.trapstat.UnitHistory", {"unit": "u" * 257}, "unit"),
            ("io.trapstat.UnitHistory", {"unit": "x", "resolutionSec": -10}, "resolutionSec"),
            ("io.trapstat.UnitHistory", {"unit": "x", "resolutionSec": 15}, "resolutionSec"),
            ("io.trapstat.UnitHistory", {"unit": "x", "sinceUsec": -1}, "sinceUsec"),
            ("io.trapstat.UnitHistory", {"unit": "x", "sinceUsec": 10, "untilUsec": 5}, "untilUsec"),
        ]
        for method, parameters, member in cases:
            with self.subTest(method=method, member=member, parameters=str(parameters)[:60]):
                self.assertEqual(self.call(method, parameters), invalid(member))
        for parameters, member in (({"pids": pids65}, "pids"), ({"unit": "u" * 257}, "unit"),
                                   ({"comm": "c" * 257}, "comm")):
            with self.subTest(method="Watch", member=member), Connection(self.daemon.socket) as c:
                c.send("io.trapstat.Watch", parameters, more=True)
                self.assertEqual(c.read(), invalid(member))
        # At the bounds: 64 pids and 256 bytes are taken.
        self.assertEqual(self.top(pids=pids65[:64], unit="u" * 256, comm="c" * 256), {})
        self.assertEqual(self.call("io.trapstat.UnitHistory", {"unit": "u" * 256})["error"], "io.trapstat.NoSuchUnit")

    def test_cli_history(self):
        # No dot, no glob character: NAME.service, as systemctl takes it.
        out = self.daemon_cli("history", "--unit", f"{PREFIX}a")
        self.assertEqual(out.splitlines()[0], f"unit {UNITS['a']}: 2 processes, 1 running")
        self.assertRegex(out, rf"(?m)^  #{T['UD']} {DESCRIPTIONS[T['UD']]} +300$")
        self.assertRegex(out, rf"(?m)^  #{T['BP']} {DESCRIPTIONS[T['BP']]} +200$")
        self.assertEqual(total_traps(out), "500", out)
        out = self.daemon_cli("history", "--unit", AB, "--step", "1m")
        self.assertEqual(out.splitlines()[0], f"units {UNITS['a']}, {UNITS['b']}: 4 processes, 1 running")
        self.assertEqual(total_traps(out), "650", out)

        h = json.loads(self.daemon_cli("--json", "history", "--unit", UNITS["a"]))
        self.assertEqual((h["total"]["traps"], h["processes"], h["running"]), ({T["UD"]: 300, T["BP"]: 200}, 2, 1))
        rows = list(csv.DictReader(io.StringIO(self.daemon_cli("history", "--unit", UNITS["a"], "--csv"))))
        self.assertNotIn("pid", rows[0])
        self.assertEqual(sum(int(r["traps"]) for r in rows), 500)
        self.assertEqual(sum(int(r[f"traps.{T['UD']}"]) for r in rows), 300)

        p = subprocess.run([binary("TRAPSTAT"), "--socket", self.daemon.socket, "history", "1", "--unit", "x"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2)
        self.assertIn("a PID and --unit exclude each other", p.stderr)

    def daemon_cli(self, *args):
        p = subprocess.run([binary("TRAPSTAT"), "--socket", self.daemon.socket, *args], capture_output=True, text=True,
                           timeout=30, env=dict(os.environ, LC_ALL="C.UTF-8"))
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def test_unit_named_at_the_exec_of_a_process_gone_before_the_tick(self):
        # A unit that ends, and whose cgroup goes, within a tick: /proc can no longer tell of the
        # process when the tick reads it, nor can a walk of the hierarchy find its cgroup. The
        # exec event has the unit, named by BPF from the cgroup at the exec.
        unit = f"{PREFIX}short.service"
        path = os.path.join(self.daemon.dir, "ut-short")
        shutil.copy2(binary("RAISE_TRAPS"), path)
        cgroup = make_cgroup(unit)
        try:
            def join():
                with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
                    f.write("0")

            out = subprocess.run([path, "20", "--only", T["UD"]], preexec_fn=join, capture_output=True, text=True,
                                 check=True, timeout=30)
        finally:
            remove_cgroup(cgroup)
        pid = json.loads(out.stdout)["pid"]
        h = exited_history(self.daemon, pid)
        self.assertEqual((h["process"]["comm"], h["process"]["unit"], h["total"]["traps"]), ("ut-short", unit, {T["UD"]: 20}))

    def test_unit_of_a_cgroup_deeper_than_bpf_walks_from_its_id(self):
        # The same, but in a cgroup 16 levels below the unit's, past what BPF walks up from it at
        # the exec: the exec event's cgroup id names the unit, through a walk of the hierarchy.
        # The cgroups stay until the process is known (that walk has to find them).
        unit = f"{PREFIX}deep.service"
        path = os.path.join(self.daemon.dir, "ut-deep")
        shutil.copy2(binary("RAISE_TRAPS"), path)
        cgroups = [make_cgroup(unit)]
        for level in range(16):
            cgroups.append(os.path.join(cgroups[-1], f"n{level}"))
            os.mkdir(cgroups[-1])
        try:
            # The daemon walks the hierarchy at most once a second: not within one of another
            # test's walk.
            time.sleep(1.1)

            def join():
                with open(os.path.join(cgroups[-1], "cgroup.procs"), "w") as f:
                    f.write("0")

            out = subprocess.run([path, "20", "--only", T["UD"]], preexec_fn=join, capture_output=True, text=True,
                                 check=True, timeout=30)
            h = exited_history(self.daemon, json.loads(out.stdout)["pid"])
        finally:
            for cgroup in reversed(cgroups):
                remove_cgroup(cgroup)
        self.assertEqual((h["process"]["comm"], h["process"]["unit"], h["total"]["traps"]), ("ut-deep", unit, {T["UD"]: 20}))

    def test_watch(self):
        """A Watch of unit C streams only its rows, and lists a workload of it in exited in the
        tick it exits; unit D's workload, running and exiting beside it, shows in neither."""
        replies = []

        def read(c):
            # Every reply, at once: a stream not read misses ticks, and their counts with them.
            try:
                while True:
                    replies.append(c.read())
            except OSError:  # closed below
                pass

        with Connection(self.daemon.socket) as c:
            c.send("io.trapstat.Watch", {"unit": UNITS["c"], "sortBy": "traps", "limit": 10000}, more=True)
            reader = threading.Thread(target=read, args=(c,), daemon=True)
            reader.start()
            inside = self.workload("c", "ut-ud", 10, T["UD"])
            outside = self.workload("d", "ut-gp", 10, T["GP"])
            self.release(inside)
            self.release(outside)

            def exited_at():
                for i, r in enumerate(list(replies)):
                    if inside["pid"] in {e["pid"] for e in r["parameters"]["exited"]}:
                        return i + 1
                return None

            n = wait_for(exited_at, what="the workload in a Watch reply's exited")
            wait_for(lambda: len(replies) > n, what="the tick after it")
            c.sock.shutdown(socket.SHUT_RDWR)
            reader.join(timeout=10)

        ud = 0
        for i, reply in enumerate(replies[:n + 1]):
            self.assertTrue(reply.get("continues"), reply)
            r = reply["parameters"]
            self.assertEqual(r["missedTicks"], 0)
            for row in r["rows"]:
                self.assertEqual(row["process"]["unit"], UNITS["c"], row)
                if row["process"]["pid"] == inside["pid"]:
                    ud += row["counters"]["traps"].get(T["UD"], 0)
            # Listed once, in the tick it exited, and nobody else: not D's workload.
            self.assertEqual(r["exited"], [{"pid": inside["pid"], "startTime": inside["startTime"]}] if i == n - 1 else [])
        # Its traps came in the ticks before: exactly 10 in all.
        self.assertEqual(ud, 10)


if __name__ == "__main__":
    require_root_and_bpf()
    require_trap_workloads()
    unittest.main(verbosity=2)
