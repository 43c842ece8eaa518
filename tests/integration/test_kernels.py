# SPDX-License-Identifier: MIT
"""What each kernel CI boots must run: the BPF object, the sources and the features, as GetStatus
and trapstatd --probe report them, against a table kept here. A source or feature that silently
stops loading on one of these kernels fails this test; the counts themselves are checked exactly
by counts, counts-noloop and counts-base on the same kernels."""
import os
import platform
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import Daemon, binary, probe, require_root_and_bpf, trapstat_json  # noqa: E402

FEATURES = ("counting_slots", "fault_sites", "trap_sites", "vma_lookup", "task_reads")
# Every source but these is active (the test's daemon asks for fault_time too).
NOT_NEEDED = {"perf_page_faults_user": "not needed: the tracepoint is used",
              "perf_page_faults_kernel": "not needed: the tracepoint is used"}
BASE_FEATURES = {"counting_slots": "needs get_current_task_btf (Linux 5.11): every process counts in the per-CPU hash, "
                                   "about twice the BPF time per fault",
                 "fault_sites": "needs get_current_task_btf (Linux 5.11): no fault sites",
                 "trap_sites": "needs get_current_task_btf (Linux 5.11): no trap sites",
                 "vma_lookup": "needs get_current_task_btf (Linux 5.11): a site's instruction is named from "
                               "/proc/PID/maps while its process lives"}
# Before Linux 6.2 a tick reads its active processes' minor/major faults from /proc.
PROC_READS = {"task_reads": "needs bpf_task_from_pid (Linux 6.2): the minor/major faults of the processes active "
                            "in a tick are read from /proc/PID/stat, their delay accounting every 30 s and at exit"}
MISSING_6_1 = {"bpf_task_from_pid"}
MISSING_5_10 = {"get_current_task_btf", "task_storage", "atomics", "task_pt_regs", "bpf_loop", "bpf_find_vma",
                *MISSING_6_1}
# Arm64 has no exception tracepoints: the perf software event counts its faults.
ARM64_SOURCES = {"page_fault_user": "tracepoint not in kernel BTF: No such file or directory",
                 "page_fault_kernel": "tracepoint not in kernel BTF: No such file or directory"}

DELAYACCT_SYSCTL = "/proc/sys/kernel/task_delayacct"
DELAYACCT_OFF = ("the kernel keeps none: kernel.task_delayacct is 0 (sysctl kernel.task_delayacct=1, trapstatd "
                 "--enable-delay-accounting or the kernel command line's delayacct turns it on)")


def delay_accounting_now():
    """The source delay_accounting's reason as the kernel keeps its delay accounting now (None:
    active): the sysctl from Linux 5.14, which the machine may have set either way; before it,
    kept unless the kernel was booted with nodelayacct."""
    if not os.path.exists(DELAYACCT_SYSCTL):
        with open("/proc/cmdline") as f:
            booted_off = "nodelayacct" in f.read().split()
        return DELAYACCT_OFF.split(":")[0] + ": the kernel was booted with nodelayacct" if booted_off else None
    with open(DELAYACCT_SYSCTL) as f:
        return None if f.read().strip() == "1" else DELAYACCT_OFF


# (machine, kernel major.minor): the object, the inactive sources and features with their reasons,
# the capabilities the kernel lacks. Measured on each kernel's own boot (scripts/kernel-leg.sh,
# scripts/arm64.sh) and on these machines.
KERNELS = {
    # Debian 11: BTF and the ring buffer, none of the 5.11-5.17 helpers.
    ("x86_64", "5.10"): ("base", {**NOT_NEEDED, "fault_time": "needs get_current_task_btf (Linux 5.11)",
                                  "major_cause": "needs get_current_task_btf (Linux 5.11)"},
                         {**BASE_FEATURES, **PROC_READS}, MISSING_5_10),
    # Debian 12 (the arm64 leg), Debian 13 (the trixie leg), these machines.
    ("aarch64", "6.1"): ("full", ARM64_SOURCES, PROC_READS, MISSING_6_1),
    ("x86_64", "6.1"): ("full", NOT_NEEDED, PROC_READS, MISSING_6_1),
    ("x86_64", "6.12"): ("full", NOT_NEEDED, {}, set()),
    ("x86_64", "6.18"): ("full", NOT_NEEDED, {}, set()),
}


