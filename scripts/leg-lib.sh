# Shared by the CI legs that test on another Debian (scripts/distro.sh, scripts/arm64.sh): sourced,
# not run. The caller sets leg (the test name prefix, e.g. "forky") and log (the meson test log the
# leg writes).

mirror_host=deb.debian.org

# A test log with the leg skipped for reason $1, and success: the one way a leg may not run.
leg_skipped() {
  mkdir -p "$(dirname "$log")"
  python3 -c 'import json, sys; print(json.dumps({"name": sys.argv[1] + "-leg", "result": "SKIP", "stdout": sys.argv[2]}))' \
    "$leg" "$1" >"$log"
  echo "== $leg leg skipped: $1"
  exit 0
}

leg_failed() {
  echo "== $leg leg failed: $1" >&2
  exit 1
}

# The archive, reachable or not (the reason on stdout when not): the one reason to skip.
reachable() {
  python3 - "$mirror_host" <<'PY'
import socket, sys
try:
    socket.create_connection((sys.argv[1], 80), timeout=10).close()
except OSError as e:
    print(e)
    sys.exit(1)
PY
}
