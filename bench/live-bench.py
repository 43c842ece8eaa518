#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The daemon at scale, measured from outside: --procs live processes that each fault every
--interval-ms (bench/live-procs), beside each --idle count of idle ones (each wrote a page once
and sleeps: tracked, doing nothing), trapstatd at a 200 ms tick, maintenance running as it does.
One daemon per column; with two or more --idle counts a last column gives the ratio of the last
to the first, which is what a process that does nothing costs.

After --warmup seconds (the start, the processes being seen), two phases:
  1. --cpu-seconds without clients: the daemon's CPU (% of one core, from schedstat's
     nanoseconds; split by thread: the event loop, the writer, the rest together),
     its RSS, the event loop's turns over 5 ms in that time, the records its drains read per tick (GetStatus
     tickRecordsRead, where the build has it, sampled every 1.7 s: median and max).
  2. Calls through the socket, one at a time with a random 0-100 ms pause before each, each
     timed until its whole reply was read, --calls of each kind and for at least --minutes:
       Top        {windowSec: 86400, limit: 20}
       History    {pid, startTime} of a random faulting process
       GetStatus  answered on the event loop itself: how long a call waits for the loop
     with one Watch client taking every reply (limit 20): the gaps between replies.
At the end: how many of the processes ListProcesses knows, the drops by kind, the daemon's CPU
over phase 2, peak RSS (VmHWM) and database size, how busy the whole machine was, the loop's
turns over 5 ms in phase 2, the writer's time writing ticks and maintaining and its longest
step.
  3. With --storm N: an unprivileged user (nobody) forks N short processes as fast as it can
     (tests/helpers/storm, 64 alive at once), while the Watch goes on and GetStatus is called
     every 100 ms: the processes a second, the largest gap between Watch replies (as the
     client saw them, and between the ticks' own time stamps), the daemon's CPU per storm
     process (all threads, and the event loop's thread alone), the loop's longest turn since
     the start, GetStatus (median / max), the loop's turns over 5 ms, and the drops by kind,
     during the storm.
     With --max-db-size (e.g. 8M) the writer works under the size cap as it does on a full disk.
  4. With idle processes: they all end at once (live-procs kills them when it gets SIGTERM): the
     loop's turns over 5 ms in the 3 s after, its longest turn since the start before -> after
     (the CPU ms in the one after), and the live processes ListProcesses lists before and after
     (checked: all but the idle ones and their parent).

usage: sudo python3 bench/live-bench.py [--build DIR] [--baseline-build DIR] [--procs 200]
           [--interval-ms 1000] [--idle 1000,10000] [--cpu-seconds 60] [--calls 60]
           [--minutes 0] [--warmup 60] [--slots N] [--storm N] [--max-db-size SIZE] [--repeat N]
Run from the source tree after `meson compile -C build`. Needs root (BPF). With
--baseline-build (a build of an earlier commit) every column runs first with that build's
trapstatd and live-procs. With --repeat N every column runs N times, the builds and columns
interleaved; a table for each repeat, then each ratio of every repeat and their median (single
runs of a 0.2 %-of-a-core daemon vary by 0.05 % of a core, more than the growth they measure)."""
import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
import varlink_raw  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid, tid=None):
    """The CPU time of process pid, or of its thread tid."""
    with open(f"/proc/{pid}/task/{tid}/stat" if tid else f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def thread_times(pid):
    """{tid: (name, CPU seconds)} of process pid's threads (the daemon names them: trapstatd is the
    event loop, ts-writer the writer, ...), from schedstat's nanoseconds: stat's clock ticks (10 ms)
    would be a tenth of what a quiet minute of a 0.2 %-of-a-core daemon holds. None where the kernel
    keeps no schedstat."""
    times = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ns = int(f.read().split()[0])
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                continue  # a thread that ended meanwhile
            return None
        times[tid] = (name, ns / 1e9)
    return times


def cpu_between(before_stat, before_threads, after_stat, after_threads):
    """The CPU seconds between two samples of a process (stat's, thread_times()'s): schedstat's sum
    when the same threads ran throughout (a thread that ended took its time with it), else stat's."""
    if before_threads and after_threads and before_threads.keys() == after_threads.keys():
        return sum(t for _, t in after_threads.values()) - sum(t for _, t in before_threads.values())
    return after_stat - before_stat


def by_name(threads):
    """thread_times()'s sample summed by thread name."""
    names = {}
    for name, t in threads.values():
        names[name] = names.get(name, 0) + t
    return names


def by_thread(before, after, seconds):
    """% of a core of the loop, the writer and the other threads between two thread_times()."""
    if before is None or after is None:
        return None  # no schedstat
    before, after = by_name(before), by_name(after)
    if "ts-writer" not in after:
        return None  # a build older than the threads' names
    d = {k: (after.get(k, 0) - before.get(k, 0)) / seconds * 100 for k in after}
    loop, writer = d.pop("trapstatd", 0), d.pop("ts-writer", 0)
    return loop, writer, sum(d.values())


def status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key + ":"))


