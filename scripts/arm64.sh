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
# Kept between runs (keyed by the package list): build-arm64/{rootfs,kernel,initrd.cpio.gz}.
# Env: ARM64_SUITE (bookworm), ARM64_GUARD (seconds before qemu is killed, 1800),
# ARM64_SMP (2), ARM64_CPU (max,pauth-impdef=on: pointer authentication emulated the cheap way,
# several times faster under TCG than the architected algorithm).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
src=$PWD

suite=${ARM64_SUITE:-bookworm}
top=build-arm64
root=$top/rootfs
kdir=$top/kernel
initrd=$top/initrd.cpio.gz
build=$top/build
vm=$top/vm
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
# The initramfs loads just what mounts 9p over virtio-pci (with what they need, modules.dep).
modules=(virtio_pci 9pnet_virtio 9p)

log() { echo "== arm64: $*"; }

leg=arm64
. scripts/leg-lib.sh
skipped() { # reason
  mkdir -p "$(dirname "$log")"
  : >"$(dirname "$log")/storm.json" # no storm either
  leg_skipped "$1"
}
failed() { leg_failed "$@"; }

extract() { # target, mmdebstrap log, packages...
  local target=$1 out=$2 why
  shift 2
  rm -rf "$target"
  mkdir -p "$top"
  # Check-Valid-Until: the suite's Release file may be past its Valid-Until here.
  if ! mmdebstrap --mode=root --variant=extract --architecture=arm64 --include="$(IFS=,; echo "$*")" \
    --aptopt='Acquire::Check-Valid-Until "false"' "$suite" "$target" >"$out" 2>&1; then
    tail -20 "$out"
    why=$(reachable) || skipped "$mirror_host became unreachable while extracting $suite arm64 ($why)"
    failed "mmdebstrap (see $out)"
  fi
}

kver() { find "$kdir/lib/modules" -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | head -1; }

kernel() {
  [[ -e $kdir/.arm64-kernel && -n $(kver) ]] && return 0
  log "kernel: linux-image-arm64 of $suite"
  extract "$kdir" "$top/kernel.log" linux-image-arm64
  [[ -n $(kver) && -e $kdir/boot/vmlinuz-$(kver) ]] || failed "no kernel in $kdir"
  touch "$kdir/.arm64-kernel"
}

rootfs() {
  local key
  key=$(printf '%s\n' "$suite" "$(kver)" "${packages[@]}" | sha256sum | cut -c1-16)
  [[ -e $root/.arm64-$key ]] && return 0
  log "root filesystem: ${#packages[@]} packages of $suite arm64"
  rm -f "$initrd"
  extract "$root" "$top/rootfs.log" "${packages[@]}"
  # What maintainer scripts would have done, as far as the tests need it: the kernel's modules
  # where modprobe looks, users and groups, /bin/sh.
  mkdir -p "$root/lib/modules"
  cp -al "$kdir/lib/modules/$(kver)" "$root/lib/modules/" || failed "modules"
  depmod -b "$root" "$(kver)" || failed depmod
  cp "$root/usr/share/base-passwd/passwd.master" "$root/etc/passwd"
  cp "$root/usr/share/base-passwd/group.master" "$root/etc/group"
  : >"$root/etc/shadow"
  : >"$root/etc/gshadow"
  [[ -e $root/bin/sh ]] || ln -s dash "$root/bin/sh"
  mkdir -p "$root$src"
  touch "$root/.arm64-$key"
}

make_initrd() {
  [[ -s $initrd ]] && return 0
  log "initramfs"
  local d=$top/initrd.d m f dep mdir load=()
  mdir=$root/lib/modules/$(kver)
  rm -rf "$d"
  mkdir -p "$d"/{bin,proc,sys,dev,newroot,m}
  cp "$root/bin/busybox" "$d/bin/busybox"
  # Each module after those it needs (modules.dep lists them last-needed first), uncompressed.
  for m in "${modules[@]}"; do
    dep=$(grep -E "/$m\.ko(\.xz|\.zst)?:" "$mdir/modules.dep") || continue # built in
    for f in $(echo "${dep#*:}" | tr ' ' '\n' | tac) "${dep%%:*}"; do
      f=$(basename "$f"); f=${f%.xz}; f=${f%.zst}; f=${f%.ko}
      [[ " ${load[*]} " == *" $f "* ]] || load+=("$f")
    done
  done
  for m in "${load[@]}"; do
    f=$(find "$mdir/kernel" -name "$m.ko*" | head -1)
    case $f in
      *.xz) xz -dc "$f" >"$d/m/$m.ko" ;;
      *.zst) zstd -qdc "$f" >"$d/m/$m.ko" ;;
      *) cp "$f" "$d/m/$m.ko" ;;
    esac || failed "module $m"
  done
  cat >"$d/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in ${load[*]}; do insmod /m/\$m.ko || echo "insmod \$m failed"; done
o=trans=virtio,version=9p2000.L,msize=512000,cache=loose
mount -t 9p -o \$o,ro root /newroot || { echo "mount root failed"; poweroff -f; }
# No network, but loopback: the exporter's tests scrape 127.0.0.1.
ip link set lo up
r=/newroot
mount -t proc proc \$r/proc
mount -t sysfs sys \$r/sys
mount -t devtmpfs dev \$r/dev
mkdir -p \$r/dev/pts \$r/dev/shm; mount -t devpts devpts \$r/dev/pts; mount -t tmpfs tmpfs \$r/dev/shm
mount -t tmpfs -o mode=1777 tmpfs \$r/tmp
# Writable copies of what tests and tools write (users are added, logs kept) over the read-only root.
mkdir -p /stage; mount -t tmpfs tmpfs /stage
for t in etc run root var/tmp var/lib var/cache var/log home; do
  mkdir -p /stage/\$t; cp -a \$r/\$t/. /stage/\$t/; mount -o bind /stage/\$t \$r/\$t
