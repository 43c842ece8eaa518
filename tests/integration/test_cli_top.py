# SPDX-License-Identifier: MIT
"""The live view of trapstat top, driven in tmux (send-keys, capture-pane): it shows a known
workload, reacts to sort keys and pause, quits on q and on Ctrl-C with the terminal restored;
color only without NO_COLOR. Rows stay: a process that trapped and went idle is still listed
with its total, marked when it exited; filters (-p, --comm, the P key), grouping by unit (g,
and --by in batch mode), the help screen, and a daemon restarted under the view."""
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import (Daemon, SharedDaemonTest, binary, cgroup2_root, make_cgroup, require_root_and_bpf, require_x86_64,  # noqa: E402
                    trapstat_json, wait_for)


class Tmux:
    def __init__(self, name, command, env=None):
        self.name = name
        env_args = [a for k, v in (env or {}).items() for a in ("-e", f"{k}={v}")]
        # A tmux server of its own (-L): a session started while another test's server is
        # shutting down after its last session was killed fails with "server exited
        # unexpectedly".
        self.tmux = ["tmux", "-L", name]
        # A shell that stays after trapstat exits, so the restored screen can be inspected. Wide
        # enough for a whole row with the major faults' causes (FILE/s ANON/s SHMEM/s) and a unit.
        subprocess.run([*self.tmux, "new-session", "-d", "-s", name, "-x", "200", "-y", "40", *env_args,
                        "sh"], check=True)
        self.keys(command + "; echo TRAPSTAT-EXIT=$?", "Enter")

    def keys(self, *keys):
        subprocess.run([*self.tmux, "send-keys", "-t", self.name, *keys], check=True)

    def screen(self, escapes=False):
        return subprocess.run([*self.tmux, "capture-pane", "-p", *(["-e"] if escapes else []), "-t", self.name],
                              capture_output=True, text=True, check=True).stdout

    def wait(self, predicate, what):
        """Waits until predicate holds for the screen; returns that screen."""
        def check():
            screen = self.screen()
            return screen if predicate(screen) else None
        try:
            return wait_for(check, timeout=20, interval=0.1, what=what)
        except AssertionError as e:
            raise AssertionError(f"{e}; screen:\n{self.screen()}") from None

    def close(self):
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)


# The per-process header of the live view; NSPID after PID where a process shown is in a pid
# namespace of its own (another test's, or a container's on this machine).
PROCESS_HEADER = re.compile(r"PID( +NSPID)? S COMM")


def header_line(screen):
    """The index of the column header in the lines of screen (per process or grouped), and
    whether it has NSPID; None while the screen is being drawn (or shows the help)."""
    for i, line in enumerate(screen.splitlines()):
        m = PROCESS_HEADER.match(line.lstrip())
        if m or line.lstrip().startswith("PROCS S"):
            return i, bool(m and m.group(1))
    return None


def data_rows(screen):
    """The rows of the live view: lines below the column header (per process or grouped)."""
    found = header_line(screen)
    if found is None:
        return []
    return [line for line in screen.splitlines()[found[0] + 1:] if line.strip() and line.lstrip()[0].isdigit()]


def sorted_by(screen):
    """The sort the view's title names (the IDL's name: "majorFile"), or None."""
    m = re.search(r"sorted by (\w+)", screen)
    return m.group(1) if m else None


def row_of(screen, pid):
    """The live view's row of pid as its cells by the header's titles: PID S COMM USER/s KERNEL/s
    MAJOR/s [FILE/s ANON/s SHMEM/s] TRAPS/s %FAULT FAULTS TRAPS VECTORS [CONTAINER] UNIT (S is
    blank for a running process that did not trap lately; the major causes' columns where the
    daemon counts them); NSPID left out, a sorted column's '*' (no colors) too."""
    found = header_line(screen)
    if found is None:
        return None
    titles = [t.lstrip("*") for t in screen.splitlines()[found[0]].split() if t != "NSPID"]
    for line in data_rows(screen):
        if line.split()[0] == str(pid):
            s = 16 if found[1] else 8
            state = line[s]
            cells = line[:8].split() + [state] + line[s + 1:].split()
            # A row being drawn may be cut short: not a row yet.
            return dict(zip(titles, cells)) if len(cells) >= len(titles) else None
    return None


def wait_known(socket, *workloads):
    """Until trapstatd's history has every workload's traps: a view started then has them in
    its first rows (from Top over the window)."""
    pids = ",".join(str(w.pid) for w in workloads)

    def known():
        rows = trapstat_json(socket, "top", "-b", "-n", "1", "-p", pids, "--sort", "traps")["rows"]
        got = {r["process"]["pid"]: sum(r["counters"]["traps"].values()) for r in rows}
        return got == {w.pid: w.ud for w in workloads}
    wait_for(known, what=f"the traps of {pids} in trapstatd's history")


