#!/usr/bin/env bash
# The arm64 leg of CI: trapstat cross-built for arm64 and tested on an emulated arm64 machine,
# from Debian packages only.
#
#   scripts/arm64.sh [test [SUITE...] | build | run COMMAND]
#
# An arm64 Debian (default bookworm: userland and its own kernel package) is extracted with
# mmdebstrap --variant=extract: nothing of it runs on this machine, so no qemu-user is needed.
# The kernel's BTF is read out of its image, vmlinux.h made from it, and the tree cross-built
# (aarch64-linux-gnu-gcc with the extracted tree as sysroot) into build-arm64/build with
# test names prefixed "arm64-". Then qemu-system-aarch64 (TCG) boots that kernel with a small
# initramfs (static busybox and the virtio / 9p modules of the kernel package), which mounts
# the extracted tree read-only as the root and this tree read-write at the same path, and runs
# the unit and bpf suites and the stress suite's storm (or COMMAND) inside, with timeouts three
# times as long. The test logs, build-arm64/build/meson-logs/{testlog,storm}.json, are counted by
# .ci/run with the others.
#
# When Debian's archive cannot be reached, the leg cannot run: its test log then holds one test,
# "arm64-leg", skipped with the reason, never passed. Any other failure fails the leg.
#
# The kernel package, the initramfs and the boot are scripts/vm-lib.sh's, shared with the x86-64
# kernel legs (scripts/kernel-leg.sh).
#
# Kept between runs: build-arm64/rootfs (keyed by the package list), build-arm64/kernel and the
# initramfs (scripts/vm-lib.sh).
# Env: ARM64_SUITE (bookworm), ARM64_GUARD (seconds before qemu is killed, 1800),
# VM_SMP (2), ARM64_CPU (max,pauth-impdef=on: pointer authentication emulated the cheap way,
# several times faster under TCG than the architected algorithm).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
src=$PWD

suite=${ARM64_SUITE:-bookworm}
top=build-arm64
root=$top/rootfs
build=$top/build
log=$build/meson-logs/testlog.json
guard=${ARM64_GUARD:-1800}

packages=(
  busybox-static kmod base-passwd
  # what trapstat and its tests run with
  libc6 libgcc-s1 libbpf1 libelf1 zlib1g libevent-2.1-7 libevent-pthreads-2.1-7 libsystemd0
  libjansson4 libsqlite3-0 libcmocka0 libfuse3-3 fuse3 libncursesw6
  python3 meson ninja-build bpftool sqlite3 procps util-linux passwd dash bash coreutils
  man-db groff-base grep sed findutils mawk diffutils gzip tar libc-bin hostname tmux
  bash-completion binutils
  # the cross build's sysroot
  libc6-dev libbpf-dev libelf-dev zlib1g-dev libevent-dev libsystemd-dev libjansson-dev
  libsqlite3-dev libcmocka-dev libfuse3-dev libncurses-dev
)
leg=arm64
vm_arch=arm64
vm_root=$root
vm_busybox=$root/bin/busybox
vm_src_at=$src
. scripts/leg-lib.sh
skipped() { # reason
  mkdir -p "$(dirname "$log")"
  : >"$(dirname "$log")/storm.json" # no storm either
  leg_skipped "$1"
}
failed() { leg_failed "$@"; }
# The kernel package, the initramfs and the boot (vm_kernel, vm_initrd, vm_boot).
. scripts/vm-lib.sh
log() { vm_log "$@"; }

rootfs() {
  local key
  key=$(printf '%s\n' "$suite" "$(vm_kver)" "${packages[@]}" | sha256sum | cut -c1-16)
  [[ -e $root/.arm64-$key ]] && return 0
  log "root filesystem: ${#packages[@]} packages of $suite arm64"
  vm_extract "$root" "$top/rootfs.log" "${packages[@]}"
  # What maintainer scripts would have done, as far as the tests need it: users and groups,
  # /bin/sh. (The kernel's modules: the VM binds them at /lib/modules.)
  cp "$root/usr/share/base-passwd/passwd.master" "$root/etc/passwd"
  cp "$root/usr/share/base-passwd/group.master" "$root/etc/group"
  : >"$root/etc/shadow"
  : >"$root/etc/gshadow"
  [[ -e $root/bin/sh ]] || ln -s dash "$root/bin/sh"
  touch "$root/.arm64-$key"
}

# The kernel's BTF, from its image: a gzip'd or plain arm64 Image carries .BTF as it is (no ELF
# to read it by section), found by its header (magic, version 1, 24 bytes; types then strings).
btf() {
  [[ -s $top/vmlinux.btf && $top/vmlinux.btf -nt $kdir/.arm64-kernel ]] && return 0
  python3 - "$kdir/boot/vmlinuz-$(vm_kver)" "$top/vmlinux.btf" <<'PY' || failed "no BTF in the kernel image"
import gzip, struct, sys
data = open(sys.argv[1], "rb").read()
if data[:2] == b"\x1f\x8b":
    data = gzip.decompress(data)
best, i = None, data.find(b"\x9f\xeb\x01\x00")
while i >= 0:
    hdr_len, type_off, type_len, str_off, str_len = struct.unpack_from("<5I", data, i + 4)
    size = hdr_len + str_off + str_len
    if hdr_len == 24 and type_off == 0 and str_off == type_len and i + size <= len(data):
        if best is None or size > best[1]:
            best = (i, size)
    i = data.find(b"\x9f\xeb\x01\x00", i + 1)
if best is None:
    sys.exit("no BTF header found")
open(sys.argv[2], "wb").write(data[best[0]:best[0] + best[1]])
PY
}