def machine_busy():
    """(busy, total) jiffies of every CPU, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return sum(v) - idle, sum(v)


def percentile(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(round(p / 100 * len(v) + 0.5)) - 1))] if v else float("nan")


class Watcher(threading.Thread):
    def __init__(self, path):
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.sock.sendall(json.dumps({"method": "io.trapstat.Watch", "parameters": {"limit": 20},
                                      "more": True}).encode() + b"\0")
        self.arrivals = []
        self.stamps = []  # each reply's timeUsec: when the daemon's tick began
        self.stopped = False

    def run(self):
        buf = b""
        while not self.stopped:
            data = self.sock.recv(1 << 20)
            if not data:
                return
            buf += data
            while b"\0" in buf:
                msg, buf = buf.split(b"\0", 1)
                self.arrivals.append(time.monotonic())
                self.stamps.append(json.loads(msg).get("parameters", {}).get("timeUsec", 0) / 1000)


def call_ms(conn, method, parameters):
    t = time.monotonic()
    conn.send(method, parameters)
    reply = conn.read()
    ms = (time.monotonic() - t) * 1000
    if "error" in reply:
        raise SystemExit(f"{method}({parameters}) failed: {reply}")
    return ms, reply["parameters"]


def start_procs(build, n, interval_ms):
    procs = subprocess.Popen([os.path.join(build, "bench", "live-procs"), str(n), str(interval_ms), "1"],
                             stdout=subprocess.PIPE, text=True)
    if not procs.stdout.readline().startswith("ready"):
        raise SystemExit("live-procs did not start")
    return procs


def loop_turns(status):
    return status.get("loopSlowTurns", 0)


def slow_where(before, after):
    """The loop's turns over 5 ms between two GetStatus replies by callback (loopTurns, where the
    build has it): "on_tick_step 3, on_read 1"; "-" for none."""
    was = {t["where"]: t["slowTurns"] for t in before.get("loopTurns", [])}
    slow = {t["where"]: t["slowTurns"] - was.get(t["where"], 0) for t in after.get("loopTurns", [])}
    return ", ".join(f"{w} {n}" for w, n in sorted(slow.items(), key=lambda x: -x[1]) if n > 0) or "-"


def longest_where(status):
    """The callback of the loop's longest turn since the start, that turn in ms, and the loop
    thread's CPU in it in ms (None from builds that do not report it)."""
    turns = status.get("loopTurns", [])
    longest = max(turns, key=lambda t: t["longestUsec"], default=None)
    if longest is None:
        return 0, "?", None
    cpu = longest.get("longestCpuUsec")
    if cpu is None:
        return longest["longestUsec"] / 1000, longest["where"], None
    return longest["longestUsec"] / 1000, longest["where"], (cpu / 1000, longest.get("longestBlocked"),
                                                            longest.get("longestPreempted"))


