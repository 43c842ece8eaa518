# SPDX-License-Identifier: MIT
"""Sites (io.trapstat.Sites) of a known workload: every trap at its instruction, exactly, in the
executable and in a shared library, with the symbol and the offsets the ELF files give; the
sampled page faults at theirs; the same answers once the process exited; kind and limit; the
CLI's tables; and no sites of root's process for another user.

The expected file offsets and symbol offsets are computed here independently of trapstatd, from
nm, objdump and readelf (binutils) on the workload's own files."""
import functools
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from varlink_raw import Connection  # noqa: E402
from daemon import (T, user_name, Daemon, binary, copy_for_users, create_user, history, remove_user,  # noqa: E402
                    require_feature, require_root_and_bpf, require_trap_workloads, tick_after, trapstat, trapstat_json,
                    wait_for)

UD = 37
BP = 23
PAGES = 100000
USER = user_name("trapstat-sites-test")

# The workload's instructions as objdump shows them, by architecture: the undefined instruction
# and the breakpoint; the stores of `*p = 1` (site_null_write) and `mem[i] = 1`
# (site_touch_pages); the trap the null write raises; and where the breakpoint's signal points.
if platform.machine() == "aarch64":
    UD_INSN, BP_INSN = r"udf\s+#0", r"brk\s+#0x7ab"
    # A 32-bit store through a register other than sp (the function also spills x0 to the stack).
    NULL_STORE, PAGE_STORE = r"str\s+w\d+, \[x\d+\]", r"strb\s+wzr, \[x\d+\]"
    # A data abort; brk's si_addr is the brk itself: in the library's file.
    NULL_VECTOR, BP_HAS_ADDRESS = "DABT_LOW", True
else:
    # objdump's AT&T syntax: "movl $0x1,(%rax)", "movb $0x1,(%rax)".
    UD_INSN, BP_INSN = "ud2", "int3"
    NULL_STORE = PAGE_STORE = r"mov[bwlq]?\s+\$0x1,\(%r\w+\)"
    # A #PF; SIGTRAP from int3 (SI_KERNEL) carries no address.
    NULL_VECTOR, BP_HAS_ADDRESS = "PF", False


# ---- The workload's files, read independently of trapstatd ----

def run_tool(*args):
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout


def load_segments(path):
    """The PT_LOAD program headers of an ELF file: [(file offset, virtual address, file size)]."""
    segments = []
    for line in run_tool("readelf", "-lW", path).splitlines():
        fields = line.split()
        if fields and fields[0] == "LOAD":
            segments.append((int(fields[1], 16), int(fields[2], 16), int(fields[4], 16)))
    if not segments:
        raise AssertionError(f"no PT_LOAD in {path}")
    return segments


def file_offset(path, address):
    """The file offset at which an ELF virtual address is mapped from, through the PT_LOAD headers."""
    for offset, vaddr, filesz in load_segments(path):
        if vaddr <= address < vaddr + filesz:
            return address - vaddr + offset
    raise AssertionError(f"address {address:#x} is in no PT_LOAD of {path}")


def symbol(path, name):
    """(address, size) of a defined symbol of an ELF file, from its .symtab (nm)."""
    for line in run_tool("nm", "-S", "--defined-only", path).splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[3] == name:
            return int(fields[0], 16), int(fields[1], 16)
    raise AssertionError(f"{name} is not defined in {path}")


def instructions(path, name):
    """[(address, instruction text)] of the function name, disassembled by objdump."""
    out = run_tool("objdump", "-d", "--no-show-raw-insn", f"--disassemble={name}", path)
    return [(int(m.group(1), 16), m.group(2).strip())
            for m in re.finditer(r"(?m)^\s*([0-9a-f]+):\s+(\S.*)$", out)]


def expected_site(path, name, pattern):
    """Where the one instruction of function name matching pattern is: (file offset, offset from
    the start of the function). The workload is written to have exactly one."""
    start, size = symbol(path, name)
    found = [a for a, text in instructions(path, name) if re.fullmatch(pattern, text)]
    if len(found) != 1:
        raise AssertionError(f"{name} in {path} has {len(found)} instructions matching {pattern!r}, not 1")
    address = found[0]
    assert start <= address < start + size
    return file_offset(path, address), address - start


# ---- The daemon ----

def sites(d, pid, **params):
    """The Sites reply for pid (with params besides, e.g. kind, limit) through trapstat call."""
    return json.loads(trapstat(d.socket, "call", "io.trapstat.Sites", json.dumps({"pid": pid, **params})).stdout)


