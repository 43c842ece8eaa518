# SPDX-License-Identifier: MIT
"""Runs a real trapstatd on a temporary state directory and socket for integration tests; and
the helpers the tests share: workloads, trapstat on a pipe or a terminal, test users, waiting.
(A raw varlink connection: varlink_raw.py.)"""
import contextlib
import ctypes
import fcntl
import json
import os
import platform
import pty
import pwd
import re
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
import unittest

from varlink_raw import Connection

SKIP = 77  # meson's "skipped": only where the machine truly lacks root or BPF (or x86-64, for traps)
# How much longer than on a machine of its own the waits for the daemon are: CI's VMs (TCG, beside
# the host's legs) set $TRAPSTAT_TEST_TIME_SCALE as meson's --timeout-multiplier (3), and an arm64
# daemon there once took over 20 s to load its BPF and answer.
TIME_SCALE = float(os.environ.get("TRAPSTAT_TEST_TIME_SCALE", "1"))


def skip(why):
    print(f"SKIP: {why}", file=sys.stderr)
    sys.exit(SKIP)


def require_root_and_bpf():
    if os.geteuid() != 0:
        skip("needs root to load BPF programs")
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        skip("kernel has no BTF (/sys/kernel/btf/vmlinux)")


def probe(*args):
    """trapstatd --probe ARGS: each source and feature (and capability) with whether it would be on and
    why not, {name: (on, reason)}; and the object line."""
    out = subprocess.run([binary("TRAPSTATD"), "--probe", *args], capture_output=True, text=True, timeout=60)
    rows = {m.group(1): (m.group(2) == "yes", m.group(3)) for m in re.finditer(r"^(\S+) +(yes|no) +(.*)$", out.stdout, re.M)}
    return rows, next((line for line in out.stdout.splitlines() if line.startswith("object:")), out.stderr.strip())


def feature_off(name, *args):
    """Why this kernel cannot give the feature or source name, as trapstatd --probe ARGS says it
    (e.g. no sites and no fault time on 5.10); None when it can."""
    on, why = probe(*args)[0].get(name, (False, "not in trapstatd --probe's table"))
    return None if on else f"{name} is off on this kernel: {why}"


def require_feature(name, *args):
    """Skips where this kernel cannot give the feature or source name (feature_off()). On these
    machines every one is on: test_kernels.py holds the kernels CI boots to their table."""
    why = feature_off(name, *args)
    if why:
        skip(why)


def require_x86_64():
    """Workloads that raise x86 exceptions only (site-traps, offset-traps): elsewhere they exit 77
    themselves, and the tests that need them are skipped."""
    if platform.machine() != "x86_64":
        skip(f"the workload is x86-64 only, this machine is {platform.machine()}")


# The names (common/trap-vectors.h) of the undefined instruction and the breakpoint that the
# trap workloads raise (raise-traps --only, storm), by architecture: x86's ud2 and int3, arm64's
# udf and brk.
TRAP_NAMES = {"x86_64": ("UD", "BP"), "aarch64": ("UNKNOWN", "BRK64")}
UD, BP = TRAP_NAMES.get(platform.machine(), ("UD", "BP"))
# Four traps raise-traps --only raises, named as the machine names them: the undefined
# instruction, the breakpoint, and two more (x86's #GP and #DE; arm64's data abort and PC
# alignment fault). Tests that count traps of several kinds write T["GP"] for "the third".
T = {"UD": UD, "BP": BP, "GP": "DABT_LOW", "DE": "PC_ALIGN"} if platform.machine() == "aarch64" else \
    {"UD": "UD", "BP": "BP", "GP": "GP", "DE": "DE"}


def require_trap_workloads():
    """raise-traps and storm raise x86-64's and arm64's exceptions: elsewhere they exit 77
    themselves, and the tests that need them are skipped."""
    if platform.machine() not in TRAP_NAMES:
        skip(f"the trap workloads are for x86-64 and arm64, this machine is {platform.machine()}")


def binary(name):
    path = os.environ.get(name)
    if not path:
        sys.exit(f"${name} is not set (run through meson test)")
    return path


