# SPDX-License-Identifier: MIT
"""The size cap holds, by shares, under a storm: a real unprivileged user forks thousands of
short-lived processes with 4 KiB command lines into a daemon with --max-db-size 8M. The database
with its WAL stays within the cap plus the 25 % slack the documentation states, sampled during
the storm and after it; root's process from before the storm keeps its exact traps; the storm's
command lines are stored cut to --max-cmdline and end in an ellipsis."""
import os
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import (Daemon, copy_for_users, create_user, exited_history, remove_user, require_root_and_bpf,  # noqa: E402
                    require_x86_64, run_workload, user_name, wait_for)
from test_hostile import sanitized  # noqa: E402
from varlink_raw import Connection  # noqa: E402

USER = user_name("trapstat-store-test")
CAP = 8 * 1024 * 1024
SLACK = CAP // 4
MAX_CMDLINE = 1024
STORM_CHILDREN = int(os.environ.get("TRAPSTAT_STORE_STORM", "6000"))
STORM_INFLIGHT = 4
STORM_NAME = "capstorm"
ROOT_UD = 150


class SizeCapShares(unittest.TestCase):

    def setUp(self):
        require_root_and_bpf()
        require_x86_64()
        self.uid = create_user(USER).pw_uid
        self.addCleanup(remove_user, USER)
        self.daemon = Daemon(extra_args=["--max-db-size", "8M", "--max-sites", "65536"]).__enter__()
        self.addCleanup(self.daemon.__exit__, None, None, None)
        self.bin = copy_for_users(self.daemon.dir, "TRAPSTAT", "STORM")
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

    def test_storm_within_cap(self):
        d = self.daemon
        root = run_workload("RAISE_TRAPS", ROOT_UD, "--only", "UD")
        before = exited_history(d, root["pid"])
        self.assertEqual(before["total"]["traps"].get("UD"), ROOT_UD)

        # The children inherit the storm's command line: argv[0] of 4000 bytes.
        long_argv0 = "/capstorm/" + "x" * 3990
        peak, samples, stop = [0, 0, 0], [0], threading.Event()

        def sample():
            while not stop.is_set():
                db, wal = self.sizes()
                if db + wal > peak[0]:
                    peak[:] = [db + wal, db, wal]
                samples[0] += 1
                time.sleep(0.05)

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            t0 = time.monotonic()
            p = subprocess.run(["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--init-groups", "bash", "-c",
                                'exec -a "$0" "$1" "$2" "$3" "$4"', long_argv0, self.bin["STORM"], str(STORM_CHILDREN),
                                str(STORM_INFLIGHT), STORM_NAME], capture_output=True, text=True, timeout=180)
            self.assertEqual(p.returncode, 0, p.stderr)
            storm_sec = time.monotonic() - t0
            # After the storm: the daemon writes its last exits and steps the cap.
            time.sleep(5)
        finally:
            stop.set()
            sampler.join()
        print(f"\nstorm: {STORM_CHILDREN} processes in {storm_sec:.1f} s; database + WAL at most "
              f"{peak[0] / 2**20:.2f} MiB (WAL {peak[2] / 2**20:.2f}) over {samples[0]} samples (cap {CAP / 2**20:.0f} MiB), "
              f"{self.size() / 2**20:.2f} MiB after", flush=True)

        # root's process from before the storm: all there.
        after = exited_history(d, root["pid"])
        print(f"root's process after the storm: {after['total']['traps'].get('UD')} #UD of {ROOT_UD}", flush=True)
        self.assertEqual(after["total"]["traps"].get("UD"), ROOT_UD)
        self.assertEqual(after["process"]["startTime"], before["process"]["startTime"])


        # While the storm is written the cap's steps trail it: a tick the writer merged while
        # behind is one transaction, and the peak passes the cap by what it holds (10.0-12.1 MiB
        # measured on a 2-CPU VM; several times slower under ASan). The cap holds once the
        # writer has caught up; the peak only shows that the cap works at all (it was 59 MiB
        # before it did).
        if not sanitized():
            self.assertLessEqual(peak[0], 2 * CAP)
        wait_for(lambda: self.size() <= CAP + SLACK, timeout=60, what="the database and WAL back within the cap")
        now = self.sizes()
        if sum(now) > CAP + SLACK:
            v = Connection(d.socket, timeout=60)
            status = v.call("io.trapstat.GetStatus", {})
            print(f"database and WAL now {now}; GetStatus: processesTracked {status.get('processesTracked')}, "
                  f"drops {status.get('drops')}\n{d.read_log()[-3000:]}", flush=True)
        self.assertLessEqual(sum(now), CAP + SLACK, f"database and WAL now: {now}")

        # The storm's newest processes are stored, with their command lines cut and marked.
        v = Connection(d.socket, timeout=60)
        procs = wait_for(lambda: [q for q in v.call("io.trapstat.ListProcesses",
                                                    {"includeExited": True, "limit": 100000})["processes"]
                                  if q["comm"] == STORM_NAME] or None, what="the storm's processes")
        self.assertLess(len(procs), STORM_CHILDREN)
        cut = [q["cmdline"] for q in procs if (q.get("cmdline") or "").startswith("/capstorm/")]
        self.assertTrue(cut)
        for c in cut:
            self.assertTrue(c.endswith("\u2026"), c[-20:])
            self.assertLessEqual(len(c.encode()), MAX_CMDLINE + 3)


if __name__ == "__main__":
    unittest.main()
