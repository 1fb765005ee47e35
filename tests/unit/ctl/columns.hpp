// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The column heads of rcnetctl's tables (lib/ctl/render.cpp), written once
// for every test that reads a rendered table.
#include <string>
#include <vector>

namespace rcnet::test {

inline const std::vector<std::string> kPeersColumns = {
    "NODE",   "RAIL", "UNDERLAY", "OVERLAY", "INCARNATION", "STATE",  "AUTH",
    "QUEUED", "CONN", "LAST-TRY", "RESULT",  "RETRY",       "CARRIES"};

}  // namespace rcnet::test