def trapstat(socket, *args, check=True, timeout=30):
    """Runs the CLI; returns the CompletedProcess."""
    proc = subprocess.run([binary("TRAPSTAT"), "--socket", socket, *args], capture_output=True, text=True,
                          timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"trapstat {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc


def trapstat_json(socket, *args):
    return json.loads(trapstat(socket, "--json", *args).stdout)


def trapstat_on_terminal(socket, *args, columns=80, rows=24, env=None, onlcr=True, check=True):
    """Runs the CLI with stdout on a pseudo-terminal of that size (TERM=xterm, LC_ALL=C.UTF-8, and
    env besides) and stderr on a pipe; returns the CompletedProcess, stdout the bytes the terminal
    got. onlcr=False: the terminal does not turn "\n" into "\r\n"."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    if not onlcr:
        attrs = termios.tcgetattr(slave)
        attrs[1] &= ~termios.ONLCR
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
    proc = subprocess.Popen([binary("TRAPSTAT"), "--socket", socket, *args], stdout=slave, stderr=subprocess.PIPE,
                            env=dict(os.environ, TERM="xterm", LC_ALL="C.UTF-8", **(env or {})))
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the other end is closed
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    with proc.stderr:
        code = proc.wait(timeout=30)
        err = proc.stderr.read()
    if check and code != 0:
        raise AssertionError(f"trapstat {' '.join(args)} on a terminal exited {code}: {err!r}")
    return subprocess.CompletedProcess(proc.args, code, out, err)


def assert_usage_errors(test, run, cases, usage=None, stdout_empty=False):
    """For each (args, message) of cases, in a subTest: run(*args) exits 2 and says message (where
    it is not None) on stderr, and usage too where given; with stdout_empty, nothing on stdout."""
    for args, message in cases:
        with test.subTest(args=args):
            p = run(*args)
            test.assertEqual(p.returncode, 2, p.stderr)
            if message:
                test.assertIn(message, p.stderr)
            if usage:
                test.assertIn(usage, p.stderr)
            if stdout_empty:
                test.assertEqual(p.stdout, "")


def run_workload(name, *args, timeout=60):
    """Runs a workload helper of tests/helpers ($NAME) to its end; returns the JSON it prints."""
    out = subprocess.run([binary(name), *map(str, args)], capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise AssertionError(f"{name} {args} failed ({out.returncode}): {out.stderr.strip()}")
    return json.loads(out.stdout)


def run_workload_rusage(name, *args, timeout=60):
    """run_workload(), and the helper's major and minor faults as the kernel accounted them to its
    very end (faults while it exits too): what its reaping added to this process's
    RUSAGE_CHILDREN. (majflt, minflt) after the JSON."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = run_workload(name, *args, timeout=timeout)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return out, after.ru_majflt - before.ru_majflt, after.ru_minflt - before.ru_minflt


def run_workload_in_cgroup(cgroup, name, *args, timeout=60):
    """run_workload() with the helper in cgroup, joined between fork and exec: it execs there,
    so the daemon names its unit from the exec however short its life."""
    def join():
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
            f.write("0")

    out = subprocess.run([binary(name), *map(str, args)], capture_output=True, text=True, timeout=timeout,
                         preexec_fn=join)
    if out.returncode != 0:
        raise AssertionError(f"{name} {args} failed ({out.returncode}): {out.stderr.strip()}")
    return json.loads(out.stdout)


FAULT_TIME_BUCKETS = 24


def fault_time_bucket(ns):
    """The histogram bucket a fault of ns nanoseconds is in (the IDL's FaultTime.histogram)."""
    return min(FAULT_TIME_BUCKETS - 1, (ns // 1000).bit_length())


def read_slow_file(pages, delay_ms):
    """A file of pages pages on tests/helpers/slow-file (FUSE: never in the page cache before, every
    read waiting delay_ms), mapped and touched page by page by a process of its own without
    readahead (MADV_RANDOM: a fault that waits for a page readahead is already reading counts as
    minor), so each read is waited for by a major fault. (the reader's pid, the reads the file
    served, the reader's major faults as wait4() counts them, the file's path as the kernel names
    it)."""
    with tempfile.TemporaryDirectory() as tmp:
        mnt, count = os.path.join(os.path.realpath(tmp), "mnt"), os.path.join(tmp, "reads")
        os.mkdir(mnt)
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
        fs = subprocess.Popen([binary("SLOW_FILE"), mnt, str(pages), str(delay_ms), count], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            wait_for(lambda: os.path.ismount(mnt) or fs.poll() is not None, timeout=10, what="the FUSE mount")
            if fs.poll() is not None:
                raise AssertionError(f"slow-file exited {fs.returncode}: {fs.stderr.read()}")
            before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_majflt
            reader = subprocess.run(
                [sys.executable, "-S", "-c",
                 "import mmap, os, sys\n"
                 "f = open(sys.argv[1], 'rb'); m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\n"
                 "m.madvise(mmap.MADV_RANDOM)\n"
                 "s = sum(m[i] for i in range(0, len(m), mmap.PAGESIZE))\n"
                 "print(os.getpid(), s)\n", os.path.join(mnt, "data")],
                capture_output=True, text=True, timeout=60, check=True)
            majflt = resource.getrusage(resource.RUSAGE_CHILDREN).ru_majflt - before
            with open(count) as f:
                reads = int(f.read())
        finally:
            subprocess.run(["umount", "-l", mnt], capture_output=True)
            fs.terminate()
            fs.wait(timeout=10)
            fs.stderr.close()
    return int(reader.stdout.split()[0]), reads, majflt, os.path.join(mnt, "data")


def settled_unit_row(socket_path, unit, ready, ticks=3):
    """The UnitTotals row of unit once ready(row) holds and the row stayed the same over ticks
    ticks of the daemon's (its processes exited and drained: nothing more comes)."""
    def row():
        with Connection(socket_path) as c:
            rows = [u for u in c.call("io.trapstat.UnitTotals", {"limit": 100000})["units"] if u["unit"] == unit]
        return rows[0] if rows and ready(rows[0]) else None

    def settled():
        first = row()
        if not first:
            return None
        for _ in range(ticks):
            tick_after(socket_path)
        return first if row() == first else None

    return wait_for(settled, what=f"{unit}'s totals settled")


def feature_active(socket, name):
    """Whether GetStatus says the feature (e.g. "trap_sites") is active with this kernel and BPF object."""
    return {f["name"]: f["active"] for f in trapstat_json(socket, "status")["features"]}[name]


def ticks_after(socket_path, n):
    """n of the daemon's ticks, each begun after the one before: what was under way at the call
    (an exit read from the event buffer, then applied at the tick after) is drained."""
    for _ in range(n):
        tick_after(socket_path)


def user_name(base):
    """The name of a test user: base, plus $TRAPSTAT_TEST_USER_SUFFIX when set, so that two test
    runs side by side on one machine (two checkouts) never add and delete each other's users."""
    return base + os.environ.get("TRAPSTAT_TEST_USER_SUFFIX", "")


def create_user(name):
    """A system user without a home or a shell (one left over by an interrupted run is removed
    first); its pwd entry. remove_user() removes it."""
    subprocess.run(["userdel", name], capture_output=True)
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
    return pwd.getpwnam(name)


def remove_user(name):
    subprocess.run(["userdel", name], check=False)


def copy_for_users(directory, *names):
    """Copies of the binaries $NAME... in directory, which any user may enter and run (0755, the
    directory too): a test user cannot reach the build tree. {name: path of the copy}."""
    os.chmod(directory, 0o755)
    paths = {}
    for name in names:
        paths[name] = shutil.copy2(binary(name), os.path.join(directory, os.path.basename(binary(name))))
        os.chmod(paths[name], 0o755)
    return paths


def cgroup2_root():
    """Where the cgroup2 hierarchy is mounted, or None. A cgroup made there and named like a unit
    ("x.service") puts the processes moved into it into that unit, as far as trapstatd knows.
    The first mount that can be reached: one may be covered by another (the distro leg mounts
    cgroup2 over a hybrid host's /sys/fs/cgroup)."""
    with open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            if fields[2] == "cgroup2" and os.path.exists(os.path.join(fields[1], "cgroup.procs")):
                return fields[1]
    return None


def make_cgroup(unit):
    """A cgroup named like unit under the cgroup2 hierarchy (one an interrupted run left is removed
    first); its path. Skips where there is no cgroup2 hierarchy. remove_cgroup() removes it."""
    root = cgroup2_root()
    if not root:
        skip("no cgroup2 hierarchy: no process can be put into a unit")
    path = os.path.join(root, unit)
    if os.path.isdir(path):
        os.rmdir(path)
    os.mkdir(path)
    return path


def ns_pids(pid):
    """The NSpid line of /proc/PID/status: the pid in each namespace, outermost first."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("NSpid:"):
                return [int(x) for x in line.split()[1:]]
    raise AssertionError(f"no NSpid in /proc/{pid}/status")


def find_comm(comm):
    """The host pid of the one process named comm."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/comm", "rb") as f:
                    if f.read().strip() == comm.encode():
                        found.append(int(entry))
            except OSError:
                pass
    return found[0] if len(found) == 1 else None


def make_cgroups(rel, made):
    """The cgroup at rel ("a.slice/b.scope") below the cgroup2 hierarchy, its parents made as
    needed; each directory made is appended to made (remove them in reverse order). Skips where
    there is no cgroup2 hierarchy."""
    path = cgroup2_root()
    if not path:
        skip("no cgroup2 hierarchy: no process can be put into a cgroup of the test's")
    for part in rel.split("/"):
        path = os.path.join(path, part)
        if not os.path.isdir(path):
            os.mkdir(path)
            made.append(path)
    return path


def remove_cgroup(path):
    """Removes a cgroup a test made, once the processes in it have gone (the kernel refuses to
    remove one that still has any)."""
    def empty():
        with open(os.path.join(path, "cgroup.procs")) as f:
            return f.read() == ""
    wait_for(empty, what=f"{path} to empty")
    os.rmdir(path)


class Daemon:
    """trapstatd with --tick 200ms; stopped with SIGTERM (and checked to exit 0) on exit. Fault time,
    off by default, is turned on (--enable-source fault_time) unless fault_time is False."""

    def __init__(self, tick="200ms", extra_args=(), fault_time=True, env=None):
        self.dir = tempfile.mkdtemp(prefix="trapstat-test-")
        self.state_dir = os.path.join(self.dir, "state")
        self.socket = os.path.join(self.dir, "io.trapstat")
        self.log_path = os.path.join(self.dir, "trapstatd.log")
        self.args = [binary("TRAPSTATD"), "--state-dir", self.state_dir, "--socket", self.socket, "--tick", tick,
                     *extra_args]
        if fault_time:
            self.args += ["--enable-source", "fault_time"]
        # The counting tests run again with each BPF object this kernel can run (tests/meson.build):
        # the counts must be exact with every one.
        if os.environ.get("TRAPSTAT_TEST_BPF_OBJECT"):
            self.args += ["--bpf-object", os.environ["TRAPSTAT_TEST_BPF_OBJECT"]]
        self.env = {**os.environ, **env} if env else None  # the test hooks' variables
        self.proc = None

    def start(self):
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT, env=self.env)
        deadline = time.monotonic() + 20 * TIME_SCALE
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"trapstatd exited {self.proc.returncode} at start:\n{self.read_log()}")
            if os.path.exists(self.socket) and trapstat(self.socket, "status", check=False).returncode == 0:
                return self
            time.sleep(0.05)
        raise AssertionError(f"trapstatd did not answer within {20 * TIME_SCALE:.0f} s:\n{self.read_log()}")

    def stop(self):
        """SIGTERM, and the exit code; None if it was never started."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20 * TIME_SCALE)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("trapstatd did not stop within 20 s of SIGTERM")
        self.log.close()
        return self.proc.returncode

    def kill9(self):
        """SIGKILL: no final flush, no cleanup; the state directory is left as a crash leaves it."""
        self.proc.kill()
        self.proc.wait()
        self.log.close()

    def read_log(self):
        with open(self.log_path) as f:
            return f.read()

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    @contextlib.contextmanager
    def lifetime(self):
        """For a test that starts, stops, kills and restarts the daemon itself: on a failure the
        log of its last start goes to stderr; at the end it is stopped and its directory removed."""
        try:
            yield self
        except BaseException:
            sys.stderr.write(f"--- trapstatd log (last start) ---\n"
                             f"{self.read_log() if os.path.exists(self.log_path) else ''}\n")
            raise
        finally:
            self.stop()
            self.cleanup()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        code = self.stop()
        if exc[0] is None and code != 0:
            raise AssertionError(f"trapstatd exited {code} after SIGTERM:\n{self.read_log()}")
        if exc[0] is not None:
            sys.stderr.write(f"--- trapstatd log ---\n{self.read_log()}\n")
        self.cleanup()
        return False


class SharedDaemonTest(unittest.TestCase):
    """Test cases sharing one trapstatd, started once for the class."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon().__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.daemon.__exit__(None, None, None)


# Drop kinds that lose no count: a tick merged into the next one (only its time), a site
# whose memory mapping the kernel's lookup could not read at that moment (the BPF helper is busy
# on that CPU for a moment after each lookup: traps in quick succession meet it even with one
# daemon on the machine), named from /proc/PID/maps while the process lives, else [unknown]; and
# a site whose file could not be opened for its symbol this time (asked again at its next count).
# A major fault whose mapping could not be looked up is counted; only its cause is not told.
LOSSLESS_DROPS = frozenset({"tick_merged", "site_lookup_failed", "symbol_unreadable", "major_cause_untold"})


def daemon_maps(pid):
    """{name: id} of the BPF maps a process holds, from the map_id lines of its fds' fdinfo."""
    bpftool = shutil.which("bpftool") or "/usr/sbin/bpftool"
    ids = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                ids.update(int(line.split()[1]) for line in f if line.startswith("map_id:"))
        except FileNotFoundError:
            pass
    maps = {}
    for map_id in ids:
        info = json.loads(subprocess.run([bpftool, "-j", "map", "show", "id", str(map_id)], capture_output=True,
                                         text=True, check=True).stdout)
        maps[info.get("name", "")] = map_id
    return maps


def map_tgids(map_id, in_value=False):
    """The tgids in a trapstat BPF map: the first 4 bytes of each key (hashes keyed by process)
    or of each value (slot_owner, without its exited bit)."""
    bpftool = shutil.which("bpftool") or "/usr/sbin/bpftool"
    out = subprocess.run([bpftool, "-j", "map", "dump", "id", str(map_id)], capture_output=True, text=True, check=True)
    tgids = set()
    for e in json.loads(out.stdout):
        raw = e["value"] if in_value else e["key"]
        tgid = int.from_bytes(bytes(int(b, 16) for b in raw[:4]), "little") & 0x7FFFFFFF
        if tgid:
            tgids.add(tgid)
    return tgids


# The device the workloads that swap pages in (swap-in, stall-threads) swap to.
ZRAM = "/dev/zram0"


def swap_call(name, path):
    """swapon(2) or swapoff(2) of path through the C library, so that the test needs no swapon(8)
    (package mount) in the root file systems it runs in."""
    libc = ctypes.CDLL(None, use_errno=True)
    if getattr(libc, name)(path.encode(), 0) < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"{name} {path}: {os.strerror(e)}")


