# SPDX-License-Identifier: MIT
"""Containers in trapstat's tables, CSV and JSON, against a real trapstatd and workloads with exactly
known traps (tests/helpers/raise-traps):

- one in a pid namespace of its own (unshare --pid --fork --mount-proc): the NSPID column of `top -b`,
  `procs` and history's header shows its pid there, and only where a process shown has one that
  differs; CSV and JSON carry nsPid and pidNamespace;
- two in a cgroup where machined puts a machine's (machine.slice/machine-NAME.scope) and one where
  docker puts a container's (system.slice/docker-ID.scope): `top -b --by container` sums them per
  container, `top -b --container`, `procs --container` with a short id, `history --container` with
  exact totals, the CONTAINER columns and CSV's container.* columns;
- --container's usage errors and an unknown container (one line, exit status 1).

The tests of --container need a trapstatd that takes Top's, Watch's and ListProcesses' container
and has ContainerHistory; against one that does not, they fail saying so."""
import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import (T, Daemon, binary, cgroup2_root, feature_active, find_comm, history, make_cgroups,  # noqa: E402
                    ns_pids, remove_cgroup, require_root_and_bpf, require_trap_workloads, skip, wait_for)
from test_cli_top import Tmux  # noqa: E402
from varlink_raw import Connection  # noqa: E402

# The test's pid in every name: two runs side by side on one machine never share a cgroup.
TAG = f"tc{os.getpid()}"
MACHINE = f"trapstat-cli-{TAG}"
# systemd escapes '-' in a machine's scope name as \x2d.
MACHINE_SCOPE = "machine-" + MACHINE.replace("-", "\\x2d") + ".scope"
DOCKER_ID = hashlib.sha256(TAG.encode()).hexdigest()
DOCKER_KEY = "docker:" + DOCKER_ID[:12]
# #UD raised by each workload: the namespaced one, the machine's two, the docker container's one.
N_NS, N_MACHINE, N_DOCKER = 30, (7, 11), 5



def table(text, first_column):
    """The header line of a table (the first whose first word is first_column) and the lines
    under it up to the first empty one."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == [first_column])
    rows = []
    for line in lines[start + 1:]:
        if not line.strip() or line.startswith("("):
            break
        rows.append(line)
    return lines[start], rows


def cell(header, line, column, next_column):
    """The text of a row's cell of a table whose cells start where their titles do."""
    return line[header.index(column):header.index(next_column)].strip()