class SiteTraps:
    """site-traps: ud2 n times in one function, then idle until stop(); in a cgroup when given."""

    def __init__(self, ud, cgroup=None):
        self.ud = ud
        command = [binary("SITE_TRAPS"), "--ud", str(ud), "--hold-after", "120"]
        if cgroup:
            # A shell joins the cgroup and then forks the workload, which is born in it: its unit
            # is known from its first fault on (the shell itself faulted before it moved).
            command = ["sh", "-c", 'echo $$ > "$0/cgroup.procs" || exit 1; "$@"', cgroup, *command]
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        self.pid = int(self.proc.stdout.readline().split()[1])
        assert self.proc.stdout.readline().strip() == f"done ud signals={ud}"
        assert self.proc.stdout.readline().startswith("holding")

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.pid, signal.SIGUSR1)
        self.proc.wait(timeout=10)
        self.proc.stdout.close()


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

    def top(self, name, args="", env=None, socket=None):
        cmd = f"{binary('TRAPSTAT')} --socket {socket or self.daemon.socket} top {args}"
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
        # < moves the sort column left over the columns shown, > right: the major faults' causes
        # (FILE/s ANON/s SHMEM/s) are shown once a row on the screen had one, and are passed over
        # while hidden; which rows are on the screen depends on the sort.
        self.assertEqual(self.walk(t, "<", "kernel")[-2:], ["major", "kernel"])
        self.assertEqual(self.walk(t, ">", "traps")[:2], ["kernel", "major"])
        # f, a, s: by a cause, its columns shown while so sorted, where the daemon counts them
        # (Linux 5.17 and later); else the view says why and keeps its sort.
        counted = next(s for s in trapstat_json(self.daemon.socket, "status")["sources"]
                       if s["name"] == "major_cause")["active"]
        for key, name in (("f", "majorFile"), ("a", "majorAnon"), ("s", "majorShmem")):
            t.keys(key)
            if counted:
                t.wait(lambda s, name=name: sorted_by(s) == name and "FILE/s" in s and "SHMEM/s" in s,
                       f"sort by {name} after {key}, its columns shown")
            else:
                t.wait(lambda s: "no row here knows major faults by cause" in s and sorted_by(s) == "traps",
                       f"the refusal of {key}")
        t.keys("t")
        t.wait(lambda s: sorted_by(s) == "traps", "sort by traps after t")

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
        self.assertNotRegex(s, PROCESS_HEADER)

    SORT_COLUMNS = ["user", "kernel", "major", "majorFile", "majorAnon", "majorShmem", "traps", "faultTime", "stall"]
    MAJOR_CAUSES = {"majorFile", "majorAnon", "majorShmem"}

    def walk(self, t, key, to):
        """Presses key (< or >) until the view is sorted by to; the sorts it went through, each
        the next column in that direction but for hidden columns of major causes."""
        seen = [sorted_by(t.screen())]
        while seen[-1] != to:
            self.assertLess(len(seen), len(self.SORT_COLUMNS), seen)
            t.keys(key)
            seen.append(sorted_by(t.wait(lambda s: s if sorted_by(s) != seen[-1] else None, f"a new sort after {key}")))
            a, b = (self.SORT_COLUMNS.index(x) for x in seen[-2:])
            self.assertEqual((b > a), key == ">", seen)
            self.assertTrue(set(self.SORT_COLUMNS[min(a, b) + 1:max(a, b)]) <= self.MAJOR_CAUSES, seen)
        return seen

    def test_ctrl_c_restores_the_terminal(self):
        t = self.top("sigint")
        t.wait(lambda s: PROCESS_HEADER.search(s), "the live view")
        t.keys("C-c")
        s = t.wait(lambda s: s if "TRAPSTAT-EXIT=" in s else None, "trapstat to exit on Ctrl-C")
        self.assertNotRegex(s, PROCESS_HEADER)
        # The terminal is usable: echo works (not left in noecho/cbreak).
        t.keys("echo typed-after-top", "Enter")
        t.wait(lambda s: "echo typed-after-top" in s and s.count("typed-after-top") == 2, "the shell to echo input")

    def test_color_only_without_no_color(self):
        t = self.top("color")
        t.wait(lambda s: PROCESS_HEADER.search(s), "the live view")
        self.assertIn("\033[", t.screen(escapes=True))
        t.keys("q")
        t.wait(lambda s: "TRAPSTAT-EXIT=0" in s, "exit")

        t = self.top("nocolor", env={"NO_COLOR": "1"})
        t.wait(lambda s: PROCESS_HEADER.search(s), "the live view")
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
        self.assertNotRegex(s, PROCESS_HEADER)

    def test_daemon_stops_under_the_live_view(self):
        """With --reconnect-timeout the view waits that long for the daemon, then ends: trapstat
        leaves the screen, exits 1, and the reason is still there to read (not drawn into the
        curses screen and wiped with it)."""
        with Daemon() as d:
            cmd = f"{binary('TRAPSTAT')} --socket {d.socket} top --reconnect-timeout 1s"
            t = Tmux(f"trapstat-test-{os.getpid()}-stopped", cmd, env={"TERM": "xterm-256color"})
            self.addCleanup(t.close)
            t.wait(lambda s: "sorted by user" in s, "the live view")
        t.wait(lambda s: "trapstatd went away at" in s, "the view to say the daemon went away")
        s = t.wait(lambda s: s if "TRAPSTAT-EXIT=1" in s else None, "exit 1 a second after the daemon stopped")
        self.assertNotRegex(s, PROCESS_HEADER)
        self.assertIn("trapstat: trapstatd went away and did not come back within 1s", s)
        self.assertEqual(s.count("trapstat: "), 1, s)

    def test_restart_under_the_view(self):
        """The daemon stops and starts again under the view: the view says it went away, comes
        back by itself, keeps the rows and totals it had, and shows what happens afterwards."""
        d = Daemon()
        with d.lifetime():
            d.start()
            before = SiteTraps(3)
            self.addCleanup(before.stop)
            wait_known(d.socket, before)
            t = self.top("restart", "--comm site-traps --sort traps", socket=d.socket)
            t.wait(lambda s: (row_of(s, before.pid) or {}).get("TRAPS") == "3", "the first workload's 3 traps")
            d.stop()
            t.wait(lambda s: "trapstatd went away at" in s and "reconnecting" in s, "the view to say the daemon went away")
            d.start()
            t.wait(lambda s: "went away" not in s and "reconnected to trapstatd" in s, "the view to reconnect")
            after = SiteTraps(7)
            self.addCleanup(after.stop)
            s = t.wait(lambda s: (row_of(s, after.pid) or {}).get("TRAPS") == "7" and "went away" not in s,
                       "the new workload's 7 traps after the restart")
            # The first workload's row and total are still there.
            self.assertEqual(row_of(s, before.pid)["TRAPS"], "3", s)
            t.keys("q")
            t.wait(lambda s: "TRAPSTAT-EXIT=0" in s, "exit 0")

    def test_a_trap_stays_with_its_total(self):
        """A process traps 3 times and goes idle: its row stays with its total and vector, marked
        T while the trap is recent; once it exits it is marked X and still listed."""
        t = self.top("stays", "--comm 'site-tr*' --sort traps")
        t.wait(lambda s: "sorted by traps" in s and "--comm site-tr*" in s, "the live view with its filter")
        w = SiteTraps(3)
        self.addCleanup(w.stop)
        s = t.wait(lambda s: (row_of(s, w.pid) or {}).get("TRAPS") == "3", "the workload's 3 traps")
        row = row_of(s, w.pid)
        self.assertEqual(row["COMM"], "site-traps", s)
        self.assertEqual(row["VECTORS"], "UD:3", s)
        # Only what the filter lets through.
        self.assertEqual([r.split()[0] for r in data_rows(s)], [str(w.pid)], s)
        time.sleep(4)
        s = t.screen()
        row = row_of(s, w.pid)
        self.assertIsNotNone(row, f"the idle process left the screen:\n{s}")
        self.assertEqual((row["S"], row["TRAPS/s"], row["TRAPS"], row["VECTORS"]), (" ", "0", "3", "UD:3"), s)
        w.stop()
        s = t.wait(lambda s: (row_of(s, w.pid) or {}).get("S") == "X", "the exited mark")
        self.assertEqual(row_of(s, w.pid)["TRAPS"], "3", s)
        t.keys("q")
        t.wait(lambda s: "TRAPSTAT-EXIT=0" in s, "exit 0")

    def test_pid_filter_and_the_window_before(self):
        """-p: only that process, also one that trapped before the view started (from Top over
        the window); P changes the pids at the bottom line, = clears the filter."""
        w = SiteTraps(5)
        self.addCleanup(w.stop)
        other = SiteTraps(2)
        self.addCleanup(other.stop)
        wait_known(self.daemon.socket, w, other)
        t = self.top("pid", f"-p {w.pid}")
        s = t.wait(lambda s: row_of(s, w.pid) and "rates over" in s, "the process from the window")
        self.assertEqual([r.split()[0] for r in data_rows(s)], [str(w.pid)], s)
        self.assertEqual(row_of(s, w.pid)["TRAPS"], "5", s)
        # P: another pid, typed at the bottom line.
        t.keys("P")
        t.wait(lambda s: "pids (e.g. 123,456; empty: all):" in s, "the pid prompt")
        t.keys(str(other.pid), "Enter")
        s = t.wait(lambda s: [r.split()[0] for r in data_rows(s)] == [str(other.pid)], "only the other pid")
        self.assertEqual(row_of(s, other.pid)["TRAPS"], "2", s)
        self.assertIn(f"-p {other.pid}", s)
        # A bad list is refused with a message; the filter stays.
        t.keys("P", "x1", "Enter")
        t.wait(lambda s: "not a list of pids: 'x1'" in s, "the refusal")
        self.assertEqual([r.split()[0] for r in data_rows(t.screen())], [str(other.pid)])
        # =: everything again (the workloads of the other tests too).
        t.keys("=")
        t.wait(lambda s: "-p " not in s.splitlines()[0] and len(data_rows(s)) > 1, "every process after =")
        t.keys("q")
        t.wait(lambda s: "TRAPSTAT-EXIT=0" in s, "exit 0")

    def test_group_by_unit_and_help(self):
        """g groups the rows by unit: a unit's row sums its processes' traps; h lists every key."""
        self.assertIsNotNone(cgroup2_root(), "no cgroup2 hierarchy on this machine")
        unit = f"trapstat-live-{os.getpid()}.service"
        cgroup = make_cgroup(unit)
        self.addCleanup(os.rmdir, cgroup)
        a, b = SiteTraps(3, cgroup), SiteTraps(4, cgroup)
        self.addCleanup(b.stop)
        self.addCleanup(a.stop)
        wait_known(self.daemon.socket, a, b)
        t = self.top("group", "--comm site-traps --sort traps")
        t.wait(lambda s: row_of(s, a.pid) and row_of(s, b.pid), "both processes of the unit")
        self.assertEqual(row_of(t.screen(), a.pid)["UNIT"], unit)
        t.keys("g")
        s = t.wait(lambda s: ", by unit" in s and "PROCS S" in s, "rows grouped by unit")
        rows = [r.split() for r in data_rows(s) if r.split()[-1] == unit]
        self.assertEqual(len(rows), 1, s)
        # PROCS S? USER/s KERNEL/s MAJOR/s TRAPS/s %FAULT FAULTS TRAPS VECTORS UNIT (S blank: no cell)
        self.assertEqual((rows[0][0], rows[0][-3], rows[0][-2]), ("2", "7", "UD:7"), s)
        # g cycles on: comm, user, container (the header says so), then per process again.
        t.keys("g")
        t.wait(lambda s: ", by comm" in s, "by comm")
        t.keys("g", "g")
        t.wait(lambda s: ", by container" in s and re.search(r"PROCS S .* CONTAINER", s), "by container")
        t.keys("g")
        t.wait(lambda s: PROCESS_HEADER.search(s) and ", by " not in s, "per process again")
        t.keys("h")
        s = t.wait(lambda s: s if "trapstat top: keys" in s else None, "the help screen")
        for key in ("q, Ctrl-C", "p, space", "< >", "u k m t w", "f a s", "d ", "g ", "P ", "U ", "N ", "C ", "= ", "h, ?"):
            self.assertIn(f"  {key}", s)
        t.keys("x")
        t.wait(lambda s: PROCESS_HEADER.search(s), "back to the view")
        t.keys("q")
        t.wait(lambda s: "TRAPSTAT-EXIT=0" in s, "exit 0")

        # Batch: --by unit sums the unit over the window; -p, --unit and --comm filter (the shells
        # that moved the workloads into the unit are in it too).
        text = subprocess.run([binary("TRAPSTAT"), "--socket", self.daemon.socket, "top", "-b", "-n", "1", "--by", "unit",
                               "--unit", unit, "--comm", "site-traps"], capture_output=True, text=True, check=True).stdout
        lines = [line.split() for line in text.splitlines() if line.split() and line.split()[-1] == unit]
        self.assertEqual(len(lines), 1, text)
        self.assertEqual((lines[0][0], lines[0][-3], lines[0][-2]), ("2", "7", "UD:7"), text)
        rows = trapstat_json(self.daemon.socket, "top", "-b", "-n", "1", "-p", f"{a.pid},{b.pid}", "--sort", "traps")["rows"]
        self.assertEqual(sorted((r["process"]["pid"], r["counters"]["traps"]["UD"]) for r in rows),
                         sorted([(a.pid, 3), (b.pid, 4)]))

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
