# SPDX-License-Identifier: MIT
"""Files a user maps are hostile input to the symbolizer, each attack run by a real unprivileged
user: a symbol bomb (one ELF whose symbol tables are past the budget, trapped at 100 offsets,
then 60 distinct ones just under it) beside Watch, GetStatus and the daemon's RSS; a path
swapped for a symlink to a private root binary in a tight loop (its symbols never show); a
binary renamed after it ran and a deleted binary's inode number reused by another, also at the
deleted one's path (each named as it is now, path and symbol, live and in the stored history); the
per-user budget counted exactly as the drop symbol_budget.

The ELF files are offset-traps (tests/helpers) with a symbol table appended (add_symbols()) or
its function renamed in place (renamed_copy())."""
import json
import os
import shutil
import struct
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from daemon import (Daemon, binary, create_user, remove_user, require_feature, require_root_and_bpf, require_x86_64,  # noqa: E402
                    trapstat_json, user_name, wait_for)
from test_hostile import GET_STATUS, call_once, connect, proc_status, sanitized  # noqa: E402

USER = user_name("trapstat-symbols")
SLED = "trap_sled"  # offset-traps' function of ud2s
MIB = 1 << 20
# The daemon's limit on symbol and string tables read for one file (collector-sites.c).
READ_LIMIT = 8 * MIB

# ---- ELF files ----

SHDR = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr
SYM = struct.Struct("<IBBHQQ")       # Elf64_Sym
SHT_SYMTAB, SHT_STRTAB = 2, 3
STB_GLOBAL, STT_FUNC = 1, 2


