#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# tools/install-deps.sh's groups, without installing anything (--print): a
# cluster node (--node, the README's install path) gets every package
# debian/control's Build-Depends names and what rcnetd needs at run time,
# and none of the developers' tools: no QEMU, no clang, no Prometheus server
# (Debian's prometheus starts one on :9090), no valgrind. No group = all.
set -u
src=${1:?usage: deps_groups.sh SRCDIR}
deps=$src/tools/install-deps.sh
fail=0
check() { # desc cmd...
  local desc=$1
  shift
  if "$@"; then echo "ok: $desc"; else
    echo "FAIL: $desc"
    fail=1
  fi
}
node=$("$deps" --print --node) || { echo "FAIL: --print --node exited $?"; exit 1; }
has() { grep -qxF -- "$2" <<<"$1"; }
# shellcheck disable=SC2317 # called through check
lacks() { ! has "$@"; }
# Build-Depends of debian/control: the package names, versions and
# debhelper-compat (debhelper itself) aside.
build_deps=$(sed -n '/^Build-Depends:/,/^[A-Z]/p' "$src/debian/control" | sed 's/^Build-Depends://' |
  tr ',' '\n' | sed 's/(.*)//; s/^[[:space:]]*//; s/[[:space:]]*$//' | grep -v '^[A-Z]' | grep . |
  grep -v '^debhelper-compat$' | grep -v '^dh-sequence-')
for p in $build_deps debhelper dpkg-dev fakeroot lintian git g++ rdma-core ibverbs-providers; do
  check "--node has $p" has "$node" "$p"
done
clang=$("$deps" --print --test | grep -E '^clang-[0-9]+$')
check "--test has one clang ($clang)" [ "$(wc -l <<<"$clang")" -eq 1 ]
check "--test has the libFuzzer runtime of $clang" has "$("$deps" --print --test)" "libclang-rt-${clang#clang-}-dev"
for p in qemu-system-x86 prometheus prometheus-node-exporter "$clang" "libclang-rt-${clang#clang-}-dev" clang-format \
  valgrind gnuplot-nox perftest iperf3 busybox-static; do
  check "--node has no $p" lacks "$node" "$p"
done
all=$("$deps" --print)
for g in --node --test --lab --bench; do
  for p in $("$deps" --print "$g"); do
    has "$all" "$p" || { echo "FAIL: no group: $p of $g missing"; fail=1; }
  done
done
check "no group: every group's packages, each once" [ "$(sort <<<"$all" | uniq -d)" = "" ]
check "--test --lab: both groups" has "$("$deps" --print --test --lab)" qemu-system-x86
rc=0
"$deps" --print --bogus >/dev/null 2>&1 || rc=$?
check "an unknown group is a usage error (exit $rc)" [ "$rc" -eq 2 ]
exit $fail
