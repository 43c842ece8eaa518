#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The daemon at scale, measured from outside: N live processes that each fault every second
(bench/live-procs N 1000 1), trapstatd at a 200 ms tick with --slots 16384, for --minutes of
wall time, maintenance running as it does (roll-ups every minute and hour, the checkpoints).

Meanwhile, through the socket:
  Watch        one client taking every reply (limit 20): the gaps between replies
  Top          {windowSec: 86400, limit: 20}
  History      {pid, startTime} of a random live process (its samples since it started)
  GetStatus    answered on the event loop itself: how long a call waits for the loop
one call at a time, alternating, with a random pause of 0-100 ms before each, each timed until
its whole reply was read. At the end: how many of the N processes ListProcesses knows, the
drops by kind, the daemon's CPU (% of one core over the measured time), its peak RSS
(VmHWM) and database size, how busy the whole machine was (all CPUs: the workload's share is
most of it), the event loop's longest turn and its turns over 5 ms, the writer thread's time
writing ticks and maintaining (% of wall time) and its longest step. The first --warmup seconds (the start, the processes being seen)
are not measured.

usage: sudo python3 bench/live-bench.py [--build DIR] [--baseline-build DIR] [--procs 10000]
                                        [--minutes 10] [--baseline-minutes M] [--warmup 60]
