# SPDX-License-Identifier: MIT
"""Why a process waited, as the kernel's own delay accounting says (Counters.stall): a workload
whose threads swap pages in from zram, some of them exited (their delays in the kernel's total of
exited threads), blocked while it is compared with the kernel's taskstats for its thread group
(tests/helpers/taskstats.c) member for member, exactly; the swap-ins also against its own rusage;
the same after its exit; Top sorted by stall. With kernel.task_delayacct 0, GetStatus's source
delay_accounting says so and every reply has null, not zeros. Each figure is of the test's own
processes: other work on the machine changes none of them."""
import json
import os
import platform
import re
import resource
import select
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import (TIME_SCALE, Daemon, Swap, binary, exited_history, history, require_root_and_bpf,  # noqa: E402
                    ticks_after, trapstat_json, wait_for, zram_missing)
from varlink_raw import Connection  # noqa: E402

SYSCTL = "/proc/sys/kernel/task_delayacct"
# Memory's part of Stall: the sort key "stall" (blkio is not in it).
MEMORY = ("swapinNs", "thrashingNs", "reclaimNs", "compactNs")


def kernel_release():
    """The running kernel's (major, minor)."""
    return tuple(int(x) for x in re.match(r"(\d+)\.(\d+)", platform.release()).groups())


def delay_accounting_missing():
    """Why this kernel keeps no delay accounting that the test can turn on, or None. Before 5.14
    there is no kernel.task_delayacct: the accounting is on from boot unless nodelayacct."""
    if os.path.exists(SYSCTL):
        return None
    with open("/proc/cmdline") as f:
        if "nodelayacct" in f.read().split():
            return "the kernel was booted with nodelayacct"
    if kernel_release() >= (5, 14):
        return f"no {SYSCTL}: a kernel without CONFIG_TASK_DELAY_ACCT"
    return None


class DelayAccounting:
    """kernel.task_delayacct set to on (1) or off (0) for the test, the old value restored at the
    end. Skips where it cannot be set: off before 5.14 (no sysctl), on without the accounting."""

    def __init__(self, on):
        self.on = on
        self.old = None

    def __enter__(self):
        why = delay_accounting_missing()
        if why:
            raise unittest.SkipTest(why)
        if not os.path.exists(SYSCTL):
            if not self.on:
                raise unittest.SkipTest(f"no {SYSCTL}: this kernel (before 5.14) cannot turn delay accounting off")
            return self  # on from boot
        with open(SYSCTL) as f:
            self.old = f.read().strip()
        with open(SYSCTL, "w") as f:
            f.write("1" if self.on else "0")
        return self

    def __exit__(self, *exc):
        if self.old is not None:
            with open(SYSCTL, "w") as f:
                f.write(self.old)
        return False


def taskstats(tgid):
    """The kernel's delay accounting of the thread group tgid, as taskstats reports it: a dict with
    Stall's members."""
    p = subprocess.run([binary("TASKSTATS"), str(tgid)], capture_output=True, text=True, timeout=30)
    if p.returncode == 77:
        raise unittest.SkipTest(p.stderr.strip())
    if p.returncode != 0:
        raise AssertionError(f"taskstats {tgid} failed ({p.returncode}): {p.stderr.strip()}")
    return json.loads(p.stdout)


def memory_ns(stall):
    return sum(stall[k] for k in MEMORY)


class Workload:
    """tests/helpers/stall-threads THREADS PAGES EXITED, blocked once it has reported (info: its
    pid, the pages that went out, the major faults of its read phases); finish() closes its stdin
    and waits for it to exit. Killed at the end if still running."""

    def __init__(self, threads, pages, exited):
        self.proc = subprocess.Popen([binary("STALL_THREADS"), str(threads), str(pages), str(exited)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            ready = select.select([self.proc.stdout], [], [], 60 * TIME_SCALE)[0]
            line = self.proc.stdout.readline() if ready else ""
            if not line:
                self.proc.kill()
                code = self.proc.wait()
                err = self.proc.stderr.read().strip()
                if code == 77:
                    raise unittest.SkipTest(f"stall-threads: {err}")
                raise AssertionError(f"stall-threads {threads} {pages} {exited} did not report (exit {code}): {err}")
            self.info = json.loads(line)
        except BaseException:
            self.close()
            raise

    def finish(self):
        """Its major faults over its whole life, as wait4() reports them (its reaping adds them to
        this process's RUSAGE_CHILDREN, and nothing else is reaped meanwhile)."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_majflt
        self.proc.stdin.close()
        code = self.proc.wait(timeout=30 * TIME_SCALE)
        if code != 0:
            raise AssertionError(f"stall-threads exited {code}: {self.proc.stderr.read().strip()}")
        return resource.getrusage(resource.RUSAGE_CHILDREN).ru_majflt - before

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def sweep_only(d):
    """Whether the daemon reads a live process's delay accounting only in its sweep of every task
    (every 30 s) and at its exit: kernels without the task reads (before 6.2), where a tick's
    active processes are read from /proc/PID/stat, which has none."""
    features = trapstat_json(d.socket, "status")["features"]
    return not [f for f in features if f["name"] == "task_reads"][0]["active"]


def settled_history(d, pid, want, exited=False):
    """History(pid) once its total's stall equals want, or once its total stayed the same over two
    of the daemon's ticks (then the caller's assertion shows what differs); where the daemon reads
    a live process's delays only in its 30 s sweep, once equal, for up to 45 s. exited: only once
    the history shows the process exited."""
    last = []
    patient = not exited and sweep_only(d)
    # A sweep starts at most every 30 s and reads each task once in it: up to twice that.

    def get():
        h = history(d, pid)
        if not h or (exited and not h["process"]["exited"]):
            return None
        if h["total"]["stall"] == want or (last == [h["total"]] and not patient):
            return h
        last[:] = [h["total"]]
        ticks_after(d.socket, 2)
        return None

    return wait_for(get, timeout=75 if patient else 30, what=f"History({pid}) to settle")


def sums_every_thread(d):
    """Whether the daemon's BPF object sums every live thread of a process (bpf_loop: the full
    object). The objects without it (kernels before 5.17) sum the thread read, the group leader and
    those that exited: a live process's other threads' delays are missed until it exits, when the
    kernel's own total of the exited threads holds them all."""
    return trapstat_json(d.socket, "status")["bpfObject"] == "full"


