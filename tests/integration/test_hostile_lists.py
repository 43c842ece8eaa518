# SPDX-License-Identifier: MIT
"""Never silently, for lists and for odd JSON, as a real unprivileged user.

A user runs more processes than ListProcesses gives by default (1000): the reply says how many it
left out, exactly (otherProcesses), and a raised limit or a narrower call gets them; Top says the
same of its rows. trapstat procs and trapstat top -b say on stderr how many of how many they show
and how to get the rest; their --json carries the member. A duplicate key or "\\u0000" in a string,
at any depth of a call, gets InvalidParameter naming the parameter (or the member of the call),
and the same connection answers GetStatus afterwards."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import (user_name, Daemon, copy_for_users, create_user, remove_user,  # noqa: E402
                    require_root_and_bpf, wait_for)

USER = user_name("trapstat-hostile-lists")
USER_PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable

DEFAULT_LIMIT = 1000  # ListProcesses's (common/defaults.h LIST_DEFAULT_LIMIT)
MORE = 10             # processes past it
SLEEPERS = DEFAULT_LIMIT + MORE
COMM = "lst-sleeper"  # a copy of sleep(1) under this name: the user's processes are told apart by it

# As the user: SLEEPERS sleepers; their pids on stdout; killed once stdin gives a line (or closes).
SPAWN = r'''
import json, subprocess, sys
procs = [subprocess.Popen([sys.argv[2], "600"], stdin=subprocess.DEVNULL) for _ in range(int(sys.argv[1]))]
print(json.dumps([p.pid for p in procs]), flush=True)
sys.stdin.readline()
for p in procs:
    p.kill()
for p in procs:
    p.wait()
'''

# As the user, on ONE connection: each raw call (bytes as given, "\\u0000" escapes and duplicate
# keys intact), then GetStatus; every reply on stdout as a JSON list.
CALLS = r'''
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.settimeout(20)
buf = b""
def read():
    global buf
    while b"\0" not in buf:
        try:
            chunk = s.recv(65536)
        except (socket.timeout, ConnectionResetError) as e:
            return "NO REPLY: " + type(e).__name__
        if not chunk:
            return "EOF"
        buf += chunk
    msg, buf = buf.split(b"\0", 1)
    return json.loads(msg)
out = []
for call in json.loads(sys.stdin.read()):
    s.sendall(call.encode() + b"\0")
    out.append(read())
    s.sendall(b'{"method":"io.trapstat.GetStatus"}\0')
    out.append(read())
print(json.dumps(out))
'''


def setUpModule():
    global UID, GID, SHARED, TRAPSTAT, SLEEPER
    require_root_and_bpf()
    pw = create_user(USER)
    UID, GID = pw.pw_uid, pw.pw_gid
    SHARED = tempfile.mkdtemp(prefix="trapstat-hostile-lists-")
    TRAPSTAT = copy_for_users(SHARED, "TRAPSTAT")["TRAPSTAT"]
    SLEEPER = shutil.copy2(shutil.which("sleep"), os.path.join(SHARED, COMM))
    os.chmod(SLEEPER, 0o755)


def tearDownModule():
    shutil.rmtree(SHARED, ignore_errors=True)
    remove_user(USER)


def as_user(argv):
    return ["setpriv", f"--reuid={UID}", f"--regid={GID}", "--init-groups", *map(str, argv)]


def user_trapstat(socket, *args):
    """trapstat as the user; the CompletedProcess."""
    return subprocess.run(as_user([TRAPSTAT, "--socket", socket, *args]), capture_output=True, text=True, timeout=60)


def user_calls(socket, calls):
    """The raw calls as the user on one connection, each followed by GetStatus: the replies."""
    p = subprocess.run(as_user([USER_PYTHON, "-c", CALLS, socket]), input=json.dumps(calls), capture_output=True,
                       text=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError(f"client exited {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def call(socket, method, parameters):
    """One call as the user; the reply's parameters (an error fails the test)."""
    [reply, _] = user_calls(socket, [json.dumps({"method": "io.trapstat." + method, "parameters": parameters})])
    if not isinstance(reply, dict) or "error" in reply:
        raise AssertionError(f"{method} {parameters}: {reply!r}")
    return reply["parameters"]


def invalid(member):
    return {"error": "org.varlink.service.InvalidParameter", "parameters": {"parameter": member}}


