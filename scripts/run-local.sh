#!/usr/bin/env bash
# Builds trapstat, starts trapstatd on a local state directory and socket (.trapstat-local/,
# database .trapstat-local/trapstat.db), and opens the live view. Needs root (BPF).
# On a terminal, quitting the view (q) stops the daemon; otherwise the daemon keeps running,
# one table is printed, and so is the command for the live view.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
[[ -d build/meson-private ]] || meson setup build >/dev/null
meson compile -C build >/dev/null

dir=.trapstat-local
sock=$dir/io.trapstat
trapstat=(build/client/trapstat --socket "$sock")
mkdir -p "$dir"

if ! "${trapstat[@]}" status >/dev/null 2>&1; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "run-local: trapstatd loads BPF programs and needs root; run: sudo $0" >&2
    exit 1
  fi
  build/daemon/trapstatd --state-dir "$dir" --socket "$sock" </dev/null >>"$dir/trapstatd.log" 2>&1 &
  echo $! >"$dir/trapstatd.pid"
  for _ in $(seq 100); do
    "${trapstat[@]}" status >/dev/null 2>&1 && break
    kill -0 "$(cat "$dir/trapstatd.pid")" 2>/dev/null || { cat "$dir/trapstatd.log" >&2; exit 1; }
    sleep 0.1
  done
  started=1
fi

if [[ -t 0 && -t 1 ]]; then
  [[ ${started:-0} == 1 ]] && trap 'kill "$(cat "$dir/trapstatd.pid")"; wait 2>/dev/null' EXIT
  "${trapstat[@]}" top
else
  sleep 2  # let a couple of ticks reach the database
  "${trapstat[@]}" top -b -n 1
  echo
  echo "trapstatd keeps running (log: $dir/trapstatd.log). Live view:"
  echo "  ${trapstat[*]} top"
  echo "Stop it with: kill \$(cat $dir/trapstatd.pid)"
fi
