# SPDX-License-Identifier: MIT
"""The live view of trapstat top, driven in tmux (send-keys, capture-pane): it shows a known
workload, reacts to sort keys and pause, quits on q and on Ctrl-C with the terminal restored;
color only without NO_COLOR."""
import os
import shutil
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import Daemon, SharedDaemonTest, binary, require_root_and_bpf, require_x86_64, wait_for  # noqa: E402


class Tmux:
    def __init__(self, name, command, env=None):
        self.name = name
        env_args = [a for k, v in (env or {}).items() for a in ("-e", f"{k}={v}")]
        # A tmux server of its own (-L): a session started while another test's server is
        # shutting down after its last session was killed fails with "server exited
        # unexpectedly".
        self.tmux = ["tmux", "-L", name]
        # A shell that stays after trapstat exits, so the restored screen can be inspected.
        subprocess.run([*self.tmux, "new-session", "-d", "-s", name, "-x", "160", "-y", "40", *env_args,
                        "sh"], check=True)
        self.keys(command + "; echo TRAPSTAT-EXIT=$?", "Enter")

    def keys(self, *keys):
        subprocess.run([*self.tmux, "send-keys", "-t", self.name, *keys], check=True)

    def screen(self, escapes=False):
        return subprocess.run([*self.tmux, "capture-pane", "-p", *(["-e"] if escapes else []), "-t", self.name],
                              capture_output=True, text=True, check=True).stdout

    def wait(self, predicate, what):
        return wait_for(lambda: predicate(self.screen()), timeout=20, interval=0.1, what=f"{what}; screen:\n{self.screen()}")

    def close(self):
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)


def data_rows(screen):
    """The process rows of the live view: lines below the column header."""
    lines = screen.splitlines()
    header = next(i for i, line in enumerate(lines) if line.lstrip().startswith("PID COMM"))
    return [line for line in lines[header + 1:] if line.strip() and line.lstrip()[0].isdigit()]


