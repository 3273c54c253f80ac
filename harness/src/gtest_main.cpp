// main() of cubby::gtest_main: GoogleTest with the cubby Environment registered and the --cubby_
// flags parsed (see options.hpp).
#include <gtest/gtest.h>

#include <cstdio>
#include <exception>
#include <string_view>

#include "cubby/testing/environment.hpp"
#include "cubby/testing/options.hpp"

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view argument = argv[i];
    if (argument == "--help" || argument == "-h" || argument == "--gtest_help") {
      std::printf("cubby flags:\n%s\n", cubby::testing::flags_help().c_str());
      break;
    }
  }
  try {
    cubby::testing::init(&argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "cubby: %s\n", error.what());
    return 2;
  }
  return RUN_ALL_TESTS();
}