def run(build, args, idle):
    work = tempfile.mkdtemp(prefix="trapstat-live-bench-")
    sock = os.path.join(work, "io.trapstat")
    cmd = [os.path.join(build, "daemon", "trapstatd"), "--state-dir", os.path.join(work, "state"),
           "--socket", sock, "--tick", "200ms"]
    if args.slots:
        cmd += ["--slots", str(args.slots)]
    if args.max_db_size:
        cmd += ["--max-db-size", args.max_db_size]
    d = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "log"), "w"))
    workloads = []
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(sock):
            if time.monotonic() > deadline or d.poll() is not None:
                raise SystemExit(f"{build}: trapstatd did not start")
            time.sleep(0.1)
        if idle:
            workloads.append(start_procs(build, idle, 0))
        workloads.append(start_procs(build, args.procs, args.interval_ms))
        time.sleep(args.warmup)

        # Phase 1: no clients (a connection idle for 60 s is closed: one before, one after).
        with varlink_raw.Connection(sock, timeout=120) as conn:
            status0 = call_ms(conn, "io.trapstat.GetStatus", {})[1]
        cpu0, t0, threads0 = cpu_seconds(d.pid), time.monotonic(), thread_times(d.pid)
        # The records each tick read, sampled every 1.7 s: not a multiple of the workload's second,
        # which would see the same tick of it every time (a GetStatus costs the loop a fraction of a ms).
        records = []
        while time.monotonic() < t0 + args.cpu_seconds:
            time.sleep(min(1.7, max(0, t0 + args.cpu_seconds - time.monotonic())))
            with varlink_raw.Connection(sock, timeout=120) as c:
                records.append(call_ms(c, "io.trapstat.GetStatus", {})[1].get("tickRecordsRead"))
        cpu1, t1, threads1 = cpu_seconds(d.pid), time.monotonic(), thread_times(d.pid)
        quiet_cpu = cpu_between(cpu0, threads0, cpu1, threads1)
        conn = varlink_raw.Connection(sock, timeout=120)
        status1 = call_ms(conn, "io.trapstat.GetStatus", {})[1]
        rss = status_kib(d.pid, "VmRSS") / 1024

        # Phase 2: calls, and a Watch.
        watcher = Watcher(sock)
        watcher.start()
        # History asks for the faulting processes: those with faults in the last 30 s.
        _, top = call_ms(conn, "io.trapstat.Top", {"windowSec": 30, "limit": 10000, "comm": "live-procs"})
        picks = [row["process"] for row in top["rows"]] or [None]
        rng = random.Random(1)
        times = {"Top": [], "History": [], "GetStatus": []}
        busy0 = machine_busy()
        cpu2, t2 = cpu_seconds(d.pid), time.monotonic()
        end = t2 + args.minutes * 60
        while time.monotonic() < end or min(len(v) for v in times.values()) < args.calls:
            for kind in times:
                time.sleep(rng.uniform(0, 0.1))
                if kind == "Top":
                    ms, _ = call_ms(conn, "io.trapstat.Top", {"windowSec": 86400, "limit": 20})
                elif kind == "History":
                    p = rng.choice(picks)
                    if p is None:
                        continue
                    ms, _ = call_ms(conn, "io.trapstat.History", {"pid": p["pid"], "startTime": p["startTime"]})
                else:
                    ms, _ = call_ms(conn, "io.trapstat.GetStatus", {})
                times[kind].append(ms)
        cpu3, t3 = cpu_seconds(d.pid), time.monotonic()
        busy1 = machine_busy()
        watcher.stopped = True
        arrivals = [a for a in watcher.arrivals if t2 <= a <= t3]
        gaps = [(b - a) * 1000 for a, b in zip(arrivals, arrivals[1:])]
        _, listed = call_ms(conn, "io.trapstat.ListProcesses", {"comm": "live-procs", "limit": 100000})
        _, status = call_ms(conn, "io.trapstat.GetStatus", {})
        storm = run_storm(build, args, sock, conn, status, d.pid) if args.storm else None
        mass_exit = run_mass_exit(conn, workloads.pop(0), idle) if idle else None
        return {
            "storm": storm,
            "mass exit": mass_exit,
            "times": times,
            "watch gaps": gaps,
            "listed": len(listed["processes"]),
            "cpu %": quiet_cpu / (t1 - t0) * 100,
            "cpu by thread %": by_thread(threads0, threads1, t1 - t0),
            "cpu calls %": (cpu3 - cpu2) / (t3 - t2) * 100,
            "rss MiB": rss,
            "peak rss MiB": status_kib(d.pid, "VmHWM") / 1024,
            "machine busy %": (busy1[0] - busy0[0]) / (busy1[1] - busy0[1]) * 100,
            "loop longest ms": status["loopLongestTurnUsec"] / 1000,
            "loop longest where": longest_where(status)[1],
            "loop longest cpu": longest_where(status)[2],
            "quiet slow turns": loop_turns(status1) - loop_turns(status0),
            "quiet slow where": slow_where(status0, status1),
            "calls slow turns": loop_turns(status) - loop_turns(status1),
            "calls slow where": slow_where(status1, status),
            "records per tick": None if None in records else sorted(records),
            "tracked": status1["processesTracked"],
            "writer write %": (status["writerWriteUsec"] - status1["writerWriteUsec"]) / 1e4 / (t3 - t2),
            "writer maintain %": (status["writerMaintainUsec"] - status1["writerMaintainUsec"]) / 1e4 / (t3 - t2),
            "writer longest ms": status["writerLongestStepUsec"] / 1000,
            "database MiB": status["databaseBytes"] / 2**20,
            "drops": {k["kind"]: k["count"] for k in status["dropsByKind"] if k["count"]},
        }
    finally:
        for w in workloads:
            w.terminate()
            w.wait()
        d.terminate()
        d.wait()
        shutil.rmtree(work, ignore_errors=True)


