#!/usr/bin/env bash
# Builds trapstat and runs the whole test suite twice: a plain build (build/) and an
# ASan+UBSan build (build-asan/), both with the integration tests' hooks (-Dtest_hooks=true). The integration suite loads BPF programs: run as root.
# Extra arguments go to `meson test` (e.g. --suite unit).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

./scripts/install-deps.sh || exit 1

setup() {  # setup DIR [meson options...]
  local dir=$1; shift
  if [[ -d $dir/meson-private ]]; then
    meson setup --reconfigure "$dir" "$@" >/dev/null
  else
    meson setup "$dir" "$@" >/dev/null
  fi
}

status=0
for variant in plain asan; do
  case $variant in
    plain) dir=build; opts=(-Dwerror=true -Dtest_hooks=true) ;;
    asan) dir=build-asan; opts=(-Dwerror=true -Dtest_hooks=true -Db_sanitize=address,undefined -Db_lundef=false) ;;
  esac
  echo "== $variant build ($dir)"
  rm -f "$dir/meson-logs/testlog.json"  # never count a previous run
  if ! setup "$dir" "${opts[@]}" || ! meson compile -C "$dir" >"$dir.compile.log" 2>&1; then
    cat "$dir.compile.log" 2>/dev/null
    echo "== $variant build failed"
    status=1
    continue
  fi
  # halt_on_error: a sanitizer finding fails the test instead of scrolling by.
  ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1 \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    meson test -C "$dir" --print-errorlogs "$@" || status=1
done
exit $status
