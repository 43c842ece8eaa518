# SPDX-License-Identifier: MIT
"""What trapstat says about itself agrees with what it does: every option of every verb's
--help is in the man page and in the bash completion, the completion completes verbs, options,
values and the methods of the IDL, and the built man pages render without warnings.
Needs no daemon and no privileges."""
import os
import re
import subprocess
import unittest

SOURCE = os.environ["SOURCE_ROOT"]
BUILD_MAN = os.environ["BUILD_MAN"]
VERBS = ("top", "history", "sites", "procs", "traps", "status", "call")


def run(*args):
    return subprocess.run(args, capture_output=True, text=True, timeout=30, check=True).stdout


def long_options(help_text):
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", help_text)) - {"--help"}


def read(*path):
    with open(os.path.join(*path)) as f:
        return f.read()


def complete(line):
    """COMPREPLY of the completion of the command (trapstat or trapstat-exporter) for the command
    line `line` (cursor at its end)."""
    words = line.split(" ")
    command = words[0]
    script = (
        "source /usr/share/bash-completion/bash_completion\n"
        f"source {os.path.join(SOURCE, 'completion', command + '.bash')}\n"
        'COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}; COMP_WORDS=("${@:2}"); COMP_CWORD=$(($# - 2))\n'
        f"_{command.replace('-', '_')} {command} \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    out = run("bash", "-c", script, "complete", line, *words)
    return sorted(w for w in out.split("\n") if w)


class Docs(unittest.TestCase):
    trapstat = os.environ["TRAPSTAT"]
    trapstatd = os.environ["TRAPSTATD"]

    def test_every_verb_option_is_documented_and_completed(self):
        man = read(SOURCE, "man", "trapstat.1.scd")
        for verb in VERBS:
            opts = long_options(run(self.trapstat, verb, "--help"))
            self.assertTrue(opts or verb == "status", verb)
            completed = set(complete(f"trapstat {verb} --"))
            for opt in opts:
                with self.subTest(verb=verb, option=opt):
                    self.assertIn(f"*{opt}*", man)
                    self.assertIn(opt, completed)
        for opt in long_options(run(self.trapstat, "--help")):
            self.assertIn(f"*{opt}*", man)

    def test_every_daemon_option_is_documented(self):
        man = read(SOURCE, "man", "trapstatd.8.scd")
        opts = long_options(run(self.trapstatd, "--help"))
        self.assertGreater(len(opts), 10)
        for opt in opts:
            with self.subTest(option=opt):
                self.assertIn(f"*{opt}*", man)

    def test_every_exporter_option_and_metric_is_documented(self):
        man = read(SOURCE, "man", "trapstat-exporter.1.scd")
        opts = long_options(run(os.environ["TRAPSTAT_EXPORTER"], "--help"))
        self.assertGreaterEqual(len(opts), 5)
        completed = set(complete("trapstat-exporter --"))
        self.assertEqual(completed - {"--help"}, set(opts) - {"--help"})
        for opt in opts:
            with self.subTest(option=opt):
                self.assertIn(f"*{opt}*", man)
        self.assertEqual(complete("trapstat-exporter --listen 127"), ["127.0.0.1:9472"])
        self.assertEqual(complete("trapstat-exporter --socket /run/x --ti"), ["--timeout"])
        self.assertEqual(complete("trapstat-exporter --timeout "), ["10s", "1s", "30s", "5s"])
        self.assertEqual(complete("trapstat-exporter --unit-limit "), [])
        # Every family the exporter writes (its HELP lines are in exporter/exposition.c).
        families = set(re.findall(r'"(trapstat_[a-z_]+)"', read(SOURCE, "exporter", "exposition.c")))
        self.assertGreaterEqual(len(families), 9)
        # Counters are documented by their samples' name (with _total), gauges and the histogram
        # (its family and its _bucket, _sum and _count samples) as written.
        histogram = "trapstat_page_fault_duration_seconds"
        self.assertIn(histogram, families)
        for family in families:
            with self.subTest(family=family):
                name = family if family in ("trapstat_up", "trapstat_scrape_duration_seconds") or \
                    family.endswith("_total") or family.startswith(histogram) else family + "_total"
                self.assertIn(f"*{name}*", man)

    def test_completion(self):
        self.assertEqual(complete("trapstat "), sorted(VERBS))
        self.assertEqual(complete("trapstat hi"), ["history"])
        self.assertEqual(complete("trapstat --socket /run/x pro"), ["procs"])
        self.assertEqual(complete("trapstat --"), ["--help", "--json", "--socket", "--version"])
        self.assertEqual(complete("trapstat top --so"), ["--sort"])
        self.assertEqual(complete("trapstat top --sort k"), ["kernel"])
        # The major faults' causes by their short names, as --sort takes them.
        self.assertEqual(complete("trapstat top --sort "), ["anon", "exec", "file", "kernel", "major", "minor",
                                                            "protection", "read", "shmem", "stall", "time", "traps",
                                                            "user", "write"])
        self.assertEqual(complete("trapstat top -b -s s"), ["shmem", "stall"])
        self.assertEqual(complete("trapstat history --s"), ["--since", "--start-time", "--step"])
        self.assertEqual(complete("trapstat history 1 --since "), ["15m", "1d", "1h", "2h", "3d", "now"])
        self.assertIn(str(os.getpid()), complete("trapstat history "))  # running pids
        self.assertIn(str(os.getpid()), complete("trapstat sites "))
        self.assertEqual(complete("trapstat sites 1 --"), ["--csv", "--faults", "--help", "--json", "--limit", "--major",
                                                           "--since", "--start-time", "--traps", "--until"])
        self.assertEqual(complete("trapstat sites 1 --limit "), [])
        self.assertEqual(complete("trapstat -j traps --"), ["--help", "--json", "--since"])
        self.assertEqual(complete("trapstat top --by c"), ["comm", "container"])
        self.assertEqual(complete("trapstat procs --con"), ["--container"])
        self.assertEqual(complete("trapstat history --c"), ["--container", "--csv"])

    def test_call_completes_exactly_the_methods_of_the_idl(self):
        idl = read(SOURCE, "schema", "io.trapstat.varlink")
        methods = {f"io.trapstat.{m}" for m in re.findall(r"(?m)^method (\w+)", idl)}
        self.assertIn("io.trapstat.History", methods)
        service = {"org.varlink.service.GetInfo", "org.varlink.service.GetInterfaceDescription"}
        self.assertEqual(set(complete("trapstat call ")), methods | service)
        self.assertEqual(complete("trapstat call --more io.trapstat.Wa"), ["io.trapstat.Watch"])

    def test_man_pages_render(self):
        for page, title in (("trapstat.1", "trapstat"), ("trapstatd.8", "trapstatd"),
                            ("trapstat-exporter.1", "trapstat-exporter")):
            with self.subTest(page=page):
                path = os.path.join(BUILD_MAN, page)
                p = subprocess.run(["man", "--warnings", "-l", path], capture_output=True, text=True, timeout=30,
                                   env=dict(os.environ, MANWIDTH="100", MANPAGER="cat", LC_ALL="C.UTF-8"))
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(p.stderr, "")
                self.assertRegex(p.stdout, rf"^{title}\({page[-1]}\) ")
                self.assertIn("EXIT STATUS" if page == "trapstat.1" else "OPTIONS", p.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
