# SPDX-License-Identifier: MIT
"""trapstatd under a real systemd: the host's root booted read-only in a container
(systemd-nspawn, an overlay with a tmpfs upper layer), the build installed into it with
`meson install`, the units as shipped. The container's systemd starts the daemon, by socket
activation and by `systemctl start`, in the unit's own sandbox (its user, capabilities,
seccomp filter); this script only asks that systemd and the installed `trapstat`.

Most workloads run on the host, outside the container: BPF reports processes by their pids in
the initial pid namespace, which is how trapstatd names them (the daemon belongs on the host;
the container is only the test's way to get a systemd of its own). The units' steps run theirs
as the container's services (systemd-run), in the container's pid namespace, where only the
daemon's cgroup-based naming of units can find them.

Needs root. Exits 77 (skipped) only where a container cannot be booted at all, or off x86-64 (the
trap workload raises x86 exceptions).

This script runs on the host, from the source tree: it shares the integration tests' helpers
(tests/integration/daemon.py), though not their daemon."""
import ctypes
import json
import os
import platform
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
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "integration"))
from daemon import binary, run_workload, skip, wait_for  # noqa: E402
from varlink_raw import Connection  # noqa: E402

N = 1000  # traps raised of each vector
PAGES = 10000
VECTORS = ["DE", "DB", "BP", "UD", "GP", "PF", "MF", "AC", "XM"]
CAP_PERFMON, CAP_BPF = 38, 39
STATE_DB = "/var/lib/trapstatd/trapstat.db"
DROPIN_DIR = "run/systemd/system/trapstatd.service.d"  # under the container's root


env = binary  # $NAME as meson sets it: the paths of binaries, and of the build's trees too


