# SPDX-License-Identifier: MIT
"""Exact counts of real kernel events, per process: every user-space trap vector x86-64 can raise
and every exception class arm64 can (as the machine is), from two threads; major faults against the kernel's own accounting; kernel-mode faults; a
process that lives less than a tick; two processes that had the same pid."""
import json
import os
import platform
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import (BP, UD, Daemon, SharedDaemonTest, binary, copy_for_users, create_user, daemon_maps,  # noqa: E402
                    exited_history, feature_active, map_tgids, probe, remove_user, require_root_and_bpf, require_trap_workloads, run_workload,
                    run_workload_rusage, skip, ticks_after, trapstat, trapstat_json, user_name, wait_for)

USER = user_name("trapstat-counts-test")

N = 1000
# The signal and si_code the kernel raises for each trap raise-traps raises (measured; see
# tests/helpers/raise-traps.c), by architecture; and three of them for a short workload.
if platform.machine() == "aarch64":
    SIGNAL_CODES = {
        "UNKNOWN": "SIGILL/ILL_ILLOPC", "IABT_LOW": "SIGSEGV/SEGV_ACCERR", "PC_ALIGN": "SIGBUS/BUS_ADRALN",
        "DABT_LOW": "SIGSEGV/SEGV_ACCERR", "SP_ALIGN": "SIGBUS/BUS_ADRALN", "BRK64": "SIGTRAP/TRAP_BRKPT",
    }
    # Raised where the CPU checks the stack pointer's alignment, which qemu's TCG does not:
    # raise-traps leaves it out there (and says so).
    OPTIONAL = {"SP_ALIGN"}
    THREE = ["UNKNOWN", "DABT_LOW", "PC_ALIGN"]
    # The functions of raise-traps whose udf and brk trap.
    TRAP_FUNCTIONS = ("raise_unknown", "raise_brk64")
else:
    SIGNAL_CODES = {
        "DE": "SIGFPE/FPE_INTDIV", "DB": "SIGTRAP/TRAP_TRACE", "BP": "SIGTRAP/SI_KERNEL", "UD": "SIGILL/ILL_ILLOPN",
        "GP": "SIGSEGV/SI_KERNEL", "PF": "SIGSEGV/SEGV_ACCERR", "MF": "SIGFPE/FPE_FLTDIV", "AC": "SIGBUS/BUS_ADRALN",
        "XM": "SIGFPE/FPE_FLTDIV",
    }
    # Raised where the CPU checks alignment (EFLAGS.AC), which qemu's TCG does not; and the SIMD
    # exception, whose signal Debian 11's 5.10 under TCG does not send (raise-traps says so).
    OPTIONAL = {"AC", "XM"}
    THREE = ["UD", "GP", "DE"]
    TRAP_FUNCTIONS = ("raise_ud", "raise_bp")


def run(name, *args):
    return run_workload(name, *args, timeout=120)


def expected_signals(vectors):
    codes, signals = {}, {}
    for v in vectors:
        code = SIGNAL_CODES[v]
        codes[code] = codes.get(code, 0) + N
        sig = code.split("/")[0]
        signals[sig] = signals.get(sig, 0) + N
    return signals, codes


def same_pid_twice(test, first_pages, second_pages):
    """Runs fault-pages twice with the same pid (the second given the pid through ns_last_pid as
    soon as the first exited); the pid."""
    first = second = None
    for _ in range(20):  # another process may take the pid in between: try again
        first = run("FAULT_PAGES", first_pages)
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(first["pid"] - 1))
        second = run("FAULT_PAGES", second_pages)
        if second["pid"] == first["pid"]:
            break
    test.assertEqual(second["pid"], first["pid"], "could not get the same pid twice")
    return first["pid"]