def default_fault_sample():
    """The default of trapstatd --fault-sample, as its --help states it."""
    out = subprocess.run([binary("TRAPSTATD"), "--help"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"--fault-sample N .*?\(default: (\d+)\)", out, re.S)
    if not m:
        raise AssertionError(f"no default of --fault-sample in trapstatd --help:\n{out}")
    return int(m.group(1))


def sites_once_known(d, pid, **params):
    """The Sites reply for pid, or None while the daemon does not know the process yet (it learns
    of it at its next tick)."""
    p = trapstat(d.socket, "call", "io.trapstat.Sites", json.dumps({"pid": pid, **params}), check=False)
    if p.returncode != 0 and f"no process with pid {pid}" in p.stderr:
        return None
    if p.returncode != 0:
        raise AssertionError(f"Sites of {pid} failed: {p.stderr.strip()}")
    return json.loads(p.stdout)


def traps_of(reply):
    return [s for s in reply["sites"] if s["kind"] == "trap"]


def faults_of(reply):
    return [s for s in reply["sites"] if s["kind"] == "fault"]


def stable(get, what, timeout=20):
    """get()'s answer once two of them a second apart are the same: whatever the daemon had drained
    is stored by then."""
    previous = [None]

    def settled():
        now = get()
        same = now is not None and now == previous[0]
        previous[0] = now
        return now if same else None

    return wait_for(settled, timeout=timeout, interval=1, what=what)


def in_both_phases(check):
    """A test of check(self, answers) on the answers while the workload lived and again after it
    exited, each in a subTest."""
    @functools.wraps(check)
    def test(self):
        for phase, answers in (("alive", self.live), ("exited", self.after)):
            with self.subTest(phase=phase):
                check(self, answers)

    return test


class Sites(unittest.TestCase):
    """One workload, observed while it is alive (held after its steps) and again after it exited."""

    @classmethod
    def setUpClass(cls):
        cls.exe = os.path.realpath(binary("SITE_TRAPS"))
        cls.lib = os.path.realpath(os.path.join(os.path.dirname(cls.exe), "libsite-traps.so"))
        cls.daemon = Daemon().__enter__()  # the default --fault-sample
        try:
            cls.period = trapstat_json(cls.daemon.socket, "status")["faultSamplePeriod"]
            cls.run_workload()
        except BaseException:
            cls.daemon.__exit__(*sys.exc_info())
            raise

    @classmethod
    def tearDownClass(cls):
        cls.daemon.__exit__(None, None, None)

    @classmethod
    def run_workload(cls):
        d = cls.daemon
        workload = subprocess.Popen([cls.exe, "--ud", str(UD), "--bp", str(BP), "--null-child", "--pages", str(PAGES),
                                     "--hold-after", "120"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            lines = []
            while not lines or not lines[-1].startswith("holding"):
                line = workload.stdout.readline()
                if not line:
                    raise AssertionError(f"site-traps ended early ({workload.wait()}): {workload.stderr.read()}\n"
                                         f"{''.join(lines)}")
                lines.append(line)
            words = [line.split() for line in lines]
            cls.steps = {w[1]: dict(kv.split("=") for kv in w[2:]) for w in words if w[0] == "done"}
            cls.pid = int(next(w[1] for w in words if w[0] == "pid"))
            cls.child = int(next(w[1] for w in words if w[0] == "child"))
            # The workload checks its signals itself; what it says it did is what the tests expect.
            if (cls.steps["ud"]["signals"], cls.steps["bp"]["signals"], cls.steps["null-child"]["signal"]) != \
                    (str(UD), str(BP), str(int(signal.SIGSEGV))):
                raise AssertionError(f"site-traps did not do what was asked: {cls.steps}")

            # The counters first (exact, and drained each tick): the sites are drained with them.
            # A workload quicker than a tick is not known yet at the first ask (NoSuchProcess).
            def counted():
                h = history(d, cls.pid)
                return h if h and h["total"]["traps"] == {T["UD"]: UD, T["BP"]: BP} and \
                    h["total"]["faults"]["user"] >= PAGES else None

            wait_for(counted, timeout=20, what="the workload's traps and faults in History")
            cls.live = cls.answers("while the workload is alive")
        finally:
            if workload.poll() is None:
                workload.send_signal(signal.SIGUSR1)  # the end of its hold
            out, err = workload.communicate(timeout=30)
        if workload.returncode != 0:
            raise AssertionError(f"site-traps exited {workload.returncode}: {err}")
        if "done hold" not in out:
            raise AssertionError(f"site-traps did not finish its hold: {out}")

        wait_for(lambda: sites(d, cls.pid)["process"]["exited"], timeout=20, what="Sites of the exited workload")
        cls.after = cls.answers("after the workload exited")

    @classmethod
    def answers(cls, when):
        """Every reply the tests look at, once they no longer change."""
        d = cls.daemon

        def get():
            return {
                "all": sites(d, cls.pid, limit=10000),
                "default": sites(d, cls.pid),
                "trap": sites(d, cls.pid, kind="trap"),
                "fault": sites(d, cls.pid, kind="fault"),
                "limit1": sites(d, cls.pid, limit=1),
                "child": sites(d, cls.child, limit=10000),
            }

        return stable(get, f"Sites {when}")

    def one_site(self, reply, kind, name):
        found = [s for s in reply["sites"] if s["kind"] == kind and s["symbol"] == name]
        self.assertEqual(len(found), 1, f"{kind} sites in {name}: {json.dumps(reply['sites'], indent=1)}")
        return found[0]

    # ---- The traps: exact ----

    def assert_site(self, site, expected):
        """The whole Site as expected, so that a failure shows every member that differs."""
        self.maxDiff = None
        self.assertEqual(site, expected, f"offset {site['offset']:#x}, expected {expected['offset']:#x}")

    @in_both_phases
    def test_ud_in_the_executable(self, a):
        offset, symbol_offset = expected_site(self.exe, "site_ud_main", UD_INSN)
        self.assert_site(self.one_site(a["all"], "trap", "site_ud_main"), {
            "kind": "trap", "vector": T["UD"], "count": UD, "sampled": False, "period": 1, "estimated": UD,
            "timeNs": 0, "estimatedTimeNs": 0,
            # The instruction itself: the ud2's offset in the file (not its address), and from the
            # start of the function.
            "object": self.exe, "offset": offset, "symbol": "site_ud_main", "symbolOffset": symbol_offset,
            # SIGILL's si_addr is the ud2: in the executable's mapping.
            "memory": "file", "memoryObject": self.exe})

    @in_both_phases
    def test_bp_in_the_shared_library(self, a):
        offset, symbol_offset = expected_site(self.lib, "site_bp_lib", BP_INSN)
        s = self.one_site(a["all"], "trap", "site_bp_lib")
        self.assertTrue(s["object"].endswith("/libsite-traps.so"), s["object"])
        self.assert_site(s, {
            "kind": "trap", "vector": T["BP"], "count": BP, "sampled": False, "period": 1, "estimated": BP,
            "timeNs": 0, "estimatedTimeNs": 0,
            # The breakpoint itself, although int3 leaves RIP past it.
            "object": self.lib, "offset": offset, "symbol": "site_bp_lib", "symbolOffset": symbol_offset,
            "memory": "file" if BP_HAS_ADDRESS else "none", "memoryObject": self.lib if BP_HAS_ADDRESS else None})

    @in_both_phases
    def test_only_those_two_traps(self, a):
        self.assertEqual(sorted(((s["symbol"], s["vector"], s["count"]) for s in traps_of(a["all"])), key=str),
                         [("site_bp_lib", T["BP"], BP), ("site_ud_main", T["UD"], UD)], json.dumps(a["all"], indent=1))

    @in_both_phases
    def test_the_dead_child(self, a):
        offset, symbol_offset = expected_site(self.exe, "site_null_write", NULL_STORE)
        reply = a["child"]
        self.assertEqual(reply["process"]["pid"], self.child)
        self.assertTrue(reply["process"]["exited"])
        traps = traps_of(reply)
        self.assertEqual(len(traps), 1, traps)
        self.assert_site(traps[0], {
            "kind": "trap", "vector": NULL_VECTOR, "count": 1, "sampled": False, "period": 1, "estimated": 1,
            "timeNs": 0, "estimatedTimeNs": 0,
            "object": self.exe, "offset": offset, "symbol": "site_null_write", "symbolOffset": symbol_offset,
            # Address 8: no mapping.
            "memory": "unmapped", "memoryObject": None})

    # ---- The page faults: sampled ----

    def test_fault_sample_period(self):
        # GetStatus tells the default that trapstatd --help states; it samples (more than 1).
        self.assertEqual(self.period, default_fault_sample())
        self.assertGreater(self.period, 1)

    @in_both_phases
    def test_top_fault_site_is_the_page_toucher(self, a):
        offset, symbol_offset = expected_site(self.exe, "site_touch_pages", PAGE_STORE)
        self.assertEqual(self.steps["pages"]["minflt"], str(PAGES))  # one fault a page, no huge pages
        faults = faults_of(a["all"])
        self.assertTrue(faults, a["all"])
        s = faults[0]
        # One in period of each CPU's faults of the process: about 100000 / period, however the
        # faults fell on the CPUs.
        expected = PAGES / self.period
        self.assertLessEqual(abs(s["count"] - expected), expected * 0.25, s)
        self.assert_site(s, {
            "kind": "fault", "vector": "PF", "count": s["count"], "sampled": True, "period": self.period,
            "estimated": s["count"] * self.period,
            "object": self.exe, "offset": offset, "symbol": "site_touch_pages", "symbolOffset": symbol_offset,
            "memory": "anon", "memoryObject": None,
            # The sampled faults were timed: their time is the site's.
            "timeNs": s["timeNs"], "estimatedTimeNs": s["timeNs"] * self.period})
        self.assertGreater(s["timeNs"], 0, s)
        # Nothing else in the process faulted nearly as often.
        for other in faults[1:]:
            self.assertLess(other["estimated"], PAGES / 10, other)
        # The samples are some of the process's user-mode faults: their time is at most all of
        # theirs (read after the sites, so it holds while the process runs too).
        total = trapstat_json(self.daemon.socket, "history", str(self.pid))["total"]["faultTime"]
        self.assertLessEqual(sum(f["timeNs"] for f in faults), total["minorNs"] + total["majorNs"])

    def test_no_site_was_dropped(self):
        # Else a count above could be short for want of room, not for a wrong attribution. Failed
        # VMA lookups are not for want of room: they come with another BPF program doing lookups
        # (a second trapstatd), and test_hostile_ksites.py checks them.
        drops = {k["kind"]: k["count"] for k in trapstat_json(self.daemon.socket, "status")["dropsByKind"]}
        self.assertEqual({k: v for k, v in drops.items() if k.startswith("site_") and k != "site_lookup_failed"},
                         {"site_map_full": 0, "site_name_lost": 0, "site_process_limit": 0, "site_user_limit": 0,
                          "site_reserve": 0})

    # ---- The method's parameters and order ----

    @in_both_phases
    def test_most_events_first(self, a):
        estimated = [s["estimated"] for s in a["all"]["sites"]]
        self.assertEqual(estimated, sorted(estimated, reverse=True))
        for s in a["all"]["sites"]:
            self.assertEqual(s["estimated"], s["count"] * s["period"], s)

    @in_both_phases
    def test_kind(self, a):
        self.assertEqual(a["trap"]["sites"], traps_of(a["all"]))
        self.assertEqual(a["fault"]["sites"], faults_of(a["all"])[:20])
        self.assertTrue(a["trap"]["sites"])
        self.assertTrue(a["fault"]["sites"])

    @in_both_phases
    def test_limit(self, a):
        self.assertEqual(len(a["limit1"]["sites"]), 1)
        self.assertEqual(a["limit1"]["sites"][0], a["all"]["sites"][0])
        self.assertEqual(a["limit1"]["sites"][0]["symbol"], "site_touch_pages")
        self.assertEqual(a["default"]["sites"], a["all"]["sites"][:20])

    def test_the_process(self):
        self.assertEqual(self.live["all"]["process"]["pid"], self.pid)
        self.assertFalse(self.live["all"]["process"]["exited"])
        self.assertEqual(self.after["all"]["process"]["pid"], self.pid)
        self.assertTrue(self.after["all"]["process"]["exited"])
        self.assertEqual(self.after["all"]["process"]["startTime"], self.live["all"]["process"]["startTime"])

    def test_same_after_the_exit(self):
        # The traps, the top fault site and the child do not change once the process is gone.
        self.assertEqual(traps_of(self.after["all"]), traps_of(self.live["all"]))
        self.assertEqual(faults_of(self.after["all"])[0], faults_of(self.live["all"])[0])
        self.assertEqual(self.after["child"], self.live["child"])

    def test_start_time_selects_the_incarnation(self):
        start = self.after["all"]["process"]["startTime"]
        self.assertEqual(sites(self.daemon, self.pid, startTime=start, limit=10000), self.after["all"])

    def test_unknown_pid(self):
        p = trapstat(self.daemon.socket, "call", "io.trapstat.Sites", '{"pid": 4194305}', check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no process with pid 4194305", p.stderr)

    # ---- The CLI ----

    def cli(self, *args):
        return trapstat(self.daemon.socket, *args).stdout

    def test_cli_json_is_the_reply(self):
        pid = str(self.pid)
        self.assertEqual(json.loads(self.cli("--json", "sites", pid)), self.after["default"])
        self.assertEqual(json.loads(self.cli("sites", pid, "--json", "--traps")), self.after["trap"])
        self.assertEqual(json.loads(self.cli("sites", pid, "--json", "--faults")), self.after["fault"])
        self.assertEqual(json.loads(self.cli("sites", pid, "--json", "--limit", "1")), self.after["limit1"])
        self.assertEqual(json.loads(self.cli("sites", str(self.child), "--json", "-n", "10000")), self.after["child"])

    def lines_with(self, text, *parts):
        return [line for line in text.splitlines() if all(p in line for p in parts)]

    def test_cli_table(self):
        _, ud_off = expected_site(self.exe, "site_ud_main", UD_INSN)
        _, bp_off = expected_site(self.lib, "site_bp_lib", BP_INSN)
        text = self.cli("sites", str(self.pid))
        # Through a pipe the paths are whole; the memory of the ud2 is the executable's file.
        ud = self.lines_with(text, f"#{T['UD']}", f"site_ud_main+{ud_off:#x}")
        self.assertEqual(len(ud), 1, text)
        self.assertRegex(ud[0], rf"^trap\s+#{T['UD']}\s+37\s+-\s+{re.escape(self.exe)}\s+site_ud_main\+{ud_off:#x}\s+"
                                rf"{re.escape(self.exe)}$")
        bp = self.lines_with(text, f"#{T['BP']}", f"site_bp_lib+{bp_off:#x}")
        self.assertEqual(len(bp), 1, text)
        bp_memory = re.escape(self.lib) if BP_HAS_ADDRESS else "-"
        self.assertRegex(bp[0], rf"^trap\s+#{T['BP']}\s+23\s+-\s+{re.escape(self.lib)}\s+site_bp_lib\+{bp_off:#x}\s+"
                                rf"{bp_memory}$")
        self.assertIn(f"~ fault counts and times are estimates: 1 in {self.period} sampled", text)

    def test_cli_table_of_faults(self):
        _, off = expected_site(self.exe, "site_touch_pages", PAGE_STORE)
        text = self.cli("sites", str(self.pid), "--faults")
        rows = [line for line in text.splitlines() if line.startswith("fault ")]
        self.assertTrue(rows, text)
        self.assertFalse([line for line in text.splitlines() if line.startswith("trap ")], text)
        # The top one, its count an estimate ("~"), on anonymous memory.
        # Its time too, an estimate from the sampled faults' ("~" and a unit).
        self.assertRegex(rows[0], rf"^fault\s+#PF\s+~\S+\s+~[0-9.]+(ns|us|µs|ms|s)\s+{re.escape(self.exe)}\s+site_touch_pages\+{off:#x}\s+"
                                  r"\[anon\]$")
        self.assertTrue(all(re.match(r"^fault\s+#PF\s+~", line) for line in rows), rows)
        self.assertIn(f"~ fault counts and times are estimates: 1 in {self.period} sampled", text)

    def test_cli_history_shows_the_top_trap_sites(self):
        _, ud_off = expected_site(self.exe, "site_ud_main", UD_INSN)
        text = self.cli("history", str(self.pid))
        self.assertIn("top 3 trap sites", text)
        below = text[text.index("top 3 trap sites"):].splitlines()[1:]
        # Most first: the 37 #UD, then the 23 #BP; no fault sites there.
        rows = [line for line in below if "#" in line]
        self.assertEqual(len(rows), 2, text)
        self.assertRegex(rows[0], rf"^\s+#{T['UD']}\s+37\s+{re.escape(self.exe)}\s+site_ud_main\+{ud_off:#x}\s")
        self.assertRegex(rows[1], rf"^\s+#{T['BP']}\s+23\s+{re.escape(self.lib)}\s+site_bp_lib\+")

    def test_cli_the_dead_child(self):
        _, off = expected_site(self.exe, "site_null_write", NULL_STORE)
        text = self.cli("sites", str(self.child), "--traps")
        rows = [line for line in text.splitlines() if line.startswith("trap ")]
        self.assertEqual(len(rows), 1, text)
        self.assertRegex(rows[0], rf"^trap\s+#{NULL_VECTOR}\s+1\s+{re.escape(self.exe)}\s+site_null_write\+{off:#x}\s+"
                                  r"\[unmapped\]$")

    # ---- Another user ----

    def test_another_user_gets_no_sites_of_roots_process(self):
        # "Access as History" (the IDL): a process of another user is PermissionDenied, unless the
        # caller is root or in group trapstat; the user's own process is answered.
        uid = create_user(USER).pw_uid
        try:
            # Copies the user can reach (copy_for_users makes the directory 0755): trapstat, and the
            # workload with its library, to run one of the user's own.
            paths = copy_for_users(self.daemon.dir, "TRAPSTAT", "SITE_TRAPS")
            lib = shutil.copy2(self.lib, os.path.join(self.daemon.dir, "libsite-traps.so"))
            os.chmod(lib, 0o755)

            def as_user(*args):
                return subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--init-groups", *args],
                                      capture_output=True, text=True, timeout=30)

            def call_as_user(pid):
                return as_user(paths["TRAPSTAT"], "--socket", self.daemon.socket, "call", "io.trapstat.Sites",
                               json.dumps({"pid": pid}))

            # The method's answer itself, not only the CLI's words for it.
            client = ("import json, socket, sys\n"
                      "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(20)\n"
                      "for pid in sys.argv[2:]:\n"
                      "    s.sendall(json.dumps({'method': 'io.trapstat.Sites', 'parameters': {'pid': int(pid)}})"
                      ".encode() + b'\\0')\n"
                      "    buf = b''\n"
                      "    while not buf.endswith(b'\\0'): buf += s.recv(65536)\n"
                      "    print(buf[:-1].decode(), flush=True)\n")
            raw = as_user(sys.executable, "-c", client, self.daemon.socket, str(self.pid), str(self.child))
            cli = call_as_user(self.pid)

            own = as_user(paths["SITE_TRAPS"], "--ud", "3")
            self.assertEqual(own.returncode, 0, own.stderr)
            own_pid = int(own.stdout.split()[1])

            def own_sites():
                p = call_as_user(own_pid)
                reply = json.loads(p.stdout) if p.returncode == 0 else None
                # The symbol comes from the symbol worker, a tick or so after the site.
                return reply if reply and reply["process"]["exited"] and any(s["symbol"] for s in traps_of(reply)) \
                    else None

            own_reply = wait_for(own_sites, what="the user's own Sites")
        finally:
            remove_user(USER)

        self.assertEqual(raw.returncode, 0, raw.stderr)
        replies = [json.loads(line) for line in raw.stdout.splitlines()]
        self.assertEqual(len(replies), 2)
        for reply in replies:
            self.assertEqual(reply.get("error"), "org.varlink.service.PermissionDenied", reply)
            self.assertNotIn("sites", reply.get("parameters") or {})
        self.assertEqual(cli.returncode, 1)
        self.assertEqual(cli.stdout, "")
        self.assertIn("permission denied", cli.stderr)

        self.assertEqual(own_reply["process"]["uid"], uid)
        s = self.one_site(own_reply, "trap", "site_ud_main")
        self.assertEqual((s["vector"], s["count"], s["object"]), (T["UD"], 3, os.path.realpath(paths["SITE_TRAPS"])))


class SiteQuota(unittest.TestCase):
    """An unprivileged user traps at 300 addresses (ud2 after ud2 in anonymous memory, as a JIT's
    code would): with --max-sites-per-process 100 it gets 100 sites, every trap is still counted,
    the 200 sites beyond its share are the drop site_process_limit, and root's process beside it
    has its sites."""

    SPREAD, SHARE = 300, 100

    def test_one_process_cannot_take_the_site_map(self):
        # The share is per tick: a 2 s one, so that the spread (a few ms) falls within one.
        with Daemon(tick="2s", extra_args=["--max-sites-per-process", str(self.SHARE)]) as d:
            uid = create_user(USER).pw_uid
            try:
                paths = copy_for_users(d.dir, "SITE_TRAPS")
                lib = shutil.copy2(os.path.join(os.path.dirname(binary("SITE_TRAPS")), "libsite-traps.so"),
                                   os.path.join(d.dir, "libsite-traps.so"))
                os.chmod(lib, 0o755)
                # Right after a tick, whose drain began the epoch: the spread has the 2 s to the
                # next. Started at any time, it crossed an epoch's end on the emulated arm64 VM,
                # where the 300 traps take long enough, and had two shares (163 sites).
                tick_after(d.socket)
                hostile = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--init-groups",
                                          paths["SITE_TRAPS"], "--spread", str(self.SPREAD)],
                                         capture_output=True, text=True, timeout=60)
            finally:
                remove_user(USER)
            self.assertEqual(hostile.returncode, 0, hostile.stderr)
            hostile_pid = int(hostile.stdout.split()[1])
            root = subprocess.run([binary("SITE_TRAPS"), "--ud", "5"], capture_output=True, text=True, timeout=60)
            self.assertEqual(root.returncode, 0, root.stderr)
            root_pid = int(root.stdout.split()[1])

            def settled():
                h = sites_once_known(d, hostile_pid, kind="trap", limit=10000)
                r = sites_once_known(d, root_pid, kind="trap")
                # root's site has its symbol from the symbol worker, a tick or so after the site.
                return (h, r) if h and r and h["process"]["exited"] and r["process"]["exited"] and traps_of(r) \
                    and all(s["symbol"] for s in traps_of(r)) else None

            h, r = stable(lambda: wait_for(settled, what="both processes' sites"), "their sites")
            # The share is the process's, of every kind: a major fault at its start (its libraries
            # read back on a busy machine) takes a site of the share as a trap would.
            others = [s for s in sites_once_known(d, hostile_pid, limit=10000)["sites"] if s["kind"] != "trap"]
            self.assertEqual(len(h["sites"]) + len(others), self.SHARE, others)
            self.assertTrue(all(s["object"] == "[anon]" and s["vector"] == T["UD"] and s["count"] == 1
                                for s in h["sites"]), h["sites"][:3])
            hostile_history = trapstat_json(d.socket, "history", str(hostile_pid))
            self.assertEqual(hostile_history["total"]["traps"], {T["UD"]: self.SPREAD})
            status = trapstat_json(d.socket, "status")
            drops = {k["kind"]: k["count"] for k in status["dropsByKind"]}
            user = [u for u in status["dropsByUser"] if u["uid"] == uid]
            self.assertEqual(len(user), 1, status["dropsByUser"])
            refused = {k["kind"]: k["count"] for k in user[0]["dropsByKind"]}
            # Every trap without a site was refused by the share; so was any major fault of the
            # process that came once it was full (none on a quiet machine: then it is exact). The
            # user's own drops: another process's would not be its.
            refused_traps = self.SPREAD - len(h["sites"])
            self.assertGreaterEqual(refused["site_process_limit"], refused_traps)
            self.assertLessEqual(refused["site_process_limit"],
                                 refused_traps + hostile_history["total"]["faults"]["major"], others)
            self.assertEqual(drops["site_map_full"], 0)
            self.assertEqual([(s["symbol"], s["count"]) for s in r["sites"]], [("site_ud_main", 5)])

def start_traps(path, ud, hold):
    """Runs site-traps at path: ud #UD in site_ud_main, then, with hold, stays alive until
    release(). Returns once it trapped (and, without hold, exited): (pid, the Popen)."""
    args = [path, "--ud", str(ud)] + (["--hold-after", "60"] if hold else [])
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    while not lines or not lines[-1].startswith("holding" if hold else "done ud"):
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"{args} ended early ({proc.wait()}): {proc.stderr.read()}{''.join(lines)}")
        lines.append(line)
    if lines[-2 if hold else -1].split()[2] != f"signals={ud}":
        raise AssertionError(f"{args} did not trap {ud} times: {''.join(lines)}")
    if not hold:
        _, err = proc.communicate(timeout=30)
        if proc.returncode != 0:
            raise AssertionError(f"{args} exited {proc.returncode}: {err}")
    return int(lines[0].split()[1]), proc


