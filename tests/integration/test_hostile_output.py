# SPDX-License-Identifier: MIT
"""Names, command lines and units come from the processes trapstat watches, and a process can
choose them to attack whoever reads the tables: "\\x1b[2J" clears the screen, an OSC sequence
sets the window title, a newline forges a row. Workloads of an unprivileged user with such a
comm (prctl PR_SET_NAME), argv and unit (a cgroup of that name) fault pages; every table then
prints them escaped (\\e, \\a, \\n, \\xNN, \\u009b), with no control byte but its own newlines,
on a terminal and through a pipe; JSON and CSV give the exact text back, CSV on a terminal escaped
as the tables escape it. The workloads also write to a private mapping of a file with such a name:
it is the memory of their fault sites."""
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
import unicodedata
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import (user_name, Daemon, binary, cgroup2_root, create_user, exited_history, remove_user,  # noqa: E402
                    require_root_and_bpf, trapstat_on_terminal, wait_for)

USER = user_name("trapstat-hostile-out")
PYTHON = "/usr/bin/python3"

# Sets its name, faults 4 MiB (only processes that fault are tracked) and 8 MiB of a private mapping
# of the hostile file (2048 faults: sampled at least once, at trapstatd's default 1 in 512 per CPU,
# on up to 4 CPUs), prints its pid, then keeps faulting a little (to show in every tick's rates)
# until its stdin closes.
WORKLOAD = r"""
import ctypes, mmap, os, select, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(15, ctypes.c_char_p(bytes.fromhex(os.environ["HOSTILE_COMM"])), 0, 0, 0) != 0:  # PR_SET_NAME
    sys.exit("prctl: errno %d" % ctypes.get_errno())
def touch(size):
    m = mmap.mmap(-1, size)
    for i in range(0, size, 4096):
        m[i] = 1
    m.close()
touch(4 << 20)
fd = os.open(bytes.fromhex(os.environ["HOSTILE_FILE"]), os.O_RDONLY)
m = mmap.mmap(fd, 8 << 20, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
for i in range(0, 8 << 20, 4096):
    m[i] = 1
m.close()
os.close(fd)
print(os.getpid(), flush=True)
while not select.select([sys.stdin], [], [], 0.05)[0]:
    touch(64 << 10)
"""

# A unit name is a cgroup's: the kernel refuses '/' and a newline in one, not ESC or BEL.
UNIT = b"hostile\x1b]0;pwn\x07\t\xff.service"

# A file's name may hold anything but '/' and NUL: the memory of the workloads' fault sites.
FILE = b"map\x1b]0;pwn\x07 a,\"b\"\nc\x1b[2J \xc3\xa9.dat"

# name: (comm, extra argv, in the hostile unit)
KINDS = {
    "clear": (b"\x1b[2Jx", [b"\x1b]0;pwn\x07", b"line1\nline2", b"\x1b[31mred"], False),
    "newline": (b"a\nb", ["\u009b31m".encode(), b"back\\slash", b"tab\there\r", b"del\x7f"], False),
    # Not UTF-8: bytes no character starts with, an overlong '/', a surrogate, a cut emoji.
    "title": (b"\x1b]0;pwn\x07", [b"bad\xff\xfe", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf0\x9f\x98",
                                   "\u00fcn\u00efc\u00f6d\u00e9 \u65e5\u672c\u8a9e".encode()], False),
    # 16 bytes: the kernel keeps 15, cutting the "é" in two.
    "cut": ("aaaaaaaaaaaaaa\u00e9".encode(), [b"\x1b[?1049h"], True),
}

# Every process, however many the machine runs besides these.
ALL = ("--limit", "100000")

NAMES = {0x07: "a", 0x08: "b", 0x09: "t", 0x0A: "n", 0x0B: "v", 0x0C: "f", 0x0D: "r", 0x1B: "e"}


