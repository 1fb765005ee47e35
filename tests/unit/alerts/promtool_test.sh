#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The shipped alerting rules: promtool check rules (syntax, PromQL, label
# and annotation templates), then promtool test rules (each alert fires on
# the trouble it names and stays quiet on a healthy node). promtool comes
# from Debian's prometheus package (tools/install-deps.sh --test); without
# it the test is skipped (exit 77), as the unit tests' promtool checks of
# the export are.
set -u
rules=$1 tests=$2
if ! command -v promtool >/dev/null 2>&1; then
  echo "SKIP: promtool not found (apt-get install prometheus)"
  exit 77
fi
promtool check rules "$rules" || exit 1
promtool test rules "$tests" || exit 1
