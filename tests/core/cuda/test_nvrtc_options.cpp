// NVRTC's option table: every spelling of an option parses to its row, and a replayed recipe may
// carry only the options that write or read no file of their own.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda/nvrtc_options.hpp"

namespace cubby {
namespace {

std::string refusal_of(const std::vector<std::string>& options) {
  const Result<void> checked = check_replayable_options(options);
  return checked ? std::string() : checked.error().message;
}

TEST(NvrtcOptions, EverySpellingOfAnOptionParsesToItsRowAndValue) {
  for (const std::vector<std::string>& options :
       std::vector<std::vector<std::string>>{{"-DX=1"},
                                             {"-D", "X=1"},
                                             {"-D=X=1"},
                                             {"--define-macro=X=1"},
                                             {"--define-macro", "X=1"}}) {
    const ParsedOption parsed = parse_nvrtc_option(options, 0);
    ASSERT_NE(parsed.row, nullptr) << options[0];
    EXPECT_EQ(parsed.row->long_name, "--define-macro");
    EXPECT_EQ(parsed.value, "X=1") << options[0];
    EXPECT_EQ(parsed.used, options.size());
  }
  EXPECT_EQ(parse_nvrtc_option({"-default-device"}, 0).row->long_name,
            "--device-as-default-execution-space");  // never "-D" with "efault-device"
  EXPECT_EQ(parse_nvrtc_option({"--dlink-time-opt"}, 0).row->short_name, "-dlto");
  EXPECT_EQ(parse_nvrtc_option({"-std=c++17"}, 0).value, "c++17");
  EXPECT_EQ(parse_nvrtc_option({"-G", "-lineinfo"}, 0).used, 1U);  // a flag takes no value
  EXPECT_EQ(parse_nvrtc_option({"--no-such-option"}, 0).row, nullptr);
}

TEST(NvrtcOptions, OptionsThatTakeTheNextEntryAsTheirValue) {
  EXPECT_TRUE(takes_next_as_value("-D"));
  EXPECT_TRUE(takes_next_as_value("-Xptxas"));
  EXPECT_TRUE(takes_next_as_value("--gpu-architecture"));
  EXPECT_FALSE(takes_next_as_value("-DX"));
  EXPECT_FALSE(takes_next_as_value("-std"));  // only -std=...
  EXPECT_FALSE(takes_next_as_value("-G"));
}

// A trailing `-include` or `-I` took the `--include-path=<toolkit>/cccl` cubby appends as its
// value: NVRTC then read a file the key does not cover. Such options are refused, by name.
TEST(NvrtcOptions, ALastOptionWithoutItsValueIsRefusedByName) {
  for (const char* option : {"-I", "-include", "--pre-include", "-D", "--include-path"}) {
    const auto refused = check_last_option_has_its_value({"-std=c++17", option});
    ASSERT_FALSE(refused.ok()) << option;
    EXPECT_EQ(refused.error().code, Errc::invalid_argument);
    EXPECT_NE(refused.error().message.find(std::string("'") + option + "'"), std::string::npos)
        << refused.error().message;
  }
  EXPECT_TRUE(check_last_option_has_its_value({}).ok());
  EXPECT_TRUE(check_last_option_has_its_value({"-I", "dir"}).ok());
  EXPECT_TRUE(check_last_option_has_its_value({"-Idir", "-DX"}).ok());
  EXPECT_TRUE(check_last_option_has_its_value({"-D", "-I"}).ok());  // -D's value is "-I"
  EXPECT_FALSE(check_last_option_has_its_value({"-D", "-I", "-include"}).ok());
}

TEST(NvrtcOptions, ARecipeMayReplayTheOptionsOfAnOrdinaryProgram) {
  EXPECT_EQ(refusal_of({"-std=c++17",
                        "-DN=4",
                        "-D",
                        "M",
                        "-I/inc",
                        "--include-path",
                        "/inc2",
                        "-include",
                        "pre.cuh",
                        "-arch=sm_90",
                        "--gpu-architecture",
                        "sm_90",
                        "-default-device",
                        "--use_fast_math",
                        "-lineinfo",
                        "-G",
                        "-dlto",
                        "--dlink-time-opt",
                        "-rdc=true",
                        "-ftz",
                        "true",
                        "-Xptxas",
                        "-v",
                        "-w",
                        "-diag-suppress=177",
                        "-pch-verbose=false"}),
            "");
  EXPECT_EQ(refusal_of({}), "");
}

TEST(NvrtcOptions, OptionsThatWriteOrReadFilesOfTheirOwnAreRefusedByName) {
  for (const std::vector<std::string>& options : std::vector<std::vector<std::string>>{
           {"--create-pch=/tmp/victim"},
           {"-create-pch=/tmp/victim"},
           {"--use-pch=/tmp/x.pch"},
           {"--pch-dir=/tmp"},
           {"-pch"},
           {"--time=/dev/stdout"},
           {"-time=t.csv"},
           {"--fdevice-time-trace=trace.json"},
           {"-Xcudafe", "--error_output=/tmp/out"},
           {"-Xcudafe", "--preinclude=/tmp/h.h"},
           {"-Xnvvm", "-whatever"},
           {"-Xptxas", "--output-file=/tmp/o"},
           {"--ptxas-options=-o=/tmp/o"},
           {"--unknown-option"},
       }) {
    const std::string why = refusal_of(options);
    EXPECT_NE(why.find("'" + options[0]), std::string::npos) << options[0] << ": " << why;
  }
  // The first bad option is named, after any number of good ones.
  EXPECT_NE(refusal_of({"-std=c++17", "-D", "--time=x", "--time=/y"}).find("'--time=/y'"),
            std::string::npos);
  EXPECT_NE(refusal_of({"-Xcudafe", "--error_output=F"}).find("'-Xcudafe --error_output=F'"),
            std::string::npos);
}

}  // namespace
}  // namespace cubby