def release(proc):
    """The end of a held site-traps' hold; it exits 0."""
    proc.send_signal(signal.SIGUSR1)
    out, err = proc.communicate(timeout=30)
    if proc.returncode != 0 or "done hold" not in out:
        raise AssertionError(f"site-traps exited {proc.returncode}: {err}")


def ud_site(exe, path, count):
    """The Site of site-traps' #UD at path (a copy of exe), counted count times."""
    offset, symbol_offset = expected_site(exe, "site_ud_main", UD_INSN)
    return {"kind": "trap", "vector": T["UD"], "count": count, "sampled": False, "period": 1, "estimated": count,
            "timeNs": 0, "estimatedTimeNs": 0, "object": path, "offset": offset, "symbol": "site_ud_main",
            "symbolOffset": symbol_offset, "memory": "file", "memoryObject": path}


def named_traps(d, pid):
    """The trap sites of pid once each has its symbol, else None."""
    reply = sites_once_known(d, pid, kind="trap")
    return reply["sites"] if reply and reply["sites"] and all(s["symbol"] for s in reply["sites"]) else None


def lookup_failed(sites):
    """Whether the kernel could not look up the mapping of a site (site_lookup_failed): right after
    another lookup on the same CPU (of this daemon's, or another BPF program's) it is busy. A
    process gone by the tick keeps such a site [unknown]: the run cannot be exact."""
    return any(s["object"] == "[unknown]" or s["memory"] == "unknown" for s in sites)