class Counts(SharedDaemonTest):
    def check_traps(self, threads):
        helper = run("RAISE_TRAPS", N, *(["--threads"] if threads else []))
        vectors = set(helper["traps"])
        self.assertLessEqual(set(SIGNAL_CODES) - OPTIONAL, vectors)
        self.assertLessEqual(vectors, set(SIGNAL_CODES))
        self.assertEqual(helper["traps"], {v: N for v in vectors})  # the helper's own count
        h = exited_history(self.daemon, helper["pid"])
        total = h["total"]
        signals, codes = expected_signals(vectors)
        self.assertEqual(total["traps"], {v: N for v in vectors})
        self.assertEqual(total["signals"], signals)
        self.assertEqual(total["signalCodes"], codes)
        self.assertEqual(h["process"]["comm"], "raise-traps")

    def test_every_vector_exactly(self):
        self.check_traps(threads=False)

    def test_every_vector_exactly_from_two_threads(self):
        self.check_traps(threads=True)

    def test_system_wide_traps_are_the_sum_over_processes(self):
        with Daemon() as d:
            helper = run("RAISE_TRAPS", N)
            exited_history(d, helper["pid"])
            traps = json.loads(trapstat(d.socket, "call", "io.trapstat.Traps", '{"windowSec": 3600}').stdout)
            rows = json.loads(trapstat(d.socket, "call", "io.trapstat.Top",
                                       '{"windowSec": 3600, "sortBy": "traps", "limit": 10000}').stdout)["rows"]
        trapped = [r for r in rows if r["counters"]["traps"]]
        self.assertIn(helper["pid"], {r["process"]["pid"] for r in trapped})
        self.assertEqual(traps["processes"], len(trapped))
        for key in ("traps", "signals", "signalCodes"):
            total = {}
            for r in trapped:
                for name, count in r["counters"][key].items():
                    total[name] = total.get(name, 0) + count
            self.assertEqual(traps[key], total, key)
        for v in helper["traps"]:
            self.assertGreaterEqual(traps["traps"][v], N)

    def test_kill_is_not_a_trap(self):
        # A SIGSEGV sent with kill(2) has si_code SI_USER: a signal, but no CPU exception.
        p = subprocess.Popen(["sleep", "60"])
        try:
            trapped = run("RAISE_TRAPS", 10, "--only", UD)  # something to wait for
            p.send_signal(11)
            p.wait(timeout=10)
            exited_history(self.daemon, trapped["pid"])
            ticks_after(self.daemon.socket, 2)  # the sleeper's exit
            rows = trapstat_json(self.daemon.socket, "top", "-b", "-n", "1", "--limit", "10000")["rows"]
            sleeper = [r for r in rows if r["process"]["pid"] == p.pid]
            for r in sleeper:
                self.assertEqual(r["counters"]["traps"], {})
                self.assertEqual(r["counters"]["signals"], {})
        finally:
            if p.poll() is None:
                p.kill()

    def test_major_faults_equal_the_kernels_accounting(self):
        with tempfile.TemporaryDirectory(dir=os.environ.get("DISK_TMPDIR")) as d:
            helper, majflt, _ = run_workload_rusage("FAULT_KINDS", "--major", N, os.path.join(d, "data"), timeout=120)
        self.assertEqual(helper["majfltAfter"] - helper["majfltBefore"], N)
        h = exited_history(self.daemon, helper["pid"])
        # The daemon saw the process from its start: all of its major faults, no more, as wait4()
        # has them (on a machine short of memory a page of the program may be read back in while
        # it exits, after its own last reading).
        self.assertEqual(h["total"]["faults"]["major"], majflt)
        self.assertGreaterEqual(majflt, helper["majfltAfter"])

    def test_kernel_mode_faults(self):
        helper = run("FAULT_KINDS", "--kernel", N)
        self.assertEqual(helper["minfltAfter"] - helper["minfltBefore"], N)
        h = exited_history(self.daemon, helper["pid"])
        self.assertGreaterEqual(h["total"]["faults"]["kernel"], N)
        # read(2) into fresh pages: the kernel faults them in, user mode never touches them.
        self.assertLess(h["total"]["faults"]["user"], N)
        self.assertGreaterEqual(h["total"]["faults"]["minor"], helper["minfltAfter"])

    def test_two_processes_with_one_pid(self):
        d = self.daemon
        pid = same_pid_twice(self, 2000, 3000)

        def both_exited():
            procs = trapstat_json(d.socket, "call", "io.trapstat.ListProcesses",
                                  json.dumps({"pid": pid, "includeExited": True}))["processes"]
            return procs if len(procs) == 2 and all(p["exited"] for p in procs) else None

        procs = wait_for(both_exited, what=f"two exited incarnations of pid {pid}")
        newest = exited_history(d, pid)
        self.assertNotEqual(procs[0]["startTime"], procs[1]["startTime"])
        self.assertEqual(newest["process"]["startTime"], max(p["startTime"] for p in procs))

        older = exited_history(d, pid, "--start-time", str(min(p["startTime"] for p in procs)))
        for h, pages in ((older, 2000), (newest, 3000)):
            user = h["total"]["faults"]["user"]
            self.assertGreaterEqual(user, pages)
            self.assertLess(user, pages + 200, "the two histories were merged")

        # The table says the pid was reused and how to select each incarnation.
        old_start, new_start = sorted(p["startTime"] for p in procs)
        text = trapstat(d.socket, "history", str(pid)).stdout
        self.assertIn(f"pid {pid} had 2 incarnations; this is the one started at {new_start} ns after boot", text)
        self.assertRegex(text, rf"(?m)^  \* --start-time {new_start}\s+fault-pages\s.*, exited$")
        self.assertRegex(text, rf"(?m)^    --start-time {old_start}\s+fault-pages\s.*, exited$")
        text = trapstat(d.socket, "history", str(pid), "--start-time", str(old_start)).stdout
        self.assertIn(f"started:  {old_start} ns after boot", text)
        self.assertRegex(text, rf"(?m)^  \* --start-time {old_start}\s")