def kernel_key():
    return platform.machine(), ".".join(platform.release().split(".")[:2])


class Kernel(unittest.TestCase):
    def setUp(self):
        if kernel_key() not in KERNELS:
            self.fail(f"kernel {platform.release()} on {platform.machine()} is not in test_kernels.py's table: "
                      "add the object, sources and features it must run (trapstatd --probe prints them)")
        self.object, self.sources, self.features, self.missing = KERNELS[kernel_key()]

    def test_get_status_is_the_table(self):
        with Daemon() as d:
            st = trapstat_json(d.socket, "status")
        self.assertEqual(st["kernel"], platform.release())
        self.assertEqual(st["bpfObject"], self.object)
        inactive = {s["name"]: s["reason"] for s in st["sources"] if not s["active"]}
        # Every kernel CI boots keeps delay accounting; whether it does now is the machine's
        # setting (a sysctl from 5.14), which GetStatus follows.
        self.assertEqual(inactive.pop("delay_accounting", None), delay_accounting_now())
        self.assertEqual(inactive, self.sources)
        self.assertEqual({f["name"] for f in st["features"]}, set(FEATURES))
        self.assertEqual({f["name"]: f["reason"] for f in st["features"] if not f["active"]}, self.features)
        self.assertEqual({c["name"] for c in st["capabilities"] if not c["present"]}, self.missing)

    def test_trapstat_status_says_what_is_off_and_why(self):
        with Daemon() as d:
            text = subprocess.run([binary("TRAPSTAT"), "--socket", d.socket, "status"], capture_output=True, text=True,
                                  timeout=60, check=True).stdout
        self.assertIn(f"kernel:    {platform.release()}, BPF object {self.object}\n", text)
        features = text[text.index("\nfeatures:\n"):]
        for name in FEATURES:
            line = (f"  {name:<24} inactive: {self.features[name]}\n" if name in self.features
                    else f"  {name:<24} active\n")
            self.assertIn(line, features)

    def test_probe_says_the_same(self):
        rows, runs = probe("--enable-source", "fault_time")
        self.assertEqual(runs, f"object: {self.object}")
        self.assertEqual({name for name, (on, _) in rows.items() if not on and name in
                          {"btf", "ringbuf", "task_iterator", *MISSING_5_10}}, self.missing)
        for name, reason in self.features.items():
            self.assertEqual(rows[name], (False, reason))
        for name in set(FEATURES) - set(self.features):
            self.assertTrue(rows[name][0], name)
        # A source that loads says so; one that does not, why (those that wait for the task
        # iterator or the tracepoint only after attaching are the same as GetStatus's).
        for name, reason in self.sources.items():
            self.assertEqual(rows[name], (False, reason))

    def test_each_object_runs_where_the_capabilities_allow(self):
        # The objects from the richest; the kernel runs the one it chose and every one after it.
        objects = ["full", "noloop", "base"]
        for name in objects:
            out = subprocess.run([binary("TRAPSTATD"), "--probe", "--bpf-object", name], capture_output=True,
                                 text=True, timeout=60)
            if objects.index(name) >= objects.index(self.object):
                self.assertEqual(out.returncode, 0, out.stdout)
                self.assertIn(f"\nobject: {name}\n", out.stdout)
            else:
                self.assertEqual(out.returncode, 1, out.stdout)
                self.assertIn(f"object: none: {name} needs", out.stdout)

if __name__ == "__main__":
    require_root_and_bpf()
    unittest.main()