def escape(text, utf8=True):
    """What a table shows for a JSON string value: the rules of escape_untrusted()."""
    out = []
    for ch in text:
        c = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif c < 0x20 or c == 0x7F:
            out.append("\\" + NAMES[c] if c in NAMES else f"\\x{c:02x}")
        elif c >= 0x80 and not utf8:
            out.append("".join(f"\\x{b:02x}" for b in ch.encode()))
        elif 0x80 <= c <= 0x9F:
            out.append(f"\\u{c:04x}")
        else:
            out.append(ch)
    return "".join(out)


def width(text):
    return sum(0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
               for ch in text)


def cut(text, columns):
    """The longest prefix of escaped text at most columns wide that splits neither a character
    nor an escape: what trapstat prints of a line on a terminal that wide."""
    out, used = "", 0
    for unit in re.findall(r"\\x..|\\u....|\\.|.", text, re.DOTALL):
        if used + width(unit) > columns:
            break
        out += unit
        used += width(unit)
    return out


class HostileOutput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.uid = create_user(USER).pw_uid
        cls.workloads = []
        cls.cgroup = None
        cls.daemon = None
        try:
            cls.daemon = Daemon().__enter__()
            cls.start_workloads()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def start_workloads(cls):
        # The user must read the script: a world-readable copy in the daemon's directory.
        os.chmod(cls.daemon.dir, 0o755)
        cls.script = os.path.join(cls.daemon.dir, "hostile.py")
        with open(cls.script, "w") as f:
            f.write(WORKLOAD)
        os.chmod(cls.script, 0o644)
        cls.file = os.path.join(os.fsencode(cls.daemon.dir), FILE)
        with open(cls.file, "wb") as f:
            f.truncate(8 << 20)
        os.chmod(cls.file, 0o644)
        root = cgroup2_root()
        if root:
            cls.cgroup = os.path.join(os.fsencode(root), UNIT)
            if os.path.isdir(cls.cgroup):
                os.rmdir(cls.cgroup)
            os.mkdir(cls.cgroup)
        else:
            print("no cgroup2 hierarchy: the unit is not tested", file=sys.stderr)

        # Each kind twice: one that keeps running, one that exits once the daemon knows it (the
        # unit of a process that lives less than a tick may be unknown: not what is tested here).
        cls.running, cls.exited, to_exit = {}, {}, []
        for name, (comm, args, in_unit) in KINDS.items():
            for keep in (True, False):
                argv = [PYTHON.encode(), cls.script.encode(), *args]
                command = [b"setpriv", f"--reuid={cls.uid}".encode(), f"--regid={cls.uid}".encode(), b"--init-groups",
                           *argv]
                if in_unit and cls.cgroup:
                    # A shell joins the cgroup and then forks the workload, which is born in it:
                    # its unit is known from its first fault on.
                    command = [b"sh", b"-c", b'echo $$ > "$0/cgroup.procs" || exit 1; "$@"; exit $?', cls.cgroup,
                               *command]
                p = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env=dict(os.environ, HOSTILE_COMM=comm.hex(), HOSTILE_FILE=cls.file.hex()))
                cls.workloads.append(p)
                pid = int(p.stdout.readline())
                expected = {
                    "comm": comm[:15].decode("utf-8", "replace"),
                    # JSON carries text: bytes that are not UTF-8 arrive as U+FFFD.
                    "cmdline": b" ".join(argv).decode("utf-8", "replace"),
                    "unit": UNIT.decode("utf-8", "replace") if in_unit and cls.cgroup else None,
                    "pid": pid,
                }
                (cls.running if keep else cls.exited)[name] = expected
                if not keep:
                    to_exit.append(p)

        # Known to the daemon with their final name, command line and unit.
        deadline = time.monotonic() + 20
        for e in [*cls.running.values(), *cls.exited.values()]:
            while True:
                ps = cls.cli_json("procs", "--exited", "--pid", str(e["pid"]))["processes"]
                got = {k: ps[0][k] for k in e} if ps else None
                if got == e:
                    break
                if time.monotonic() > deadline:
                    raise AssertionError(f"process {e['pid']}: expected {e!r}, trapstatd has {got!r}")
                time.sleep(0.1)
        for p in to_exit:
            p.stdin.close()
            p.wait(timeout=30)
        for expected in cls.exited.values():
            exited_history(cls.daemon, expected["pid"])

    @classmethod
    def tearDownClass(cls):
        try:
            for p in cls.workloads:
                if not p.stdin.closed:
                    p.stdin.close()
                p.wait(timeout=30)
                p.stdout.close()
            if cls.cgroup and os.path.isdir(cls.cgroup):
                def empty():
                    with open(os.path.join(cls.cgroup, b"cgroup.procs")) as f:
                        return f.read() == ""
                wait_for(empty, what="the cgroup to empty")
                os.rmdir(cls.cgroup)
            if cls.daemon:
                cls.daemon.__exit__(None, None, None)
        finally:
            remove_user(USER)

    @classmethod
    def cli(cls, *args, locale="C.UTF-8", check=True):
        """trapstat's stdout as bytes, through a pipe."""
        p = subprocess.run([binary("TRAPSTAT"), "--socket", cls.daemon.socket, *args], capture_output=True,
                           timeout=30, env=dict(os.environ, LC_ALL=locale))
        if check and p.returncode != 0:
            raise AssertionError(f"trapstat {args} exited {p.returncode}: {p.stderr!r}")
        return p.stdout

    @classmethod
    def cli_json(cls, *args):
        return json.loads(cls.cli("--json", *args))

    def assert_safe(self, out, utf8=True, allow=b""):
        """No control byte but the newlines that end lines; valid UTF-8 without C1 controls, or
        pure ASCII."""
        bad = sorted({b for b in out if ((b < 0x20 and b != 0x0A) or b == 0x7F) and b not in allow})
        self.assertEqual(bad, [], f"control bytes {bad} in:\n{out.decode(errors='replace')}")
        text = out.decode("utf-8")  # strict
        self.assertEqual([c for c in text if 0x80 <= ord(c) <= 0x9F], [])
        if not utf8:
            self.assertTrue(out.isascii(), out)
        return text

    def all_kinds(self, exited=True):
        return [*self.running.values(), *(self.exited.values() if exited else [])]

    def rows_of(self, text, pid):
        return [line for line in text.splitlines() if re.match(rf"\s*{pid} ", line)]

    def assert_rows(self, text, header):
        """Every line under the header is a row of its own: it starts with a pid. (A header may have
        NSPID after PID, where another test's process in a pid namespace of its own is shown.)"""
        lines = text.splitlines()
        start = next(i for i, line in enumerate(lines)
                     if re.sub(r"^\s*PID +NSPID ", "PID ", line).lstrip().startswith(header)) + 1
        for line in lines[start:]:
            if not line:
                break  # the next table (top -b with several iterations)
            self.assertRegex(line, r"^\s*\d+ ", f"a forged row in:\n{text}")

    @staticmethod
    def pid_cells(text, pid):
        """How a process's row starts: its pid, and its pid in its own namespace where the table has
        an NSPID column (a process of another test in a pid namespace of its own was shown): the
        same pid, for these processes of the host."""
        header = next(line for line in text.splitlines() if line.split()[:1] == ["PID"])
        return f"{pid:>7} {pid:>7}" if header.split()[1] == "NSPID" else f"{pid:>7}"

    def test_procs(self):
        for args, kinds in ((["procs", *ALL], self.all_kinds(exited=False)),
                            (["procs", "--exited", *ALL], self.all_kinds())):
            text = self.assert_safe(self.cli(*args))
            self.assert_rows(text, "PID COMM")
            for e in kinds:
                rows = self.rows_of(text, e["pid"])
                self.assertEqual(len(rows), 1, text)
                comm = escape(e["comm"])
                head = f"{self.pid_cells(text, e['pid'])} {comm}{' ' * (15 - width(comm))} {USER[:8]} "
                self.assertTrue(rows[0].startswith(head), rows[0])
                self.assertTrue(rows[0].endswith(" " + escape(e["cmdline"])), rows[0])
                if e["unit"]:
                    self.assertIn(" " + escape(e["unit"]) + " ", rows[0])
        self.assertIn(r"\e[2Jx", text)
        self.assertIn(r" a\nb ", text)
        self.assertIn(r"\e]0;pwn\a", text)
        self.assertIn(r"line1\nline2", text)
        self.assertIn(r"\u009b31m back\\slash tab\there\r del\x7f", text)
        self.assertIn("bad\ufffd\ufffd \ufffd\ufffd \ufffd\ufffd\ufffd \ufffd \u00fcn\u00efc\u00f6d\u00e9 \u65e5\u672c\u8a9e",
                      text)
        self.assertIn(r"aaaaaaaaaaaaaa" + "\ufffd ", text)

    def test_procs_without_utf8(self):
        # A terminal that does not read UTF-8 may take 0x80..0x9f for controls: pure ASCII.
        text = self.assert_safe(self.cli("procs", "--exited", *ALL, locale="C"), utf8=False)
        self.assert_rows(text, "PID COMM")
        for e in self.all_kinds():
            self.assertTrue(self.rows_of(text, e["pid"])[0].endswith(" " + escape(e["cmdline"], utf8=False)))
        self.assertIn(r"\xc2\x9b31m", text)
        self.assertIn(r"\xc3\xbcn\xc3\xafc\xc3\xb6d\xc3\xa9 \xe6\x97\xa5", text)

    def test_procs_on_a_terminal(self):
        """Cut at the terminal's width by columns (wide characters count two), never inside an
        escape; no control byte even so."""
        kept_whole = 0
        for e in self.all_kinds():
            # One process at a time: the width of the unit column is then its own.
            def full_row():
                return self.rows_of(self.assert_safe(self.cli("procs", "--exited", "--pid", str(e["pid"]))),
                                    e["pid"])[0]

            for columns in range(100, 200, 7):
                # The workloads keep faulting: their LAST SEEN moves on every 10 s. The full row
                # is the one read right before and right after the terminal's, when both agree.
                for _ in range(3):
                    full = full_row()
                    out = self.on_terminal("procs", "--exited", "--pid", str(e["pid"]), columns=columns)
                    if full_row() == full:
                        break
                text = self.assert_safe(out.replace(b"\r\n", b"\n"))
                self.assert_rows(text, "PID COMM")
                row = self.rows_of(text, e["pid"])[0]
                self.assertEqual(row, cut(full, columns))
                self.assertLessEqual(width(row), columns)
                # A cut short of the width: an escape or a wide character did not fit, and was
                # left out whole.
                kept_whole += row != full and width(row) < columns
        self.assertGreater(kept_whole, 0)

    def on_terminal(self, *args, columns=80):
        p = trapstat_on_terminal(self.daemon.socket, *args, columns=columns, rows=50, env={"NO_COLOR": "1"},
                                 check=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def test_top_batch(self):
        text = self.assert_safe(self.cli("top", "-b", "-n", "1", "--limit", "10000"))
        self.assert_rows(text, "PID COMM")
        for e in self.all_kinds():
            rows = self.rows_of(text, e["pid"])
            self.assertEqual(len(rows), 1, text)
            comm = escape(e["comm"])
            self.assertTrue(rows[0].startswith(f"{self.pid_cells(text, e['pid'])} {comm}{' ' * (15 - width(comm))} "),
                            rows[0])
            self.assertTrue(rows[0].endswith(" " + escape(e["unit"] or "-")), rows[0])
        self.assertIn(r"\e[2Jx", text)
        self.assertIn(r"\e]0;pwn\a", text)

    def test_top_stream(self):
        # Rates from the Watch stream: the running workloads fault in every tick.
        text = self.assert_safe(self.cli("top", "-b", "--stream", "-n", "1", "-d", "1", "--limit", "10000"))
        self.assert_rows(text, "PID S COMM")
        for e in self.running.values():
            rows = self.rows_of(text, e["pid"])
            self.assertEqual(len(rows), 1, text)
            self.assertIn(f" {escape(e['comm'])} ", rows[0])
            self.assertTrue(rows[0].endswith(" " + escape(e["unit"] or "-")), rows[0])

    def test_history(self):
        for e in self.all_kinds():
            text = self.assert_safe(self.cli("history", str(e["pid"])))
            lines = text.splitlines()
            self.assertTrue(lines[0].startswith(f"pid {e['pid']} ({escape(e['comm'])}), user {USER} "), lines[0])
            self.assertEqual(lines[1], "command:  " + escape(e["cmdline"]))
            self.assertEqual(lines[2], "unit:     " + (escape(e["unit"]) if e["unit"] else "(none)"))
            self.assertTrue(lines[3].startswith("started:  "), text)

    def test_json_is_exact(self):
        for e in self.all_kinds():
            p = self.cli_json("procs", "--exited", "--pid", str(e["pid"]))["processes"][0]
            self.assertEqual({k: p[k] for k in e}, e)
            h = self.cli_json("history", str(e["pid"]))["process"]
            self.assertEqual({k: h[k] for k in e}, e)
        top = self.cli_json("top", "-b", "-n", "1", "--limit", "10000")
        rows = {r["process"]["pid"]: r["process"] for r in top["rows"]}
        for e in self.all_kinds():
            self.assertEqual({k: rows[e["pid"]][k] for k in e}, e)

    def test_json_on_a_terminal(self):
        # The same JSON, but nothing beyond ASCII reaches the terminal raw (U+009B is CSI to some).
        # JSON escapes C0 controls; DEL, which terminals ignore, it leaves as it is.
        out = self.on_terminal("--json", "procs", "--exited", *ALL)
        self.assert_safe(out.replace(b"\r\n", b"\n"), utf8=False, allow=b"\x7f")
        processes = {p["pid"]: p for p in json.loads(out)["processes"]}
        for e in self.all_kinds():
            self.assertEqual({k: processes[e["pid"]][k] for k in e}, e)

    def test_csv_is_exact(self):
        out = self.cli("procs", "--exited", "--csv", *ALL)
        rows = {int(r["pid"]): r for r in csv.DictReader(io.StringIO(out.decode(), newline=""))}
        for e in self.all_kinds():
            r = rows[e["pid"]]
            self.assertEqual((r["comm"], r["cmdline"], r["unit"]), (e["comm"], e["cmdline"], e["unit"] or ""))
            self.assertEqual(int(r["uid"]), self.uid)
        # Through a pipe the bytes themselves: CSV is for programs.
        self.assertIn(b"\x1b[2Jx", out)
        self.assertIn(b"\x1b]0;pwn\x07", out)

    def csv_on_terminal(self, *args):
        """trapstat's CSV on a terminal: the text (the pty's "\\r\\n" read as "\\n") after checking
        that no control byte but those line ends reached the terminal, and its rows."""
        text = self.assert_safe(self.on_terminal(*args).replace(b"\r\n", b"\n"))
        return text, list(csv.DictReader(io.StringIO(text, newline="")))

    def test_csv_on_a_terminal(self):
        """Read by a person: every text field escaped as the tables escape it (and quoted where the
        escaped text still holds a comma or a quote), every number as it is."""
        text, rows = self.csv_on_terminal("procs", "--exited", "--csv", *ALL)
        rows = {int(r["pid"]): r for r in rows}
        for e in self.all_kinds():
            r = rows[e["pid"]]
            self.assertEqual((r["comm"], r["cmdline"], r["unit"]),
                             (escape(e["comm"]), escape(e["cmdline"]), escape(e["unit"] or "")))
            self.assertEqual(int(r["uid"]), self.uid)
        self.assertIn(r"\e[2Jx", text)
        self.assertIn(r"\e]0;pwn\a", text)
        self.assertIn(r"line1\nline2", text)
        self.assertIn(r"\u009b31m back\\slash tab\there\r del\x7f", text)
        self.assertIn("\u00fcn\u00efc\u00f6d\u00e9 \u65e5\u672c", text)

    def settled(self, pipe, terminal):
        """pipe() and terminal(), run as pipe, terminal, pipe until both pipes agree (a site or a
        sample drained late changes what follows): the pipe's output and the terminal's."""
        for _ in range(3):
            before = pipe()
            out = terminal()
            if pipe() == before:
                break
        return before, out

    def test_sites_csv(self):
        """The file's name exact through a pipe, escaped on a terminal; an exited process's rows on
        the terminal are the pipe's, each field escaped."""
        path = self.file.decode()
        for e in self.all_kinds():
            args = ("sites", str(e["pid"]), "--limit", "10000")
            wait_for(lambda: path in [s.get("memoryObject") for s in self.cli_json(*args)["sites"]],
                     what=f"the fault site of process {e['pid']} in the hostile file")
            out, (text, rows) = self.settled(lambda: self.cli(*args, "--csv"),
                                             lambda: self.csv_on_terminal(*args, "--csv"))
            piped = list(csv.DictReader(io.StringIO(out.decode(), newline="")))
            self.assertIn(path, [r["memoryObject"] for r in piped])
            self.assertIn(b"map\x1b]0;pwn\x07 a,", out)
            self.assertIn(escape(path), [r["memoryObject"] for r in rows])
            self.assertIn('map\\e]0;pwn\\a a,""b""\\nc\\e[2J \u00e9.dat"', text)
            if e in self.exited.values():
                self.assertEqual(rows, [{k: escape(v) for k, v in r.items()} for r in piped])

    def test_history_csv_on_a_terminal(self):
        """history's CSV holds no text of the process: the same on a terminal as through a pipe."""
        for e in self.exited.values():
            args = ("history", str(e["pid"]), "--csv")
            piped, out = self.settled(lambda: self.cli(*args), lambda: self.on_terminal(*args))
            self.assert_safe(piped)
            self.assertEqual(out.replace(b"\r\n", b"\n"), piped)

    def test_live_top(self):
        if not shutil.which("tmux"):
            self.skipTest("tmux is not installed (scripts/install-deps.sh installs it)")
        # A tmux server of its own (its socket goes with the daemon's directory): never the one
        # another test is starting or stopping.
        tmux = ["tmux", "-S", os.path.join(self.daemon.dir, "tmux")]
        name = "hostile"
        command = f"{binary('TRAPSTAT')} --socket {self.daemon.socket} top; echo TRAPSTAT-EXIT=$?"
        subprocess.run([*tmux, "new-session", "-d", "-s", name, "-x", "200", "-y", "50", "-e", "TERM=xterm-256color",
                        "-e", "LC_ALL=C.UTF-8", "sh"], check=True)
        self.addCleanup(subprocess.run, [*tmux, "kill-server"], capture_output=True)

        def pane_title():
            return subprocess.run([*tmux, "display-message", "-p", "-t", name, "#{pane_title}"], capture_output=True,
                                  text=True, check=True).stdout

        def screen():
            return subprocess.run([*tmux, "capture-pane", "-p", "-t", name], capture_output=True, text=True,
                                  check=True).stdout

        title = pane_title()
        subprocess.run([*tmux, "send-keys", "-t", name, command, "Enter"], check=True)
        shown = [f" {escape(e['comm'])} " for e in self.running.values()]
        s = wait_for(lambda: (lambda s: s if all(c in s for c in shown) else None)(screen()),
                     what="the hostile names in the live view")
        self.assertIn(escape(UNIT.decode("utf-8", "replace")) if self.cgroup else r"\e[2Jx", s)
        row = next(line for line in s.splitlines() if re.match(rf"\s*{self.running['newline']['pid']} ", line))
        self.assertIn(r" a\nb ", row)
        self.assertFalse([line for line in s.splitlines() if line.startswith("b ")], s)
        # The OSC sequence did not retitle the window.
        self.assertEqual(pane_title(), title)
        subprocess.run([*tmux, "send-keys", "-t", name, "q"], check=True)
        wait_for(lambda: "TRAPSTAT-EXIT=0" in screen(), what="trapstat top to exit 0")

if __name__ == "__main__":
    require_root_and_bpf()
    unittest.main(verbosity=2)
