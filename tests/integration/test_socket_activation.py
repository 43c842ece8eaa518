# SPDX-License-Identifier: MIT
"""Socket activation as systemd does it (sd_listen_fds), driven by systemd-socket-activate:
exactly one passed socket is served and the daemon binds none of its own; with more than one
it closes them and binds its own path instead of failing; one named "report" is the
io.systemd.Metrics socket, beside the main one."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import binary, require_root_and_bpf, trapstat, wait_for  # noqa: E402
from varlink_raw import Connection  # noqa: E402

ACTIVATE = shutil.which("systemd-socket-activate")


def poke(path):
    """Connects once: systemd-socket-activate starts the service on the first connection."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.close()


class SocketActivation(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="trapstat-activate-")
        self.own = os.path.join(self.dir, "own.socket")
        self.proc = None

    def tearDown(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=20)
        shutil.rmtree(self.dir, ignore_errors=True)

    def activate(self, *listen, names=None):
        args = [ACTIVATE]
        for path in listen:
            args += ["-l", path]
        if names:
            args += [f"--fdname={':'.join(names)}"]
        args += [binary("TRAPSTATD"), "--state-dir", os.path.join(self.dir, "state"), "--socket", self.own,
                 "--tick", "200ms"]
        self.log = os.path.join(self.dir, "log")
        self.proc = subprocess.Popen(args, stdout=open(self.log, "w"), stderr=subprocess.STDOUT)
        wait_for(lambda: all(os.path.exists(p) for p in listen), what="systemd-socket-activate listening")

    def read_log(self):
        with open(self.log) as f:
            return f.read()

    def test_one_socket_is_served(self):
        passed = os.path.join(self.dir, "passed.socket")
        self.activate(passed)
        status = wait_for(lambda: json.loads(trapstat(passed, "--json", "status", check=False).stdout or "null"),
                          what="status over the passed socket")
        self.assertIn("page_fault_user", [s["name"] for s in status["sources"]])
        self.assertFalse(os.path.exists(self.own), "the daemon bound its own socket besides the passed one")
        self.assertIn("Listening on the socket passed by systemd", self.read_log())

    def test_two_sockets_fall_back_to_own(self):
        a, b = os.path.join(self.dir, "a.socket"), os.path.join(self.dir, "b.socket")
        self.activate(a, b)
        poke(a)
        wait_for(lambda: os.path.exists(self.own), what="the daemon's own socket")
        out = wait_for(lambda: trapstat(self.own, "status", check=False).returncode == 0,
                       what="status over the daemon's own socket")
        self.assertTrue(out)
        self.assertIsNone(self.proc.poll(), "the daemon exited")
        self.assertIn("Expected one socket from systemd, got 2", self.read_log())

    def test_report_socket_by_name(self):
        # As trapstatd.socket and trapstatd-report.socket pass them: the one named "report"
        # serves io.systemd.Metrics, the other io.trapstat; the daemon binds neither path of its own.
        main, report = os.path.join(self.dir, "main.socket"), os.path.join(self.dir, "report.socket")
        self.activate(main, report, names=["trapstatd.socket", "report"])
        poke(main)
        with_status = wait_for(lambda: trapstat(main, "status", check=False).returncode == 0,
                               what="status over the passed main socket")
        self.assertTrue(with_status)
        with Connection(report) as c:
            c.send("io.systemd.Metrics.Describe", {}, more=True)
            self.assertEqual(c.read()["parameters"]["name"], "io.trapstat.Traps")
        with Connection(report) as c:
            c.send("io.trapstat.GetStatus", {})
            self.assertEqual(c.read()["error"], "org.varlink.service.InterfaceNotFound")
        self.assertFalse(os.path.exists(self.own))
        self.assertIn("Serving io.systemd.Metrics on the report socket passed by systemd", self.read_log())
        self.assertNotIn("Expected one socket", self.read_log())


if __name__ == "__main__":
    require_root_and_bpf()
    if not ACTIVATE:
        sys.exit("systemd-socket-activate is missing: scripts/install-deps.sh installs systemd")
    unittest.main(verbosity=2)
