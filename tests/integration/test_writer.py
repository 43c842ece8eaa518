# SPDX-License-Identifier: MIT
"""The database's writer thread falling behind: held by the test hook (TRAPSTATD_TEST_HOLD_WRITER
names a file; while it exists the writer writes nothing; in builds with the meson option
test_hooks, which scripts/check.sh turns on; off by default and in the Debian package: a build
without it skips this test), the event loop goes on draining,
streaming Watch and answering, queues --writer-queue ticks and merges the rest into the last one
waiting (drop kind tick_merged); once released every count is written, exactly once. Killed
with SIGKILL while held: what was committed is intact, and nothing is counted twice after a
restart."""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import Daemon, binary, exited_history, history, require_root_and_bpf, skip, wait_for  # noqa: E402
from varlink_raw import Connection  # noqa: E402

PAGES = 3000
QUEUE = 4


def run_helper(pages=PAGES):
    """fault-pages' pid and its whole life's minflt/majflt as wait4() reports them."""
    with tempfile.TemporaryFile(mode="w+") as out:
        proc = subprocess.Popen([binary("FAULT_PAGES"), str(pages)], stdout=out)
        _, status, rusage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise AssertionError("fault-pages failed")
        out.seek(0)
        return json.load(out)["pid"], rusage.ru_minflt, rusage.ru_majflt


def status(d):
    with Connection(d.socket) as c:
        return c.call("io.trapstat.GetStatus")


def drops(st, kind):
    return next(k["count"] for k in st["dropsByKind"] if k["kind"] == kind)


class Writer(unittest.TestCase):
    def setUp(self):
        self.hold = tempfile.NamedTemporaryFile(prefix="trapstat-hold-", delete=False).name
        os.environ["TRAPSTATD_TEST_HOLD_WRITER"] = self.hold

    def tearDown(self):
        os.environ.pop("TRAPSTATD_TEST_HOLD_WRITER", None)
        if os.path.exists(self.hold):
            os.unlink(self.hold)

    def assert_exact(self, d, pid, minflt, majflt):
        h = exited_history(d, pid)
        faults = h["total"]["faults"]
        self.assertEqual((faults["minor"], faults["major"]), (minflt, majflt), f"pid {pid}")
        self.assertEqual(sum(s["counters"]["faults"]["minor"] for s in h["samples"]), minflt)
        return h

    def test_held_writer_merges_and_loses_nothing(self):
        with Daemon(extra_args=["--writer-queue", str(QUEUE)]).lifetime() as d:
            d.start()
            self.assertEqual(drops(status(d), "tick_merged"), 0)
            helpers = [run_helper() for _ in range(3)]

            # A History call made while the writer is held: its reply must have every tick drained
            # before the call, so it waits for the writer (in its worker, not the event loop).
            answer = {}
            slow = threading.Thread(target=lambda: answer.update(h=history(d, helpers[-1][0])))
            time.sleep(0.5)  # the helpers' last tick drained
            slow.start()

            # Held for 20 ticks and more: the loop still answers at once and streams every tick.
            with Connection(d.socket) as w:
                w.send("io.trapstat.Watch", more=True)
                arrivals = []
                while len(arrivals) < 20:
                    w.read()
                    arrivals.append(time.monotonic())
            gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
            self.assertLess(max(gaps), 1.0, f"Watch replies while the writer is held: gaps {gaps}")
            t = time.monotonic()
            st = status(d)
            self.assertLess(time.monotonic() - t, 1.0, "GetStatus while the writer is held")
            # 20 ticks, at most QUEUE of them waiting: the rest merged, and said so.
            print(f"writer held: {drops(st, 'tick_merged')} ticks merged, Watch gaps at most {max(gaps):.3f} s",
                  file=sys.stderr)
            self.assertGreaterEqual(drops(st, "tick_merged"), 1)
            # The queue is full (merging goes into its last tick) and says so.
            self.assertEqual(st["writerQueuedTicks"], QUEUE)
            self.assertTrue(slow.is_alive(), "History answered while the writer was held")
            # Calls that need no tick of the queue are answered from what was committed.
            with Connection(d.socket) as c:
                t = time.monotonic()
                listed = c.call("io.trapstat.ListProcesses", {"includeExited": True, "limit": 100000})
                self.assertLess(time.monotonic() - t, 5.0, "ListProcesses while the writer is held")
                self.assertIsInstance(listed["processes"], list)
                c.call("io.trapstat.Traps", {})

            os.unlink(self.hold)
            slow.join(timeout=30)
            self.assertFalse(slow.is_alive())
            # The call made while held has the helper's whole life, exactly.
            pid, minflt, majflt = helpers[-1]
            h = answer["h"]
            self.assertIsNotNone(h)
            self.assertTrue(h["process"]["exited"])
            self.assertEqual((h["total"]["faults"]["minor"], h["total"]["faults"]["major"]), (minflt, majflt))
            for pid, minflt, majflt in helpers:
                self.assert_exact(d, pid, minflt, majflt)
            st = status(d)
            self.assertEqual(st["unsavedSamples"], 0)
            self.assertGreaterEqual(drops(st, "tick_merged"), 1)
            # Caught up: at most the tick drained since is waiting. The writer's time is
            # accounted: ticks were written, and no single step is longer than all of its work.
            self.assertLessEqual(st["writerQueuedTicks"], 1)
            self.assertGreater(st["writerWriteUsec"], 0)
            self.assertGreater(st["writerLongestStepUsec"], 0)
            self.assertLessEqual(st["writerLongestStepUsec"], st["writerWriteUsec"] + st["writerMaintainUsec"])

    def test_kill9_while_held_keeps_what_was_committed(self):
        d = Daemon(extra_args=["--writer-queue", str(QUEUE)])
        with d.lifetime():
            os.unlink(self.hold)
            d.start()
            committed = run_helper()
            before = self.assert_exact(d, *committed)

            # Held: this helper's ticks wait in the queue and die with the daemon.
            open(self.hold, "w").close()
            lost = run_helper()
            time.sleep(1.5)
            d.kill9()
            os.unlink(self.hold)

            d.start()
            after = self.assert_exact(d, *committed)
            self.assertEqual(after["total"], before["total"], "committed counts changed by the restart")
            self.assertEqual(after["samples"], before["samples"])
            self.assertIsNone(history(d, lost[0]), "a tick the writer never committed is in the history")
            # And the new daemon counts anew, once.
            again = run_helper()
            self.assert_exact(d, *again)


if __name__ == "__main__":
    require_root_and_bpf()
    if os.environ.get("TRAPSTAT_TEST_HOOKS") != "1":
        skip("trapstatd was built without the tests' hooks (meson setup -Dtest_hooks=true)")
    unittest.main()