def sections(data):
    """[(index, name, header tuple)] of an ELF64 little-endian file."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shnum, shstrndx = struct.unpack_from("<HH", data, 0x3C)
    headers = [SHDR.unpack_from(data, shoff + i * SHDR.size) for i in range(shnum)]
    names = headers[shstrndx]
    out = []
    for i, h in enumerate(headers):
        start = names[4] + h[0]
        out.append((i, data[start:data.index(b"\0", start)].decode(), h))
    return out


def add_symbols(src, dst, n, prefix):
    """A copy of src with one more symbol table: n sized functions in .text, each 1 byte apart
    and named prefix + a number, and its string table. Their size in bytes (both tables)."""
    with open(src, "rb") as f:
        data = bytearray(f.read())
    text = next(s for s in sections(data) if s[1] == ".text")
    index, addr, size = text[0], text[2][3], text[2][5]
    names = bytearray(b"\0")
    symtab = bytearray(SYM.size)  # entry 0: the undefined symbol
    for i in range(n):
        symtab += SYM.pack(len(names), (STB_GLOBAL << 4) | STT_FUNC, 0, index, addr + i % size, 1)
        names += b"%s%d\0" % (prefix.encode(), i)
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shnum, = struct.unpack_from("<H", data, 0x3C)
    old_headers = bytes(data[shoff:shoff + shnum * SHDR.size])
    data += b"\0" * (-len(data) % 8)
    sym_off = len(data)
    data += symtab
    str_off = len(data)
    data += names
    data += b"\0" * (-len(data) % 8)
    new_shoff = len(data)
    data += old_headers
    data += SHDR.pack(0, SHT_SYMTAB, 0, 0, sym_off, len(symtab), shnum + 1, 1, 8, SYM.size)
    data += SHDR.pack(0, SHT_STRTAB, 0, 0, str_off, len(names), 0, 0, 1, 0)
    struct.pack_into("<Q", data, 0x28, new_shoff)
    struct.pack_into("<H", data, 0x3C, shnum + 2)
    write_executable(dst, data)
    return len(symtab) + len(names)


def renamed_copy(src, dst, name):
    """A copy of src whose trap_sled is called name (as long), in every symbol table."""
    assert len(name) == len(SLED)
    with open(src, "rb") as f:
        data = f.read()
    old = b"\0" + SLED.encode() + b"\0"
    assert old in data
    write_executable(dst, data.replace(old, b"\0" + name.encode() + b"\0"))


def write_executable(path, data, mode=0o755):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


# ---- Running as the user, asking the daemon ----

def as_user(uid, *argv):
    """argv run as uid, exec'd by a shell that already is the user: setpriv keeps root's
    capabilities up to its own exec, so a binary it execs directly may be one the user could
    not run."""
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--init-groups", "/bin/sh", "-c", 'exec "$0" "$@"',
            *map(str, argv)]


def run_as(uid, *argv, timeout=60):
    """Runs argv as uid to its end; its pid and the sled's file offset (offset-traps prints them)."""
    p = subprocess.run(as_user(uid, *argv), capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise AssertionError(f"{argv} as {uid} exited {p.returncode}: {p.stderr.strip()}")
    lines = dict(line.split(" ", 1) for line in p.stdout.splitlines())
    return int(lines["pid"]), int(lines["sled"])


def trap_sites(conn, pid):
    """The trap sites of pid once the daemon knows the process and it exited, else None."""
    conn.send("io.trapstat.Sites", {"pid": pid, "kind": "trap", "limit": 10000})
    reply = conn.read()
    if reply.get("error") == "io.trapstat.NoSuchProcess":
        return None
    if "error" in reply:
        raise AssertionError(f"Sites of {pid} failed: {reply}")
    return reply["parameters"]["sites"] if reply["parameters"]["process"]["exited"] else None


def settled_sites(d, pids, n, timeout=90):
    """The n trap sites of each of pids, once two answers a second apart are the same: the symbol
    worker has answered what it will by then, and what it found is stored."""
    last = [None]

    def settled():
        with connect(d.socket) as conn:
            now = [trap_sites(conn, pid) for pid in pids]
        if any(sites is None or len(sites) < n for sites in now):
            return None
        same = now == last[0]
        last[0] = now
        return now if same else None

    return wait_for(settled, timeout=timeout, interval=1, what=f"the {n} trap sites of {len(pids)} processes")


def one_settled(d, pid, n):
    return settled_sites(d, [pid], n)[0]


def drops(d):
    return {k["kind"]: k["count"] for k in trapstat_json(d.socket, "status")["dropsByKind"]}


class LoopProbe:
    """Beside an attack: the gaps between Watch replies (one per tick), GetStatus's latency on a
    new connection every 100 ms, and the daemon's peak RSS (VmHWM) at the end."""

    def __init__(self, d):
        self.d, self.gaps, self.latencies, self.failures = d, [], [], []
        self.stop_event = threading.Event()
        self.threads = [threading.Thread(target=self.watch), threading.Thread(target=self.status)]

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop_event.set()
        for t in self.threads:
            t.join()
        self.peak_rss_kib = proc_status(self.d.proc.pid, "VmHWM")
        return False

    def watch(self):
        with connect(self.d.socket) as c:
            c.send_message({"method": "io.trapstat.Watch", "more": True})
            c.sock.settimeout(0.5)
            buf, last = b"", time.monotonic()
            while not self.stop_event.is_set():
                try:
                    chunk = c.sock.recv(1 << 20)
                except TimeoutError:
                    continue
                if not chunk:
                    self.failures.append("the Watch stream was closed")
                    return
                buf += chunk
                while b"\0" in buf:
                    msg, buf = buf.split(b"\0", 1)
                    now = time.monotonic()
                    if "error" in json.loads(msg):
                        self.failures.append(f"Watch: {msg[:200]}")
                        return
                    self.gaps.append(now - last)
                    last = now
            self.gaps.append(time.monotonic() - last)  # the silence at the end counts too

    def status(self):
        while not self.stop_event.is_set():
            t0 = time.monotonic()
            r = call_once(self.d.socket, GET_STATUS, timeout=10)
            self.latencies.append(time.monotonic() - t0)
            if not isinstance(r, dict) or "parameters" not in r:
                self.failures.append(f"GetStatus: {r!r}")
            time.sleep(max(0.0, 0.1 - (time.monotonic() - t0)))

    def check(self, test, what):
        max_gap, max_latency = max(self.gaps, default=float("inf")), max(self.latencies, default=float("inf"))
        print(f"{what}: Watch replies {len(self.gaps) - 1}, max gap {max_gap * 1000:.0f} ms; GetStatus calls "
              f"{len(self.latencies)}, max latency {max_latency * 1000:.1f} ms; peak RSS "
              f"{self.peak_rss_kib / 1024:.1f} MiB", file=sys.stderr)
        test.assertEqual(self.failures, [])
        test.assertLessEqual(max_gap, 1.0, f"{what}: the Watch stream stalled for {max_gap:.3f} s")
        test.assertLess(max_latency, 0.2, f"{what}: GetStatus took {max_latency * 1000:.0f} ms")
        # Under ASan the shadow memory and the quarantine of freed blocks make RSS no measure.
        if not sanitized():
            test.assertLess(self.peak_rss_kib, 64 * 1024, f"{what}: peak RSS {self.peak_rss_kib} KiB")


UID = None
# Runs of a scenario while the kernel does not resolve its sites to files: the VMA lookup of a
# BPF program fails (EBUSY) when another program's lookup ran just before on that CPU, as another
# trapstatd's does: the tests of a suite run side by side, each with its own daemon.
ATTEMPTS = 5


def setUpModule():
    global UID
    UID = create_user(USER).pw_uid


def tearDownModule():
    remove_user(USER)


class Scenario:
    """A daemon of its own (fresh budgets and caches) and a directory the user owns (the
    attacker's), for one run of a scenario."""

    def __init__(self, extra_args=()):
        self.d = Daemon(extra_args=["--fault-sample", "0", *extra_args])  # only the traps' sites
        self.home = os.path.join(self.d.dir, "user")

    def __enter__(self):
        self.d.__enter__()
        os.chmod(self.d.dir, 0o755)
        os.mkdir(self.home)
        os.chown(self.home, UID, UID)
        return self

    def __exit__(self, *exc):
        return self.d.__exit__(*exc)

    def user_copy(self, name, make=None):
        """A copy of offset-traps in the user's directory (made by make(src, dst) if given),
        owned by the user."""
        path = os.path.join(self.home, name)
        (make or shutil.copy2)(binary("OFFSET_TRAPS"), path)
        os.chown(path, UID, UID)
        return path

    def assert_alive(self, test):
        test.assertIsNone(self.d.proc.poll(), f"trapstatd died:\n{self.d.read_log()}")


def resolved(results):
    """Whether the kernel named the file of every site (see ATTEMPTS)."""
    return all(s["object"] != "[unknown]" for sites in results for s in sites)


def attempt(test, run):
    """run() -> (results, check) until its sites are resolved, then check(); at most ATTEMPTS.
    results None: the run could not be exact for a reason it printed, again."""
    for i in range(ATTEMPTS):
        results, check = run()
        if results is not None and resolved(results):
            return check()
        if results is not None:
            print(f"attempt {i + 1}: the kernel did not resolve every site to its file (VMA lookup busy), again",
                  file=sys.stderr)
    test.fail(f"no exact run in {ATTEMPTS}: see the attempts above")


def copy_on_inode(test, sc, ino, prefix, sled):
    """A new copy of offset-traps, its function of ud2s named sled, that got inode number ino: one
    of up to 200 new files, each kept until it is found so that the next gets another number, then
    deleted. The test is skipped when the file system gives ino to none of them."""
    others = []
    for i in range(200):
        path = sc.user_copy(f"{prefix}-{i}", lambda src, dst: renamed_copy(src, dst, sled))
        if os.stat(path).st_ino == ino:
            break
        others.append(path)
    else:
        test.skipTest(f"the file system of {sc.home} did not give inode {ino} again in 200 new files")
    for other in others:
        os.unlink(other)
    return path


class SymbolBombs(unittest.TestCase):
    def test_table_past_the_budget_at_100_offsets(self):
        # 400000 symbols: 13 MiB of tables, over the 8 MiB the daemon reads of one file.
        def run():
            with Scenario() as sc:
                size = []
                bomb = sc.user_copy("bomb", lambda src, dst: size.append(add_symbols(src, dst, 400000, "bomb_")))
                self.assertGreater(size[0], READ_LIMIT)
                with LoopProbe(sc.d) as probe:
                    pid, _ = run_as(UID, bomb, 100)
                    sites = one_settled(sc.d, pid, 100)
                sc.assert_alive(self)

            def check():
                self.assertEqual(len(sites), 100)
                self.assertEqual({(s["object"], s["symbol"], s["count"]) for s in sites}, {(bomb, None, 1)})
                probe.check(self, "one table past the budget, 100 offsets")
            return [sites], check

        attempt(self, run)

    def test_60_distinct_tables_just_under_the_budget(self):
        # Each file's tables are read (7.7 MB, under the 8 MiB limit) and their symbols found too
        # many to keep: the user's 64 MiB a minute pay for 8 of them; the other 52 files, 5 sites
        # each, keep file and offset, the drop symbol_budget.
        def run():
            with Scenario() as sc:
                size = []
                first = sc.user_copy("big-0", lambda src, dst: size.append(add_symbols(src, dst, 240000, "b")))
                self.assertLess(size[0], READ_LIMIT)
                files = [first] + [sc.user_copy(f"big-{i}", lambda src, dst: shutil.copy2(first, dst))
                                   for i in range(1, 60)]
                with LoopProbe(sc.d) as probe:
                    t0 = time.monotonic()
                    pids = [run_as(UID, f, 5)[0] for f in files]
                    results = settled_sites(sc.d, pids, 5)
                if not resolved(results):
                    return results, None  # a site without its file is never asked for: again
                # The worker refuses once the user's 8 parses are paid for, each only after the
                # one before it: slower than the sites under ASan. Exact only within the user's
                # minute, which starts at the first parse: past it the budget is new and more
                # files are parsed (on a machine busy enough to take that long: again).
                while (refused := drops(sc.d)["symbol_budget"]) < (60 - 8) * 5:
                    if time.monotonic() - t0 > 60:
                        print(f"the run took over the budget's minute ({refused} refused by then), again",
                              file=sys.stderr)
                        return None, None
                    time.sleep(0.2)
                sc.assert_alive(self)

            def check():
                self.assertEqual(64 * MIB // size[0], 8)
                self.assertTrue(all({(s["symbol"], s["count"]) for s in r} == {(None, 1)} for r in results))
                self.assertEqual(refused, (60 - 8) * 5)
                probe.check(self, "60 distinct tables of 7.7 MB")
            return results, check

        attempt(self, run)


class Budget(unittest.TestCase):
    def test_files_past_the_share_keep_file_and_offset(self):
        # 8 distinct files (inodes), 10 sites each: 3 are parsed, the 50 sites of the other 5
        # are the drop symbol_budget, exactly.
        def run():
            with Scenario(["--symbol-files-per-minute", "3"]) as sc:
                files = [sc.user_copy(f"app-{i}") for i in range(8)]
                pids = [run_as(UID, f, 10)[0] for f in files]
                results = settled_sites(sc.d, pids, 10)
                refused = wait_for(lambda: (lambda n: n if n >= 50 else None)(drops(sc.d)["symbol_budget"]),
                                   timeout=60, what="the symbol_budget drops")

            def check():
                named = [r for r in results if {s["symbol"] for s in r} == {SLED}]
                unnamed = [r for r in results if {s["symbol"] for s in r} == {None}]
                self.assertEqual((len(named), len(unnamed)), (3, 5), results)
                self.assertEqual(refused, 50)
            return results, check

        attempt(self, run)

    def test_full_queue_loses_no_name(self):
        # 5 copies trap at 1024 offsets each within one 2 s tick: 5120 asks at the drain's end,
        # past the worker's queue of 4096. What does not fit waits for the next drain: every
        # site named, though the processes exited and never count again.
        def run():
            with Scenario(["--tick", "2s", "--max-sites", "65536", "--max-sites-per-process", "4096",
                           "--max-sites-per-user", "16384"]) as sc:
                files = [sc.user_copy(f"app-{i}") for i in range(5)]
                procs = [subprocess.Popen(as_user(UID, f, 1024), stdout=subprocess.PIPE, text=True) for f in files]
                outs = [p.communicate(timeout=60)[0] for p in procs]
                self.assertEqual([p.returncode for p in procs], [0] * 5)
                pids = [int(dict(line.split(" ", 1) for line in out.splitlines())["pid"]) for out in outs]
                # Settled twice at a 2 s tick: by then every name the worker gave is stored.
                results = settled_sites(sc.d, pids, 1024)
                time.sleep(4)
                results = settled_sites(sc.d, pids, 1024)
                left = drops(sc.d)

            def check():
                self.assertEqual([len(r) for r in results], [1024] * 5)
                unnamed = sum(s["symbol"] is None for r in results for s in r)
                self.assertEqual(unnamed, 0, f"{unnamed} of 5120 sites without a name")
                self.assertEqual({s["symbol"] for r in results for s in r}, {SLED})
                self.assertEqual(left["symbol_budget"], 0)
            return results, check

        attempt(self, run)


class Naming(unittest.TestCase):
    def test_swapped_path_is_never_parsed(self):
        # The user's binary and a symlink to a root binary it cannot read (0700, in a 0700
        # directory) swap names (renameat2 RENAME_EXCHANGE) in a tight loop while the binary
        # traps at 100 offsets, 10 times: 1000 sites, none named from the private binary.
        def run():
            with Scenario() as sc:
                private_dir = os.path.join(sc.d.dir, "private")
                os.mkdir(private_dir, 0o700)
                secret = os.path.join(private_dir, "secret")
                renamed_copy(binary("OFFSET_TRAPS"), secret, "priv_sled")
                os.chmod(secret, 0o700)
                app = sc.user_copy("app")
                link = os.path.join(sc.home, "link")
                os.symlink(secret, link)
                os.lchown(link, UID, UID)
                swapper = subprocess.Popen(as_user(UID, "/usr/bin/python3", "-c", SWAPPER, app, link),
                                           stdout=subprocess.PIPE, text=True)
                try:
                    self.assertEqual(swapper.stdout.readline().strip(), "swapping")
                    pids = []
                    while len(pids) < 10:
                        # The name may be the symlink's at the moment: the exec fails (EACCES), again.
                        try:
                            pids.append(run_as(UID, app, 100)[0])
                        except AssertionError:
                            continue
                    results = settled_sites(sc.d, pids, 100)
                finally:
                    swapper.kill()
                    swapper.communicate()

            def check():
                symbols = [s["symbol"] for r in results for s in r]
                self.assertEqual(len(symbols), 1000)
                print(f"swapped path: {symbols.count(SLED)} of 1000 sites named {SLED}, the others none",
                      file=sys.stderr)
                self.assertEqual(set(symbols) - {SLED, None}, set())
            return results, check

        attempt(self, run)

    def test_renamed_binary_gets_its_new_name(self):
        # As `go build` or `mv app.new app` does: the same file (inode) under a new name.
        def run():
            with Scenario() as sc:
                new = sc.user_copy("tool.new")
                pid, _ = run_as(UID, new, 1)
                before = one_settled(sc.d, pid, 1)
                final = os.path.join(sc.home, "tool")
                os.rename(new, final)
                pid, _ = run_as(UID, final, 1)
                after = one_settled(sc.d, pid, 1)

            def check():
                self.assertEqual([(s["object"], s["symbol"]) for s in before], [(new, SLED)])
                self.assertEqual([(s["object"], s["symbol"]) for s in after], [(final, SLED)])
            return [before, after], check

        attempt(self, run)

    def test_reused_inode_number_inherits_nothing(self):
        # A binary traps, is deleted, and another binary gets its inode number: the second
        # one's site (the same offset in the same inode number) has its own path and symbol.
        def run():
            with Scenario() as sc:
                first = sc.user_copy("first", lambda src, dst: renamed_copy(src, dst, "aaaa_sled"))
                ino = os.stat(first).st_ino
                pid, _ = run_as(UID, first, 1)
                before = one_settled(sc.d, pid, 1)
                os.unlink(first)
                second = copy_on_inode(self, sc, ino, "second", "bbbb_sled")
                pid, _ = run_as(UID, second, 1)
                after = one_settled(sc.d, pid, 1)

            def check():
                self.assertEqual([(s["object"], s["symbol"]) for s in before], [(first, "aaaa_sled")])
                self.assertEqual([(s["object"], s["symbol"]) for s in after], [(second, "bbbb_sled")])
            return [before, after], check

        attempt(self, run)

    def test_reused_inode_number_at_the_same_path_is_stored_apart(self):
        # What `rm app; cp new app` can do, and a user can arrange: the new binary has the old
        # one's path AND inode number. Once each process exited and its tick is stored, the
        # database names each one's site with its own binary's symbol: the stored site belongs to
        # that version of the file (change time, generation), not to (path, device, inode).
        def run():
            with Scenario() as sc:
                app = sc.user_copy("app", lambda src, dst: renamed_copy(src, dst, "aaaa_sled"))
                ino = os.stat(app).st_ino
                first, _ = run_as(UID, app, 1)
                before = one_settled(sc.d, first, 1)
                os.unlink(app)
                os.rename(copy_on_inode(self, sc, ino, "new", "bbbb_sled"), app)
                self.assertEqual(os.stat(app).st_ino, ino)
                second, _ = run_as(UID, app, 1)
                after = one_settled(sc.d, second, 1)
                with connect(sc.d.socket) as conn:
                    first_again = trap_sites(conn, first)
                    conn.send("io.trapstat.History", {"pid": second})
                    history = conn.read()

            def check():
                self.assertTrue(history["parameters"]["process"]["exited"], history)
                self.assertEqual(history["parameters"]["process"]["pid"], second)
                self.assertEqual([(s["object"], s["symbol"]) for s in after], [(app, "bbbb_sled")])
                self.assertEqual([(s["object"], s["symbol"]) for s in before], [(app, "aaaa_sled")])
                self.assertEqual([(s["object"], s["symbol"]) for s in first_again], [(app, "aaaa_sled")])
            return [before, after, first_again], check

        attempt(self, run)


# The user's name swapper: argv[1] and argv[2] exchange their names as fast as it can.
SWAPPER = r'''
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
a, b = sys.argv[1].encode(), sys.argv[2].encode()
print("swapping", flush=True)
while True:
    libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
'''

if __name__ == "__main__":
    require_root_and_bpf()
    require_x86_64()  # offset-traps traps with ud2
    require_feature("trap_sites")
    unittest.main(verbosity=2)
