#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Installs rcnet's dependencies on Debian 12 (bookworm) or 13 (trixie), by
# group:
#
#   tools/install-deps.sh [--print] [--node] [--test] [--lab] [--bench]
#
#   --node   what a cluster node needs to build the package (tools/build-deb.sh,
#            whose unit tests need catch2) and to run rcnetd: compiler, meson,
#            the libraries, the packaging tools, rdma-core. Nothing else: no
#            QEMU, no clang, no Prometheus server (Debian's prometheus
#            package starts one on :9090).
#   --test   the test tools beyond that: clang-format, clang and its
#            libFuzzer runtime (tools/fuzz.sh, the clang build; clang-14 on
#            Debian 12, which has no later one, clang-19 on Debian 13,
#            which has no clang-14: RCNET_CLANG_VERSION overrides),
#            prometheus for promtool (the unit tests check the metrics
#            export with it; it also installs the server).
#   --lab    the QEMU + Soft-RoCE lab (tests/lab, tools/demo.sh): QEMU,
#            the guest's tools, rdma-core's own tools as oracles,
#            node-exporter for lab-systemd.
#   --bench  the benchmarks (tools/bench): valgrind, strace, gnuplot,
#            liburing, jq.
#
# No group: every group (tools/test.sh and tools/demo.sh call it so).
# --print lists the groups' packages, one a line, and installs nothing.
# Idempotent: apt-get skips what is already installed.
set -euo pipefail

# The release's clang (the same version as its libclang-rt, for libFuzzer).
codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
case $codename in
  bookworm | "") clang_version=14 ;;
  *) clang_version=19 ;;
esac
clang_version=${RCNET_CLANG_VERSION:-$clang_version}

node=(
  meson ninja-build g++ pkg-config scdoc
  libibverbs-dev librdmacm-dev libnl-3-dev libnl-route-3-dev libsystemd-dev
  libspdlog-dev libfmt-dev catch2 libcli11-dev nlohmann-json3-dev libtomlplusplus-dev
  # peer proofs (lib/auth): HMAC-SHA-256, BLAKE2b, randombytes, constant-time compare
  libsodium-dev
  # tools/build-deb.sh: dpkg-buildpackage, debhelper's meson support, lintian
  # (build-essential: dpkg-buildpackage checks for it; --no-install-recommends
  # does not bring it on a minimal system)
  git debhelper dpkg-dev fakeroot lintian build-essential
  # at run time: rdma_ucm loading and the user-space verbs providers
  rdma-core ibverbs-providers iproute2
)
test=(
  clang-format
  # fuzzing and the clang build: libFuzzer comes with clang's runtime
  "clang-$clang_version" "libclang-rt-$clang_version-dev"
  # promtool checks rcnetctl's Prometheus output in the unit tests
  prometheus
)
lab=(
  # the kernel's RDMA stack under QEMU, and rdma-core's own tools as oracles
  qemu-system-x86 busybox-static cpio kmod iproute2 iputils-ping iputils-tracepath iperf3
  rdma-core rdmacm-utils ibverbs-utils ibverbs-providers perftest
  # lab-systemd scrapes node-exporter's textfile collector (the guest's
  # root is the host's, so it is installed here)
  prometheus-node-exporter
  jq
  # Soft-iWARP (siw.ko) is built out of tree for the lab's kernel from
  # Debian's linux-source and linux-headers packages (tools/lab/rcnet-lab)
  make gcc-12 xz-utils libelf-dev
  # the lab boots the kernel unpacked (rcnet-lab unpack_vmlinux): 6.1 is
  # xz, 6.12 zstd; 6.12's modules are zstd too
  zstd
)
bench=(
  valgrind jq
  # tools/bench/rcnet-bench: syscalls per packet (strace in the guest) and
  # the chart of the table (bench.png)
  strace gnuplot-nox
  # tools/bench/rcnet-bench-tun-write: io_uring against write(2) for TUN writes
  liburing-dev
)

usage() {
  sed -n '3,24p' "$0" | sed 's/^# \{0,1\}//'
  exit "$1"
}

packages=()
groups=0
print=0
for arg in "$@"; do
  case $arg in
    --print)
      print=1
      continue
      ;;
    --node) packages+=("${node[@]}") ;;
    --test) packages+=("${test[@]}") ;;
    --lab) packages+=("${lab[@]}") ;;
    --bench) packages+=("${bench[@]}") ;;
    -h | --help) usage 0 ;;
    *)
      echo "install-deps.sh: unknown group '$arg' (--node, --test, --lab, --bench)" >&2
      exit 2
      ;;
  esac
  groups=$((groups + 1))
done
[ "$groups" -gt 0 ] || packages=("${node[@]}" "${test[@]}" "${lab[@]}" "${bench[@]}")
# One of each.
mapfile -t packages < <(printf '%s\n' "${packages[@]}" | awk '!seen[$0]++')
if [ "$print" = 1 ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps.sh: must run as root (it uses apt-get)" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps.sh: all ${#packages[@]} packages present"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