cross_build() {
  cat >"$top/cross.ini" <<EOF
[binaries]
c = ['aarch64-linux-gnu-gcc', '--sysroot=$src/$root']
strip = 'aarch64-linux-gnu-strip'
ar = 'aarch64-linux-gnu-ar'
pkgconfig = 'pkg-config'

[properties]
# The tests run in the VM, where the build is native: no wrapper.
needs_exe_wrapper = false
sys_root = '$src/$root'
pkg_config_libdir = ['$src/$root/usr/lib/aarch64-linux-gnu/pkgconfig', '$src/$root/usr/share/pkgconfig']

[host_machine]
system = 'linux'
cpu_family = 'aarch64'
cpu = 'aarch64'
endian = 'little'
EOF
  local setup=(meson setup "$build" --cross-file "$top/cross.ini" -Dwerror=true -Dtest_prefix=arm64-
    "-Dbtf=$src/$top/vmlinux.btf")
  [[ -e $build/build.ninja ]] && setup+=(--reconfigure)
  # Tools the tests run (python3) are found where Debian has them: the same paths in the VM.
  local PATH=/usr/sbin:/usr/bin:/sbin:/bin
  PKG_CONFIG_SYSROOT_DIR=$src/$root "${setup[@]}" >"$top/setup.log" 2>&1 || { tail -30 "$top/setup.log"; failed "meson setup"; }
  PKG_CONFIG_SYSROOT_DIR=$src/$root meson compile -C "$build" >"$top/compile.log" 2>&1 ||
    { grep -B2 -A10 -m3 'error' "$top/compile.log"; failed "the cross build"; }
}

cmd=${1:-test}
shift $(($# > 0 ? 1 : 0))
[[ $cmd == test ]] && rm -f "$log" "$build/meson-logs/storm.json" # never count a previous run
./scripts/install-deps.sh --arm64 || failed "installing the host's packages (qemu, the cross compiler)"
if vm_kernel_missing || [[ ! -e $root/.arm64-$(printf '%s\n' "$suite" "$(vm_kver)" "${packages[@]}" | sha256sum | cut -c1-16) ]]; then
  why=$(reachable) || skipped "$mirror_host is not reachable ($why): no arm64 $suite to test on"
fi
t=$SECONDS; vm_kernel; rootfs; vm_initrd; btf; log "$suite arm64, kernel $(vm_kver) ready ($((SECONDS - t)) s)"
t=$SECONDS; cross_build; log "cross build ($((SECONDS - t)) s)"
case $cmd in
  build) ;;
  run) vm_boot "$*" ;;
  test)
    suites=()
    for s in "${@:-unit bpf}"; do
      for w in $s; do suites+=(--suite "$w"); done
    done
    # What is tested: the versions, in CI's log.
    log "$(. "$root/etc/os-release"; echo "$PRETTY_NAME"), kernel $(vm_kver), libbpf" \
      "$(PKG_CONFIG_SYSROOT_DIR=$src/$root PKG_CONFIG_LIBDIR=$src/$root/usr/lib/aarch64-linux-gnu/pkgconfig pkg-config --modversion libbpf)," \
      "gcc $(aarch64-linux-gnu-gcc -dumpfullversion) (cross), clang $(clang -dumpversion) (BPF)"
    # And the storm of short-lived processes (the stress suite's, 1000 processes here): its own
    # log, which .ci/run counts too.
    # Not the store's longest unit tests (suite unit-long): SQL the same on every architecture,
    # and over 9 minutes each under TCG (measured), past the time CI has. Nor the checks of the
    # source (suite source: rooms, function lengths, the docs against --help; 75 s under TCG) nor
    # the exporter against a daemon (bpf-userland): the same code on every architecture.
    # The smaller BPF objects (counts-noloop, counts-base: what an arm64 server before 5.17 or
    # 5.12 runs) by the classes that count, not Sources (a daemon per test, 75 s an object here;
    # the host's legs run it with each object).
    vm_boot "TRAPSTAT_TEST_OBJECT_CLASSES='Counts PidReuse MapCleanup ShortLives' meson test -C $build --no-rebuild --print-errorlogs --timeout-multiplier 3 ${suites[*]} --no-suite unit-long --no-suite source --no-suite bpf-userland; s=\$?
STORM_CHILDREN=1000 meson test -C $build --no-rebuild --print-errorlogs --timeout-multiplier 3 --logbase storm \
  arm64-stress --test-args Storm || s=1
exit \$s" ;;
  *) failed "unknown command $cmd (test, build, run)" ;;
esac
