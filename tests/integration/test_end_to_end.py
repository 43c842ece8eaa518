# SPDX-License-Identifier: MIT
"""The whole path once: BPF counts a known workload in the kernel, the daemon drains it into
SQLite, History and Top answer over varlink, the CLI prints them."""
import contextlib
import json
import os
import platform
import pwd
import signal
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import (LOSSLESS_DROPS, Daemon, SharedDaemonTest, binary, exited_history, history,  # noqa: E402
                    require_root_and_bpf, trapstat, trapstat_json, wait_for)

PAGES = 10000


def run_helper(pages=PAGES):
    """The helper's JSON plus its whole life's minflt/majflt as wait4() reports them."""
    with tempfile.TemporaryFile(mode="w+") as out:
        proc = subprocess.Popen([binary("FAULT_PAGES"), str(pages)], stdout=out)
        _, status, rusage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise AssertionError(f"fault-pages exited {proc.returncode}")
        out.seek(0)
        helper = json.load(out)
    helper["ruMinflt"], helper["ruMajflt"] = rusage.ru_minflt, rusage.ru_majflt
    return helper


class EndToEnd(SharedDaemonTest):
    def test_history_counts_the_helper_pages(self):
        d = self.daemon
        helper = run_helper()
        pid, delta = helper["pid"], helper["minfltAfter"] - helper["minfltBefore"]
        self.assertGreaterEqual(delta, PAGES, "the helper itself saw fewer faults than pages written")

        # The helper has exited: its final drain must show up, and the process is marked exited.
        h = exited_history(d, pid)
        faults = h["total"]["faults"]
        self.assertEqual(h["process"]["pid"], pid)
        self.assertEqual(h["process"]["comm"], "fault-pages")
        self.assertGreaterEqual(faults["user"], PAGES)
        self.assertLessEqual(abs(faults["user"] - delta), delta * 0.01,
                             f"user faults {faults['user']} not within 1% of the helper's minflt delta {delta}")
        # Every page was a write to a page not present.
        self.assertGreaterEqual(faults["write"], PAGES)
        # minor and major come from the kernel's own accounting, read by BPF at exit: exactly
        # what wait4() tells the parent (major is usually 0, but the kernel also counts a fault
        # it had to retry as major).
        self.assertGreaterEqual(faults["minor"], helper["minfltAfter"])
        self.assertEqual((faults["minor"], faults["major"]), (helper["ruMinflt"], helper["ruMajflt"]))
        self.assertEqual(sum(s["counters"]["faults"]["user"] for s in h["samples"]), faults["user"])

        # The human table names the process and the total.
        text = trapstat(d.socket, "history", str(pid)).stdout
        self.assertIn(f"pid {pid} (fault-pages)", text)
        self.assertIn("exited", text)
        self.assertRegex(text, r"(?m)^total\s+\d")

    def test_top_lists_the_helper(self):
        d = self.daemon
        helper = run_helper()
        pid = helper["pid"]

        def row():
            rows = trapstat_json(d.socket, "top", "-b", "-n", "1", "--limit", "1000")["rows"]
            return next((r for r in rows if r["process"]["pid"] == pid and r["process"]["exited"]), None)

        r = wait_for(row, what=f"pid {pid} in Top")
        self.assertGreaterEqual(r["counters"]["faults"]["user"], PAGES)
        self.assertEqual(set(r["process"]), {"pid", "startTime", "comm", "cmdline", "uid", "unit", "firstSeenUsec",
                                             "lastSeenUsec", "exited", "nsPid", "pidNamespace", "container"})
        # A process of the test's own pid namespace (the machine's): its pid there is its pid.
        with open("/proc/self/status") as f:
            nspid = next(line for line in f if line.startswith("NSpid:")).split()[1:]
        if len(nspid) == 1:
            self.assertEqual(r["process"]["nsPid"], pid)
            self.assertEqual(r["process"]["pidNamespace"], os.stat("/proc/self/ns/pid").st_ino)
        self.assertEqual(set(r["counters"]["faults"]),
                         {"user", "kernel", "minor", "major", "read", "write", "exec", "protection", "majorByCause"})
        self.assertEqual(set(r["counters"]["faults"]["majorByCause"]), {"file", "anon", "shmem"})

        text = trapstat(d.socket, "top", "-b", "-n", "1", "--limit", "1000").stdout
        self.assertRegex(text, rf"(?m)^\s*{pid}(\s+(\d+|-))? fault-pages\s")

    def test_windows_reaching_before_the_epoch(self):
        # The largest windowSec there is means "everything", not an overflowed start time.
        d = self.daemon
        pid = run_helper()["pid"]
        for method in ("Top", "Traps"):
            p = trapstat(d.socket, "call", f"io.trapstat.{method}", json.dumps({"windowSec": 2**63 - 1}))
            self.assertEqual(p.returncode, 0, p.stderr)
        wait_for(lambda: pid in {r["process"]["pid"] for r in json.loads(
            trapstat(d.socket, "call", "io.trapstat.Top", json.dumps({"windowSec": 2**63 - 1, "limit": 10000})).stdout)
            ["rows"]}, what=f"pid {pid} in Top over the largest window")

    def test_two_runs_are_two_processes(self):
        d = self.daemon
        a, b = run_helper(2000), run_helper(3000)
        for helper, pages in ((a, 2000), (b, 3000)):
            h = exited_history(d, helper["pid"])
            self.assertGreaterEqual(h["total"]["faults"]["user"], pages)
            self.assertLess(h["total"]["faults"]["user"], pages * 1.05)

    def test_exec_renames_the_process(self):
        # The shell faults under its own name first; after exec the same process is fault-pages.
        out = subprocess.run(["sh", "-c", f'exec "{binary("FAULT_PAGES")}" 3000'], capture_output=True, text=True,
                             check=True, timeout=30)
        helper = json.loads(out.stdout)
        h = exited_history(self.daemon, helper["pid"])
        self.assertEqual(h["process"]["comm"], "fault-pages")
        self.assertIn("fault-pages 3000", h["process"]["cmdline"])
        # Faults before and after the exec belong to the one process.
        self.assertGreater(h["total"]["faults"]["user"], 3000)

    def test_exec_after_a_change_of_user(self):
        # setpriv, forked by a root shell, changes its user and then execs: BPF took the process's
        # identity at its first fault, as root, before both. A burst of them at full speed makes
        # some first counted between a tick's drain and the tick's last read of events; their exec
        # waits for the next drain then. Each one listed under its new name has its new user too
        # (without the wait, 54 of 400 were listed as root until the task sweep came by).
        nobody = pwd.getpwnam("nobody")
        n = 300
        sh = subprocess.Popen(["sh", "-c", f'for i in $(seq {n}); do setpriv --reuid={nobody.pw_uid} '
                               f'--regid={nobody.pw_gid} --clear-groups sleep 60 >/dev/null & echo $!; done'],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
        try:
            pids = {int(line) for line in sh.stdout}
            self.assertEqual(len(pids), n)

            def listed():
                ps = trapstat_json(self.daemon.socket, "procs", "--comm", "sleep", "--limit", "100000")["processes"]
                got = {p["pid"]: p for p in ps if p["pid"] in pids}
                return got if len(got) == n else None
            got = wait_for(listed, timeout=30, what=f"{n} sleep processes listed")
            wrong = sorted((pid, p["uid"]) for pid, p in got.items() if p["uid"] != nobody.pw_uid)
            self.assertEqual(wrong, [], f"listed as sleep, but not as uid {nobody.pw_uid}")
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(sh.pid, signal.SIGKILL)
            sh.wait()
            sh.stdout.close()

    def test_status(self):
        st = trapstat_json(self.daemon.socket, "status")
        sources = {s["name"]: s for s in st["sources"]}
        self.assertTrue(sources["page_fault_user"]["active"], sources["page_fault_user"])
        self.assertTrue(sources["sched_process_exit"]["active"])
        self.assertTrue(sources["sched_process_exec"]["active"])
        self.assertEqual(st["tickUsec"], 200000)
        self.assertEqual(st["arch"], platform.machine())
        self.assertEqual(st["databasePath"], os.path.join(self.daemon.state_dir, "trapstat.db"))
        self.assertGreater(st["databaseBytes"], 0)
        lost = [k for k in st["dropsByKind"] if k["count"] and k["kind"] not in LOSSLESS_DROPS]
        self.assertEqual(lost, [])
        self.assertEqual(st["drops"], sum(k["count"] for k in st["dropsByKind"]))
        # The loop has ticked and answered: its longest turn is known, and no longer than the
        # daemon has run (it started at most a few minutes ago in this suite).
        self.assertGreater(st["loopLongestTurnUsec"], 0)
        self.assertLess(st["loopLongestTurnUsec"], 600 * 1000000)
        self.assertGreaterEqual(st["loopSlowTurns"], 0)
        # The same per callback: they add up to the whole, the ticks and this call among them.
        # GetStatus's own turn ends after the reply is built, so it is not counted in it.
        turns = {t["where"]: t for t in st["loopTurns"]}
        self.assertGreater(turns["on_tick"]["turns"], 0)
        self.assertIn("on_read", turns)  # a call read
        self.assertEqual(max(t["longestUsec"] for t in turns.values()), st["loopLongestTurnUsec"])
        self.assertEqual(sum(t["slowTurns"] for t in turns.values()), st["loopSlowTurns"])
        self.assertTrue(all(t["slowTurns"] <= t["turns"] for t in turns.values()), turns)
        # The writer has written this suite's ticks; no one step is longer than all it did.
        self.assertGreater(st["writerWriteUsec"], 0)
        self.assertLessEqual(st["writerLongestStepUsec"], st["writerWriteUsec"] + st["writerMaintainUsec"])
        self.assertGreaterEqual(st["writerQueuedTicks"], 0)

    def test_parameters_are_checked_against_the_idl(self):
        for method, params, field in (
            ("io.trapstat.Top", '{"windowSec": "x"}', "windowSec"),
            ("io.trapstat.Top", '{"limit": 5, "bogus": 1}', "bogus"),
            ("io.trapstat.History", "{}", "pid"),
            ("io.trapstat.History", '{"pid": null}', "pid"),
            ("io.trapstat.ListProcesses", '{"includeExited": 1}', "includeExited"),
        ):
            with self.subTest(method=method, params=params):
                p = trapstat(self.daemon.socket, "call", method, params, check=False)
                self.assertEqual(p.returncode, 1)
                self.assertIn(f"rejected parameter '{field}'", p.stderr)
        # Optional members may be null.
        self.assertIn("rows", trapstat_json(self.daemon.socket, "call", "io.trapstat.Top", '{"sortBy": null}'))
        p = trapstat(self.daemon.socket, "call", "io.trapstat.Nope", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("org.varlink.service.MethodNotFound", p.stderr)

    def test_unknown_pid(self):
        # pid_max on Linux is at most 4194304, so this pid never existed.
        p = trapstat(self.daemon.socket, "history", "4194305", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no process with pid 4194305", p.stderr)
        self.assertEqual(p.stderr.count("\n"), 1)


class Restart(unittest.TestCase):
    def test_history_survives_restart_and_stop_flushes(self):
        # Never ticks by itself: only the SIGTERM flush can write.
        with Daemon(tick="1h").lifetime() as d:
            d.start()
            helper = run_helper(4000)
            self.assertEqual(d.stop(), 0)
            d.start()
            h = history(d, helper["pid"])
            self.assertIsNotNone(h, "the stop did not flush the last tick")
            self.assertGreaterEqual(h["total"]["faults"]["user"], 4000)


if __name__ == "__main__":
    require_root_and_bpf()
    unittest.main(verbosity=2)