class Lists(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()
        os.chmod(cls.daemon.dir, 0o755)  # the user reaches the socket
        cls.daemon.start()
        cls.spawner = subprocess.Popen(as_user([USER_PYTHON, "-c", SPAWN, SLEEPERS, SLEEPER]), stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, text=True)
        try:
            cls.pids = json.loads(cls.spawner.stdout.readline())
            assert len(cls.pids) == SLEEPERS, cls.pids
            # Every sleeper faulted at its start: once the daemon has them all, as processes and in
            # Top's window, the counts below are exact.
            sock = cls.daemon.socket
            wait_for(lambda: len(call(sock, "ListProcesses", {"comm": COMM, "limit": 100000})["processes"]) == SLEEPERS
                     and len(call(sock, "Top", {"comm": COMM, "windowSec": 3600, "limit": 10000})["rows"]) == SLEEPERS,
                     timeout=90, interval=1, what=f"the {SLEEPERS} sleepers in ListProcesses and Top")
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            cls.spawner.communicate("go\n", timeout=60)
        finally:
            code = cls.daemon.stop()
            log = cls.daemon.read_log()
            cls.daemon.cleanup()
            if code != 0:
                raise AssertionError(f"trapstatd exited {code}:\n{log[-4000:]}")

    def test_list_processes_says_what_its_limit_left_out(self):
        sock = self.daemon.socket
        default = call(sock, "ListProcesses", {"comm": COMM})
        self.assertEqual(len(default["processes"]), DEFAULT_LIMIT)
        self.assertEqual(default["otherProcesses"], MORE)
        # The rest: a raised limit, or a narrower call.
        raised = call(sock, "ListProcesses", {"comm": COMM, "limit": SLEEPERS})
        self.assertEqual(len(raised["processes"]), SLEEPERS)
        self.assertEqual(raised["otherProcesses"], 0)
        self.assertEqual({p["pid"] for p in raised["processes"]}, set(self.pids))
        shown = {p["pid"] for p in default["processes"]}
        left_out = [p for p in raised["processes"] if p["pid"] not in shown]
        self.assertEqual(len(left_out), MORE)
        # Newest first: those left out were seen first.
        self.assertLessEqual(max(p["firstSeenUsec"] for p in left_out),
                             min(p["firstSeenUsec"] for p in default["processes"]))
        for pid in (p["pid"] for p in left_out):
            one = call(sock, "ListProcesses", {"pid": pid})
            self.assertEqual([p["pid"] for p in one["processes"]], [pid])
            self.assertEqual(one["otherProcesses"], 0)
        small = call(sock, "ListProcesses", {"comm": COMM, "limit": 3})
        self.assertEqual((len(small["processes"]), small["otherProcesses"]), (3, SLEEPERS - 3))

    def test_pages_are_the_list_whole(self):
        """Page after page (after: the previous reply's next): every process of the one call, once
        each and in its order; otherProcesses is what comes after each page, and the last has no
        next."""
        sock = self.daemon.socket
        whole = call(sock, "ListProcesses", {"comm": COMM, "limit": 100000})
        self.assertEqual((len(whole["processes"]), whole["otherProcesses"]), (SLEEPERS, 0))
        self.assertNotIn("next", whole)
        ident = [(p["pid"], p["startTime"]) for p in whole["processes"]]
        for size in (DEFAULT_LIMIT, 333, 97):
            got, after = [], None
            while True:
                page = call(sock, "ListProcesses", {"comm": COMM, "limit": size, **({"after": after} if after else {})})
                got += [(p["pid"], p["startTime"]) for p in page["processes"]]
                self.assertEqual(page["otherProcesses"], SLEEPERS - len(got), f"pages of {size}")
                if not page["otherProcesses"]:
                    self.assertNotIn("next", page)
                    break
                after = page["next"]
            self.assertEqual(got, ident, f"pages of {size}")

    def test_a_cursor_shows_no_more_than_the_call_may_see(self):
        """after only says where a page begins: a cursor made up to begin past everything still
        gives the user their own processes alone, and one not of the daemon's form is refused,
        the connection answering on."""
        sock = self.daemon.socket
        forged = call(sock, "ListProcesses", {"after": f"{2**62}.{2**62}", "limit": 100000, "includeExited": True})
        self.assertEqual({p["uid"] for p in forged["processes"]}, {UID})
        self.assertEqual(sum(p["comm"] == COMM for p in forged["processes"]), SLEEPERS)
        # Past the oldest: nothing.
        oldest = min(p["firstSeenUsec"] for p in forged["processes"])
        self.assertEqual(call(sock, "ListProcesses", {"after": f"{oldest}.1", "comm": COMM})["processes"], [])
        bad = ["", "1", "1.", ".1", "1.0", "-1.5", "1.-5", "+1.5", " 1.5", "1.5 ", "1.2.3", "0x10.5", "1,5",
               "\u0661.\u0665", "1.5\n", "18446744073709551616.1", "9223372036854775808.1", "1.9223372036854775808",
               "1" * 5000 + ".1"]
        calls = [json.dumps({"method": "io.trapstat.ListProcesses", "parameters": {"after": b}}) for b in bad]
        calls += [json.dumps({"method": "io.trapstat.ListProcesses", "parameters": {"after": v}})
                  for v in (5, None, ["1.5"], {"a": "1.5"})]
        replies = user_calls(sock, calls)
        for what, reply, status in zip(bad + ["int", "null", "array", "object"], replies[0::2], replies[1::2]):
            if what == "null":  # an optional member given as null: absent
                self.assertIn("parameters", reply, what)
            else:
                self.assertEqual(reply, invalid("after"), what[:40])
            self.assertIn("processesTracked", status.get("parameters", {}), what[:40])

    def test_cli_procs_reads_pages(self):
        """A --limit over the 1000 of one call is read page by page: the same processes and order
        as one call, the note and --json's otherProcesses counting what is left."""
        sock = self.daemon.socket
        whole = [p["pid"] for p in call(sock, "ListProcesses", {"comm": COMM, "limit": 100000})["processes"]]
        p = user_trapstat(sock, "--json", "procs", "--comm", COMM, "--limit", str(SLEEPERS - 5))
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        reply = json.loads(p.stdout)
        self.assertEqual([q["pid"] for q in reply["processes"]], whole[:SLEEPERS - 5])
        self.assertEqual(reply["otherProcesses"], 5)
        # Where the rest begins, as the daemon said: the five oldest.
        rest = call(sock, "ListProcesses", {"comm": COMM, "after": reply["next"]})
        self.assertEqual([q["pid"] for q in rest["processes"]], whole[SLEEPERS - 5:])
        p = user_trapstat(sock, "procs", "--comm", COMM, "--limit", str(SLEEPERS - 5), "--csv")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([int(line.split(",")[0]) for line in p.stdout.splitlines()[1:]], whole[:SLEEPERS - 5])
        self.assertEqual(p.stderr, f"trapstat: {SLEEPERS - 5} of {SLEEPERS} processes shown; narrow with "
                                   f"--comm/--unit/--container/--pid or raise --limit (at most 100000)\n")

    def test_top_says_what_its_limit_left_out(self):
        reply = call(self.daemon.socket, "Top", {"comm": COMM, "windowSec": 3600, "limit": 7})
        self.assertEqual(len(reply["rows"]), 7)
        self.assertEqual(reply["otherProcesses"], SLEEPERS - 7)
        everyone = call(self.daemon.socket, "Top", {"comm": COMM, "windowSec": 3600, "limit": SLEEPERS})
        self.assertEqual((len(everyone["rows"]), everyone["otherProcesses"]), (SLEEPERS, 0))

    def test_cli_procs_says_how_to_get_the_rest(self):
        sock = self.daemon.socket
        p = user_trapstat(sock, "procs", "--comm", COMM)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(p.stdout.splitlines()), 1 + DEFAULT_LIMIT)  # a header, then the rows
        self.assertEqual(p.stderr, f"trapstat: {DEFAULT_LIMIT} of {SLEEPERS} processes shown; narrow with "
                                   f"--comm/--unit/--container/--pid or raise --limit (at most 100000)\n")
        csv = user_trapstat(sock, "procs", "--comm", COMM, "--csv")
        self.assertEqual(len(csv.stdout.splitlines()), 1 + DEFAULT_LIMIT)
        self.assertEqual(csv.stderr, p.stderr)
        # What the note says works: with --limit every process is there, and no note.
        p = user_trapstat(sock, "procs", "--comm", COMM, "--limit", str(SLEEPERS))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(p.stdout.splitlines()), 1 + SLEEPERS)
        self.assertEqual(p.stderr, "")
        p = user_trapstat(sock, "procs", "--pid", str(self.pids[0]))
        self.assertEqual((len(p.stdout.splitlines()), p.stderr), (2, ""))
        # --json: the reply, with the member; nothing on stderr.
        p = user_trapstat(sock, "--json", "procs", "--comm", COMM)
        self.assertEqual(p.stderr, "")
        reply = json.loads(p.stdout)
        self.assertEqual((len(reply["processes"]), reply["otherProcesses"]), (DEFAULT_LIMIT, MORE))

    def test_cli_top_says_how_to_get_the_rest(self):
        sock = self.daemon.socket
        args = ["top", "-b", "-n", "1", "--window", "1h", "--comm", COMM]
        p = user_trapstat(sock, *args, "--limit", "7")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, f"trapstat: 7 of {SLEEPERS} processes shown; narrow with "
                                   f"--pid/--user/--unit/--comm/--container or raise --limit (at most 10000)\n")
        self.assertEqual(sum(COMM in line for line in p.stdout.splitlines()), 7)
        p = user_trapstat(sock, *args, "--limit", str(SLEEPERS))
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        self.assertEqual(sum(COMM in line for line in p.stdout.splitlines()), SLEEPERS)
        p = user_trapstat(sock, "--json", *args, "--limit", "7")
        reply = json.loads(p.stdout)
        self.assertEqual((len(reply["rows"]), reply["otherProcesses"], p.stderr), (7, SLEEPERS - 7, ""))


