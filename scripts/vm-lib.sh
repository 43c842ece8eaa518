# Shared by the CI legs that boot a Debian kernel package under qemu (TCG): scripts/arm64.sh
# (arm64, its own cross-built userland) and scripts/kernel-leg.sh (x86-64: bullseye's kernel with
# this machine's root, trixie's kernel with trixie's root). Sourced after scripts/leg-lib.sh, not
# run.
#
# The caller sets:
#   leg        test name prefix and log tag ("arm64", "bullseye", "trixie")
#   suite      the Debian suite the kernel package comes from
#   vm_arch    Debian architecture: arm64 or amd64 (the kernel package is linux-image-$vm_arch)
#   top        the leg's directory (build-LEG): kernel/, initrd.cpio.gz and vm/ are kept in it
#   vm_root    the directory qemu exports as the VM's root filesystem (read-only; "/" allowed)
#   vm_busybox a static busybox for the initramfs, built for vm_arch
#   vm_src_at  where the tree is mounted in the VM: where its build was configured to find it
#   guard      seconds before qemu is killed
# and calls vm_kernel, vm_initrd, then vm_boot COMMAND.
#
# The VM: a small initramfs (static busybox, the kernel package's virtio_pci, 9pnet_virtio, 9p
# and overlay modules) mounts vm_root read-only over 9p with an overlay whose upper layer is a
# tmpfs: the root is writable (users are added, logs kept) without copying any of it, which
# matters when vm_root is a whole machine's root. The kernel package's modules are bound at
# /lib/modules (made in the overlay, so also where the root has none: this machine's), for
# modprobe; the tree is mounted read-write over 9p at vm_src_at; the new root becomes the root
# (as switch_root makes it), COMMAND runs there (bash, as root) and its status is written back
# into the tree, then the VM powers off.
#
# Kept between runs: $top/kernel (marked once extracted and indexed by depmod) and the initramfs,
# keyed by what it is made of (the kernel's version, the init script, busybox): a changed script
# makes a new one.

kdir=$top/kernel
initrd=$top/initrd.cpio.gz
vm=$top/vm
# What mounts 9p over virtio-pci, and the root's overlay (with what they need: modules.dep).
vm_modules=(virtio_pci 9pnet_virtio 9p overlay)

case $vm_arch in
  # pauth-impdef: pointer authentication emulated the cheap way, several times faster under TCG
  # than the architected algorithm.
  arm64) vm_qemu=(qemu-system-aarch64 -M virt -cpu "${ARM64_CPU:-max,pauth-impdef=on}") vm_console=ttyAMA0 ;;
  amd64) vm_qemu=(qemu-system-x86_64 -M q35 -cpu "${X86_CPU:-max}") vm_console=ttyS0 ;;
  *) leg_failed "vm-lib: unknown architecture $vm_arch" ;;
esac

vm_log() { echo "== $leg: $*"; }

# vm_extract TARGET LOG PACKAGES...: PACKAGES of suite/vm_arch unpacked into TARGET, nothing run
# (mmdebstrap's extract variant: no qemu-user needed for a foreign architecture).
vm_extract() {
  local target=$1 out=$2 why
  shift 2
  rm -rf "$target"
  mkdir -p "$top"
  # Check-Valid-Until: the suite's Release file may be past its Valid-Until here.
  if ! mmdebstrap --mode=root --variant=extract --architecture="$vm_arch" --include="$(IFS=,; echo "$*")" \
    --aptopt='Acquire::Check-Valid-Until "false"' "$suite" "$target" >"$out" 2>&1; then
    tail -20 "$out"
    why=$(reachable) || leg_skipped "$mirror_host became unreachable while extracting $suite $vm_arch ($why)"
    leg_failed "mmdebstrap (see $out)"
  fi
}

vm_kver() { find "$kdir/lib/modules" -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | head -1; }

# Whether the kernel must still be extracted (then the archive must be reachable). A kernel
# extracted before it was indexed here (modules.dep) is extracted again.
vm_kernel_missing() {
  [[ ! -e $kdir/.$vm_arch-kernel || -z $(vm_kver) || ! -e $kdir/lib/modules/$(vm_kver)/modules.dep ]]
}

