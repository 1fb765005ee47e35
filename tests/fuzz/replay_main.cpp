// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Runs a fuzz target once on every file of its in-tree corpus, without
// libFuzzer: the main build (g++, -Werror) compiles every fuzzer this way, and
// the unit suite replays the corpus (seeds and fixed regressions), also under
// ASan/UBSan in tools/test.sh's sanitizer build. A violated property aborts
// (fuzz_check.hpp), which fails the test.
//
//   fuzz-replay-NAME DIR|FILE...
// Exit: 0 after every input ran; 2 if an argument is neither a file nor a
// directory, a directory holds no input, or an input cannot be read.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
// Defined by the fuzzers that need it (libFuzzer's optional hook).
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr)
    LLVMFuzzerInitialize(&argc, &argv);
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const fs::path p(argv[i]);
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::size_t n = 0;
      for (const auto& e : fs::directory_iterator(p)) {
        if (e.is_regular_file() && e.path().extension() != ".md") {
          inputs.push_back(e.path());
          ++n;
        }
      }
      if (n == 0) {
        std::fprintf(stderr, "%s: no input in %s\n", argv[0], argv[i]);
        return 2;
      }
    } else if (fs::is_regular_file(p, ec)) {
      inputs.push_back(p);
    } else {
      std::fprintf(stderr, "%s: %s: not a file or directory\n", argv[0], argv[i]);
      return 2;
    }
  }
  std::sort(inputs.begin(), inputs.end());
  for (const auto& p : inputs) {
    std::vector<std::uint8_t> bytes(fs::file_size(p));
    std::FILE* f = std::fopen(p.c_str(), "rb");
    if (f == nullptr || std::fread(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
      std::fprintf(stderr, "%s: cannot read %s\n", argv[0], p.c_str());
      return 2;
    }
    std::fclose(f);
    std::printf("%s (%zu bytes)\n", p.c_str(), bytes.size());
    std::fflush(stdout);
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  }
  std::printf("%zu inputs, no property violated\n", inputs.size());
  return 0;
}
