# SPDX-License-Identifier: MIT
"""The store survives what happens to daemons and disks: kill -9 under load loses at most the
tick in flight, a corrupt database is moved aside at start instead of crash-looping, and a full
disk is logged once and ridden out."""
import contextlib
import errno
import glob
import json
import os
import random
import re
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import (Daemon, exited_history, history, require_root_and_bpf, run_workload, trapstat,  # noqa: E402
                    trapstat_json, wait_for)


def run_helper(pages=1000):
    return run_workload("FAULT_PAGES", pages, timeout=30)


def incarnation(d, pid, start_time):
    """History of the process pid that started at start_time, or None."""
    return history(d, pid, "--start-time", str(start_time))


def moved_aside(db):
    """Databases moved aside: db.corrupt-YYYYMMDDTHHMMSSZ[-N] (without their -wal, -shm)."""
    return [p for p in glob.glob(db + ".corrupt-*") if re.fullmatch(r".*\.corrupt-\d{8}T\d{6}Z(-\d+)?", p)]


def log_lines(d, pattern):
    return [line for line in d.read_log().splitlines() if re.search(pattern, line)]


class Load:
    """fault-pages in a loop in `workers` threads until the with block ends; `finished` lists
    the pids of the helpers that exited, in order. A helper's failure fails the with block."""

    def __init__(self, workers=3, pages=2000):
        self.workers, self.pages = workers, pages
        self.finished = []  # list.append is atomic: no lock needed
        self.stopping = threading.Event()
        self.threads = []
        self.errors = []

    def run(self):
        try:
            while not self.stopping.is_set():
                self.finished.append(run_helper(self.pages)["pid"])
        except Exception as e:  # reported by __exit__, in the test's thread
            self.errors.append(e)

    def finished_pids(self, n):
        """The first n helpers that finished, once there are n."""
        def get():
            return list(self.finished[:n]) if len(self.finished) >= n else None
        return wait_for(get, what=f"{n} helpers to finish")

    def __enter__(self):
        self.threads = [threading.Thread(target=self.run, daemon=True) for _ in range(self.workers)]
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=60)
        if self.errors and exc[0] is None:
            raise AssertionError(f"load helper failed: {self.errors[0]!r}")
        return False


def integrity_check(db):
    """PRAGMA integrity_check with the sqlite3 shell, read-only: a read-only connection does not
    checkpoint when it closes, so the daemon still finds the write-ahead log the kill left."""
    p = subprocess.run(["sqlite3", "-readonly", db, "PRAGMA integrity_check"], capture_output=True, text=True,
                       timeout=60)
    return p.stdout.strip() + p.stderr.strip()


class KillNine(unittest.TestCase):
    ROUNDS = 5

    def test_flushed_history_survives_kill9_under_load(self):
        recorded = {}  # (pid, startTime) -> History as it was before a kill
        rng = random.Random()
        with Daemon(tick="100ms").lifetime() as d:
            db = os.path.join(d.state_dir, "trapstat.db")
            d.start()
            for round_ in range(self.ROUNDS):
                with Load() as load:
                    # Histories that were queryable (so flushed) before the kill, final because
                    # the process had exited.
                    for pid in load.finished_pids(4):
                        h = exited_history(d, pid)
                        recorded[(pid, h["process"]["startTime"])] = h
                    # The kill lands at any point of a tick: draining, writing, committing, idle.
                    time.sleep(rng.uniform(0.0, 1.0))
                    d.kill9()
                self.assertTrue(os.path.exists(db + "-wal"), "no write-ahead log after kill -9")
                self.assertEqual(integrity_check(db), "ok", f"round {round_}")

                d.start()
                for (pid, start_time), before in recorded.items():
                    after = incarnation(d, pid, start_time)
                    self.assertIsNotNone(after, f"round {round_}: History({pid}) lost")
                    self.assertEqual(after["process"], before["process"], f"round {round_}, pid {pid}")
                    self.assertEqual(after["total"], before["total"], f"round {round_}, pid {pid}")
                    self.assertEqual(after["samples"], before["samples"], f"round {round_}, pid {pid}")

                # The restarted daemon serves and writes.
                self.assertEqual(trapstat_json(d.socket, "status")["databasePath"], db)
                helper = run_helper()
                self.assertGreaterEqual(exited_history(d, helper["pid"])["total"]["faults"]["user"], 1000)
            self.assertEqual(len(recorded), 4 * self.ROUNDS)
            self.assertEqual(d.stop(), 0)


