# SPDX-License-Identifier: MIT
"""trapstat-exporter against a stand-in for trapstatd: a varlink server in this test answering
UnitTotals, GetStatus and Top with canned replies. /metrics is exactly what the replies say, in
both formats, and promtool finds nothing to say about it; 404, 405 and HEAD; trapstat_up 0 when
no daemon answers; at most --unit-limit units plus "other" whatever the reply holds; a real
Prometheus scraping the exporter answers a query with the exact value. No root, no BPF."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from daemon import binary  # noqa: E402

PROMTOOL = shutil.which("promtool")
PROMETHEUS = shutil.which("prometheus")


def faults(user=0, kernel=0, minor=0, major=0, read=0, write=0, exec_=0, by_cause=None):
    """A Faults; by_cause: the major faults {"file": n, "anon": n, "shmem": n} (default none of
    them)."""
    return {"user": user, "kernel": kernel, "minor": minor, "major": major, "read": read, "write": write,
            "exec": exec_, "protection": 0, "majorByCause": {"file": 0, "anon": 0, "shmem": 0, **(by_cause or {})}}


def fault_time(minor=0, major=0, kernel=0, longest=0, buckets=None, by_cause=None):
    """A FaultTime; buckets: {bucket: faults}; by_cause: the major faults' {"file": ns, ...}."""
    return {"minorNs": minor, "majorNs": major, "kernelNs": kernel, "maxNs": longest,
            "histogram": [(buckets or {}).get(i, 0) for i in range(24)],
            "majorNsByCause": {"file": 0, "anon": 0, "shmem": 0, **(by_cause or {})}}


def stall(swapin=(0, 0), thrashing=(0, 0), reclaim=(0, 0), compact=(0, 0), blkio=(0, 0)):
    """A Stall: each cause's (nanoseconds, waits)."""
    causes = {"swapin": swapin, "thrashing": thrashing, "reclaim": reclaim, "compact": compact, "blkio": blkio}
    return {f"{c}{member}": v[i] for c, v in causes.items() for i, member in enumerate(("Ns", "Count"))}


def counters(f, traps, ft=None, **more):
    """A Counters; more: its stall (stall=None for null), missing otherwise (a daemon older than it)."""
    return {"faults": f, "faultTime": ft or fault_time(), "traps": traps, "signals": {}, "signalCodes": {}, **more}


UNIT_TOTALS = {
    "sinceUsec": int(time.time() * 1e6) - 100_000_000,
    "units": [
        # Its major fault, of a file, was the fault in kernel mode of 250 ns.
        {"unit": "a.service", "processes": 2,
         "counters": counters(faults(10, 3, 12, 1, 4, 5, 1, {"file": 1}), {"UD": 7, "BP": 2},
                              fault_time(1500, 0, 250, 1500, {0: 1, 1: 1}, {"file": 250}),
                              stall=stall(swapin=(1500000000, 3), reclaim=(250, 1), blkio=(2000000000, 7)))},
        {"unit": 'ev"il\\\n.service', "processes": 1,
         "counters": counters(faults(5, 0, 5, 0, 5), {"GP": 1}, stall=stall())},
        {"unit": None, "processes": 1, "counters": counters(faults(1, 1, 2), {}, stall=stall(thrashing=(40, 1)))},
    ],
    "otherUnits": 3,
    # Its stall less the listed units': "other" waited 2 us in 2 swap-ins, 7 ns thrashing, 1 ms in 2
    # compactions and 10 ns in 2 block I/Os.
    "total": counters(faults(30, 6, 34, 2, 20, 6, 1, {"file": 1, "anon": 1}), {"UD": 9, "BP": 2, "GP": 1},
                      fault_time(4500, 0, 250, 3000, {0: 1, 1: 1, 2: 1}, {"file": 250}),
                      stall=stall(swapin=(1500002000, 5), thrashing=(47, 2), reclaim=(250, 1), compact=(1000000, 2),
                                  blkio=(2000000010, 9))),
}
STATUS = {"dropsByKind": [{"kind": "fault_map_full", "count": 3, "lost": "a count"},
                          {"kind": "exit_event_lost", "count": 0, "lost": "a final figure"}]}
TOP = {"rows": [
    {"process": {"pid": 42, "startTime": 99, "comm": "work", "cmdline": None, "uid": 0, "unit": "a.service",
                 "firstSeenUsec": 1, "lastSeenUsec": 2, "exited": False},
     "counters": counters(faults(8, 1, 9, 0, 8), {"UD": 5})},
]}

