# SPDX-License-Identifier: MIT
"""trapstatd speaks sd_notify: READY=1 once it serves, STATUS= lines, WATCHDOG=1 at half of
WATCHDOG_USEC, STOPPING=1 on SIGTERM."""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import binary, require_root_and_bpf, trapstat  # noqa: E402


class Notify(unittest.TestCase):
    def test_ready_status_watchdog_stopping(self):
        with tempfile.TemporaryDirectory() as d:
            notify_path = os.path.join(d, "notify")
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sock.bind(notify_path)
            sock.settimeout(15)
            env = dict(os.environ, NOTIFY_SOCKET=notify_path, WATCHDOG_USEC="1000000")
            daemon = subprocess.Popen([binary("TRAPSTATD"), "--state-dir", os.path.join(d, "state"), "--socket",
                                       os.path.join(d, "io.trapstat")], env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
            try:
                messages = []

                def receive_until(predicate, what):
                    deadline = time.monotonic() + 15
                    while time.monotonic() < deadline:
                        messages.extend(sock.recv(4096).decode().splitlines())
                        if predicate():
                            return
                    self.fail(f"no {what} in {messages}")

                receive_until(lambda: "READY=1" in messages, "READY=1")
                # Ready means serving.
                self.assertEqual(trapstat(os.path.join(d, "io.trapstat"), "status", check=False).returncode, 0)
                self.assertTrue(any(m.startswith("STATUS=") for m in messages), messages)
                t0 = time.monotonic()
                receive_until(lambda: messages.count("WATCHDOG=1") >= 3, "three WATCHDOG=1")
                # Three pings at half of 1 s take about a second, not many.
                self.assertLess(time.monotonic() - t0, 5)
                receive_until(lambda: any(m.startswith("STATUS=Tracking ") for m in messages), "a running STATUS")
                daemon.send_signal(signal.SIGTERM)
                receive_until(lambda: "STOPPING=1" in messages, "STOPPING=1")
                self.assertEqual(daemon.wait(timeout=20), 0)
            finally:
                if daemon.poll() is None:
                    daemon.kill()
                    daemon.wait()
                sock.close()


if __name__ == "__main__":
    require_root_and_bpf()
    unittest.main(verbosity=2)
