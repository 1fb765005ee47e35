// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The fuzzers' assertion: a violated property is a crash libFuzzer records
// (with the input that caused it), whatever NDEBUG says.
#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: property violated: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

// Same, with a message built by the caller (a std::string or const char*).
#define FUZZ_CHECK_MSG(cond, msg)                                                           \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      std::fprintf(stderr, "%s:%d: property violated: %s: %s\n", __FILE__, __LINE__, #cond, \
                   std::string(msg).c_str());                                               \
      std::abort();                                                                         \
    }                                                                                       \
  } while (0)
