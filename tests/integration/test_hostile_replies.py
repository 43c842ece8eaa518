# SPDX-License-Identifier: MIT
"""No reply holds others hostage, each attack by a real unprivileged user on a database that holds
many of its processes with 4 KiB command lines: a reply over --max-reply-size is refused with
ReplyTooLarge and the connection goes on; a client reading a big reply a little at a time is
closed once --write-timeout has passed since the reply was queued; a query past
--query-time-limit gets QueryTooSlow; many connections with big replies they never read. Root's
GetStatus answers within 200 ms throughout.

usage (through meson test): test_hostile_replies.py"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import Daemon, copy_for_users, create_user, remove_user, require_root_and_bpf, user_name  # noqa: E402
from test_hostile import (PRELUDE, USER_PYTHON, HostileTest, call_once, is_status,  # noqa: E402
                          proc_status, raise_nofile, read_line, sanitized)

USER = user_name("trapstat-replies")
# Processes of the user with a 4096-byte command line: 2100 of them (8.8 MB) are over
# --max-reply-size's default. No more: maintenance reads the whole process table on the event loop
# (its command lines too) whenever a process has exited on the machine, 20 ms per 1000 such rows
# here, and root's GetStatus would wait for that, not for anything this test does.
BIG = 2100
UNIT = "trapstat-test-replies.service"
CMDLINE = 4096
MIB = 1 << 20
MAX_REPLY = 8 * MIB  # --max-reply-size's default


def list_big(n):
    return {"method": "io.trapstat.ListProcesses", "parameters": {"comm": "bigcmd", "limit": n, "includeExited": True}}


def setUpModule():
    global UID, GID, TMP, TEMPLATE, CLI, SHARED
    pw = create_user(USER)
    UID, GID = pw.pw_uid, pw.pw_gid
    # The schema as the daemon makes it, then the user's processes written straight in (exited = 0
    # under another boot, so neither the start nor maintenance marks or removes them).
    d = Daemon()
    d.start()
    TMP = d
    if d.stop() != 0:
        raise AssertionError(f"trapstatd exited non-zero:\n{d.read_log()}")
    db = sqlite3.connect(os.path.join(d.state_dir, "trapstat.db"))
    # Exited two hours ago, each with an hour of history (processes without any are deleted).
    hour = (int(time.time()) // 3600 - 2) * 3600 * 1000000
    rows = [("00000000-0000-0000-0000-000000000000", pid, pid * 1000, "bigcmd", "x" * (CMDLINE - 8) + f"{pid:08d}",
             UID, UNIT, hour, hour + pid) for pid in range(1, BIG + 1)]
    db.executemany("INSERT INTO process (boot_id, pid, start_time, comm, cmdline, uid, unit, first_seen_usec, "
                   "last_seen_usec, exited) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1)", rows)
    db.execute("INSERT INTO sample_hour (process_id, time_usec, f_user) SELECT id, ?, 1 FROM process WHERE uid = ?",
               (hour, UID))
    db.commit()
    TEMPLATE = os.path.join(d.dir, "template.db")
    db.execute("VACUUM INTO ?", (TEMPLATE,))
    db.close()
    # The user runs a copy of the CLI from a directory it may enter.
    SHARED = tempfile.mkdtemp(prefix="trapstat-replies-")
    CLI = copy_for_users(SHARED, "TRAPSTAT")["TRAPSTAT"]


def tearDownModule():
    TMP.cleanup()
    shutil.rmtree(SHARED, ignore_errors=True)
    remove_user(USER)


def user_script(script, *args):
    argv = [USER_PYTHON, "-c", PRELUDE + script, *map(str, args)]
    return subprocess.Popen(["setpriv", f"--reuid={UID}", f"--regid={GID}", "--init-groups", *argv],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=raise_nofile)


def finish(proc, timeout=60):
    try:
        out, err = proc.communicate("go\n", timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    if proc.returncode != 0:
        raise AssertionError(f"client exited {proc.returncode}: {err.strip()}")
    return [json.loads(line) for line in out.splitlines()]


ROOT_STATUS = r'''
import json, socket, sys, time
latencies, failures = [], []
while True:
    t0 = time.monotonic()
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(float(sys.argv[4]))
        s.connect(sys.argv[1])
        s.sendall(b'{"method": "io.trapstat.GetStatus"}\0')
        buf = b""
        while b"\0" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        s.close()
        r = json.loads(buf.split(b"\0")[0])
        ok = "version" in r.get("parameters", {})
    except (OSError, ValueError) as e:
        r, ok = repr(e), False
    latencies.append(time.monotonic() - t0)
    if not ok:
        failures.append(str(r)[:200])
    if len(latencies) >= int(sys.argv[2]) and os.path.exists(sys.argv[3]):
        break
    time.sleep(max(0.0, 0.1 - (time.monotonic() - t0)))
print(json.dumps({"latencies": latencies, "failures": failures}))
'''


class RootStatus:
    """Root's GetStatus every 100 ms on a fresh connection, from a process of its own (a busy test
    process would delay the measure, not the daemon), until stop(): the latencies and anything that
    was not a status."""

    def __init__(self, socket_path, min_calls=20):
        self.stop_file = socket_path + ".stop-status"
        self.timeout = 5
        self.proc = subprocess.Popen([sys.executable, "-c", "import os\n" + ROOT_STATUS, socket_path, str(min_calls),
                                      self.stop_file, str(self.timeout)], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)

    def stop(self):
        with open(self.stop_file, "w"):
            pass
        out, err = self.proc.communicate(timeout=60)
        if self.proc.returncode != 0:
            raise AssertionError(f"GetStatus client exited {self.proc.returncode}: {err}")
        r = json.loads(out)
        self.latencies, self.failures = r["latencies"], r["failures"]
        return max(self.latencies)


class RepliesTest(HostileTest):
    def start(self, *args):
        d = self.start_daemon(list(args), state_db=TEMPLATE)
        # Its first maintenance steps read the process table on the event loop (100 to 300 ms
        # here with this one): that is the start, not the attack measured.
        time.sleep(3)
        return d

    def assert_root_fast(self, status, what):
        """Root's GetStatus within 200 ms, but for a few calls that met a machine busy with other
        work (two cores shared with other test runs; before, one user held it for the whole
        attack, seconds to minutes): 95 % of them, and every one within 1 s."""
        worst = status.stop()
        lat = sorted(status.latencies)
        p95 = lat[int(len(lat) * 0.95)]
        print(f"{what}: root's GetStatus {len(lat)} calls, median {lat[len(lat) // 2] * 1000:.1f} ms, 95th "
              f"percentile {p95 * 1000:.1f} ms, max {worst * 1000:.1f} ms", file=sys.stderr)
        self.assertEqual(status.failures, [], f"every GetStatus answered within {status.timeout} s")
        # Also under ASan, since the event loop stopped writing the database (an idle ASan
        # trapstatd had p95 280 ms, max 3.5 s while it did; now max 20 ms under these attacks).
        self.assertLess(p95, 0.2, f"root's GetStatus: 95th percentile {p95 * 1000:.0f} ms")
        self.assertLess(worst, 1.0, f"root's GetStatus took {worst * 1000:.0f} ms")


# ---------------------------------------------------------------------------------------------
# A reply over the maximum.

TOO_LARGE = r'''
c = Conn()
say(c.call(json.loads(sys.argv[2])))
say(c.call({"method": "io.trapstat.GetStatus"}))
r = c.call({"method": "io.trapstat.ListProcesses", "parameters": {"comm": "bigcmd", "limit": 100,
                                                                  "includeExited": True}})
say({"processes": len(r["parameters"]["processes"]), "cmdlines": sorted({len(p["cmdline"]) for p in r["parameters"]["processes"]})}
    if isinstance(r, dict) and "parameters" in r and "processes" in r["parameters"] else r)
'''


class TooLarge(RepliesTest):
    def test_reply_over_the_maximum_is_refused(self):
        d = self.start()
        status = RootStatus(d.socket)
        try:
            t0 = time.monotonic()
            refused, after, small = finish(user_script(TOO_LARGE, d.socket, json.dumps(list_big(BIG))))
            took = time.monotonic() - t0
        finally:
            self.assert_root_fast(status, "reply too large")
        print(f"reply too large: {BIG} rows of {CMDLINE} bytes refused in {took:.2f} s", file=sys.stderr)
        self.assertEqual(refused, {"error": "io.trapstat.ReplyTooLarge", "parameters": {"limit": MAX_REPLY}})
        self.assertTrue(is_status(after), f"GetStatus on the same connection: {after!r}")
        self.assertEqual(small, {"processes": 100, "cmdlines": [CMDLINE]})
        # The CLI reads a --limit over 1000 in pages of 1000 (4 MiB each here, under the maximum):
        # every process the one call was refused, and no error.
        p = subprocess.run(["setpriv", f"--reuid={UID}", f"--regid={GID}", "--init-groups",
                            CLI, "--socket", d.socket, "--json", "procs", "--exited", "--comm", "bigcmd", "--limit",
                            str(BIG)], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(json.loads(p.stdout)["processes"]), BIG)
        self.assert_alive(d)


# ---------------------------------------------------------------------------------------------
# A slow reader.

SLOW_READER = r'''
n, chunk, every = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
c = Conn()
t0 = time.monotonic()
c.send({"method": "io.trapstat.ListProcesses", "parameters": {"comm": "bigcmd", "limit": n, "includeExited": True}})
got, first, eof = 0, None, None
c.s.settimeout(30)
while time.monotonic() - t0 < 30:
    try:
        data = c.s.recv(chunk)
    except ConnectionResetError:
        data = b""
    if not data:
        eof = time.monotonic() - t0
        break
    if first is None:
        first = time.monotonic() - t0
    got += len(data)
    time.sleep(every)
say({"bytes": got, "first": first, "eof": eof})
'''


class SlowReader(RepliesTest):
    def test_slow_reader_is_closed_at_the_deadline(self):
        write_timeout = 2.0
        d = self.start("--write-timeout", f"{int(write_timeout * 1000)}ms")
        n = 1500  # some 6 MiB: within the maximum and the user's share
        status = RootStatus(d.socket)
        try:
            # 64 KiB every 0.25 s: progress all the time, 256 KiB/s, about 25 s for the whole reply.
            [r] = finish(user_script(SLOW_READER, d.socket, n, 65536, 0.25))
        finally:
            self.assert_root_fast(status, "slow reader")
        print(f"slow reader: {r['bytes']} bytes taken, first after {r['first']:.2f} s, closed after "
              f"{r['eof'] if r['eof'] is None else round(r['eof'], 2)} s", file=sys.stderr)
        self.assertIsNotNone(r["eof"], "the slow reader was never closed")
        self.assertLess(r["bytes"], n * CMDLINE, "the whole reply went out")
        # From the reply's queueing (about when its first bytes arrive) to the close: the write
        # timeout, plus a busy machine's margin.
        self.assertGreaterEqual(r["eof"] - r["first"], write_timeout - 0.5)
        self.assertLess(r["eof"] - r["first"], write_timeout + 2.0)
        self.assert_alive(d)


# ---------------------------------------------------------------------------------------------
# A query past the wall-time bound.

SLOW_QUERIES = r'''
conns = [Conn() for _ in range(int(sys.argv[2]))]
for c in conns:   # a scan of every process of the user, past each command line to its unit: no match
    c.send({"method": "io.trapstat.ListProcesses", "parameters": {"unit": "*nomatch*", "limit": 100000,
                                                                  "includeExited": True}})
say([c.recv(60) for c in conns])
say(conns[0].call({"method": "io.trapstat.GetStatus"}))
'''


class WallTime(RepliesTest):
    def test_query_past_the_time_limit(self):
        d = self.start("--query-time-limit", "1ms")
        status = RootStatus(d.socket)
        try:
            replies, after = finish(user_script(SLOW_QUERIES, d.socket, 8))
            # A query of root's that reads less than the bound allows: answered. (Not a
            # ListProcesses: any of them reads every process row, to filter or to count what its
            # limit left out.)
            root = call_once(d.socket, {"method": "io.trapstat.Traps", "parameters": {"windowSec": 10}})
        finally:
            self.assert_root_fast(status, "slow queries")
        self.assertEqual(replies, [{"error": "io.trapstat.QueryTooSlow", "parameters": {"limitMsec": 1}}] * 8)
        self.assertTrue(is_status(after), f"GetStatus after QueryTooSlow: {after!r}")
        self.assertNotIn("error", root, f"root's cheap query: {str(root)[:300]}")
        self.assertIsInstance(root["parameters"]["traps"], dict)
        self.assert_alive(d)


# ---------------------------------------------------------------------------------------------
# Many connections, each with a big reply it never reads.

HOARD = r'''
conns = [Conn() for _ in range(int(sys.argv[2]))]
call = json.dumps({"method": "io.trapstat.ListProcesses",
                   "parameters": {"comm": "bigcmd", "limit": int(sys.argv[3]), "includeExited": True}})
for c in conns:
    c.send(call)
say({"sent": len(conns)})
wait_stdin()
# Every call answered (or refused) before any reply is taken: taking one makes room for more.
pending, deadline = {c.s for c in conns}, time.monotonic() + 120
while pending and time.monotonic() < deadline:
    ready, _, _ = select.select(list(pending), [], [], 1)
    pending -= set(ready)
out = {"rows": 0, "errors": {}, "limits": [], "other": [], "unanswered": len(pending)}
for c in conns:
    r = c.recv(60)
    if isinstance(r, dict) and "error" in r:
        out["errors"][r["error"]] = out["errors"].get(r["error"], 0) + 1
        out["limits"].append(r["parameters"].get("limit"))
    elif isinstance(r, dict):
        out["rows"] += 1
    else:
        out["other"].append(r)
say(out)
'''


# Root's call, in a process of its own: reading a big reply in the test's process would hold it.
ROOT_LIST = r'''
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(30)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\0")
chunks = []
while not chunks or b"\0" not in chunks[-1]:
    chunk = s.recv(1 << 20)
    if not chunk:
        break
    chunks.append(chunk)
r = json.loads(b"".join(chunks).split(b"\0")[0])
print(json.dumps(r if "error" in r else {"processes": len(r["parameters"]["processes"]),
                                         "bytes": len(b"".join(chunks).split(b"\0")[0])}))
'''


class Hoard(RepliesTest):
    def test_many_unread_big_replies_do_not_delay_root(self):
        d = self.start()
        conns, n = 64, 1500  # 64 replies of some 6 MiB: 400 MiB if all were queued
        client = user_script(HOARD, d.socket, conns, n)
        status = RootStatus(d.socket)
        try:
            self.assertEqual(read_line(client, 30), {"sent": conns})
            time.sleep(6)  # every query answered (or refused) meanwhile
            # Root's own big reply still fits: the reserve, and what the user's share leaves.
            t0 = time.monotonic()
            root = subprocess.run([sys.executable, "-c", ROOT_LIST, d.socket, json.dumps(list_big(n))],
                                  capture_output=True, text=True, timeout=60)
            root_took = time.monotonic() - t0
            self.assertEqual(root.returncode, 0, root.stderr)
            root = json.loads(root.stdout)
            hwm = proc_status(d.proc.pid, "VmHWM")
        finally:
            self.assert_root_fast(status, "hoard")
        [r] = finish(client)
        print(f"hoard: {conns} connections of {n} rows: {r['rows']} replies queued, errors {r['errors']} "
              f"(limits {sorted(set(r['limits']))[:5]}...), root's {n} rows in {root_took:.2f} s, daemon VmHWM "
              f"{hwm} KiB", file=sys.stderr)
        self.assertEqual(r["other"], [])
        self.assertEqual(r["unanswered"], 0)
        self.assertEqual(r["rows"] + r["errors"].get("io.trapstat.ReplyTooLarge", 0), conns)
        # The user's share is half of three quarters of --max-buffer (12 MiB): one reply of some
        # 6 MiB at a time, the others refused with the room that was left.
        self.assertLessEqual(r["rows"], 2)
        self.assertNotIn("error", root, f"root's ListProcesses: {str(root)[:300]}")
        self.assertEqual(root["processes"], n)
        # Each refusal says how much would have fitted: less than the reply (the same as root's).
        self.assertTrue(all(limit < root["bytes"] for limit in r["limits"]), (root["bytes"], r["limits"]))
        if not sanitized():
            self.assertLess(hwm, 128 << 10, f"daemon peak RSS {hwm} KiB")
        self.assert_alive(d)


if __name__ == "__main__":
    require_root_and_bpf()
    unittest.main(verbosity=2)
