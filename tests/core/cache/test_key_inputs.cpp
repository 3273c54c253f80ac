// Tests for core/src/cache/key_inputs.cpp: key_inputs_for (a request's key inputs) and
// relativize_paths (paths under CUBBY_BASE_DIR).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../key/key_test_inputs.hpp"
#include "cache/key_inputs.hpp"
#include "cubby/entry.hpp"
#include "cubby/key.hpp"
#include "cubby/nvrtc.hpp"
#include "test_support.hpp"
#include "util/hash.hpp"

namespace cubby {
namespace {

using cubby::testing::base_inputs;
using cubby::testing::read_text;
using cubby::testing::TempDir;
using cubby::testing::write_text;

// ---------------------------------------------------------------------------------------------
// relativize_paths
// ---------------------------------------------------------------------------------------------

// One checkout of a project under `root`: options, program name and headers as a Cache sees them.
KeyInputs checkout_inputs(const std::string& root) {
  KeyInputs in = base_inputs();
  in.options = {
      "-std=c++17",          "-I" + root + "/include",          "-I",
      root + "/third_party", "--include-path=" + root + "/gen", "-DDATA=" + root + "/data",
      "-I/opt/shared",       "-I/builds/a/repo2/other"};  // a sibling of the first checkout below
  in.program_name = root + "/tests/kernel.cu";
  in.headers = {HeaderDigest{"ops.cuh", root + "/include/ops.cuh", true, hash128("ops")},
                HeaderDigest{"sys.cuh", "/opt/shared/sys.cuh", true, hash128("sys")}};
  return in;
}

TEST(RelativizePaths, TwoCheckoutsShareAKeyOnlyWithTheirBase) {
  KeyInputs a = checkout_inputs("/builds/a/repo");
  KeyInputs b = checkout_inputs("/home/ci/work/repo");
  EXPECT_NE(derive_key(a), derive_key(b));  // absolute paths differ
  relativize_paths(a, "/builds/a/repo");
  relativize_paths(b, "/home/ci/work/repo/");  // a trailing '/' is the same base
  EXPECT_EQ(derive_key(a), derive_key(b));
  const std::string m(kBaseDirMarker);
  EXPECT_EQ(a.options,
            (std::vector<std::string>{"-std=c++17", "-I" + m + "/include", "-I", m + "/third_party",
                                      "--include-path=" + m + "/gen", "-DDATA=" + m + "/data",
                                      "-I/opt/shared", "-I/builds/a/repo2/other"}))
      << "a sibling folder whose name starts like the base is not under it: " << a.options.back();
}

TEST(RelativizePaths, OnlyPathsUnderTheBaseChange) {
  KeyInputs in = checkout_inputs("/builds/a/repo");
  relativize_paths(in, "/builds/a/repo");
  const std::string m(kBaseDirMarker);
  EXPECT_EQ(in.program_name, m + "/tests/kernel.cu");
  EXPECT_EQ(in.headers[0].path, m + "/include/ops.cuh");
  EXPECT_EQ(in.headers[1].path, "/opt/shared/sys.cuh");  // outside the base: as it was
  EXPECT_EQ(in.options.back(), "-I/builds/a/repo2/other");
  // Content still counts: the same relative header with other bytes is another key.
  KeyInputs edited = checkout_inputs("/builds/a/repo");
  edited.headers[0].content_hash = hash128("ops, edited");
  relativize_paths(edited, "/builds/a/repo");
  EXPECT_NE(derive_key(edited), derive_key(in));
  // "/" and relative bases change nothing (every path would match).
  KeyInputs untouched = checkout_inputs("/builds/a/repo");
  relativize_paths(untouched, "/");
  relativize_paths(untouched, "builds");
  EXPECT_EQ(derive_key(untouched), derive_key(checkout_inputs("/builds/a/repo")));
}

// ---------------------------------------------------------------------------------------------
// key_inputs_for
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

  const KeyInputs plain = key_inputs_for(request, "sm_90", *nvrtc, {});
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

  const KeyInputs based = key_inputs_for(request, "sm_90", *nvrtc, dir.path());
  KeyInputs expected = plain;
  relativize_paths(expected, dir.path());
  EXPECT_EQ(derive_key(based), derive_key(expected));
  EXPECT_EQ(based.program_name, std::string(kBaseDirMarker) + "/k.cu");
}

TEST(KeyInputsFor, MacroIncludeIsUnresolvable) {
  const auto nvrtc = locate_nvrtc();
  if (!nvrtc) GTEST_SKIP() << "no libnvrtc: " << nvrtc.error().message;
  CompileRequest request;
  request.source = "#define H \"v.cuh\"\n#include H\n";
  const KeyInputs inputs = key_inputs_for(request, "sm_80", *nvrtc, {});
  EXPECT_EQ(inputs.unresolvable, std::vector<std::string>{"#include H"});
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
  const Key key = derive_key(key_inputs_for(request, "sm_90", original, {}));
  EXPECT_EQ(derive_key(key_inputs_for(request, "sm_90", copy, {})), key);  // same headers
  EXPECT_NE(derive_key(key_inputs_for(request, "sm_90", edited, {})), key);
}

}  // namespace
}  // namespace cubby
