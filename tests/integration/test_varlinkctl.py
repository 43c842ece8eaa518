# SPDX-License-Identifier: MIT
"""trapstatd as systemd's own varlink client sees it: varlinkctl (systemd >= 255; the distro
leg's forky has 262). Its parser accepts every .varlink file of the repository (validate-idl);
info, list-interfaces and introspect describe the daemon; every io.trapstat method answers a
call, with exact traps of a known workload where the method gives them; an error reply comes
back as the error; `call --more` streams Watch replies; and trapstatd's io.systemd.Metrics on
the report socket (/run/systemd/report/io.trapstat) gives a unit's exact traps to
`varlinkctl call --more … io.systemd.Metrics.List {}` and to `systemd-report metrics`
(systemd >= 260).

Registered only where meson found varlinkctl (tests/meson.build)."""
import glob
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import (Daemon, SharedDaemonTest, binary, cgroup2_root, exited_history, require_root_and_bpf,  # noqa: E402
                    require_x86_64, run_workload, trapstat_json, wait_for)

SOURCE_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir)
METHODS = ["GetStatus", "Top", "History", "UnitHistory", "Sites", "ListProcesses", "Watch", "Traps"]


def varlinkctl(*args, check=True, timeout=30):
    p = subprocess.run([binary("VARLINKCTL"), *args], capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"varlinkctl {' '.join(args)} exited {p.returncode}: {p.stdout}{p.stderr}")
    return p


class ValidateIdl(unittest.TestCase):
    def test_every_interface_file(self):
        """The product's interfaces pass systemd's parser. The varlink certification interface
        (upstream's test interface, kept verbatim: varlink-go-certification speaks it) does not:
        systemd's parser takes neither its string set (`[string]()`) nor some of its other
        constructs; should that change, this test says so."""
        files = sorted(glob.glob(os.path.join(SOURCE_ROOT, "schema", "*.varlink")) +
                       glob.glob(os.path.join(SOURCE_ROOT, "tests", "data", "*.varlink")))
        self.assertEqual({os.path.basename(f) for f in files},
                         {"io.trapstat.varlink", "io.systemd.Metrics.varlink", "org.varlink.service.varlink",
                          "org.varlink.certification.varlink"})
        for path in files:
            with self.subTest(file=os.path.basename(path)):
                if os.path.basename(path) != "org.varlink.certification.varlink":
                    varlinkctl("validate-idl", path)
                    continue
                p = varlinkctl("validate-idl", path, check=False)
                self.assertNotEqual(p.returncode, 0, "systemd's parser now takes the certification interface")
                self.assertIn("Bad syntax", p.stderr + p.stdout)