def halt_when_orphaned():
    """In nspawn's child before exec: should this script be killed before it can clean up,
    nspawn gets SIGTERM, on which it halts the container."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class Container:
    """The host's / under an overlay on a tmpfs, booted with systemd-nspawn -b."""

    def __init__(self):
        self.dir = None
        self.root = None
        self.mounts = []  # unmounted in reverse order
        self.nspawn = None
        self.log_path = None
        self.pid1 = None  # the container's systemd, as the host sees it
        self.name = f"trapstat-system-{os.getpid()}"

    def start(self):
        self.dir = tempfile.mkdtemp(prefix="trapstat-system-")
        self.log_path = self.dir + ".log"
        self._mount(["-t", "tmpfs", "-o", "mode=0755", "tmpfs", self.dir], "a tmpfs")
        for d in ("upper", "work", "root"):
            os.mkdir(os.path.join(self.dir, d))
        self.root = os.path.join(self.dir, "root")
        self._mount(["-t", "overlay", "overlay", "-o",
                     f"lowerdir=/,upperdir={self.dir}/upper,workdir={self.dir}/work", self.root], "an overlay of /")
        with open(os.path.join(self.root, "etc/machine-id"), "w") as f:
            f.write(uuid.uuid4().hex + "\n")
        self._install()
        self._boot()

    def _mount(self, args, what):
        target = args[-1]
        p = subprocess.run(["mount", *args], capture_output=True, text=True)
        if p.returncode != 0:
            skip(f"cannot mount {what} for the container: {p.stderr.strip()}")
        self.mounts.append(target)

    def _install(self):
        """The build, installed the way a user installs it, into the container's root."""
        p = subprocess.run([env("MESON"), "install", "-C", env("MESON_BUILD_ROOT"), "--no-rebuild", "--quiet",
                            "--destdir", self.root], capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise AssertionError(f"meson install failed ({p.returncode}):\n{p.stdout}{p.stderr}")

    def hidden_trees(self):
        """The source and build trees are covered in the container, so that only what
        `meson install` put there can be used."""
        src, build = os.path.realpath(env("MESON_SOURCE_ROOT")), os.path.realpath(env("MESON_BUILD_ROOT"))
        trees = [src] if build.startswith(src + os.sep) else [src, build]
        prefix = os.path.realpath(env("PREFIX"))
        for t in trees:
            if prefix == t or prefix.startswith(t + os.sep):
                raise AssertionError(f"the install prefix {prefix} is inside {t}, which the container hides")
        return trees

    def _boot(self):
        if not shutil.which("systemd-nspawn"):
            skip("systemd-nspawn is not installed (Debian package systemd-container)")
        args = ["systemd-nspawn", "-D", self.root, "--machine", self.name, "--register=no", "--keep-unit", "-q",
                "--console=pipe",
                # The daemon needs these two, and the container's seccomp filter must let bpf()
                # and perf_event_open() through to the unit's own, stricter one.
                "--capability=CAP_BPF,CAP_PERFMON", "--system-call-filter=bpf perf_event_open",
                *(f"--tmpfs={t}" for t in self.hidden_trees()),
                # basic.target: sockets and timers, none of the host's own services.
                "-b", "systemd.unit=basic.target"]
        self.log = open(self.log_path, "w")
        self.nspawn = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
                                       start_new_session=True, cwd="/", preexec_fn=halt_when_orphaned)

        def pid1():
            if self.nspawn.poll() is not None:
                skip(f"systemd-nspawn exited {self.nspawn.returncode} while booting:\n{self.read_log()}")
            for task in os.listdir(f"/proc/{self.nspawn.pid}/task"):
                try:
                    with open(f"/proc/{self.nspawn.pid}/task/{task}/children") as f:
                        children = f.read().split()
                    for child in children:
                        with open(f"/proc/{child}/status") as f:
                            nspid = next(line for line in f if line.startswith("NSpid:")).split()
                        if nspid[-1] == "1" and len(nspid) > 2:
                            return int(child)
                except (FileNotFoundError, ProcessLookupError):
                    pass
            return None

        self.pid1 = wait_for(pid1, timeout=20, what="the container's PID 1")

        def booted():
            if self.nspawn.poll() is not None:
                skip(f"systemd-nspawn exited {self.nspawn.returncode} while booting:\n{self.read_log()}")
            p = self.run("systemctl", "is-system-running", "--wait", check=False, timeout=30)
            return p.stdout.strip() if p.stdout.strip() in ("running", "degraded") else None

        state = wait_for(booted, timeout=30, interval=0.2, what="the container to finish booting")
        if state != "running":
            sys.stderr.write(self.run("systemctl", "--failed", "--no-pager", check=False).stdout)

    def run(self, *cmd, check=True, timeout=30):
        """A command in the container's namespaces, as root (with the host's capabilities: only
        what the container's systemd starts runs under a unit's sandbox)."""
        # -r -w: the container's root and working directory, also where this script itself runs
        # chrooted (the distro leg), which entering the mount namespace alone does not change.
        p = subprocess.run(["nsenter", "-t", str(self.pid1), "-m", "-u", "-i", "-n", "-p", "-C", "-r", "-w", "--", *cmd],
                           capture_output=True, text=True, timeout=timeout, cwd="/")
        if check and p.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}: {p.stdout.strip()} {p.stderr.strip()}")
        return p

    def path(self, inside):
        """A path inside the running container, from the host."""
        return f"/proc/{self.pid1}/root/{inside.lstrip('/')}"

    def journal(self):
        """What the container's journal holds about trapstatd.service (systemd's lines too)."""
        return self.run("journalctl", "-u", "trapstatd.service", "--no-pager", "-o", "cat", check=False).stdout

    def read_log(self):
        try:
            with open(self.log_path) as f:
                return f.read()
        except OSError:
            return ""

    def stop(self):
        """Always runs: halts the container (then kills it), unmounts, removes the directory."""
        if self.nspawn and self.nspawn.poll() is None:
            # nspawn halts the container on the first SIGTERM, kills it on the second.
            for sig, wait in ((signal.SIGTERM, 5), (signal.SIGTERM, 5), (signal.SIGKILL, 10)):
                self.nspawn.send_signal(sig)
                try:
                    self.nspawn.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if self.nspawn:
            self.log.close()
        for target in reversed(self.mounts):
            if subprocess.run(["umount", target], capture_output=True).returncode != 0:
                subprocess.run(["umount", "-l", target], capture_output=True)
        self.mounts = []
        if self.dir:
            try:
                os.rmdir(self.dir)
            except OSError as e:
                print(f"could not remove {self.dir}: {e}", file=sys.stderr)
            if os.path.exists(self.log_path):
                os.unlink(self.log_path)
            self.dir = None


