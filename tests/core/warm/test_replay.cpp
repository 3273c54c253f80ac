// A replayed recipe: its options are checked, and its failure says nothing of files outside it.
#include <gtest/gtest.h>

#include <string>

#include "warm/replay.hpp"

namespace cubby {
namespace {

CompileRequest request_with(std::string source) {
  CompileRequest request;
  request.program_name = "p1.cu";
  request.source = std::move(source);
  return request;
}

Error compile_error(const std::string& log) {
  return Error(Failure{Errc::compile_failed, "NVRTC could not compile p1.cu:\n" + log, log});
}

TEST(Replay, ARecipeWithAnOptionThatWritesAFileIsRefusedByName) {
  CompileRequest request = request_with("");
  request.options = {"-std=c++17", "--create-pch=/tmp/victim"};
  const Result<void> checked = check_replayable(request);
  ASSERT_FALSE(checked);
  EXPECT_NE(checked.error().message.find("--create-pch=/tmp/victim"), std::string::npos);
  request.options = {"-std=c++17"};
  EXPECT_TRUE(check_replayable(request));
}

TEST(Replay, DiagnosticsInTheRecipesOwnSourceAreShownWithTheirLine) {
  const CompileRequest request =
      request_with("// one\n__global__ void k_p1(int* p) { *p = undeclared; }\n");
  const std::string log =
      "p1.cu(2): error: identifier \"undeclared\" is undefined\n"
      "  __global__ void k_p1(int* p) { *p = undeclared; }\n"
      "                                      ^\n\n"
      "1 error detected in the compilation of \"p1.cu\".\n";
  const std::string text = replay_error(request, compile_error(log));
  EXPECT_EQ(text,
            "NVRTC could not compile p1.cu:\n"
            "p1.cu(2): error: identifier \"undeclared\" is undefined\n"
            "  __global__ void k_p1(int* p) { *p = undeclared; }\n"
            "                                      ^");
}

TEST(Replay, LinesOfAFileOutsideTheRecipeNeverShow) {
  const CompileRequest request = request_with("#include \"/etc/passwd\"\n");
  const std::string log =
      "/etc/passwd(1): error: identifier \"root\" is undefined\n"
      "  root:x:0:0:root:/root:/bin/bash\n"
      "  ^\n\n"
      "/etc/passwd(2): error: expected a \";\"\n"
      "  daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
      "p1.cu(1): error: a line of the recipe's source that is not what the log says\n"
      "  root:x:0:0:root:/root:/bin/bash\n"
      "p1.cu(7): error: a line the source does not have\n";
  const std::string text = replay_error(request, compile_error(log));
  EXPECT_EQ(text.find("root"), std::string::npos) << text;
  EXPECT_EQ(text.find("daemon"), std::string::npos) << text;
  EXPECT_EQ(text.find("line the source does not have"), std::string::npos) << text;
  EXPECT_NE(text.find("NVRTC could not compile p1.cu"), std::string::npos) << text;
  EXPECT_NE(text.find("3 diagnostic(s) located outside the recipe's source"), std::string::npos)
      << text;
}

TEST(Replay, AFailureWithoutALogGivesTheFirstLineOfItsMessage) {
  const Error error(Errc::io, "could not read a header\nsecond line");
  EXPECT_EQ(replay_error(request_with(""), error), "could not read a header");
}

}  // namespace
}  // namespace cubby