class LiveTop(SharedDaemonTest):
    @classmethod
    def setUpClass(cls):
        if not shutil.which("tmux"):
            raise unittest.SkipTest("tmux is not installed (scripts/install-deps.sh installs it)")
        super().setUpClass()
        # Known workloads, running all along: processes named fault-pages that write pages
        # (user faults, no traps) and raise-traps that trap (few faults).
        cls.stop = threading.Event()

        def loop(args):
            while not cls.stop.is_set():
                subprocess.run(args, capture_output=True, check=True)

        cls.loops = [threading.Thread(target=loop, args=([binary("FAULT_PAGES"), "3000"],)),
                     threading.Thread(target=loop, args=([binary("RAISE_TRAPS"), "50", "--only", "UD"],))]
        for t in cls.loops:
            t.start()

    @classmethod
    def tearDownClass(cls):
        cls.stop.set()
        for t in cls.loops:
            t.join()
        super().tearDownClass()

    def top(self, name, args="", env=None):
        cmd = f"{binary('TRAPSTAT')} --socket {self.daemon.socket} top {args}"
        t = Tmux(f"trapstat-test-{os.getpid()}-{name}", cmd, env={"TERM": "xterm-256color", **(env or {})})
        self.addCleanup(t.close)
        return t

    def test_shows_workload_sorts_pauses_quits(self):
        t = self.top("keys")
        # The workload shows up, sorted by user faults by default: fault-pages leads.
        t.wait(lambda s: "sorted by user" in s and data_rows(s) and " fault-pages " in data_rows(s)[0],
               "fault-pages at the top by user faults")
        s = t.screen()
        self.assertIn("USER/s", s)
        self.assertIn("KERNEL/s", s)
        self.assertIn("TRAPS/s", s)
        self.assertIn("q quit", s)  # the help line

        # t: sort by traps; raise-traps leads, with its vector.
        t.keys("t")
        t.wait(lambda s: "sorted by traps" in s and data_rows(s) and " raise-traps " in data_rows(s)[0]
               and "UD:" in data_rows(s)[0], "raise-traps at the top by traps")
        # < moves the sort column left: major, then kernel.
        t.keys("<")
        t.wait(lambda s: "sorted by major" in s, "sort by major after <")
        t.keys("<")
        t.wait(lambda s: "sorted by kernel" in s, "sort by kernel after <")
        t.keys(">", ">")
        t.wait(lambda s: "sorted by traps" in s, "sort by traps after > >")

        # p pauses: the screen stays as it is while ticks go on.
        t.keys("p")
        paused = t.wait(lambda s: s if "[PAUSED]" in s else None, "the pause mark")
        time.sleep(1.0)
        self.assertEqual(t.screen(), paused)
        t.keys("p")
        t.wait(lambda s: "[PAUSED]" not in s and s != paused, "updates after p again")

        # q quits with status 0 and the shell's screen is back (ncurses left the alternate screen).
        t.keys("q")
        s = t.wait(lambda s: s if "TRAPSTAT-EXIT=0" in s else None, "trapstat to exit 0")
        self.assertNotIn("sorted by", s)
        self.assertNotIn("PID COMM", s)

    def test_ctrl_c_restores_the_terminal(self):
        t = self.top("sigint")
        t.wait(lambda s: "PID COMM" in s, "the live view")
        t.keys("C-c")
        s = t.wait(lambda s: s if "TRAPSTAT-EXIT=" in s else None, "trapstat to exit on Ctrl-C")
        self.assertNotIn("PID COMM", s)
        # The terminal is usable: echo works (not left in noecho/cbreak).
        t.keys("echo typed-after-top", "Enter")
        t.wait(lambda s: "echo typed-after-top" in s and s.count("typed-after-top") == 2, "the shell to echo input")

    def test_color_only_without_no_color(self):
        t = self.top("color")
        t.wait(lambda s: "PID COMM" in s, "the live view")
        self.assertIn("\033[", t.screen(escapes=True))
        t.keys("q")
        t.wait(lambda s: "TRAPSTAT-EXIT=0" in s, "exit")

        t = self.top("nocolor", env={"NO_COLOR": "1"})
        t.wait(lambda s: "PID COMM" in s, "the live view")
        # No colors: the sorted column is marked with a '*' instead; reverse video stays.
        self.assertIn("*USER/s", t.screen())
        self.assertNotRegex(t.screen(escapes=True), r"\x1b\[(3[0-7]|9[0-7]|38;)")
        t.keys("q")
        t.wait(lambda s: "TRAPSTAT-EXIT=0" in s, "exit")

    def test_iterations_end_the_live_view(self):
        # Each refresh is one tick of the shared daemon (200 ms): -n 10 ends after about 2 s.
        t = self.top("iterations", "-n 10")
        t.wait(lambda s: "sorted by user" in s, "the live view")
        s = t.wait(lambda s: s if "TRAPSTAT-EXIT=0" in s else None, "exit 0 after 10 refreshes")
        self.assertNotIn("PID COMM", s)

    def test_daemon_stops_under_the_live_view(self):
        """The stream ends: trapstat leaves the screen, exits 1, and the reason is still there to
        read (not drawn into the curses screen and wiped with it)."""
        with Daemon() as d:
            cmd = f"{binary('TRAPSTAT')} --socket {d.socket} top"
            t = Tmux(f"trapstat-test-{os.getpid()}-stopped", cmd, env={"TERM": "xterm-256color"})
            self.addCleanup(t.close)
            t.wait(lambda s: "sorted by user" in s, "the live view")
        s = t.wait(lambda s: s if "TRAPSTAT-EXIT=1" in s else None, "exit 1 after the daemon stopped")
        self.assertNotIn("PID COMM", s)
        self.assertIn("trapstat: trapstatd closed the Watch stream", s)
        self.assertEqual(s.count("trapstat: "), 1, s)

    def test_unreachable_daemon(self):
        cmd = f"{binary('TRAPSTAT')} --socket /nonexistent/io.trapstat top"
        t = Tmux(f"trapstat-test-{os.getpid()}-unreachable", cmd, env={"TERM": "xterm-256color"})
        self.addCleanup(t.close)
        s = t.wait(lambda s: s if "TRAPSTAT-EXIT=1" in s else None, "exit 1")
        self.assertIn("cannot reach trapstatd at /nonexistent/io.trapstat", s)
        self.assertIn("systemctl start trapstatd", s)


if __name__ == "__main__":
    require_root_and_bpf()
    require_x86_64()  # the trap workloads
    unittest.main(verbosity=2)
