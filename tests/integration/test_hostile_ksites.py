# SPDX-License-Identifier: MIT
"""The kernel's site hash under a hostile user, a real unprivileged one: 16 processes trapping at
110 addresses each, over and over, cannot take the hash (a per-user share per tick, a reserve for
root), and every refused site is a counted drop, exactly; a process trapping at more addresses
than its per-process share, spread over ticks, keeps all of them (sites leave the hash once
drained); with a second trapstatd attached first, every VMA lookup of this one fails (-EBUSY) and
is counted, and the sites of a live process are named from /proc/PID/maps all the same.

usage (through meson test): test_hostile_ksites.py"""
import grp
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import (user_name, Daemon, assert_usage_errors, binary, copy_for_users, create_user, history,  # noqa: E402
                    remove_user, require_feature, require_root_and_bpf, require_x86_64, trapstat, trapstat_json,
                    wait_for)

USER = user_name("trapstat-ksites")


def drops(d):
    return {k["kind"]: k["count"] for k in trapstat_json(d.socket, "status")["dropsByKind"]}


def sites_of(d, pid):
    """The trap sites of pid, or None while the daemon does not know the process yet."""
    p = trapstat(d.socket, "call", "io.trapstat.Sites", json.dumps({"pid": pid, "kind": "trap", "limit": 10000}),
                 check=False)
    if p.returncode != 0:
        return None
    return json.loads(p.stdout)["sites"]


def settled(get, what, timeout=30, d=None):
    """get()'s answer once two of them a second apart are the same (and not None)."""
    previous = [None]

    def same():
        now = get()
        ok = now is not None and now == previous[0]
        previous[0] = now
        return now if ok else None

    try:
        return wait_for(same, timeout=timeout, interval=1, what=what)
    except AssertionError as e:
        raise AssertionError(f"{e}; drops: {drops(d)}") if d else e


def traps_counted(d, pid, n):
    """Waits for History to show pid's n #UD traps (exact, drained each tick); the sites go with them."""
    def get():
        h = history(d, pid)
        return h if h and sum(h["total"]["traps"].values()) == n else None

    return wait_for(get, timeout=30, what=f"{n} traps of {pid} in History")


