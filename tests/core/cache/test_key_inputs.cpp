// Tests for core/src/cache/key_inputs.cpp: KeyDeriver::inputs (a request's key inputs under its
// include plan) and KeyDeriver::headers_changed_since (the check after NVRTC returns).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "cache/key_inputs.hpp"
#include "cubby/entry.hpp"
#include "cubby/key.hpp"
#include "cubby/nvrtc.hpp"
#include "cuda/include_plan.hpp"
#include "test_support.hpp"
#include "util/hash.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;

using cubby::testing::read_text;
using cubby::testing::TempDir;
using cubby::testing::write_text;

// KeyDeriver::inputs under the request's own include plan, made as the Cache makes it.
KeyInputs inputs_for(const CompileRequest& request, const std::string& arch,
                     const NvrtcLibrary& nvrtc, const fs::path& base_dir) {
  return KeyDeriver(base_dir).inputs(request, plan_includes(request, nvrtc.include_dir), arch,
                                     nvrtc);
}

// ---------------------------------------------------------------------------------------------
// KeyDeriver::inputs
// ---------------------------------------------------------------------------------------------

TEST(KeyInputsFor, RequestFieldsNvrtcIdentityAndScannedHeadersRelativizedToTheBase) {
  const auto nvrtc = locate_nvrtc();
  if (!nvrtc) GTEST_SKIP() << "no libnvrtc: " << nvrtc.error().message;
  TempDir dir("key-inputs");
  write_text(dir / "ops.cuh", "#pragma once\n");
  CompileRequest request;
  request.source = "#include \"ops.cuh\"\n#include <cuda/std/mdspan>\n__global__ void k() {}\n";
  request.program_name = (dir / "k.cu").string();
  request.name_expressions = {"k", "k"};
  request.options = {"-std=c++17", "-I" + dir.path().string()};

  const KeyInputs plain = inputs_for(request, "sm_90", *nvrtc, {});
  EXPECT_EQ(plain.format_version, kEntryFormatVersion);
  EXPECT_EQ(plain.nvrtc_version, nvrtc->version);
  EXPECT_EQ(plain.nvrtc_identity, nvrtc->identity);
  EXPECT_EQ(plain.arch, "sm_90");
  EXPECT_EQ(plain.options, request.options);
  EXPECT_EQ(plain.source, request.source);
  EXPECT_EQ(plain.program_name, request.program_name);
  EXPECT_EQ(plain.name_expressions, request.name_expressions);  // derive_key de-duplicates
  EXPECT_TRUE(plain.unresolvable.empty());
  const auto ops = std::find_if(plain.headers.begin(), plain.headers.end(),
                                [](const HeaderDigest& h) { return h.include == "ops.cuh"; });
  ASSERT_NE(ops, plain.headers.end());
  EXPECT_TRUE(ops->resolved);
  EXPECT_EQ(ops->content_hash, hash128(read_text(dir / "ops.cuh")));

  const KeyInputs based = inputs_for(request, "sm_90", *nvrtc, dir.path());
  KeyInputs expected = plain;
  relativize_paths(expected, dir.path());
  EXPECT_EQ(derive_key(based), derive_key(expected));
  EXPECT_EQ(based.program_name, std::string(kBaseDirMarker) + "/k.cu");
}

TEST(KeyInputsFor, AMacroIncludeIsKeyedAndWhatStaysUnresolvableNamesTheProgramAndLine) {
  const auto nvrtc = locate_nvrtc();
  if (!nvrtc) GTEST_SKIP() << "no libnvrtc: " << nvrtc.error().message;
  CompileRequest request;
  request.program_name = "k.cu";
  request.source = "#define H \"v.cuh\"\n#include H\n";
  const KeyInputs inputs = inputs_for(request, "sm_80", *nvrtc, {});
  EXPECT_TRUE(inputs.unresolvable.empty()) << inputs.unresolvable.front();
  EXPECT_TRUE(std::any_of(inputs.headers.begin(), inputs.headers.end(),
                          [](const HeaderDigest& h) { return h.include == "v.cuh"; }));
  request.source = "\n#define HI __has_include\n";
  const KeyInputs alias = inputs_for(request, "sm_80", *nvrtc, {});
  ASSERT_EQ(alias.unresolvable.size(), 1u);
  EXPECT_TRUE(alias.unresolvable[0].starts_with("k.cu:2: __has_include: "))
      << alias.unresolvable[0];
}