class Swap:
    """Swap on zram for the test's workloads: made here (256 MiB) unless some swap on zram0 is on
    already, and undone at the end."""

    def __enter__(self):
        self.made = False
        with open("/proc/swaps") as f:
            if any(line.split()[0] == ZRAM for line in f.read().splitlines()[1:]):
                return self
        if not os.path.exists(ZRAM):
            subprocess.run(["modprobe", "zram"], capture_output=True)
            wait_for(lambda: os.path.exists(ZRAM) or None, timeout=5, what=f"{ZRAM} after modprobe zram")
        with open("/sys/block/zram0/reset", "w") as f:
            f.write("1")
        try:
            with open("/sys/block/zram0/disksize", "w") as f:
                f.write("256M")
            subprocess.run(["mkswap", ZRAM], capture_output=True, check=True)
            swap_call("swapon", ZRAM)
        except BaseException:
            # __exit__ is not called when __enter__ fails: the device is left as it was found.
            with open("/sys/block/zram0/reset", "w") as f:
                f.write("1")
            raise
        self.made = True
        return self

    def __exit__(self, *exc):
        if self.made:
            swap_call("swapoff", ZRAM)
            with open("/sys/block/zram0/reset", "w") as f:
                f.write("1")
        return False


def zram_missing():
    """Why this machine has no zram to swap to (a VM kernel without the module), or None."""
    if os.path.exists(ZRAM):
        return None
    subprocess.run(["modprobe", "zram"], capture_output=True)
    return None if os.path.exists(ZRAM) else f"no {ZRAM}, and modprobe zram made none"


