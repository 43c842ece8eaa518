# SPDX-License-Identifier: MIT
"""Runs a real trapstatd on a temporary state directory and socket for integration tests."""
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

SKIP = 77  # meson's "skipped": only where the machine truly lacks root or BPF (or x86-64, for traps)


def require_root_and_bpf():
    if os.geteuid() != 0:
        print("SKIP: needs root to load BPF programs", file=sys.stderr)
        sys.exit(SKIP)
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        print("SKIP: kernel has no BTF (/sys/kernel/btf/vmlinux)", file=sys.stderr)
        sys.exit(SKIP)


def require_x86_64():
    """The trap workloads (tests/helpers/raise-traps.c, storm.c) raise x86 exceptions: elsewhere
    they exit 77 themselves, and the tests that need them are skipped."""
    if platform.machine() != "x86_64":
        print(f"SKIP: the trap workloads are x86-64 only, this machine is {platform.machine()}", file=sys.stderr)
        sys.exit(SKIP)


def binary(name):
    path = os.environ.get(name)
    if not path:
        sys.exit(f"${name} is not set (run through meson test)")
    return path


def trapstat(socket, *args, check=True, timeout=30):
    """Runs the CLI; returns the CompletedProcess."""
    proc = subprocess.run([binary("TRAPSTAT"), "--socket", socket, *args], capture_output=True, text=True,
                          timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"trapstat {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc


def trapstat_json(socket, *args):
    return json.loads(trapstat(socket, "--json", *args).stdout)


class Daemon:
    """trapstatd with --tick 200ms; stopped with SIGTERM (and checked to exit 0) on exit."""

    def __init__(self, tick="200ms", extra_args=()):
        self.dir = tempfile.mkdtemp(prefix="trapstat-test-")
        self.state_dir = os.path.join(self.dir, "state")
        self.socket = os.path.join(self.dir, "io.trapstat")
        self.log_path = os.path.join(self.dir, "trapstatd.log")
        self.args = [binary("TRAPSTATD"), "--state-dir", self.state_dir, "--socket", self.socket, "--tick", tick,
                     *extra_args]
        self.proc = None

    def start(self):
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"trapstatd exited {self.proc.returncode} at start:\n{self.read_log()}")
            if os.path.exists(self.socket) and trapstat(self.socket, "status", check=False).returncode == 0:
                return self
            time.sleep(0.05)
        raise AssertionError(f"trapstatd did not answer within 20 s:\n{self.read_log()}")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("trapstatd did not stop within 20 s of SIGTERM")
        self.log.close()
        return self.proc.returncode

    def kill9(self):
        """SIGKILL: no final flush, no cleanup; the state directory is left as a crash leaves it."""
        self.proc.kill()
        self.proc.wait()
        self.log.close()

    def read_log(self):
        with open(self.log_path) as f:
            return f.read()

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        code = self.stop()
        if exc[0] is None and code != 0:
            raise AssertionError(f"trapstatd exited {code} after SIGTERM:\n{self.read_log()}")
        if exc[0] is not None:
            sys.stderr.write(f"--- trapstatd log ---\n{self.read_log()}\n")
        self.cleanup()
        return False


class SharedDaemonTest(unittest.TestCase):
    """Test cases sharing one trapstatd, started once for the class."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon().__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.daemon.__exit__(None, None, None)


def wait_for(predicate, timeout=15, interval=0.1, what="condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")


def exited_history(d, pid, *extra):
    """History of pid (newest incarnation, or as extra selects) once it shows the process exited."""
    def get():
        p = trapstat(d.socket, "--json", "history", str(pid), *extra, check=False)
        h = json.loads(p.stdout) if p.returncode == 0 else None
        return h if h and h["process"]["exited"] else None

    return wait_for(get, what=f"History({pid}) of the exited process")
