# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Sourced, not run: the sanitizer options of the unit suite's run under
# ASan + UBSan, one definition for both places that run it (tools/test-extra.sh
# on the host, tools/trixie.sh's asan step in the trixie root). Any report
# aborts its test: a failure.
export ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1:strict_string_checks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