class PidReuse(unittest.TestCase):
    def test_a_new_process_with_an_exited_ones_pid_counts_apart(self):
        # A process's slot stays its own until the tick after its exit drains and frees it, and
        # each CPU keeps a copy of the slot's owner: a new process that gets the same pid before
        # that tick must not count into the old one's slot on a CPU whose copy still names it.
        # Both run on CPU 0, almost always within one 5 s tick.
        require_root_and_bpf()
        affinity = os.sched_getaffinity(0)
        with Daemon(tick="5s") as d:
            try:
                os.sched_setaffinity(0, {0})
                pid = same_pid_twice(self, 2000, 3000)
            finally:
                os.sched_setaffinity(0, affinity)
            newest = exited_history(d, pid)
            procs = trapstat_json(d.socket, "call", "io.trapstat.ListProcesses",
                                  json.dumps({"pid": pid, "includeExited": True}))["processes"]
            self.assertEqual(len(procs), 2, procs)
            older = exited_history(d, pid, "--start-time", str(min(p["startTime"] for p in procs)))
            # Each its own pages and its program's start-up (about 100 faults), never the other's.
            for h, pages in ((older, 2000), (newest, 3000)):
                user = h["total"]["faults"]["user"]
                self.assertGreaterEqual(user, pages)
                self.assertLess(user, pages + 500, "the new process counted into the old one's slot")


def live_processes():
    return sum(1 for name in os.listdir("/proc") if name.isdigit())


class MapCleanup(unittest.TestCase):
    def test_exited_processes_leave_the_maps(self):
        # One slot, so most helpers count in the fallback hash too; all of them trap.
        with Daemon(extra_args=["--slots", "1"]) as d:
            pids = []
            for _ in range(3):
                pids.append(run("RAISE_TRAPS", 5, "--only", UD)["pid"])
                pids.append(run("FAULT_PAGES", 300)["pid"])
            for pid in pids:
                exited_history(d, pid)
            ticks_after(d.socket, 2)
            maps = daemon_maps(d.proc.pid)
            self.assertFalse(set(pids) & map_tgids(maps["slot_owner"], in_value=True))
            self.assertFalse(set(pids) & map_tgids(maps["processes"]))
            self.assertFalse(set(pids) & map_tgids(maps["traps"]))
            # Their sites were recorded (every trap has one; none with an object without sites) and
            # left the site hash with them.
            sites = trapstat_json(d.socket, "sites", str(pids[0]), "--traps")["sites"]
            self.assertEqual(sum(s["count"] for s in sites), 5 if feature_active(d.socket, "trap_sites") else 0)
            self.assertFalse(set(pids) & map_tgids(maps["sites"]))
            # Nothing else piles up: the daemon tracks no more processes than live on the machine,
            # whatever else runs there (a margin for those that exited within the last ticks).
            live_before = live_processes()
            tracked = trapstat_json(d.socket, "status")["processesTracked"]
            self.assertLessEqual(tracked, max(live_before, live_processes()) + 200)