EXPECTED = r'''# HELP trapstat_up 1 when trapstatd answered this scrape, else 0 (and no other series).
# TYPE trapstat_up gauge
trapstat_up 1
# HELP trapstat_traps_total CPU exceptions turned into signals since trapstatd started, by x86 vector and systemd unit.
# TYPE trapstat_traps_total counter
trapstat_traps_total{vector="UD",unit="a.service"} 7
trapstat_traps_total{vector="BP",unit="a.service"} 2
trapstat_traps_total{vector="GP",unit="ev\"il\\\n.service"} 1
trapstat_traps_total{vector="UD",unit="other"} 2
trapstat_traps_total{vector="BP",unit="other"} 0
trapstat_traps_total{vector="GP",unit="other"} 0
# HELP trapstat_page_faults_total Page faults since trapstatd started by mode, access (user mode only) and systemd unit; a unit's series sum to its user plus kernel faults.
# TYPE trapstat_page_faults_total counter
trapstat_page_faults_total{mode="user",access="read",unit="a.service"} 4
trapstat_page_faults_total{mode="user",access="write",unit="a.service"} 5
trapstat_page_faults_total{mode="user",access="exec",unit="a.service"} 1
trapstat_page_faults_total{mode="user",access="",unit="a.service"} 0
trapstat_page_faults_total{mode="kernel",access="",unit="a.service"} 3
trapstat_page_faults_total{mode="user",access="read",unit="ev\"il\\\n.service"} 5
trapstat_page_faults_total{mode="user",access="write",unit="ev\"il\\\n.service"} 0
trapstat_page_faults_total{mode="user",access="exec",unit="ev\"il\\\n.service"} 0
trapstat_page_faults_total{mode="user",access="",unit="ev\"il\\\n.service"} 0
trapstat_page_faults_total{mode="kernel",access="",unit="ev\"il\\\n.service"} 0
trapstat_page_faults_total{mode="user",access="read",unit=""} 0
trapstat_page_faults_total{mode="user",access="write",unit=""} 0
trapstat_page_faults_total{mode="user",access="exec",unit=""} 0
trapstat_page_faults_total{mode="user",access="",unit=""} 1
trapstat_page_faults_total{mode="kernel",access="",unit=""} 1
trapstat_page_faults_total{mode="user",access="read",unit="other"} 11
trapstat_page_faults_total{mode="user",access="write",unit="other"} 1
trapstat_page_faults_total{mode="user",access="exec",unit="other"} 0
trapstat_page_faults_total{mode="user",access="",unit="other"} 2
trapstat_page_faults_total{mode="kernel",access="",unit="other"} 2
# HELP trapstat_minor_faults_total Minor page faults (the kernel's min_flt) since trapstatd started, by systemd unit.
# TYPE trapstat_minor_faults_total counter
trapstat_minor_faults_total{unit="a.service"} 12
trapstat_minor_faults_total{unit="ev\"il\\\n.service"} 5
trapstat_minor_faults_total{unit=""} 2
trapstat_minor_faults_total{unit="other"} 15
# HELP trapstat_major_faults_total Major page faults (the kernel's maj_flt) since trapstatd started, by cause and systemd unit: cause file for faults on a file mapping, anon and shmem for anonymous and shared memory read back from swap, an empty cause for the rest (all of them where trapstatd does not tell causes); a unit's series sum to its major faults.
# TYPE trapstat_major_faults_total counter
trapstat_major_faults_total{cause="file",unit="a.service"} 1
trapstat_major_faults_total{cause="anon",unit="a.service"} 0
trapstat_major_faults_total{cause="shmem",unit="a.service"} 0
trapstat_major_faults_total{cause="",unit="a.service"} 0
trapstat_major_faults_total{cause="file",unit="ev\"il\\\n.service"} 0
trapstat_major_faults_total{cause="anon",unit="ev\"il\\\n.service"} 0
trapstat_major_faults_total{cause="shmem",unit="ev\"il\\\n.service"} 0
trapstat_major_faults_total{cause="",unit="ev\"il\\\n.service"} 0
trapstat_major_faults_total{cause="file",unit=""} 0
trapstat_major_faults_total{cause="anon",unit=""} 0
trapstat_major_faults_total{cause="shmem",unit=""} 0
trapstat_major_faults_total{cause="",unit=""} 0
trapstat_major_faults_total{cause="file",unit="other"} 0
trapstat_major_faults_total{cause="anon",unit="other"} 1
trapstat_major_faults_total{cause="shmem",unit="other"} 0
trapstat_major_faults_total{cause="",unit="other"} 0
# HELP trapstat_page_fault_seconds_total Time spent in page faults since trapstatd started, seconds, by kind and systemd unit: kind minor and major for faults taken in user mode as the kernel accounted them, kernel for faults taken in kernel mode for the process.
# TYPE trapstat_page_fault_seconds_total counter
trapstat_page_fault_seconds_total{kind="minor",unit="a.service"} 0.0000015
trapstat_page_fault_seconds_total{kind="major",unit="a.service"} 0
trapstat_page_fault_seconds_total{kind="kernel",unit="a.service"} 0.00000025
trapstat_page_fault_seconds_total{kind="minor",unit="ev\"il\\\n.service"} 0
trapstat_page_fault_seconds_total{kind="major",unit="ev\"il\\\n.service"} 0
trapstat_page_fault_seconds_total{kind="kernel",unit="ev\"il\\\n.service"} 0
trapstat_page_fault_seconds_total{kind="minor",unit=""} 0
trapstat_page_fault_seconds_total{kind="major",unit=""} 0
trapstat_page_fault_seconds_total{kind="kernel",unit=""} 0
trapstat_page_fault_seconds_total{kind="minor",unit="other"} 0.000003
trapstat_page_fault_seconds_total{kind="major",unit="other"} 0
trapstat_page_fault_seconds_total{kind="kernel",unit="other"} 0
# HELP trapstat_major_fault_seconds_total Time spent in major page faults since trapstatd started, seconds, by cause (file, anon, shmem, as trapstat_major_faults_total) and systemd unit: faults taken in user or kernel mode, a part of kinds major and kernel of trapstat_page_fault_seconds_total.
# TYPE trapstat_major_fault_seconds_total counter
trapstat_major_fault_seconds_total{cause="file",unit="a.service"} 0.00000025
trapstat_major_fault_seconds_total{cause="anon",unit="a.service"} 0
trapstat_major_fault_seconds_total{cause="shmem",unit="a.service"} 0
trapstat_major_fault_seconds_total{cause="file",unit="ev\"il\\\n.service"} 0
trapstat_major_fault_seconds_total{cause="anon",unit="ev\"il\\\n.service"} 0
trapstat_major_fault_seconds_total{cause="shmem",unit="ev\"il\\\n.service"} 0
trapstat_major_fault_seconds_total{cause="file",unit=""} 0
trapstat_major_fault_seconds_total{cause="anon",unit=""} 0
trapstat_major_fault_seconds_total{cause="shmem",unit=""} 0
trapstat_major_fault_seconds_total{cause="file",unit="other"} 0
trapstat_major_fault_seconds_total{cause="anon",unit="other"} 0
trapstat_major_fault_seconds_total{cause="shmem",unit="other"} 0
# HELP trapstat_page_fault_duration_seconds How long page faults took since trapstatd started, seconds, by systemd unit: every fault timed from its entry to its completion; le is an exclusive upper edge.
# TYPE trapstat_page_fault_duration_seconds histogram
trapstat_page_fault_duration_seconds_bucket{unit="a.service",le="1e-06"} 1
trapstat_page_fault_duration_seconds_bucket{unit="a.service",le="2e-06"} 2
trapstat_page_fault_duration_seconds_bucket{unit="a.service",le="4e-06"} 2
trapstat_page_fault_duration_seconds_bucket{unit="a.service",le="8e-06"} 2
trapstat_page_fault_duration_seconds_bucket{unit="a.service",le="1.6e-05"} 2
trapstat_page_fault_duration_seconds_bucket{unit="a.service",le="3.2e-05"} 2
trapstat_page_fault_duration_seconds_bucket{unit="a.service",le="6.4e-05"} 2
trapstat_page_fault_duration_seconds_bucket{unit="a.service",le="0.000128"} 2
trapstat_page_fault_duration_seconds_bucket{unit="a.service",le="0.000256"} 2
trapstat_page_fault_duration_seconds_bucket{unit="a.service",le="0.000512"} 2
trapstat_page_fault_duration_seconds_bucket{unit="a.service",le="0.001024"} 2
trapstat_page_fault_duration_seconds_bucket{unit="a.service",le="0.002048"} 2
trapstat_page_fault_duration_seconds_bucket{unit="a.service",le="0.004096"} 2
trapstat_page_fault_duration_seconds_bucket{unit="a.service",le="0.008192"} 2
trapstat_page_fault_duration_seconds_bucket{unit="a.service",le="0.016384"} 2
trapstat_page_fault_duration_seconds_bucket{unit="a.service",le="0.032768"} 2
trapstat_page_fault_duration_seconds_bucket{unit="a.service",le="0.065536"} 2
trapstat_page_fault_duration_seconds_bucket{unit="a.service",le="0.131072"} 2
trapstat_page_fault_duration_seconds_bucket{unit="a.service",le="0.262144"} 2
trapstat_page_fault_duration_seconds_bucket{unit="a.service",le="0.524288"} 2
trapstat_page_fault_duration_seconds_bucket{unit="a.service",le="1.048576"} 2
trapstat_page_fault_duration_seconds_bucket{unit="a.service",le="2.097152"} 2
trapstat_page_fault_duration_seconds_bucket{unit="a.service",le="4.194304"} 2
trapstat_page_fault_duration_seconds_bucket{unit="a.service",le="+Inf"} 2
trapstat_page_fault_duration_seconds_sum{unit="a.service"} 0.00000175
trapstat_page_fault_duration_seconds_count{unit="a.service"} 2
trapstat_page_fault_duration_seconds_bucket{unit="ev\"il\\\n.service",le="1e-06"} 0
trapstat_page_fault_duration_seconds_bucket{unit="ev\"il\\\n.service",le="2e-06"} 0
trapstat_page_fault_duration_seconds_bucket{unit="ev\"il\\\n.service",le="4e-06"} 0
trapstat_page_fault_duration_seconds_bucket{unit="ev\"il\\\n.service",le="8e-06"} 0
trapstat_page_fault_duration_seconds_bucket{unit="ev\"il\\\n.service",le="1.6e-05"} 0
trapstat_page_fault_duration_seconds_bucket{unit="ev\"il\\\n.service",le="3.2e-05"} 0
trapstat_page_fault_duration_seconds_bucket{unit="ev\"il\\\n.service",le="6.4e-05"} 0
trapstat_page_fault_duration_seconds_bucket{unit="ev\"il\\\n.service",le="0.000128"} 0
trapstat_page_fault_duration_seconds_bucket{unit="ev\"il\\\n.service",le="0.000256"} 0
trapstat_page_fault_duration_seconds_bucket{unit="ev\"il\\\n.service",le="0.000512"} 0
trapstat_page_fault_duration_seconds_bucket{unit="ev\"il\\\n.service",le="0.001024"} 0
trapstat_page_fault_duration_seconds_bucket{unit="ev\"il\\\n.service",le="0.002048"} 0
trapstat_page_fault_duration_seconds_bucket{unit="ev\"il\\\n.service",le="0.004096"} 0
trapstat_page_fault_duration_seconds_bucket{unit="ev\"il\\\n.service",le="0.008192"} 0
trapstat_page_fault_duration_seconds_bucket{unit="ev\"il\\\n.service",le="0.016384"} 0
trapstat_page_fault_duration_seconds_bucket{unit="ev\"il\\\n.service",le="0.032768"} 0
trapstat_page_fault_duration_seconds_bucket{unit="ev\"il\\\n.service",le="0.065536"} 0
trapstat_page_fault_duration_seconds_bucket{unit="ev\"il\\\n.service",le="0.131072"} 0
trapstat_page_fault_duration_seconds_bucket{unit="ev\"il\\\n.service",le="0.262144"} 0
trapstat_page_fault_duration_seconds_bucket{unit="ev\"il\\\n.service",le="0.524288"} 0
trapstat_page_fault_duration_seconds_bucket{unit="ev\"il\\\n.service",le="1.048576"} 0
trapstat_page_fault_duration_seconds_bucket{unit="ev\"il\\\n.service",le="2.097152"} 0
trapstat_page_fault_duration_seconds_bucket{unit="ev\"il\\\n.service",le="4.194304"} 0
trapstat_page_fault_duration_seconds_bucket{unit="ev\"il\\\n.service",le="+Inf"} 0
trapstat_page_fault_duration_seconds_sum{unit="ev\"il\\\n.service"} 0
trapstat_page_fault_duration_seconds_count{unit="ev\"il\\\n.service"} 0
trapstat_page_fault_duration_seconds_bucket{unit="",le="1e-06"} 0
trapstat_page_fault_duration_seconds_bucket{unit="",le="2e-06"} 0
trapstat_page_fault_duration_seconds_bucket{unit="",le="4e-06"} 0
trapstat_page_fault_duration_seconds_bucket{unit="",le="8e-06"} 0
trapstat_page_fault_duration_seconds_bucket{unit="",le="1.6e-05"} 0
trapstat_page_fault_duration_seconds_bucket{unit="",le="3.2e-05"} 0
trapstat_page_fault_duration_seconds_bucket{unit="",le="6.4e-05"} 0
trapstat_page_fault_duration_seconds_bucket{unit="",le="0.000128"} 0
trapstat_page_fault_duration_seconds_bucket{unit="",le="0.000256"} 0
trapstat_page_fault_duration_seconds_bucket{unit="",le="0.000512"} 0
trapstat_page_fault_duration_seconds_bucket{unit="",le="0.001024"} 0
trapstat_page_fault_duration_seconds_bucket{unit="",le="0.002048"} 0
trapstat_page_fault_duration_seconds_bucket{unit="",le="0.004096"} 0
trapstat_page_fault_duration_seconds_bucket{unit="",le="0.008192"} 0
trapstat_page_fault_duration_seconds_bucket{unit="",le="0.016384"} 0
trapstat_page_fault_duration_seconds_bucket{unit="",le="0.032768"} 0
trapstat_page_fault_duration_seconds_bucket{unit="",le="0.065536"} 0
trapstat_page_fault_duration_seconds_bucket{unit="",le="0.131072"} 0
trapstat_page_fault_duration_seconds_bucket{unit="",le="0.262144"} 0
trapstat_page_fault_duration_seconds_bucket{unit="",le="0.524288"} 0
trapstat_page_fault_duration_seconds_bucket{unit="",le="1.048576"} 0
trapstat_page_fault_duration_seconds_bucket{unit="",le="2.097152"} 0
trapstat_page_fault_duration_seconds_bucket{unit="",le="4.194304"} 0
trapstat_page_fault_duration_seconds_bucket{unit="",le="+Inf"} 0
trapstat_page_fault_duration_seconds_sum{unit=""} 0
trapstat_page_fault_duration_seconds_count{unit=""} 0
trapstat_page_fault_duration_seconds_bucket{unit="other",le="1e-06"} 0
trapstat_page_fault_duration_seconds_bucket{unit="other",le="2e-06"} 0
trapstat_page_fault_duration_seconds_bucket{unit="other",le="4e-06"} 1
trapstat_page_fault_duration_seconds_bucket{unit="other",le="8e-06"} 1
trapstat_page_fault_duration_seconds_bucket{unit="other",le="1.6e-05"} 1
trapstat_page_fault_duration_seconds_bucket{unit="other",le="3.2e-05"} 1
trapstat_page_fault_duration_seconds_bucket{unit="other",le="6.4e-05"} 1
trapstat_page_fault_duration_seconds_bucket{unit="other",le="0.000128"} 1
trapstat_page_fault_duration_seconds_bucket{unit="other",le="0.000256"} 1
trapstat_page_fault_duration_seconds_bucket{unit="other",le="0.000512"} 1
trapstat_page_fault_duration_seconds_bucket{unit="other",le="0.001024"} 1
trapstat_page_fault_duration_seconds_bucket{unit="other",le="0.002048"} 1
trapstat_page_fault_duration_seconds_bucket{unit="other",le="0.004096"} 1
trapstat_page_fault_duration_seconds_bucket{unit="other",le="0.008192"} 1
trapstat_page_fault_duration_seconds_bucket{unit="other",le="0.016384"} 1
trapstat_page_fault_duration_seconds_bucket{unit="other",le="0.032768"} 1
trapstat_page_fault_duration_seconds_bucket{unit="other",le="0.065536"} 1
trapstat_page_fault_duration_seconds_bucket{unit="other",le="0.131072"} 1
trapstat_page_fault_duration_seconds_bucket{unit="other",le="0.262144"} 1
trapstat_page_fault_duration_seconds_bucket{unit="other",le="0.524288"} 1
trapstat_page_fault_duration_seconds_bucket{unit="other",le="1.048576"} 1
trapstat_page_fault_duration_seconds_bucket{unit="other",le="2.097152"} 1
trapstat_page_fault_duration_seconds_bucket{unit="other",le="4.194304"} 1
trapstat_page_fault_duration_seconds_bucket{unit="other",le="+Inf"} 1
trapstat_page_fault_duration_seconds_sum{unit="other"} 0.000003
trapstat_page_fault_duration_seconds_count{unit="other"} 1
# HELP trapstat_memory_stall_seconds_total Time waited on memory since trapstatd started, seconds, as the kernel's delay accounting says, by cause and systemd unit: swapin for pages read back from swap, thrashing for pages of the working set read again after their eviction, reclaim for direct reclaim, compact for direct compaction.
# TYPE trapstat_memory_stall_seconds_total counter
trapstat_memory_stall_seconds_total{cause="swapin",unit="a.service"} 1.5
trapstat_memory_stall_seconds_total{cause="thrashing",unit="a.service"} 0
trapstat_memory_stall_seconds_total{cause="reclaim",unit="a.service"} 0.00000025
trapstat_memory_stall_seconds_total{cause="compact",unit="a.service"} 0
trapstat_memory_stall_seconds_total{cause="swapin",unit="ev\"il\\\n.service"} 0
trapstat_memory_stall_seconds_total{cause="thrashing",unit="ev\"il\\\n.service"} 0
trapstat_memory_stall_seconds_total{cause="reclaim",unit="ev\"il\\\n.service"} 0
trapstat_memory_stall_seconds_total{cause="compact",unit="ev\"il\\\n.service"} 0
trapstat_memory_stall_seconds_total{cause="swapin",unit=""} 0
trapstat_memory_stall_seconds_total{cause="thrashing",unit=""} 0.00000004
trapstat_memory_stall_seconds_total{cause="reclaim",unit=""} 0
trapstat_memory_stall_seconds_total{cause="compact",unit=""} 0
trapstat_memory_stall_seconds_total{cause="swapin",unit="other"} 0.000002
trapstat_memory_stall_seconds_total{cause="thrashing",unit="other"} 0.000000007
trapstat_memory_stall_seconds_total{cause="reclaim",unit="other"} 0
trapstat_memory_stall_seconds_total{cause="compact",unit="other"} 0.001
# HELP trapstat_memory_stalls_total Waits on memory since trapstatd started, as the kernel's delay accounting counts them, by cause (as trapstat_memory_stall_seconds_total) and systemd unit.
# TYPE trapstat_memory_stalls_total counter
trapstat_memory_stalls_total{cause="swapin",unit="a.service"} 3
trapstat_memory_stalls_total{cause="thrashing",unit="a.service"} 0
trapstat_memory_stalls_total{cause="reclaim",unit="a.service"} 1
trapstat_memory_stalls_total{cause="compact",unit="a.service"} 0
trapstat_memory_stalls_total{cause="swapin",unit="ev\"il\\\n.service"} 0
trapstat_memory_stalls_total{cause="thrashing",unit="ev\"il\\\n.service"} 0
trapstat_memory_stalls_total{cause="reclaim",unit="ev\"il\\\n.service"} 0
trapstat_memory_stalls_total{cause="compact",unit="ev\"il\\\n.service"} 0
trapstat_memory_stalls_total{cause="swapin",unit=""} 0
trapstat_memory_stalls_total{cause="thrashing",unit=""} 1
trapstat_memory_stalls_total{cause="reclaim",unit=""} 0
trapstat_memory_stalls_total{cause="compact",unit=""} 0
trapstat_memory_stalls_total{cause="swapin",unit="other"} 2
trapstat_memory_stalls_total{cause="thrashing",unit="other"} 1
trapstat_memory_stalls_total{cause="reclaim",unit="other"} 0
trapstat_memory_stalls_total{cause="compact",unit="other"} 2
# HELP trapstat_block_io_delay_seconds_total Time waited for block I/O since trapstatd started, seconds, as the kernel's delay accounting says, by systemd unit.
# TYPE trapstat_block_io_delay_seconds_total counter
trapstat_block_io_delay_seconds_total{unit="a.service"} 2
trapstat_block_io_delay_seconds_total{unit="ev\"il\\\n.service"} 0
trapstat_block_io_delay_seconds_total{unit=""} 0
trapstat_block_io_delay_seconds_total{unit="other"} 0.00000001
# HELP trapstat_block_io_delays_total Waits for block I/O since trapstatd started, as the kernel's delay accounting counts them, by systemd unit.
# TYPE trapstat_block_io_delays_total counter
trapstat_block_io_delays_total{unit="a.service"} 7
trapstat_block_io_delays_total{unit="ev\"il\\\n.service"} 0
trapstat_block_io_delays_total{unit=""} 0
trapstat_block_io_delays_total{unit="other"} 2
# HELP trapstat_drops_total Events trapstatd could not count since it started, by kind.
# TYPE trapstat_drops_total counter
trapstat_drops_total{kind="fault_map_full"} 3
trapstat_drops_total{kind="exit_event_lost"} 0
'''