def source(d, name):
    """GetStatus's source name; fails, naming those there are, where there is none."""
    sources = trapstat_json(d.socket, "status")["sources"]
    found = [s for s in sources if s["name"] == name]
    if not found:
        raise AssertionError(f"GetStatus has no source {name}: {[s['name'] for s in sources]}")
    return found[0]


def top(d, sort_by, pids):
    """Top of pids over the last hour (their whole lives), sorted by sort_by."""
    with Connection(d.socket) as c:
        return c.call("io.trapstat.Top", {"windowSec": 3600, "sortBy": sort_by, "limit": 100, "pids": pids})["rows"]


def start_class(cls, on):
    """For a test class: kernel.task_delayacct set (DelayAccounting), swap on zram, then a daemon
    (cls.daemon); undone in reverse order at the class's end, also when a later step fails (class
    cleanups always run). Skipped where there is no zram to swap to."""
    why = zram_missing()
    if why:
        raise unittest.SkipTest(why)
    accounting = DelayAccounting(on).__enter__()
    cls.addClassCleanup(accounting.__exit__, None, None, None)
    swap = Swap().__enter__()
    cls.addClassCleanup(swap.__exit__, None, None, None)
    cls.daemon = Daemon(fault_time=False).__enter__()
    cls.addClassCleanup(cls.daemon.__exit__, None, None, None)


class Stall(unittest.TestCase):
    """Delay accounting on (kernel.task_delayacct 1) and swap on zram for the whole class, one
    daemon started after both."""

    @classmethod
    def setUpClass(cls):
        start_class(cls, on=True)

    def workload(self, threads, pages, exited):
        """A blocked stall-threads, each of whose pages that went out came back one major fault, and
        the kernel's taskstats for it, checked against its rusage: (workload, taskstats)."""
        w = Workload(threads, pages, exited)
        self.addCleanup(w.close)
        info = w.info
        # Reclaim may pass over a page it finds busy: the pages that went out are what is read back.
        self.assertGreater(info["out"], 0, f"no page went out to swap: {info}")
        # Anonymous pages on zram come back one fault each (no swap readahead on a synchronous
        # device), and from Linux 5.19 each such fault is one swap-in wait. Before, the kernel
        # accounted a swap-in only when the thread slept for its block I/O, which a read from zram
        # (a synchronous device) never does: none at all. Either way the daemon must say what
        # taskstats says.
        self.assertEqual(info["majflt"], info["out"], info)
        ref = taskstats(info["pid"])
        if kernel_release() >= (5, 19):
            self.assertEqual(ref["swapinCount"], info["majflt"], f"taskstats against the workload's rusage: {ref}")
            self.assertGreater(ref["swapinNs"], 0, ref)
        else:
            self.assertEqual((ref["swapinCount"], ref["swapinNs"]), (0, 0), ref)
        return w, ref

    def test_source_active(self):
        src = source(self.daemon, "delay_accounting")
        self.assertEqual((src["active"], src.get("reason")), (True, None), src)

    def test_threads_live_and_exited(self):
        """4 threads × 512 pages, 3 of them exited: their delays are in the kernel's exited-threads
        total, the fourth's in its own task. Equal to taskstats while it blocks (where the daemon
        sums every live thread), and after its exit."""
        w, ref = self.workload(4, 512, 3)
        pid = w.info["pid"]
        if sums_every_thread(self.daemon):
            h = settled_history(self.daemon, pid, ref)
            self.assertEqual(h["total"]["stall"], ref, "History(pid).total.stall against taskstats, the process blocked")
        # Nothing moved while the daemon was read: the comparison was of a quiescent process.
        self.assertEqual(taskstats(pid), ref)
        w.finish()
        h = settled_history(self.daemon, pid, ref, exited=True)
        self.assertEqual(h["total"]["stall"], ref, "History(pid).total.stall after the exit against taskstats before it")
        self.assertTrue(all(s["counters"]["stall"] is not None for s in h["samples"]), h["samples"])

    def test_top_sorted_by_stall(self):
        """Two workloads, one with 32 times the other's swap-ins: Top by stall puts it first, each
        row's stall equal to its taskstats."""
        big, big_ref = self.workload(4, 512, 3)
        small, small_ref = self.workload(1, 64, 0)
        # The order the kernel's own figures give: what Top must follow (where it accounts
        # swap-ins from zram at all: Linux 5.19).
        ordered = memory_ns(big_ref) != memory_ns(small_ref)
        if kernel_release() >= (5, 19):
            self.assertGreater(memory_ns(big_ref), memory_ns(small_ref), (big_ref, small_ref))
        pids = [big.info["pid"], small.info["pid"]]
        # Where the daemon misses a live process's other threads until its exit, compared after it.
        live = sums_every_thread(self.daemon)
        for w, pid, ref in zip((big, small), pids, (big_ref, small_ref)):
            if not live:
                w.finish()
            settled_history(self.daemon, pid, ref, exited=not live)
        rows = top(self.daemon, "stall", pids)
        self.assertEqual({r["process"]["pid"]: r["counters"]["stall"] for r in rows},
                         {pids[0]: big_ref, pids[1]: small_ref}, "Top's stall against taskstats")
        if ordered:
            self.assertEqual([r["process"]["pid"] for r in rows],
                             sorted(pids, key=lambda p: -memory_ns(big_ref if p == pids[0] else small_ref)),
                             "Top by stall: the one that waited longer first")


