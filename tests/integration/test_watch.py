# SPDX-License-Identifier: MIT
"""io.trapstat.Watch: one reply per tick with that tick's counts; the same counts the history
gets, to the fault; a client that reads slowly misses ticks (and is told), one that never reads
costs the daemon at most a reply and is cut off after the idle timeout, while others are served."""
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import Daemon, require_root_and_bpf, run_workload, trapstat_json  # noqa: E402
from varlink_raw import Connection  # noqa: E402


def spawn_churn():
    """Many short-lived processes, each faulting: every tick has many non-empty rows."""
    return subprocess.Popen(["sh", "-c", "while :; do /bin/true; done"])


class Watch(unittest.TestCase):
    def test_errors(self):
        with Daemon() as d:
            s = Connection(d.socket)
            s.send("io.trapstat.Watch")
            self.assertEqual(s.read()["error"], "org.varlink.service.ExpectedMore")
            s.send("io.trapstat.Watch", {"sortBy": "nonsense"}, more=True)
            reply = s.read()
            self.assertEqual(reply["error"], "org.varlink.service.InvalidParameter")
            self.assertEqual(reply["parameters"]["parameter"], "sortBy")
            s.send("io.trapstat.Watch", {"limit": 0}, more=True)
            self.assertEqual(s.read()["parameters"]["parameter"], "limit")
            s.close()

    def test_stream_counts_match_history(self):
        pages = 10000
        with Daemon(tick="200ms") as d:
            s = Connection(d.socket)
            s.send("io.trapstat.Watch", {"limit": 10000}, more=True)
            first = s.read()  # the stream is running before the workload starts
            self.assertTrue(first.get("continues"), first)

            # A call pipelined behind the stream waits for the stream to end: never answered here.
            s.send("io.trapstat.GetStatus")

            pid = run_workload("FAULT_PAGES", pages, timeout=30)["pid"]

            replies, user, exited = [first], 0, False
            deadline = time.monotonic() + 20
            while not exited and time.monotonic() < deadline:
                r = s.read()
                self.assertNotIn("error", r)
                self.assertTrue(r.get("continues"), "every Watch reply continues")
                self.assertIn("rows", r["parameters"], "a GetStatus reply came before the stream ended")
                replies.append(r)
                for row in r["parameters"]["rows"]:
                    if row["process"]["pid"] == pid:
                        user += row["counters"]["faults"]["user"]
                        exited = exited or row["process"]["exited"]
            self.assertTrue(exited, "the helper's exit was never streamed")
            s.close()

            params = [r["parameters"] for r in replies]
            for p in params:
                self.assertEqual(p["missedTicks"], 0, "a reader that keeps up misses nothing")
                self.assertGreater(p["intervalUsec"], 0)
                values = [row["counters"]["faults"]["user"] for row in p["rows"]]
                self.assertEqual(values, sorted(values, reverse=True), "rows sorted by user faults")
                self.assertGreaterEqual(p["total"]["faults"]["user"], sum(values))
            times = [p["timeUsec"] for p in params]
            self.assertEqual(times, sorted(times))
            self.assertEqual(len(set(times)), len(times), "one reply per tick")

            history = trapstat_json(d.socket, "history", str(pid))
            self.assertGreaterEqual(user, pages)
            self.assertEqual(user, history["total"]["faults"]["user"],
                             "Watch streams exactly what the history stores")

    def test_pid_filter_and_sort(self):
        with Daemon(tick="200ms") as d:
            churn = spawn_churn()
            try:
                s = Connection(d.socket)
                s.send("io.trapstat.Watch", {"sortBy": "kernel", "limit": 3}, more=True)
                every = Connection(d.socket)  # the same ticks without a limit
                every.send("io.trapstat.Watch", {"limit": 10000}, more=True)
                nonempty, limited, unlimited = 0, {}, {}
                for _ in range(10):
                    p = s.read()["parameters"]
                    self.assertLessEqual(len(p["rows"]), 3)
                    kernel = [row["counters"]["faults"]["kernel"] for row in p["rows"]]
                    self.assertEqual(kernel, sorted(kernel, reverse=True))
                    nonempty += bool(p["rows"])
                    limited[p["timeUsec"]] = p
                    u = every.read()["parameters"]
                    unlimited[u["timeUsec"]] = u
                self.assertGreater(nonempty, 0, "the churn never showed")
                # processes counts every process of the tick, also those past the limit.
                both = set(limited) & set(unlimited)
                self.assertGreaterEqual(len(both), 5)
                for t in both:
                    self.assertEqual(limited[t]["processes"], len(unlimited[t]["rows"]))
                    self.assertEqual(unlimited[t]["processes"], len(unlimited[t]["rows"]))
                    self.assertEqual(limited[t]["total"], unlimited[t]["total"])
                self.assertTrue(any(limited[t]["processes"] > 3 for t in both), "never more processes than the limit")
                s.close()
                every.close()

                s = Connection(d.socket)
                s.send("io.trapstat.Watch", {"pid": churn.pid}, more=True)
                for _ in range(5):
                    for row in s.read()["parameters"]["rows"]:
                        self.assertEqual(row["process"]["pid"], churn.pid)
                s.close()
            finally:
                churn.kill()
                churn.wait()

    def test_slow_reader_misses_ticks(self):
        with Daemon(tick="50ms") as d:
            churn = spawn_churn()
            try:
                s = Connection(d.socket, rcvbuf=4096)
                s.send("io.trapstat.Watch", {"limit": 10000}, more=True)
                missed = 0
                deadline = time.monotonic() + 30
                while missed == 0 and time.monotonic() < deadline:
                    time.sleep(0.5)
                    # Take everything that is there, then stall again.
                    s.sock.setblocking(False)
                    try:
                        while True:
                            chunk = s.sock.recv(1 << 20)
                            if not chunk:
                                break
                            s.buf += chunk
                    except BlockingIOError:
                        pass
                    s.sock.setblocking(True)
                    s.sock.settimeout(20)
                    while b"\0" in s.buf:
                        missed += s.read()["parameters"]["missedTicks"]
                self.assertGreater(missed, 0, "a stalled reader was never told it missed ticks")
                # ... and the stream goes on.
                self.assertTrue(s.read().get("continues"))
                s.close()
            finally:
                churn.kill()
                churn.wait()

    def test_stream_never_read(self):
        idle = 3
        with Daemon(tick="50ms", extra_args=["--idle-timeout", str(idle)]) as d:
            churn = spawn_churn()
            try:
                stuck = Connection(d.socket, rcvbuf=4096)
                stuck.send("io.trapstat.Watch", {"limit": 10000}, more=True)

                # Meanwhile others are served, each within its own timeout. (That at most one reply
                # is queued for the stuck stream is asserted by the varlink unit test: RSS says
                # little under ASan, whose quarantine keeps freed memory.)
                served = 0
                for _ in range(10):
                    t0 = time.monotonic()
                    other = Connection(d.socket)
                    other.sock.settimeout(2)
                    other.send("io.trapstat.GetStatus")
                    self.assertIn("version", other.read()["parameters"])
                    other.close()
                    served += 1
                    time.sleep(max(0, 0.2 - (time.monotonic() - t0)))
                self.assertEqual(served, 10)

                # The stuck connection is cut off after the idle timeout: what the kernel buffered
                # is still readable, then the end.
                time.sleep(idle + 1)
                stuck.sock.settimeout(10)
                with self.assertRaises((ConnectionResetError, json.JSONDecodeError)):
                    while True:
                        stuck.read()
                stuck.close()
            finally:
                churn.kill()
                churn.wait()


if __name__ == "__main__":
    require_root_and_bpf()
    unittest.main(verbosity=2)