class StandIn:
    """A varlink server on a Unix socket answering each method with replies[method] (a dict, or
    a callable of the parameters); every call is kept in calls."""

    def __init__(self, path, replies):
        self.path, self.replies, self.calls = path, replies, []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(16)
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.answer, args=(conn,), daemon=True).start()

    def answer(self, conn):
        buf = b""
        with conn:
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buf += chunk
                while b"\0" in buf:
                    message, buf = buf.split(b"\0", 1)
                    call = json.loads(message)
                    self.calls.append(call)
                    reply = self.replies.get(call["method"])
                    if callable(reply):
                        reply = reply(call.get("parameters", {}))
                    if reply is None:
                        out = {"error": "org.varlink.service.MethodNotFound", "parameters": {"method": call["method"]}}
                    else:
                        out = {"parameters": reply}
                    try:
                        conn.sendall(json.dumps(out).encode() + b"\0")
                    except OSError:
                        return  # the exporter gave up waiting (test_daemon_down)

    def close(self):
        self.sock.close()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(port, path="/metrics", method="GET", accept=None):
    """(status, content type, body) of one request."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    if accept:
        req.add_header("Accept", accept)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


def without_duration(text):
    return "".join(line + "\n" for line in text.splitlines() if "trapstat_scrape_duration_seconds" not in line)


class Exporter(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="trapstat-exporter-")
        self.socket = os.path.join(self.dir, "io.trapstat")
        self.replies = {"io.trapstat.UnitTotals": UNIT_TOTALS, "io.trapstat.GetStatus": STATUS,
                        "io.trapstat.Top": TOP}
        self.standin = StandIn(self.socket, self.replies)
        self.procs = []

    def tearDown(self):
        codes = []
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            codes.append(p.returncode)
        # Every exporter ends cleanly on SIGTERM, and says nothing of a sanitizer (ASan build).
        logs = ""
        for name in sorted(os.listdir(self.dir)):
            if name.endswith(".log"):
                with open(os.path.join(self.dir, name)) as f:
                    logs += f.read()
        self.standin.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        self.assertNotRegex(logs, r"Sanitizer|runtime error")
        self.assertEqual([c for c in codes if c not in (0, -signal.SIGTERM)], [], logs)

    def exporter(self, *args, socket_path=None):
        port = free_port()
        log = open(os.path.join(self.dir, f"exporter-{port}.log"), "w")
        self.addCleanup(log.close)
        p = subprocess.Popen([binary("TRAPSTAT_EXPORTER"), "--socket", socket_path or self.socket,
                              "--listen", f"127.0.0.1:{port}", *args], stderr=log)
        self.procs.append(p)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return port
            except OSError:
                if p.poll() is not None or time.monotonic() > deadline:
                    with open(log.name) as f:
                        raise AssertionError(f"exporter did not listen: {f.read()}")
                time.sleep(0.05)

    def promtool(self, text):
        if not PROMTOOL:
            return
        r = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
        self.assertEqual((r.returncode, r.stdout + r.stderr), (0, ""), text)

    def test_exact_prometheus_text(self):
        port = self.exporter()
        status, ctype, body = http(port)
        self.assertEqual((status, ctype), (200, "text/plain; version=0.0.4; charset=utf-8"))
        self.assertEqual(without_duration(body), EXPECTED)
        self.assertRegex(body, r"\n# TYPE trapstat_scrape_duration_seconds gauge\n"
                               r"trapstat_scrape_duration_seconds [0-9]+\.[0-9]{6}\n$")
        self.promtool(body)
        self.assertEqual([c["method"] for c in self.standin.calls],
                         ["io.trapstat.UnitTotals", "io.trapstat.GetStatus"])
        self.assertEqual(self.standin.calls[0]["parameters"], {"limit": 1000})

    def test_openmetrics(self):
        port = self.exporter("--process-series", "1")
        status, ctype, body = http(port, accept="application/openmetrics-text;version=1.0.0,text/plain;q=0.5")
        self.assertEqual((status, ctype), (200, "application/openmetrics-text; version=1.0.0; charset=utf-8"))
        self.assertTrue(body.endswith("\n# EOF\n"), body)
        self.assertIn("# TYPE trapstat_traps counter\ntrapstat_traps_total{", body)
        self.assertNotIn("_total counter", body)
        self.assertIn('trapstat_process_traps_total{pid="42",start_time="99",comm="work",unit="a.service",container=""} 5\n'
                      'trapstat_process_traps_total{pid="other",start_time="",comm="",unit="",container=""} 7\n', body)
        self.assertIn('trapstat_process_page_faults_total{pid="other",start_time="",comm="",unit="",container=""} 27\n', body)
        top = [c for c in self.standin.calls if c["method"] == "io.trapstat.Top"]
        self.assertEqual(len(top), 1)
        self.assertEqual(top[0]["parameters"]["limit"], 1)
        self.assertEqual(top[0]["parameters"]["sortBy"], "user")
        self.assertIn(top[0]["parameters"]["windowSec"], range(105, 115))  # since sinceUsec, plus a bucket
        if PROMTOOL:
            # promtool of Debian 12 reads the 0.0.4 format only: the same series in it.
            _, _, text = http(port)
            self.promtool(text)

    def test_paths_and_methods(self):
        port = self.exporter()
        self.assertEqual(http(port, "/")[0], 404)
        self.assertEqual(http(port, "/metrics/x")[0], 404)
        self.assertEqual(http(port, "/metrics", method="POST")[0], 405)
        self.assertEqual(http(port, "/metrics", method="DELETE")[0], 405)
        status, ctype, body = http(port, method="HEAD")
        self.assertEqual((status, ctype, body), (200, "text/plain; version=0.0.4; charset=utf-8", ""))
        self.assertEqual(http(port, "/metrics?x=1")[0], 200)
        # Headers beyond the limit are refused, and the exporter goes on.
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 20000 + b"\r\n\r\n")
            self.assertNotIn(b" 200 ", s.recv(4096))
        self.assertEqual(http(port)[0], 200)

    def test_daemon_down(self):
        port = self.exporter("--timeout", "1s", socket_path=os.path.join(self.dir, "none"))
        self.assertEqual(http(port), (200, "text/plain; version=0.0.4; charset=utf-8",
                                      "# HELP trapstat_up 1 when trapstatd answered this scrape, else 0 (and no other "
                                      "series).\n# TYPE trapstat_up gauge\ntrapstat_up 0\n"))
        # An error reply and a malformed one are the same: up 0 and nothing else.
        self.replies["io.trapstat.UnitTotals"] = None
        port = self.exporter()
        self.assertTrue(http(port)[2].endswith("trapstat_up 0\n"))
        self.replies["io.trapstat.UnitTotals"] = {"units": "no"}
        self.assertEqual(http(port)[2].count("\ntrapstat_"), 1)
        # A daemon that never answers: up 0 after --timeout.
        self.replies["io.trapstat.UnitTotals"] = lambda p: time.sleep(3) or UNIT_TOTALS
        port = self.exporter("--timeout", "500ms")
        start = time.monotonic()
        self.assertTrue(http(port)[2].endswith("trapstat_up 0\n"))
        self.assertLess(time.monotonic() - start, 2.5)

    def test_timeout_bounds_the_scrape(self):
        """--timeout 1s bounds the scrape, not each call: a GetStatus later than its third of it
        leaves out the drops, and the unit totals are served within the second. Its reply,
        coming while Top would wait, is not taken for Top's: Top is not asked on that
        connection (else a malformed Top reply would make it up 0)."""
        self.replies["io.trapstat.GetStatus"] = lambda p: time.sleep(0.5) or STATUS
        port = self.exporter("--timeout", "1s", "--process-series", "1")
        start = time.monotonic()
        status, _, body = http(port)
        self.assertLess(time.monotonic() - start, 1.0)
        self.assertEqual(status, 200)
        self.assertIn("\ntrapstat_up 1\n", "\n" + body)
        self.assertNotIn("trapstat_drops_total", body)
        self.assertIn("trapstat_traps_total{", body)
        self.assertNotIn("trapstat_process_", body)

    def test_unit_bound(self):
        """5000 units in every reply, asked for 100: 100 units and "other" in each family."""
        units = [{"unit": f"u{i}.service", "processes": 1,
                  "counters": counters(faults(2, 0, 2, 0, 2), {"UD": 1}, stall=stall(swapin=(10, 1), blkio=(3, 1)))}
                 for i in range(5000)]
        self.replies["io.trapstat.UnitTotals"] = {
            "sinceUsec": 1, "units": units, "otherUnits": 0,
            "total": counters(faults(10000, 0, 10000, 0, 10000), {"UD": 5000},
                              stall=stall(swapin=(50000, 5000), blkio=(15000, 5000)))}
        port = self.exporter("--unit-limit", "100")
        body = http(port)[2]
        self.assertEqual(self.standin.calls[0]["parameters"], {"limit": 100})
        for name, per_unit in (("trapstat_traps_total", 1), ("trapstat_page_faults_total", 5),
                               ("trapstat_minor_faults_total", 1), ("trapstat_major_faults_total", 4),
                               ("trapstat_page_fault_seconds_total", 3), ("trapstat_major_fault_seconds_total", 3),
                               ("trapstat_page_fault_duration_seconds_bucket", 24),
                               ("trapstat_page_fault_duration_seconds_sum", 1),
                               ("trapstat_page_fault_duration_seconds_count", 1),
                               ("trapstat_memory_stall_seconds_total", 4), ("trapstat_memory_stalls_total", 4),
                               ("trapstat_block_io_delay_seconds_total", 1), ("trapstat_block_io_delays_total", 1)):
            self.assertEqual(sum(line.startswith(name + "{") for line in body.splitlines()), 101 * per_unit, name)
        self.assertIn('trapstat_traps_total{vector="UD",unit="other"} 4900\n', body)
        self.assertIn('trapstat_memory_stall_seconds_total{cause="swapin",unit="other"} 0.000049\n', body)
        self.assertIn('trapstat_block_io_delays_total{unit="other"} 4900\n', body)
        self.promtool(body)

    def test_major_cause_not_told(self):
        """A daemon that cannot tell major faults' causes (majorByCause null): one series per unit
        with all its major faults, cause "", and no time by cause; promtool takes it."""
        def untold(f):
            return {**f, "majorByCause": None}
        self.replies["io.trapstat.UnitTotals"] = {
            "sinceUsec": 1, "otherUnits": 1,
            "units": [{"unit": "a.service", "processes": 1,
                       "counters": counters(untold(faults(4, 0, 2, 2, 4)), {}, fault_time(0, 900, 0, 900, {0: 2}))}],
            "total": counters(untold(faults(9, 0, 4, 5, 9)), {}, fault_time(0, 2000, 0, 900, {0: 5}))}
        body = http(self.exporter())[2]
        self.assertEqual([line for line in body.splitlines() if line.startswith("trapstat_major_")],
                         ['trapstat_major_faults_total{cause="",unit="a.service"} 2',
                          'trapstat_major_faults_total{cause="",unit="other"} 3'])
        self.assertIn('trapstat_page_fault_seconds_total{kind="major",unit="a.service"} 0.0000009\n', body)
        self.assertNotIn("trapstat_major_fault_seconds", body)
        self.promtool(body)

    def test_stall_not_known(self):
        """A daemon whose kernel keeps no delay accounting (stall null) and one older than it (no
        stall): no memory stall or block I/O series at all, the rest as before; promtool takes it."""
        for st in ({"stall": None}, {}):
            with self.subTest(stall=st):
                self.replies["io.trapstat.UnitTotals"] = {
                    "sinceUsec": 1, "otherUnits": 1,
                    "units": [{"unit": "a.service", "processes": 1, "counters": counters(faults(4, 0, 4, 0, 4), {}, **st)}],
                    "total": counters(faults(9, 0, 9, 0, 9), {}, **st)}
                body = http(self.exporter())[2]
                self.assertIn('trapstat_minor_faults_total{unit="other"} 5\n', body)
                self.assertNotIn("stall", body)
                self.assertNotIn("block_io", body)
                self.promtool(body)

    def test_usage(self):
        exe = binary("TRAPSTAT_EXPORTER")
        for args in (["--listen", "nowhere"], ["--listen", "::1:80"], ["--unit-limit", "0"],
                     ["--process-series", "-1"], ["--timeout", "forever"], ["extra"]):
            r = subprocess.run([exe, *args], capture_output=True, text=True, timeout=10)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn("--help", r.stderr)

    @unittest.skipUnless(shutil.which("systemd-socket-activate"), "no systemd-socket-activate")
    def test_socket_activation(self):
        """The socket systemd passes (trapstat-exporter.socket) is served; --listen is not bound."""
        port, unused = free_port(), free_port()
        log = open(os.path.join(self.dir, "activate.log"), "w")
        self.addCleanup(log.close)
        p = subprocess.Popen(["systemd-socket-activate", "-l", f"127.0.0.1:{port}", binary("TRAPSTAT_EXPORTER"),
                              "--socket", self.socket, "--listen", f"127.0.0.1:{unused}"], stderr=log)
        self.procs.append(p)
        deadline = time.monotonic() + 10
        while True:
            try:
                status, _, body = http(port)
                break
            except OSError:
                self.assertLess(time.monotonic(), deadline)
                time.sleep(0.05)
        self.assertEqual(status, 200)
        self.assertEqual(without_duration(body), EXPECTED)
        with self.assertRaises(OSError):
            socket.create_connection(("127.0.0.1", unused), timeout=2).close()

    @unittest.skipUnless(shutil.which("systemd-analyze"), "no systemd-analyze")
    def test_units(self):
        """The built units as systemd reads them: verify says nothing, exposure at most 2.0."""
        units = os.path.join(os.path.dirname(os.path.dirname(binary("TRAPSTAT_EXPORTER"))), "units")
        for name in ("trapstat-exporter.service", "trapstat-exporter.socket"):
            with open(os.path.join(units, name)) as f:
                text = f.read()
            # The installed path may not exist yet: the built binary in its place.
            text = "\n".join(f"ExecStart={binary('TRAPSTAT_EXPORTER')}" if line.startswith("ExecStart=") else line
                             for line in text.split("\n"))
            with open(os.path.join(self.dir, name), "w") as f:
                f.write(text)
        service = os.path.join(self.dir, "trapstat-exporter.service")
        r = subprocess.run(["systemd-analyze", "verify", service, os.path.join(self.dir, "trapstat-exporter.socket")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual((r.returncode, r.stdout + r.stderr), (0, ""))
        r = subprocess.run(["systemd-analyze", "security", "--offline=yes", service], capture_output=True, text=True,
                           timeout=60)
        m = re.search(r"Overall exposure level for \S+: ([0-9.]+)", r.stdout)
        self.assertTrue(m, r.stdout + r.stderr)
        self.assertLessEqual(float(m.group(1)), 2.0)

    @unittest.skipUnless(PROMETHEUS, "prometheus is not installed")
    def test_prometheus_scrapes(self):
        port = self.exporter()
        web = free_port()
        config = os.path.join(self.dir, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n"
                    f"  - job_name: trapstat\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n")
        p = subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={self.dir}/tsdb",
                              f"--web.listen-address=127.0.0.1:{web}"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        self.procs.append(p)
        query = urllib.parse.quote('trapstat_traps_total{unit="ev\\"il\\\\\\n.service",vector="GP"}')
        deadline = time.monotonic() + 25
        result = None
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{web}/api/v1/query?query={query}", timeout=5) as r:
                    result = json.load(r)["data"]["result"]
                if result:
                    break
            except (OSError, KeyError):
                pass
            time.sleep(0.5)
        self.assertTrue(result, "no answer from prometheus")
        self.assertEqual(len(result), 1)
        self.assertEqual(result[0]["metric"]["unit"], 'ev"il\\\n.service')
        self.assertEqual(result[0]["value"][1], "1")
        # The histogram as Prometheus reads it: a.service's two faults, the smaller under 1 us
        # and the other under 2 us, so the median at most 2 us.
        for query, want in (('trapstat_page_fault_duration_seconds_count{unit="a.service"}', "2"),
                            ('trapstat_page_fault_duration_seconds_bucket{unit="a.service",le="1e-06"}', "1"),
                            ('trapstat_page_fault_seconds_total{unit="a.service",kind="kernel"}', "2.5e-07"),
                            # A label of value "" is no label to Prometheus: the rest of the major
                            # faults is the series without cause.
                            ('trapstat_major_faults_total{unit="other",cause="anon"}', "1"),
                            ('trapstat_major_faults_total{unit="other",cause=""}', "0"),
                            ('trapstat_major_fault_seconds_total{unit="a.service",cause="file"}', "2.5e-07"),
                            ('trapstat_memory_stall_seconds_total{unit="a.service",cause="swapin"}', "1.5"),
                            ('trapstat_memory_stalls_total{unit="other",cause="compact"}', "2"),
                            ('trapstat_block_io_delay_seconds_total{unit="a.service"}', "2")):
            with urllib.request.urlopen(f"http://127.0.0.1:{web}/api/v1/query?query={urllib.parse.quote(query)}",
                                        timeout=5) as r:
                result = json.load(r)["data"]["result"]
            self.assertEqual([x["value"][1] for x in result], [want], query)


if __name__ == "__main__":
    unittest.main(verbosity=2)
