#!/usr/bin/env bash
# The distribution leg of CI: trapstat built and tested on a current Debian suite (default forky:
# systemd 262, libbpf 1.7, a newer gcc, clang and meson) as well as on the machine's own Debian 12.
#
#   scripts/distro.sh [SUITE [COMMAND...]]
#
# With a COMMAND, that runs inside SUITE's root filesystem instead (e.g. bash: a shell there with
# the tree at /src and the dependencies installed).
# A root filesystem of SUITE is made with mmdebstrap and kept in build-SUITE/rootfs for reruns.
# Inside it (a chroot sharing this kernel, /proc, /sys and /dev), scripts/install-deps.sh installs
# the build and test dependencies from SUITE's archive, and the tree (bind-mounted at /src) is
# built with -Dwerror=true into build-SUITE/build and tested: the unit, bpf and distro suites,
# then the system suite, which boots SUITE's own systemd in a container with the build
# installed. Test names carry the suite ("forky-store"), and the test log is
# build-SUITE/build/meson-logs/testlog.json, which .ci/run counts with the others.
#
# Env: DISTRO_SUITES, the suites tested (default "unit bpf distro system"; empty: the build only), and DISTRO_LOGBASE, the
# test log's name (default testlog): scripts/kernel-leg.sh trixie runs the unit suite here
# (unit.json) and the bpf suite in a VM booting the suite's own kernel with this root filesystem.
#
# When Debian's archive cannot be reached, the leg cannot run: its test log then holds one test,
# "SUITE-leg", skipped with the reason, never passed. Any other failure fails the leg.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

suite=${1:-forky}
shift $(($# > 0 ? 1 : 0))
top=build-$suite
root=$top/rootfs
build=$top/build # as seen from inside: /src/$build
logbase=${DISTRO_LOGBASE:-testlog}
log=$build/meson-logs/$logbase.json

echo "== $suite leg ($top)"
[[ $# -gt 0 ]] || rm -f "$log" # never count a previous run

leg=$suite
. scripts/leg-lib.sh
skipped() { leg_skipped "$@"; }
failed() { leg_failed "$@"; }

./scripts/install-deps.sh --distro || failed "installing mmdebstrap on the host"

if [[ ! -e $root/.trapstat-rootfs ]]; then
  if ! why=$(reachable); then
    skipped "$mirror_host is not reachable ($why): no $suite root filesystem to test in"
  fi
  rm -rf "$root"
  mkdir -p "$top"
  # Check-Valid-Until: the suite's Release file may be past its Valid-Until here.
  if ! mmdebstrap --mode=root --variant=minbase --include=systemd,ca-certificates \
    --aptopt='Acquire::Check-Valid-Until "false"' "$suite" "$root" >"$top/mmdebstrap.log" 2>&1; then
    tail -20 "$top/mmdebstrap.log"
    why=$(reachable) || skipped "$mirror_host became unreachable while making the root filesystem ($why)"
    failed "mmdebstrap $suite (see $top/mmdebstrap.log)"
  fi
  touch "$root/.trapstat-rootfs"
fi

mounts=()
cleanup() {
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount -R "${mounts[$i]}" 2>/dev/null || umount -R -l "${mounts[$i]}"
  done
}
trap cleanup EXIT
mount_at() { # target, then mount's arguments
  local target=$1
  shift
  mkdir -p "$target"
  mount "$@" "$target" || failed "mount $* $target"
  mounts+=("$target")
}
# The root a mount point of its own: systemd-nspawn, run inside, remounts / (MS_SLAVE).
mount_at "$root" --bind "$root"
mount_at "$root/proc" -t proc proc
mount_at "$root/sys" --rbind /sys
mount --make-rslave "$root/sys"
# systemd >= 258 runs on the unified cgroup hierarchy only: where this machine has the hybrid
# one (a tmpfs at /sys/fs/cgroup, cgroup2 below it), the root filesystem gets cgroup2 there.
if [[ $(stat -f -c %T /sys/fs/cgroup) != cgroup2fs ]]; then
  mount -t cgroup2 cgroup2 "$root/sys/fs/cgroup" || failed "mounting cgroup2 for $suite's systemd"
fi
mount_at "$root/dev" --rbind /dev
mount --make-rslave "$root/dev"
mount_at "$root/tmp" -t tmpfs -o mode=1777 tmpfs
mount_at "$root/run" -t tmpfs -o mode=0755 tmpfs
# The tree, without what is mounted below it (the root filesystem itself is in build-SUITE/).
mount_at "$root/src" --bind "$PWD"
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
# systemd-nspawn wants the machine it runs on to have an id (mmdebstrap leaves it empty).
[[ -s $root/etc/machine-id ]] || tr -d - </proc/sys/kernel/random/uuid >"$root/etc/machine-id"

inside() {
  chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 TERM=xterm "$@"
}

if ! inside /src/scripts/install-deps.sh; then
  why=$(reachable) || skipped "$mirror_host became unreachable while installing packages ($why)"
  failed "installing the build dependencies in $suite"
fi
# What is tested: the versions, in CI's log.
inside sh -c '. /etc/os-release
  echo "== $PRETTY_NAME: systemd $(systemctl --version | sed -n "1s/^systemd \([0-9]*\).*/\1/p")," \
    "libbpf $(pkg-config --modversion libbpf), gcc $(gcc -dumpfullversion), clang $(clang -dumpversion)," \
    "meson $(meson --version), sqlite $(pkg-config --modversion sqlite3), libevent $(pkg-config --modversion libevent)"'

if [[ $# -gt 0 ]]; then
  inside sh -c 'cd /src && exec "$@"' sh "$@"
  exit $?
fi

setup=(meson setup "/src/$build" -Dwerror=true "-Dtest_prefix=$suite-")
[[ -d $build/meson-private ]] && setup+=(--reconfigure)
if ! inside sh -c 'cd /src && "$@" >/dev/null' sh "${setup[@]}" ||
  ! inside meson compile -C "/src/$build" >"$top/compile.log" 2>&1; then
  cat "$top/compile.log" 2>/dev/null
  failed "the $suite build"
fi

suites=()
for s in ${DISTRO_SUITES-unit bpf distro system}; do suites+=(--suite "$s"); done
[[ ${#suites[@]} -gt 0 ]] || exit 0 # the build only
status=0
inside meson test -C "/src/$build" --print-errorlogs --logbase "$logbase" "${suites[@]}" || status=1
exit $status