vm_kernel() {
  vm_kernel_missing || return 0
  vm_log "kernel: linux-image-$vm_arch of $suite"
  extract_t0=$SECONDS
  vm_extract "$kdir" "$top/kernel.log" "linux-image-$vm_arch"
  # Packages of a merged-/usr Debian (trixie) put the modules in usr/lib only: lib as the root's.
  [[ -e $kdir/lib || ! -d $kdir/usr/lib/modules ]] || ln -s usr/lib "$kdir/lib"
  [[ -n $(vm_kver) && -e $kdir/boot/vmlinuz-$(vm_kver) ]] || leg_failed "no kernel in $kdir"
  # What the package's postinst would have done: modules.dep, for modprobe in the VM.
  depmod -b "$kdir" "$(vm_kver)" || leg_failed "depmod"
  touch "$kdir/.$vm_arch-kernel"
  vm_log "kernel $(vm_kver) extracted ($((SECONDS - extract_t0)) s)"
}

# The init script: everything between the kernel and COMMAND.
vm_init_script() {
  local src_at=$1 load=$2
  cat <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $load; do insmod /m/\$m.ko || echo "insmod \$m failed"; done
o=trans=virtio,version=9p2000.L,msize=512000
mkdir -p /lower /rw /newroot
mount -t 9p -o \$o,cache=loose,ro root /lower || { echo "mount root failed"; poweroff -f; }
# The root writable in memory over the read-only export: nothing of it copied.
mount -t tmpfs -o mode=0755 tmpfs /rw
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot ||
  { echo "mount overlay failed"; poweroff -f; }
# No network, but loopback: the exporter's tests scrape 127.0.0.1.
ip link set lo up
r=/newroot
mount -t proc proc \$r/proc
mount -t sysfs sys \$r/sys
mount -t devtmpfs dev \$r/dev
mkdir -p \$r/dev/pts \$r/dev/shm; mount -t devpts devpts \$r/dev/pts; mount -t tmpfs tmpfs \$r/dev/shm
mount -t tmpfs -o mode=1777 tmpfs \$r/tmp
mount -t tmpfs -o mode=0755 tmpfs \$r/run
mount -t tracefs nodev \$r/sys/kernel/tracing
mount -t debugfs nodev \$r/sys/kernel/debug
mount -t bpf bpf \$r/sys/fs/bpf
mount -t cgroup2 cgroup2 \$r/sys/fs/cgroup
# The tree without the page cache for writes (cache=mmap): with cache=loose the test logs meson
# wrote in the VM reached this machine empty.
mkdir -p \$r$src_at
mount -t 9p -o \$o,cache=mmap src \$r$src_at || { echo "mount src failed"; poweroff -f; }
# The kernel package's modules where modprobe looks (the tree holds them: $kdir).
mkdir -p \$r/lib/modules
mount -o bind \$r$src_at/$kdir/lib/modules \$r/lib/modules
echo "== $leg vm: up at \$(cut -d' ' -f1 /proc/uptime) s, kernel \$(uname -r)"
# The new root made the root of everything, as switch_root does: moved onto / and entered by
# this process, pid 1, whose root the kernel's threads share. Were the command only chrooted,
# paths the kernel resolves from its threads (bpf_d_path in a kworker) would begin "/newroot".
# Busybox (for the power-off) comes along in the new root's /run.
mkdir -p \$r/run/vm
cp /bin/busybox \$r/run/vm/busybox
cd \$r
mount --move . / || { echo "moving the root failed"; poweroff -f; }
# The tests learn that the CPU is emulated (TRAPSTAT_TEST_EMULATED: qemu's TCG, about ten times
# slower), where a sequence must fit between two ticks.
exec chroot . /run/vm/busybox sh -c '
  /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    LANG=C.UTF-8 TERM=dumb TRAPSTAT_TEST_EMULATED=1 /bin/bash $src_at/$vm/run.sh
  echo \$? > $src_at/$vm/status
  sync
  echo "== $leg vm: done at \$(/run/vm/busybox cut -d" " -f1 /proc/uptime) s"
  /run/vm/busybox poweroff -f'
EOF
}

