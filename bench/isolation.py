#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What hostile clients cost the daemon and the other clients, side by side for two builds:

1. flood: 64 connections pipeline GetInterfaceDescription for --seconds without reading a
   reply. Printed: the daemon's peak RSS (VmHWM) and its RSS once they closed.
2. stall: three connections each pipeline 400 Top calls over the whole history (limit 10000)
   on a database made by that build's store-bench, reading their replies slowly, while one
   client streams Watch and another calls GetStatus every 100 ms on a fresh connection.
   Printed: the largest gap between Watch replies (the tick is 200 ms) and the GetStatus
   latency (median, max), and how many Top replies arrived.

usage: sudo python3 bench/isolation.py [--build DIR] [--baseline-build DIR] [--processes 1000]
                                      [--days 2] [--seconds 10]
Run from the source tree after `meson compile -C build`. Needs root (BPF). With --baseline-build
(a build of an earlier commit), every scenario runs with that build's trapstatd first, and the
table shows both: before (baseline) and after (--build)."""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time


def status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key + ":"))


def message(method, parameters=None, more=False):
    m = {"method": method}
    if parameters is not None:
        m["parameters"] = parameters
    if more:
        m["more"] = True
    return json.dumps(m).encode() + b"\0"


class Daemon:
    def __init__(self, build, db, workdir):
        self.dir = tempfile.mkdtemp(prefix="isolation-", dir=workdir)
        state = os.path.join(self.dir, "state")
        os.mkdir(state, 0o700)
        shutil.copy(db, os.path.join(state, "trapstat.db"))
        self.socket = os.path.join(self.dir, "io.trapstat")
        self.log = open(os.path.join(self.dir, "log"), "w")
        self.proc = subprocess.Popen([os.path.join(build, "daemon", "trapstatd"), "--state-dir", state,
                                      "--socket", self.socket, "--tick", "200ms"],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not os.path.exists(self.socket):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"trapstatd of {build} did not start; see {self.log.name}")
            time.sleep(0.05)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def flood(d, seconds):
    call = message("org.varlink.service.GetInterfaceDescription", {"interface": "io.trapstat"})
    before = status_kib(d.proc.pid, "VmRSS")
    socks = []
    for _ in range(64):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(d.socket)
        s.setblocking(False)
        socks.append(s)
    sent = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for s in socks:
            try:
                sent += s.send(call * 64)
            except (BlockingIOError, BrokenPipeError, ConnectionResetError):
                pass
        time.sleep(0.005)
    peak = status_kib(d.proc.pid, "VmHWM")
    for s in socks:
        s.close()
    time.sleep(2)
    return {"rss before": before, "peak rss": peak, "rss after": status_kib(d.proc.pid, "VmRSS"),
            "MiB sent": sent >> 20}


def stall(d, seconds):
    stop = threading.Event()
    top_replies = [0]
    watch_times = []

    def abuser():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(d.socket)
        s.sendall(message("io.trapstat.Top", {"windowSec": 1 << 62, "limit": 10000}) * 400)
        s.settimeout(1)
        while not stop.is_set():
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                break
            top_replies[0] += chunk.count(b"\0")
            time.sleep(0.01)  # a slow reader
        s.close()

    def watcher(s):
        s.settimeout(1)
        while not stop.is_set():
            try:
                chunk = s.recv(1 << 20)
            except socket.timeout:
                continue
            if not chunk:
                break
            now = time.monotonic()
            watch_times.extend([now] * chunk.count(b"\0"))

    w = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    w.connect(d.socket)
    w.sendall(message("io.trapstat.Watch", {}, more=True))
    threads = [threading.Thread(target=abuser) for _ in range(3)] + [threading.Thread(target=watcher, args=(w,))]
    for t in threads:
        t.start()
    latencies = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(60)
        s.connect(d.socket)
        start = time.monotonic()
        s.sendall(message("io.trapstat.GetStatus"))
        data = b""
        while not data.endswith(b"\0"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        latencies.append(time.monotonic() - start)
        s.close()
        time.sleep(0.1)
    stop.set()
    for t in threads:
        t.join()
    w.close()
    gaps = [b - a for a, b in zip(watch_times, watch_times[1:])]
    latencies.sort()
    return {"watch max gap ms": max(gaps) * 1000 if gaps else float("inf"),
            "watch replies": len(watch_times),
            "getstatus median ms": latencies[len(latencies) // 2] * 1000,
            "getstatus max ms": latencies[-1] * 1000,
            "top replies": top_replies[0]}


def make_db(build, processes, days, workdir):
    # Each build fills its own: a baseline may not read a newer schema.
    path = os.path.join(workdir, f"store-bench-{abs(hash(os.path.abspath(build)))}.db")
    if not os.path.exists(path):
        print(f"making a {days}-day database of {processes} processes with {build}'s store-bench ...",
              file=sys.stderr)
        subprocess.run([os.path.join(build, "bench", "store-bench"), "--processes", str(processes), "--days",
                        str(days), "--queries", "1", "--db", path, "--keep"], check=True, stdout=subprocess.DEVNULL)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--baseline-build")
    ap.add_argument("--processes", type=int, default=1000)
    ap.add_argument("--days", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=10)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (BPF)")

    builds = ([args.baseline_build] if args.baseline_build else []) + [args.build]
    workdir = tempfile.mkdtemp(prefix="trapstat-isolation-")
    results = {}
    try:
        for b in builds:
            db = make_db(b, args.processes, args.days, workdir)
            d = Daemon(b, db, workdir)
            try:
                results[b] = flood(d, args.seconds)
                results[b].update(stall(d, args.seconds))
            finally:
                d.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    names = {args.build: "after (--build)"}
    if args.baseline_build:
        names[args.baseline_build] = "before (baseline)"
    rows = [("flood: daemon RSS before, KiB", "rss before"), ("flood: peak RSS (VmHWM), KiB", "peak rss"),
            ("flood: RSS 2 s after, KiB", "rss after"), ("flood: MiB the clients sent", "MiB sent"),
            ("stall: largest Watch gap, ms", "watch max gap ms"), ("stall: Watch replies", "watch replies"),
            ("stall: GetStatus median, ms", "getstatus median ms"), ("stall: GetStatus max, ms", "getstatus max ms"),
            ("stall: Top replies received", "top replies")]
    print(f"{'':34}" + "".join(f"{names[b]:>20}" for b in builds))
    for label, key in rows:
        cells = "".join(f"{results[b][key]:>20.1f}" if isinstance(results[b][key], float)
                        else f"{results[b][key]:>20}" for b in builds)
        print(f"{label:34}{cells}")
    print(f"\n{args.processes} processes, {args.days} days of history; {args.seconds:g} s per scenario; "
          f"tick 200 ms; {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