class Varlinkctl(SharedDaemonTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.address = cls.daemon.socket  # a path: varlinkctl connects to it as a Unix socket
        cls.traps = run_workload("RAISE_TRAPS", 40, "--only", "UD,BP")
        cls.history = exited_history(cls.daemon, cls.traps["pid"])

    def call(self, method, parameters=None, check=True):
        p = varlinkctl("call", self.address, f"io.trapstat.{method}", json.dumps(parameters or {}), check=check)
        return p

    def test_info_and_interfaces(self):
        info = varlinkctl("info", self.address).stdout
        self.assertIn("trapstat", info)
        self.assertIn("io.trapstat", info)
        interfaces = varlinkctl("list-interfaces", self.address).stdout.split()
        self.assertIn("io.trapstat", interfaces)
        self.assertIn("org.varlink.service", interfaces)
        idl = varlinkctl("introspect", self.address, "io.trapstat").stdout
        for method in METHODS:
            self.assertIn(f"method {method}(", idl)
        self.assertIn("type ProcessCounters", idl)
        self.assertIn("error NoSuchUnit", idl)

    def test_every_method(self):
        pid = self.traps["pid"]
        replies = {
            "GetStatus": self.call("GetStatus"),
            "Top": self.call("Top", {"windowSec": 3600, "sortBy": "traps", "limit": 10000}),
            "History": self.call("History", {"pid": pid}),
            "Sites": self.call("Sites", {"pid": pid, "kind": "trap"}),
            "ListProcesses": self.call("ListProcesses", {"pid": pid, "includeExited": True}),
            "Traps": self.call("Traps", {"windowSec": 3600}),
        }
        parsed = {m: json.loads(p.stdout) for m, p in replies.items()}
        self.assertIn("version", parsed["GetStatus"])
        rows = [r for r in parsed["Top"]["rows"] if r["process"]["pid"] == pid]
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0]["counters"]["traps"], {"UD": 40, "BP": 40})
        self.assertEqual(parsed["History"]["total"]["traps"], {"UD": 40, "BP": 40})
        self.assertEqual(parsed["History"]["total"], self.history["total"])
        self.assertEqual(sorted(s["vector"] for s in parsed["Sites"]["sites"]), ["BP", "UD"])
        self.assertEqual(sum(s["count"] for s in parsed["Sites"]["sites"]), 80)
        self.assertEqual([p["pid"] for p in parsed["ListProcesses"]["processes"]], [pid])
        self.assertGreaterEqual(parsed["Traps"]["traps"]["UD"], 40)

    def test_error_replies(self):
        # NoSuchProcess and NoSuchUnit come back as the errors, with their parameters.
        p = self.call("History", {"pid": 2147483647}, check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("io.trapstat.NoSuchProcess", p.stderr)
        self.assertEqual(json.loads(p.stdout), {"pid": 2147483647})
        p = self.call("UnitHistory", {"unit": "no-such-unit-here.service"}, check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("io.trapstat.NoSuchUnit", p.stderr)
        # InvalidParameter names the member (varlinkctl shows it as errno text, with the parameter).
        p = self.call("Top", {"limit": 0}, check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertEqual(json.loads(p.stdout), {"parameter": "limit"})

    def test_watch_streams(self):
        proc = subprocess.Popen([binary("VARLINKCTL"), "call", "--more", "--json=short", self.address,
                                 "io.trapstat.Watch", '{"limit": 5}'], stdout=subprocess.PIPE, text=True)
        try:
            # JSON text sequences (RFC 7464): each reply begins with an RS.
            lines = [proc.stdout.readline() for _ in range(3)]
        finally:
            proc.terminate()
            proc.wait(timeout=10)
        for line in lines:
            self.assertTrue(line.startswith("\x1e"), repr(line[:40]))
        ticks = [json.loads(line[1:]) for line in lines]
        for t in ticks:
            self.assertEqual(set(t), {"timeUsec", "intervalUsec", "total", "processes", "rows", "missedTicks", "exited"})
        self.assertLess(ticks[0]["timeUsec"], ticks[1]["timeUsec"])
        self.assertLess(ticks[1]["timeUsec"], ticks[2]["timeUsec"])


class SystemdMetrics(unittest.TestCase):
    """trapstatd's io.systemd.Metrics as systemd's own tools read it: the report socket where
    systemd's providers listen, `varlinkctl call --more … io.systemd.Metrics.List {}` and
    `systemd-report metrics` (systemd >= 260) give a workload's exact traps for its unit."""

    REPORT = "/run/systemd/report/io.trapstat"

    @classmethod
    def setUpClass(cls):
        if os.path.exists(cls.REPORT):
            raise AssertionError(f"{cls.REPORT} exists: another trapstatd reports here")
        os.makedirs(os.path.dirname(cls.REPORT), exist_ok=True)
        cls.daemon = Daemon(extra_args=["--report-socket", cls.REPORT])
        cls.cgroup = None
        try:
            cls.daemon.start()
            root = cgroup2_root()
            if not root:
                raise AssertionError("no cgroup2 hierarchy")
            cls.unit = f"trapstat-report-{os.getpid()}.service"
            cls.cgroup = os.path.join(root, cls.unit)
            os.mkdir(cls.cgroup)
            # A shell joins the unit's cgroup and forks the workload, born in it; it holds until
            # trapstatd knows it in its unit (a process living less than a tick may be seen
            # without one).
            p = subprocess.Popen(["sh", "-c", 'echo $$ > "$0/cgroup.procs" || exit 1; "$@"', cls.cgroup,
                                  binary("RAISE_TRAPS"), "30", "--only", "UD,BP", "--hold"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            cls.pid = json.loads(p.stdout.readline())["pid"]
            wait_for(lambda: any(q["unit"] == cls.unit for q in trapstat_json(
                cls.daemon.socket, "procs", "--exited", "--pid", str(cls.pid))["processes"]),
                what=f"the workload known in {cls.unit}")
            p.stdin.close()
            p.wait(timeout=30)
            p.stdout.close()
            exited_history(cls.daemon, cls.pid)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.cgroup and os.path.isdir(cls.cgroup):
                os.rmdir(cls.cgroup)
        finally:
            cls.daemon.__exit__(None, None, None)

    def traps_of_unit(self, metrics):
        return {m["fields"]["vector"]: m["value"] for m in metrics
                if m.get("name") == "io.trapstat.Traps" and m.get("object") == self.unit}

    def test_varlinkctl_list_and_describe(self):
        def listed():
            p = varlinkctl("call", "--more", "--json=short", self.REPORT, "io.systemd.Metrics.List", "{}")
            metrics = [json.loads(line.lstrip("\x1e")) for line in p.stdout.splitlines() if line.strip()]
            return metrics if self.traps_of_unit(metrics) == {"UD": 30, "BP": 30} else None
        metrics = wait_for(listed, what=f"30 #UD and 30 #BP of {self.unit} in io.systemd.Metrics.List")
        self.assertTrue(all(m["name"].startswith("io.trapstat.") for m in metrics))
        p = varlinkctl("call", "--more", "--json=short", self.REPORT, "io.systemd.Metrics.Describe", "{}")
        families = {d["name"]: d["type"] for d in (json.loads(line.lstrip("\x1e")) for line in p.stdout.splitlines()
                                                  if line.strip())}
        self.assertEqual(families["io.trapstat.Traps"], "counter")
        # Without --more: systemd's own error for a method that wants it.
        p = varlinkctl("call", self.REPORT, "io.systemd.Metrics.List", "{}", check=False)
        self.assertNotEqual(p.returncode, 0)

    @unittest.skipUnless(os.environ.get("SYSTEMD_REPORT"), "systemd-report is not installed (systemd < 260)")
    def test_systemd_report(self):
        def reported():
            p = subprocess.run([binary("SYSTEMD_REPORT"), "metrics", "--json=short", "--no-pager"],
                               capture_output=True, text=True, timeout=30)
            if p.returncode != 0:
                raise AssertionError(f"systemd-report metrics exited {p.returncode}: {p.stderr}")
            metrics = []
            for line in p.stdout.splitlines():
                line = line.lstrip("\x1e").strip()
                if line:
                    j = json.loads(line)
                    metrics += j if isinstance(j, list) else [j]
            return metrics if self.traps_of_unit(metrics) == {"UD": 30, "BP": 30} else None
        wait_for(reported, what=f"30 #UD and 30 #BP of {self.unit} in systemd-report metrics")


if __name__ == "__main__":
    require_root_and_bpf()
    require_x86_64()
    unittest.main(verbosity=2)
