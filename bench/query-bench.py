#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Query latency measured from outside, through the socket, while the daemon ticks.

Fills a database with store-bench (--processes, --days), starts the built trapstatd on a copy of
it with its default tick, and sends calls one at a time over one connection, alternating:

  Top          {windowSec: 86400, limit: 20}
  History      {pid, startTime, sinceUsec: now - 24 h} of a random known process (any
               ListProcesses lists with includeExited: most exited days ago, and their
               replies are short)
  History 24h  the same of a random process seen in the last 24 h: a long-lived one gets
               1440 samples of 60 s, a reply of about 150 KB
  GetStatus    answered on the event loop itself: how long a call waits for the loop (a tick's
               drain, and before the writer thread, the tick's write and maintenance)

with a random pause of 0-100 ms before each, so that calls fall at every point of the tick and
of maintenance. Each call is timed from sending it to having read its whole reply from the
socket; parsing the reply's JSON (Python's json module) is timed apart, as it is the client's
cost, not the daemon's. Printed per build and kind: calls, median, p99 (nearest rank), max in
ms, the median parse time and the mean reply size. Also per build:

  tick cost    CPU time of the daemon's main thread (the event loop: collector drain, store
               flush, maintenance, replies; the query workers are other threads) over
               --idle-seconds without calls, per tick; and of the whole process
  database     file + WAL of the copy when the daemon started, and when it stopped

Both daemons run with --max-db-size 1G (--max-db-size): the 1000-process database (230 MiB) is
over the default cap's target once the WAL's room is counted, and the cap's evictions would take
the very processes the calls ask for.

--cold drops the page cache (sync; echo 3 > /proc/sys/vm/drop_caches) before every call, so
each call is as the first one after a reboot would be (the daemon's own start reads the whole
file once, PRAGMA quick_check, which is why the caches are dropped per call, not once).

usage: sudo python3 bench/query-bench.py [--build DIR] [--baseline-build DIR]
                                         [--processes 1000] [--days 14] [--calls 200]
                                         [--db PATH] [--cold] [--idle-seconds 30]
