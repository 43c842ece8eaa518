# SPDX-License-Identifier: MIT
"""trapstat-exporter under a hostile local user (a real unprivileged one), started as its unit
starts it: with the unit's LimitNOFILE (read from the unit file, so that the two cannot drift),
against a real trapstatd.

- 1100 slow connections (one byte a second, or nothing at all) held open: a scrape answers
  within 5 s (beyond its wait for trapstatd) with trapstat_up 1, at most --max-connections are open at once (the oldest
  unanswered ones give way), every slow one is closed by its deadline whatever bytes it still
  sends (the headers' one, or the body's one for a body sent a byte a second), and the log
  says so in a handful of lines.
- With the open-files limit lowered below the cap while it runs (accept() fails with EMFILE),
  the same 1100 connections: the cap follows the limit (said once) and a scrape answers within
  5 s; the exporter does not spin (its CPU time over 10 s, from /proc/PID/stat, stays under
  0.5 s), its log stays a handful of lines, and once the user's connections are gone a scrape
  still answers.
- Requests no scrape sends (bad request lines and headers, HTTP/2.0, chunked or oversized
  bodies, two lengths, pipelined requests, bytes the parser must not trip on, headers without
  spaces): each its own
  status, one reply per connection, then the connection is closed.
- A client that asks for a reply of 57 MB and never reads it (a stand-in for trapstatd with
  20000 units, 36 series each besides the traps, the fault time's histogram among them) is
  closed at the send deadline; the exporter goes on serving."""
import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from daemon import Daemon, binary, create_user, remove_user, require_root_and_bpf, user_name  # noqa: E402
from test_exporter import StandIn, counters, faults  # noqa: E402

USER = user_name("trapstat-hostile-exp")
USER_PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
DEFAULT_MAX_CONNECTIONS = 512  # trapstat-exporter's default (--help says so; checked below)
HEADER_TIMEOUT = 10  # s, the default
BODY_TIMEOUT = 3  # s, given, to tell it apart from the headers' deadline
MARGIN = 3  # s, for a busy machine and the ASan build

# Run as the user: argv = port, slow, silent, body, seconds. Opens slow + silent + body
# connections evenly interleaved (so that those the cap closes at once are of every kind), prints
# {"connected": n}, then once a second sends one byte of a request that never ends on each
# "slow" one, one byte of a promised 100-byte body on each "body" one (its headers sent whole at
# once), and nothing on the silent ones; until every connection is closed by the exporter or
# the time is up. Prints each connection's kind, life (s from its connect to the exporter's
# close, null if still open), bytes sent, whether any reply came, and how many were open 5 s
# after the last connect.
ATTACK = r'''
import json, selectors, socket, sys, time
port, slow, silent, body, seconds = map(int, sys.argv[1:6])
REQUEST = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 4000
HEAD = b"POST /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n"
kinds = [k for _, k in sorted(((i + 0.5) / n, k) for k, n in (("slow", slow), ("silent", silent), ("body", body))
                               for i in range(n))]
sel = selectors.DefaultSelector()
conns = []
for kind in kinds:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    c = {"kind": kind, "s": s, "start": time.monotonic(), "end": None, "sent": 0, "reply": False}
    if c["kind"] == "body":
        s.sendall(HEAD)
    s.setblocking(False)
    conns.append(c)
    sel.register(s, selectors.EVENT_READ, c)
print(json.dumps({"connected": len(conns)}), flush=True)

def close(c):
    c["end"] = time.monotonic()
    sel.unregister(c["s"])
    c["s"].close()

last_connect = time.monotonic()
start = last_connect
next_byte = start + 1
open_after_5s = None
while time.monotonic() - start < seconds and any(c["end"] is None for c in conns):
    now = time.monotonic()
    if open_after_5s is None and now - last_connect >= 5:
        open_after_5s = sum(c["end"] is None for c in conns)
    if now >= next_byte:
        for c in conns:
            if c["end"] is None and c["kind"] != "silent":
                data = REQUEST if c["kind"] == "slow" else b"x" * 100
                try:
                    c["sent"] += c["s"].send(data[c["sent"]:c["sent"] + 1])
                except BlockingIOError:
                    pass
                except OSError:
                    close(c)
        next_byte += 1
    wake = next_byte if open_after_5s is not None else min(next_byte, last_connect + 5)
    for key, _ in sel.select(timeout=max(0.0, wake - time.monotonic())):
        c = key.data
        if c["end"] is not None:
            continue
        try:
            data = c["s"].recv(65536)
        except BlockingIOError:
            continue
        except OSError:
            data = b""
        if data:
            c["reply"] = True
        else:
            close(c)
print(json.dumps({"openAfter5s": open_after_5s, "conns": [
    {"kind": c["kind"], "life": None if c["end"] is None else c["end"] - c["start"], "sent": c["sent"],
     "reply": c["reply"]} for c in conns]}), flush=True)
'''