def run_mass_exit(conn, idle_procs, idle):
    """Phase 4: the idle processes end at once (live-procs kills them all when it gets SIGTERM):
    the loop's turns over 5 ms while their exits are applied, and its longest turn since the
    start before and after (wall ms, and its CPU ms where the build says)."""
    _, before = call_ms(conn, "io.trapstat.GetStatus", {})
    _, alive = call_ms(conn, "io.trapstat.ListProcesses", {"comm": "live-procs", "limit": 100000})
    t = time.monotonic()
    idle_procs.terminate()
    idle_procs.wait()
    ms = (time.monotonic() - t) * 1000
    time.sleep(3)  # fifteen ticks
    _, after = call_ms(conn, "io.trapstat.GetStatus", {})
    _, listed = call_ms(conn, "io.trapstat.ListProcesses", {"comm": "live-procs", "limit": 100000})
    return {
        "killed in ms": ms,
        "slow turns": loop_turns(after) - loop_turns(before),
        "slow where": slow_where(before, after),
        "longest before": before["loopLongestTurnUsec"] / 1000,
        "longest after": after["loopLongestTurnUsec"] / 1000,
        "longest cpu": longest_where(after)[2],
        "listed before": len(alive["processes"]),
        "listed after": len(listed["processes"]),
        "idle": idle,
    }


def mass_exit_cell(r):
    m = r["mass exit"]
    if m is None:
        return "-"
    cpu = "" if m["longest cpu"] is None else f" ({m['longest cpu'][0]:.1f})"
    return f"{m['slow turns']}; {m['longest before']:.1f}->{m['longest after']:.1f}{cpu}"


def storm_binary(build):
    return os.path.abspath(os.path.join(build, "tests", "storm"))


def run_storm(build, args, sock, conn, status0, daemon):
    """Phase 3: nobody's storm of args.storm processes beside a Watch and a GetStatus every 100 ms."""
    watcher = Watcher(sock)
    watcher.start()
    time.sleep(1)
    # Its report names every child: into a file, not a pipe it would fill and block on.
    report = tempfile.TemporaryFile(mode="w+")
    storm = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", storm_binary(build),
                              str(args.storm), "64", "stormchild"], stdout=report, text=True, cwd="/")
    # The event loop's thread is the daemon's main thread.
    cpu0, loop0 = cpu_seconds(daemon), cpu_seconds(daemon, daemon)
    t0 = time.monotonic()
    status_ms = []
    while storm.poll() is None:
        status_ms.append(call_ms(conn, "io.trapstat.GetStatus", {})[0])
        time.sleep(0.1)
    t1 = time.monotonic()
    if storm.returncode != 0:
        raise SystemExit(f"storm failed: exit status {storm.returncode}")
    report.seek(0)
    out = json.load(report)
    # The ticks the storm's processes are drained in come up to a tick after its end.
    time.sleep(0.5)
    watcher.stopped = True
    cpu1, loop1 = cpu_seconds(daemon), cpu_seconds(daemon, daemon)
    kept = [i for i, a in enumerate(watcher.arrivals) if t0 <= a <= t1 + 0.5]
    arrivals = [watcher.arrivals[i] for i in kept]
    gaps = [(b - a) * 1000 for a, b in zip(arrivals, arrivals[1:])]
    stamps = [watcher.stamps[i] for i in kept]
    tick_gaps = [b - a for a, b in zip(stamps, stamps[1:])]
    status = call_ms(conn, "io.trapstat.GetStatus", {})[1]
    before = {k["kind"]: k["count"] for k in status0["dropsByKind"]}
    return {
        "rate": args.storm / out["wallSec"],
        "watch gap max": max(gaps, default=float("nan")),
        "watch gap p99": percentile(gaps, 99),
        "tick gap max": max(tick_gaps, default=float("nan")),
        "cpu us per process": (cpu1 - cpu0) * 1e6 / args.storm,
        "loop cpu us per process": (loop1 - loop0) * 1e6 / args.storm,
        "loop longest ms": status["loopLongestTurnUsec"] / 1000,
        "loop longest where": longest_where(status)[1],
        "loop longest cpu": longest_where(status)[2],
        "status": status_ms,
        "slow turns": loop_turns(status) - loop_turns(status0),
        "slow where": slow_where(status0, status),
        "drops": {k["kind"]: k["count"] - before.get(k["kind"], 0) for k in status["dropsByKind"]
                  if k["count"] > before.get(k["kind"], 0)},
    }