Run from the source tree after `meson compile -C build`. Needs root (BPF). With
--baseline-build (a build of an earlier commit) the same runs first with that build's trapstatd
and live-procs, and the table shows both side by side."""
import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
import varlink_raw  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


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
        self.stopped = False

    def run(self):
        buf = b""
        while not self.stopped:
            data = self.sock.recv(1 << 20)
            if not data:
                return
            buf += data
            while b"\0" in buf:
                _, buf = buf.split(b"\0", 1)
                self.arrivals.append(time.monotonic())


def call_ms(conn, method, parameters):
    t = time.monotonic()
    conn.send(method, parameters)
    reply = conn.read()
    ms = (time.monotonic() - t) * 1000
    if "error" in reply:
        raise SystemExit(f"{method}({parameters}) failed: {reply}")
    return ms, reply["parameters"]


def run(build, args):
    work = tempfile.mkdtemp(prefix="trapstat-live-bench-")
    sock = os.path.join(work, "io.trapstat")
    d = subprocess.Popen([os.path.join(build, "daemon", "trapstatd"), "--state-dir", os.path.join(work, "state"),
                          "--socket", sock, "--tick", "200ms", "--slots", "16384"],
                         stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "log"), "w"))
    procs = None
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(sock):
            if time.monotonic() > deadline or d.poll() is not None:
                raise SystemExit(f"{build}: trapstatd did not start")
            time.sleep(0.1)
        procs = subprocess.Popen([os.path.join(build, "bench", "live-procs"), str(args.procs), "1000", "1"],
                                 stdout=subprocess.PIPE, text=True)
        if not procs.stdout.readline().startswith("ready"):
            raise SystemExit("live-procs did not start")
        time.sleep(args.warmup)

        conn = varlink_raw.Connection(sock, timeout=120)
        watcher = Watcher(sock)
        watcher.start()
        _, listed = call_ms(conn, "io.trapstat.ListProcesses", {"comm": "live-procs", "limit": 100000})
        picks = [p for p in listed["processes"]] or [None]
        rng = random.Random(1)
        times = {"Top": [], "History": [], "GetStatus": []}
        status0 = call_ms(conn, "io.trapstat.GetStatus", {})[1]
        busy0 = machine_busy()
        cpu0, t0 = cpu_seconds(d.pid), time.monotonic()
        end = t0 + args.minutes * 60
        while time.monotonic() < end:
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
        cpu1, t1 = cpu_seconds(d.pid), time.monotonic()
        busy1 = machine_busy()
        watcher.stopped = True
        arrivals = [a for a in watcher.arrivals if t0 <= a <= t1]
        gaps = [(b - a) * 1000 for a, b in zip(arrivals, arrivals[1:])]
        _, listed = call_ms(conn, "io.trapstat.ListProcesses", {"comm": "live-procs", "limit": 100000})
        _, status = call_ms(conn, "io.trapstat.GetStatus", {})
        return {
            "times": times,
            "watch gaps": gaps,
            "listed": len(listed["processes"]),
            "cpu %": (cpu1 - cpu0) / (t1 - t0) * 100,
            "machine busy %": (busy1[0] - busy0[0]) / (busy1[1] - busy0[1]) * 100,
            "loop longest ms": status["loopLongestTurnUsec"] / 1000,
            "loop slow turns": status["loopSlowTurns"] - status0["loopSlowTurns"],
            "writer write %": (status["writerWriteUsec"] - status0["writerWriteUsec"]) / 1e4 / (t1 - t0),
            "writer maintain %": (status["writerMaintainUsec"] - status0["writerMaintainUsec"]) / 1e4 / (t1 - t0),
            "writer longest ms": status["writerLongestStepUsec"] / 1000,
            "rss MiB": status_kib(d.pid, "VmHWM") / 1024,
            "database MiB": status["databaseBytes"] / 2**20,
            "drops": {k["kind"]: k["count"] for k in status["dropsByKind"] if k["count"]},
            "seconds": t1 - t0,
        }
    finally:
        if procs:
            procs.terminate()
            procs.wait()
        d.terminate()
        d.wait()
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--baseline-build")
    ap.add_argument("--procs", type=int, default=10000)
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--baseline-minutes", type=float)
    ap.add_argument("--warmup", type=float, default=60)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("live-bench needs root (BPF)", file=sys.stderr)
        sys.exit(77)
    runs = []
    if args.baseline_build:
        base = argparse.Namespace(**vars(args))
        base.minutes = args.baseline_minutes or args.minutes
        runs.append(("before", run(args.baseline_build, base)))
    runs.append(("after", run(args.build, args)))

    print(f"{args.procs} live processes, each faulting once a second; 200 ms tick; times in ms")
    print(f"{'':14}" + "".join(f"{name:>32}" for name, _ in runs))
    rows = [("measured s", lambda r: f"{r['seconds']:.0f}")]
    for kind in ("Top", "History", "GetStatus"):
        rows.append((f"{kind} calls", lambda r, k=kind: f"{len(r['times'][k])}"))
        rows.append((f"{kind} med/p99/max",
                     lambda r, k=kind: f"{percentile(r['times'][k], 50):.1f} / {percentile(r['times'][k], 99):.1f} / "
                                       f"{max(r['times'][k], default=float('nan')):.1f}"))
    rows += [("Watch gaps p99/max", lambda r: f"{percentile(r['watch gaps'], 99):.0f} / "
                                              f"{max(r['watch gaps'], default=float('nan')):.0f}"),
             ("Watch replies", lambda r: f"{len(r['watch gaps']) + 1}"),
             ("listed", lambda r: f"{r['listed']} of {args.procs}"),
             ("CPU % of a core", lambda r: f"{r['cpu %']:.1f}"),
             ("machine busy %", lambda r: f"{r['machine busy %']:.1f}"),
             ("loop longest/slow", lambda r: f"{r['loop longest ms']:.1f} ms / {r['loop slow turns']}"),
             ("writer write/maint %", lambda r: f"{r['writer write %']:.1f} / {r['writer maintain %']:.1f}"),
             ("writer longest ms", lambda r: f"{r['writer longest ms']:.1f}"),
             ("peak RSS MiB", lambda r: f"{r['rss MiB']:.1f}"),
             ("database MiB", lambda r: f"{r['database MiB']:.1f}"),
             ("drops", lambda r: json.dumps(r["drops"]))]
    for label, f in rows:
        print(f"{label:14}" + "".join(f"{f(r):>32}" for _, r in runs))


if __name__ == "__main__":
    main()
