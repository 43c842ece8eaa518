# SPDX-License-Identifier: MIT
"""Containers seen from outside, against a real trapstatd: a workload in a pid namespace of its own
(unshare --pid --fork --mount-proc) keeps its pid there (nsPid) and the namespace (pidNamespace) in
every reply that names processes, while it runs and after it exited; workloads in cgroups where
the container runtimes put theirs are named by them (machined, docker), and the same names in a
user's own subtree (user@UID.service) are not. Traps are exact (tests/helpers/raise-traps)."""
import json
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import (Daemon, T, binary, cgroup2_root, copy_for_users, create_user, exited_history,  # noqa: E402
                    feature_active, find_comm, history, make_cgroups, ns_pids, remove_cgroup,
                    remove_user, require_root_and_bpf, require_trap_workloads, skip, ticks_after,
                    trapstat_json, user_name, wait_for)
from varlink_raw import Connection  # noqa: E402

USER = user_name("trapstat-ns-test")
# The test's pid in every name: two runs side by side on one machine never share a cgroup.
TAG = f"ts{os.getpid()}"
MACHINE = f"trapstat-test-{TAG}"
# systemd escapes '-' in a machine's scope name as \x2d.
MACHINE_SCOPE = "machine-" + MACHINE.replace("-", "\\x2d") + ".scope"
DOCKER_ID = f"{os.getpid():08x}" * 8


# Run by test_client_in_namespace as the first process of a pid namespace of its own (argv: trapstat,
# the socket, a copy of raise-traps, the test's host pid): raises 300 #UD as pid 2, waits until the
# daemon has them, asks as a client from there, prints what it was told as one JSON object.
INSIDE = r"""
import json, os, subprocess, sys, time
trapstat, sock, raise_traps, host_pid, here = sys.argv[1:6]
sys.path.insert(0, here)
from varlink_raw import Connection

c = Connection(sock)


def call(method, params):
    c.send(method, params)
    reply = c.read()
    return reply.get("parameters", {}) if "error" not in reply else reply


# Where trapstatd cannot read a namespace (no task_reads: before Linux 6.2), every call is refused.
status = call("io.trapstat.GetStatus", {})
if "error" in status:
    print(json.dumps({"refused": status}))
    sys.exit(0)
w = subprocess.Popen([raise_traps, "300", "--only", os.environ["UD"]], stdout=subprocess.PIPE, text=True)
assert json.loads(w.stdout.readline())["pid"] == 2
w.wait()
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    h = call("io.trapstat.History", {"pid": 2})
    if h.get("total", {}).get("traps") == {os.environ["UD"]: 300}:
        break
    time.sleep(0.2)
out = {"ns": os.stat("/proc/self/ns/pid").st_ino, "history": h,
       "sites": call("io.trapstat.Sites", {"pid": 2}),
       "procs": call("io.trapstat.ListProcesses", {"includeExited": True})["processes"],
       "top": [r["process"] for r in call("io.trapstat.Top", {"windowSec": 3600, "limit": 10000})["rows"]],
       "status": call("io.trapstat.GetStatus", {}),
       "host_pid": call("io.trapstat.History", {"pid": int(host_pid)}),
       "unit_totals": call("io.trapstat.UnitTotals", {})}
# The live view (Watch) through the CLI, five replies.
p = subprocess.Popen([trapstat, "--socket", sock, "--json", "top", "-n", "5"], stdout=subprocess.PIPE, text=True)
out["watch"] = [r["process"] for line in p.stdout for r in json.loads(line)["rows"]]
p.wait()
print(json.dumps(out))
"""



