#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What a new connection costs: trapstatd tells each client's pid namespace when it connects
(daemon/peer-scope.h: the peer's pidfd, a BPF task iterator attached to it), so every `trapstat`
command pays it once.

Starts the built trapstatd (and, with --baseline-build, an earlier build's, one after the other)
and times --connections round trips, each a new connection that sends
org.varlink.service.GetInfo and reads the whole reply, then closes: from the host's pid namespace,
and from a client in a pid namespace of its own (unshare --pid --fork --mount-proc). Printed per
build and place: median, p99 (nearest rank) and max in microseconds, --repeat runs each, and the
median's ratio to the baseline's. Checks its answers: every reply is a GetInfo reply of trapstatd.

usage: sudo python3 bench/connect-bench.py [--build DIR] [--baseline-build DIR]
                                           [--connections 3000] [--repeat 3]
Needs root (BPF, unshare)."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

CLIENT = r"""
import json, socket, sys, time
path, n = sys.argv[1], int(sys.argv[2])
msg = json.dumps({"method": "org.varlink.service.GetInfo"}).encode() + b"\0"
times = []
for _ in range(n):
    t = time.perf_counter()
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.sendall(msg)
    buf = b""
    while not buf.endswith(b"\0"):
        chunk = s.recv(65536)
        if not chunk:
            sys.exit("the daemon closed the connection")
        buf += chunk
    s.close()
    times.append(time.perf_counter() - t)
    if json.loads(buf[:-1])["parameters"]["product"] != "trapstatd":
        sys.exit("not trapstatd's GetInfo reply")
print(json.dumps(times))
"""


def run_clients(sock, n, in_namespace):
    cmd = [sys.executable, "-c", CLIENT, sock, str(n)]
    if in_namespace:
        cmd = ["unshare", "--pid", "--fork", "--mount-proc", *cmd]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"client failed: {p.stderr.strip()}")
    times = sorted(json.loads(p.stdout))
    return times[len(times) // 2] * 1e6, times[min(len(times) - 1, int(len(times) * 0.99))] * 1e6, times[-1] * 1e6


def measure(build, n, repeat):
    d = tempfile.mkdtemp(prefix="connect-bench-")
    sock = os.path.join(d, "io.trapstat")
    log = open(os.path.join(d, "log"), "w")
    daemon = subprocess.Popen([os.path.join(build, "daemon", "trapstatd"), "--state-dir", os.path.join(d, "state"),
                               "--socket", sock], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(sock):
            if daemon.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"trapstatd of {build} did not start")
            time.sleep(0.05)
        # Past the daemon's start (its first sweep of the tasks, the database's first ticks).
        time.sleep(5)
        runs = {"host": [], "namespace": []}
        for _ in range(repeat):
            for place in runs:
                runs[place].append(run_clients(sock, n, place == "namespace"))
        return runs
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)
        log.close()
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--baseline-build")
    ap.add_argument("--connections", type=int, default=3000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root")
    builds = [("baseline", args.baseline_build)] if args.baseline_build else []
    builds.append(("build", args.build))
    results = {name: measure(path, args.connections, args.repeat) for name, path in builds}
    print(f"{args.connections} connections each (connect, GetInfo, reply read, close), {args.repeat} runs")
    print(f"{'build':10} {'client':10} {'median us':>10} {'p99 us':>8} {'max us':>8} {'vs baseline':>12}")
    for name, _ in builds:
        for place, runs in results[name].items():
            for i, (median, p99, worst) in enumerate(runs):
                ratio = ""
                if name == "build" and args.baseline_build:
                    ratio = f"{median / results['baseline'][place][i][0]:.2f}x"
                print(f"{name:10} {place:10} {median:10.0f} {p99:8.0f} {worst:8.0f} {ratio:>12}")


if __name__ == "__main__":
    main()
