# SPDX-License-Identifier: MIT
"""Bad input to trapstat and trapstatd: one clear line on stderr, the documented exit code,
nothing hangs. And trapstat's tables of sites against canned replies of a stand-in server: what
it prints for every kind of site and hostile text, what it asks, and what it does with an older
daemon."""
import csv
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import assert_usage_errors, binary, trapstat_on_terminal  # noqa: E402


def run(*args):
    return subprocess.run([binary("TRAPSTAT"), *args], capture_output=True, text=True, timeout=10)


class CliErrors(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.socket = os.path.join(self.dir.name, "nothing-here")

    def tearDown(self):
        self.dir.cleanup()

    def test_unreachable_socket(self):
        p = run("--socket", self.socket, "status")
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"cannot reach trapstatd at {self.socket}", p.stderr)
        self.assertIn("systemctl start trapstatd", p.stderr)
        self.assertEqual(p.stderr.count("\n"), 1)

    def test_socket_that_is_not_a_socket(self):
        with open(self.socket, "w"):
            pass
        p = run("--socket", self.socket, "top", "-b", "-n", "1")
        self.assertEqual(p.returncode, 1)
        self.assertIn("cannot reach trapstatd", p.stderr)

    def test_usage_errors_exit_2(self):
        assert_usage_errors(self, lambda *args: run("--socket", self.socket, *args), (
            (["frobnicate"], "unknown command 'frobnicate'"),
            ([], "missing command"),
            (["history"], "missing PID"),
            (["history", "12ab"], "invalid pid '12ab'"),
            (["history", "-5"], "trapstat history: invalid option -- '5'"),
            (["top", "--bogus"], "trapstat top: unrecognized option '--bogus'"),
            (["history", "0"], "invalid pid '0'"),
            (["history", "99999999999"], "invalid pid"),
            (["history", "1", "--since", "yesterdayish"], "invalid --since"),
            (["history", "1", "--step", "15s"], "invalid --step"),
            (["top", "-n", "zero"], "invalid -n"),
            (["top", "--sort", "bogus"], "invalid --sort"),
            (["top", "extra"], "unexpected argument"),
            (["top", "-p", "0"], "invalid -p '0'"),
            (["top", "-p", "1,x"], "invalid -p '1,x'"),
            (["top", "-p", ",".join(str(i) for i in range(1, 66))], "at most 64 pids"),
            (["top", "-u", "no-such-user-here"], "invalid -u 'no-such-user-here': no such user"),
            (["top", "--unit", ""], "invalid --unit ''"),
            (["top", "--comm", "x" * 257], "expected 1 to 256 bytes"),
            (["top", "--by", "pid"], "invalid --by 'pid': expected unit, comm, user or container"),
            (["top", "--container", ""], "invalid --container ''"),
            (["top", "--container", "a" * 65], "invalid --container: longer than 64 bytes"),
            (["procs", "--container", ""], "invalid --container ''"),
            (["procs", "--container", "0" * 65], "invalid --container: longer than 64 bytes"),
            (["history", "--container", ""], "invalid --container ''"),
            (["history", "--container", "x" * 65], "invalid --container: longer than 64 bytes"),
            (["history", "1", "--container", "web"], "a PID and --container exclude each other"),
            (["history", "--unit", "a", "--container", "web"], "--unit and --container exclude each other"),
            (["history", "--container", "web", "--start-time", "5"], "--start-time names a process, not a container"),
            (["top", "-b", "--by", "unit", "--json"], "--by goes without --json"),
            (["top", "--reconnect-timeout", "soon"], "invalid --reconnect-timeout 'soon'"),
            (["--no-such-flag", "top"], None),
            (["sites"], "missing PID"),
            (["sites", "12ab"], "invalid pid '12ab'"),
            (["sites", "0"], "invalid pid '0'"),
            (["sites", "1", "--traps", "--faults"], "--traps, --faults and --major exclude each other"),
            (["sites", "1", "--faults", "--major"], "--traps, --faults and --major exclude each other"),
            (["sites", "1", "--limit", "0"], "invalid --limit '0'"),
            (["sites", "1", "-n", "10001"], "invalid --limit '10001'"),
            (["sites", "1", "--json", "--csv"], "exclude each other"),
            (["sites", "1", "--since", "1h", "--until", "2h"], "--since must be before --until"),
            (["sites", "1", "--start-time", "-1"], "invalid --start-time"),
            (["sites", "1", "2"], "unexpected argument '2'"),
        ), usage="Usage: trapstat", stdout_empty=True)

    def test_help(self):
        p = run("--help")
        self.assertEqual(p.returncode, 0)
        for verb in ("top", "history", "sites", "status"):
            self.assertIn(verb, p.stdout)


class DaemonErrors(unittest.TestCase):
    """trapstatd refuses bad arguments before touching BPF or the database."""

    def daemon(self, *args):
        return subprocess.run([binary("TRAPSTATD"), *args], capture_output=True, text=True, timeout=10)

    def test_usage_errors_exit_2(self):
        assert_usage_errors(self, self.daemon, (
            (["--tick", "5x"], "invalid --tick '5x'"),
            (["--tick", "1ms"], "invalid --tick '1ms'"),
            (["--tick", "2h"], "invalid --tick '2h'"),
            (["--max-processes", "0"], "invalid --max-processes"),
            (["--max-connections", "-3"], "invalid --max-connections"),
            (["--idle-timeout", "never"], "invalid --idle-timeout"),
            (["--no-such-option"], None),
            (["stray"], "unexpected argument 'stray'"),
            (["--disable-source", "page_fault_user,bogus"], "Unknown source 'bogus'"),
            (["--enable-source", "bogus"], "Unknown source 'bogus' in --enable-source"),
            (["--enable-source", "fault_time", "--disable-source", "task_iterator,fault_time"],
             "Source 'fault_time' is both in --disable-source and --enable-source"),
            (["--slots", "1000"], "invalid --slots '1000'"),
            (["--retention", "raw=2d,minute=1d"], "invalid --retention"),
            (["--retention", "weekly=3w"], "invalid --retention"),
            (["--max-db-size", "12Q"], "invalid --max-db-size '12Q'"),
            (["--fault-sample", "3"], "invalid --fault-sample '3'"),
            (["--fault-sample", "-64"], "invalid --fault-sample"),
            (["--max-sites", "0"], "invalid --max-sites '0'"),
            (["--max-unit-totals", "0"], "invalid --max-unit-totals '0': expected 1 to 1000000"),
            (["--max-unit-totals", "1000001"], "invalid --max-unit-totals '1000001'"),
            (["--report-max-metrics", "132"], "invalid --report-max-metrics '132': expected 133 to 1000000"),
            (["--report-max-metrics", "x"], "invalid --report-max-metrics 'x'"),
        ))

    def test_unusable_state_dir(self):
        with tempfile.TemporaryDirectory() as d:
            blocker = os.path.join(d, "file")
            with open(blocker, "w"):
                pass
            state = os.path.join(blocker, "state")  # a directory below a regular file
            p = self.daemon("--state-dir", state, "--socket", os.path.join(d, "sock"))
            self.assertEqual(p.returncode, 1)
            self.assertIn(f"Failed to create state directory {state}", p.stderr)
            self.assertEqual(p.stderr.count("\n"), 1, p.stderr)

    def test_help_and_version(self):
        self.assertIn("--state-dir", self.daemon("--help").stdout)
        self.assertRegex(self.daemon("--version").stdout, r"^trapstatd \d+\.\d+\.\d+")