def wait_for(predicate, timeout=15, interval=0.1, what="condition"):
    timeout *= TIME_SCALE
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    what = what() if callable(what) else what
    raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")


def tick_after(socket_path, timeout=60):
    """Returns once the daemon has drained a tick that began after this call. What happened before
    the call is then in the reply to any call sent after it (Top, History and the rest read every
    tick drained before they came). Waits on Watch, one reply per tick, not on the clock: a busy
    machine can hold the daemon's ticks back by seconds. Returns the tick's time (timeUsec, taken
    as it began: CLOCK_REALTIME, microseconds)."""
    start = time.clock_gettime_ns(time.CLOCK_REALTIME) // 1000
    deadline = time.monotonic() + timeout
    with Connection(socket_path, timeout=timeout) as c:
        c.send("io.trapstat.Watch", {"limit": 1}, more=True)
        while time.monotonic() < deadline:
            reply = c.read()
            if "error" in reply:
                raise AssertionError(f"Watch failed: {reply}")
            # Its time is taken as the tick begins, before the drain.
            if reply["parameters"]["timeUsec"] >= start:
                return reply["parameters"]["timeUsec"]
    raise AssertionError(f"no tick of the daemon's began within {timeout} s")


def history(d, pid, *extra):
    """History of pid (newest incarnation, or as extra selects), or None where there is none."""
    p = trapstat(d.socket, "--json", "history", str(pid), *extra, check=False)
    return json.loads(p.stdout) if p.returncode == 0 else None


def exited_history(d, pid, *extra):
    """History of pid (newest incarnation, or as extra selects) once it shows the process exited."""
    def get():
        h = history(d, pid, *extra)
        return h if h and h["process"]["exited"] else None

    return wait_for(get, what=f"History({pid}) of the exited process")