done
mount -t tracefs nodev \$r/sys/kernel/tracing
mount -t debugfs nodev \$r/sys/kernel/debug
mount -t bpf bpf \$r/sys/fs/bpf
mount -t cgroup2 cgroup2 \$r/sys/fs/cgroup
# The tree without the page cache for writes (cache=mmap): with cache=loose the test logs meson
# wrote in the VM reached this machine empty.
# Its mount point: made in the root filesystem, unless a tmpfs above now hides it (a tree under /tmp).
mkdir -p \$r$src
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=mmap src \$r$src || { echo "mount src failed"; poweroff -f; }
echo "== arm64 vm: up at \$(cut -d' ' -f1 /proc/uptime) s, kernel \$(uname -r)"
chroot \$r /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  LANG=C.UTF-8 TERM=dumb /bin/bash $src/$vm/run.sh
echo \$? > \$r$src/$vm/status
sync
echo "== arm64 vm: done at \$(cut -d' ' -f1 /proc/uptime) s"
poweroff -f
EOF
  chmod +x "$d/init"
  (cd "$d" && find . | cpio -o -H newc --quiet | gzip -1) >"$initrd" || failed "cpio"
}

# boot COMMAND: runs COMMAND (bash) inside the VM, in the tree; its status is ours.
boot() {
  local t0=$SECONDS qpid
  mkdir -p "$vm"
  rm -f "$vm/status"
  : >"$vm/console.log"
  # fuse: tests/helpers/slow-file (the modules of the kernel package are in the root filesystem).
  { echo "set -u; cd $src; modprobe -q fuse"; echo "$1"; } >"$vm/run.sh"
  log "boot: $1"
  # Killing this script must end qemu too.
  trap '[[ -n ${qpid:-} ]] && kill "$qpid" 2>/dev/null' EXIT INT TERM
  timeout -k 10 "$guard" qemu-system-aarch64 -M virt -cpu "${ARM64_CPU:-max,pauth-impdef=on}" \
    -smp "${ARM64_SMP:-2}" -m 2G -accel tcg,thread=multi -nographic -no-reboot -nic none \
    -kernel "$kdir/boot/vmlinuz-$(kver)" -initrd "$initrd" -append "console=ttyAMA0 quiet panic=-1" \
    -virtfs local,path="$root",mount_tag=root,security_model=passthrough,readonly=on \
    -virtfs local,path="$src",mount_tag=src,security_model=passthrough \
    </dev/null >"$vm/console.log" 2>&1 &
  qpid=$!
  tail -n +1 -f --pid="$qpid" "$vm/console.log" &
  wait "$qpid"
  qpid=
  wait
  log "qemu exited after $((SECONDS - t0)) s"
  [[ -s $vm/status ]] || failed "no status from the VM (timeout after $guard s or a crash; see $vm/console.log)"
  return "$(cat "$vm/status")"
}

# The kernel's BTF, from its image: a gzip'd or plain arm64 Image carries .BTF as it is (no ELF
# to read it by section), found by its header (magic, version 1, 24 bytes; types then strings).
btf() {
  [[ -s $top/vmlinux.btf && $top/vmlinux.btf -nt $kdir/.arm64-kernel ]] && return 0
  python3 - "$kdir/boot/vmlinuz-$(kver)" "$top/vmlinux.btf" <<'PY' || failed "no BTF in the kernel image"
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
if [[ ! -e $kdir/.arm64-kernel || ! -e $root/.arm64-$(printf '%s\n' "$suite" "$(kver)" "${packages[@]}" | sha256sum | cut -c1-16) ]]; then
  why=$(reachable) || skipped "$mirror_host is not reachable ($why): no arm64 $suite to test on"
fi
t=$SECONDS; kernel; rootfs; make_initrd; btf; log "$suite arm64, kernel $(kver) ready ($((SECONDS - t)) s)"
t=$SECONDS; cross_build; log "cross build ($((SECONDS - t)) s)"
case $cmd in
  build) ;;
  run) boot "$*" ;;
  test)
    suites=()
    for s in "${@:-unit bpf}"; do
      for w in $s; do suites+=(--suite "$w"); done
    done
    # What is tested: the versions, in CI's log.
    log "$(. "$root/etc/os-release"; echo "$PRETTY_NAME"), kernel $(kver), libbpf" \
      "$(PKG_CONFIG_SYSROOT_DIR=$src/$root PKG_CONFIG_LIBDIR=$src/$root/usr/lib/aarch64-linux-gnu/pkgconfig pkg-config --modversion libbpf)," \
      "gcc $(aarch64-linux-gnu-gcc -dumpfullversion) (cross), clang $(clang -dumpversion) (BPF)"
    # And the storm of short-lived processes (the stress suite's, 2000 processes here): its own
    # log, which .ci/run counts too.
    # Not the store's longest unit tests (suite unit-long): SQL the same on every architecture,
    # and over 9 minutes each under TCG (measured), past the time CI has.
    boot "meson test -C $build --no-rebuild --print-errorlogs --timeout-multiplier 3 ${suites[*]} --no-suite unit-long; s=\$?
STORM_CHILDREN=2000 meson test -C $build --no-rebuild --print-errorlogs --timeout-multiplier 3 --logbase storm \
  arm64-stress --test-args Storm || s=1
exit \$s" ;;
  *) failed "unknown command $cmd (test, build, run)" ;;
esac