class CannedDaemon:
    """A stand-in for trapstatd on a socket of its own: each call is answered with
    answer(method, parameters), a varlink message (a dict) or several (a list: a call with more),
    one connection after the other; the calls are kept in calls."""

    def __init__(self, answer):
        self.answer = answer
        self.calls = []
        self.dir = tempfile.TemporaryDirectory()
        self.socket = os.path.join(self.dir.name, "io.trapstat")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.socket)
        self.listener.listen(8)
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:  # closed
                return
            with conn:
                buf = b""
                while chunk := conn.recv(65536):
                    buf += chunk
                    while b"\0" in buf:
                        message, buf = buf.split(b"\0", 1)
                        call = json.loads(message)
                        self.calls.append(call)
                        reply = self.answer(call["method"], call.get("parameters") or {})
                        # A list: the replies of a call with more (each with "continues"), sent
                        # at once; the connection then stays open until the client closes it.
                        for r in reply if isinstance(reply, list) else [reply]:
                            conn.sendall(json.dumps(r).encode() + b"\0")

    def close(self):
        self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept()
        self.listener.close()
        self.thread.join(10)
        self.dir.cleanup()

    def methods(self):
        return [c["method"] for c in self.calls]


PROCESS = {"pid": 4242, "startTime": 987654000000, "comm": "app\x1b[2J", "cmdline": "/usr/bin/app -x", "uid": 0,
           "unit": None, "firstSeenUsec": 1700000000000000, "lastSeenUsec": 1700000060000000, "exited": True}


def site(kind, vector, obj, offset, count, symbol=None, symbol_offset=None, memory="none", memory_object=None,
         period=None, time_ns=None):
    period = period or (64 if kind == "fault" else 1)
    s = {"kind": kind, "vector": vector, "object": obj, "offset": offset, "symbol": symbol,
         "symbolOffset": symbol_offset, "count": count, "sampled": kind == "fault", "period": period,
         "estimated": count * period, "memory": memory, "memoryObject": memory_object}
    if time_ns is not None:
        s.update(timeNs=time_ns, estimatedTimeNs=time_ns * period)
    return s


# Every kind of row: a sampled fault (an estimate) in the heap, an exact trap with a symbol, a trap
# without one, a path and a symbol that would move the cursor and forge a row, a file as memory
# whose name needs CSV quoting, a vector the kernel did not tell at an address in no file.
SITES = [
    site("fault", "PF", "/usr/bin/app", 0x2a00, 100, "fill_buffer", 0x2a, memory="heap"),
    site("trap", "UD", "/usr/lib/x/libfoo.so", 0x1234, 37, "foo_init", 0x14),
    site("trap", "GP", "/usr/lib/x/libbar.so", 0x1000, 1234),
    site("fault", "PF", "/tmp/evil\n9999 forged\x1b[2J.so", 0x2000, 3, "sym\x1b]0;title\x07", 7, memory="file",
         memory_object="/var/lib/app/data,\"v2\".bin"),
    site("trap", "unknown", "[anon]", 0x7ffffffff000, 2, memory="unmapped"),
]


def history_reply():
    faults = dict(user=5, kernel=0, minor=5, major=0, read=1, write=4, exec=0, protection=0)
    return {"process": PROCESS, "samples": [],
            "total": {"faults": faults, "traps": {"UD": 37, "GP": 1234}, "signals": {"SIGILL": 37, "SIGSEGV": 1234},
                      "signalCodes": {"SIGILL/ILL_ILLOPN": 37, "SIGSEGV/SI_KERNEL": 1234}}}


def answer_with(sites=SITES, sites_error=None):
    """Answers as trapstatd does: Sites filtered by kind and cut at limit, or sites_error."""
    def answer(method, params):
        if method == "io.trapstat.Sites":
            if sites_error:
                return {"error": sites_error, "parameters": {}}
            chosen = [s for s in sites if params.get("kind") in (None, s["kind"])]
            return {"parameters": {"process": PROCESS, "sites": chosen[:params.get("limit", 20)]}}
        if method == "io.trapstat.History":
            return {"parameters": history_reply()}
        if method == "io.trapstat.ListProcesses":
            return {"parameters": {"processes": [PROCESS]}}
        return {"error": "org.varlink.service.MethodNotFound", "parameters": {"method": method}}
    return answer


