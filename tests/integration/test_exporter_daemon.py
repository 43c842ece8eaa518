# SPDX-License-Identifier: MIT
"""trapstat-exporter against a real trapstatd (bpf suite, root): a workload with exactly known
#UD and #BP traps (tests/helpers/raise-traps), in a unit made of a cgroup named like one (as in
test_unit_totals), shows as exactly that increment of trapstat_traps_total for its unit, also
after it exited; the real exposition passes promtool; --unit-limit 1 gives one unit and
"other" per family; a stopped daemon gives trapstat_up 0."""
import json
import os
import re
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
from daemon import (Daemon, binary, make_cgroup, remove_cgroup, require_root_and_bpf, require_x86_64,  # noqa: E402
                    wait_for)
from varlink_raw import Connection  # noqa: E402

UNIT = "trapstat-test-exporter-a.service"
PROMTOOL = shutil.which("promtool")
N = 150


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=20) as r:
        return r.read().decode()


def value(text, name, **labels):
    """The sample of name with exactly these labels (in the exporter's order), else 0."""
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    m = re.search(rf"^{re.escape(name)}\{{{re.escape(want)}\}} ([0-9]+)$", text, re.M)
    return int(m.group(1)) if m else 0


class ExporterDaemon(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cgroup = make_cgroup(UNIT)
        cls.daemon, cls.exporters = None, []
        cls.dir = tempfile.mkdtemp(prefix="trapstat-exporter-daemon-")
        try:
            cls.daemon = Daemon().__enter__()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            for p in cls.exporters:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
                    p.wait(timeout=10)

            remove_cgroup(cls.cgroup)
        finally:
            if cls.daemon:
                cls.daemon.__exit__(None, None, None)
            shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def exporter(cls, *args):
        port = free_port()
        log = open(os.path.join(cls.dir, f"exporter-{port}.log"), "w")
        p = subprocess.Popen([binary("TRAPSTAT_EXPORTER"), "--socket", cls.daemon.socket,
                              "--listen", f"127.0.0.1:{port}", *args], stderr=log)
        log.close()
        cls.exporters.append(p)

        def listening():
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return True
            except OSError:
                return False
        wait_for(listening, what="the exporter to listen")
        return port

    def workload(self):
        """raise-traps N --only UD,BP in the unit (joined before exec), seen there by the daemon,
        then ended; its own count of traps."""
        cgroup = self.cgroup

        def join():
            with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
                f.write("0")

        p = subprocess.Popen([binary("RAISE_TRAPS"), str(N), "--only", "UD,BP", "--hold"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, preexec_fn=join)
        out = json.loads(p.stdout.readline())
        with Connection(self.daemon.socket) as c:
            def known():
                ps = c.call("io.trapstat.ListProcesses", {"pid": out["pid"], "includeExited": True})["processes"]
                return ps and ps[0]["unit"] == UNIT
            wait_for(known, what="the workload known in its unit")
        p.stdin.close()
        self.assertEqual(p.wait(timeout=30), 0)
        p.stdout.close()
        return out["traps"]

    def test_traps_of_a_unit(self):
        require_x86_64()
        port = self.exporter()
        before = scrape(port)
        self.assertIn("\ntrapstat_up 1\n", "\n" + before)
        start = {v: value(before, "trapstat_traps_total", vector=v, unit=UNIT) for v in ("UD", "BP")}
        traps = self.workload()
        self.assertEqual({v: traps[v] for v in ("UD", "BP")}, {"UD": N, "BP": N})

        def counted():
            text = scrape(port)
            return all(value(text, "trapstat_traps_total", vector=v, unit=UNIT) == start[v] + N for v in ("UD", "BP"))
        wait_for(counted, what=f"{N} #UD and #BP more for {UNIT}")
        # Exactly: nothing more arrives later, and no other vector for the unit.
        time.sleep(1)
        text = scrape(port)
        for v in ("UD", "BP"):
            self.assertEqual(value(text, "trapstat_traps_total", vector=v, unit=UNIT), start[v] + N)
        self.assertEqual(sorted(re.findall(rf'^trapstat_traps_total\{{vector="(\w+)",unit="{re.escape(UNIT)}"\}}',
                                           text, re.M)), ["BP", "UD"])
        self.assertGreater(value(text, "trapstat_page_faults_total", mode="user", access="read", unit=UNIT), 0)
        self.assertRegex(text, r'\ntrapstat_drops_total\{kind="fault_map_full"\} [0-9]+\n')
        if PROMTOOL:
            r = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
            self.assertEqual((r.returncode, r.stdout + r.stderr), (0, ""))

    def test_unit_limit(self):
        port = self.exporter("--unit-limit", "1")
        text = scrape(port)
        units = re.findall(r'^trapstat_minor_faults_total\{unit="([^"]*)"\}', text, re.M)
        self.assertLessEqual(len(units), 2)
        self.assertIn("other", units)

    def test_zz_daemon_stopped(self):
        """Last (by name): the daemon is stopped, the exporter says up 0 and nothing else."""
        port = self.exporter("--timeout", "1s")
        self.assertIn("\ntrapstat_up 1\n", "\n" + scrape(port))
        self.assertEqual(self.daemon.stop(), 0)
        text = scrape(port)
        self.assertTrue(text.endswith("\ntrapstat_up 0\n"), text)
        self.assertEqual(text.count("\ntrapstat_"), 1)


if __name__ == "__main__":
    require_root_and_bpf()
    unittest.main(verbosity=2)