def unit_nofile():
    """LimitNOFILE= of the built trapstat-exporter.service."""
    units = os.path.join(os.path.dirname(os.path.dirname(binary("TRAPSTAT_EXPORTER"))), "units")
    with open(os.path.join(units, "trapstat-exporter.service")) as f:
        m = re.search(r"^LimitNOFILE=([0-9]+)$", f.read(), re.M)
    if not m:
        raise AssertionError("trapstat-exporter.service sets no LimitNOFILE")
    return int(m.group(1))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    """utime + stime of a process, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def scrape(port, timeout=30):
    """(seconds, status, body) of one GET /metrics on a fresh connection. The seconds are the
    exporter's own: the scrape's whole time less what it waited for trapstatd (its
    trapstat_scrape_duration_seconds), which the exporter does not control: an ASan trapstatd on
    a loaded machine may take seconds to answer, slow clients or not."""
    start = time.monotonic()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as r:
        body = r.read().decode()
        seconds = time.monotonic() - start
    m = re.search(r"^trapstat_scrape_duration_seconds ([0-9.]+)$", body, re.M)
    if m:
        print(f"a scrape: {seconds:.3f} s, of which {float(m.group(1)):.3f} s waiting for trapstatd", file=sys.stderr)
        seconds -= float(m.group(1))
    return seconds, r.status, body


def start_exporter(exe, socket_path, log_path, nofile, *args):
    """The exporter under prlimit --nofile=nofile; (process, port) once it listens."""
    port = free_port()
    log = open(log_path, "w")
    p = subprocess.Popen(["prlimit", f"--nofile={nofile}:{nofile}", "--", exe, "--socket", socket_path,
                          "--listen", f"127.0.0.1:{port}", *args], stderr=log)
    log.close()
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return p, port
        except OSError:
            if p.poll() is not None or time.monotonic() > deadline:
                with open(log_path) as f:
                    raise AssertionError(f"exporter did not listen: {f.read()}")
            time.sleep(0.05)


def raise_nofile():
    """The attacking client holds 1100 sockets: room for them (rlimits survive setpriv)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))


