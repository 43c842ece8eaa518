# SPDX-License-Identifier: MIT
"""The Debian packages (debian/) built by scripts/package.sh on this system, checked by lintian,
and installed, upgraded, removed, purged and reinstalled with apt in a booted container: the
system suite's (test_systemd.py: the host's root read-only under an overlay, systemd-nspawn),
with nothing of the project in it but what the packages bring.

The upgrade: packages built from OLD_COMMIT, the tree before migration 0007 and before debian/
(built with this tree's debian/, versioned below it), run and record a workload; then this tree's
packages are installed over them: the daemon is restarted by the upgrade, its database migrated,
and the old process's history is intact. Where git cannot read OLD_COMMIT (a tree without its
history), those two steps are skipped with the reason, and the others start from a fresh
install.

Needs root. Exits 77 (skipped) only where a container cannot be booted at all, or off x86-64 (the
trap workload raises x86 exceptions)."""
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "integration"))
from daemon import binary, copy_for_users, run_workload, skip, user_name, wait_for  # noqa: E402
from test_systemd import Container  # noqa: E402

# The previous release: main before issue 25's merges, with migrations 0001 to 0006.
OLD_COMMIT = "2198f31"
OLD_MIGRATIONS = 6  # its database's user_version
N = 300  # traps of each vector the workloads raise
STATE = "/var/lib/trapstatd"
DB = STATE + "/trapstat.db"
DEBS = "/var/tmp/trapstat-debs"  # in the container: new/ and old/
PACKAGES = ("trapstatd", "trapstat", "trapstat-exporter")

env = binary


def migrations():
    """How many migrations this tree has: the database's user_version once they all ran."""
    return len([f for f in os.listdir(os.path.join(env("MESON_SOURCE_ROOT"), "schema", "sql")) if f.endswith(".sql")])