# (what, the call as sent, the reply expected)
ODD_JSON = [
    ("duplicate parameter", r'{"method":"io.trapstat.ListProcesses","parameters":{"limit":5,"limit":100000}}',
     invalid("limit")),
    ("duplicate parameter, spelled apart",
     r'{"method":"io.trapstat.ListProcesses","parameters":{"\u0063omm":"a","comm":"b"}}', invalid("comm")),
    ("duplicate key two levels down", r'{"method":"io.trapstat.Top","parameters":{"pids":[1,{"a":1,"a":2}]}}',
     invalid("pids")),
    ("duplicate key four levels down",
     r'{"method":"io.trapstat.Top","parameters":{"limit":1,"pids":[[{"x":[{"k":1,"k":1}]}]]}}', invalid("pids")),
    ("\\u0000 in a parameter", r'{"method":"io.trapstat.ListProcesses","parameters":{"comm":"lst\u0000*"}}',
     invalid("comm")),
    ("\\u0000 in an enum", r'{"method":"io.trapstat.Top","parameters":{"sortBy":"user\u0000x"}}', invalid("sortBy")),
    ("\\u0000 deep down", r'{"method":"io.trapstat.Top","parameters":{"pids":[1,["\u0000"]]}}', invalid("pids")),
    ("\\u0000 in a parameter's name", r'{"method":"io.trapstat.Top","parameters":{"li\u0000mit":5}}',
     invalid("li\\u0000mit")),
    ("\\u0000 in a key deep down", r'{"method":"io.trapstat.Top","parameters":{"unit":{"\u0000":1}}}',
     invalid("unit")),
    ("duplicate method", r'{"method":"io.trapstat.GetStatus","method":"io.trapstat.Top"}', invalid("method")),
    ("\\u0000 in the method", r'{"method":"io.trapstat.GetStatus\u0000.Top"}', invalid("method")),
    ("duplicate parameters", r'{"method":"io.trapstat.Top","parameters":{},"parameters":{"limit":1}}',
     invalid("parameters")),
    ("duplicate more", r'{"method":"io.trapstat.Watch","more":true,"more":true}', invalid("more")),
]


class OddJson(unittest.TestCase):
    def test_duplicate_keys_and_nul_are_answered(self):
        d = Daemon()
        os.chmod(d.dir, 0o755)
        with d:
            replies = user_calls(d.socket, [raw for _, raw, _ in ODD_JSON])
            self.assertEqual(len(replies), 2 * len(ODD_JSON))
            for i, (what, raw, expected) in enumerate(ODD_JSON):
                with self.subTest(what):
                    self.assertEqual(replies[2 * i], expected, raw)
                    status = replies[2 * i + 1]
                    self.assertTrue(isinstance(status, dict) and "version" in status.get("parameters", {}),
                                    f"after {raw} the same connection answered GetStatus with {status!r}")
            self.assertIsNone(d.proc.poll())


if __name__ == "__main__":
    unittest.main(verbosity=2)