class Workloads:
    """site-traps copies any user may run, in the daemon's directory (with its library)."""

    def __init__(self, d):
        self.paths = copy_for_users(d.dir, "SITE_TRAPS")
        self.exe = os.path.realpath(self.paths["SITE_TRAPS"])
        self.lib = os.path.join(d.dir, "libsite-traps.so")
        shutil.copy2(os.path.join(os.path.dirname(binary("SITE_TRAPS")), "libsite-traps.so"), self.lib)
        os.chmod(self.lib, 0o755)
        self.lib = os.path.realpath(self.lib)

    def start(self, user, *args):
        """site-traps args as user (a pwd entry; root: None); (process, pid). The user's own gid: a
        gid of the uid's number may be group trapstat's, which is privileged."""
        prefix = [] if user is None else ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}",
                                          "--init-groups"]
        p = subprocess.Popen(prefix + [self.exe, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        line = p.stdout.readline().split()
        if line[:1] != ["pid"]:
            p.kill()
            raise AssertionError(f"site-traps {args}: {line} {p.stderr.read()}")
        return p, int(line[1])

    @staticmethod
    def wait_done(p, step):
        """Reads p's lines up to "done STEP"."""
        for line in p.stdout:
            if line.startswith(f"done {step}"):
                return
        raise AssertionError(f"site-traps ended before done {step}: {p.stderr.read()}")

    @staticmethod
    def stop(p):
        if p.poll() is None:
            p.send_signal(signal.SIGUSR1)  # the end of its hold
        p.communicate(timeout=30)
        if p.returncode != 0:
            raise AssertionError(f"site-traps exited {p.returncode}")


class UserShare(unittest.TestCase):
    """16 processes of one user trap at 110 addresses each, 15 times over, while root traps: with a
    share of 500 per user per tick, root's sites are recorded during and after the storm, and the
    user's traps without a site are exactly the site_user_limit drops. (On main, 16 processes of
    one user holding 1100 sites each took the whole map from root for as long as they lived.)
    The map itself is large: other processes on a busy machine (a storm of root's short-lived
    trapping processes, one site each) must not fill a tick's room."""

    PROCS, SPREAD, ROUNDS = 16, 110, 15

    def test_one_user_cannot_take_the_site_map(self):
        # No fault sites: the user's page faults would take from the same share.
        args = ["--max-sites", "30000", "--max-sites-per-process", "200", "--max-sites-per-user", "500",
                "--site-reserve", "200", "--fault-sample", "0"]
        with Daemon(extra_args=args) as d:
            user = create_user(USER)
            hostile, during, after = [], None, None
            try:
                w = Workloads(d)
                before = drops(d)
                for _ in range(self.PROCS):
                    hostile.append(w.start(user, "--spread", self.SPREAD, "--rounds", self.ROUNDS, "--pause", 50,
                                           "--hold-after", 60))
                # Root traps during the storm (at one instruction), then at 150 addresses once the
                # storm is over while its processes live on.
                time.sleep(0.3)
                during, during_pid = w.start(None, "--ud", 5, "--hold-after", 60)
                Workloads.wait_done(during, "ud")
                for p, _ in hostile:
                    Workloads.wait_done(p, "spread")
                after, after_pid = w.start(None, "--spread", 150, "--hold-after", 60)
                Workloads.wait_done(after, "spread")

                root_during = settled(lambda: sites_of(d, during_pid) or None, "root's sites during the storm", d=d)
                self.assertEqual([(s["symbol"], s["count"]) for s in root_during], [("site_ud_main", 5)])
                root_after = settled(lambda: sites_of(d, after_pid) or None, "root's sites after the storm", d=d)
                self.assertEqual((len(root_after), sum(s["count"] for s in root_after)), (150, 150))

                # Every trap of the user either has a site or is a site_user_limit drop.
                total = self.SPREAD * self.ROUNDS
                for _, pid in hostile:
                    traps_counted(d, pid, total)
                recorded = settled(lambda: {pid: sites_of(d, pid) for _, pid in hostile}, "the user's sites")
                counted = sum(s["count"] for ss in recorded.values() for s in ss)
                refused = self.PROCS * total - counted
                delta = {k: v - before[k] for k, v in drops(d).items()}
                self.assertGreater(refused, 0)
                self.assertEqual(delta["site_user_limit"], refused, delta)
                # Anonymous code, also where a lookup failed (another daemon on the machine): the
                # processes live on, and keep the code mapped.
                self.assertEqual({(s["object"], s["vector"]) for ss in recorded.values() for s in ss},
                                 {("[anon]", "UD")})
                sys.stderr.write(f"user's traps {self.PROCS * total}: {counted} with a site, {refused} refused\n")
                Workloads.stop(during)
                Workloads.stop(after)
                for p, _ in hostile:
                    Workloads.stop(p)
            finally:
                for p, _ in hostile + [(during, 0), (after, 0)]:
                    if p and p.poll() is None:
                        p.kill()
                        p.communicate()
                remove_user(USER)


class Reserve(unittest.TestCase):
    """8 processes of one user trap at 110 addresses each, 15 times over, with a per-user share
    larger than what others may take (--max-sites-per-user 2000) but all of the map's 30000 but
    300 reserved (--site-reserve 29700; large, so that other processes on a busy machine do not
    fill it): root's process and one of a member of group trapstat (a supplementary group, as
    setpriv --init-groups gives it), trapping at 100 addresses 3 times over during the storm,
    have every site; the user's traps without one are site_reserve drops."""

    PROCS, SPREAD, ROUNDS = 8, 110, 15
    MEMBER = user_name("trapstat-ksites-m")

    def test_root_and_group_trapstat_keep_the_reserve(self):
        args = ["--max-sites", "30000", "--site-reserve", "29700", "--max-sites-per-user", "2000",
                "--max-sites-per-process", "200", "--fault-sample", "0"]
        try:
            grp.getgrnam("trapstat")
            created_group = False
        except KeyError:
            subprocess.run(["groupadd", "--system", "trapstat"], check=True)
            created_group = True
        procs = []
        with Daemon(extra_args=args) as d:
            user = create_user(USER)
            member = create_user(self.MEMBER)
            try:
                subprocess.run(["gpasswd", "--add", self.MEMBER, "trapstat"], check=True, capture_output=True)
                w = Workloads(d)
                before = drops(d)
                hostile = [w.start(user, "--spread", self.SPREAD, "--rounds", self.ROUNDS, "--pause", 50,
                                   "--hold-after", 60) for _ in range(self.PROCS)]
                procs += hostile
                time.sleep(0.3)
                privileged = [w.start(who, "--spread", 100, "--rounds", 3, "--pause", 50, "--hold-after", 60)
                              for who in (None, member)]
                procs += privileged
                for p, _ in procs:
                    Workloads.wait_done(p, "spread")

                for _, pid in privileged:
                    s = settled(lambda: sites_of(d, pid), f"the sites of {pid}")
                    self.assertEqual((len(s), sum(x["count"] for x in s)), (100, 300), pid)
                total = self.SPREAD * self.ROUNDS
                for _, pid in hostile:
                    traps_counted(d, pid, total)
                recorded = settled(lambda: {pid: sites_of(d, pid) for _, pid in hostile}, "the user's sites")
                refused = self.PROCS * total - sum(x["count"] for ss in recorded.values() for x in ss)
                delta = {k: v - before[k] for k, v in drops(d).items()}
                self.assertGreater(refused, 0)
                # At least the user's: other users' processes on the machine meet the same reserve.
                self.assertGreaterEqual(delta["site_reserve"], refused, delta)
                self.assertEqual(delta["site_user_limit"], 0, delta)
                for p, _ in procs:
                    Workloads.stop(p)
            finally:
                for p, _ in procs:
                    if p.poll() is None:
                        p.kill()
                        p.communicate()
                remove_user(USER)
                remove_user(self.MEMBER)
                if created_group:
                    subprocess.run(["groupdel", "trapstat"], check=False)


class Drained(unittest.TestCase):
    """A live process traps at 300 addresses, 20 every 0.4 s, under --max-sites-per-process 100:
    its sites leave the hash each tick, so it is never refused and all 300 are recorded (on main:
    100, the rest site_process_limit, for as long as it lived). A tick (200 ms) late by 2 s on a
    loaded machine under ASan still holds at most 100."""

    def test_sites_leave_the_hash_once_drained(self):
        with Daemon(extra_args=["--max-sites-per-process", "100", "--fault-sample", "0"]) as d:
            user = create_user(USER)
            p = None
            try:
                w = Workloads(d)
                p, pid = w.start(user, "--spread", 300, "--chunk", 20, "--pause", 400, "--hold-after", 60)
                Workloads.wait_done(p, "spread")
                traps_counted(d, pid, 300)
                s = settled(lambda: sites_of(d, pid), "the sites of the live process")
                self.assertEqual((len(s), sum(x["count"] for x in s)), (300, 300), drops(d))
                self.assertFalse(history(d, pid)["process"]["exited"])
                Workloads.stop(p)
            finally:
                if p and p.poll() is None:
                    p.kill()
                remove_user(USER)


class SecondDaemon(unittest.TestCase):
    """Another trapstatd attached first holds the per-CPU VMA lookup whenever a trap is recorded:
    every lookup of this daemon fails (-EBUSY). Each one is a site_lookup_failed drop; every trap
    still has its site, and a live process's sites are named from /proc/PID/maps (file, offset,
    symbol); a process gone before the tick keeps [unknown] and its address."""

    def test_failed_lookups_are_counted_and_named(self):
        with Daemon() as first, Daemon() as d:
            user = create_user(USER)
            p = None
            try:
                w = Workloads(d)
                before = drops(d)
                p, pid = w.start(user, "--ud", 50, "--bp", 20, "--hold-after", 60)
                Workloads.wait_done(p, "bp")
                traps_counted(d, pid, 70)
                s = settled(lambda: sites_of(d, pid), "the sites of the live process")
                self.assertEqual(sorted((x["object"], x["symbol"], x["vector"], x["count"]) for x in s),
                                 sorted([(w.exe, "site_ud_main", "UD", 50), (w.lib, "site_bp_lib", "BP", 20)]), s)
                Workloads.stop(p)

                # Gone before it was drained: nothing to name it from.
                gone, gone_pid = w.start(user, "--ud", 7)
                gone.communicate(timeout=30)
                traps_counted(d, gone_pid, 7)
                s = settled(lambda: sites_of(d, gone_pid), "the sites of the exited process")
                self.assertEqual([(x["object"], x["count"]) for x in s], [("[unknown]", 7)])
                self.assertGreater(s[0]["offset"], 0)  # the instruction's address

                # The other daemon looks up a VMA for every #UD (its address) and for the first int3
                # in the library; a later int3 (no address) in the code mapping it remembers needs
                # none, and ours may then succeed.
                self.assertGreaterEqual(drops(d)["site_lookup_failed"] - before["site_lookup_failed"], 50 + 7 + 1)
            finally:
                if p and p.poll() is None:
                    p.kill()
                remove_user(USER)


class Options(unittest.TestCase):
    """The site options refuse what they cannot hold, in one line, before anything starts."""

    def test_bad_values(self):
        def run(*args):
            return subprocess.run([binary("TRAPSTATD"), "--state-dir", "/nonexistent", *args], capture_output=True,
                                  text=True, timeout=30)

        assert_usage_errors(self, run, [
            (["--max-sites-per-user", "0"], "invalid --max-sites-per-user '0': expected 1 to 4194304"),
            (["--site-reserve", "-1"], "invalid --site-reserve '-1': expected 0 to 4194303"),
            (["--max-sites", "100", "--site-reserve", "100"], "invalid --site-reserve: it must be less than --max-sites"),
            (["--site-reserve", "16384"], "invalid --site-reserve: it must be less than --max-sites"),
            (["--site-maps-lines", "x"], "invalid --site-maps-lines 'x': expected 0 to 1073741824"),
        ], usage="Try 'trapstatd --help'.")


if __name__ == "__main__":
    require_root_and_bpf()
    require_x86_64()  # the workload raises x86 exceptions
    require_feature("trap_sites")
    unittest.main(verbosity=2)