class SitesOutput(unittest.TestCase):
    """trapstat sites and history's trap sites, from canned replies: no daemon, no BPF."""

    def serve(self, **kw):
        d = CannedDaemon(answer_with(**kw))
        self.addCleanup(d.close)
        return d

    def test_table(self):
        d = self.serve()
        p = run("--socket", d.socket, "sites", "4242")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.split("\n")
        # The process as history names it, escaped; exited.
        self.assertEqual(lines[0], "pid 4242 (app\\e[2J), user root (uid 0), exited")
        self.assertRegex(lines[1], r"^KIND +VECTOR +COUNT +TIME +OBJECT +WHERE +MEMORY$")
        rows = lines[2:-2]
        self.assertEqual(len(rows), len(SITES), p.stdout)  # hostile text forged no row
        self.assertRegex(rows[0], r"^fault +#PF +~6\.40k +- +/usr/bin/app +fill_buffer\+0x2a +\[heap\]$")
        self.assertRegex(rows[1], r"^trap +#UD +37 +- +/usr/lib/x/libfoo\.so +foo_init\+0x14 +-$")
        self.assertRegex(rows[2], r"^trap +#GP +1\.23k +- +/usr/lib/x/libbar\.so +0x1000 +-$")
        self.assertIn("~192", rows[3])
        self.assertIn("/tmp/evil\\n9999 forged\\e[2J.so", rows[3])
        self.assertIn("sym\\e]0;title\\a+0x7", rows[3])
        self.assertTrue(rows[3].endswith('/var/lib/app/data,"v2".bin'), rows[3])
        self.assertRegex(rows[4], r"^trap +unknown +2 +- +\[anon\] +0x7ffffffff000 +\[unmapped\]$")
        self.assertEqual(lines[-2], "~ fault counts and times are estimates: 1 in 64 sampled")
        self.assertEqual(lines[-1], "")
        self.assertNotIn("\x1b", p.stdout)
        self.assertNotIn("\x07", p.stdout)
        # The columns line up: every row's WHERE starts where the header's does.
        where = lines[1].index("WHERE")
        for row in rows:  # all ASCII here: a character is a column
            self.assertEqual(row[where - 2:where], "  ", row)
            self.assertNotEqual(row[where], " ", row)

    def test_table_traps_only_and_empty(self):
        d = self.serve()
        out = run("--socket", d.socket, "sites", "4242", "--traps").stdout
        self.assertNotIn("estimates", out)  # no fault, no word of sampling
        self.assertNotIn("fault", out)
        self.assertEqual(len(out.strip().split("\n")), 2 + 3)
        d = self.serve(sites=[])
        p = run("--socket", d.socket, "sites", "4242")
        self.assertEqual(p.returncode, 0)
        self.assertEqual(p.stdout.split("\n")[1:], ["(no sites in this window)", ""])

    def test_major_sites(self):
        """Major sites: exact counts and times (no "~"), kind major; asked for with --major; a
        reply that says a major site was sampled is malformed."""
        major = [site("major", "PF", "/usr/bin/app", 0x2b00, 2048, "read_back", 0x10, memory="anon",
                      time_ns=41000000),
                 site("major", "PF", "/usr/bin/app", 0x2b00, 12, "read_back", 0x10, memory="file",
                      memory_object="/memfd:swap-in (deleted)", time_ns=0)]
        d = self.serve(sites=[SITES[0], *major])
        p = run("--socket", d.socket, "sites", "4242", "--major")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.split("\n")
        self.assertRegex(lines[1], r"^KIND +VECTOR +COUNT +TIME +OBJECT +WHERE +MEMORY$")
        self.assertRegex(lines[2], r"^major +#PF +2\.05k +41\.0ms +/usr/bin/app +read_back\+0x10 +\[anon\]$")
        self.assertRegex(lines[3], r"^major +#PF +12 +- +/usr/bin/app +read_back\+0x10 +/memfd:swap-in \(deleted\)$")
        self.assertEqual(lines[4:], [""])  # exact: no word of sampling
        self.assertEqual(d.calls[-1]["parameters"], {"pid": 4242, "kind": "major"})
        # Beside a sampled fault, only the fault is an estimate.
        out = run("--socket", d.socket, "sites", "4242").stdout.split("\n")
        self.assertRegex(out[2], r"^fault +#PF +~6\.40k ")
        self.assertRegex(out[3], r"^major +#PF +2\.05k +41\.0ms ")
        self.assertEqual(out[-2], "~ fault counts and times are estimates: 1 in 64 sampled")
        rows = list(csv.DictReader(io.StringIO(run("--socket", d.socket, "sites", "4242", "--major", "--csv").stdout,
                                               newline="")))
        self.assertEqual([(r["kind"], r["count"], r["sampled"], r["period"], r["estimated"], r["timeNs"],
                           r["estimatedTimeNs"], r["memoryObject"]) for r in rows],
                         [("major", "2048", "false", "1", "2048", "41000000", "41000000", ""),
                          ("major", "12", "false", "1", "12", "0", "0", "/memfd:swap-in (deleted)")])
        d = self.serve(sites=[dict(major[0], sampled=True)])
        p = run("--socket", d.socket, "sites", "4242", "--major")
        self.assertEqual(p.returncode, 1)
        self.assertIn("malformed reply", p.stderr)

    def test_several_periods(self):
        d = self.serve(sites=[SITES[0], site("fault", "PF", "/usr/bin/app", 0x3000, 5, period=128)])
        self.assertIn("~ fault counts and times are estimates: 1 in 64 or 128 sampled",
                      run("--socket", d.socket, "sites", "4242").stdout)

    def test_csv_exact(self):
        d = self.serve()
        out = run("--socket", d.socket, "sites", "4242", "--csv").stdout
        self.assertEqual(out.split("\n")[0], "pid,startTime,nsPid,pidNamespace,container.runtime,container.id,"
                                             "container.name,container.pod,container.user,kind,vector,object,offset,"
                                             "symbol,symbolOffset,count,sampled,period,estimated,memory,memoryObject,"
                                             "timeNs,estimatedTimeNs")
        rows = list(csv.DictReader(io.StringIO(out, newline="")))
        self.assertEqual(len(rows), len(SITES))
        for row, s in zip(rows, SITES):
            self.assertEqual(row["pid"], "4242")
            self.assertEqual(row["startTime"], "987654000000")
            for k, v in s.items():
                expected = "" if v is None else str(v).lower() if isinstance(v, bool) else str(v)
                self.assertEqual(row[k], expected, k)

    def test_csv_on_a_terminal(self):
        """Paths and symbols escaped as the table escapes them, no control byte but the line ends
        (a pty's "\\r\\n"); everything else as through a pipe."""
        d = self.serve()
        out = trapstat_on_terminal(d.socket, "sites", "4242", "--csv").stdout.replace(b"\r\n", b"\n")
        self.assertEqual([b for b in out if (b < 0x20 and b != 0x0A) or b == 0x7F], [], out)
        rows = list(csv.DictReader(io.StringIO(out.decode(), newline="")))
        piped = list(csv.DictReader(io.StringIO(run("--socket", d.socket, "sites", "4242", "--csv").stdout, newline="")))
        self.assertEqual(len(rows), len(SITES))
        self.assertEqual((rows[3]["object"], rows[3]["symbol"], rows[3]["memoryObject"]),
                         ("/tmp/evil\\n9999 forged\\e[2J.so", "sym\\e]0;title\\a", '/var/lib/app/data,"v2".bin'))
        piped[3].update(object=rows[3]["object"], symbol=rows[3]["symbol"])
        self.assertEqual(rows, piped)

    def test_json_is_the_reply(self):
        d = self.serve()
        for args in (["--json", "sites", "4242"], ["sites", "4242", "--json"]):
            p = run("--socket", d.socket, *args)
            self.assertEqual(json.loads(p.stdout), {"process": PROCESS, "sites": SITES})
            self.assertEqual(p.stdout.count("\n"), 1)

    def test_what_is_asked(self):
        d = self.serve()
        run("--socket", d.socket, "sites", "4242")
        run("--socket", d.socket, "sites", "4242", "--traps", "-n", "3", "--start-time", "5", "--since",
            "@1700000000", "--until", "@1700000060")
        run("--socket", d.socket, "sites", "--faults", "--limit", "10000", "4242")
        self.assertEqual([c["parameters"] for c in d.calls], [
            {"pid": 4242},
            {"pid": 4242, "startTime": 5, "sinceUsec": 1700000000000000, "untilUsec": 1700000060000000,
             "kind": "trap", "limit": 3},
            {"pid": 4242, "kind": "fault", "limit": 10000},
        ])

    def test_malformed_reply(self):
        bad = dict(SITES[1], estimated=38)  # not count x period
        d = self.serve(sites=[SITES[0], bad])
        p = run("--socket", d.socket, "sites", "4242")
        self.assertEqual(p.returncode, 1)
        self.assertIn("malformed reply", p.stderr)
        self.assertEqual(p.stdout, "")

    def test_error_replies(self):
        d = self.serve(sites_error="io.trapstat.NoSuchProcess")
        p = run("--socket", d.socket, "sites", "4242")
        self.assertEqual(p.returncode, 1)
        self.assertIn("no process with pid", p.stderr)
        d = self.serve(sites_error="org.varlink.service.MethodNotFound")
        p = run("--socket", d.socket, "sites", "4242")
        self.assertEqual(p.returncode, 1)
        self.assertIn("is it older than this trapstat?", p.stderr)

    def test_history_shows_top_trap_sites(self):
        d = self.serve()
        p = run("--socket", d.socket, "history", "4242", "--since", "@1700000000")
        self.assertEqual(p.returncode, 0, p.stderr)
        section = p.stdout[p.stdout.index("top 3 trap sites\n"):].split("\n")
        self.assertRegex(section[1], r"^  VECTOR +COUNT +OBJECT +WHERE +MEMORY$")
        self.assertRegex(section[2], r"^  #UD +37 +/usr/lib/x/libfoo\.so +foo_init\+0x14 +-$")
        self.assertRegex(section[3], r"^  #GP +1\.23k +/usr/lib/x/libbar\.so +0x1000 +-$")
        self.assertRegex(section[4], r"^  unknown +2 +\[anon\]")
        self.assertEqual(section[5:], [""])
        # Of the very process shown, in the same range.
        self.assertEqual(d.calls[-1], {"method": "io.trapstat.Sites", "parameters": {
            "pid": 4242, "startTime": PROCESS["startTime"], "sinceUsec": 1700000000000000, "kind": "trap",
            "limit": 3}})

    def test_history_without_trap_sites(self):
        for kw in ({"sites": []}, {"sites_error": "org.varlink.service.MethodNotFound"}):
            with self.subTest(**kw):
                d = self.serve(**kw)
                p = run("--socket", d.socket, "history", "4242")
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(p.stderr, "")  # an older daemon is no failure
                self.assertNotIn("trap sites", p.stdout)
                self.assertIn("#UD invalid opcode", p.stdout)  # the rest is all there
                self.assertEqual(d.methods(), ["io.trapstat.History", "io.trapstat.ListProcesses",
                                               "io.trapstat.Sites"])

    def test_history_json_and_csv_ask_no_sites(self):
        d = self.serve()
        run("--socket", d.socket, "--json", "history", "4242")
        run("--socket", d.socket, "history", "4242", "--csv")
        self.assertNotIn("io.trapstat.Sites", d.methods())


