#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What trapstatd itself costs: CPU (% of one core) and memory, at the default tick, on an idle
system, with N live processes that fault every tick, and with Watch clients attached — all
scenarios in one run, side by side. The budget (README "Performance"): under 1 % of one
core and under 32 MiB RSS, idle or with 1000 live processes.

usage: sudo python3 bench/daemon-cost.py [--build DIR] [--baseline-build DIR] [--procs 1000] [--seconds 60]
                                        [--warmup 10] [--only TEXT]
Run from the source tree after `meson compile -C build`. Needs root (BPF). With --baseline-build,
every scenario also runs with that build's trapstatd (and its live-procs), right before the one
of --build, and the table shows both side by side: before (baseline) and after (--build)."""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


def status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key + ":"))


class Watcher(threading.Thread):
    """A Watch client that takes every reply, as `trapstat top` does."""

    def __init__(self, path, limit):
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.sock.sendall(json.dumps({"method": "io.trapstat.Watch", "parameters": {"limit": limit},
                                      "more": True}).encode() + b"\0")
        self.replies = self.rows = self.missed = 0
        self.bytes = 0

    def run(self):
        buf = b""
        try:
            while True:
                chunk = self.sock.recv(1 << 20)
                if not chunk:
                    return
                self.bytes += len(chunk)
                buf += chunk
                while b"\0" in buf:
                    msg, buf = buf.split(b"\0", 1)
                    p = json.loads(msg)["parameters"]
                    self.replies += 1
                    self.rows += len(p["rows"])
                    self.missed += p["missedTicks"]
        except OSError:
            return

    def close(self):
        self.sock.close()


def run_scenario(args, build, name, procs, interval_ms, watchers):
    tmp = tempfile.mkdtemp(prefix="trapstat-cost-")
    sock = os.path.join(tmp, "io.trapstat")
    log = open(os.path.join(tmp, "trapstatd.log"), "w")
    daemon = subprocess.Popen([os.path.join(build, "daemon", "trapstatd"), "--state-dir", tmp, "--socket", sock],
                              stdout=log, stderr=subprocess.STDOUT)
    workload, clients = None, []
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(sock):
            if daemon.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"trapstatd did not start; see {log.name}")
            time.sleep(0.05)
        if procs:
            workload = subprocess.Popen([os.path.join(build, "bench", "live-procs"), str(procs), str(interval_ms),
                                         "10"],
                                        stdout=subprocess.PIPE, text=True)
            if not workload.stdout.readline().startswith("ready"):
                raise SystemExit("live-procs did not start")
        clients = [Watcher(sock, limit) for limit in watchers]
        for c in clients:
            c.start()

        time.sleep(args.warmup)  # loading BPF and the first ticks are start-up, not steady state
        cpu0, t0 = cpu_seconds(daemon.pid), time.monotonic()
        replies0 = [c.replies for c in clients]
        time.sleep(args.seconds)
        cpu1, t1 = cpu_seconds(daemon.pid), time.monotonic()
        rss, hwm = status_kib(daemon.pid, "VmRSS"), status_kib(daemon.pid, "VmHWM")
        db = sum(os.path.getsize(os.path.join(tmp, f)) for f in os.listdir(tmp) if f.startswith("trapstat.db"))
        watch = ", ".join(f"Watch limit {limit}: {c.replies - r0} replies, {c.missed} missed"
                          for c, r0, limit in zip(clients, replies0, watchers))
        return {"name": name, "cpu": 100 * (cpu1 - cpu0) / (t1 - t0), "rss": rss / 1024, "hwm": hwm / 1024,
                "db": db / 1024, "watch": watch}
    finally:
        for c in clients:
            c.close()
        if workload:
            workload.send_signal(signal.SIGTERM)
            workload.wait(timeout=30)
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=30)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--baseline-build", metavar="DIR",
                    help="also run every scenario with this build (e.g. of the last landed main), side by side")
    ap.add_argument("--procs", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--warmup", type=float, default=10)
    ap.add_argument("--only", metavar="TEXT", help="run only the scenarios whose name contains TEXT")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("daemon-cost: needs root (trapstatd loads BPF programs)")
    for build in filter(None, (args.build, args.baseline_build)):
        for tool in ("daemon/trapstatd", "bench/live-procs"):
            if not os.access(os.path.join(build, tool), os.X_OK):
                sys.exit(f"daemon-cost: no {tool} in {build}; run meson compile -C {build}")

    n = args.procs
    scenarios = [
        ("idle", 0, 0, []),
        (f"{n} processes, each faulting every 10 s", n, 10000, []),
        (f"{n} processes, each faulting every 1 s", n, 1000, []),
        (f"{n} every 1 s + Watch (limit 20)", n, 1000, [20]),
        (f"{n} every 1 s + Watch (limit 10000)", n, 1000, [10000]),
    ]
    scenarios = [s for s in scenarios if not args.only or args.only in s[0]]
    print(f"daemon-cost: trapstatd at the default tick (1 s), {args.seconds:.0f} s measured after "
          f"{args.warmup:.0f} s warm-up; each process writes 10 fresh pages per round")
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, kernel {os.uname().release}, "
          f"{os.cpu_count()} CPUs")
    print()
    if args.baseline_build:
        print(f"before: {args.baseline_build}, after: {args.build}")
        print()
        print(f"| {'scenario':40} | CPU % before | CPU % after | RSS MiB before | RSS MiB after | "
              f"peak RSS MiB before | peak RSS MiB after | database KiB before | database KiB after | Watch (after) |")
        print(f"|{'-' * 42}|--------------|-------------|----------------|---------------|"
              f"---------------------|--------------------|---------------------|--------------------|---------------|")
    else:
        print(f"| {'scenario':40} | CPU % of one core | RSS MiB | peak RSS MiB | database KiB | Watch |")
        print(f"|{'-' * 42}|------------------|---------|--------------|--------------|-------|")
    for name, procs, interval_ms, watchers in scenarios:
        if args.baseline_build:
            b = run_scenario(args, args.baseline_build, name, procs, interval_ms, watchers)
            a = run_scenario(args, args.build, name, procs, interval_ms, watchers)
            print(f"| {name:40} | {b['cpu']:12.2f} | {a['cpu']:11.2f} | {b['rss']:14.1f} | {a['rss']:13.1f} | "
                  f"{b['hwm']:19.1f} | {a['hwm']:18.1f} | {b['db']:19.0f} | {a['db']:18.0f} | {a['watch'] or '-'} |",
                  flush=True)
            continue
        r = run_scenario(args, args.build, name, procs, interval_ms, watchers)
        print(f"| {r['name']:40} | {r['cpu']:16.2f} | {r['rss']:7.1f} | {r['hwm']:12.1f} | {r['db']:12.0f} | "
              f"{r['watch'] or '-'} |", flush=True)


if __name__ == "__main__":
    main()
