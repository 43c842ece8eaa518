#!/usr/bin/env bash
# The kernel legs of CI: trapstat's BPF tested on other Debian x86-64 kernels than this machine's,
# each booted under qemu-system-x86_64 (TCG) from its Debian package.
#
#   scripts/kernel-leg.sh SUITE [test | prepare | boot | build | run COMMAND]
#
# SUITE is one of:
#   bullseye  Debian 11's kernel (5.10, the oldest with what trapstat needs, BTF), with this
#             machine's own root filesystem in the VM: bullseye's libbpf (0.3) cannot build the
#             tree, so it is built here (build-bullseye/build, tests named "bullseye-") and runs
#             there unchanged.
#   bookworm  Debian 12's kernel (6.1) with this machine's root, as bullseye: not a CI leg (the arm64
#             leg runs 6.1), for the x86-64 row of the kernel table (trapstatd --probe there).
#   trixie    Debian 13's kernel (6.12) with trixie's own userland: scripts/distro.sh builds the
#             tree in its trixie root filesystem (build-trixie/rootfs, build-trixie/build, tests
#             named "trixie-") and runs the unit suite there on this kernel (unit.json); the VM
#             boots trixie's kernel with that root filesystem.
# One script, not one per suite: the two differ only in where the root and the build come from;
# the VM itself (initramfs, boot, the kernel package's cache) is scripts/vm-lib.sh, shared with
# scripts/arm64.sh.
#
# test (the default) runs in the VM the bpf suite and the stress suite's storm of 1000 processes,
# with timeouts three times as long: the logs are $build/meson-logs/{testlog,storm}.json, which
# .ci/run counts with the others. run COMMAND runs COMMAND (bash, in the tree) in the VM instead.
# test is prepare and then boot, which .ci/run also runs apart: prepare (the kernel, the build and,
# for trixie, its unit suite; 100-260 s) while another leg's VM runs, boot (the VM) after it.
# prepare leaves $top/prepared (the unit suite's status), which boot takes.
#
# When Debian's archive cannot be reached, the leg cannot run: its test log then holds one test,
# "SUITE-leg", skipped with the reason, never passed. Any other failure fails the leg.
#
# Kept between runs: build-SUITE/{kernel,initrd.cpio.gz} (scripts/vm-lib.sh) and, for trixie,
# build-SUITE/rootfs (scripts/distro.sh).
# Env: KERNEL_LEG_GUARD (seconds before qemu is killed, 1800), X86_CPU (qemu's -cpu, max),
# VM_SMP (2).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
src=$PWD

suite=${1:-}
shift $(($# > 0 ? 1 : 0))
top=build-$suite
build=$top/build
log=$build/meson-logs/testlog.json
storm=$build/meson-logs/storm.json
guard=${KERNEL_LEG_GUARD:-1800}
leg=$suite
vm_arch=amd64

. scripts/leg-lib.sh
skipped() { # reason
  mkdir -p "$(dirname "$log")"
  : >"$storm" # no storm either, nor trixie's unit suite
  [[ $suite != trixie ]] || : >"$build/meson-logs/unit.json"
  leg_skipped "$1"
}

case $suite in
  bullseye | bookworm)
    vm_root=/
    vm_src_at=$src
    libbpf() { pkg-config --modversion libbpf; }
    ;;
  trixie)
    vm_root=$top/rootfs
    # Where scripts/distro.sh mounts the tree in its chroot, where the build looks for it.
    vm_src_at=/src
    libbpf() { PKG_CONFIG_LIBDIR=$vm_root/usr/lib/x86_64-linux-gnu/pkgconfig pkg-config --modversion libbpf; }
    ;;
  *) echo "usage: kernel-leg.sh bullseye|trixie|bookworm [test | build | run COMMAND]" >&2; exit 2 ;;
esac
vm_busybox=/bin/busybox # busybox-static: scripts/install-deps.sh --x86-vm
. scripts/vm-lib.sh

