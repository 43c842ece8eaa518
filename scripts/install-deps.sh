#!/usr/bin/env bash
# Installs every Debian package that building and testing trapstat needs.
# With --bench, also the tracers bench/overhead.py compares trapstatd with (bpftrace, perf); with
# --distro, what scripts/distro.sh makes a current Debian's root filesystem with (mmdebstrap); with
# --arm64, what scripts/arm64.sh extracts, cross-builds and boots an arm64 Debian with; with
# --x86-vm, what scripts/kernel-leg.sh boots Debian's x86-64 kernels with (qemu, the initramfs's
# static busybox, and kmod: the bullseye leg's VM runs this machine's own root, modprobe included).
# Idempotent: prints nothing and touches nothing when all packages are present.
set -euo pipefail

packages=(
  # build
  meson ninja-build pkg-config gcc clang llvm bpftool
  # man pages (scdoc) and where bash completion is installed (bash-completion.pc)
  scdoc bash-completion
  man-db  # renders the built man pages in tests/integration/test_cli_docs.py
  # libraries (found through pkg-config by meson)
  libbpf-dev libelf-dev zlib1g-dev libevent-dev libsqlite3-dev libsystemd-dev
  libjansson-dev libncurses-dev
  # tests
  libcmocka-dev python3 sqlite3 procps passwd util-linux varlink-go
  tmux  # drives the live view of trapstat top in tests/integration/test_cli_top.py
  libfuse3-dev fuse3  # tests/helpers/slow-file: a file whose reads wait, for major fault time
  kmod  # modprobe fuse where the kernel is booted under qemu with this root (scripts/kernel-leg.sh trixie)
  prometheus  # promtool and a real Prometheus scraping trapstat-exporter (test_exporter.py); 2.42 in Debian 12, 3.5 in forky
  # Debian packages (scripts/package.sh; git archive for the upgrade test's older commit)
  debhelper dpkg-dev build-essential lintian git
  # system suite: a real systemd booted in a container (systemd-nspawn)
  systemd-container
  systemd  # systemd-socket-activate
  # fuzzing (meson -Dfuzz=true): libFuzzer for clang, only a Recommends of clang
  libclang-rt-dev
)
case ${1:-} in
  --bench) packages+=(bpftrace linux-perf) ;;
  --distro) packages=(mmdebstrap) ;;
  --arm64) packages=(mmdebstrap qemu-system-arm gcc-aarch64-linux-gnu cpio kmod xz-utils zstd clang bpftool meson) ;;
  --x86-vm) packages=(mmdebstrap qemu-system-x86 busybox-static cpio kmod xz-utils zstd) ;;
  "") ;;
  *) echo "usage: install-deps.sh [--bench|--distro|--arm64|--x86-vm]" >&2; exit 2 ;;
esac

# Where the distribution has them (Debian forky, not 12): systemd-report, io.systemd.Metrics'
# own consumer, for the distro leg's tests; systemd-dev, systemd.pc for the packages' build
# (part of systemd itself before 253).
optional=(systemd-report systemd-dev)
if [[ ${1:-} == "" ]]; then
  for p in "${optional[@]}"; do
    apt-cache show "$p" >/dev/null 2>&1 && packages+=("$p")
  done
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ $status == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages (${missing[*]}); run this script as root" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
