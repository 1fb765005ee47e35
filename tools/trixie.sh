#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Builds and tests rcnet on Debian 13 (trixie) from a Debian 12 host, as
# root: a trixie root made with mmdebstrap from Debian's mirror (cached,
# RCNET_TRIXIE_CACHE, default /var/cache/rcnet-trixie, remade when older
# than RCNET_TRIXIE_MAX_AGE days, default 7), with tools/install-deps.sh
# --node --test run inside it; then, in a copy of the working tree (the
# tracked and untracked files git knows, as they are on disk):
#   build    meson setup -Dwerror=true -Dlab_tests=false -Dbench=false
#            -Dunity=on -Dcpp_args=-g1, ninja: g++ 14, warning-clean (the
#            benchmark programs: the main build; unity and line tables
#            only, as tools/test.sh). RCNET_TRIXIE_UNITY=off compiles each
#            file alone: a file that lacks an include it needs, hidden by
#            the other files of its unit, then fails (with a newer
#            libstdc++ whose headers include less of each other). Not in
#            the suite: it cost 76% more CPU (878 against 500 CPU-s), and the
#            suite is CPU-bound.
#   unit     meson test --suite unit (Catch2 v3, tests/unit/catch2_compat.hpp)
#   package  tools/build-deb.sh: the .deb as Debian builds it (g++ 14,
#            dpkg-buildflags' -O2 and hardening, debian/rules' unity build),
#            with -Werror added to its compiler flags, and lintian on
#            trixie (its exit status: an E: tag fails the step). Under
#            DEB_BUILD_OPTIONS=nocheck, as Debian 12's package test: the
#            unit suite is neither compiled nor run by dh_auto_test, since
#            the asan step runs it on trixie (Catch2 v3, clang 19), and
#            its compile is about half of the package's (255 of 524
#            CPU-seconds in tools/test.sh's g++ 12 build, 2026-12-02);
#            RCNET_TRIXIE_PACKAGE_CHECK=1 runs it here too. Line
#            tables only (-g1) and no debug symbols package, as the package
#            test's.
#   clang    tools/fuzz.sh --build-all --build-only into build-fuzz:
#            clang 19 with ASan + UBSan at -O0 and -Werror, the fuzzers and
#            the unit suite (RCNET_FUZZ_OPTIMIZATION, default 0 here)
#   asan     the unit suite from that build, any sanitizer report a
#            failure (without its corpus replays when fuzz runs too: the
#            fuzzers replay the same corpora first)
#   fuzz     tools/fuzz.sh --seconds RCNET_FUZZ_SECONDS (default 30)
#            --jobs 2: each fuzzer on its in-tree corpus; its table is
#            printed (crash inputs in CACHE/share/build-fuzz/artifacts)
#
#   tools/trixie.sh [STEP...]        (default: package)
#
# Prints one line per step, "trixie: STEP ok|FAIL (N s)", the failing
# step's log tail, and exits non-zero if any step failed. Logs in
# CACHE/logs/. tools/test-extra.sh runs it in the background of
# tools/test.sh. Nothing is installed on the host but mmdebstrap; the root
# is entered with chroot in a mount namespace of its own (proc, dev and the
# copy are mounted there and vanish with it).
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
cache=${RCNET_TRIXIE_CACHE:-/var/cache/rcnet-trixie}
mirror=${RCNET_TRIXIE_MIRROR:-http://deb.debian.org/debian}
max_age=${RCNET_TRIXIE_MAX_AGE:-7}
steps=("$@")
((${#steps[@]})) || steps=(package)
root=$cache/root
logs=$cache/logs
say() { echo "trixie: $*"; }
die() {
  say "error: $*" >&2
  exit 1
}
[[ $(id -u) -eq 0 ]] || die "must run as root (mmdebstrap, chroot)"
mkdir -p "$cache" "$logs" || die "cannot create $cache"
exec {lockfd}>"$cache/.lock"
flock "$lockfd"

# --- the root ----------------------------------------------------------------------
in_root() { # CMD: runs the shell command CMD in the root, in a mount namespace of its own
  unshare --mount --propagation private -- /bin/sh -c '
    r=$1; shift
    mount -t proc proc "$r/proc" && mount --rbind /dev "$r/dev" &&
      mount -t tmpfs tmpfs "$r/tmp" && mount --bind "$r/../share" "$r/rcnet-build" &&
      cp /etc/resolv.conf "$r/etc/resolv.conf" 2>/dev/null
    exec chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
      DEBIAN_FRONTEND=noninteractive /bin/bash -c "$1"' sh "$root" "$1"
}
fresh=0
if [[ -f $root/.ready ]] && [[ -n $(find "$root/.ready" -mtime -"$max_age" 2>/dev/null) ]]; then
  fresh=1
fi
if ((!fresh)); then
  command -v mmdebstrap >/dev/null || {
    apt-get install -y -q --no-install-recommends mmdebstrap >"$logs/mmdebstrap-install.log" 2>&1 ||
      die "cannot install mmdebstrap (see $logs/mmdebstrap-install.log)"
  }
  t0=$SECONDS
  rm -rf "$root.tmp"
  say "making a trixie root in $root (mmdebstrap, $mirror)"
  mmdebstrap --variant=minbase --include=ca-certificates,git trixie "$root.tmp" "$mirror" \
    >"$logs/mmdebstrap.log" 2>&1 || die "mmdebstrap failed (see $logs/mmdebstrap.log)"
  mkdir -p "$root.tmp/rcnet-build" "$cache/share"
  rm -rf "$root"
  mv "$root.tmp" "$root"
  cp "$src/tools/install-deps.sh" "$cache/share/install-deps.sh"
  in_root '/rcnet-build/install-deps.sh --node --test' >"$logs/deps.log" 2>&1 ||
    die "install-deps.sh --node --test failed inside the root (see $logs/deps.log)"
  touch "$root/.ready"
  say "root ready in $((SECONDS - t0)) s"
fi
# Dependencies that changed since the root was made (a root made before the
# share was named rcnet-build gets its mount point too).
mkdir -p "$root/rcnet-build"
mkdir -p "$cache/share"
cp "$src/tools/install-deps.sh" "$cache/share/install-deps.sh"
in_root '/rcnet-build/install-deps.sh --node --test' >"$logs/deps.log" 2>&1 ||
  die "install-deps.sh --node --test failed inside the root (see $logs/deps.log)"

# --- the tree ----------------------------------------------------------------------
rm -rf "$cache/share/rcnet" "$cache/share/build" "$cache/share/build-fuzz"
mkdir -p "$cache/share/rcnet"
(cd "$src" && git ls-files -z -c -o --exclude-standard | tar --null -T - -c) | tar -x -C "$cache/share/rcnet" ||
  die "cannot copy the tree"
# tools/build-deb.sh packages git HEAD: the copy gets one commit of itself.
in_root 'cd /rcnet-build/rcnet && git init -q && git add -A && git -c user.name=rcnet -c user.email=rcnet@localhost commit -qm tree' \
  >"$logs/git.log" 2>&1 || die "cannot commit the copy (see $logs/git.log)"

# The clang build's options are tools/fuzz.sh's, the sanitizer options
# tools/sanitizer-options.sh's, as for the same steps on the host.
fuzz_env="RCNET_FUZZ_BUILD_DIR=/rcnet-build/build-fuzz RCNET_FUZZ_OPTIMIZATION=${RCNET_FUZZ_OPTIMIZATION:-0}"
asan_skip=
[[ " ${steps[*]} " == *" fuzz "* ]] && asan_skip='--no-suite fuzz-corpus'
nocheck=nocheck
[[ ${RCNET_TRIXIE_PACKAGE_CHECK:-0} == 1 ]] && nocheck=
fails=0
clang_failed=0
for s in "${steps[@]}"; do
  case $s in
    build) cmd="meson setup /rcnet-build/build /rcnet-build/rcnet -Dwerror=true -Dlab_tests=false -Dbench=false -Dunity=${RCNET_TRIXIE_UNITY:-on} -Dcpp_args=-g1 && ninja -C /rcnet-build/build" ;;
    unit) cmd='meson test -C /rcnet-build/build --no-rebuild --print-errorlogs --suite unit' ;;
    package) cmd="cd /rcnet-build/rcnet && DEB_BUILD_OPTIONS='$nocheck noautodbgsym parallel=$(nproc)' DEB_CFLAGS_APPEND='-g1 -Werror' DEB_CXXFLAGS_APPEND='-g1 -Werror' tools/build-deb.sh /rcnet-build/dist" ;;
    clang) cmd="cd /rcnet-build/rcnet && $fuzz_env tools/fuzz.sh --build-all --build-only" ;;
    asan) cmd=". /rcnet-build/rcnet/tools/sanitizer-options.sh && meson test -C /rcnet-build/build-fuzz --no-rebuild --print-errorlogs --num-processes 1 --suite unit $asan_skip" ;;
    fuzz) cmd="cd /rcnet-build/rcnet && $fuzz_env tools/fuzz.sh --seconds ${RCNET_FUZZ_SECONDS:-30} --jobs 2" ;;
    *) die "unknown step $s (build, unit, package, clang, asan, fuzz)" ;;
  esac
  if [[ $s == asan || $s == fuzz ]] && ((clang_failed)); then
    say "$s FAIL (0 s): not run, the clang build failed"
    fails=$((fails + 1))
    continue
  fi
  t0=$SECONDS
  if in_root "$cmd" >"$logs/$s.log" 2>&1; then
    say "$s ok ($((SECONDS - t0)) s)"
    # The fuzzers' table (execs, coverage, crashes) whether or not one failed.
    [[ $s == fuzz ]] && grep -E '^[a-z]+ +execs |^fuzz: ' "$logs/$s.log" | awk '!seen[$0]++' | sed 's/^/  /'
  else
    [[ $s == clang ]] && clang_failed=1
    say "$s FAIL ($((SECONDS - t0)) s); last lines of $logs/$s.log:"
    tail -n 60 "$logs/$s.log" | sed 's/^/  /'
    fails=$((fails + 1))
  fi
done
exit $((fails > 0))