vm_initrd() {
  local d=$top/initrd.d m f dep mdir load=() key t0=$SECONDS
  mdir=$kdir/lib/modules/$(vm_kver)
  # Each module after those it needs (modules.dep lists them last-needed first).
  for m in "${vm_modules[@]}"; do
    dep=$(grep -E "/$m\.ko(\.xz|\.zst)?:" "$mdir/modules.dep") || continue # built in
    for f in $(echo "${dep#*:}" | tr ' ' '\n' | tac) "${dep%%:*}"; do
      f=$(basename "$f"); f=${f%.xz}; f=${f%.zst}; f=${f%.ko}
      [[ " ${load[*]} " == *" $f "* ]] || load+=("$f")
    done
  done
  key=$( { vm_kver; vm_init_script "$vm_src_at" "${load[*]}"; sha256sum <"$vm_busybox"; } | sha256sum | cut -c1-16)
  [[ -s $initrd && $(cat "$initrd.key" 2>/dev/null) == "$key" ]] && return 0
  vm_log "initramfs"
  rm -rf "$d" "$initrd.key"
  mkdir -p "$d"/{bin,proc,sys,dev,m}
  cp "$vm_busybox" "$d/bin/busybox" || leg_failed "no busybox at $vm_busybox"
  # Uncompressed: busybox's insmod need not know xz or zstd.
  for m in "${load[@]}"; do
    f=$(find "$mdir/kernel" -name "$m.ko*" | head -1)
    case $f in
      *.xz) xz -dc "$f" >"$d/m/$m.ko" ;;
      *.zst) zstd -qdc "$f" >"$d/m/$m.ko" ;;
      *) cp "$f" "$d/m/$m.ko" ;;
    esac || leg_failed "module $m"
  done
  vm_init_script "$vm_src_at" "${load[*]}" >"$d/init"
  chmod +x "$d/init"
  (cd "$d" && find . | cpio -o -H newc --quiet | gzip -1) >"$initrd" || leg_failed "cpio"
  echo "$key" >"$initrd.key"
  vm_log "initramfs made ($((SECONDS - t0)) s)"
}

# vm_boot COMMAND: runs COMMAND (bash) inside the VM, in the tree; its status is ours.
vm_boot() {
  local t0=$SECONDS qpid
  mkdir -p "$vm"
  rm -f "$vm/status"
  : >"$vm/console.log"
  # fuse: tests/helpers/slow-file. Through a pipe: on the console (a tty) meson draws a progress
  # spinner, a line of the log every second. The tests' waits for the daemon three times as long,
  # as the legs' --timeout-multiplier (tests/integration/daemon.py).
  printf '%s\n' "set -u; cd $vm_src_at; modprobe -q fuse; export TRAPSTAT_TEST_TIME_SCALE=3" "( $1"$'\n'") 2>&1 | cat" \
    'exit ${PIPESTATUS[0]}' >"$vm/run.sh"
  vm_log "boot: $1"
  # Killing this script must end qemu too.
  trap '[[ -n ${qpid:-} ]] && kill "$qpid" 2>/dev/null' EXIT INT TERM
  # multidevs=remap: an export spanning several file systems (a machine's root) keeps inode
  # numbers unique, which the overlay relies on.
  timeout -k 10 "$guard" "${vm_qemu[@]}" -smp "${VM_SMP:-2}" -m 2G -accel tcg,thread=multi \
    -nographic -no-reboot -nic none \
    -kernel "$kdir/boot/vmlinuz-$(vm_kver)" -initrd "$initrd" -append "console=$vm_console quiet panic=-1" \
    -virtfs local,path="$vm_root",mount_tag=root,security_model=passthrough,readonly=on,multidevs=remap \
    -virtfs local,path="$src",mount_tag=src,security_model=passthrough,multidevs=remap \
    </dev/null >"$vm/console.log" 2>&1 &
  qpid=$!
  tail -n +1 -f --pid="$qpid" "$vm/console.log" &
  wait "$qpid"
  qpid=
  wait
  vm_log "qemu exited after $((SECONDS - t0)) s"
  [[ -s $vm/status ]] || leg_failed "no status from the VM (timeout after $guard s or a crash; see $vm/console.log)"
  return "$(cat "$vm/status")"
}