# Major faults by cause (FILE ANON SHMEM): what a daemon that tells them sends, and the time of
# those faults with fault time on; a daemon that cannot tell sends null, an older one nothing.
T0 = 1700000000000000  # 2023-11-14 22:13:20 UTC
BUCKET_4_8MS = 13  # the fault time histogram's bucket of 4.096 to 8.192 ms ("4ms-8ms")


def cause_faults(user, major, minor, read, by_cause):
    """Faults as a daemon sends them; by_cause a dict, None (null: cannot tell) or False (an
    older daemon: no member)."""
    f = dict(user=user, kernel=2, minor=minor, major=major, read=read, write=1, exec=0, protection=0)
    if by_cause is not False:
        f["majorByCause"] = by_cause
    return f


def cause_time(minor_ms, major_ms, timed, max_ms, by_cause_ms):
    """A FaultTime with timed faults of 4 to 8 ms; by_cause_ms None: an older daemon's (no member)."""
    histogram = [0] * 24
    histogram[BUCKET_4_8MS] = timed
    t = {"minorNs": minor_ms * 1000000, "majorNs": major_ms * 1000000, "kernelNs": 0, "maxNs": int(max_ms * 1000000),
         "histogram": histogram}
    if by_cause_ms is not None:
        t["majorNsByCause"] = {k: v * 1000000 for k, v in by_cause_ms.items()}
    return t


def cause_counters(faults, fault_time=None, traps=None):
    c = {"faults": faults, "traps": traps or {}, "signals": {}, "signalCodes": {}}
    if fault_time:
        c["faultTime"] = fault_time
    return c


def cause_history(told=True):
    """Two samples of 10 s and their total; told: the causes {...}, None or False as for
    cause_faults (the fault time by cause zero, or absent from an older daemon)."""
    def by(file, anon, shmem):
        return {"file": file, "anon": anon, "shmem": shmem} if told is True else told

    def by_ms(file, anon, shmem):
        # A daemon that cannot tell the causes times nothing by them (zeros); an older one has no
        # member at all.
        if told is False:
            return None
        return {"file": file, "anon": anon, "shmem": shmem} if told else {"file": 0, "anon": 0, "shmem": 0}

    samples = [
        {"timeUsec": T0, "counters": cause_counters(cause_faults(100, 6, 94, 99, by(4, 1, 0)),
                                                    cause_time(20, 30, 10, 6, by_ms(20, 10, 0)))},
        {"timeUsec": T0 + 10000000, "counters": cause_counters(cause_faults(50, 3, 47, 49, by(1, 0, 2)),
                                                               cause_time(5, 15, 4, 5.5, by_ms(5, 0, 10)), {"UD": 2})},
    ]
    total = cause_counters(cause_faults(150, 9, 141, 148, by(5, 1, 2)), cause_time(25, 45, 14, 6, by_ms(25, 10, 10)),
                           {"UD": 2})
    total["faults"]["kernel"] = 4
    total["faults"]["write"] = 2
    total["signals"], total["signalCodes"] = {"SIGILL": 2}, {"SIGILL/ILL_ILLOPN": 2}
    return {"process": PROCESS, "samples": samples, "total": total}


