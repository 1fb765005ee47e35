#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Installs every build, test and lab dependency of rcnet on Debian 12 (bookworm).
# Idempotent: apt-get skips what is already installed.
set -euo pipefail

packages=(
  # build
  meson ninja-build g++ pkg-config scdoc clang-format
  libibverbs-dev librdmacm-dev libnl-3-dev libnl-route-3-dev libsystemd-dev
  libspdlog-dev libfmt-dev catch2 libcli11-dev nlohmann-json3-dev libtomlplusplus-dev
  # lab: the kernel's RDMA stack under QEMU, and rdma-core's own tools as oracles
  qemu-system-x86 busybox-static cpio kmod iproute2 iputils-ping iperf3
  rdma-core rdmacm-utils ibverbs-utils ibverbs-providers perftest
  # benchmarks
  valgrind jq
  # tools/bench/rcnet-bench: syscalls per packet (strace in the guest) and
  # the chart of the table (bench.png)
  strace gnuplot-nox
  # tools/bench/rcnet-bench-tun-write: io_uring against write(2) for TUN writes
  liburing-dev
  # packaging: tools/build-deb.sh (dpkg-buildpackage, debhelper's meson
  # support, lintian) and the package test
  git debhelper dpkg-dev fakeroot lintian
  # metrics: promtool checks rcnetctl's Prometheus output in the unit tests;
  # the lab test lab-systemd scrapes node-exporter's textfile collector (the
  # guest's root is the host's, so it is installed here)
  prometheus prometheus-node-exporter
  # fuzzing: libFuzzer comes with clang's runtime (tools/fuzz.sh)
  clang-14 libclang-rt-14-dev
)

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
