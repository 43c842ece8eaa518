# SPDX-License-Identifier: MIT
"""Access by SO_PEERCRED, with a real unprivileged user: others see only their own processes and
get PermissionDenied for anyone else's; members of group trapstat see everything."""
import grp
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import (user_name, Daemon, binary, copy_for_users, create_user, exited_history,  # noqa: E402
                    remove_user, require_root_and_bpf)

USER = user_name("trapstat-access-test")
GROUP = "trapstat"


class Access(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.uid = create_user(USER).pw_uid
        try:
            grp.getgrnam(GROUP)
            cls.created_group = False
        except KeyError:
            subprocess.run(["groupadd", "--system", GROUP], check=True)
            cls.created_group = True
        cls.daemon = Daemon().__enter__()
        # The user needs to reach the socket and run the binaries: a world-readable copy.
        cls.bin = copy_for_users(cls.daemon.dir, "TRAPSTAT", "FAULT_PAGES")

    @classmethod
    def tearDownClass(cls):
        try:
            cls.daemon.__exit__(None, None, None)
        finally:
            remove_user(USER)
            if cls.created_group:
                subprocess.run(["groupdel", GROUP], check=False)

    def as_user(self, *args, check=True):
        # --init-groups: the user's groups as /etc/group has them now.
        p = subprocess.run(["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--init-groups", *args],
                           capture_output=True, text=True, timeout=30)
        if check and p.returncode != 0:
            raise AssertionError(f"{args} as {USER} exited {p.returncode}: {p.stderr.strip()}")
        return p

    def trapstat_as_user(self, *args, check=True):
        return self.as_user(self.bin["TRAPSTAT"], "--socket", self.daemon.socket, *args, check=check)

    def run_helpers(self):
        root = json.loads(subprocess.run([self.bin["FAULT_PAGES"], "500"], capture_output=True, text=True,
                                         check=True).stdout)["pid"]
        user = json.loads(self.as_user(self.bin["FAULT_PAGES"], "500").stdout)["pid"]
        for pid in (root, user):
            exited_history(self.daemon, pid)
        return root, user

    def set_membership(self, member):
        if member == (USER in grp.getgrnam(GROUP).gr_mem):
            return
        subprocess.run(["gpasswd", "--add" if member else "--delete", USER, GROUP], check=True,
                       capture_output=True)

    def test_other_users_see_only_their_own(self):
        self.set_membership(False)
        root, user = self.run_helpers()

        rows = json.loads(self.trapstat_as_user("--json", "top", "-b", "-n", "1", "--limit", "10000").stdout)["rows"]
        self.assertTrue(rows)
        self.assertEqual({r["process"]["uid"] for r in rows}, {self.uid})
        self.assertIn(user, {r["process"]["pid"] for r in rows})

        procs = json.loads(self.trapstat_as_user("call", "io.trapstat.ListProcesses",
                                                 '{"includeExited": true}').stdout)["processes"]
        self.assertEqual({p["uid"] for p in procs}, {self.uid})

        self.assertEqual(json.loads(self.trapstat_as_user("--json", "history", str(user)).stdout)["process"]["pid"],
                         user)
        p = self.trapstat_as_user("history", str(root), check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("permission denied", p.stderr)
        self.assertEqual(p.stderr.count("\n"), 1)

    def test_watch_streams_only_their_own(self):
        self.set_membership(False)
        # A Watch client running as the user: prints the rows' (pid, uid) of 15 ticks after the first.
        client = ("import json, socket, sys\n"
                  "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(20)\n"
                  "s.sendall(json.dumps({'method': 'io.trapstat.Watch', 'parameters': {'limit': 10000},"
                  " 'more': True}).encode() + b'\\0')\n"
                  "buf = b''\n"
                  "for i in range(16):\n"
                  "    while b'\\0' not in buf: buf += s.recv(65536)\n"
                  "    msg, buf = buf.split(b'\\0', 1)\n"
                  "    if i == 0: print('streaming', flush=True)\n"
                  "    for r in json.loads(msg)['parameters']['rows']:\n"
                  "        print(r['process']['pid'], r['process']['uid'], flush=True)\n")
        watcher = subprocess.Popen(["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--init-groups",
                                    sys.executable, "-c", client, self.daemon.socket],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # The workload runs only once the stream is running, so no tick of it is missed.
            self.assertEqual(watcher.stdout.readline().strip(), "streaming")
            root, user = self.run_helpers()
            out, err = watcher.communicate(timeout=30)
        finally:
            watcher.kill()
        self.assertEqual(watcher.returncode, 0, err)
        seen = [tuple(map(int, line.split())) for line in out.splitlines()]
        self.assertEqual({uid for _, uid in seen}, {self.uid})
        self.assertIn(user, {pid for pid, _ in seen})
        self.assertNotIn(root, {pid for pid, _ in seen})

    def test_drops_by_user_only_their_own(self):
        # Maps that hold almost nothing (one slot, 16 processes) and 64 held processes of root's:
        # most of root's faults are dropped, and every fault of the user's process that comes
        # while they hold the maps. GetStatus's dropsByUser: root gets both users, the user only
        # their own; the machine-wide figures are the same for both.
        self.set_membership(False)
        with Daemon(extra_args=["--slots", "1", "--max-processes", "16"]) as d:
            bins = copy_for_users(d.dir, "TRAPSTAT", "FAULT_PAGES")
            hold = subprocess.Popen([binary("HOLD_PROCS"), "64", "5"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    text=True)
            try:
                self.assertIn("pids", json.loads(hold.stdout.readline()))
                self.as_user(bins["FAULT_PAGES"], "500")
                get = ["call", "io.trapstat.GetStatus", "{}"]
                theirs = json.loads(self.as_user(bins["TRAPSTAT"], "--socket", d.socket, *get).stdout)
                everyone = json.loads(subprocess.run([bins["TRAPSTAT"], "--socket", d.socket, *get],
                                                     capture_output=True, text=True, check=True).stdout)
            finally:
                hold.stdin.close()
                hold.wait(timeout=30)
                hold.stdout.close()
        mine = [u for u in everyone["dropsByUser"] if u["uid"] == self.uid]
        self.assertEqual(len(mine), 1, everyone["dropsByUser"])
        self.assertGreaterEqual(mine[0]["drops"], 500, "every fault of the user's process was dropped")
        self.assertIn(0, {u["uid"] for u in everyone["dropsByUser"]})
        # Theirs as root sees it (read a moment later: only more, never another user).
        self.assertEqual([u["uid"] for u in theirs["dropsByUser"]], [self.uid])
        self.assertLessEqual(theirs["dropsByUser"][0]["drops"], mine[0]["drops"])
        self.assertGreaterEqual(theirs["dropsByUser"][0]["drops"], 500)
        self.assertEqual({k["kind"] for k in theirs["dropsByKind"]}, {k["kind"] for k in everyone["dropsByKind"]})
        self.assertLessEqual(theirs["drops"], everyone["drops"])

    def test_group_trapstat_sees_everything(self):
        self.set_membership(True)
        try:
            root, user = self.run_helpers()
            rows = json.loads(self.trapstat_as_user("--json", "top", "-b", "-n", "1", "--limit", "10000").stdout)["rows"]
            pids = {r["process"]["pid"] for r in rows}
            self.assertIn(root, pids)
            self.assertIn(user, pids)
            h = json.loads(self.trapstat_as_user("--json", "history", str(root)).stdout)
            self.assertEqual(h["process"]["uid"], 0)
        finally:
            self.set_membership(False)


if __name__ == "__main__":
    require_root_and_bpf()
    unittest.main(verbosity=2)
