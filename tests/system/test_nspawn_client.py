# SPDX-License-Identifier: MIT
"""A container seen from outside and from inside: trapstatd on the host, a systemd booted with
systemd-nspawn in a cgroup where systemd-machined puts a machine's (machine.slice/machine-NAME.scope,
its name escaped as systemd escapes it), the daemon's socket bind-mounted into it. A workload the
container's systemd runs is named by the machine's name and counted exactly; a client inside, root
there, sees only the container's processes, by the container's pids, and a host process is no
process to it; the host's client sees the same workload by its host pid, with its pid inside.

Needs root (the booted container as tests/system/test_systemd.py boots one). Exits 77 only where a
container cannot be booted at all, or off x86-64 and arm64 (the trap workload)."""
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "integration"))
from daemon import (T, Daemon, binary, exited_history, make_cgroups, require_root_and_bpf,  # noqa: E402
                    require_trap_workloads, skip, wait_for)
from varlink_raw import Connection  # noqa: E402

NAME = f"trapstat-client-{os.getpid()}"
SCOPE = "machine-" + NAME.replace("-", "\\x2d") + ".scope"
SOCKET_INSIDE = "/run/trapstat-test"
BUILD_ROOT = os.path.dirname(os.path.dirname(os.path.realpath(binary("TRAPSTAT"))))  # build/client/trapstat
# The build's binaries (trapstat, the workload) inside, bind-mounted: a build in /tmp (a fresh
# clone) is under the container's own /tmp.
BUILD_INSIDE = "/run/trapstat-build"


def in_container(path):
    """A binary of the build as the container sees it."""
    return os.path.join(BUILD_INSIDE, os.path.relpath(os.path.realpath(path), BUILD_ROOT))


def halt_when_orphaned():
    """nspawn halts the container on SIGTERM: sent when this script dies before it cleans up."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class Machine:
    """The host's / under an overlay on a tmpfs, booted with systemd-nspawn -b in the cgroup
    machine.slice/SCOPE, with socket_dir bind-mounted at SOCKET_INSIDE."""

    def __init__(self, socket_dir):
        self.socket_dir = socket_dir
        self.dir = self.root = self.nspawn = self.pid1 = None
        self.mounts, self.cgroups = [], []

    def start(self):
        if not shutil.which("systemd-nspawn"):
            skip("systemd-nspawn is not installed (Debian package systemd-container)")
        self.dir = tempfile.mkdtemp(prefix="trapstat-machine-")
        self.mount("-t", "tmpfs", "-o", "mode=0755", "tmpfs", self.dir)
        for d in ("upper", "work", "root"):
            os.mkdir(os.path.join(self.dir, d))
        self.root = os.path.join(self.dir, "root")
        self.mount("-t", "overlay", "overlay", "-o", f"lowerdir=/,upperdir={self.dir}/upper,workdir={self.dir}/work",
                   self.root)
        with open(os.path.join(self.root, "etc/machine-id"), "w") as f:
            f.write(uuid.uuid4().hex + "\n")
        self.cgroup = make_cgroups(f"machine.slice/{SCOPE}", self.cgroups)

        def enter():
            halt_when_orphaned()
            with open(os.path.join(self.cgroup, "cgroup.procs"), "w") as f:
                f.write("0")

        self.log = open(self.dir + ".log", "w")
        self.nspawn = subprocess.Popen(
            ["systemd-nspawn", "-D", self.root, "--machine", NAME, "--register=no", "--keep-unit", "-q",
             "--console=pipe", "--capability=CAP_BPF,CAP_PERFMON", "--system-call-filter=bpf perf_event_open",
             f"--bind={self.socket_dir}:{SOCKET_INSIDE}", f"--bind-ro={BUILD_ROOT}:{BUILD_INSIDE}", "-b",
             "systemd.unit=basic.target"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True, cwd="/",
            preexec_fn=enter)
        self.pid1 = wait_for(self.find_pid1, timeout=20, what="the container's PID 1")
        wait_for(self.booted, timeout=30, interval=0.2, what="the container to finish booting")

    def mount(self, *args):
        p = subprocess.run(["mount", *args], capture_output=True, text=True)
        if p.returncode != 0:
            skip(f"cannot mount for the container: {p.stderr.strip()}")
        self.mounts.append(args[-1])

    def find_pid1(self):
        if self.nspawn.poll() is not None:
            skip(f"systemd-nspawn exited {self.nspawn.returncode} while booting")
        try:
            with open(os.path.join(self.cgroup, "payload", "init.scope", "cgroup.procs")) as f:
                pids = f.read().split()
        except FileNotFoundError:
            return None  # not made yet
        return int(pids[0]) if pids else None

    def booted(self):
        p = self.run("systemctl", "is-system-running", "--wait", check=False)
        return p.stdout.strip() in ("running", "degraded")

    def run(self, *cmd, check=True, timeout=60):
        """A command in the container's namespaces (its pid namespace too), as root."""
        p = subprocess.run(["nsenter", "-t", str(self.pid1), "-m", "-u", "-i", "-n", "-p", "-C", "-r", "-w", "--",
                            *cmd], capture_output=True, text=True, timeout=timeout, cwd="/")
        if check and p.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}: {p.stdout.strip()} {p.stderr.strip()}")
        return p

    def stop(self):
        if self.nspawn and self.nspawn.poll() is None:
            self.nspawn.send_signal(signal.SIGTERM)
            try:
                self.nspawn.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.nspawn.kill()
                self.nspawn.wait()
        for target in reversed(self.mounts):
            subprocess.run(["umount", "-l", target], capture_output=True)
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.log.close()
            os.unlink(self.dir + ".log")
        # The container's systemd made cgroups below ours: the deepest go first, once empty.
        for top in reversed(self.cgroups):
            for d, _, _ in sorted(os.walk(top), key=lambda w: -w[0].count(os.sep)):
                wait_for(lambda: self.rmdir(d), timeout=20, what=f"{d} to be removed")

    @staticmethod
    def rmdir(d):
        try:
            os.rmdir(d)
        except FileNotFoundError:
            pass
        except OSError:
            return False
        return True