# Runs of a sequence that met a busy lookup (lookup_failed()), before the test gives up.
ATTEMPTS = 5


def run_until_looked_up(test, run):
    """run() -> the sites of its processes (lists), until none of them met a busy lookup; run()
    may return None for a run that cannot be exact for another reason (it says why)."""
    for attempt in range(ATTEMPTS):
        got = run()
        if got is None:
            continue
        if not any(lookup_failed(sites) for sites in got):
            return got
        print(f"attempt {attempt + 1}: the kernel's VMA lookup was busy (site_lookup_failed), again",
              file=sys.stderr)
    test.fail(f"no run in {ATTEMPTS} that could be exact: see the attempts above")


class RenamedWithinATick(unittest.TestCase):
    """A binary copied, run, renamed and run again with no pause, as `cp app app.new; ./app.new;
    mv app.new app; ./app` does, 20 times. The rename may leave the file's change time as it was
    (it is taken from the kernel's coarse clock: within one of its ticks the copy and the rename
    get the same one), so the file's version cannot tell the rename; it gave the second process
    the first one's name, app.new, and its site never got a symbol, the name being gone. Each
    sequence runs right after one of the daemon's ticks, so that both processes are drained in
    the next: then the name is the file's by then, app, for both, and so is the symbol.

    Twice: with processes that exit at once (named as BPF named the file when the second trapped,
    read by path) and with processes that live until their sites are named (named from their
    /proc/PID/maps, read through /proc/PID/map_files)."""

    # 20 each; 4 under an emulated CPU (the VM legs' qemu TCG, about ten times slower, which says so
    # in TRAPSTAT_TEST_EMULATED): there the 40 sequences took the test past its 540 s. There the
    # sequence also took longer than the test's tick of 200 ms, so that the first process was
    # drained, named app.new, before the rename: the daemon ticks every second there.
    EMULATED = os.environ.get("TRAPSTAT_TEST_EMULATED") == "1"
    RUNS = int(os.environ.get("TRAPSTAT_RENAME_RUNS", "4" if EMULATED else "20"))

    def renamed_run(self, d, exe, app, hold):
        """One sequence: the trap sites of both processes, once named (or met a busy lookup); None
        when a tick began before the sequence was over, so that the first process may have been
        drained before the rename (named app.new, as it then was: right, but not this test's case;
        a VM beside the ASan suite once took that long)."""
        def settled(pid):
            reply = sites_once_known(d, pid, kind="trap")
            sites = reply["sites"] if reply else []
            return sites if sites and (lookup_failed(sites) or all(s["symbol"] for s in sites)) else None

        # The ticks as they begin, from before the one the sequence starts after.
        with Connection(d.socket, timeout=120) as ticks:
            ticks.send("io.trapstat.Watch", {"limit": 1}, more=True)
            began = tick_after(d.socket)
            shutil.copy2(exe, app + ".new")
            first, first_proc = start_traps(app + ".new", 3, hold)
            os.rename(app + ".new", app)
            second, second_proc = start_traps(app, 5, hold)
            done = time.clock_gettime_ns(time.CLOCK_REALTIME) // 1000
            try:
                following = began
                while following <= began:
                    following = ticks.read()["parameters"]["timeUsec"]
                # A tick flips the sites' epoch after its time is taken.
                if following < done:
                    print("a tick began before the sequence was over, again", file=sys.stderr)
                    return None
                return wait_for(lambda: (lambda a, b: [a, b] if a and b else None)(settled(first), settled(second)),
                                timeout=30, what=lambda: f"symbols of {first} and {second}: "
                                                         f"{sites_once_known(d, first)} {sites_once_known(d, second)}")
            finally:
                if hold:
                    release(first_proc)
                    release(second_proc)

    def renamed_runs(self, hold):
        exe = os.path.realpath(binary("SITE_TRAPS"))
        with Daemon(tick="1s" if self.EMULATED else "200ms", extra_args=["--fault-sample", "0"]) as d:
            # The copies find their library next to them (rpath $ORIGIN).
            shutil.copy2(os.path.join(os.path.dirname(exe), "libsite-traps.so"), d.dir)
            app = os.path.join(d.dir, "app")
            for run in range(self.RUNS):
                with self.subTest(run=run):
                    got = run_until_looked_up(self, lambda: self.renamed_run(d, exe, app, hold))
                    self.maxDiff = None
                    self.assertEqual(got, [[ud_site(exe, app, 3)], [ud_site(exe, app, 5)]])

    def test_processes_that_exit_at_once(self):
        # The arm64 leg's VM once named the first process's file /newroot/.../app.new (its root was
        # a chroot; the VMs now switch to it as the initramfs's successor, scripts/vm-lib.sh).
        self.renamed_runs(hold=False)

    def test_processes_that_live_until_named(self):
        self.renamed_runs(hold=True)