class ShortLives(unittest.TestCase):
    def test_process_within_one_tick_is_complete(self):
        # A 2 s tick: the helpers start, count and exit between two drains.
        with Daemon(tick="2s") as d:
            pages = run("FAULT_PAGES", 5000)
            traps = run("RAISE_TRAPS", 100, "--only", ",".join(THREE))
            h = exited_history(d, pages["pid"])
            delta = pages["minfltAfter"] - pages["minfltBefore"]
            self.assertLessEqual(abs(h["total"]["faults"]["user"] - delta), delta * 0.01)
            self.assertGreaterEqual(h["total"]["faults"]["minor"], pages["minfltAfter"])
            h = exited_history(d, traps["pid"])
            self.assertEqual(h["total"]["traps"], {v: 100 for v in THREE})
            # Nothing lost. A failed VMA lookup loses no count (its site keeps the address), and
            # comes with another daemon's BPF programs on the machine: not this test's business.
            # Nor does a symbol not read (its site keeps file and offset): on an overlayfs root
            # (the trixie leg's VM) BPF names a mapped file by the lower layer's device, which
            # neither /proc/PID/maps nor stat() shows, so a site in libc of a process that lives
            # (the daemon's own, sampled) has no mapping to read it through and its path is
            # refused as another file; the sites suite checks symbols where the root is plain.
            st = trapstat_json(d.socket, "status")
            harmless = sum(k["count"] for k in st["dropsByKind"] if k["kind"] in ("site_lookup_failed",
                                                                                  "symbol_unreadable"))
            self.assertEqual(st["drops"] - harmless, 0, [k for k in st["dropsByKind"] if k["count"]])