class ContainersCli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_root_and_bpf()
        require_trap_workloads()
        if not cgroup2_root():
            skip("no cgroup2 hierarchy: no process can be put into a container's cgroup")
        cls.cgroups, cls.held = [], []
        cls.daemon = Daemon().__enter__()
        try:
            cls.ns = cls.namespaced(f"nsc-{TAG}"[:15], N_NS)
            machine = cls.cgroup(f"machine.slice/{MACHINE_SCOPE}")
            cls.machine = [cls.contained(machine, n) for n in N_MACHINE]
            cls.docker = cls.contained(cls.cgroup(f"system.slice/docker-{DOCKER_ID}.scope"), N_DOCKER)
            for w in [cls.ns, *cls.machine, cls.docker]:
                wait_for(lambda: (history(cls.daemon, w["pid"]) or {}).get("total", {}).get("traps") == w["traps"],
                         what=f"the traps of {w['pid']} in its history")
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            for p in cls.held:
                p.stdin.close()
                p.wait(timeout=30)
                p.stdout.close()
            for path in reversed(cls.cgroups):
                remove_cgroup(path)
        finally:
            cls.daemon.__exit__(None, None, None)

    @classmethod
    def cgroup(cls, rel):
        """A cgroup at rel below the cgroup2 root (removed afterwards where the test made it)."""
        return make_cgroups(rel, cls.cgroups)

    @classmethod
    def known(cls, pid, ready):
        """The Process ListProcesses gives for pid once ready(process) holds."""
        with Connection(cls.daemon.socket) as c:
            def listed():
                ps = c.call("io.trapstat.ListProcesses", {"pid": pid})["processes"]
                return ps[0] if ps and ready(ps[0]) else None

            return wait_for(listed, what=f"{pid} listed as expected")

    @classmethod
    def namespaced(cls, comm, n):
        """raise-traps N (#UD) --hold, named comm, as the second process of a pid namespace of its
        own (a shell is the first); its host pid, pids by namespace and the namespace's inode."""
        path = os.path.join(cls.daemon.dir, comm)
        shutil.copy2(binary("RAISE_TRAPS"), path)
        p = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c",
                              f'"$0" {n} --only {T["UD"]} --hold; echo done', path],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        cls.held.append(p)
        out = json.loads(p.stdout.readline())
        host = wait_for(lambda: find_comm(comm), what=f"{comm} in /proc")
        pids = ns_pids(host)
        assert len(pids) == 2 and pids[-1] == out["pid"] != host, pids
        w = {"pid": host, "ns_pid": pids[-1], "namespace": os.stat(f"/proc/{host}/ns/pid").st_ino,
             "traps": {T["UD"]: n}, "comm": comm}
        w["process"] = cls.known(host, lambda p: p["nsPid"] == w["ns_pid"])
        return w

    @classmethod
    def contained(cls, cgroup, n):
        """raise-traps N (#UD) --hold in the cgroup (joined between fork and exec), once the
        daemon names its container."""
        def join():
            with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
                f.write("0")

        p = subprocess.Popen([binary("RAISE_TRAPS"), str(n), "--only", T["UD"], "--hold"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, preexec_fn=join)
        cls.held.append(p)
        pid = json.loads(p.stdout.readline())["pid"]
        return {"pid": pid, "traps": {T["UD"]: n}, "process": cls.known(pid, lambda p: p["container"] is not None)}

    def cli(self, *args, code=0):
        p = subprocess.run([binary("TRAPSTAT"), "--socket", self.daemon.socket, *args], capture_output=True,
                           text=True, timeout=30, env=dict(os.environ, LC_ALL="C.UTF-8"))
        self.assertEqual(p.returncode, code, f"trapstat {' '.join(args)}: {p.stderr}")
        return p

    def require_container_parameter(self):
        """Fails (not skips) against a trapstatd without the container parameter and method."""
        with Connection(self.daemon.socket) as c:
            c.send("io.trapstat.Top", {"container": "x"})
            reply = c.read()
        if "error" in reply:
            self.fail(f"trapstatd does not take Top's container: {reply} (the daemon's part of Containers)")

    # ---- the namespaced workload: NSPID ----

    def test_top_nspid_column(self):
        ns = self.ns
        header, rows = table(self.cli("top", "-b", "-n", "1", "--window", "1h", "-p", str(ns["pid"])).stdout, "PID")
        self.assertEqual(header.split()[:3], ["PID", "NSPID", "COMM"])
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0].split()[:3], [str(ns["pid"]), str(ns["ns_pid"]), ns["comm"]])
        # The TRAPS cell: after PID, NSPID, COMM, the fault counts and FTIME, one cell a title.
        self.assertEqual(rows[0].split()[header.split().index("TRAPS")], str(N_NS))
        # A table of processes whose pids are their own has none.
        header, rows = table(self.cli("top", "-b", "-n", "1", "--window", "1h", "-p", str(self.docker["pid"])).stdout,
                             "PID")
        self.assertNotIn("NSPID", header)
        self.assertEqual(rows[0].split()[0], str(self.docker["pid"]))
        # --json: the reply as the daemon sent it.
        reply = json.loads(self.cli("--json", "top", "-b", "-n", "1", "--window", "1h", "-p", str(ns["pid"])).stdout)
        self.assertEqual(len(reply["rows"]), 1)
        p = reply["rows"][0]["process"]
        self.assertEqual((p["pid"], p["nsPid"], p["pidNamespace"]), (ns["pid"], ns["ns_pid"], ns["namespace"]))

    def test_procs_nspid_column(self):
        ns = self.ns
        header, rows = table(self.cli("procs", "--pid", str(ns["pid"])).stdout, "PID")
        self.assertEqual(header.split()[:3], ["PID", "NSPID", "COMM"])
        self.assertIn("CONTAINER", header)
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0].split()[:3], [str(ns["pid"]), str(ns["ns_pid"]), ns["comm"]])
        header, _ = table(self.cli("procs", "--pid", str(self.docker["pid"])).stdout, "PID")
        self.assertNotIn("NSPID", header)
        # CSV: the process's members, then its namespace and container.
        out = self.cli("procs", "--pid", str(ns["pid"]), "--csv").stdout
        self.assertEqual(out.splitlines()[0], "pid,startTime,comm,uid,unit,firstSeenUsec,lastSeenUsec,exited,cmdline,"
                                              "nsPid,pidNamespace,container.runtime,container.id,container.name,"
                                              "container.pod,container.user")
        rows = list(csv.DictReader(io.StringIO(out, newline="")))
        self.assertEqual(len(rows), 1)
        self.assertEqual((rows[0]["pid"], rows[0]["nsPid"], rows[0]["pidNamespace"]),
                         (str(ns["pid"]), str(ns["ns_pid"]), str(ns["namespace"])))
        reply = json.loads(self.cli("--json", "procs", "--pid", str(ns["pid"])).stdout)
        self.assertEqual(reply["processes"][0]["nsPid"], ns["ns_pid"])
        self.assertEqual(reply["processes"][0]["pidNamespace"], ns["namespace"])

    def test_history_nspid(self):
        ns = self.ns
        text = self.cli("history", str(ns["pid"])).stdout
        self.assertIn(f"\nnspid:    {ns['ns_pid']} (pid namespace {ns['namespace']})\n", text)
        # Not for a process whose pid is its own.
        self.assertNotIn("\nnspid:", self.cli("history", str(self.docker["pid"])).stdout)
        rows = list(csv.DictReader(io.StringIO(self.cli("history", str(ns["pid"]), "--csv").stdout, newline="")))
        self.assertTrue(rows)
        for row in rows:
            self.assertEqual((row["pid"], row["nsPid"], row["pidNamespace"]),
                             (str(ns["pid"]), str(ns["ns_pid"]), str(ns["namespace"])))
        self.assertEqual(sum(int(row["traps"]) for row in rows), N_NS)
        h = json.loads(self.cli("--json", "history", str(ns["pid"])).stdout)
        self.assertEqual((h["process"]["nsPid"], h["process"]["pidNamespace"]), (ns["ns_pid"], ns["namespace"]))
        # The sites CSV has the process's columns too (where the kernel records sites: not 5.10).
        if feature_active(self.daemon.socket, "trap_sites"):
            rows = list(csv.DictReader(io.StringIO(self.cli("sites", str(ns["pid"]), "--csv").stdout, newline="")))
            self.assertEqual(sum(int(row["count"]) for row in rows if row["kind"] == "trap"), N_NS)
            self.assertEqual({(row["nsPid"], row["pidNamespace"]) for row in rows},
                             {(str(ns["ns_pid"]), str(ns["namespace"]))})

    # ---- the machine's and the docker container's workloads: CONTAINER, --by, --container ----

    def test_container_columns(self):
        pids = [w["pid"] for w in self.machine] + [self.docker["pid"]]
        header, rows = table(self.cli("top", "-b", "-n", "1", "--window", "1h", "-p", ",".join(map(str, pids))).stdout,
                             "PID")
        self.assertIn("CONTAINER", header)
        keys = {int(row.split()[0]): cell(header, row, "CONTAINER", "UNIT") for row in rows}
        self.assertEqual(keys, {self.machine[0]["pid"]: MACHINE, self.machine[1]["pid"]: MACHINE,
                                self.docker["pid"]: DOCKER_KEY})
        header, rows = table(self.cli("procs", "--pid", str(self.docker["pid"])).stdout, "PID")
        self.assertEqual(cell(header, rows[0], "CONTAINER", "UNIT"), DOCKER_KEY)
        # CSV: the container's members as the daemon has them, empty for null.
        for w, expected in ((self.docker, ["docker", DOCKER_ID, "", "", ""]),
                            (self.machine[0], ["machined", MACHINE, MACHINE, "", ""])):
            rows = list(csv.DictReader(io.StringIO(self.cli("procs", "--pid", str(w["pid"]), "--csv").stdout,
                                                   newline="")))
            self.assertEqual([rows[0][f"container.{m}"] for m in ("runtime", "id", "name", "pod", "user")], expected)
            self.assertEqual(rows[0]["nsPid"], str(w["pid"]))
        # history's header names the container.
        self.assertIn(f"\ncontainer: {MACHINE} (machined, id {MACHINE})\n",
                      self.cli("history", str(self.machine[0]["pid"])).stdout)
        self.assertIn(f"\ncontainer: {DOCKER_KEY} (docker, id {DOCKER_ID})\n",
                      self.cli("history", str(self.docker["pid"])).stdout)

    def test_top_by_container(self):
        header, rows = table(self.cli("top", "-b", "-n", "1", "--window", "1h", "--by", "container").stdout, "PROCS")
        self.assertTrue(header.endswith("VECTORS          CONTAINER"), header)
        by_key = {row.split()[-1]: row.split() for row in rows}
        # PROCS, the 11 fault counts (USER ... PROT), %STALL where the kernel keeps its delay
        # accounting (Linux before 5.14 always does), TRAPS, VECTORS, CONTAINER: the #UD of each
        # container summed.
        self.assertEqual(by_key[MACHINE][0], "2")
        self.assertEqual(by_key[MACHINE][-3:], [str(sum(N_MACHINE)), f"{T['UD']}:{sum(N_MACHINE)}", MACHINE])
        self.assertEqual(by_key[DOCKER_KEY][0], "1")
        self.assertEqual(by_key[DOCKER_KEY][-3:], [str(N_DOCKER), f"{T['UD']}:{N_DOCKER}", DOCKER_KEY])
        # The processes in no container, among them the daemon itself: one row.
        self.assertIn("-", by_key)
        self.assertEqual(sum(1 for row in rows if row.split()[-1] == "-"), 1)

    def test_top_container_filter(self):
        self.require_container_parameter()
        header, rows = table(self.cli("top", "-b", "-n", "1", "--window", "1h", "--container", MACHINE).stdout, "PID")
        self.assertEqual(sorted(int(row.split()[0]) for row in rows), sorted(w["pid"] for w in self.machine))
        self.assertEqual({cell(header, row, "CONTAINER", "UNIT") for row in rows}, {MACHINE})
        self.assertEqual(sum(int(row.split()[header.split().index("TRAPS")]) for row in rows), sum(N_MACHINE))
        reply = json.loads(self.cli("--json", "top", "-b", "-n", "1", "--window", "1h", "--container",
                                    DOCKER_ID[:12]).stdout)
        self.assertEqual([r["process"]["pid"] for r in reply["rows"]], [self.docker["pid"]])
        self.assertEqual(reply["rows"][0]["process"]["container"],
                         {"runtime": "docker", "id": DOCKER_ID, "name": None, "pod": None, "user": None})
        # Grouped, the one container's row.
        _, rows = table(self.cli("top", "-b", "-n", "1", "--window", "1h", "--by", "container", "--container",
                                 MACHINE).stdout, "PROCS")
        # PROCS, the 11 fault counts (USER ... PROT), %STALL where the kernel keeps its delay
        # accounting, TRAPS, VECTORS, CONTAINER.
        self.assertEqual([row.split() for row in rows],
                         [["2", *rows[0].split()[1:-3], str(sum(N_MACHINE)), f"{T['UD']}:{sum(N_MACHINE)}", MACHINE]])

    def test_procs_container_filter(self):
        self.require_container_parameter()
        header, rows = table(self.cli("procs", "--container", DOCKER_ID[:12]).stdout, "PID")
        self.assertEqual([int(row.split()[0]) for row in rows], [self.docker["pid"]])
        self.assertEqual(cell(header, rows[0], "CONTAINER", "UNIT"), DOCKER_KEY)
        reply = json.loads(self.cli("--json", "procs", "--container", MACHINE).stdout)
        self.assertEqual(sorted(p["pid"] for p in reply["processes"]), sorted(w["pid"] for w in self.machine))
        out = self.cli("procs", "--container", DOCKER_ID, "--csv").stdout
        rows = list(csv.DictReader(io.StringIO(out, newline="")))
        self.assertEqual([(r["pid"], r["container.id"]) for r in rows], [(str(self.docker["pid"]), DOCKER_ID)])
        # Another container's name: none of these.
        self.assertEqual(table(self.cli("procs", "--container", f"nosuch-{TAG}").stdout, "PID")[1], [])

    def test_history_container(self):
        self.require_container_parameter()
        text = self.cli("history", "--container", MACHINE).stdout
        self.assertEqual(text.splitlines()[0], f"container {MACHINE} (machined, id {MACHINE}): 2 processes, 2 running")
        total = next(line for line in text.splitlines() if line.startswith("total "))
        self.assertEqual(total.split()[-1], str(sum(N_MACHINE)))  # TRAPS, the last column
        h = json.loads(self.cli("--json", "history", "--container", MACHINE).stdout)
        self.assertEqual(h["containers"], [{"runtime": "machined", "id": MACHINE, "name": MACHINE, "pod": None,
                                           "user": None}])
        self.assertEqual((h["processes"], h["running"], h["total"]["traps"]), (2, 2, {T["UD"]: sum(N_MACHINE)}))
        out = self.cli("history", "--container", DOCKER_ID[:12], "--csv").stdout
        self.assertTrue(out.startswith("timeUsec,time,"), out.splitlines()[0])
        rows = list(csv.DictReader(io.StringIO(out, newline="")))
        self.assertEqual(sum(int(row["traps"]) for row in rows), N_DOCKER)
        self.assertTrue(self.cli("history", "--container", DOCKER_ID[:12]).stdout.startswith(
            f"container {DOCKER_KEY} (docker, id {DOCKER_ID}): 1 process, 1 running\n"))

    def test_live_view(self):
        """The live view with --container (in tmux): the machine's processes from the window, its
        name in their CONTAINER column and in the title; g on to "by container": one row, both
        processes' traps summed."""
        self.require_container_parameter()
        # tmux needs a terminal it can start in: the kernel legs' VMs (the cli-top suite is not run
        # there) have none.
        try:
            t = Tmux(f"trapstat-test-{os.getpid()}-containers",
                     f"{binary('TRAPSTAT')} --socket {self.daemon.socket} top --window 1h --container {MACHINE}",
                     env={"TERM": "xterm-256color"})
        except (subprocess.CalledProcessError, FileNotFoundError) as e:
            self.skipTest(f"tmux cannot start here: {e}")
        self.addCleanup(t.close)

        pids = {str(w["pid"]) for w in self.machine}

        def rows(s):
            return [line for line in s.splitlines() if line.split()[:1] and line.split()[0].isdigit()]

        s = t.wait(lambda s: {r.split()[0] for r in rows(s)} == pids, "the machine's two processes, only them")
        self.assertIn(f"--container {MACHINE}", s.splitlines()[0])
        header = next(line for line in s.splitlines() if "COMM" in line and "UNIT" in line)
        self.assertNotIn("NSPID", header)
        self.assertEqual({cell(header, r, "CONTAINER", "UNIT") for r in rows(s)}, {MACHINE})
        t.keys("g", "g", "g", "g")
        s = t.wait(lambda s: ", by container" in s and len(rows(s)) == 1, "rows grouped by container")
        row = rows(s)[0].split()
        # PROCS S? USER/s KERNEL/s MAJOR/s TRAPS/s %FAULT FAULTS TRAPS VECTORS CONTAINER
        self.assertEqual((row[0], row[-3], row[-2], row[-1]),
                         ("2", str(sum(N_MACHINE)), f"{T['UD']}:{sum(N_MACHINE)}", MACHINE), s)
        t.keys("q")
        t.wait(lambda s: "TRAPSTAT-EXIT=0" in s, "exit 0")

    def test_unknown_container(self):
        self.require_container_parameter()
        p = self.cli("history", "--container", f"nosuch-{TAG}", code=1)
        self.assertEqual(p.stdout, "")
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
        self.assertIn(f"no process of a container named 'nosuch-{TAG}'", p.stderr)

    def test_usage_errors(self):
        for verb in (["top", "-b", "-n", "1"], ["procs"], ["history"]):
            with self.subTest(verb=verb[0]):
                p = self.cli(*verb, "--container", "", code=2)
                self.assertIn("invalid --container ''", p.stderr)
                self.assertIn(f"Usage: trapstat {verb[0]}", p.stderr)
                p = self.cli(*verb, "--container", "a" * 65, code=2)
                self.assertIn("invalid --container: longer than 64 bytes", p.stderr)
                self.assertEqual(p.stdout, "")
        for args in (["history", "1", "--container", MACHINE], ["history", "--unit", "a", "--container", MACHINE],
                     ["history", "--container", MACHINE, "--start-time", "1"]):
            with self.subTest(args=args):
                self.cli(*args, code=2)
        # 64 bytes are a container's name or id as any other.
        self.require_container_parameter()
        self.assertEqual(table(self.cli("procs", "--container", "a" * 64).stdout, "PID")[1], [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
