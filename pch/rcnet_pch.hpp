// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The headers most of rcnet's C++ files include, precompiled once per
// target (meson's cpp_pch) so that each file does not parse them again
// (docs/design.md "Decisions taken": the suite's 45 minutes). Only
// third-party and standard headers belong here, never rcnet's own (a change
// to one would rebuild every file). A file still includes what it uses: the
// Debian 13 build (tools/trixie.sh) compiles without precompiled headers,
// with a newer libstdc++, and so checks that every file does.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <toml++/toml.h>
#include <nlohmann/json.hpp>
