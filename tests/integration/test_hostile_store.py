# SPDX-License-Identifier: MIT
"""The size cap holds, by shares, under repeated storms: a real unprivileged user forks thousands of
short-lived processes with 4 KiB command lines into a daemon with --max-db-size 8M, three times,
each time past the cap. The database with its WAL stays within the cap plus the 25 % slack the
documentation states, sampled during the storms and after them; root's process from before them
(exited), root's process that lives through them and another user's service (within their share)
keep every count and every sample, however many storms come; each storm's user loses their oldest
processes; the storm's command lines are stored cut to --max-cmdline and end in an ellipsis."""
import json
import os
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import (Daemon, copy_for_users, create_user, exited_history, history, remove_user,  # noqa: E402
                    require_root_and_bpf, require_x86_64, run_workload, user_name, wait_for)
from test_hostile import sanitized  # noqa: E402
from varlink_raw import Connection  # noqa: E402

USER = user_name("trapstat-store-test")
SERVICE_USER = user_name("trapstat-store-svc")
CAP = 8 * 1024 * 1024
SLACK = CAP // 4
MAX_CMDLINE = 1024
STORM_CHILDREN = int(os.environ.get("TRAPSTAT_STORE_STORM", "6000"))
STORM_INFLIGHT = 4
STORM_NAME = "capstorm"
ROOT_UD = 150
LIVE_UD = 60
SERVICE_UD = 40
STORMS = int(os.environ.get("TRAPSTAT_STORE_STORMS", "3"))