class UnreadableFile(unittest.TestCase):
    """A binary on a file system mounted in a mount namespace of its own, which the daemon does not
    see: run once and gone before the tick, its file can be opened neither through the process's
    mapping nor by its path. Its site keeps file and offset, the reason is counted
    (symbol_unreadable), and it is asked for again: a later process of the same file, alive at the
    tick, has it read through its mapping, and the symbol fills the first process's stored site
    too."""

    def unreadable_run(self, exe, runs):
        """One run with a daemon of its own: the first process's sites two ticks after they were
        counted, then both processes' sites once named; the file's path and the drops at the first
        moment appended to runs."""
        lib = os.path.join(os.path.dirname(exe), "libsite-traps.so")
        with Daemon(extra_args=["--fault-sample", "0"]) as d:
            hidden = os.path.join(d.dir, "hidden")
            os.mkdir(hidden)
            # The first run, then, on a line from the test, the second, which stays alive.
            script = ('mount -t tmpfs none "$1" && cp "$2" "$3" "$1"/ && "$1"/site-traps --ud 3 && read _ && '
                      'exec "$1"/site-traps --ud 5 --hold-after 60')
            # Right after a tick: the first run is long over when the next one drains it.
            tick_after(d.socket)
            ns = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
                                   hidden, exe, lib], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            try:
                first = int(ns.stdout.readline().split()[1])
                self.assertEqual(ns.stdout.readline().split()[:3], ["done", "ud", "signals=3"])
                def counted():
                    reply = sites_once_known(d, first, kind="trap")
                    return reply and reply["sites"] and (lookup_failed(reply["sites"]) or reply["sites"][0]["symbol"] or
                                                         drops(d)["symbol_unreadable"])

                wait_for(counted, what=lambda: f"the first run's site and the drop: {sites_once_known(d, first)}")
                # Not a symbol merely on its way: two ticks later still none, and one failure.
                tick_after(d.socket)
                tick_after(d.socket)
                before = sites(d, first, kind="trap")["sites"]
                runs.append((os.path.join(hidden, "site-traps"), drops(d)))
                if lookup_failed(before):
                    return [before]
                ns.stdin.write("\n")
                ns.stdin.flush()
                second = int(ns.stdout.readline().split()[1])
                self.assertEqual(ns.stdout.readline().split()[:3], ["done", "ud", "signals=5"])
                after = wait_for(lambda: (lambda a, b: [a, b] if a and b else None)(
                    named_traps(d, first), named_traps(d, second)), timeout=30, what="both runs' symbols")
                return [before, *after]
            finally:
                if ns.poll() is None:
                    ns.send_signal(signal.SIGUSR1)
                ns.communicate(timeout=30)
                self.assertFalse(os.listdir(hidden), "the mount was seen outside its namespace")

    def test_unreadable_file_gets_its_symbol_at_a_later_count(self):
        exe = os.path.realpath(binary("SITE_TRAPS"))
        runs = []  # (the file's path, the drops) of each run
        before, first, second = run_until_looked_up(self, lambda: self.unreadable_run(exe, runs))
        path, dropped = runs[-1]
        self.maxDiff = None
        before, first, second = (seen_from_here(sites, path) for sites in (before, first, second))
        self.assertEqual(before, [dict(ud_site(exe, path, 3), symbol=None, symbolOffset=None)])
        # The daemon counts every process of the machine, and other people's workloads may be
        # deleted before their tick too: at least this one.
        self.assertGreaterEqual(dropped["symbol_unreadable"], 1)
        self.assertEqual([first, second], [[ud_site(exe, path, 3)], [ud_site(exe, path, 5)]])


def seen_from_here(sites, path):
    """sites with path where they name it from further up: a daemon in a chroot (the distribution
    leg's) names a file it cannot see by the kernel's path from the real root, the chroot's own
    path in front of the one the test knows."""
    for site in sites:
        for key in ("object", "memoryObject"):
            if (site.get(key) or "").endswith(path):
                site[key] = path
    return sites


def drops(d):
    return {k["kind"]: k["count"] for k in trapstat_json(d.socket, "status")["dropsByKind"]}


if __name__ == "__main__":
    require_root_and_bpf()
    require_trap_workloads()
    require_feature("trap_sites")
    require_feature("fault_sites")
    unittest.main(verbosity=2)