class GoneWhileDown(unittest.TestCase):
    def test_processes_that_ended_while_the_daemon_was_down_are_exited(self):
        sleepers = []
        with Daemon(tick="100ms").lifetime() as d:
            try:
                d.start()
                # Started after the daemon: their start-up faults are counted, so they are known.
                sleepers = [subprocess.Popen(["sleep", "300"]) for _ in range(2)]
                ends, stays = sleepers

                def process(pid):
                    p = trapstat(d.socket, "call", "io.trapstat.ListProcesses",
                                 json.dumps({"pid": pid, "includeExited": True}))
                    found = json.loads(p.stdout)["processes"]
                    return found[0] if found else None

                for p in sleepers:
                    self.assertFalse(wait_for(lambda: process(p.pid), what=f"sleep {p.pid} listed")["exited"])
                d.kill9()  # no exit event will reach this daemon
                ends.kill()
                ends.wait()

                d.start()
                self.assertTrue(process(ends.pid)["exited"], "a process that ended while the daemon was down")
                self.assertFalse(process(stays.pid)["exited"], "a process that still runs")
                self.assertTrue(log_lines(d, r"\d+ processes ended while trapstatd was not running"))
            finally:
                for p in sleepers:
                    if p.poll() is None:
                        p.kill()
                        p.wait()


class CorruptAtStart(unittest.TestCase):
    GARBAGE = b"this is not an SQLite database, whatever its name says\n" * 1000

    def test_garbage_database_is_moved_aside(self):
        with Daemon().lifetime() as d:
            db = os.path.join(d.state_dir, "trapstat.db")
            os.makedirs(d.state_dir)
            with open(db, "wb") as f:
                f.write(self.GARBAGE)

            d.start()
            self.assertEqual(trapstat_json(d.socket, "status")["databasePath"], db)

            moved = moved_aside(db)
            self.assertEqual(len(moved), 1, os.listdir(d.state_dir))
            with open(moved[0], "rb") as f:
                self.assertEqual(f.read(), self.GARBAGE)
            lines = log_lines(d, re.escape(moved[0]))
            self.assertEqual(len(lines), 1, d.read_log())

            # A new database took its place and is written to.
            helper = run_helper()
            self.assertGreaterEqual(exited_history(d, helper["pid"])["total"]["faults"]["user"], 1000)
            self.assertEqual(d.stop(), 0)

            # That one is healthy: the next start keeps it and moves nothing.
            d.start()
            start_time = exited_history(d, helper["pid"])["process"]["startTime"]
            self.assertIsNotNone(incarnation(d, helper["pid"], start_time))
            self.assertEqual(moved_aside(db), moved)
            self.assertEqual(log_lines(d, r"corrupt"), [])
            self.assertEqual(d.stop(), 0)