Run from the source tree after `meson compile -C build`. Needs root (BPF, drop_caches). With
--baseline-build (a build of an earlier commit) the same calls run against that build's
trapstatd first, on its own copy of the same database; the database is then made by the
baseline's store-bench, so that both builds can open it (a newer one migrates its copy). --db
uses an existing store-bench database (never written: each daemon gets a copy)."""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
import varlink_raw  # noqa: E402

DAY_USEC = 86400 * 1000000
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_ms(path):
    """utime + stime of /proc/PID/stat or /proc/PID/task/TID/stat, in ms."""
    with open(path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / CLK_TCK


def db_bytes(path):
    return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def percentile(sorted_values, p):
    """Nearest rank."""
    k = max(1, -(-len(sorted_values) * p // 100))
    return sorted_values[int(k) - 1]


class Daemon:
    def __init__(self, build, db, workdir, extra_args=()):
        self.dir = tempfile.mkdtemp(prefix="query-bench-", dir=workdir)
        state = os.path.join(self.dir, "state")
        os.mkdir(state, 0o700)
        self.db = os.path.join(state, "trapstat.db")
        shutil.copy(db, self.db)
        self.bytes_at_start = db_bytes(self.db)
        self.socket = os.path.join(self.dir, "io.trapstat")
        self.log = open(os.path.join(self.dir, "log"), "w")
        # The default tick: no --tick.
        self.proc = subprocess.Popen([os.path.join(build, "daemon", "trapstatd"), "--state-dir", state,
                                      "--socket", self.socket, *extra_args], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while not os.path.exists(self.socket):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                sys.exit(f"trapstatd of {build} did not start")
            time.sleep(0.05)
        self.conn = varlink_raw.Connection(self.socket, timeout=60)
        self.status = self.conn.call("io.trapstat.GetStatus")

    def main_thread_cpu_ms(self):
        return cpu_ms(f"/proc/{self.proc.pid}/task/{self.proc.pid}/stat")

    def process_cpu_ms(self):
        return cpu_ms(f"/proc/{self.proc.pid}/stat")

    def stop(self):
        if getattr(self, "conn", None):
            self.conn.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.bytes_at_stop = db_bytes(self.db)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def make_db(build, processes, days, workdir):
    path = os.path.join(workdir, f"store-bench-{processes}p-{days}d.db")
    print(f"making a {days}-day database of {processes} processes with {build}'s store-bench ...", file=sys.stderr)
    t = time.monotonic()
    # Its own checks run too (one query of each kind): exit 1 on a mismatch.
    subprocess.run([os.path.join(build, "bench", "store-bench"), "--processes", str(processes), "--days", str(days),
                    "--queries", "1", "--db", path, "--keep"], check=True, stdout=subprocess.DEVNULL)
    print(f"  {time.monotonic() - t:.0f} s", file=sys.stderr)
    return path


def history_picks(conn, n, seed):
    """(pid, startTime) of n random known processes and of n random processes seen in the last
    24 h; the same for every build (the processes the daemon itself adds are left out)."""
    now = time.time_ns() // 1000
    procs = conn.call("io.trapstat.ListProcesses", {"includeExited": True, "limit": 100000})["processes"]
    boot_start = now - int(float(open("/proc/uptime").read().split()[0]) * 1e6)
    known = sorted((p["pid"], p["startTime"]) for p in procs if p["firstSeenUsec"] < boot_start)
    recent = sorted((p["pid"], p["startTime"]) for p in procs
                    if p["firstSeenUsec"] < boot_start and p["lastSeenUsec"] >= now - DAY_USEC)
    if not recent:
        sys.exit("no process of the database was seen in the last 24 h: is it older than a day?")
    rng = random.Random(seed)
    return [(rng.choice(known), rng.choice(recent)) for _ in range(n)], len(known), len(recent)


def call_ms(conn, method, parameters):
    """(ms until the whole reply was read from the socket, ms more to parse it in Python, its bytes)."""
    t = time.perf_counter()
    conn.send(method, parameters)
    while b"\0" not in conn.buf:
        chunk = conn.sock.recv(1 << 20)
        if not chunk:
            raise SystemExit(f"{method}: the daemon closed the connection")
        conn.buf += chunk
    received = time.perf_counter()
    msg, conn.buf = conn.buf.split(b"\0", 1)
    reply = json.loads(msg)
    parsed = time.perf_counter()
    if "error" in reply:
        raise SystemExit(f"{method}({parameters}) failed: {reply}")
    return (received - t) * 1000, (parsed - received) * 1000, len(msg)


def measure(build, db, args, workdir):
    d = Daemon(build, db, workdir, ["--max-db-size", args.max_db_size])
    try:
        tick_s = d.status["tickUsec"] / 1e6
        picks, n_known, n_recent = history_picks(d.conn, args.calls + args.warmup, args.seed)
        rng = random.Random(args.seed + 1)
        since = time.time_ns() // 1000 - DAY_USEC

        # Warm-up: every worker opens its read connection and runs each kind of call, and the
        # start's catch-up settles. A worker's first Top fills its connection's page cache (2 MB,
        # every page faulted in once): 21-24 ms instead of 9. With 8 calls of each kind some of
        # the 4 workers had not run a Top yet, and their first one was the p99.
        def history(p):
            return {"pid": p[0], "startTime": p[1], "sinceUsec": since}

        calls = [("Top", lambda p: ("io.trapstat.Top", {"windowSec": 86400, "limit": 20})),
                 ("History", lambda p: ("io.trapstat.History", history(p[0]))),
                 ("History 24h", lambda p: ("io.trapstat.History", history(p[1]))),
                 # Answered on the event loop itself: its time is how long a call waits for the loop.
                 ("GetStatus", lambda p: ("io.trapstat.GetStatus", {}))]
        for p in picks[: args.warmup]:
            for _, make in calls:
                call_ms(d.conn, *make(p))
        time.sleep(2)

        # The tick's cost: nothing but the daemon's own work over a fixed interval.
        main0, all0, t0 = d.main_thread_cpu_ms(), d.process_cpu_ms(), time.monotonic()
        time.sleep(args.idle_seconds)
        main1, all1, t1 = d.main_thread_cpu_ms(), d.process_cpu_ms(), time.monotonic()
        ticks = (t1 - t0) / tick_s

        times = {kind: [] for kind, _ in calls}
        parse = {kind: [] for kind, _ in calls}
        size = {kind: 0 for kind, _ in calls}
        main_calls0, t_calls0 = d.main_thread_cpu_ms(), time.monotonic()
        slow0 = d.conn.call("io.trapstat.GetStatus").get("loopSlowTurns")
        for p in picks[args.warmup:]:
            for kind, make in calls:
                time.sleep(rng.uniform(0, 0.1))
                if args.cold:
                    drop_caches()
                received, parsed, n = call_ms(d.conn, *make(p))
                times[kind].append(received)
                parse[kind].append(parsed)
                size[kind] += n
        main_calls1, t_calls1 = d.main_thread_cpu_ms(), time.monotonic()
        status = d.conn.call("io.trapstat.GetStatus")
    finally:
        d.stop()
    return {
        "times": times,
        "parse": parse,
        "reply bytes": {kind: size[kind] / max(1, len(times[kind])) for kind in size},
        "tick main ms": (main1 - main0) / ticks,
        "tick process ms": (all1 - all0) / ticks,
        "main ms per s during calls": (main_calls1 - main_calls0) / (t_calls1 - t_calls0),
        "tick s": tick_s,
        "idle s": t1 - t0,
        "db bytes start": d.bytes_at_start,
        "db bytes stop": d.bytes_at_stop,
        "database bytes (GetStatus)": status["databaseBytes"],
        # The event loop's longest turn since the start (the start's catch-up included), and its
        # turns over 5 ms during the calls; None from a daemon that does not report them.
        "loop longest turn ms": status["loopLongestTurnUsec"] / 1000 if "loopLongestTurnUsec" in status else None,
        "loop slow turns during the calls": status["loopSlowTurns"] - slow0 if slow0 is not None else None,
        "processes known": n_known,
        "processes seen in 24 h": n_recent,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--baseline-build")
    ap.add_argument("--processes", type=int, default=1000)
    ap.add_argument("--days", type=int, default=14)
    ap.add_argument("--calls", type=int, default=200, help="calls of each kind (default 200)")
    ap.add_argument("--warmup", type=int, default=32,
                    help="calls of each kind first, not counted (default 32: every query worker gets each kind)")
    ap.add_argument("--db", help="an existing store-bench database to copy instead of making one")
    ap.add_argument("--workdir", default=os.environ.get("TMPDIR", "/var/tmp"))
    ap.add_argument("--cold", action="store_true", help="drop the page cache before every call")
    ap.add_argument("--idle-seconds", type=float, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-db-size", default="1G",
                    help="the daemons' size cap (default 1G: above the database, so that the size cap's evictions "
                         "do not take the processes the calls ask for)")
    ap.add_argument("--json", action="store_true", help="also print the results as JSON")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("query-bench needs root (BPF, drop_caches)", file=sys.stderr)
        sys.exit(77)

    builds = ([args.baseline_build] if args.baseline_build else []) + [args.build]
    workdir = tempfile.mkdtemp(prefix="trapstat-query-bench-", dir=args.workdir)
    results = {}
    try:
        db = args.db or make_db(builds[0], args.processes, args.days, workdir)
        for b in builds:
            print(f"measuring {b} ...", file=sys.stderr)
            results[b] = measure(b, db, args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    names = {args.build: "after" if args.baseline_build else "build"}
    if args.baseline_build:
        names[args.baseline_build] = "before"
    print(f"query-bench: {os.path.basename(args.db) if args.db else f'{args.processes} processes, {args.days} days'}, "
          f"{args.calls} calls of each kind, {'cold (page cache dropped before every call)' if args.cold else 'warm'}; "
          f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, {os.cpu_count()} CPUs")
    print(f"{'build':8} {'call':12} {'calls':>6} {'median ms':>10} {'p99 ms':>8} {'max ms':>8} {'+parse median ms':>17} "
          f"{'reply KiB':>10}")
    for b in builds:
        for kind, t in results[b]["times"].items():
            s, p = sorted(t), sorted(results[b]["parse"][kind])
            print(f"{names[b]:8} {kind:12} {len(s):6} {percentile(s, 50):10.2f} {percentile(s, 99):8.2f} {s[-1]:8.2f} "
                  f"{percentile(p, 50):17.2f} {results[b]['reply bytes'][kind] / 1024:10.1f}")
    for b in builds:
        r = results[b]
        print(f"{names[b]}: tick {r['tick s'] * 1000:.0f} ms; over {r['idle s']:.0f} s without calls the main thread "
              f"used {r['tick main ms']:.2f} ms of CPU per tick (whole process {r['tick process ms']:.2f} ms); "
              f"during the calls {r['main ms per s during calls']:.1f} ms per s; database "
              f"{r['db bytes start'] / 2**20:.1f} MiB at start, {r['db bytes stop'] / 2**20:.1f} MiB at stop; "
              f"{r['processes known']} processes known, {r['processes seen in 24 h']} seen in the last 24 h")
        if r["loop longest turn ms"] is not None:
            print(f"{names[b]}: the event loop's longest turn {r['loop longest turn ms']:.2f} ms since the start; "
                  f"{r['loop slow turns during the calls']} turns over 5 ms during the calls")
    if args.json:
        print(json.dumps({names[b]: results[b] for b in builds}))


if __name__ == "__main__":
    main()
