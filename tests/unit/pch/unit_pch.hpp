// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The unit tests' precompiled header: rcnet's (pch/rcnet_pch.hpp) and
// Catch2, which every test file includes (catch2_compat.hpp: v2 or v3).
#include "../../../pch/rcnet_pch.hpp"
#include "../catch2_compat.hpp"
