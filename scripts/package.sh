#!/usr/bin/env bash
# Builds the Debian packages (debian/: trapstatd, trapstat, trapstat-exporter) on the running
# system with dpkg-buildpackage -us -uc -b, and checks them with lintian.
#
#   scripts/package.sh [-o DIR] [-c COMMIT] [--check] [--no-lintian]
#
#   -o DIR     where the packages, the .changes file and lintian.log go (default build-deb/);
#              the source is copied to DIR/src/ and built there, never in the tree itself
#   -c COMMIT  build that commit of the tree (git archive) instead of the working tree; a
#              commit older than debian/ gets this tree's debian/, versioned below it as
#              VERSION~git.HASH (the upgrade test's "previous release")
#   --check    run the unit suite in the package build (dh_auto_test); off by default, CI runs
#              every suite on the tree itself
#   --no-lintian  build only (the upgrade test's older packages, which are not shipped)
#
# Debian 12 is the machine itself; forky's packages are built the same way inside the distro
# leg's root filesystem: scripts/distro.sh forky scripts/package.sh -o build-forky/deb
# Exits non-zero when the build fails or lintian reports an error or a warning (there are no
# overrides; one would go in debian/PACKAGE.lintian-overrides with a comment saying why).
# Prints each package's size and lintian's tags.
set -euo pipefail
cd "$(dirname "$0")/.."

out=build-deb
commit=
check=no
lintian=yes
while [[ $# -gt 0 ]]; do
  case $1 in
    -o) out=$2; shift 2 ;;
    -c) commit=$2; shift 2 ;;
    --check) check=yes; shift ;;
    --no-lintian) lintian=no; shift ;;
    *) echo "usage: package.sh [-o DIR] [-c COMMIT] [--check] [--no-lintian]" >&2; exit 2 ;;
  esac
done

./scripts/install-deps.sh
# The tree may belong to another user than the one building (a CI checkout, a chroot's bind
# mount): git refuses such a repository unless told it is safe.
git() { command git -c safe.directory="$PWD" "$@"; }
version=$(sed -n '1s/^trapstat (\([^)]*\)).*/\1/p' debian/changelog)
mkdir -p "$out"
out=$(realpath "$out")
src=$out/src/trapstat-$version
rm -rf "$out/src" "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo "$out/build.log" "$out/lintian.log"
mkdir -p "$src"

if [[ -n $commit ]]; then
  git archive "$commit" | tar -x -C "$src"
  if [[ ! -d $src/debian ]]; then
    cp -a debian "$src/"
    # Its only changelog entry: dpkg takes the version from the first line.
    printf 'trapstat (%s) unstable; urgency=medium\n\n  * Built from commit %s\n    with the debian/ of a later tree.\n\n -- %s  %s\n' \
      "$version~git.$(git rev-parse --short=12 "$commit")" "$(git rev-parse "$commit")" \
      "$(sed -n 's/^Maintainer: //p' debian/control)" "$(git log -1 --format=%aD "$commit")" >"$src/debian/changelog"
  fi
elif git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  # What git tracks, committed or not: no build directories, no local state.
  git ls-files -z --cached --others --exclude-standard | tar -c --null -T - | tar -x -C "$src"
else
  # No git here (a distribution's root filesystem with the tree bind-mounted): the tree less
  # what .gitignore names.
  tar -c --exclude=./.git --exclude='./build*' --exclude=./.trapstat-local --exclude=__pycache__ . | tar -x -C "$src"
fi

opts=(-us -uc -b)
[[ $check == yes ]] || export DEB_BUILD_OPTIONS="nocheck${DEB_BUILD_OPTIONS:+ $DEB_BUILD_OPTIONS}"
started=$SECONDS
(cd "$src" && dpkg-buildpackage "${opts[@]}") >"$out/build.log" 2>&1 || {
  tail -40 "$out/build.log"
  echo "package: dpkg-buildpackage failed (log: $out/build.log)" >&2
  exit 1
}
changes=$(ls "$out"/src/*.changes)
mv "$out"/src/*.deb "$out"/src/*.changes "$out"/src/*.buildinfo "$out/"
changes=$out/$(basename "$changes")
echo "package: built in $((SECONDS - started)) s on $(. /etc/os-release && echo "$PRETTY_NAME"):"
for deb in "$out"/*.deb; do
  echo "  $(basename "$deb") $(stat -c %s "$deb") bytes, $(dpkg-deb -f "$deb" Installed-Size) KiB installed"
done

[[ $lintian == yes ]] || exit 0
# Every tag at warning level or above fails; info and pedantic ones are printed, not fatal.
status=0
lintian --fail-on error,warning --display-info "$changes" >"$out/lintian.log" 2>&1 || status=$?
if [[ -s $out/lintian.log ]]; then
  sed 's/^/  lintian: /' "$out/lintian.log"
else
  echo "  lintian: no tags"
fi
[[ $status -eq 0 ]] || { echo "package: lintian failed ($status)" >&2; exit 1; }