def cause_answer(told=True, history=None):
    """History as cause_history(told), or history; Top: the process's total, an older daemon's
    row and one whose causes were all files."""
    def answer(method, params):
        reply = history or cause_history(told)
        if method == "io.trapstat.History":
            return {"parameters": reply}
        if method == "io.trapstat.ListProcesses":
            return {"parameters": {"processes": [PROCESS]}}
        if method == "io.trapstat.Top":
            old = dict(PROCESS, pid=7, comm="old", startTime=1)
            return {"parameters": {"rows": [
                {"process": PROCESS, "counters": reply["total"]},
                {"process": old, "counters": cause_counters(cause_faults(9, 1, 8, 8, False))},
                {"process": dict(old, pid=8, startTime=2), "counters": cause_counters(cause_faults(3, 1, 2, 2, {
                    "file": 1, "anon": 0, "shmem": 0}))},
            ]}}
        return {"error": "org.varlink.service.MethodNotFound", "parameters": {"method": method}}
    return answer


def run_utc(*args):
    """trapstat in UTC and the C locale (ASCII: "us" for µs), for tables to compare whole."""
    return subprocess.run([binary("TRAPSTAT"), *args], capture_output=True, text=True, timeout=10,
                          env=dict(os.environ, TZ="UTC", LC_ALL="C"))