def fill(path):
    """Writes to path until the file system is full."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    chunk = b"\xff" * 65536
    try:
        while True:
            os.write(fd, chunk)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
    finally:
        os.close(fd)


@contextlib.contextmanager
def daemon_on_small_disk():
    """trapstatd (tick 100ms) with its state directory on a 2 MiB tmpfs; unmounted at the end."""
    with Daemon(tick="100ms").lifetime() as d:
        os.makedirs(d.state_dir)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0755", "tmpfs", d.state_dir], check=True)
        try:
            d.start()
            yield d
            if d.stop() != 0:
                raise AssertionError(f"trapstatd exited {d.proc.returncode} after SIGTERM:\n{d.read_log()}")
        finally:
            d.stop()  # before the unmount: the daemon holds files there
            subprocess.run(["umount", d.state_dir], check=True)


class DiskFull(unittest.TestCase):
    FAILED = r"Failed to write .*trapstat\.db"
    AGAIN = r"Writing to .*trapstat\.db again"

    def test_full_disk_is_logged_once_and_ridden_out(self):
        with daemon_on_small_disk() as d:
            before = run_helper()
            before_start = exited_history(d, before["pid"])["process"]["startTime"]

            filler = os.path.join(d.state_dir, "filler")
            fill(filler)
            with Load(workers=2, pages=500):
                wait_for(lambda: log_lines(d, self.FAILED), what="the write failure in the log")
                # Failing ticks go on for seconds: still one line, and the daemon serves.
                deadline = time.monotonic() + 4
                while time.monotonic() < deadline:
                    self.assertIsNone(d.proc.poll(), "trapstatd died on a full disk")
                    trapstat_json(d.socket, "status")
                    self.assertIn("fault-pages", trapstat(d.socket, "top", "-b", "-n", "1").stdout)
                    time.sleep(0.2)
                self.assertEqual(len(log_lines(d, self.FAILED)), 1, d.read_log())
                self.assertEqual(log_lines(d, self.AGAIN), [], "claims to write again while the disk is full")
                # What was written before the disk filled is still there.
                self.assertGreaterEqual(incarnation(d, before["pid"], before_start)["total"]["faults"]["user"], 1000)

            os.unlink(filler)
            after = run_helper()
            self.assertGreaterEqual(exited_history(d, after["pid"])["total"]["faults"]["user"], 1000)
            self.assertEqual(len(log_lines(d, self.AGAIN)), 1, d.read_log())
            self.assertEqual(len(log_lines(d, self.FAILED)), 1, d.read_log())
            self.assertEqual(integrity_check(os.path.join(d.state_dir, "trapstat.db")), "ok")

    # Load in bursts: between them ticks have nothing to write. They prove nothing about the
    # disk, so they must not end the failure (and start a new one with the next burst). Quiet
    # ticks need a quiet machine (the daemon counts every process): on a busy one this passes
    # without having tested much, it cannot fail wrongly.
    def test_quiet_ticks_on_a_full_disk_are_no_recovery(self):
        with daemon_on_small_disk() as d:
            run_helper()
            filler = os.path.join(d.state_dir, "filler")
            fill(filler)
            for _ in range(4):
                run_helper()
                time.sleep(1)
            self.assertGreaterEqual(len(log_lines(d, self.FAILED)), 1, "no write failed")
            self.assertEqual(log_lines(d, self.AGAIN), [], "claims to write again while the disk is full")
            self.assertEqual(len(log_lines(d, self.FAILED)), 1, d.read_log())

            os.unlink(filler)
            exited_history(d, run_helper()["pid"])
            self.assertEqual(len(log_lines(d, self.AGAIN)), 1, d.read_log())

    # SQLite fails on a full disk with I/O errors, not with corruption: the database stays.
    def test_full_disk_at_start_serves_live_counts_and_recovers(self):
        with daemon_on_small_disk() as d:
            db = os.path.join(d.state_dir, "trapstat.db")
            helper = run_helper()
            start_time = exited_history(d, helper["pid"])["process"]["startTime"]
            self.assertEqual(d.stop(), 0)

            filler = os.path.join(d.state_dir, "filler")
            fill(filler)
            # SQLite cannot even create its shared-memory file: the daemon starts anyway and
            # serves what does not need the database, never moving the database aside.
            d.start()
            self.assertEqual(moved_aside(db), [])
            self.assertEqual(log_lines(d, r"corrupt"), [])
            self.assertEqual(len(log_lines(d, r"Failed to open database .*serving live counts only")), 1)
            status = trapstat_json(d.socket, "status")
            self.assertEqual(status["databaseBytes"], 0)
            p = trapstat(d.socket, "history", str(helper["pid"]), check=False)
            self.assertEqual(p.returncode, 1)
            self.assertIn("not available", p.stderr)
            run_helper()  # counted live, but lost for the history: said so in unsavedSamples
            self.assertGreater(wait_for(lambda: trapstat_json(d.socket, "status")["unsavedSamples"],
                                        what="unsaved samples counted"), 0)

            # Space returns: within a maintenance interval (10 s) the history is back, intact.
            os.unlink(filler)
            h = wait_for(lambda: incarnation(d, helper["pid"], start_time), timeout=25, interval=0.5,
                         what="the database reopened")
            self.assertGreaterEqual(h["total"]["faults"]["user"], 1000)
            self.assertEqual(len(log_lines(d, r"Opened database .* writing history again")), 1)
            after = run_helper()
            self.assertGreaterEqual(exited_history(d, after["pid"])["total"]["faults"]["user"], 1000)

    def test_failure_line_names_the_cause(self):
        with daemon_on_small_disk() as d:
            run_helper()
            fill(os.path.join(d.state_dir, "filler"))
            run_helper()
            line = wait_for(lambda: log_lines(d, self.FAILED), what="the write failure in the log")[0]
            self.assertRegex(line, r"No space left on device|database or disk is full")


if __name__ == "__main__":
    require_root_and_bpf()
    unittest.main(verbosity=2)