class SizeCapShares(unittest.TestCase):

    def setUp(self):
        require_root_and_bpf()
        require_x86_64()
        self.uid = create_user(USER).pw_uid
        self.addCleanup(remove_user, USER)
        self.service_uid = create_user(SERVICE_USER).pw_uid
        self.addCleanup(remove_user, SERVICE_USER)
        self.daemon = Daemon(extra_args=["--max-db-size", "8M", "--max-sites", "65536"]).__enter__()
        self.addCleanup(self.daemon.__exit__, None, None, None)
        self.bin = copy_for_users(self.daemon.dir, "TRAPSTAT", "STORM", "RAISE_TRAPS")
        self.db = os.path.join(self.daemon.state_dir, "trapstat.db")

    def sizes(self):
        """The database file's size and its WAL's."""
        sizes = []
        for suffix in ("", "-wal"):
            try:
                sizes.append(os.stat(self.db + suffix).st_size)
            except FileNotFoundError:
                sizes.append(0)
        return sizes

    def size(self):
        return sum(self.sizes())

    def describe(self):
        """The database's and WAL's sizes and the database's free pages, for a failure's message."""
        db, wal = self.sizes()
        p = subprocess.run(["sqlite3", "-readonly", self.db, "PRAGMA page_count; PRAGMA freelist_count;"],
                           capture_output=True, text=True, timeout=30)
        return f"database {db / 2**20:.2f} MiB, WAL {wal / 2**20:.2f} MiB; pages, free: {p.stdout.split()}"

    def held(self, n, uid=None):
        """raise-traps N --only UD --hold, as uid (root without): it traps N times and stays until
        its standard input closes. The Popen and the JSON it printed."""
        prefix = [] if uid is None else ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--init-groups"]
        p = subprocess.Popen(prefix + [self.bin["RAISE_TRAPS"], str(n), "--only", "UD", "--hold"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        self.addCleanup(p.wait, 10)
        self.addCleanup(p.stdin.close)
        return p, json.loads(p.stdout.readline())

    def storm(self, long_argv0, peak):
        """One storm of STORM_CHILDREN processes as USER, the database's size sampled meanwhile
        into peak; its seconds."""
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                db, wal = self.sizes()
                if db + wal > peak[0]:
                    peak[:3] = [db + wal, db, wal]
                peak[3] += 1
                peak[4] = max(peak[4], wal)
                time.sleep(0.05)

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            t0 = time.monotonic()
            p = subprocess.run(["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--init-groups", "bash", "-c",
                                'exec -a "$0" "$1" "$2" "$3" "$4"', long_argv0, self.bin["STORM"], str(STORM_CHILDREN),
                                str(STORM_INFLIGHT), STORM_NAME], capture_output=True, text=True, timeout=180)
            self.assertEqual(p.returncode, 0, p.stderr)
            seconds = time.monotonic() - t0
            # After the storm: the daemon writes its last exits and steps the cap.
            time.sleep(5)
        finally:
            stop.set()
            sampler.join()
        return seconds

    def kept(self, pid):
        """What History says of a process: its totals and its samples."""
        h = history(self.daemon, pid)
        self.assertIsNotNone(h, f"History({pid})")
        return {"total": h["total"], "samples": h["samples"], "startTime": h["process"]["startTime"]}

    def storm_processes(self):
        """The storms' processes that are kept. A connection of its own each time: one held across
        a storm sits idle longer than the daemon's idle timeout (60 s) under ASan, and the daemon
        closes it, as it should."""
        with Connection(self.daemon.socket, timeout=60) as v:
            return [q for q in v.call("io.trapstat.ListProcesses", {"includeExited": True, "limit": 100000})["processes"]
                    if q["comm"] == STORM_NAME]

    def test_storm_within_cap(self):
        d = self.daemon
        root = run_workload("RAISE_TRAPS", ROOT_UD, "--only", "UD")
        before = exited_history(d, root["pid"])
        self.assertEqual(before["total"]["traps"].get("UD"), ROOT_UD)
        _, live = self.held(LIVE_UD)
        _, service = self.held(SERVICE_UD, self.service_uid)
        for pid, n in ((live["pid"], LIVE_UD), (service["pid"], SERVICE_UD)):
            wait_for(lambda: (history(d, pid) or {}).get("total", {}).get("traps", {}).get("UD") == n,
                     what=f"the {n} #UD of {pid}")
        # Settled: a tick later the samples are what they will stay.
        time.sleep(3)
        kept = {pid: self.kept(pid) for pid in (root["pid"], live["pid"], service["pid"])}

        # The children inherit the storm's command line: argv[0] of 4000 bytes.
        long_argv0 = "/capstorm/" + "x" * 3990
        oldest_before = None
        for storm in range(STORMS):
            peak, start = [0, 0, 0, 0, 0], self.size()
            storm_sec = self.storm(long_argv0, peak)
            t_back = time.monotonic()
            wait_for(lambda: self.size() <= CAP + SLACK, timeout=60,
                     what=lambda: f"the database and WAL back within the cap (now {self.describe()})")
            back_sec = time.monotonic() - t_back
            procs = wait_for(lambda: self.storm_processes() or None, what="the storm's processes")
            oldest = min(q["firstSeenUsec"] for q in procs)
            print(f"\nstorm {storm + 1}: {STORM_CHILDREN} processes in {storm_sec:.1f} s; database + WAL at most "
                  f"{peak[0] / 2**20:.2f} MiB (WAL {peak[2] / 2**20:.2f}) over {peak[3]} samples (cap {CAP / 2**20:.0f} MiB), "
                  f"WAL at most {peak[4] / 2**20:.2f} MiB, "
                  f"{self.size() / 2**20:.2f} MiB after, within the cap in {back_sec:.1f} s; {len(procs)} of the storms' {STORM_CHILDREN * (storm + 1)} "
                  f"processes kept", flush=True)
            # The cap was reached: the storms' user lost processes, the oldest first.
            self.assertLess(len(procs), STORM_CHILDREN * (storm + 1))
            if oldest_before is not None:
                self.assertGreater(oldest, oldest_before)
            oldest_before = oldest
            # root's two processes and the other user's service: every count and every sample.
            for pid, want in kept.items():
                got = self.kept(pid)
                print(f"  pid {pid}: {len(got['samples'])} samples, {got['total']['traps'].get('UD')} #UD, "
                      f"{got['total']['faults']['user']} user faults (before the storms: {len(want['samples'])}, "
                      f"{want['total']['traps'].get('UD')}, {want['total']['faults']['user']})", flush=True)
                self.assertEqual(got, want, f"pid {pid} after storm {storm + 1}")
            # While a storm is written the cap's steps trail it: a tick the writer merged while
            # behind is one transaction, and the database grows by what it holds before the next
            # step (from empty 10.0-12.1 MiB on a 2-CPU VM, from a database at the cap 15-18 MiB;
            # several times slower under ASan). The cap holds once the writer has caught up; the
            # peak only shows that the cap works at all (it was 59 MiB before it did).
            if not sanitized():
                self.assertLessEqual(peak[0], start + 2 * CAP)
            # The writer checkpoints as it goes (forced at four times the checkpoint threshold,
            # 1/32 of the cap) and writes at most 256 new process rows in one transaction, which the WAL
            # holds whole: the WAL never takes half the cap. (When a tick was one transaction, a
            # storm's tick of thousands of exits with 1 KiB command lines took it to 4.61 MiB;
            # now 0.9-3.0 MiB.) Within a tick's transactions, at eight times the threshold the
            # commit checkpoints itself: the checkpoint thread may not get to run on a busy
            # machine (beside a compiler the plain build's WAL reached 4.65 and 5.23 MiB before
            # that; 3.25 MiB at most in 15 storms after). Under ASan on a loaded machine (CI's
            # qemu legs beside it) a forced checkpoint that finds a reader's snapshot fails, and
            # the WAL reached 4.26 MiB in a CI run: the bound holds in the plain build.
            if not sanitized():
                self.assertLessEqual(peak[4], CAP // 2)
        # The cap holds once the writer has caught up: the daemon goes on writing (this machine's
        # other processes, root's and the service's), and a tick written between two of the cap's
        # steps may take the files past it for a step (under ASan by 60 KiB in a CI run).
        wait_for(lambda: self.size() <= CAP + SLACK, timeout=60,
                 what=lambda: f"the database and WAL within the cap at the end (now {self.sizes()})")

        # The storm's newest processes are stored, with their command lines cut and marked.
        procs = self.storm_processes()
        cut = [q["cmdline"] for q in procs if (q.get("cmdline") or "").startswith("/capstorm/")]
        self.assertTrue(cut)
        for c in cut:
            self.assertTrue(c.endswith("\u2026"), c[-20:])
            self.assertLessEqual(len(c.encode()), MAX_CMDLINE + 3)


if __name__ == "__main__":
    unittest.main()