class MajorCauseOutput(unittest.TestCase):
    """history and top -b against canned replies with major faults by cause, without them (null),
    and from an older daemon: the columns FILE ANON SHMEM, "-" where not counted, never 0."""

    COUNTS_HEADER = "TIME             USER KERNEL  MINOR  MAJOR   READ  WRITE   EXEC   PROT  TRAPS"
    COUNTS = [
        "11-14 22:13:20    100      2     94      6     99      1      0      0      0",
        "11-14 22:13:30     50      2     47      3     49      1      0      0      2",
        "total             150      4    141      9    148      2      0      0      2",
    ]
    FAULT_TIME = [
        "fault time per 10s (%FAULT as %CPU; P50, P99: buckets of the histogram):",
        "TIME             TIMED      TIME  %FAULT         P50         P99   LONGEST",
        "11-14 22:13:20      10    50.0ms     0.5     4ms-8ms     4ms-8ms    6.00ms",
        "11-14 22:13:30       4    20.0ms     0.2     4ms-8ms     4ms-8ms    5.50ms",
        "total               14    70.0ms       -     4ms-8ms     4ms-8ms    6.00ms",
    ]

    def serve(self, told=True):
        d = CannedDaemon(cause_answer(told))
        self.addCleanup(d.close)
        return d

    def history_lines(self, told, *args):
        d = self.serve(told)
        p = run_utc("--socket", d.socket, "history", "4242", *args)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout.split("\n")

    def test_history_counts_and_time_by_cause(self):
        """The counts as before, in 80 columns; the causes in a table of their own beside MAJOR,
        with the time of those timed; a sparkline per cause."""
        lines = self.history_lines(True)
        counts = lines.index(self.COUNTS_HEADER)
        self.assertEqual(lines[counts + 1:counts + 4], self.COUNTS)
        self.assertEqual(lines[counts + 4:counts + 16], [
            "",
            "major faults by cause per 10s, and the time of those timed:",
            "TIME            MAJOR   FILE   ANON  SHMEM  FILE-TIME  ANON-TIME SHMEM-TIME",
            "11-14 22:13:20      6      4      1      0     20.0ms     10.0ms        0ns",
            "11-14 22:13:30      3      1      0      2     5.00ms        0ns     10.0ms",
            "total               9      5      1      2     25.0ms     10.0ms     10.0ms",
            "",
            *self.FAULT_TIME,
        ])
        self.assertEqual([line for line in lines if len(line) > 80 and not line.startswith("command:")], [])
        # A sparkline per cause with faults, named as JSON names it.
        sparks = [line.split()[0] for line in lines if re.match(r"^  \S+ +[ .:=+*#@-]+  max ", line)]
        self.assertEqual(sparks[:9], ["user", "kernel", "minor", "major", "majorByCause.file", "majorByCause.anon",
                                      "majorByCause.shmem", "read", "write"])

    def test_history_causes_not_told(self):
        """null (a kernel before 5.17, the source disabled) and an older daemon: the counts as
        ever, and a line that the causes were not counted, never a table of zeros."""
        for told in (None, False):
            with self.subTest(told=told):
                lines = self.history_lines(told)
                counts = lines.index(self.COUNTS_HEADER)
                self.assertEqual(lines[counts + 1:counts + 4], self.COUNTS)
                self.assertEqual(lines[counts + 4:counts + 12], [
                    "",
                    "major faults by cause: not counted (trapstat status says why)",
                    "",
                    *self.FAULT_TIME,
                ])
                self.assertFalse([line for line in lines if "majorByCause" in line])

    def test_history_no_major_faults(self):
        """No major fault: nothing of their causes (counted or not)."""
        for told in (True, None):
            with self.subTest(told=told):
                by_cause = {"file": 0, "anon": 0, "shmem": 0} if told else None
                d = CannedDaemon(cause_answer(history={"process": PROCESS, "samples": [], "total": cause_counters(
                    cause_faults(3, 0, 3, 3, by_cause))}))
                self.addCleanup(d.close)
                p = run_utc("--socket", d.socket, "history", "4242")
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn("total               3      2      3      0      3      1      0      0      0\n",
                              p.stdout)
                self.assertNotIn("major faults by cause", p.stdout)

    def test_history_csv(self):
        """The causes' counts and times as exact columns; empty where not counted."""
        header = ("pid,startTime,nsPid,pidNamespace,container.runtime,container.id,container.name,container.pod,"
                  "container.user,timeUsec,time,user,kernel,minor,major,read,write,exec,protection,majorByCause.file,"
                  "majorByCause.anon,majorByCause.shmem,traps,minorNs,majorNs,kernelNs,maxNs,faultsTimed,"
                  "majorNsByCause.file,majorNsByCause.anon,majorNsByCause.shmem,stall.swapinNs,stall.swapinCount,"
                  "stall.thrashingNs,stall.thrashingCount,stall.reclaimNs,stall.reclaimCount,stall.compactNs,"
                  "stall.compactCount,stall.blkioNs,stall.blkioCount,traps.UD,signals.SIGILL")
        lead = "4242,987654000000,,,,,,,"
        no_stall = "," * 10  # these replies have none (StallOutput checks them)
        self.assertEqual(self.history_lines(True, "--csv"), [
            header,
            f"{lead},{T0},2023-11-14T22:13:20+00:00,100,2,94,6,99,1,0,0,4,1,0,0,20000000,30000000,0,6000000,10,"
            f"20000000,10000000,0{no_stall},0,0",
            f"{lead},{T0 + 10000000},2023-11-14T22:13:30+00:00,50,2,47,3,49,1,0,0,1,0,2,2,5000000,15000000,0,5500000,4,"
            f"5000000,0,10000000{no_stall},2,0",
            "",
        ])
        for told in (None, False):
            with self.subTest(told=told):
                rows = list(csv.DictReader(io.StringIO("\n".join(self.history_lines(told, "--csv")), newline="")))
                self.assertEqual(len(rows), 2)
                for row in rows:
                    for column in ("majorByCause.file", "majorByCause.anon", "majorByCause.shmem",
                                   "majorNsByCause.file", "majorNsByCause.anon", "majorNsByCause.shmem"):
                        self.assertEqual(row[column], "", column)
                self.assertEqual([row["major"] for row in rows], ["6", "3"])
                self.assertEqual([row["majorNs"] for row in rows], ["30000000", "15000000"])

    def test_top_batch(self):
        """Every Faults member as history has them; "-" for the row of an older daemon's."""
        d = self.serve()
        p = run_utc("--socket", d.socket, "top", "-b", "-n", "1")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.split("\n")[1:], [
            "    PID COMM              USER KERNEL  MINOR  MAJOR   FILE   ANON  SHMEM   READ  WRITE   EXEC   PROT"
            "    FTIME  TRAPS  VECTORS          UNIT",
            "   4242 app\\e[2J           150      4    141      9      5      1      2    148      2      0      0"
            "   70.0ms      2  UD:2             -",
            "      7 old                  9      2      8      1      -      -      -      8      1      0      0"
            "        -      0  -                -",
            "      8 old                  3      2      2      1      1      0      0      2      1      0      0"
            "        -      0  -                -",
            "",
        ])

    def test_top_by_comm_sums_the_causes(self):
        """A group sums its processes' causes; one it cannot sum (a process whose causes were not
        counted) is "-", not the sum of the others."""
        d = self.serve()
        p = run_utc("--socket", d.socket, "top", "-b", "-n", "1", "--by", "comm", "--sort", "file")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.split("\n")[1:], [
            "  PROCS    USER KERNEL  MINOR  MAJOR   FILE   ANON  SHMEM   READ  WRITE   EXEC   PROT  TRAPS  VECTORS"
            "          COMM",
            "      1    150      4    141      9      5      1      2    148      2      0      0      2  UD:2"
            "             app\\e[2J",
            "      2     12      4     10      2      -      -      -     10      2      0      0      0  -"
            "                old",
            "",
        ])

    def test_sort_names(self):
        """--sort file, anon, shmem: the IDL's majorFile, majorAnon, majorShmem, which work too."""
        d = self.serve()
        for arg, name in (("file", "majorFile"), ("anon", "majorAnon"), ("shmem", "majorShmem"),
                          ("majorShmem", "majorShmem"), ("time", "faultTime")):
            with self.subTest(sort=arg):
                p = run_utc("--socket", d.socket, "top", "-b", "-n", "1", "--sort", arg)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertRegex(p.stdout.split("\n")[0], rf"^trapstat top - .* - counts over the last 1m00s, "
                                                          rf"sorted by {name}$")
                self.assertEqual(d.calls[-1]["parameters"]["sortBy"], name)
        for arg in ("File", "majorfile", "cause"):
            with self.subTest(sort=arg):
                p = run_utc("--socket", d.socket, "top", "-b", "--sort", arg)
                self.assertEqual(p.returncode, 2)
                self.assertIn(f"invalid --sort '{arg}': expected user, kernel, minor, major, file, anon, shmem, read, "
                              "write, exec, protection, traps, time or stall", p.stderr)
                self.assertEqual(p.stdout, "")


# The memory stall (Counters.stall, the kernel's delay accounting): what a daemon whose kernel
# keeps it sends, null while it keeps none, nothing from an older daemon.
MS = 1000000


def stall(swapin=0, thrashing=0, reclaim=0, compact=0, blkio=0, counts=(0, 0, 0, 0, 0)):
    """A Stall, times in ms, members in the IDL's order."""
    s = {}
    for name, ms, count in zip(("swapin", "thrashing", "reclaim", "compact", "blkio"),
                               (swapin, thrashing, reclaim, compact, blkio), counts):
        s[name + "Ns"] = int(ms * MS)
        s[name + "Count"] = count
    return s


def stall_counters(user, stall_value, traps=None):
    """Counters with the stall: a dict, None (null) or False (an older daemon: no member)."""
    c = cause_counters(cause_faults(user, 0, user, user, {"file": 0, "anon": 0, "shmem": 0}), traps=traps)
    if stall_value is not False:
        c["stall"] = stall_value
    return c


STALL_CSV = ["stall.swapinNs", "stall.swapinCount", "stall.thrashingNs", "stall.thrashingCount", "stall.reclaimNs",
             "stall.reclaimCount", "stall.compactNs", "stall.compactCount", "stall.blkioNs", "stall.blkioCount"]


def stall_history(told=True):
    """Two samples of 10 s and their total; told False: an older daemon's, None: null."""
    def of(value):
        return value if told is True else told

    first = stall(1000, 500, 250, 0, 3000, (40, 5, 12, 0, 7))  # 1.75 s on memory of 10 s: 17.5
    second = stall(200, 0, 300, 10, 0, (8, 0, 3, 1, 0))  # 0.51 s of 10 s: 5.1
    total = stall(1200, 500, 550, 10, 3000, (48, 5, 15, 1, 7))
    return {"process": PROCESS, "samples": [
        {"timeUsec": T0, "counters": stall_counters(100, of(first))},
        {"timeUsec": T0 + 10000000, "counters": stall_counters(50, of(second))},
    ], "total": stall_counters(150, of(total))}