// Issue 23: with CUBBY_NVRTC_LIBRARY at a copy of the toolkit whose include/tkhdr.h was edited,
// the key was unchanged (libnvrtc's identity only) and the old kernel was served.
TEST(KeyInputsFor, AnEditedToolkitHeaderChangesTheKey) {
  TempDir dir("key-inputs-toolkit");
  NvrtcLibrary original;
  original.version = "13.0";
  original.identity = "13.0;1;id";  // one libnvrtc for all three toolkits
  original.include_dir = dir / "original" / "include";
  NvrtcLibrary copy = original;
  copy.include_dir = dir / "copy" / "include";
  NvrtcLibrary edited = original;
  edited.include_dir = dir / "edited" / "include";
  write_text(original.include_dir / "tkhdr.h", "#define TK 1\n");
  write_text(copy.include_dir / "tkhdr.h", "#define TK 1\n");
  write_text(edited.include_dir / "tkhdr.h", "#define TK 2 // edited\n");
  CompileRequest request;
  request.source = "#include <tkhdr.h>\n__global__ void k() {}\n";
  const Key key = derive_key(inputs_for(request, "sm_90", original, {}));
  EXPECT_EQ(derive_key(inputs_for(request, "sm_90", copy, {})), key);  // same headers
  EXPECT_NE(derive_key(inputs_for(request, "sm_90", edited, {})), key);
}

// ---------------------------------------------------------------------------------------------
// KeyDeriver::headers_changed_since
// ---------------------------------------------------------------------------------------------

// The working folder while a test runs (restored at its end): the program folder of a relative
// program name.
class InFolder {
 public:
  explicit InFolder(const fs::path& dir) : old_(fs::current_path()) { fs::current_path(dir); }
  ~InFolder() { fs::current_path(old_); }
  InFolder(const InFolder&) = delete;
  InFolder& operator=(const InFolder&) = delete;

 private:
  fs::path old_;
};

// A program "k.cu" (a relative name: its folder is the working folder) including "ops.cuh".
CompileRequest relative_program() {
  CompileRequest request;
  request.source = "#include \"ops.cuh\"\n__global__ void k() {}\n";
  request.program_name = "k.cu";
  return request;
}

TEST(HeadersChangedSince, UnchangedHeadersUnderTheSamePlanAreNoChange) {
  TempDir dir("headers-changed");
  write_text(dir / "ops.cuh", "#pragma once\n");
  const InFolder in(dir.path());
  NvrtcLibrary nvrtc;
  const CompileRequest request = relative_program();
  const std::int64_t since = realtime_ns();
  const IncludePlan plan = plan_includes(request, nvrtc.include_dir);
  const KeyDeriver keys;
  const KeyInputs inputs = keys.inputs(request, plan, "sm_90", nvrtc);
  EXPECT_FALSE(keys.headers_changed_since(request, plan, "sm_90", nvrtc, inputs, since));
  write_text(dir / "ops.cuh", "#pragma once // edited\n");
  EXPECT_TRUE(keys.headers_changed_since(request, plan, "sm_90", nvrtc, inputs, since));
}

// The plan is made once, before the key: NVRTC, which takes the program folder from the working
// folder when it compiles, reads the new folder's ops.cuh after a change of working folder, even
// one with the same bytes at the same name: what it compiled is not the key's.
TEST(HeadersChangedSince, AWorkingFolderChangeSinceThePlanIsAChange) {
  TempDir dir("headers-changed-folder");
  write_text(dir / "a" / "ops.cuh", "#pragma once\n");
  write_text(dir / "b" / "ops.cuh", "#pragma once\n");
  NvrtcLibrary nvrtc;
  const CompileRequest request = relative_program();
  const std::int64_t since = realtime_ns();
  const InFolder in_a(dir / "a");
  const IncludePlan plan = plan_includes(request, nvrtc.include_dir);
  const KeyDeriver keys;
  const KeyInputs inputs = keys.inputs(request, plan, "sm_90", nvrtc);
  EXPECT_TRUE(plan_still_current(plan, request));
  EXPECT_FALSE(keys.headers_changed_since(request, plan, "sm_90", nvrtc, inputs, since));
  const InFolder in_b(dir / "b");
  EXPECT_FALSE(plan_still_current(plan, request));
  EXPECT_TRUE(keys.headers_changed_since(request, plan, "sm_90", nvrtc, inputs, since));
}

}  // namespace
}  // namespace cubby