class Containers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_root_and_bpf()
        require_trap_workloads()
        if not cgroup2_root():
            skip("no cgroup2 hierarchy: no process can be put into a container's cgroup")
        cls.cgroups = []
        cls.daemon = Daemon().__enter__()

    @classmethod
    def tearDownClass(cls):
        try:
            for path in reversed(cls.cgroups):
                remove_cgroup(path)
        finally:
            cls.daemon.__exit__(None, None, None)

    @classmethod
    def cgroup(cls, rel):
        """A cgroup at rel below the cgroup2 root (removed afterwards where the test made it)."""
        return make_cgroups(rel, cls.cgroups)

    def workload(self, comm, n, vector):
        """raise-traps N --only VECTOR --hold, named comm, as the second process of a pid namespace
        of its own (a shell is the first); (Popen, host pid, [pids by namespace], namespace inode)."""
        path = os.path.join(self.daemon.dir, comm)
        shutil.copy2(binary("RAISE_TRAPS"), path)
        p = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", f'"$0" {n} --only {vector} '
                              '--hold; echo done', path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        out = json.loads(p.stdout.readline())
        host = wait_for(lambda: find_comm(comm), what=f"{comm} in /proc")
        pids = ns_pids(host)
        ns = os.stat(f"/proc/{host}/ns/pid").st_ino
        # What the workload itself saw as its pid is its namespace's.
        self.assertEqual(out["pid"], pids[-1])
        self.assertEqual(len(pids), 2)
        self.assertNotEqual(pids[0], pids[-1])
        return p, host, pids, ns

    def assert_process(self, process, host, pids, ns):
        self.assertEqual(process["pid"], host)
        self.assertEqual(process["nsPid"], pids[-1])
        self.assertEqual(process["pidNamespace"], ns)

    def test_pid_namespace(self):
        comm = f"ns-ud-{TAG}"[:15]
        p, host, pids, ns = self.workload(comm, 300, T["UD"])
        with Connection(self.daemon.socket) as c:
            # Known while it runs: ListProcesses, History, Top and Watch all carry both pids.
            def listed():
                ps = c.call("io.trapstat.ListProcesses", {"pid": host})["processes"]
                return ps[0] if ps and ps[0]["nsPid"] is not None else None

            self.assert_process(wait_for(listed, what="the namespaced workload listed"), host, pids, ns)
            h = wait_for(lambda: (lambda h: h if h and h["total"]["traps"] == {T["UD"]: 300} else None)(
                history(self.daemon, host)), what="its 300 traps in its history")
            self.assert_process(h["process"], host, pids, ns)
            top = c.call("io.trapstat.Top", {"pids": [host], "windowSec": 3600})["rows"]
            self.assertEqual(len(top), 1)
            self.assert_process(top[0]["process"], host, pids, ns)
            self.assertEqual(top[0]["counters"]["traps"], {T["UD"]: 300})
            sites = trapstat_json(self.daemon.socket, "sites", str(host))
            self.assert_process(sites["process"], host, pids, ns)
            if feature_active(self.daemon.socket, "trap_sites"):  # not with 5.10's BPF
                self.assertEqual(sum(s["count"] for s in sites["sites"] if s["kind"] == "trap"), 300)
        # A host process: its pid in the initial namespace is its pid.
        own = history(self.daemon, os.getpid())
        if own:
            self.assertEqual(own["process"]["nsPid"], os.getpid())
            self.assertEqual(own["process"]["pidNamespace"], os.stat("/proc/self/ns/pid").st_ino)
        p.stdin.close()
        self.assertEqual(p.stdout.read().strip(), "done")
        self.assertEqual(p.wait(timeout=30), 0)
        # Kept in its history after it exited (from the store).
        h = exited_history(self.daemon, host)
        self.assert_process(h["process"], host, pids, ns)
        self.assertEqual(h["total"]["traps"], {T["UD"]: 300})

    def container_of(self, rel, n):
        """raise-traps N (#UD) --hold in the cgroup at rel (joined between fork and exec); the
        container ListProcesses names once the daemon read the process's cgroup, which its history
        keeps after it exited."""
        cgroup = self.cgroup(rel)

        def join():
            with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
                f.write("0")

        p = subprocess.Popen([binary("RAISE_TRAPS"), str(n), "--only", T["UD"], "--hold"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, preexec_fn=join)
        pid = json.loads(p.stdout.readline())["pid"]
        with Connection(self.daemon.socket) as c:
            wait_for(lambda: c.call("io.trapstat.ListProcesses", {"pid": pid})["processes"], what=f"{pid} listed")
            # Its cgroup is read from /proc within a tick or two of its first: five are ample.
            ticks_after(self.daemon.socket, 5)
            container = c.call("io.trapstat.ListProcesses", {"pid": pid})["processes"][0]["container"]
        p.stdin.close()
        self.assertEqual(p.wait(timeout=30), 0)
        h = exited_history(self.daemon, pid)
        self.assertEqual(h["total"]["traps"], {T["UD"]: n})
        self.assertEqual(h["process"]["container"], container)
        return container

    def test_machined(self):
        self.assertEqual(self.container_of(f"machine.slice/{MACHINE_SCOPE}/payload/system.slice/x.service", 7),
                         {"runtime": "machined", "id": MACHINE, "name": MACHINE, "pod": None, "user": None})

    def test_docker(self):
        """Named, and then found by its id, by the first 12 digits of it, in Top, ListProcesses,
        ContainerHistory and Watch; bad and unknown names answered."""
        rel = f"system.slice/docker-{DOCKER_ID}.scope"
        docker = {"runtime": "docker", "id": DOCKER_ID, "name": None, "pod": None, "user": None}
        self.assertEqual(self.container_of(rel, 5), docker)
        self.assertEqual(self.container_of(rel, 6), docker)
        with Connection(self.daemon.socket) as c:
            for name in (DOCKER_ID, DOCKER_ID[:12], DOCKER_ID[:4]):
                ps = c.call("io.trapstat.ListProcesses", {"container": name, "includeExited": True})["processes"]
                self.assertEqual(len(ps), 2, name)
                self.assertTrue(all(p["container"] == docker for p in ps))
                rows = c.call("io.trapstat.Top", {"container": name, "windowSec": 3600, "sortBy": "traps"})["rows"]
                self.assertEqual(sorted(r["counters"]["traps"][T["UD"]] for r in rows), [5, 6])
                h = c.call("io.trapstat.ContainerHistory", {"container": name})
                self.assertEqual(h["containers"], [docker])
                self.assertEqual((h["processes"], h["running"]), (2, 0))
                self.assertEqual(h["total"]["traps"], {T["UD"]: 11})
            # A prefix of the machine's name is not a prefix of an id.
            self.assertEqual(c.call("io.trapstat.ListProcesses", {"container": MACHINE[:8], "includeExited": True}),
                             {"processes": [], "otherProcesses": 0})
            for bad in ("", "x" * 65):
                for method in ("Top", "ListProcesses", "ContainerHistory"):
                    c.send(f"io.trapstat.{method}", {"container": bad})
                    self.assertEqual(c.read(), {"error": "org.varlink.service.InvalidParameter",
                                                "parameters": {"parameter": "container"}}, (method, bad))
            c.send("io.trapstat.ContainerHistory", {"container": "f" * 12})
            self.assertEqual(c.read(), {"error": "io.trapstat.NoSuchContainer", "parameters": {"container": "f" * 12}})

    def test_watch_container(self):
        """Watch with a container: every row it sends is of that container, and its process is in
        them while it faults."""
        cgroup = self.cgroup(f"system.slice/docker-{'ab' * 32}.scope")

        def join():
            with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
                f.write("0")

        p = subprocess.Popen([sys.executable, "-c", "import time\nend = time.monotonic() + 4\n"
                              "while time.monotonic() < end:\n    bytearray(1 << 20)\n"], preexec_fn=join)
        seen = set()
        try:
            with Connection(self.daemon.socket) as c:
                c.send("io.trapstat.Watch", {"container": "abab"}, more=True)
                for _ in range(10):
                    rows = c.read()["parameters"]["rows"]
                    for r in rows:
                        self.assertEqual(r["process"]["container"]["id"], "ab" * 32)
                        seen.add(r["process"]["pid"])
        finally:
            p.wait(timeout=30)
        self.assertIn(p.pid, seen)

    def test_user_subtree(self):
        """A user's own subtree: a machine's name there is no machine; a docker scope there is that
        user's rootless container."""
        base = f"user.slice/user-4242424.slice/user@4242424.service/{TAG}.slice"
        self.assertIsNone(self.container_of(f"{base}/machine.slice/{MACHINE_SCOPE}", 3))
        self.assertEqual(self.container_of(f"{base}/docker-{DOCKER_ID}.scope", 4),
                         {"runtime": "docker", "id": DOCKER_ID, "name": None, "pod": None, "user": 4242424})

    def refused_where_unreadable(self, seen):
        """Where the kernel does not let trapstatd read a client's namespace (no task_reads: Linux
        5.10), a client in another namespace is refused every call, NamespaceUnknown: True then."""
        if feature_active(self.daemon.socket, "task_reads"):
            self.assertNotIn("refused", seen)
            return False
        self.assertEqual(seen, {"refused": {"error": "io.trapstat.NamespaceUnknown", "parameters": {}}})
        return True

    def test_client_in_namespace(self):
        """A client in a pid namespace of its own (root there, as on the host) sees that namespace
        only, by its pids: History, Sites, Top, ListProcesses, Watch and GetStatus; a host process
        is no process to it. The host's client sees the same process by its host pid."""
        path = os.path.join(self.daemon.dir, f"in-ns-{TAG}"[:15])
        shutil.copy2(binary("RAISE_TRAPS"), path)
        out = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", INSIDE,
                              binary("TRAPSTAT"), self.daemon.socket, path, str(os.getpid()),
                              os.path.dirname(os.path.abspath(__file__))],
                             capture_output=True, text=True, timeout=120, env={**os.environ, "UD": T["UD"]})
        self.assertEqual(out.returncode, 0, out.stderr)
        seen = json.loads(out.stdout)
        if self.refused_where_unreadable(seen):
            return
        ns = seen["ns"]
        self.assertNotEqual(ns, os.stat("/proc/self/ns/pid").st_ino)
        # Its workload by its pid there (2: the shell is 1), its 300 #UD exact.
        self.assertEqual(seen["history"]["process"]["pid"], 2)
        self.assertEqual(seen["history"]["process"]["nsPid"], 2)
        self.assertEqual(seen["history"]["process"]["pidNamespace"], ns)
        self.assertEqual(seen["history"]["total"]["traps"], {T["UD"]: 300})
        self.assertEqual(seen["sites"]["process"]["pid"], 2)
        self.assertEqual(sum(s["count"] for s in seen["sites"]["sites"] if s["kind"] == "trap"), 300)
        # Nothing of the host's: every process listed, ranked or watched is in its namespace.
        for key in ("procs", "top", "watch"):
            self.assertTrue(seen[key], key)
            for p in seen[key]:
                self.assertEqual(p["pidNamespace"], ns, (key, p))
                self.assertEqual(p["pid"], p["nsPid"], (key, p))
        self.assertIn(2, [p["pid"] for p in seen["top"]])
        self.assertLessEqual(seen["status"]["processesTracked"], len(seen["procs"]))
        self.assertEqual(seen["status"]["dropsByUser"], [])
        # The host's pids mean nothing there: the daemon's own, the test's.
        self.assertEqual(seen["host_pid"], {"error": "io.trapstat.NoSuchProcess", "parameters": {"pid": os.getpid()}})
        self.assertEqual(seen["unit_totals"]["units"], [])
        # From the host: the same workload by its host pid, with its pid in the namespace.
        hosts = trapstat_json(self.daemon.socket, "procs", "--all", "--comm", os.path.basename(path))["processes"]
        self.assertEqual(len(hosts), 1)
        self.assertNotEqual(hosts[0]["pid"], 2)
        self.assertEqual((hosts[0]["nsPid"], hosts[0]["pidNamespace"]), (2, ns))

    def test_unprivileged_user_in_own_namespace(self):
        """A real unprivileged user in a user and pid namespace of their own (root there): their
        namespace's processes only, by their pids there; not their own process outside it, which
        is no process to them; their workload's traps exact."""
        uid = create_user(USER).pw_uid
        try:
            paths = copy_for_users(self.daemon.dir, "RAISE_TRAPS", "TRAPSTAT")
            shutil.copy2(os.path.join(os.path.dirname(os.path.abspath(__file__)), "varlink_raw.py"), self.daemon.dir)
            as_user = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
            # The kernel refuses a user namespace to a process in a chroot (the distro leg's).
            probe = subprocess.run([*as_user, "unshare", "--user", "--map-root-user", "true"], capture_output=True,
                                   text=True)
            if probe.returncode != 0:
                self.skipTest(f"no user namespace for a user here: {probe.stderr.strip()}")
            outside = subprocess.Popen([*as_user, paths["RAISE_TRAPS"], "7", "--only", T["UD"], "--hold"],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            outside_pid = json.loads(outside.stdout.readline())["pid"]
            wait_for(lambda: (history(self.daemon, outside_pid) or {}).get("total", {}).get("traps"),
                     what="the user's process outside the namespace known")
            out = subprocess.run([*as_user, "unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc",
                                  "/usr/bin/python3", "-c", INSIDE, paths["TRAPSTAT"], self.daemon.socket,
                                  paths["RAISE_TRAPS"], str(outside_pid), self.daemon.dir],
                                 capture_output=True, text=True, timeout=120, env={**os.environ, "UD": T["UD"]})
            outside.stdin.close()
            outside.wait(timeout=30)
        finally:
            remove_user(USER)
        self.assertEqual(out.returncode, 0, out.stderr)
        seen = json.loads(out.stdout)
        if self.refused_where_unreadable(seen):
            return
        self.assertEqual(seen["history"]["process"]["pid"], 2)
        self.assertEqual(seen["history"]["process"]["uid"], uid)
        self.assertEqual(seen["history"]["total"]["traps"], {T["UD"]: 300})
        for key in ("procs", "top"):
            self.assertTrue(seen[key], key)
            for p in seen[key]:
                self.assertEqual((p["pidNamespace"], p["uid"]), (seen["ns"], uid), (key, p))
        self.assertEqual(seen["host_pid"], {"error": "io.trapstat.NoSuchProcess", "parameters": {"pid": outside_pid}})

    def test_no_container(self):
        self.assertIsNone(self.container_of(f"{TAG}.slice/plain.service", 2))


if __name__ == "__main__":
    unittest.main()