OLD = dict(PROCESS, pid=7, comm="old", startTime=1)


def stall_top_rows():
    """Top over 60 s: 15 s on memory of 60 s (25.0), an older daemon's row, a null's, a row that
    did not wait (0) and one that waited 6 s (10.0), of the same comm as the one before."""
    return [
        {"process": PROCESS, "counters": stall_counters(150, stall(10000, 2000, 2500, 500, 9000))},
        {"process": OLD, "counters": stall_counters(90, False)},
        {"process": dict(OLD, pid=8, startTime=2), "counters": stall_counters(80, None)},
        {"process": dict(OLD, pid=9, startTime=3, comm="idle"), "counters": stall_counters(20, stall())},
        {"process": dict(OLD, pid=10, startTime=4, comm="idle"), "counters": stall_counters(10, stall(reclaim=6000))},
    ]


def watch_tick(rows):
    """A Watch reply of a tick of 1 s (its counts are the live view's rates over it)."""
    return {"parameters": {"timeUsec": T0 + 1000000, "intervalUsec": 1000000, "total": stall_counters(0, False),
                           "processes": len(rows), "rows": rows, "missedTicks": 0, "exited": []},
            "continues": True}


def stall_answer(history=None, top_rows=None, watch_rows=None):
    def answer(method, params):
        if method == "io.trapstat.History":
            return {"parameters": history or stall_history()}
        if method == "io.trapstat.ListProcesses":
            return {"parameters": {"processes": [PROCESS]}}
        if method == "io.trapstat.Top":
            return {"parameters": {"rows": top_rows if top_rows is not None else stall_top_rows()}}
        if method == "io.trapstat.Watch":
            return [watch_tick(watch_rows if watch_rows is not None else [])]
        if method == "io.trapstat.GetStatus":
            return {"parameters": {
                "version": "9.9.9", "arch": "x86_64", "tickUsec": 1000000, "databasePath": "/x/trapstat.db",
                "databaseBytes": 4096, "processesTracked": 3, "drops": 0, "sources": [
                    {"name": "page_fault_user", "active": True},
                    {"name": "delay_accounting", "active": False,
                     "reason": "the kernel keeps no delay accounting (sysctl kernel.task_delayacct=0)"}]}}
        return {"error": "org.varlink.service.MethodNotFound", "parameters": {"method": method}}
    return answer