def attack(uid, gid, port, slow, silent, body, seconds):
    """The user's client (ATTACK) started; returns the process once its connections are open."""
    p = subprocess.Popen(["setpriv", f"--reuid={uid}", f"--regid={gid}", "--init-groups", USER_PYTHON, "-c", ATTACK,
                          str(port), str(slow), str(silent), str(body), str(seconds)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=raise_nofile)
    line = p.stdout.readline()
    if not line:
        p.kill()
        raise AssertionError(f"the attacking client failed: {p.communicate()[1]}")
    assert json.loads(line)["connected"] == slow + silent + body
    return p


def attack_result(p, timeout):
    out, err = p.communicate(timeout=timeout)
    if p.returncode != 0:
        raise AssertionError(f"the attacking client exited {p.returncode}: {err}")
    return json.loads(out)


def raw_request(port, data, timeout=10):
    """Sends data on a fresh connection and reads until the exporter closes it: the bytes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return out
            out += chunk


def log_lines(path):
    with open(path) as f:
        return [line for line in f.read().splitlines() if line]


def setUpModule():
    global UID, GID
    pw = create_user(USER)
    UID, GID = pw.pw_uid, pw.pw_gid


def tearDownModule():
    remove_user(USER)


class HostileExporter(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="trapstat-hostile-exporter-")
        cls.daemon = Daemon().__enter__()
        cls.nofile = unit_nofile()

    @classmethod
    def tearDownClass(cls):
        cls.daemon.__exit__(None, None, None)
        shutil.rmtree(cls.dir, ignore_errors=True)

    def setUp(self):
        self.exporter = None
        self.client = None

    def tearDown(self):
        if self.client and self.client.poll() is None:
            self.client.kill()
            self.client.communicate()
        if self.exporter and self.exporter.poll() is None:
            self.exporter.send_signal(signal.SIGTERM)
            try:
                self.exporter.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.exporter.kill()
                self.exporter.wait()
                raise AssertionError("the exporter did not stop within 10 s of SIGTERM")
            self.assertEqual(self.exporter.returncode, 0)
        with open(self.log_path) as f:
            self.assertNotRegex(f.read(), r"Sanitizer|runtime error")

    def start(self, name, *args):
        """The exporter on the class's trapstatd; --timeout 20s, that a slow ASan trapstatd on a
        loaded machine still answers (up 1): scrape() counts the exporter's own time only."""
        self.log_path = os.path.join(self.dir, f"{name}.log")
        self.exporter, port = start_exporter(binary("TRAPSTAT_EXPORTER"), self.daemon.socket, self.log_path,
                                             self.nofile, "--timeout", "20s", *args)
        return port

    def test_default_cap_fits_the_unit(self):
        """The unit's LimitNOFILE holds the default cap and the exporter's own 32."""
        help_text = subprocess.run([binary("TRAPSTAT_EXPORTER"), "--help"], capture_output=True, text=True,
                                   check=True).stdout
        self.assertRegex(help_text, rf"--max-connections N +at most N HTTP connections \(default "
                                    rf"{DEFAULT_MAX_CONNECTIONS},")
        self.assertGreaterEqual(self.nofile, DEFAULT_MAX_CONNECTIONS + 32)
        # Started under it, it serves all of them: nothing to say at start.
        port = self.start("fits")
        self.assertEqual(scrape(port)[1], 200)
        self.assertEqual(log_lines(self.log_path), [])

    def test_fd_limit_below_the_cap_at_start(self):
        """Started with fewer open files than the cap needs (and a hard limit it cannot pass): it
        says so once and serves fewer, the oldest unanswered connection giving way."""
        self.log_path = os.path.join(self.dir, "start-limit.log")
        self.exporter, port = start_exporter(binary("TRAPSTAT_EXPORTER"), self.daemon.socket, self.log_path, 100,
                                             "--timeout", "20s")
        self.assertEqual(log_lines(self.log_path), [
            "trapstat-exporter: open files limited to 100: at most 68 HTTP connections, not 512 (--max-connections)"])
        self.client = attack(UID, GID, port, 0, 200, 0, 7)
        seconds, status, body = scrape(port)
        got = attack_result(self.client, 30)
        self.assertEqual(status, 200)
        self.assertIn("\ntrapstat_up 1\n", "\n" + body)
        self.assertLess(seconds, 5.0)
        # 68 places, one of them the scrape's for a while.
        self.assertIn(got["openAfter5s"], (67, 68))
        lines = log_lines(self.log_path)
        self.assertEqual(len(lines), 2, lines)
        self.assertIn("68 connections, the most allowed", lines[1])

    def test_slow_clients_beside_a_scrape(self):
        port = self.start("slow", "--body-timeout", f"{BODY_TIMEOUT}s")
        self.client = attack(UID, GID, port, 500, 500, 100, HEADER_TIMEOUT + 3 * MARGIN)
        latencies = []
        for _ in range(3):
            seconds, status, body = scrape(port)
            latencies.append(seconds)
            self.assertEqual(status, 200)
            self.assertIn("\ntrapstat_up 1\n", "\n" + body)
            time.sleep(0.5)
        got = attack_result(self.client, HEADER_TIMEOUT + 4 * MARGIN)
        conns = got["conns"]
        lives = {k: [c["life"] for c in conns if c["kind"] == k] for k in ("slow", "silent", "body")}
        print(f"scrapes beside 1100 slow connections: {', '.join(f'{s:.3f}' for s in latencies)} s; open 5 s after "
              f"the last connect: {got['openAfter5s']}; longest lives: "
              f"{ {k: max((x for x in v if x is not None), default=None) for k, v in lives.items()} }",
              file=sys.stderr)
        self.assertLess(max(latencies), 5.0)
        # The cap: beyond it, the oldest unanswered connections were closed at once.
        self.assertLessEqual(got["openAfter5s"], DEFAULT_MAX_CONNECTIONS)
        # Every one closed by the exporter, none answered, none kept past its deadline.
        self.assertEqual([c for c in conns if c["life"] is None], [])
        self.assertEqual([c for c in conns if c["reply"]], [])
        self.assertLessEqual(max(lives["slow"] + lives["silent"]), HEADER_TIMEOUT + MARGIN)
        self.assertLessEqual(max(lives["body"]), BODY_TIMEOUT + MARGIN)
        # Progress did not keep them: the slow ones that reached the deadline had sent a byte a
        # second all along, the body ones too, and were closed all the same.
        survivors = [c for c in conns if c["kind"] == "slow" and c["life"] >= HEADER_TIMEOUT - 1]
        self.assertGreater(len(survivors), 100)
        self.assertGreaterEqual(min(c["sent"] for c in survivors), HEADER_TIMEOUT - 5)
        body_survivors = [c for c in conns if c["kind"] == "body" and c["life"] >= BODY_TIMEOUT - 1]
        self.assertGreater(len(body_survivors), 10)
        # A handful of lines: each condition at most once per 10 s.
        lines = log_lines(self.log_path)
        print("exporter log:\n" + "\n".join(lines), file=sys.stderr)
        self.assertLessEqual(len(lines), 8)
        self.assertTrue(any("the most allowed" in line for line in lines), lines)
        self.assertTrue(any("request line and headers were not in within 10000 ms" in line for line in lines), lines)
        self.assertTrue(any("request body was not in within 3000 ms" in line for line in lines), lines)
        # And it still serves.
        self.assertEqual(scrape(port)[1], 200)

    def test_fd_limit_below_the_cap(self):
        """The open-files limit lowered while it runs (so accept() itself fails with EMFILE)."""
        port = self.start("emfile")
        subprocess.run(["prlimit", f"--pid={self.exporter.pid}", "--nofile=128:128"], check=True)
        self.client = attack(UID, GID, port, 550, 550, 0, 10 + MARGIN)
        # The cap follows the limit, so a scrape gets in as it does at the cap.
        seconds, status, body = scrape(port)
        self.assertEqual(status, 200)
        self.assertIn("\ntrapstat_up 1\n", "\n" + body)
        self.assertLess(seconds, 5.0)
        cpu = cpu_seconds(self.exporter.pid)
        time.sleep(10)
        cpu = cpu_seconds(self.exporter.pid) - cpu
        lines = log_lines(self.log_path)
        print(f"exporter at its fd limit beside 1100 connections: a scrape in {seconds:.3f} s, {cpu:.2f} s CPU in 10 s, "
              f"{len(lines)} log lines:\n"
              + "\n".join(lines), file=sys.stderr)
        self.assertLess(cpu, 0.5)
        self.assertLessEqual(len(lines), 8)
        self.assertTrue(any("cannot accept connections" in line and "Too many open files" in line for line in lines),
                        lines)
        self.assertEqual(len([line for line in lines if "out of descriptors at" in line]), 1, lines)
        # Once the user's connections are gone, scrapes are answered again.
        attack_result(self.client, 10 + 3 * MARGIN)
        seconds, status, body = scrape(port)
        self.assertEqual(status, 200)
        self.assertIn("\ntrapstat_up 1\n", "\n" + body)
        self.assertLess(seconds, 5.0)

    def test_requests_no_scrape_sends(self):
        port = self.start("malformed")
        get = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        cases = [
            (b"GARBAGE\r\n\r\n", 400),
            (b"\r\n\r\n", 400),
            (b"GET  /metrics HTTP/1.1\r\n\r\n", 400),
            (b"GET /met\0rics HTTP/1.1\r\n\r\n", 400),
            (b"GET /metrics HTTP/2.0\r\n\r\n", 505),
            (b"GET /metrics\r\n\r\n", 400),
            (get + b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501),
            (get + b"Content-Length: 2000\r\n\r\n", 413),
            (get + b"Content-Length: -1\r\n\r\n", 400),
            (get + b"Content-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
            (get + b"Bad Name: x\r\n\r\n", 400),
            (get + b" folded\r\n\r\n", 400),
            (get + b"X: " + b"a" * 20000 + b"\r\n\r\n", 431),
            (b"POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nabcde", 405),
            (b"GET /nothing HTTP/1.1\r\n\r\n", 404),
            (b"GET http://127.0.0.1/metrics?x=1 HTTP/1.1\r\n\r\n", 200),
            (b"GET /metrics HTTP/1.0\r\n\r\n", 200),
            (b"GET /metrics HTTP/1.1\r\nHost:127.0.0.1\r\nX:\r\n\r\n", 200),
            (get + b"Content-Length: 3\r\nAccept: \xff\xfe\r\n\r\nabc", 200),
        ]
        for data, status in cases:
            with self.subTest(request=data[:60]):
                out = raw_request(port, data)
                self.assertTrue(out.startswith(f"HTTP/1.1 {status} ".encode()), out[:200])
                self.assertIn(b"\r\nConnection: close\r\n", out.split(b"\r\n\r\n", 1)[0] + b"\r\n")
                if status == 405:
                    self.assertIn(b"\r\nAllow: GET, HEAD\r\n", out)
        # HEAD: the length of the GET, no body.
        out = raw_request(port, b"HEAD /metrics HTTP/1.1\r\n\r\n")
        head, body = out.split(b"\r\n\r\n", 1)
        self.assertEqual(body, b"")
        self.assertGreater(int(re.search(rb"\r\nContent-Length: ([0-9]+)\r\n", head).group(1)), 100)
        # Two pipelined requests: one reply, then the connection is closed.
        out = raw_request(port, b"GET /metrics HTTP/1.1\r\n\r\nGET /nothing HTTP/1.1\r\n\r\n")
        self.assertEqual(out.count(b"HTTP/1.1 "), 1)
        self.assertTrue(out.startswith(b"HTTP/1.1 200 OK\r\n"))
        self.assertEqual(scrape(port)[1], 200)
        self.assertEqual(log_lines(self.log_path), [])

    def test_reader_that_never_reads(self):
        """A 66 MB reply (20000 units of a stand-in; 15 MB before the fault time's 32 series a
        unit) to a client that never reads it: more than the kernel buffers for it (the send
        buffer grows to 4 MiB, tcp_wmem)."""
        units = [{"unit": f"u{i}.service", "processes": 1, "counters": counters(faults(2, 0, 2, 0, 2), {"UD": 1})}
                 for i in range(20000)]
        path = os.path.join(self.dir, "standin.socket")
        standin = StandIn(path, {"io.trapstat.UnitTotals": {
            "sinceUsec": 1, "units": units, "otherUnits": 0,
            "total": counters(faults(40000, 0, 40000, 0, 40000), {"UD": 20000})},
            "io.trapstat.GetStatus": {"dropsByKind": []}})
        self.addCleanup(standin.close)
        self.log_path = os.path.join(self.dir, "reader.log")
        self.exporter, port = start_exporter(binary("TRAPSTAT_EXPORTER"), path, self.log_path, self.nofile,
                                             "--unit-limit", "20000", "--timeout", "60s", "--send-timeout", "2s")
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", port))
            s.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")

            def said():
                return any("did not take its reply within 2000 ms" in line for line in log_lines(self.log_path))
            deadline = time.monotonic() + 120
            while not said():
                self.assertLess(time.monotonic(), deadline, log_lines(self.log_path))
                time.sleep(0.2)
            # What had gone out, and then the end: far less than the reply.
            got = b""
            s.settimeout(10)
            try:
                while chunk := s.recv(1 << 20):
                    got += chunk
            except ConnectionResetError:
                pass
            length = int(re.search(rb"\r\nContent-Length: ([0-9]+)\r\n", got).group(1))
            print(f"a reply of {length} bytes, {len(got)} taken before the send deadline", file=sys.stderr)
            self.assertGreater(length, 50_000_000)
            self.assertLess(len(got), length)
        # It goes on: a scrape is answered.
        self.assertTrue(raw_request(port, b"HEAD /metrics HTTP/1.1\r\n\r\n", timeout=60).startswith(
            b"HTTP/1.1 200 OK\r\n"))


if __name__ == "__main__":
    require_root_and_bpf()
    unittest.main(verbosity=2)
