#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Builds rcnet's Debian package from the committed tree (git HEAD) and checks
# it with lintian.
#
#   tools/build-deb.sh [OUTDIR]      (default: ./dist)
#
# The package is built by dpkg-buildpackage in a temporary copy made with
# `git archive HEAD`, so uncommitted changes and untracked files never reach
# it (a warning says when there are some). OUTDIR receives the .deb (and
# the rcnet-dbgsym .deb), the .changes and .buildinfo, the build log and
# lintian's report. Prints the .deb's path and lintian's summary; exits
# non-zero when the build fails or lintian reports an error (E:). Needs the
# packages of tools/install-deps.sh --node; root is not
# needed (Rules-Requires-Root: no).
set -euo pipefail

die() { echo "build-deb.sh: $*" >&2; exit 1; }

cd "$(dirname "$0")/.."
src=$PWD
out=${1:-$src/dist}
mkdir -p "$out"
out=$(cd "$out" && pwd)

for tool in git dpkg-buildpackage dpkg-parsechangelog dpkg-architecture dh lintian; do
  command -v "$tool" >/dev/null || die "$tool not found: run tools/install-deps.sh --node"
done
git -C "$src" rev-parse --verify -q HEAD >/dev/null || die "$src is not a git tree with a commit"

# One version: meson.build's project version is the package version
# (native package), so debian/changelog must carry the same.
version=$(sed -n "s/^[[:space:]]*version:[[:space:]]*'\([^']*\)'.*/\1/p" meson.build | head -n 1)
[ -n "$version" ] || die "no version: in meson.build"
deb_version=$(git show HEAD:debian/changelog | dpkg-parsechangelog -l - -S Version)
[ "$deb_version" = "$version" ] ||
  die "debian/changelog at HEAD says $deb_version, meson.build says $version: add a changelog entry (dch -v $version)"

if [ -n "$(git status --porcelain)" ]; then
  echo "build-deb.sh: warning: the tree has uncommitted or untracked changes; packaging HEAD ($(git rev-parse --short HEAD)) without them" >&2
fi

arch=$(dpkg-architecture -qDEB_HOST_ARCH)
name=rcnet_${version}_${arch}
work=$(mktemp -d "${TMPDIR:-/tmp}/rcnet-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
git archive --format=tar --prefix="rcnet-$version/" HEAD | tar -x -C "$work"

echo "build-deb.sh: building $name.deb from $(git rev-parse --short HEAD) in $work"
log=$out/$name.build.log
start=$SECONDS
if ! (cd "$work/rcnet-$version" && dpkg-buildpackage -us -uc -b) >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  die "dpkg-buildpackage failed after $((SECONDS - start)) s; full log: $log"
fi
echo "build-deb.sh: built in $((SECONDS - start)) s; log: $log"

for f in "$name.deb" "$name.changes" "$name.buildinfo"; do
  [ -f "$work/$f" ] || die "dpkg-buildpackage did not produce $f"
done

# lintian on the .changes checks the .deb and the .buildinfo too. --fail-on
# none: its verdict is taken from the report below, so that a lintian that
# cannot run at all (exit status 2 and no report) is not mistaken for a pass.
report=$out/$name.lintian
lrc=0
lintian --display-info --fail-on none "$work/$name.changes" >"$report" 2>"$report.stderr" || lrc=$?
# The .changes also lists the debug symbols package (rcnet-dbgsym): copy it
# too, so that OUTDIR holds everything the .changes names.
cp "$work/$name.deb" "$work/$name.changes" "$work/$name.buildinfo" "$out/"
for f in "$work"/rcnet-dbgsym_"${version}"_"$arch".*deb; do
  [ -f "$f" ] && cp "$f" "$out/"
done

errors=$(grep -c '^E: ' "$report" || true)
warnings=$(grep -c '^W: ' "$report" || true)
infos=$(grep -c '^I: ' "$report" || true)
echo "$out/$name.deb"
echo "lintian: $errors error(s), $warnings warning(s), $infos info(s); report: $report"
sed 's/^/  /' "$report"
if [ "$lrc" -ne 0 ]; then
  sed 's/^/  /' "$report.stderr" >&2
  die "lintian failed to run (exit status $lrc)"
fi
rm -f "$report.stderr"
[ "$errors" -eq 0 ] || die "lintian reported $errors error(s)"