class NspawnClient(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_root_and_bpf()
        require_trap_workloads()
        cls.machine = None
        cls.daemon = Daemon().__enter__()
        try:
            os.chmod(cls.daemon.dir, 0o755)
            cls.machine = Machine(cls.daemon.dir)
            cls.machine.start()
            cls.ns = os.stat(f"/proc/{cls.machine.pid1}/ns/pid").st_ino
            # The workload as one of the container's services: in its cgroup, its pid namespace.
            # Without --wait and --pipe, which need a D-Bus the container may not run: its output
            # into a file of the bind-mounted directory.
            cls.machine.run("systemd-run", "--quiet", "-p", "StandardOutput=file:" + SOCKET_INSIDE + "/workload.json",
                            "--unit", f"trapstat-workload-{os.getpid()}", "--", in_container(binary("RAISE_TRAPS")),
                            "300", "--only", T["UD"])
            cls.inner_pid = wait_for(lambda: cls.workload_pid(os.path.join(cls.daemon.dir, "workload.json")),
                                     what="the workload's output")
        except BaseException:
            cls.tearDownClass()
            raise

    @staticmethod
    def workload_pid(path):
        """The pid raise-traps printed (its pid in the container), once it printed its line."""
        try:
            with open(path) as f:
                text = f.read()
        except FileNotFoundError:
            return None
        return json.loads(text)["pid"] if text.endswith("\n") else None

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.machine:
                cls.machine.stop()
        finally:
            cls.daemon.__exit__(None, None, None)

    def inside(self, *args, check=True):
        """trapstat inside the container, on the socket bind-mounted there."""
        p = self.machine.run(in_container(binary("TRAPSTAT")), "--socket", f"{SOCKET_INSIDE}/io.trapstat", *args,
                             check=check)
        return json.loads(p.stdout) if check and "--json" in args else p

    def host_process(self):
        """The workload as the host's client lists it: by its pid inside."""
        def find():
            with Connection(self.daemon.socket) as c:
                ps = c.call("io.trapstat.ListProcesses", {"includeExited": True, "comm": "raise-traps"})["processes"]
            ps = [p for p in ps if (p["pidNamespace"], p["nsPid"]) == (self.ns, self.inner_pid)]
            return ps[0] if ps else None

        return wait_for(find, what="the container's workload listed on the host")

    def test_seen_from_outside(self):
        p = self.host_process()
        self.assertNotEqual(p["pid"], self.inner_pid)
        self.assertEqual(p["container"], {"runtime": "machined", "id": NAME, "name": NAME, "pod": None, "user": None})
        h = exited_history(self.daemon, p["pid"])
        self.assertEqual(h["total"]["traps"], {T["UD"]: 300})
        with Connection(self.daemon.socket) as c:
            h = c.call("io.trapstat.ContainerHistory", {"container": NAME})
        self.assertEqual(h["containers"][0]["name"], NAME)
        self.assertEqual(h["total"]["traps"], {T["UD"]: 300})

    def test_seen_from_inside(self):
        host_pid = self.host_process()["pid"]
        # Once the history shows it exited, its last tick is in it: the count is final.
        h = wait_for(lambda: (lambda h: h if h["process"]["exited"] else None)(
            self.inside("--json", "history", str(self.inner_pid))), what="its history inside, exited")
        self.assertEqual((h["process"]["pid"], h["process"]["nsPid"]), (self.inner_pid, self.inner_pid))
        self.assertEqual(h["total"]["traps"], {T["UD"]: 300})
        self.assertEqual(h["process"]["container"]["name"], NAME)
        # Only the container's processes, by the container's pids.
        procs = self.inside("--json", "procs", "--exited")["processes"]
        self.assertIn(self.inner_pid, [p["pid"] for p in procs])
        for p in procs:
            self.assertEqual(p["pidNamespace"], self.ns, p)
            self.assertEqual(p["pid"], p["nsPid"], p)
        # A host process, root's like the client: none to it, as one that never was.
        for pid in (host_pid, self.daemon.proc.pid, os.getpid()):
            p = self.inside("history", str(pid), check=False)
            self.assertEqual(p.returncode, 1)
            self.assertIn(f"no process with pid {pid} is known to trapstatd", p.stderr)
        status = self.inside("--json", "status")
        self.assertLessEqual(status["processesTracked"], len(procs))


if __name__ == "__main__":
    unittest.main()