cmd=${1:-test}
shift $(($# > 0 ? 1 : 0))
stamp=$top/prepared
case $cmd in
  test | prepare) rm -f "$log" "$storm" "$build/meson-logs/unit.json" "$stamp" ;; # never count a previous run
  boot)
    # prepare skipped the leg (its log says so), or left the unit suite's status.
    grep -qs "\"$leg-leg\"" "$log" && exit 0
    [[ -e $stamp ]] || leg_failed "not prepared (scripts/kernel-leg.sh $suite prepare)"
    unit_status=$(<"$stamp")
    rm -f "$stamp"
    ;;
esac
if [[ $cmd != boot ]]; then
  ./scripts/install-deps.sh --x86-vm || leg_failed "installing the host's packages (qemu, busybox)"
  if vm_kernel_missing; then
    why=$(reachable) || skipped "$mirror_host is not reachable ($why): no $suite kernel to test on"
  fi
fi

# The build on this machine, for a kernel booted with this machine's root.
build_here() {
  local setup=(meson setup "$build" -Dwerror=true -Dtest_hooks=true "-Dtest_prefix=$suite-")
  ./scripts/install-deps.sh || leg_failed "installing the build's packages"
  [[ -e $build/build.ninja ]] && setup+=(--reconfigure)
  "${setup[@]}" >"$top/setup.log" 2>&1 || { tail -30 "$top/setup.log"; leg_failed "meson setup"; }
  meson compile -C "$build" >"$top/compile.log" 2>&1 ||
    { grep -B2 -A10 -m3 'error' "$top/compile.log"; leg_failed "the build"; }
}

# The build in trixie's root filesystem, and its unit suite there (this machine's kernel will do
# for those): unit.json. A skip there (the archive unreachable) is the leg's.
unit_status=${unit_status:-0}
build_trixie() {
  local unit=$build/meson-logs/unit.json suites=unit
  [[ $cmd == test || $cmd == prepare ]] || suites= # the build only
  DISTRO_SUITES=$suites DISTRO_LOGBASE=unit ./scripts/distro.sh trixie || unit_status=1
  if grep -q "\"$leg-leg\"" "$unit" 2>/dev/null; then
    mv "$unit" "$log"
    : >"$unit"
    : >"$storm"
    exit 0
  fi
  [[ -e $build/build.ninja ]] || leg_failed "the trixie build"
  if [[ -n $suites && ! -s $unit ]]; then leg_failed "no unit test log from the trixie build"; fi
}

if [[ $cmd != boot ]]; then
  t=$SECONDS; vm_kernel; vm_initrd; vm_log "$suite kernel $(vm_kver) ready ($((SECONDS - t)) s)"
  t=$SECONDS; if [[ $suite == trixie ]]; then build_trixie; else build_here; fi; vm_log "build ($((SECONDS - t)) s)"
fi
case $cmd in
  build) ;;
  prepare) echo "$unit_status" >"$stamp" ;;
  run) vm_boot "$*" ;;
  test | boot)
    # What is tested: the versions, in CI's log.
    vm_log "$(. "$vm_root/etc/os-release"; echo "$PRETTY_NAME") userland, $suite kernel $(vm_kver), libbpf $(libbpf)"
    run="meson test -C $build --no-rebuild --print-errorlogs --timeout-multiplier 3"
    # Debian 11's kernel runs only the base object: counts is counts-base there (90 s again).
    # Trixie's 6.12 runs the richest, as the host's kernel does, which runs the smaller two x86-64
    # objects in three legs (plain, ASan, forky): not again here (160 s under TCG).
    skip=; [[ $suite == bullseye ]] && skip="--no-suite bpf-object-base"
    # The exporter against a daemon (suite bpf-userland) checks code above the kernel: bullseye
    # runs it for 5.10's missing features, trixie not (the host's legs run it on a current kernel).
    [[ $suite == trixie ]] && skip="--no-suite bpf-object-base --no-suite bpf-object-noloop --no-suite bpf-userland"
    vm_boot "t=\$SECONDS; $run --suite bpf $skip; s=\$?
echo \"== $leg vm: bpf suite \$((SECONDS - t)) s\"
t=\$SECONDS; STORM_CHILDREN=1000 $run --logbase storm $leg-stress --test-args Storm || s=1
echo \"== $leg vm: storm \$((SECONDS - t)) s\"
exit \$s"
    status=$?
    exit $((status || unit_status))
    ;;
  *) leg_failed "unknown command $cmd (test, prepare, boot, build, run)" ;;
esac