class System(unittest.TestCase):
    """The steps build on each other (one container, one database) and run in order."""

    c = None  # the Container, set by main
    totals = {}  # pid -> History total, as first seen

    def systemctl(self, *args, check=True):
        return self.c.run("systemctl", *args, check=check)

    def show(self, prop, unit="trapstatd.service"):
        return self.systemctl("show", "-P", prop, unit).stdout.strip()

    def trapstat(self, *args, check=True):
        # The installed client on its default socket path: the one the socket unit listens on.
        return self.c.run("trapstat", *args, check=check)

    def trapstat_json(self, *args):
        return json.loads(self.trapstat("--json", *args).stdout)

    def history(self, pid):
        p = self.trapstat("--json", "history", str(pid), check=False)
        return json.loads(p.stdout) if p.returncode == 0 else None

    def journal(self):
        return self.c.journal()

    def write_dropin(self, name, text):
        d = self.c.path(DROPIN_DIR)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
        self.systemctl("daemon-reload")

    def remove_dropin(self, name):
        os.unlink(os.path.join(self.c.path(DROPIN_DIR), name))
        self.systemctl("daemon-reload")

    def assert_running(self):
        self.assertEqual((self.show("ActiveState"), self.show("SubState")), ("active", "running"))

    def test_1_installed_units_verify_and_score(self):
        # What an administrator does after `meson install`: create the user and the group.
        self.c.run("systemd-sysusers")
        self.assertEqual(self.c.run("getent", "group", "trapstat", check=False).returncode, 0)
        self.assertEqual(self.c.run("getent", "passwd", "trapstatd", check=False).returncode, 0)

        p = self.c.run("systemd-analyze", "verify", "trapstatd.service", "trapstatd.socket", "trapstatd-report.socket",
                       "trapstat-exporter.service", "trapstat-exporter.socket", check=False)
        self.assertEqual((p.returncode, p.stdout + p.stderr), (0, ""))

        for name in ("trapstatd.service", "trapstat-exporter.service"):
            unit = os.path.join(env("UNITDIR"), name)
            p = self.c.run("systemd-analyze", "security", "--offline=yes", unit, check=False)
            m = re.search(rf"Overall exposure level for {re.escape(name)}: (\d+\.\d)", p.stdout)
            self.assertIsNotNone(m, p.stdout + p.stderr)
            print(f"systemd-analyze security: {name} exposure {m.group(1)}", file=sys.stderr)
            self.assertLessEqual(float(m.group(1)), 2.0)

    def test_1_installed_man_pages_and_completion(self):
        # Where `meson install` put them, man and bash-completion find them with no setup.
        for page, section in (("trapstat", "1"), ("trapstatd", "8"), ("trapstat-exporter", "1")):
            path = self.c.run("man", "-w", section, page).stdout.strip()
            self.assertTrue(path.startswith(env("PREFIX") + "/"), path)
            self.assertTrue(path.endswith(f"/man{section}/{page}.{section}"), path)
        for command in ("trapstat", "trapstat-exporter"):
            p = self.c.run("bash", "-c", f". /usr/share/bash-completion/bash_completion && __load_completion {command} && "
                           f"complete -p {command}")
            self.assertEqual(p.stdout.strip(), f"complete -F _{command.replace('-', '_')} {command}")

    def test_2_socket_activation(self):
        self.systemctl("enable", "--now", "trapstatd.socket")
        self.assertEqual(self.show("ActiveState", "trapstatd.socket"), "active")
        self.assertEqual(self.show("ActiveState"), "inactive")

        status = self.trapstat_json("status")  # the first connection starts the service
        self.assert_running()
        self.assertEqual(status["databasePath"], STATE_DB)
        # Every source attached under the unit's sandbox, none refused for want of a privilege.
        sources = {s["name"]: s for s in status["sources"]}
        for name in ("page_fault_user", "page_fault_kernel", "signal_generate", "sched_process_exit",
                     "sched_process_exec", "task_iterator"):
            self.assertTrue(sources[name]["active"], sources[name])

        # The daemon runs as its own user, with exactly CAP_BPF and CAP_PERFMON.
        uid = int(self.c.run("getent", "passwd", "trapstatd").stdout.split(":")[2])
        with open(self.c.path(f"proc/{self.show('MainPID')}/status")) as f:
            fields = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
        self.assertNotEqual(uid, 0)
        self.assertEqual(fields["Uid"].split(), [str(uid)] * 4)
        self.assertEqual(int(fields["CapEff"], 16), 1 << CAP_BPF | 1 << CAP_PERFMON)
        self.assertEqual(fields["NoNewPrivs"], "1")
        self.assertEqual(fields["Seccomp"], "2")

        # The unit's filter lets the background threads lower their own priority: each is
        # SCHED_BATCH (3), the symbol worker at nice 10 too; the event loop and the query
        # workers stay SCHED_OTHER (0).
        threads, task_dir = {}, self.c.path(f"proc/{self.show('MainPID')}/task")
        for tid in os.listdir(task_dir):
            with open(os.path.join(task_dir, tid, "stat")) as f:
                stat = f.read()
            comm = stat[stat.index("(") + 1:stat.rindex(")")]
            fields = stat[stat.rindex(")") + 2:].split()  # from field 3 (state) on
            threads.setdefault(comm, set()).add((int(fields[41 - 3]), int(fields[19 - 3])))
        self.assertEqual(threads.pop("trapstatd"), {(0, 0)})
        self.assertEqual(threads.pop("ts-query"), {(0, 0)})
        self.assertEqual(threads.pop("ts-symbols"), {(3, 10)})
        self.assertEqual(set(threads), {"ts-writer", "ts-checkpoint"}, threads)
        self.assertEqual(set().union(*threads.values()), {(3, 0)}, threads)

    def test_3_report_socket(self):
        # The report socket passed next to the main one, told apart by its name. systemd
        # starts no socket unit whose service is running already: the service stops first.
        self.systemctl("stop", "trapstatd.service")
        self.systemctl("enable", "--now", "trapstatd-report.socket")
        self.systemctl("start", "trapstatd.service")
        self.assert_running()
        path = self.c.path("/run/systemd/report/io.trapstat")
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)

        def names():
            return {m["name"] for m in self.report()}

        self.assertIn("io.trapstat.Drops", names())
        # Units' page faults from the first tick on.
        wait_for(lambda: "io.trapstat.PageFaults" in names(), what="io.trapstat.PageFaults in the report")
        # The main socket is still the main one.
        self.assertEqual(self.trapstat_json("status")["databasePath"], STATE_DB)

    def test_3_start_reaches_active_after_ready(self):
        self.systemctl("stop", "trapstatd.service")
        self.assertEqual(self.show("ActiveState"), "inactive")
        self.assertEqual(self.show("ActiveState", "trapstatd.socket"), "active")
        readies = self.journal().count("ready: tick 1000 ms")
        # Type=notify: start returns once READY=1 came, and only then is the unit active.
        self.systemctl("start", "trapstatd")
        self.assert_running()
        self.assertRegex(self.show("StatusText"), r"^(Counting page faults|Tracking \d+ processes)")
        wait_for(lambda: self.journal().count("ready: tick 1000 ms") == readies + 1, timeout=20,
                 what="the daemon's ready line")

    def report(self):
        """Every reply of io.systemd.Metrics.List on the report socket (test_3 enabled it)."""
        replies = []
        with Connection(self.c.path("/run/systemd/report/io.trapstat")) as c:
            c.send("io.systemd.Metrics.List", {}, more=True)
            while not replies or replies[-1].get("continues"):
                replies.append(c.read())
        return [r["parameters"] for r in replies]

    def transient_traps(self, name):
        """Runs raise-traps (N #UD and N #BP) as a transient unit of the container's systemd, to
        its end; the unit's name."""
        helper = "/usr/local/libexec/trapstat-test/raise-traps"
        os.makedirs(self.c.path(os.path.dirname(helper)), exist_ok=True)
        shutil.copy2(env("RAISE_TRAPS"), self.c.path(helper))
        unit = f"trapstat-{name}-{os.getpid()}.service"
        # Not --wait: that needs a D-Bus broker, which a minimal system (forky's) has not.
        self.c.run("systemd-run", "--quiet", "-p", "RemainAfterExit=yes", "--unit", unit, "--", helper, str(N),
                   "--only", "UD,BP")
        wait_for(lambda: self.show("SubState", unit) in ("exited", "failed"), timeout=30, what=f"{unit} to end")
        self.assertEqual((self.show("Result", unit), self.show("ExecMainStatus", unit)), ("success", "0"))
        self.systemctl("stop", unit)
        return unit

    def test_4_transient_unit_in_the_report(self):
        # A transient unit of the container's systemd. Its process runs in the container's pid
        # namespace, where the pid BPF reports (the host's) is no process or another one: the
        # daemon names its unit from the cgroup BPF saw it in at its exec.
        unit = self.transient_traps("transient")

        def traps():
            ms = [m for m in self.report() if m.get("object") == unit]
            by_vector = {m["fields"]["vector"]: m["value"] for m in ms if m["name"] == "io.trapstat.Traps"}
            return ms if by_vector.get("UD") == N and by_vector.get("BP") == N else None

        ms = wait_for(traps, timeout=20, what=f"the traps of {unit} in io.systemd.Metrics.List")
        # Exactly the unit's traps, and the page faults its process took.
        self.assertEqual(sorted((m["fields"]["vector"], m["value"]) for m in ms if m["name"] == "io.trapstat.Traps"),
                         [("BP", N), ("UD", N)])
        user = [m["value"] for m in ms if m["name"] == "io.trapstat.PageFaults" and m["fields"].get("mode") == "user"]
        self.assertTrue(user and sum(user) > 0, ms)
        # The same unit in the daemon's own history by unit, through the installed client.
        h = self.trapstat_json("history", "--unit", unit)
        self.assertEqual((h["total"]["traps"], h["processes"], h["running"]), ({"BP": N, "UD": N}, 1, 0))
        self.assertEqual(h["units"], [unit])

    def test_4_unit_of_a_process_older_than_the_daemon(self):
        # A service of the container's that runs from before trapstatd started, so no exec of
        # its shell is seen: the daemon names its unit from the cgroup id BPF recorded when the
        # process first faulted, by looking it up in the container's cgroup tree. Its children
        # (true, sleep) exec and are named as in the step before.
        # bash under a name of its own, which forks (dash would vfork: no fault of its own).
        unit, shell = f"trapstat-older-{os.getpid()}.service", "/usr/local/libexec/trapstat-test/older-loop"
        os.makedirs(self.c.path(os.path.dirname(shell)), exist_ok=True)
        shutil.copy2("/bin/bash", self.c.path(shell))
        self.systemctl("stop", "trapstatd.service")
        self.c.run("systemd-run", "--quiet", "--unit", unit, "--", shell, "-c", "while :; do /bin/true; sleep 0.1; done")
        try:
            self.systemctl("reset-failed", "trapstatd")  # below the start limit (see test_6)
            self.systemctl("start", "trapstatd.service")

            def rows():
                r = self.trapstat_json("top", "-b", "-n", "1", "--unit", unit, "--limit", "1000")["rows"]
                comms = {row["process"]["comm"] for row in r}
                return r if {"older-loop", "true", "sleep"} <= comms else None

            r = wait_for(rows, timeout=20, what=f"the processes of {unit} in Top")
            self.assertEqual({row["process"]["unit"] for row in r}, {unit})
            # The shell is the oldest older-loop; a child a tick caught between its fork and its
            # exec is one too, for that tick, under a pid of its own. The shell is listed once.
            sh = [row for row in r if row["process"]["comm"] == "older-loop"]
            shell = min(sh, key=lambda row: row["process"]["startTime"])["process"]
            self.assertEqual([row["process"]["startTime"] for row in r if row["process"]["pid"] == shell["pid"]],
                             [shell["startTime"]], sh)
            self.assertFalse(shell["exited"])
        finally:
            self.systemctl("stop", unit, check=False)

    def test_4_workload_in_top_and_history(self):
        # The workloads run on the host (see above).
        traps = run_workload("RAISE_TRAPS", N)
        pages = run_workload("FAULT_PAGES", PAGES)
        self.assertEqual(traps["traps"], {v: N for v in VECTORS})

        def rows():
            r = self.trapstat_json("top", "-b", "-n", "1", "--limit", "10000")["rows"]
            by_pid = {row["process"]["pid"]: row for row in r if row["process"]["exited"]}
            return by_pid if traps["pid"] in by_pid and pages["pid"] in by_pid else None

        top = wait_for(rows, timeout=20, what="both workloads in Top")
        self.assertEqual(top[traps["pid"]]["counters"]["traps"], {v: N for v in VECTORS})
        self.assertGreaterEqual(top[pages["pid"]]["counters"]["faults"]["user"], PAGES)
        text = self.trapstat("top", "-b", "-n", "1", "--limit", "10000").stdout
        self.assertRegex(text, rf"(?m)^\s*{traps['pid']}(\s+(\d+|-))? raise-traps\s")
        self.assertRegex(text, rf"(?m)^\s*{pages['pid']}(\s+(\d+|-))? fault-pages\s")

        h = self.history(traps["pid"])
        self.assertEqual(h["process"]["comm"], "raise-traps")
        self.assertEqual(h["total"]["traps"], {v: N for v in VECTORS})
        self.assertEqual(h["total"]["signals"], traps["signals"])

        h = self.history(pages["pid"])
        delta = pages["minfltAfter"] - pages["minfltBefore"]
        user = h["total"]["faults"]["user"]
        self.assertEqual(h["process"]["comm"], "fault-pages")
        self.assertLessEqual(abs(user - delta), delta * 0.01, f"user faults {user}, the helper's minflt delta {delta}")
        self.assertGreaterEqual(h["total"]["faults"]["write"], PAGES)
        text = self.trapstat("history", str(pages["pid"])).stdout
        self.assertIn(f"pid {pages['pid']} (fault-pages)", text)

        for p in (traps, pages):
            System.totals[p["pid"]] = self.history(p["pid"])["total"]

    def assert_history_kept(self):
        self.assertTrue(System.totals, "no history from the workload step")
        for pid, total in System.totals.items():
            h = self.history(pid)
            self.assertIsNotNone(h, f"history of pid {pid} is gone")
            self.assertEqual(h["total"], total)

    def test_5_restart_keeps_history(self):
        before = self.show("MainPID")
        self.systemctl("restart", "trapstatd")
        self.assert_running()
        self.assertNotEqual(self.show("MainPID"), before)
        self.assert_history_kept()

    def test_6_watchdog_restarts_a_hung_daemon(self):
        # A short watchdog, and no long wait for a stopped process to act on SIGABRT.
        self.write_dropin("50-test-watchdog.conf", "[Service]\nWatchdogSec=2s\nTimeoutAbortSec=1s\n")
        try:
            # The steps before started the unit often within seconds: below systemd's start
            # limit again, or the watchdog's own restart below would be refused.
            self.systemctl("reset-failed", "trapstatd")
            self.systemctl("restart", "trapstatd")
            self.assert_running()
            hung, restarts = self.show("MainPID"), int(self.show("NRestarts"))
            self.systemctl("kill", "--signal=SIGSTOP", "trapstatd")

            def stopped():
                # Pending until the daemon's threads next enter the kernel: not at once on a busy machine.
                with open(self.c.path(f"proc/{hung}/status")) as f:
                    return "State:\tT" in f.read()

            wait_for(stopped, timeout=10, interval=0.05, what="the daemon to stop on SIGSTOP")

            def restarted():
                return (self.show("ActiveState") == "active" and self.show("MainPID") not in ("0", hung)
                        and int(self.show("NRestarts")) == restarts + 1)

            wait_for(restarted, timeout=20, interval=0.2, what="systemd to restart the hung daemon")
            self.assertIn("Watchdog timeout", self.journal())
            self.assert_running()
            self.assert_history_kept()
        finally:
            self.remove_dropin("50-test-watchdog.conf")

    def test_7_fault_time_in_the_sandbox(self):
        # Off by default; turned on the way the manual says, by a drop-in: the completion's perf
        # events open under the unit's sandbox and every fresh page of the workload is timed.
        self.assertFalse({s["name"]: s for s in self.trapstat_json("status")["sources"]}["fault_time"]["active"])
        self.write_dropin("50-test-fault-time.conf", "[Service]\nExecStart=\n"
                          f"ExecStart={env('SBINDIR')}/trapstatd --enable-source fault_time\n")
        try:
            self.systemctl("reset-failed", "trapstatd")
            self.systemctl("restart", "trapstatd")
            self.assert_running()
            source = {s["name"]: s for s in self.trapstat_json("status")["sources"]}["fault_time"]
            self.assertTrue(source["active"], source)
            pages = run_workload("FAULT_PAGES", 3000)

            def timed():
                h = self.history(pages["pid"])
                return h and sum(h["total"]["faultTime"]["histogram"]) >= 3000 and h

            h = wait_for(timed, timeout=30, interval=0.5, what="the workload's faults timed in its history")
            self.assertGreater(h["total"]["faultTime"]["minorNs"], 0)
        finally:
            self.remove_dropin("50-test-fault-time.conf")
            self.systemctl("reset-failed", "trapstatd")
            self.systemctl("restart", "trapstatd")

    def test_7_stop_flushes_the_last_tick(self):
        # A tick that never comes: whatever is written, the final drain at stop wrote.
        self.write_dropin("50-test-tick.conf",
                          f"[Service]\nExecStart=\nExecStart={env('SBINDIR')}/trapstatd --tick 1h\n")
        try:
            # The steps before started the unit five times within seconds (socket activation,
            # start, restarts, the watchdog's): more than systemd's default start limit (5 in
            # 10 s) allows, which a faster machine reaches.
            self.systemctl("reset-failed", "trapstatd")
            self.systemctl("restart", "trapstatd")
            self.assert_running()
            wait_for(lambda: "ready: tick 3600000 ms" in self.journal(), timeout=20,
                     what="the daemon with the 1 h tick")
            pages = run_workload("FAULT_PAGES", 3000)
            self.systemctl("stop", "trapstatd")
            self.assertEqual(self.show("ActiveState"), "inactive")
            self.assertEqual((self.show("Result"), self.show("ExecMainStatus")), ("success", "0"))
            # The next query starts a new daemon, which never saw the workload: its history can
            # only come from the database the stopped one flushed.
            h = self.history(pages["pid"])
            self.assert_running()
            self.assertIsNotNone(h, "the stop did not flush the last tick")
            self.assertGreaterEqual(h["total"]["faults"]["user"], 3000)
            self.assertGreaterEqual(h["total"]["faults"]["write"], 3000)
        finally:
            self.remove_dropin("50-test-tick.conf")

    def test_8_exporter_under_systemd(self):
        # The exporter's units as shipped, on a free loopback port (the container shares the
        # host's network): socket activation, its sandbox, and a unit's traps on /metrics.
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        d = self.c.path("run/systemd/system/trapstat-exporter.socket.d")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "50-test-port.conf"), "w") as f:
            f.write(f"[Socket]\nListenStream=\nListenStream=127.0.0.1:{port}\n")
        self.systemctl("daemon-reload")
        # The daemon the step before left runs with its one-hour tick.
        self.systemctl("reset-failed", "trapstatd")
        self.systemctl("restart", "trapstatd.service")
        self.systemctl("enable", "--now", "trapstat-exporter.socket")
        self.assertEqual(self.show("ActiveState", "trapstat-exporter.service"), "inactive")
        unit = self.transient_traps("scraped")

        def scrape():
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
                return r.status, r.headers["Content-Type"], r.read().decode()

        last = {}

        def traps():
            status, ctype, text = scrape()
            last["text"] = text
            series = dict(re.findall(rf'(?m)^trapstat_traps_total{{vector="(\w+)",unit="{re.escape(unit)}"}} (\d+)$', text))
            return (ctype, text, series) if series.get("UD") == str(N) else None

        try:
            ctype, text, series = wait_for(traps, timeout=20, what=f"the traps of {unit} on /metrics")
        except AssertionError as e:
            raise AssertionError(f"{e}; the last scrape:\n{last.get('text')}") from None
        self.assertEqual(series, {"UD": str(N), "BP": str(N)})
        self.assertRegex(text, r"(?m)^trapstat_up 1$")
        self.assertTrue(ctype.startswith("text/plain; version=0.0.4"), ctype)
        # Started by its socket, under its own sandbox: a dynamic user, no capabilities.
        self.assertEqual(self.show("ActiveState", "trapstat-exporter.service"), "active")
        with open(self.c.path(f"proc/{self.show('MainPID', 'trapstat-exporter.service')}/status")) as f:
            fields = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
        self.assertNotEqual(fields["Uid"].split()[0], "0")
        self.assertEqual(int(fields["CapEff"], 16), 0)
        self.assertEqual((fields["NoNewPrivs"], fields["Seccomp"]), ("1", "2"))


def main():
    if os.geteuid() != 0:
        skip("needs root to boot a container and load BPF programs")
    if platform.machine() != "x86_64":
        skip(f"the trap workload (raise-traps) is x86-64 only, this machine is {platform.machine()}")

    # meson's timeout: stop at once and unwind through the cleanup below (unittest records
    # other exceptions, SystemExit too, and goes on with the next test; KeyboardInterrupt it
    # lets through).
    def terminate(sig, frame):
        raise KeyboardInterrupt(f"terminated by signal {sig}")

    signal.signal(signal.SIGTERM, terminate)
    c = Container()
    ok = False
    try:
        c.start()
        System.c = c
        started = time.monotonic()
        result = unittest.main(verbosity=2, exit=False).result
        ok = result.wasSuccessful()
        print(f"system suite: {time.monotonic() - started:.1f} s in the container", file=sys.stderr)
        if not ok:
            sys.stderr.write(f"--- journal of trapstatd.service in the container ---\n{c.journal()}\n")
    finally:
        c.stop()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