class EnableOption(unittest.TestCase):
    """trapstatd --enable-delay-accounting: it turns kernel.task_delayacct on at start (and leaves
    it on); without CAP_SYS_ADMIN it cannot, and the start fails with one line that says so. Without
    the option the daemon never writes it."""

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(SYSCTL):
            raise unittest.SkipTest(f"no {SYSCTL} (a kernel before 5.14): nothing to turn on")
        accounting = DelayAccounting(False).__enter__()
        cls.addClassCleanup(accounting.__exit__, None, None, None)

    def setUp(self):
        with open(SYSCTL, "w") as f:
            f.write("0")

    def sysctl(self):
        with open(SYSCTL) as f:
            return f.read().strip()

    def test_turns_it_on(self):
        with Daemon(extra_args=["--enable-delay-accounting"]) as d:
            self.assertEqual(self.sysctl(), "1")
            src = source(d, "delay_accounting")
            self.assertEqual((src["active"], src.get("reason")), (True, None), src)
            self.assertIn("Turned on the kernel's delay accounting", d.read_log())

    def test_not_without_the_option(self):
        with Daemon() as d:
            self.assertFalse(source(d, "delay_accounting")["active"])
        self.assertEqual(self.sysctl(), "0")

    def test_fails_without_cap_sys_admin(self):
        d = Daemon(fault_time=False)  # its arguments and directory; not started
        self.addCleanup(shutil.rmtree, d.dir, True)
        p = subprocess.run(["setpriv", "--inh-caps=-sys_admin", "--bounding-set=-sys_admin", *d.args,
                            "--enable-delay-accounting"], capture_output=True, text=True, timeout=60 * TIME_SCALE)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("Failed to turn on the kernel's delay accounting (--enable-delay-accounting, "
                      "kernel.task_delayacct): Operation not permitted", p.stderr)
        self.assertEqual(self.sysctl(), "0")


class NoDelayAccounting(unittest.TestCase):
    """kernel.task_delayacct 0 and swap on zram for the whole class, one daemon started after both:
    GetStatus says why, and a process that waited on swap-ins has stall null in History and Top
    (the kernel counted nothing: not zeros)."""

    @classmethod
    def setUpClass(cls):
        start_class(cls, on=False)

    def test_source_inactive(self):
        src = source(self.daemon, "delay_accounting")
        self.assertFalse(src["active"], src)
        self.assertIn("task_delayacct", src["reason"] or "", src)

    def test_null_not_zeros(self):
        with Workload(2, 256, 1) as w:
            pid = w.info["pid"]
            self.assertGreater(w.info["majflt"], 0, w.info)
            # The kernel kept nothing for it: what null stands for.
            self.assertEqual(taskstats(pid)["swapinCount"], 0)
            majflt = w.finish()
        h = exited_history(self.daemon, pid)
        # Counted all the same: only the kernel's delays are unknown.
        self.assertEqual(h["total"]["faults"]["major"], majflt, h["total"]["faults"])
        self.assertIsNone(h["total"]["stall"], h["total"])
        self.assertTrue(h["samples"])
        self.assertTrue(all(s["counters"]["stall"] is None for s in h["samples"]), h["samples"])
        rows = top(self.daemon, "major", [pid])
        self.assertEqual(len(rows), 1, rows)
        self.assertIsNone(rows[0]["counters"]["stall"], rows[0])


if __name__ == "__main__":
    require_root_and_bpf()
    unittest.main(verbosity=2)
