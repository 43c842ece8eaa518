# SPDX-License-Identifier: MIT
"""trapstat's verbs against a real trapstatd and known workloads: batch tables, JSON and CSV,
with exact counts where the workload makes them exact."""
import csv
import io
import json
import os
import platform
import re
import sqlite3
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import (Daemon, SharedDaemonTest, assert_usage_errors, binary, exited_history,  # noqa: E402
                    require_root_and_bpf, require_x86_64, run_workload, trapstat, trapstat_json, trapstat_on_terminal)

N = 200
VECTORS = ("DE", "DB", "BP", "UD", "GP", "PF", "MF", "AC", "XM")


def on_terminal(socket, *args, columns=80):
    """Runs trapstat with stdout on a pseudo-terminal of that width; its lines, without colors."""
    out = trapstat_on_terminal(socket, *args, columns=columns, onlcr=False).stdout  # "\n" kept as it is
    return re.sub(r"\x1b\[[0-9;]*m", "", out.decode()).split("\n")


class Cli(SharedDaemonTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.traps = run_workload("RAISE_TRAPS", N)
        cls.pages = run_workload("FAULT_PAGES", 5000)
        exited_history(cls.daemon, cls.traps["pid"])
        exited_history(cls.daemon, cls.pages["pid"])

    def cli(self, *args, **kw):
        return trapstat(self.daemon.socket, *args, **kw)

    def test_history_json_exact_traps(self):
        h = trapstat_json(self.daemon.socket, "history", str(self.traps["pid"]))
        self.assertEqual(h["process"]["comm"], "raise-traps")
        self.assertEqual(h["total"]["traps"], {v: N for v in VECTORS})
        self.assertEqual(h["total"]["signals"], self.traps["signals"])
        # --json also after the verb.
        self.assertEqual(json.loads(self.cli("history", str(self.traps["pid"]), "--json").stdout), h)

    def test_history_csv_matches_json(self):
        pid = self.traps["pid"]
        h = trapstat_json(self.daemon.socket, "history", str(pid))
        rows = list(csv.DictReader(io.StringIO(self.cli("history", str(pid), "--csv").stdout)))
        self.assertEqual(len(rows), len(h["samples"]))
        for field in ("user", "kernel", "minor", "major", "read", "write", "exec", "protection"):
            self.assertEqual(sum(int(r[field]) for r in rows), h["total"]["faults"][field], field)
        # The major faults by cause and their time: each sample's as the reply has it, empty where
        # the daemon did not count the causes (null).
        for r, s in zip(rows, h["samples"]):
            by_cause, ft = s["counters"]["faults"].get("majorByCause"), s["counters"]["faultTime"]
            for cause in ("file", "anon", "shmem"):
                self.assertEqual(r[f"majorByCause.{cause}"], "" if by_cause is None else str(by_cause[cause]))
                self.assertEqual(r[f"majorNsByCause.{cause}"],
                                 "" if by_cause is None else str(ft["majorNsByCause"][cause]))
        for v in VECTORS:
            self.assertEqual(sum(int(r[f"traps.{v}"]) for r in rows), N, v)
        self.assertEqual(sum(int(r["traps"]) for r in rows), N * len(VECTORS))
        self.assertEqual(sum(int(r["signals.SIGILL"]) for r in rows), N)
        for r, s in zip(rows, h["samples"]):
            self.assertEqual(int(r["timeUsec"]), s["timeUsec"])
            self.assertEqual(int(r["pid"]), pid)
            self.assertRegex(r["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$")

    def test_history_table(self):
        pid = self.pages["pid"]
        text = self.cli("history", str(pid)).stdout
        self.assertIn(f"pid {pid} (fault-pages)", text)
        self.assertIn("exited", text)
        self.assertIn("fault-pages 5000", text)  # the command line
        self.assertRegex(text, r"(?m)^lifetime: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d to ")
        self.assertRegex(text, r"(?m)^total\s+\d")
        self.assertIn("TIME             USER KERNEL  MINOR  MAJOR   READ  WRITE   EXEC   PROT  TRAPS\n", text)
        # The major faults' causes in a table of their own, when there were major faults: counted,
        # or a line that says they were not.
        total = exited_history(self.daemon, pid)["total"]["faults"]
        if total["major"] == 0:
            self.assertNotIn("major faults by cause", text)
        elif total.get("majorByCause") is None:
            self.assertIn("\nmajor faults by cause: not counted (trapstat status says why)\n", text)
        else:
            by = total["majorByCause"]
            self.assertRegex(text, r"(?m)^TIME +MAJOR +FILE +ANON +SHMEM( |$)")
            self.assertRegex(text, rf"(?m)^total +{total['major']} +{by['file']} +{by['anon']} +{by['shmem']}( |$)")
        # A sparkline per non-zero counter; without a UTF-8 locale (meson's env has none set
        # here, so force it) in ASCII.
        env = dict(os.environ, LC_ALL="C")
        p = subprocess.run([binary("TRAPSTAT"), "--socket", self.daemon.socket, "history", str(pid)], env=env,
                           capture_output=True, text=True, check=True)
        self.assertRegex(p.stdout, r"(?m)^  user\s+[ .:=+*#@-]*@[ .:=+*#@-]*  max ")
        self.assertNotIn("#UD", p.stdout)  # no traps: no trap lines
        env["LC_ALL"] = "C.UTF-8"
        p = subprocess.run([binary("TRAPSTAT"), "--socket", self.daemon.socket, "history", str(pid)], env=env,
                           capture_output=True, text=True, check=True)
        self.assertRegex(p.stdout, "(?m)^  user\\s+[ \u2581-\u2588]*\u2588")
        self.assertNotIn("\033[", p.stdout)  # not a terminal: no color

        text = self.cli("history", str(self.traps["pid"])).stdout
        self.assertRegex(text, rf"(?m)^  #UD invalid opcode\s+{N}$")
        self.assertRegex(text, rf"(?m)^  SIGILL/ILL_ILLOPN\s+{N}$")

    def test_history_times(self):
        pid = self.traps["pid"]
        full = trapstat_json(self.daemon.socket, "history", str(pid))
        t0 = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 3600))
        for since in ("1h", t0, time.strftime("%Y-%m-%d %H:%M", time.localtime(time.time() - 3600)), "2h ago"):
            h = trapstat_json(self.daemon.socket, "history", str(pid), "--since", since, "--until", "now")
            self.assertEqual(h["total"], full["total"], since)
        # A window after the process: nothing in it.
        h = trapstat_json(self.daemon.socket, "history", str(pid), "--since", "@" + str(int(time.time()) + 60))
        self.assertEqual(h["samples"], [])
        h = trapstat_json(self.daemon.socket, "history", str(pid), "--step", "1m")
        self.assertEqual(h["total"]["traps"]["UD"], N)
        for bad in ("yesterdayish", "2026-02-30", "25:00"):
            p = self.cli("history", str(pid), "--since", bad, check=False)
            self.assertEqual(p.returncode, 2, bad)
            self.assertIn("invalid --since", p.stderr)
            self.assertIn("Usage: trapstat history", p.stderr)

    def test_unknown_pid(self):
        p = self.cli("history", "4194305", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no process with pid 4194305", p.stderr)
        self.assertEqual(p.stderr.count("\n"), 1)
        self.assertEqual(p.stdout, "")

    def test_sites_unknown_pid(self):
        p = self.cli("sites", "4194305", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no process with pid 4194305", p.stderr)
        self.assertEqual(p.stderr.count("\n"), 1)
        self.assertEqual(p.stdout, "")
        p = self.cli("sites", str(self.traps["pid"]), "--start-time", "1", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"no process with pid {self.traps['pid']}", p.stderr)

    def call_sites(self, **params):
        return self.cli("call", "io.trapstat.Sites", json.dumps(params), check=False)

    def test_sites_invalid_parameters(self):
        """Bounds the IDL cannot state, as History and Top bound theirs: InvalidParameter naming
        the member, before the process is even looked up."""
        pid = self.traps["pid"]
        for params, member in (({"pid": pid, "limit": 0}, "limit"),
                               ({"pid": pid, "limit": 10001}, "limit"),
                               ({"pid": pid, "limit": -1}, "limit"),
                               ({"pid": pid, "sinceUsec": 1700000000000001, "untilUsec": 1700000000000000}, "untilUsec"),
                               ({"pid": 4194305, "sinceUsec": 2, "untilUsec": 1}, "untilUsec"),
                               ({"pid": pid, "sinceUsec": -1}, "sinceUsec"),
                               ({"pid": pid, "startTime": -1}, "startTime"),
                               ({"pid": 0}, "pid"),
                               ({"pid": 1 << 32}, "pid"),
                               ({"pid": pid, "kind": "both"}, "kind")):  # the IDL's enum
            with self.subTest(params=params):
                p = self.call_sites(**params)
                self.assertEqual(p.returncode, 1)
                self.assertIn(f"trapstatd rejected parameter '{member}' of io.trapstat.Sites", p.stderr)
                self.assertEqual(p.stdout, "")
        # The bounds themselves are fine; so is an empty range's edge (since = until).
        for params in ({"limit": 1}, {"limit": 10000}, {"sinceUsec": 5, "untilUsec": 5}, {"kind": "trap"}):
            with self.subTest(params=params):
                p = self.call_sites(pid=pid, **params)
                self.assertEqual(p.returncode, 0, p.stderr)
                reply = json.loads(p.stdout)
                self.assertEqual(reply["process"]["pid"], pid)
                self.assertLessEqual(len(reply["sites"]), params.get("limit", 20))
        self.assertEqual(json.loads(self.call_sites(pid=pid, sinceUsec=5, untilUsec=5).stdout)["sites"], [])

    def test_sites_outputs_agree(self):
        """The verb's JSON is the reply; its CSV and table hold the same sites (however many the
        workload left: exact counts are the bpf suite's test_sites)."""
        pid = str(self.traps["pid"])
        reply = json.loads(self.call_sites(pid=self.traps["pid"], limit=10000).stdout)
        self.assertEqual(trapstat_json(self.daemon.socket, "sites", pid, "--limit", "10000"), reply)
        traps = trapstat_json(self.daemon.socket, "sites", pid, "--traps", "-n", "10000")["sites"]
        self.assertEqual(traps, [s for s in reply["sites"] if s["kind"] == "trap"])
        for s in reply["sites"]:
            self.assertEqual(s["estimated"], s["count"] * s["period"], s)
        rows = list(csv.DictReader(io.StringIO(self.cli("sites", pid, "--limit", "10000", "--csv").stdout, newline="")))
        self.assertEqual(len(rows), len(reply["sites"]))
        for row, s in zip(rows, reply["sites"]):
            self.assertEqual((int(row["count"]), int(row["estimated"]), row["object"], row["vector"]),
                             (s["count"], s["estimated"], s["object"], s["vector"]))
        lines = self.cli("sites", pid, "--limit", "10000").stdout.split("\n")
        self.assertRegex(lines[0], rf"^pid {pid} \(raise-traps\), user \S+ \(uid \d+\), exited$")
        if reply["sites"]:
            # A column TIME where there are fault or major sites (traps take no time to tell; a
            # major fault of the workload's start on a busy machine has its site).
            faults = any(s["kind"] in ("fault", "major") for s in reply["sites"])
            self.assertRegex(lines[1], r"^KIND +VECTOR +COUNT +TIME +OBJECT +WHERE +MEMORY$" if faults
                             else r"^KIND +VECTOR +COUNT +OBJECT +WHERE +MEMORY$")
            self.assertEqual(len([x for x in lines if re.match(r"^(trap |fault|major) ", x)]), len(reply["sites"]))
        # history's table shows the top trap sites exactly when there are some.
        text = self.cli("history", pid).stdout
        self.assertEqual("top 3 trap sites" in text, bool(traps))

    def test_fault_sample_period(self):
        status = trapstat_json(self.daemon.socket, "status")
        self.assertEqual(status["faultSamplePeriod"], 512)  # trapstatd's default --fault-sample
        self.assertRegex(self.cli("status").stdout, r"(?m)^sites: +every trap; 1 in 512 page faults sampled$")
        with Daemon(extra_args=("--fault-sample", "0")) as off, Daemon(extra_args=("--fault-sample", "1024")) as other:
            self.assertEqual(trapstat_json(off.socket, "status")["faultSamplePeriod"], 0)
            self.assertIn("page faults not sampled", trapstat(off.socket, "status").stdout)
            self.assertEqual(trapstat_json(other.socket, "status")["faultSamplePeriod"], 1024)

    def test_top_batch(self):
        pid = self.traps["pid"]
        rows = trapstat_json(self.daemon.socket, "top", "-b", "-n", "1", "--sort", "traps", "--limit", "1000")["rows"]
        row = next(r for r in rows if r["process"]["pid"] == pid)
        self.assertEqual(row["counters"]["traps"]["UD"], N)
        text = self.cli("top", "-b", "-n", "2", "-d", "200ms", "--sort", "traps", "--limit", "1000").stdout
        self.assertEqual(text.count("trapstat top - "), 2)
        # Tables in human units: 1800 traps are "1.80k".
        self.assertRegex(text, rf"(?m)^\s*{pid}(\s+(\d+|-))? raise-traps\s.*\s1\.80k\s+[A-Z]{{2}}:{N}\s[A-Z]{{2}}:{N}\s")
        # Every kind of fault in the table, as history has them; %STALL where the kernel keeps
        # its delay accounting (kernel.task_delayacct).
        self.assertRegex(text, r"(?m)^ +PID( +NSPID)? COMM +USER KERNEL  MINOR  MAJOR   FILE   ANON  SHMEM   READ  WRITE"
                               r"   EXEC   PROT    FTIME( %STALL)?  TRAPS  VECTORS ")

        # By major faults of a cause: the short names, the IDL's in the title and the call.
        for arg, name in (("file", "majorFile"), ("anon", "majorAnon"), ("shmem", "majorShmem")):
            reply = trapstat_json(self.daemon.socket, "top", "-b", "-n", "1", "--sort", arg, "--limit", "1000")
            by_cause = [r["counters"]["faults"].get("majorByCause") for r in reply["rows"]]
            if all(b is not None for b in by_cause):
                counts = [b[arg] for b in by_cause]
                self.assertEqual(counts, sorted(counts, reverse=True), arg)
            text = self.cli("top", "-b", "-n", "1", "--sort", arg).stdout
            self.assertRegex(text.split("\n")[0], rf"^trapstat top - .* sorted by {name}$")

    def test_top_json_stream_counts_a_workload(self):
        """--json top: one Watch reply per tick; the ticks sum to the history, to the fault."""
        proc = subprocess.Popen([binary("TRAPSTAT"), "--socket", self.daemon.socket, "--json", "top", "-n", "40",
                                 "--limit", "10000"], stdout=subprocess.PIPE, text=True)
        first = proc.stdout.readline()  # the stream runs before the workload starts
        lines = [first]
        reader = threading.Thread(target=lambda: lines.extend(proc.stdout))
        reader.start()
        helper = run_workload("FAULT_PAGES", 3000)
        reader.join(timeout=60)
        self.assertEqual(proc.wait(timeout=10), 0)
        replies = [json.loads(line) for line in lines]
        self.assertEqual(len(replies), 40)
        for r in replies:
            self.assertEqual(set(r), {"timeUsec", "intervalUsec", "total", "processes", "rows", "missedTicks", "exited"})
            self.assertEqual(r["processes"], len(r["rows"]))  # --limit 10000: every process
        streamed = sum(row["counters"]["faults"]["user"] for r in replies for row in r["rows"]
                       if row["process"]["pid"] == helper["pid"])
        h = exited_history(self.daemon, helper["pid"])
        self.assertGreaterEqual(streamed, 3000)
        self.assertEqual(streamed, h["total"]["faults"]["user"])

    def test_top_batch_stream_rates(self):
        stop = threading.Event()

        def loop():
            while not stop.is_set():
                run_workload("FAULT_PAGES", 2000)

        t = threading.Thread(target=loop)
        t.start()
        try:
            text = self.cli("top", "-b", "--stream", "-n", "2", "-d", "1s", "--limit", "100").stdout
        finally:
            stop.set()
            t.join()
        self.assertEqual(text.count("trapstat top - "), 2)
        self.assertRegex(text, r"rates over 1s \([5-9] ticks\)")
        self.assertIn("USER/s", text)
        # PID, S (X: exited within the interval), COMM, the rates.
        self.assertRegex(text, r"(?m)^\s*\d+(\s+(\d+|-))? [ X] fault-pages\s+\d")

    def test_procs(self):
        pid = self.traps["pid"]
        procs = trapstat_json(self.daemon.socket, "procs", "--exited", "--comm", "raise-tr*")["processes"]
        self.assertIn(pid, [p["pid"] for p in procs])
        self.assertTrue(all(p["comm"].startswith("raise-tr") for p in procs))
        self.assertEqual(trapstat_json(self.daemon.socket, "procs", "--exited", "--comm", "no-such-comm*")["processes"], [])
        # Exited: only with --exited.
        self.assertNotIn(pid, [p["pid"] for p in trapstat_json(self.daemon.socket, "procs", "--comm", "raise-tr*")["processes"]])
        self.assertEqual(trapstat_json(self.daemon.socket, "procs", "--exited", "--unit", "no-such.service")["processes"], [])
        text = self.cli("procs", "--exited", "--pid", str(pid)).stdout
        # START-TIME, then CONTAINER and UNIT: none.
        self.assertRegex(text, rf"(?m)^\s*{pid} raise-traps\s+root\s+exited\s+\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d "
                               rf"{self.traps_start()}\s+-\s+-\s+\S*raise-traps {N}$")
        rows = list(csv.DictReader(io.StringIO(self.cli("procs", "--exited", "--pid", str(pid), "--csv").stdout)))
        self.assertEqual([(int(r["pid"]), r["comm"], r["exited"]) for r in rows], [(pid, "raise-traps", "true")])

    def test_tables_fit_the_terminal(self):
        """On an 80-column terminal history fits as it is and procs is cut at the width, as ps
        does; through a pipe nothing is cut."""
        pid = self.traps["pid"]
        lines = on_terminal(self.daemon.socket, "history", str(pid))
        table = lines[lines.index(next(l for l in lines if l.startswith("TIME "))):]
        self.assertRegex(table[1], r"^\d\d-\d\d \d\d:\d\d:\d\d ")
        long = [l for l in lines if len(l) > 80 and not l.startswith("command:  ")]  # printed whole
        self.assertEqual(long, [])
        self.assertTrue(any(l.startswith("  #UD invalid opcode") for l in lines))

        lines = on_terminal(self.daemon.socket, "procs", "--exited", "--limit", "50")
        self.assertEqual(max(len(l) for l in lines), 80)  # cut, never wrapped
        self.assertTrue(lines[0].startswith("    PID COMM            USER     STATE   LAST SEEN           START-TIME"))
        wide = on_terminal(self.daemon.socket, "procs", "--exited", "--pid", str(pid), columns=200)
        self.assertRegex(wide[1], rf"^\s*{pid} raise-traps .* \S*raise-traps {N}$")
        piped = self.cli("procs", "--exited", "--limit", "50").stdout
        self.assertGreater(max(len(l) for l in piped.splitlines()), 80)

    def traps_start(self):
        return trapstat_json(self.daemon.socket, "history", str(self.traps["pid"]))["process"]["startTime"]

    def test_traps(self):
        t = trapstat_json(self.daemon.socket, "traps", "--since", "1h")
        for v in VECTORS:  # other processes on the machine may trap too
            self.assertGreaterEqual(t["traps"][v], N)
        self.assertGreaterEqual(t["processes"], 1)
        text = self.cli("traps", "--since", "15m").stdout
        self.assertRegex(text, r"(?m)^#UD invalid opcode\s+\S+$")
        self.assertRegex(text, r"(?m)^#XM SIMD floating point\s+\S+$")
        self.assertRegex(text, r"(?m)^SIGILL/ILL_ILLOPN\s+\S+$")

    def test_status_and_call(self):
        text = self.cli("status").stdout
        self.assertRegex(text, r"(?m)^trapstatd \d+\.\d+\.\d+")
        self.assertRegex(text, rf"(?m)^arch: +{re.escape(platform.machine())}$")
        self.assertRegex(text, r"(?m)^  page_fault_user\s+active")
        self.assertRegex(text, r"(?m)^loop: +longest turn \d+\.\d ms \(on_[a-z_]+\), \d+ over 5 ms$")
        self.assertRegex(text, r"(?m)^writer: +\d+ ticks waiting, longest step \d+\.\d ms; \d+\.\d s writing ticks, "
                               r"\d+\.\d s maintaining since start$")
        self.assertIn(self.daemon.socket, text)
        p = self.cli("call", "io.trapstat.ListProcesses", json.dumps({"pid": self.traps["pid"], "includeExited": True}))
        self.assertEqual(json.loads(p.stdout)["processes"][0]["comm"], "raise-traps")
        # A stream does not end by itself: read three replies, then stop the client.
        lines = subprocess.Popen([binary("TRAPSTAT"), "--socket", self.daemon.socket, "call", "--more",
                                  "io.trapstat.Watch", '{"limit": 1}'], stdout=subprocess.PIPE, text=True)
        try:
            for _ in range(3):
                self.assertIn("intervalUsec", json.loads(lines.stdout.readline()))
        finally:
            lines.terminate()
            lines.wait()

    def test_usage_errors(self):
        assert_usage_errors(self, lambda *args: self.cli(*args, check=False), (
            (["procs", "--limit", "0"], "invalid --limit"),
            (["procs", "stray"], "unexpected argument"),
            (["traps", "--since", "later"], "invalid --since"),
            (["history", "1", "--json", "--csv"], "exclude each other"),
            (["history", "1", "--since", "1h", "--until", "2h"], "--since must be before --until"),
            (["sites", "1", "--traps", "--faults"], "--traps, --faults and --major exclude each other"),
            (["sites", "1", "--limit", "10001"], "invalid --limit"),
            (["top", "--stream"], "--stream goes with -b"),
            (["call", "NoDots"], "not a qualified method name"),
            (["call", "io.trapstat.Top", "[1]"], "must be a JSON object"),
        ), usage="Usage: trapstat")

    def test_help_of_every_verb(self):
        for verb in ("top", "history", "sites", "procs", "traps", "status", "call"):
            p = self.cli(verb, "--help")
            self.assertIn(f"Usage: trapstat {verb}", p.stdout)
        self.assertIn("Exit status", self.cli("--help").stdout)


# Sites written into a daemon's database by hand (schema/sql/0006-sites.sql), for a process row
# of this boot written too: what Sites serves and trapstat prints is known exactly, without a
# workload. A pid above any the kernel gives, so that it is never alive.
PID = 4194399
START_TIME = 123456789
T0 = (int(time.time()) // 10 - 60) * 10 * 1000000  # a raw bucket ten minutes ago
# Ids far above those of the rows the daemon writes itself while it runs (its own fault sites).
O = 1000000
OBJECTS = [(O + 1, "/usr/lib/x/libfoo.so", 2049, 77), (O + 2, "/usr/bin/app", 2049, 78),
           (O + 3, "/var/lib/app/data.bin", 2049, 79), (O + 4, "[anon]", 0, 0)]
SITE_ROWS = [(O + 1, O + 1, 0x1234, "foo_init", 0x14), (O + 2, O + 2, 0x2a00, "fill_buffer", 0x2a),
             (O + 3, O + 4, 0x7f0000001000, None, None)]
# (time_usec, kind, vector, period, site_id, memory, memory_object_id, count)
COUNTS = [(T0, 0, 6, 1, O + 1, 0, 0, 37), (T0 + 10000000, 0, 6, 1, O + 1, 0, 0, 3),
          (T0, 1, 14, 64, O + 2, 3, 0, 100), (T0, 1, 14, 64, O + 2, 1, O + 3, 2),
          (T0, 0, 13, 1, O + 3, 6, 0, 5)]


def site_json(kind, vector, obj, offset, symbol, symbol_offset, count, period, memory, memory_object):
    return {"kind": kind, "vector": vector, "object": obj, "offset": offset, "symbol": symbol,
            "symbolOffset": symbol_offset, "count": count, "sampled": kind == "fault", "period": period,
            "estimated": count * period, "memory": memory, "memoryObject": memory_object,
            # Rows without time_ns (a database written before 0009) read as no time.
            "timeNs": 0, "estimatedTimeNs": 0}


# Largest estimate first: the sums over both buckets of the #UD site.
EXPECTED = [
    site_json("fault", "PF", "/usr/bin/app", 0x2a00, "fill_buffer", 0x2a, 100, 64, "heap", None),
    site_json("fault", "PF", "/usr/bin/app", 0x2a00, "fill_buffer", 0x2a, 2, 64, "file", "/var/lib/app/data.bin"),
    site_json("trap", "UD", "/usr/lib/x/libfoo.so", 0x1234, "foo_init", 0x14, 40, 1, "none", None),
    site_json("trap", "GP", "[anon]", 0x7f0000001000, None, None, 5, 1, "unmapped", None),
]


class SitesFromTheDatabase(unittest.TestCase):
    """Sites end to end through trapstatd from rows of its database: the reply member by member,
    kind, limit, the range, and the tables of sites and history."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()
        cls.daemon.start()
        cls.daemon.stop()  # the database exists, migrated; now it is ours until the next start
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot_id = f.read().strip()
        db = sqlite3.connect(os.path.join(cls.daemon.state_dir, "trapstat.db"))
        with db:
            db.execute("INSERT INTO process (boot_id, pid, start_time, comm, cmdline, uid, unit, first_seen_usec, "
                       "last_seen_usec, exited) VALUES (?, ?, ?, 'sites-canned', NULL, 0, NULL, ?, ?, 1)",
                       (boot_id, PID, START_TIME, T0, T0 + 20000000))
            process_id = db.execute("SELECT id FROM process WHERE pid = ?", (PID,)).fetchone()[0]
            db.executemany("INSERT INTO object (id, name, dev, ino) VALUES (?, ?, ?, ?)", OBJECTS)
            db.executemany("INSERT INTO site (id, object_id, file_offset, symbol, symbol_offset) VALUES (?, ?, ?, ?, ?)",
                           SITE_ROWS)
            db.executemany("INSERT INTO site_raw (process_id, time_usec, kind, vector, period, site_id, memory, "
                           "memory_object_id, count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           [(process_id, *c) for c in COUNTS])
            # Written as ticks would have been: into the raw tier, not yet rolled up into the minute
            # and hour tiers (trapstatd rolls them up when it starts again).
            hour = T0 // 3600000000 * 3600000000
            db.execute("UPDATE tier SET rolled_until_usec = MIN(rolled_until_usec, ?) WHERE name != 'raw'", (hour,))
        db.close()
        cls.daemon.start()

    @classmethod
    def tearDownClass(cls):
        cls.daemon.__exit__(None, None, None)

    def sites(self, **params):
        return json.loads(trapstat(self.daemon.socket, "call", "io.trapstat.Sites",
                                   json.dumps({"pid": PID, **params})).stdout)

    def test_reply(self):
        reply = self.sites()
        self.assertEqual(reply["process"]["pid"], PID)
        self.assertEqual(reply["process"]["startTime"], START_TIME)
        self.assertTrue(reply["process"]["exited"])
        self.assertEqual(reply["sites"], EXPECTED)
        self.assertEqual(self.sites(startTime=START_TIME), reply)
        self.assertEqual(trapstat_json(self.daemon.socket, "sites", str(PID)), reply)

    def test_kind_limit_and_range(self):
        self.assertEqual(self.sites(kind="trap")["sites"], EXPECTED[2:])
        self.assertEqual(self.sites(kind="fault")["sites"], EXPECTED[:2])
        self.assertEqual(self.sites(limit=1)["sites"], EXPECTED[:1])
        self.assertEqual(self.sites(kind="trap", limit=1)["sites"], EXPECTED[2:3])
        # The second bucket alone holds 3 of the 40 #UD; the first the rest.
        self.assertEqual(self.sites(sinceUsec=T0 + 10000000)["sites"], [dict(EXPECTED[2], count=3, estimated=3)])
        self.assertEqual(self.sites(untilUsec=T0 + 10000000)["sites"],
                         EXPECTED[:2] + [dict(EXPECTED[2], count=37, estimated=37)] + EXPECTED[3:])
        self.assertEqual(self.sites(sinceUsec=T0 + 20000000)["sites"], [])
        p = trapstat(self.daemon.socket, "sites", str(PID), "--start-time", str(START_TIME + 1), check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"no process with pid {PID}", p.stderr)

    def test_table(self):
        lines = trapstat(self.daemon.socket, "sites", str(PID)).stdout.split("\n")
        self.assertEqual(lines[0], f"pid {PID} (sites-canned), user root (uid 0), exited")
        self.assertRegex(lines[1], r"^KIND +VECTOR +COUNT +TIME +OBJECT +WHERE +MEMORY$")
        self.assertRegex(lines[2], r"^fault +#PF +~6\.40k +- +/usr/bin/app +fill_buffer\+0x2a +\[heap\]$")
        self.assertRegex(lines[3], r"^fault +#PF +~128 +- +/usr/bin/app +fill_buffer\+0x2a +/var/lib/app/data\.bin$")
        self.assertRegex(lines[4], r"^trap +#UD +40 +- +/usr/lib/x/libfoo\.so +foo_init\+0x14 +-$")
        self.assertRegex(lines[5], r"^trap +#GP +5 +- +\[anon\] +0x7f0000001000 +\[unmapped\]$")
        self.assertEqual(lines[6:], ["~ fault counts and times are estimates: 1 in 64 sampled", ""])

    def test_csv(self):
        rows = list(csv.DictReader(io.StringIO(trapstat(self.daemon.socket, "sites", str(PID), "--csv").stdout)))
        self.assertEqual([(r["kind"], r["vector"], r["count"], r["estimated"], r["memory"], r["memoryObject"])
                          for r in rows],
                         [("fault", "PF", "100", "6400", "heap", ""), ("fault", "PF", "2", "128", "file",
                                                                        "/var/lib/app/data.bin"),
                          ("trap", "UD", "40", "40", "none", ""), ("trap", "GP", "5", "5", "unmapped", "")])
        self.assertEqual(rows[3]["offset"], str(0x7f0000001000))
        self.assertEqual((rows[3]["symbol"], rows[3]["symbolOffset"]), ("", ""))
        self.assertEqual((rows[2]["symbol"], rows[2]["symbolOffset"]), ("foo_init", "20"))

    def test_history_top_trap_sites(self):
        text = trapstat(self.daemon.socket, "history", str(PID)).stdout
        section = text[text.index("top 3 trap sites\n"):].split("\n")
        self.assertRegex(section[2], r"^  #UD +40 +/usr/lib/x/libfoo\.so +foo_init\+0x14 +-$")
        self.assertRegex(section[3], r"^  #GP +5 +\[anon\] +0x7f0000001000 +\[unmapped\]$")
        self.assertEqual(section[4:], [""])
        # In the range asked for.
        text = trapstat(self.daemon.socket, "history", str(PID), "--since", f"@{(T0 + 10000000) // 1000000}").stdout
        section = text[text.index("top 3 trap sites\n"):].split("\n")
        self.assertRegex(section[2], r"^  #UD +3 ")
        self.assertEqual(section[3:], [""])
        text = trapstat(self.daemon.socket, "history", str(PID), "--since", f"@{(T0 + 20000000) // 1000000}").stdout
        self.assertNotIn("trap sites", text)


if __name__ == "__main__":
    require_root_and_bpf()
    require_x86_64()  # the trap workloads
    unittest.main(verbosity=2)
