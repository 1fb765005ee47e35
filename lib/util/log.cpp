// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "util/log.hpp"

namespace rcnet::log {
namespace {
const Fields* g_current = nullptr;
}
const Fields* current_fields() {
  return g_current;
}
void detail::set_current(const Fields* f) {
  g_current = f;
}
}  // namespace rcnet::log
