# SPDX-License-Identifier: MIT
"""Bad input to trapstat and trapstatd: one clear line on stderr, the documented exit code,
nothing hangs."""
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import assert_usage_errors, binary  # noqa: E402


def run(*args):
    return subprocess.run([binary("TRAPSTAT"), *args], capture_output=True, text=True, timeout=10)


class CliErrors(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.socket = os.path.join(self.dir.name, "nothing-here")

    def tearDown(self):
        self.dir.cleanup()

    def test_unreachable_socket(self):
        p = run("--socket", self.socket, "status")
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"cannot reach trapstatd at {self.socket}", p.stderr)
        self.assertIn("systemctl start trapstatd", p.stderr)
        self.assertEqual(p.stderr.count("\n"), 1)

    def test_socket_that_is_not_a_socket(self):
        with open(self.socket, "w"):
            pass
        p = run("--socket", self.socket, "top", "-b", "-n", "1")
        self.assertEqual(p.returncode, 1)
        self.assertIn("cannot reach trapstatd", p.stderr)

    def test_usage_errors_exit_2(self):
        assert_usage_errors(self, lambda *args: run("--socket", self.socket, *args), (
            (["frobnicate"], "unknown command 'frobnicate'"),
            ([], "missing command"),
            (["history"], "missing PID"),
            (["history", "12ab"], "invalid pid '12ab'"),
            (["history", "-5"], "trapstat history: invalid option -- '5'"),
            (["top", "--bogus"], "trapstat top: unrecognized option '--bogus'"),
            (["history", "0"], "invalid pid '0'"),
            (["history", "99999999999"], "invalid pid"),
            (["history", "1", "--since", "yesterdayish"], "invalid --since"),
            (["history", "1", "--step", "15s"], "invalid --step"),
            (["top", "-n", "zero"], "invalid -n"),
            (["top", "--sort", "bogus"], "invalid --sort"),
            (["top", "extra"], "unexpected argument"),
            (["--no-such-flag", "top"], None),
        ), usage="Usage: trapstat", stdout_empty=True)

    def test_help(self):
        p = run("--help")
        self.assertEqual(p.returncode, 0)
        for verb in ("top", "history", "status"):
            self.assertIn(verb, p.stdout)


class DaemonErrors(unittest.TestCase):
    """trapstatd refuses bad arguments before touching BPF or the database."""

    def daemon(self, *args):
        return subprocess.run([binary("TRAPSTATD"), *args], capture_output=True, text=True, timeout=10)

    def test_usage_errors_exit_2(self):
        assert_usage_errors(self, self.daemon, (
            (["--tick", "5x"], "invalid --tick '5x'"),
            (["--tick", "1ms"], "invalid --tick '1ms'"),
            (["--tick", "2h"], "invalid --tick '2h'"),
            (["--max-processes", "0"], "invalid --max-processes"),
            (["--max-connections", "-3"], "invalid --max-connections"),
            (["--idle-timeout", "never"], "invalid --idle-timeout"),
            (["--no-such-option"], None),
            (["stray"], "unexpected argument 'stray'"),
            (["--disable-source", "page_fault_user,bogus"], "Unknown source 'bogus'"),
            (["--slots", "1000"], "invalid --slots '1000'"),
            (["--retention", "raw=2d,minute=1d"], "invalid --retention"),
            (["--retention", "weekly=3w"], "invalid --retention"),
            (["--max-db-size", "12Q"], "invalid --max-db-size '12Q'"),
        ))

    def test_unusable_state_dir(self):
        with tempfile.TemporaryDirectory() as d:
            blocker = os.path.join(d, "file")
            with open(blocker, "w"):
                pass
            state = os.path.join(blocker, "state")  # a directory below a regular file
            p = self.daemon("--state-dir", state, "--socket", os.path.join(d, "sock"))
            self.assertEqual(p.returncode, 1)
            self.assertIn(f"Failed to create state directory {state}", p.stderr)
            self.assertEqual(p.stderr.count("\n"), 1, p.stderr)

    def test_help_and_version(self):
        self.assertIn("--state-dir", self.daemon("--help").stdout)
        self.assertRegex(self.daemon("--version").stdout, r"^trapstatd \d+\.\d+\.\d+")


if __name__ == "__main__":
    unittest.main(verbosity=2)