class StallOutput(unittest.TestCase):
    """top (-b, --by, the live view) and history against canned replies with the memory stall:
    %STALL exact, "-" where not counted (null, or an older daemon), never 0; the stall table and
    CSV columns of history; --sort stall and the live view's d."""

    def serve(self, **kw):
        d = CannedDaemon(stall_answer(**kw))
        self.addCleanup(d.close)
        return d

    def top_batch(self, d, *args):
        p = run_utc("--socket", d.socket, "top", "-b", "-n", "1", *args)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout.split("\n")

    def test_top_batch(self):
        """%STALL over the window after FTIME: 15 s of 60 s is 25.0; "-" for an older daemon's
        row and a null's; 0 for a row that did not wait."""
        lines = self.top_batch(self.serve())
        self.assertEqual(lines[1:], [
            "    PID COMM              USER KERNEL  MINOR  MAJOR   FILE   ANON  SHMEM   READ  WRITE   EXEC   PROT"
            "    FTIME %STALL  TRAPS  VECTORS          UNIT",
            "   4242 app\\e[2J           150      2    150      0      0      0      0    150      1      0      0"
            "        -   25.0      0  -                -",
            "      7 old                 90      2     90      0      0      0      0     90      1      0      0"
            "        -      -      0  -                -",
            "      8 old                 80      2     80      0      0      0      0     80      1      0      0"
            "        -      -      0  -                -",
            "      9 idle                20      2     20      0      0      0      0     20      1      0      0"
            "        -      0      0  -                -",
            "     10 idle                10      2     10      0      0      0      0     10      1      0      0"
            "        -   10.0      0  -                -",
            "",
        ])

    def test_top_batch_without_stall(self):
        """No row knows it (an older daemon, a kernel without delay accounting): no column, unless
        sorted by it; then the daemon is asked for that sort, and every cell is "-"."""
        rows = [r for r in stall_top_rows() if r["process"]["comm"] == "old"]
        d = self.serve(top_rows=rows)
        lines = self.top_batch(d)
        self.assertNotIn("%STALL", lines[1])
        self.assertEqual(lines[1], "    PID COMM              USER KERNEL  MINOR  MAJOR   FILE   ANON  SHMEM   READ  WRITE"
                                   "   EXEC   PROT    FTIME  TRAPS  VECTORS          UNIT")
        self.assertEqual(d.calls[-1]["parameters"]["sortBy"], "user")
        lines = self.top_batch(d, "--sort", "stall")
        self.assertRegex(lines[0], r"^trapstat top - .* - counts over the last 1m00s, sorted by stall$")
        self.assertEqual(d.calls[-1]["parameters"]["sortBy"], "stall")
        x = lines[1].index(" %STALL")
        self.assertEqual([line[x:x + 7] for line in lines[1:4]], [" %STALL", "      -", "      -"])

    def test_top_by_comm(self):
        """A group sums its processes' stall, over the window; one with a process whose stall was
        not counted is "-", not the sum of the others."""
        lines = self.top_batch(self.serve(), "--by", "comm", "--sort", "stall")
        self.assertEqual(lines[1:], [
            "  PROCS    USER KERNEL  MINOR  MAJOR   FILE   ANON  SHMEM   READ  WRITE   EXEC   PROT %STALL  TRAPS"
            "  VECTORS          COMM",
            "      1    150      2    150      0      0      0      0    150      1      0      0   25.0      0"
            "  -                app\\e[2J",
            "      2     30      4     30      0      0      0      0     30      2      0      0   10.0      0"
            "  -                idle",
            "      2    170      4    170      0      0      0      0    170      2      0      0      -      0"
            "  -                old",
            "",
        ])

    def history_lines(self, *args, **kw):
        d = self.serve(**kw)
        p = run_utc("--socket", d.socket, "history", "4242", *args)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout.split("\n")

    STALL_TABLE = [
        "stall per 10s (delay accounting; %STALL: memory, all but BLKIO, as %CPU):",
        "TIME              SWAPIN    THRASH   RECLAIM   COMPACT     BLKIO  %STALL",
        "11-14 22:13:20     1.00s     500ms     250ms       0ns     3.00s    17.5",
        "11-14 22:13:30     200ms       0ns     300ms    10.0ms       0ns     5.1",
        "total              1.20s     500ms     550ms    10.0ms     3.00s       -",
    ]

    def test_history_table(self):
        """Per sample the time of each cause and the share of the sample waited on memory (not
        BLKIO); the total; within 80 columns."""
        lines = self.history_lines()
        start = lines.index(self.STALL_TABLE[0])
        self.assertEqual(lines[start - 1:start + 6], ["", *self.STALL_TABLE, ""])
        self.assertEqual([line for line in lines if len(line) > 80 and not line.startswith("command:")], [])

    def test_history_not_counted(self):
        """null and an older daemon: no stall table, nothing made up; a sample whose stall was not
        counted under a total that was: "-" in its cells."""
        for told in (None, False):
            with self.subTest(told=told):
                lines = self.history_lines(history=stall_history(told))
                self.assertFalse([line for line in lines if "stall" in line.lower()], lines)
        reply = stall_history()
        reply["samples"][1]["counters"]["stall"] = None
        lines = self.history_lines(history=reply)
        start = lines.index(self.STALL_TABLE[0])
        self.assertEqual(lines[start + 3], "11-14 22:13:30         -         -         -         -         -       -")
        # Counted, nothing waited: one line, not a table of zeros.
        reply = stall_history()
        for c in [s["counters"] for s in reply["samples"]] + [reply["total"]]:
            c["stall"] = stall()
        lines = self.history_lines(history=reply)
        self.assertIn("stall (the kernel's delay accounting): no waits", lines)
        self.assertNotIn(self.STALL_TABLE[1], lines)

    def test_history_csv(self):
        """The ten members, exact, in the IDL's order after the fault time's; empty where not
        counted."""
        lines = self.history_lines("--csv")
        header = lines[0].split(",")
        self.assertEqual(header[header.index("majorNsByCause.shmem") + 1:], STALL_CSV)
        rows = list(csv.DictReader(io.StringIO("\n".join(lines), newline="")))
        self.assertEqual([[row[c] for c in STALL_CSV] for row in rows], [
            ["1000000000", "40", "500000000", "5", "250000000", "12", "0", "0", "3000000000", "7"],
            ["200000000", "8", "0", "0", "300000000", "3", "10000000", "1", "0", "0"],
        ])
        for told in (None, False):
            with self.subTest(told=told):
                lines = self.history_lines("--csv", history=stall_history(told))
                self.assertEqual(lines[0].split(",")[-10:], STALL_CSV)
                self.assertEqual([line.split(",")[-10:] for line in lines[1:3]], [[""] * 10] * 2)
                self.assertEqual(lines[3:], [""])

    def test_history_json_passes_through(self):
        d = self.serve()
        p = run_utc("--socket", d.socket, "--json", "history", "4242")
        self.assertEqual(json.loads(p.stdout)["total"]["stall"], stall_history()["total"]["stall"])

    def test_status_delay_accounting(self):
        """The source of the stall, inactive, with the daemon's reason on its line."""
        p = run_utc("--socket", self.serve().socket, "status")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.split("\n")
        sources = lines.index("sources:")
        self.assertEqual(lines[sources + 1:sources + 3], [
            "  page_fault_user          active",
            "  delay_accounting         inactive: the kernel keeps no delay accounting (sysctl kernel.task_delayacct=0)",
        ])

    def live(self, name, **kw):
        if not shutil.which("tmux"):
            self.skipTest("tmux is not installed (scripts/install-deps.sh installs it)")
        from test_cli_top import Tmux  # only this test needs tmux
        d = self.serve(**kw)
        t = Tmux(f"trapstat-stall-{os.getpid()}-{name}", f"{binary('TRAPSTAT')} --socket {d.socket} top",
                 env={"TERM": "xterm-256color", "TZ": "UTC"})
        self.addCleanup(t.close)
        return d, t

    def test_live_view(self):
        """The rate of the tick: 250 ms on memory of a 1 s tick is 25.0 (the 500 ms of block I/O
        not in it); "-" for a null's row; d sorts by stall (the daemon asked for it)."""
        from test_cli_top import data_rows, row_of, sorted_by
        watch = [{"process": PROCESS, "counters": stall_counters(5, stall(swapin=100, reclaim=150, blkio=500))},
                 {"process": dict(OLD, pid=8, startTime=2), "counters": stall_counters(7, None)}]
        d, t = self.live("view", watch_rows=watch)
        screen = t.wait(lambda s: (row_of(s, 4242) or {}).get("%STALL") == "25.0", "%STALL of 4242")
        self.assertEqual(row_of(screen, 8)["%STALL"], "-")
        self.assertEqual(row_of(screen, 4242)["%FAULT"], "0")
        self.assertEqual(sorted_by(screen), "user")
        self.assertIn(" d sort by", screen)
        t.keys("d")
        screen = t.wait(lambda s: sorted_by(s) == "stall", "the sort by stall after d")
        self.assertEqual([c["parameters"].get("sortBy") for c in d.calls if c["method"] == "io.trapstat.Watch"],
                         ["user", "stall"])
        # By the tick's stall, then by the total's (10's 6 s, 9's none), then by all faults for
        # the rows with none (7, 8: not counted; 9: zero).
        screen = t.wait(lambda s: [r.split()[0] for r in data_rows(s)] == ["4242", "10", "8", "7", "9"],
                        "the rows sorted by stall")
        self.assertEqual(row_of(screen, 4242)["%STALL"], "25.0")

    def test_live_view_without_stall(self):
        """No row knows the stall: no column, and d keeps the sort and says why."""
        from test_cli_top import row_of, sorted_by
        old = [{"process": OLD, "counters": stall_counters(5, False)}]
        d, t = self.live("none", top_rows=old, watch_rows=old)
        screen = t.wait(lambda s: row_of(s, 7) is not None, "the row of 7")
        self.assertNotIn("%STALL", screen)
        t.keys("d")
        screen = t.wait(lambda s: "no row here knows the memory stall" in s, "the refusal of d")
        self.assertEqual(sorted_by(screen), "user")
        self.assertEqual([c["parameters"].get("sortBy") for c in d.calls if c["method"] == "io.trapstat.Watch"],
                         ["user"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