class Sources(unittest.TestCase):
    def test_perf_software_event_replaces_missing_exception_events(self):
        # As on a kernel without the x86 exception tracepoints.
        with Daemon(extra_args=["--disable-source", "page_fault_user,page_fault_kernel"]) as d:
            sources = {s["name"]: s for s in trapstat_json(d.socket, "status")["sources"]}
            self.assertFalse(sources["page_fault_user"]["active"])
            self.assertIn("disabled", sources["page_fault_user"]["reason"])
            self.assertTrue(sources["perf_page_faults_user"]["active"], sources["perf_page_faults_user"])
            self.assertTrue(sources["perf_page_faults_kernel"]["active"])
            pages = run("FAULT_PAGES", 10000)
            h = exited_history(d, pages["pid"])
            faults = h["total"]["faults"]
            delta = pages["minfltAfter"] - pages["minfltBefore"]
            self.assertLessEqual(abs(faults["user"] - delta), delta * 0.01)
            # The software event does not tell the access kind: the reply says so (null), in History
            # and in Top, and the CLI shows "-", never a false zero.
            self.assertEqual((faults["read"], faults["write"], faults["exec"], faults["protection"]),
                             (None, None, None, None))
            rows = trapstat_json(d.socket, "top", "-b", "-n", "1", "--limit", "10000")["rows"]
            self.assertTrue(rows)
            self.assertTrue(all(r["counters"]["faults"]["read"] is None for r in rows))
            # The faults' total line (USER KERNEL MINOR MAJOR READ WRITE EXEC PROT TRAPS), the first.
            line = [x for x in trapstat(d.socket, "history", str(pages["pid"])).stdout.splitlines()
                    if x.startswith("total")][0]
            self.assertRegex(line, r"^total(\s+\S+){4}\s+-\s+-\s+-\s+-\s+0$")

    def test_fallback_is_not_loaded_when_not_needed(self):
        if platform.machine() != "x86_64":
            self.skipTest("the exception events are x86's: elsewhere the perf software events are always needed")
        with Daemon() as d:
            sources = {s["name"]: s for s in trapstat_json(d.socket, "status")["sources"]}
            self.assertFalse(sources["perf_page_faults_user"]["active"])
            self.assertIn("not needed", sources["perf_page_faults_user"]["reason"])
            self.assertTrue(all(sources[n]["active"] for n in ("page_fault_user", "page_fault_kernel",
                                                               "signal_generate", "sched_process_exit",
                                                               "sched_process_exec", "task_iterator",
                                                               "proc_pid_stat")))

    def test_what_does_not_fit_is_counted_as_dropped(self):
        # One slot and room for one process in each hash: concurrent processes cannot all fit.
        with Daemon(tick="2s", extra_args=["--slots", "1", "--max-processes", "1"]) as d:
            procs = [subprocess.Popen([binary("RAISE_TRAPS"), "200", "--only", UD], stdout=subprocess.DEVNULL)
                     for _ in range(4)]
            procs += [subprocess.Popen([binary("FAULT_PAGES"), "2000"], stdout=subprocess.DEVNULL) for _ in range(4)]
            for p in procs:
                self.assertEqual(p.wait(timeout=60), 0)
            drops = wait_for(lambda: trapstat_json(d.socket, "status")["drops"] or None, what="drops to be reported")
            self.assertGreater(drops, 0)
            # By kind: the faults and traps that did not fit, none of the events; the total is their sum.
            st = trapstat_json(d.socket, "status")
            kinds = {k["kind"]: k for k in st["dropsByKind"]}
            self.assertEqual(set(kinds), {"fault_map_full", "trap_map_full", "exit_event_lost", "exec_event_lost",
                                          "site_map_full", "site_process_limit", "site_name_lost", "site_user_limit",
                                          "site_reserve", "site_lookup_failed", "symbol_budget", "symbol_unreadable",
                                          "tick_merged", "major_cause_untold"})
            self.assertGreater(kinds["fault_map_full"]["count"], 0)
            self.assertGreater(kinds["trap_map_full"]["count"], 0)
            self.assertEqual(kinds["exit_event_lost"]["count"] + kinds["exec_event_lost"]["count"], 0)
            self.assertEqual(st["drops"], sum(k["count"] for k in kinds.values()))
            self.assertIn("one page fault not counted", kinds["fault_map_full"]["lost"])
            status = trapstat(d.socket, "status").stdout
            self.assertRegex(status, r"\n  fault_map_full +\d+: one page fault not counted")
            self.assertNotIn("exit_event_lost", status)  # kinds at zero are not printed

    def test_sites_that_do_not_fit_are_counted_as_dropped(self):
        # One site fits (--max-sites 1) and no fault takes it (--fault-sample 0): of one process's
        # two trapping instructions (raise_ud, raise_bp), the second's every trap is a drop; the
        # traps themselves are all counted. A 2 s tick: the site hash is emptied each tick, and the
        # workload (a few ms) is to see one tick, not two. The workload is a user of its own: its
        # drops are told apart from those of whatever else traps on the machine (dropsByUser);
        # its share of the map (--max-sites-per-user) is more than the map, which is full first.
        uid = create_user(USER).pw_uid
        self.addCleanup(remove_user, USER)
        # No fault sites, and no major ones (major_cause off): a major fault of the workload's
        # start on a busy machine (setpriv read back) would take the one site.
        with Daemon(tick="2s", extra_args=["--max-sites", "1", "--max-sites-per-user", "2", "--fault-sample", "0",
                                           "--disable-source", "major_cause"]) as d:
            exe = copy_for_users(d.dir, "RAISE_TRAPS")["RAISE_TRAPS"]
            out = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", exe, "200",
                                  "--only", f"{UD},{BP}"], capture_output=True, text=True, timeout=60, check=True)
            pid = json.loads(out.stdout)["pid"]
            h = exited_history(d, pid)
            self.assertEqual(h["total"]["traps"], {UD: 200, BP: 200})
            if not feature_active(d.socket, "trap_sites"):
                # An object without sites: none, and no drop of one.
                self.assertEqual(trapstat_json(d.socket, "sites", str(pid))["sites"], [])
                return
            users = [u for u in trapstat_json(d.socket, "status")["dropsByUser"] if u["uid"] == uid]
            drops = {k["kind"]: k["count"] for k in users[0]["dropsByKind"]} if users else {}
            # The symbol comes from the symbol worker, a tick or so after the site (an [unknown]
            # one has none).
            sites = wait_for(lambda: (lambda r: r if r and all(s["symbol"] or s["object"] == "[unknown]" for s in r)
                                      else None)(trapstat_json(d.socket, "sites", str(pid))["sites"]),
                             what="the site's symbol")
            # Every trap is in the one site or dropped.
            self.assertEqual(sum(s["count"] for s in sites) + drops.get("site_map_full", 0), 400, (sites, drops))
            # Another program's VMA lookup on the same CPU (another trapstatd's) can make one of
            # ours fail: that site keeps its address, a key of its own, and may be the one that
            # fits (tests/integration/test_hostile_ksites.py). Without one, exactly as above.
            if drops.get("site_lookup_failed", 0) == 0:
                self.assertEqual(drops, {"site_map_full": 200})
                self.assertEqual([(s["kind"], s["count"]) for s in sites], [("trap", 200)])
                # Without the kernel's VMA lookup the instruction is named from /proc/PID/maps
                # while the process lives, and this one exits at once.
                if feature_active(d.socket, "vma_lookup"):
                    self.assertIn(sites[0]["symbol"], TRAP_FUNCTIONS)

    def test_proc_stat_replaces_the_task_iterator(self):
        # As on a kernel where the task iterator cannot attach: minor/major from /proc/PID/stat.
        with Daemon(extra_args=["--disable-source", "task_iterator"]) as d:
            status = trapstat_json(d.socket, "status")
            sources = {s["name"]: s for s in status["sources"]}
            self.assertFalse(sources["task_iterator"]["active"])
            self.assertTrue(sources["proc_pid_stat"]["active"], sources["proc_pid_stat"])
            # The reads of the active processes iterate tasks too: off with it, whatever the kernel.
            reads = {f["name"]: f for f in status["features"]}["task_reads"]
            self.assertFalse(reads["active"])
            self.assertTrue(reads["reason"].startswith("off: --disable-source task_iterator: ") or
                            reads["reason"].startswith("needs "), reads["reason"])
            pages = run("FAULT_PAGES", 10000)
            h = exited_history(d, pages["pid"])
            delta = pages["minfltAfter"] - pages["minfltBefore"]
            self.assertGreaterEqual(h["total"]["faults"]["minor"], pages["minfltAfter"])
            self.assertLessEqual(h["total"]["faults"]["minor"] - pages["minfltAfter"], delta * 0.01)


def require_bpf_object():
    """counts-noloop and counts-base: the object asked for runs where the kernel can run it; elsewhere
    (noloop before 5.15) the test is skipped with the probe's reason, and test_kernels.py checks that
    the kernel refuses exactly the objects its table says."""
    name = os.environ.get("TRAPSTAT_TEST_BPF_OBJECT")
    if not name:
        return
    _, runs = probe("--bpf-object", name)
    if runs != f"object: {name}":
        skip(f"this kernel cannot run the {name} BPF object: {runs}")


if __name__ == "__main__":
    require_root_and_bpf()
    require_trap_workloads()
    require_bpf_object()
    # A smaller object may be tested by some of the classes alone (TRAPSTAT_TEST_OBJECT_CLASSES,
    # e.g. "Counts PidReuse"): the arm64 leg leaves out Sources there, each of whose tests starts
    # a daemon of its own (13-18 s each under TCG); the host's legs run every class.
    classes = os.environ.get("TRAPSTAT_TEST_OBJECT_CLASSES", "").split() if os.environ.get("TRAPSTAT_TEST_BPF_OBJECT") else []
    unittest.main(verbosity=2, argv=sys.argv[:1] + classes + sys.argv[1:])