def med_p99(values):
    return f"{percentile(values, 50):.1f} / {percentile(values, 99):.1f}"


ROWS = [
    ("tracked", lambda r: f"{r['tracked']}", None),
    ("records/tick med/max", lambda r: "-" if r["records per tick"] is None else
     f"{r['records per tick'][len(r['records per tick']) // 2]} / {r['records per tick'][-1]}", None),
    ("CPU % (quiet)", lambda r: f"{r['cpu %']:.2f}", lambda r: r["cpu %"]),
    ("  loop/writer/rest", lambda r: "-" if r["cpu by thread %"] is None else
     "/".join(f"{v:.2f}" for v in r["cpu by thread %"]), None),
    ("RSS MiB", lambda r: f"{r['rss MiB']:.1f}", lambda r: r["rss MiB"]),
    ("loop >5ms quiet", lambda r: f"{r['quiet slow turns']}", None),
    ("  of which", lambda r: r["quiet slow where"], None),
    ("Top med / p99", lambda r: med_p99(r["times"]["Top"]), lambda r: percentile(r["times"]["Top"], 50)),
    ("History", lambda r: med_p99(r["times"]["History"]), lambda r: percentile(r["times"]["History"], 50)),
    ("GetStatus", lambda r: med_p99(r["times"]["GetStatus"]), lambda r: percentile(r["times"]["GetStatus"], 50)),
    ("calls", lambda r: "/".join(str(len(v)) for v in r["times"].values()), None),
    ("Watch gap p99/max", lambda r: f"{percentile(r['watch gaps'], 99):.0f} / "
                                    f"{max(r['watch gaps'], default=float('nan')):.0f}", None),
    ("loop >5ms calls", lambda r: f"{r['calls slow turns']}", None),
    ("  of which", lambda r: r["calls slow where"], None),
    ("loop longest ms", lambda r: f"{r['loop longest ms']:.1f} ({r['loop longest where']})", None),
    ("  CPU ms / blocked / preempted", lambda r: "-" if r["loop longest cpu"] is None else
     "{:.1f} / {} / {}".format(*r["loop longest cpu"]), None),
    ("CPU % (calls)", lambda r: f"{r['cpu calls %']:.1f}", None),
    ("machine busy %", lambda r: f"{r['machine busy %']:.1f}", None),
    ("writer w/m %", lambda r: f"{r['writer write %']:.1f} / {r['writer maintain %']:.1f}", None),
    ("writer longest", lambda r: f"{r['writer longest ms']:.1f}", None),
    ("peak RSS MiB", lambda r: f"{r['peak rss MiB']:.1f}", None),
    ("database MiB", lambda r: f"{r['database MiB']:.1f}", None),
    ("listed", lambda r: f"{r['listed']}", None),
    ("exit >5ms; longest", mass_exit_cell, None),
    ("  of which", lambda r: "-" if r["mass exit"] is None else r["mass exit"]["slow where"], None),
    ("  listed before/after", lambda r: "-" if r["mass exit"] is None else
     f"{r['mass exit']['listed before']} / {r['mass exit']['listed after']}", None),
    ("drops", lambda r: json.dumps(r["drops"]) if r["drops"] else "none", None),
]
STORM_ROWS = [
    ("storm procs/s", lambda r: f"{r['storm']['rate']:.0f}"),
    ("storm Watch p99/max", lambda r: f"{r['storm']['watch gap p99']:.0f} / {r['storm']['watch gap max']:.0f}"),
    ("storm tick gap max", lambda r: f"{r['storm']['tick gap max']:.0f}"),
    ("storm CPU us/proc", lambda r: f"{r['storm']['cpu us per process']:.1f}"),
    ("storm loop us/proc", lambda r: f"{r['storm']['loop cpu us per process']:.1f}"),
    ("storm loop longest", lambda r: f"{r['storm']['loop longest ms']:.0f} ({r['storm']['loop longest where']})"),
    ("  CPU ms / blocked / preempted", lambda r: "-" if r["storm"]["loop longest cpu"] is None else
     "{:.1f} / {} / {}".format(*r["storm"]["loop longest cpu"])),
    ("storm GetStatus", lambda r: f"{percentile(r['storm']['status'], 50):.1f} / {max(r['storm']['status']):.1f}"),
    ("storm loop >5ms", lambda r: f"{r['storm']['slow turns']}"),
    ("  of which", lambda r: r["storm"]["slow where"]),
    ("storm drops", lambda r: ",".join(f"{k}:{v}" for k, v in r["storm"]["drops"].items()) or "none"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--baseline-build")
    ap.add_argument("--procs", type=int, default=200)
    ap.add_argument("--interval-ms", type=int, default=1000)
    ap.add_argument("--idle", default="1000,10000", help="comma-separated counts of idle processes, a column each")
    ap.add_argument("--cpu-seconds", type=float, default=60)
    ap.add_argument("--calls", type=int, default=60)
    ap.add_argument("--minutes", type=float, default=0)
    ap.add_argument("--warmup", type=float, default=60)
    ap.add_argument("--slots", type=int)
    ap.add_argument("--storm", type=int, default=0, help="phase 3: nobody forks this many short processes")
    ap.add_argument("--max-db-size", help="trapstatd --max-db-size")
    ap.add_argument("--repeat", type=int, default=1, help="run every column this many times; ratios' medians")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("live-bench needs root (BPF)", file=sys.stderr)
        sys.exit(77)
    idles = [int(x) for x in args.idle.split(",")]
    builds = [("before", args.baseline_build)] if args.baseline_build else []
    builds.append(("after" if args.baseline_build else "", args.build))
    # Repeats interleave the builds and columns (before 1000, before 10000, after 1000, ...), so
    # that a slow minute of the machine falls on one repeat, not on one column.
    repeats = []
    for _ in range(args.repeat):
        cols = []
        for name, build in builds:
            runs = []
            for idle in idles:
                runs.append((f"{name} {idle} idle".strip(), run(build, args, idle)))
            cols.append(runs)
        repeats.append(cols)
    ok = True
    for i, cols in enumerate(repeats):
        if args.repeat > 1:
            print(f"repeat {i + 1} of {args.repeat}")
        ok = print_table(args, cols) and ok
    if args.repeat > 1 and len(idles) > 1:
        print(f"ratios, {idles[-1]} idle to {idles[0]}, in each repeat; median")
        for label, _, value in ROWS:
            if not value:
                continue
            line = f"{label:18}"
            for b, (name, _) in enumerate(builds):
                ratios = sorted(value(cols[b][-1][1]) / value(cols[b][0][1]) for cols in repeats)
                line += f"  {name or 'ratios'}: " + " ".join(f"{x:.2f}" for x in ratios)
                line += f"; median {statistics.median(ratios):.2f}x"
            print(line)
    sys.exit(0 if ok else 1)


def print_table(args, cols):
    """The table of one repeat; False when a column missed processes or dropped counts."""
    print(f"{args.procs} processes faulting every {args.interval_ms} ms beside idle ones; 200 ms tick; ms")
    header = f"{'':18}"
    for runs in cols:
        header += "".join(f"{n:>22}" for n, _ in runs)
        if len(runs) > 1:
            header += f"{'ratio':>8}"
    print(header)
    ok = True
    for label, fmt, value in ROWS:
        line = f"{label:18}"
        for runs in cols:
            line += "".join(f"{fmt(r):>22}" for _, r in runs)
            if len(runs) > 1:
                line += f"{value(runs[-1][1]) / value(runs[0][1]):>7.2f}x" if value else f"{'':8}"
        print(line)
    for label, fmt in STORM_ROWS if args.storm else []:
        line = f"{label:18}"
        for runs in cols:
            line += "".join(f"{fmt(r):>22}" for _, r in runs) + (f"{'':8}" if len(runs) > 1 else "")
        print(line)
    for runs in cols:
        for n, r in runs:
            if r["listed"] < args.procs + int(n.split()[-2]):
                print(f"{n}: only {r['listed']} of the processes listed")
                ok = False
            m = r["mass exit"]
            if m and m["listed after"] != m["listed before"] - m["idle"] - 1:  # and their parent
                print(f"{n}: {m['listed after']} processes listed 3 s after {m['idle']} of "
                      f"{m['listed before']} ended, not {m['listed before'] - m['idle'] - 1}")
                ok = False
            if r["drops"]:
                print(f"{n}: drops {r['drops']}")
                ok = False
    return ok


if __name__ == "__main__":
    main()
