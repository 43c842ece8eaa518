# SPDX-License-Identifier: MIT
"""One daemon per state directory: a second trapstatd on it exits at once, naming the first,
and touches neither its database nor its socket; a live socket is never taken over, a stale
one is replaced; the lock file outlives a daemon and is reused; a symlink in its place is not
followed."""
import fcntl
import json
import os
import socket
import stat
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import Daemon, binary, exited_history, require_root_and_bpf, run_workload, trapstat  # noqa: E402

PAGES = 10000


def run_trapstatd(*args, timeout=10):
    """Runs a trapstatd that is expected to exit by itself; returns (CompletedProcess, seconds)."""
    start = time.monotonic()
    try:
        p = subprocess.run([binary("TRAPSTATD"), "--tick", "200ms", *args], capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired as e:  # run() has killed it
        raise AssertionError(f"trapstatd {' '.join(args)} still ran after {timeout} s; it said:\n"
                             f"{(e.stderr or b'').decode(errors='replace')}") from None
    return p, time.monotonic() - start


def lock_path(d):
    return os.path.join(d.state_dir, "trapstatd.lock")


def read(path):
    with open(path) as f:
        return f.read()


class SingleInstance(unittest.TestCase):
    def assert_first_unharmed(self, d, inode):
        self.assertIsNone(d.proc.poll(), f"the first trapstatd exited:\n{d.read_log()}")
        self.assertEqual(os.stat(d.socket).st_ino, inode, "the first daemon's socket file was replaced")
        self.assertEqual(trapstat(d.socket, "status", check=False).returncode, 0)
        st = json.loads(trapstat(d.socket, "--json", "status").stdout)
        self.assertEqual(st["databasePath"], os.path.join(d.state_dir, "trapstat.db"))

    def test_second_daemon_on_the_same_state_dir(self):
        with Daemon() as d:
            inode = os.stat(d.socket).st_ino
            other_socket = os.path.join(d.dir, "other.socket")
            for sock in (d.socket, other_socket):
                with self.subTest(socket=sock):
                    p, took = run_trapstatd("--state-dir", d.state_dir, "--socket", sock)
                    self.assertEqual(p.returncode, 1, p.stderr)
                    self.assertLess(took, 5)
                    self.assertEqual(p.stdout, "")
                    self.assertEqual(p.stderr, f"Another trapstatd (pid {d.proc.pid}) is running on state "
                                               f"directory {d.state_dir}; exiting\n")
                    self.assertFalse(os.path.lexists(other_socket), "the second daemon created its socket")
                    self.assert_first_unharmed(d, inode)
            self.assertEqual(read(lock_path(d)), f"{d.proc.pid}\n")

            # Counted by one daemon only: History agrees with the helper's own count, not twice it.
            helper = run_workload("FAULT_PAGES", PAGES, timeout=30)
            delta = helper["minfltAfter"] - helper["minfltBefore"]
            self.assertGreaterEqual(delta, PAGES)
            h = exited_history(d, helper["pid"])
            user = h["total"]["faults"]["user"]
            self.assertLessEqual(abs(user - delta), delta * 0.01,
                                 f"user faults {user} not within 1% of the helper's minflt delta {delta}")
            self.assertEqual(sum(s["counters"]["faults"]["user"] for s in h["samples"]), user)
            self.assertNotIn("Another trapstatd", d.read_log())

    def test_lock_held_without_a_pid(self):
        # Whoever holds the lock without having written a pid yet is not named, but still wins.
        d = Daemon()
        try:
            os.makedirs(d.state_dir)
            with open(lock_path(d), "w") as f:
                f.write("not a pid\n")
                f.flush()
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                p, _ = run_trapstatd("--state-dir", d.state_dir, "--socket", d.socket)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertEqual(p.stderr, f"Another trapstatd is running on state directory {d.state_dir}; exiting\n")
            self.assertEqual(read(lock_path(d)), "not a pid\n")
            self.assertFalse(os.path.lexists(os.path.join(d.state_dir, "trapstat.db")))
            self.assertFalse(os.path.lexists(d.socket))
        finally:
            d.cleanup()

    def test_other_state_dir_same_socket(self):
        with Daemon() as d:
            inode = os.stat(d.socket).st_ino
            p, _ = run_trapstatd("--state-dir", os.path.join(d.dir, "other-state"), "--socket", d.socket,
                                 timeout=30)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertEqual(p.stderr.splitlines()[-1],
                             f"Failed to listen on {d.socket}: another server is accepting on it", p.stderr)
            self.assertEqual(p.stderr.count("Failed"), 1, p.stderr)
            self.assert_first_unharmed(d, inode)

    def test_stale_socket_is_replaced(self):
        d = Daemon()
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(d.socket)
        stale.close()  # the file stays, nobody listens: what a crash leaves behind
        self.assertTrue(stat.S_ISSOCK(os.lstat(d.socket).st_mode))
        with d:
            self.assertEqual(trapstat(d.socket, "status", check=False).returncode, 0)
            self.assertIn(f"Listening on {d.socket}", d.read_log())

    def test_restart_reuses_the_lock_file(self):
        with Daemon().lifetime() as d:
            d.start()
            first_pid = d.proc.pid
            self.assertEqual(d.stop(), 0)
            self.assertEqual(read(lock_path(d)), f"{first_pid}\n", "the lock file is kept, not removed")
            d.start()
            self.assertEqual(read(lock_path(d)), f"{d.proc.pid}\n")
            self.assertEqual(trapstat(d.socket, "status", check=False).returncode, 0)
            self.assertEqual(d.stop(), 0)

    def test_symlink_at_the_lock_path_is_not_followed(self):
        d = Daemon()
        try:
            os.makedirs(d.state_dir)
            target = os.path.join(d.dir, "precious")
            with open(target, "w") as f:
                f.write("keep me\n")
            before = os.stat(target)
            os.symlink(target, lock_path(d))
            p, _ = run_trapstatd("--state-dir", d.state_dir, "--socket", d.socket)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertEqual(p.stderr, f"Lock file {lock_path(d)} is a symbolic link; refusing to follow it\n")
            self.assertEqual(read(target), "keep me\n")
            after = os.stat(target)
            self.assertEqual((after.st_mode, after.st_mtime_ns, after.st_ctime_ns),
                             (before.st_mode, before.st_mtime_ns, before.st_ctime_ns))
            self.assertFalse(os.path.lexists(os.path.join(d.state_dir, "trapstat.db")))
            self.assertFalse(os.path.lexists(d.socket))
        finally:
            d.cleanup()


if __name__ == "__main__":
    require_root_and_bpf()
    unittest.main(verbosity=2)