def build(out, commit=None):
    """scripts/package.sh into out; its output (sizes, and lintian's tags for this tree's)."""
    args = [os.path.join(env("MESON_SOURCE_ROOT"), "scripts", "package.sh"), "-o", out]
    if commit:
        args += ["-c", commit, "--no-lintian"]  # a fixture, never shipped: only this tree's are checked
    p = subprocess.run(args, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise AssertionError(f"package.sh {' '.join(args[1:])} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    return p.stdout


def old_commit_readable():
    src = env("MESON_SOURCE_ROOT")  # maybe another user's (a CI checkout): git is told it is safe
    p = subprocess.run(["git", "-c", f"safe.directory={os.path.realpath(src)}", "-C", src, "rev-parse", "--verify",
                        "-q", OLD_COMMIT + "^{commit}"], capture_output=True, text=True)
    return p.returncode == 0


class PackageContainer(Container):
    """The system suite's container, with the packages copied in instead of `meson install`."""

    debs = {}  # "new"/"old" -> directory on the host

    def _install(self):
        # The host's own image may carry Docker's policy-rc.d, which denies every start from a
        # maintainer script (exit 101): not what a booted system has, and it would hide whether
        # the packages start what they should.
        policy = os.path.join(self.root, "usr/sbin/policy-rc.d")
        if os.path.lexists(policy):
            os.unlink(policy)
        for kind, directory in self.debs.items():
            target = os.path.join(self.root, DEBS.lstrip("/"), kind)
            os.makedirs(target)
            for name in os.listdir(directory):
                if name.endswith(".deb") and "-dbgsym_" not in name:
                    shutil.copy(os.path.join(directory, name), target)
            # apt reads local packages as its own unprivileged user.
            for d, _, files in os.walk(os.path.join(self.root, DEBS.lstrip("/"))):
                os.chmod(d, 0o755)
                for f in files:
                    os.chmod(os.path.join(d, f), 0o644)


class Package(unittest.TestCase):
    """The steps build on each other (one container) and run in order."""

    c = None  # the PackageContainer, set by main
    lintian = {}  # "new" -> package.sh's output
    totals = None  # the old daemon's history of the workload
    workload = None
    files = []  # dpkg -L of the installed packages, before the purge

    def run_in(self, *cmd, check=True, timeout=60):
        return self.c.run(*cmd, check=check, timeout=timeout)

    def apt(self, *args):
        return self.run_in("env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-y", "-q", "--no-install-recommends",
                           *args, timeout=180)

    def debs(self, kind, *names):
        return [f"{DEBS}/{kind}/{f}" for f in sorted(os.listdir(self.c.path(f"{DEBS}/{kind}")))
                if f.split("_")[0] in names]

    def show(self, prop, unit="trapstatd.service"):
        return self.run_in("systemctl", "show", "-P", prop, unit).stdout.strip()

    def trapstat_json(self, *args, user=None):
        cmd = ["/usr/bin/trapstat", "--json", *args]
        if user:
            cmd = ["runuser", "-u", user, "--", *cmd]
        return json.loads(self.run_in(*cmd).stdout)

    def history(self, pid):
        p = self.run_in("/usr/bin/trapstat", "--json", "history", str(pid), check=False)
        return json.loads(p.stdout) if p.returncode == 0 else None

    def user_version(self):
        """PRAGMA user_version, read from the database header (offset 60, big-endian) once the
        daemon stopped: no SQLite connection beside the daemon's, and the migrations' writes
        checkpointed out of the write-ahead log into the file by its close."""
        self.run_in("systemctl", "stop", "trapstatd.service")
        with open(self.c.path(DB), "rb") as f:
            return int.from_bytes(f.read(64)[60:64], "big")

    def status(self, package):
        p = self.run_in("dpkg-query", "-W", "-f=${db:Status-Abbrev}", package, check=False)
        return p.stdout.strip() if p.returncode == 0 else "not known"

    def assert_socket_activated(self):
        """The socket listens, the service waits for the first query, which starts it."""
        self.assertEqual(self.run_in("systemctl", "is-enabled", "trapstatd.socket").stdout.strip(), "enabled")
        self.assertEqual(self.show("ActiveState", "trapstatd.socket"), "active")
        self.assertEqual(self.show("ActiveState"), "inactive")
        status = self.trapstat_json("status")
        self.assertEqual((self.show("ActiveState"), self.show("SubState")), ("active", "running"))
        self.assertEqual(status["databasePath"], DB)
        return status

    def workload_traps(self):
        traps = run_workload("RAISE_TRAPS", N, "--only", "UD,BP")
        self.assertEqual(traps["traps"], {"UD": N, "BP": N})
        return traps

    def wait_history(self, pid):
        return wait_for(lambda: (h := self.history(pid)) and h["total"]["traps"] == {"UD": N, "BP": N} and h,
                        timeout=30, what=f"the history of pid {pid}")

    def test_0_lintian_clean(self):
        # package.sh fails on any error or warning; what is left are info tags, printed.
        for kind, out in Package.lintian.items():
            tags = [line for line in out.splitlines() if re.match(r"\s+lintian: [A-Z]: ", line)]
            print(f"{kind} packages:\n{out}", file=sys.stderr)
            self.assertEqual([t for t in tags if re.match(r"\s+lintian: [EW]: ", t)], [])

    def test_1_old_release_records(self):
        if "old" not in PackageContainer.debs:
            self.skipTest(f"git cannot read {OLD_COMMIT} here: no previous release to upgrade from")
        self.apt("install", *self.debs("old", "trapstatd", "trapstat"))
        self.assertEqual(self.status("trapstatd"), "ii")
        self.assertRegex(self.run_in("dpkg-query", "-W", "-f=${Version}", "trapstatd").stdout, r"~git\.")
        self.assert_socket_activated()
        traps = self.workload_traps()
        Package.totals = self.wait_history(traps["pid"])["total"]
        Package.workload = traps["pid"]
        self.assertEqual(self.user_version(), OLD_MIGRATIONS)

    def test_2_upgrade_keeps_history(self):
        upgrading = Package.workload is not None
        before = None
        if upgrading:
            self.run_in("/usr/bin/trapstat", "status")  # the old daemon runs: the upgrade restarts it
            before = self.show("MainPID")
        self.apt("install", *self.debs("new", *PACKAGES))
        for p in PACKAGES:
            self.assertEqual(self.status(p), "ii", p)
        self.assertNotRegex(self.run_in("dpkg-query", "-W", "-f=${Version}", "trapstatd").stdout, r"~git\.")
        if upgrading:
            # Restarted by the upgrade (try-restart: it was running): the running daemon is the
            # new binary, not the old one's deleted file.
            self.assertEqual((self.show("ActiveState"), self.show("SubState")), ("active", "running"))
            self.assertNotEqual(self.show("MainPID"), before)
            # Read from outside the container, the link names the file as the reader's root sees
            # it (the whole path from the machine's root in the forky leg's chroot); an old
            # binary that the upgrade replaced would end in " (deleted)".
            exe = os.readlink(self.c.path(f"proc/{self.show('MainPID')}/exe"))
            self.assertTrue(exe == "/usr/sbin/trapstatd" or exe.endswith("/rootfs/usr/sbin/trapstatd"), exe)
            h = self.history(Package.workload)
            self.assertIsNotNone(h, f"the old daemon's history of pid {Package.workload} is gone")
            # Every count as the old daemon stored it; what it did not measure reads as none: the
            # fault time (migration 0009 added it), the major faults by cause and their time
            # (0014), and the kernel's delay accounting (0015: null while the kernel keeps none,
            # as in this container's host unless it was turned on; zeros for the old rows if so).
            total = json.loads(json.dumps(h["total"]))
            old = json.loads(json.dumps(Package.totals))
            for counters in (total, old):
                counters["faults"].pop("majorByCause", None)
                counters.get("faultTime", {}).pop("majorNsByCause", None)
            stall = total.pop("stall", None)
            self.assertTrue(stall is None or not any(stall.values()), stall)
            old.pop("stall", None)
            self.assertEqual(h["total"]["faults"]["majorByCause"], {"file": 0, "anon": 0, "shmem": 0})
            self.assertEqual(h["total"]["faultTime"]["majorNsByCause"], {"file": 0, "anon": 0, "shmem": 0})
            fault_time = total.pop("faultTime", None)
            if "faultTime" not in old:
                self.assertEqual(fault_time, {"minorNs": 0, "majorNs": 0, "kernelNs": 0, "maxNs": 0, "histogram": [0] * 24})
                self.assertEqual(total, old)
            else:
                self.assertEqual({**total, "faultTime": fault_time}, old)
            self.assertEqual(self.user_version(), migrations())
        # The exporter's units, the report socket and the service: installed, not enabled, not
        # started. "indirect" is how systemd says "not enabled" of a unit whose [Install] has
        # Also= (its socket), depending on its version and on what else is enabled.
        for unit in ("trapstat-exporter.socket", "trapstat-exporter.service", "trapstatd-report.socket",
                     "trapstatd.service"):
            state = self.run_in("systemctl", "is-enabled", unit, check=False).stdout.strip()
            self.assertIn(state, ("disabled", "indirect"), unit)
            if unit != "trapstatd.service":
                self.assertEqual(self.show("ActiveState", unit), "inactive", unit)
        self.run_in("systemctl", "stop", "trapstatd.service")
        status = self.assert_socket_activated()
        for s in status["sources"]:
            if s["name"] in ("page_fault_user", "signal_generate", "sched_process_exit"):
                self.assertTrue(s["active"], s)
        # The system user and group, from the sysusers.d snippet.
        self.assertEqual(self.run_in("getent", "group", "trapstat", check=False).returncode, 0)
        uid = int(self.run_in("getent", "passwd", "trapstatd").stdout.split(":")[2])
        with open(self.c.path(f"proc/{self.show('MainPID')}/status")) as f:
            self.assertIn(f"Uid:\t{uid}\t", f.read())

    def test_3_a_user_sees_only_their_own(self):
        name = user_name("trapstat-pkg")
        self.run_in("useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name)
        uid, gid = (int(x) for x in self.run_in("getent", "passwd", name).stdout.split(":")[2:4])
        self.assertNotIn(name, self.run_in("getent", "group", "trapstat").stdout)
        self.run_in("/usr/bin/trapstat", "status")  # the daemon runs and counts the workload
        # The workload under that uid on the host, where the daemon sees its pid.
        with tempfile.TemporaryDirectory() as d:
            helper = copy_for_users(d, "RAISE_TRAPS")["RAISE_TRAPS"]
            p = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", helper, str(N),
                                "--only", "UD"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        pid = json.loads(p.stdout)["pid"]

        def procs(user=None):
            return self.trapstat_json("procs", "--exited", user=user)["processes"]

        mine = wait_for(lambda: (ps := procs(name)) and any(x["pid"] == pid for x in ps) and ps, timeout=30,
                        what=f"pid {pid} in the user's procs")
        self.assertEqual({x["uid"] for x in mine}, {uid})
        self.assertIn(0, {x["uid"] for x in procs()})  # root sees every user's
        self.assertEqual(self.trapstat_json("status", user=name)["databasePath"], DB)

    def test_4_security_as_before(self):
        # The packaged unit scores as the tree's own does (test_systemd.py's bound, 2.0).
        scores = {}
        build_unit = os.path.join(env("MESON_BUILD_ROOT"), "units", "trapstatd.service")
        analyze = ["systemd-analyze", "security", "--offline=yes"]
        for where, unit in (("package", self.installed_unit("trapstatd.service")), ("tree", build_unit)):
            if where == "package":  # in the container, where the package installed it
                p = self.run_in(*analyze, unit, check=False)
            else:
                p = subprocess.run([*analyze, unit], capture_output=True, text=True)
            m = re.search(r"Overall exposure level for trapstatd\.service: (\d+\.\d)", p.stdout)
            self.assertIsNotNone(m, p.stdout + p.stderr)
            scores[where] = float(m.group(1))
        print(f"systemd-analyze security trapstatd.service: {scores}", file=sys.stderr)
        self.assertEqual(scores["package"], scores["tree"])
        self.assertLessEqual(scores["package"], 2.0)

    def installed_unit(self, name):
        return next(f for f in self.run_in("dpkg", "-L", "trapstatd").stdout.split() if f.endswith("/" + name))

    def test_5_remove_stops_and_keeps_state(self):
        self.run_in("/usr/bin/trapstat", "status")  # running, so that remove has it to stop
        Package.files = [f for p in PACKAGES for f in self.run_in("dpkg", "-L", p).stdout.split()
                         if not os.path.isdir(self.c.path(f))]
        main_pid = self.show("MainPID")
        self.apt("remove", *PACKAGES)
        # trapstatd is remembered for its purge (its postrm removes the state); trapstat, with
        # neither configuration files nor a postrm, is forgotten at once.
        self.assertEqual([self.status(p) for p in PACKAGES], ["rc", "un", "rc"])
        for unit in ("trapstatd.socket", "trapstatd.service"):
            self.assertEqual(self.show("ActiveState", unit), "inactive", unit)
        self.assertFalse(os.path.exists(self.c.path(f"proc/{main_pid}")), "the daemon still runs")
        self.assertTrue(os.path.isfile(self.c.path(DB)), "remove took the database")
        self.assertFalse(os.path.exists(self.c.path("usr/sbin/trapstatd")))

    def test_6_purge_leaves_nothing(self):
        self.apt("purge", *PACKAGES)
        for p in PACKAGES:
            self.assertEqual(self.status(p), "not known", p)
        self.assertFalse(os.path.exists(self.c.path(STATE)), "purge left the state directory")
        self.assertTrue(Package.files)
        self.assertEqual([f for f in Package.files if os.path.lexists(self.c.path(f))], [])
        # No unit left enabled: deb-systemd-helper's state and symlinks are gone with it.
        p = self.run_in("sh", "-c", "find /etc/systemd/system /var/lib/systemd/deb-systemd-helper-enabled "
                        "-name 'trapstat*'", check=False)
        self.assertEqual(p.stdout.strip(), "")

    def test_7_reinstall(self):
        self.apt("install", *self.debs("new", "trapstatd", "trapstat"))
        self.assert_socket_activated()
        if Package.workload is not None:
            self.assertIsNone(self.history(Package.workload), "a purged history came back")
        traps = self.workload_traps()
        self.wait_history(traps["pid"])
        self.assertEqual(self.user_version(), migrations())


def main():
    if os.geteuid() != 0:
        skip("needs root to build packages, boot a container and load BPF programs")
    if platform.machine() != "x86_64":
        skip(f"the trap workload (raise-traps) is x86-64 only, this machine is {platform.machine()}")

    def terminate(sig, frame):
        raise KeyboardInterrupt(f"terminated by signal {sig}")

    signal.signal(signal.SIGTERM, terminate)
    started = time.monotonic()
    out = os.path.join(env("MESON_BUILD_ROOT"), "deb")
    Package.lintian["new"] = build(os.path.join(out, "new"))
    PackageContainer.debs["new"] = os.path.join(out, "new")
    if old_commit_readable():
        print(build(os.path.join(out, "old"), OLD_COMMIT), file=sys.stderr)
        PackageContainer.debs["old"] = os.path.join(out, "old")
    else:
        print(f"git cannot read {OLD_COMMIT} in {env('MESON_SOURCE_ROOT')}: the upgrade steps are skipped",
              file=sys.stderr)
    built = time.monotonic()
    c = PackageContainer()
    ok = False
    try:
        c.start()
        Package.c = c
        result = unittest.main(verbosity=2, exit=False).result
        ok = result.wasSuccessful()
        print(f"package suite: {built - started:.1f} s building, {time.monotonic() - built:.1f} s in the container",
              file=sys.stderr)
        if not ok:
            sys.stderr.write(f"--- journal of trapstatd.service in the container ---\n{c.journal()}\n")
    finally:
        c.stop()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
