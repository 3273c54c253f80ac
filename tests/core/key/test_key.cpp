// Tests for core/src/key.cpp: key derivation, explain, key text, include paths, header scanning.
//
// Golden files: tests/golden/key_v1.txt holds the hex key of `golden_inputs()` and
// tests/golden/key_v1_explain.txt its `explain_key` lines. The tests compare against them; run
// the test with CUBBY_UPDATE_GOLDEN=1 to rewrite them instead. A change of the key encoding must
// change these files (and bump the format version where the entry format changes too).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "key/include_plan.hpp"
#include "util/hash.hpp"
#include "util/bytes.hpp"
#include "cubby/key.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;
using cubby::testing::read_text;
using cubby::testing::TempDir;
using cubby::testing::write_text;

}  // namespace

// Readable failure output.
void PrintTo(const HeaderDigest& h, std::ostream* os) {
  *os << "{" << h.include << ", " << (h.resolved ? h.path : "(unresolved)") << ", "
      << to_hex(h.content_hash.data(), h.content_hash.size()) << "}";
}

namespace {

std::array<std::uint8_t, 16> bytes16(std::uint8_t seed) {
  std::array<std::uint8_t, 16> out{};
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<std::uint8_t>(seed + i);
  }
  return out;
}

HeaderDigest resolved_header(std::string include, std::string path, std::uint8_t seed) {
  HeaderDigest h;
  h.include = std::move(include);
  h.path = std::move(path);
  h.resolved = true;
  h.content_hash = bytes16(seed);
  return h;
}

HeaderDigest unresolved_header(std::string include) {
  HeaderDigest h;
  h.include = std::move(include);
  return h;
}

KeyInputs base_inputs() {
  KeyInputs in;
  in.format_version = 1;
  in.nvrtc_version = "13.0";
  in.nvrtc_identity = "libnvrtc.so.13:size=123456:hash=0011223344556677";
  in.arch = "sm_90";
  in.options = {"-std=c++17", "-DN=4", "--use_fast_math"};
  in.source =
      "#include <detail/ops.cuh>\nnamespace ns { template <class T> __global__ void k(T*) {} }\n";
  in.program_name = "kernels.cu";
  in.name_expressions = {"ns::k<float>", "ns::k<double>"};
  in.headers = {resolved_header("detail/ops.cuh", "/proj/inc/detail/ops.cuh", 7),
                unresolved_header("cuda/std/mdspan")};
  return in;
}

// ---------------------------------------------------------------------------------------------
// derive_key
// ---------------------------------------------------------------------------------------------

TEST(DeriveKey, SameInputsSameKey) {
  const KeyInputs a = base_inputs();
  const KeyInputs b = base_inputs();
  EXPECT_EQ(derive_key(a), derive_key(b));
  EXPECT_EQ(derive_key(a), derive_key(a));
  EXPECT_NE(derive_key(a), Key{});
}

TEST(DeriveKey, EveryFieldChangesTheKey) {
  struct Mutation {
    const char* what;
    void (*apply)(KeyInputs&);
  };
  const Mutation mutations[] = {
      {"format_version", [](KeyInputs& in) { in.format_version = 2; }},
      {"nvrtc_version", [](KeyInputs& in) { in.nvrtc_version = "13.1"; }},
      {"nvrtc_identity", [](KeyInputs& in) { in.nvrtc_identity += "x"; }},
      {"arch sm_90a", [](KeyInputs& in) { in.arch = "sm_90a"; }},
      {"arch compute_90", [](KeyInputs& in) { in.arch = "compute_90"; }},
      {"arch sm_80", [](KeyInputs& in) { in.arch = "sm_80"; }},
      {"option[0]", [](KeyInputs& in) { in.options[0] = "-std=c++20"; }},
      {"option[1]", [](KeyInputs& in) { in.options[1] = "-DN=5"; }},
      {"option[2]", [](KeyInputs& in) { in.options[2] = "--use_fast_math=false"; }},
      {"option order", [](KeyInputs& in) { std::swap(in.options[0], in.options[1]); }},
      {"option added", [](KeyInputs& in) { in.options.push_back("-G"); }},
      {"option removed", [](KeyInputs& in) { in.options.pop_back(); }},
      {"source", [](KeyInputs& in) { in.source[in.source.size() - 2] = ' '; }},
      {"program_name", [](KeyInputs& in) { in.program_name = "other.cu"; }},
      {"name expression added", [](KeyInputs& in) { in.name_expressions.push_back("ns::k<int>"); }},
      {"name expression changed", [](KeyInputs& in) { in.name_expressions[0] = "ns::k<float >"; }},
      {"header content", [](KeyInputs& in) { in.headers[0].content_hash[15] ^= 1; }},
      {"header path", [](KeyInputs& in) { in.headers[0].path = "/proj/inc2/detail/ops.cuh"; }},
      {"header include", [](KeyInputs& in) { in.headers[0].include = "detail/ops.h"; }},
      {"header resolved", [](KeyInputs& in) { in.headers[1].resolved = true; }},
      {"header added", [](KeyInputs& in) { in.headers.push_back(unresolved_header("x.cuh")); }},
      {"header removed", [](KeyInputs& in) { in.headers.pop_back(); }},
  };
  const Key base = derive_key(base_inputs());
  std::set<std::string> keys{base.hex()};
  for (const Mutation& m : mutations) {
    KeyInputs in = base_inputs();
    m.apply(in);
    const Key key = derive_key(in);
    EXPECT_NE(key, base) << m.what;
    keys.insert(key.hex());
  }
  // Every mutation gives a key of its own.
  EXPECT_EQ(keys.size(), std::size(mutations) + 1);
}

TEST(DeriveKey, NameExpressionOrderAndDuplicatesDoNotMatter) {
  KeyInputs a = base_inputs();
  a.name_expressions = {"ns::k<float>", "ns::k<double>", "ns::k<int>"};
  KeyInputs b = a;
  b.name_expressions = {"ns::k<int>", "ns::k<float>", "ns::k<double>", "ns::k<float>",
                        "ns::k<int>"};
  EXPECT_EQ(derive_key(a), derive_key(b));
  KeyInputs c = a;
  c.name_expressions = {"ns::k<double>", "ns::k<int>", "ns::k<float>"};
  EXPECT_EQ(derive_key(a), derive_key(c));
}

TEST(DeriveKey, EncodingIsUnambiguous) {
  const auto key_with = [](auto&& edit) {
    KeyInputs in = base_inputs();
    edit(in);
    return derive_key(in);
  };
  // Splitting or joining options.
  EXPECT_NE(key_with([](KeyInputs& in) { in.options = {"a b"}; }), key_with([](KeyInputs& in) {
              in.options = {"a", "b"};
            }));
  EXPECT_NE(key_with([](KeyInputs& in) { in.options = {"ab"}; }), key_with([](KeyInputs& in) {
              in.options = {"a", "b"};
            }));
  EXPECT_NE(key_with([](KeyInputs& in) {
              in.options = {"a", ""};
            }),
            key_with([](KeyInputs& in) { in.options = {"a"}; }));
  EXPECT_NE(key_with([](KeyInputs& in) { in.options = {}; }),
            key_with([](KeyInputs& in) { in.options = {""}; }));
  // Moving bytes between neighbouring fields.
  EXPECT_NE(key_with([](KeyInputs& in) {
              in.source = "abc";
              in.program_name = "d";
            }),
            key_with([](KeyInputs& in) {
              in.source = "ab";
              in.program_name = "cd";
            }));
  EXPECT_NE(key_with([](KeyInputs& in) {
              in.nvrtc_version = "13.0x";
              in.nvrtc_identity = "y";
            }),
            key_with([](KeyInputs& in) {
              in.nvrtc_version = "13.0";
              in.nvrtc_identity = "xy";
            }));
  EXPECT_NE(key_with([](KeyInputs& in) {
              in.nvrtc_identity = "id";
              in.arch = "sm_90";
            }),
            key_with([](KeyInputs& in) {
              in.nvrtc_identity = "idsm_";
              in.arch = "90";
            }));
  // Moving an element from one list to another.
  EXPECT_NE(key_with([](KeyInputs& in) {
              in.options = {"-DX", "x"};
              in.name_expressions = {};
            }),
            key_with([](KeyInputs& in) {
              in.options = {"-DX"};
              in.name_expressions = {"x"};
            }));
  EXPECT_NE(key_with([](KeyInputs& in) { in.name_expressions = {"a,b"}; }),
            key_with([](KeyInputs& in) {
              in.name_expressions = {"a", "b"};
            }));
  // Moving bytes between the parts of a header.
  EXPECT_NE(key_with([](KeyInputs& in) { in.headers = {resolved_header("a/b", "c", 1)}; }),
            key_with([](KeyInputs& in) { in.headers = {resolved_header("a", "/bc", 1)}; }));
}

// The key is XXH3-128 over the field encoding documented in key.cpp; rebuilt here by hand.
std::string le64(std::uint64_t v) {
  std::string out;
  put_le(out, v);
  return out;
}
std::string sized(std::string_view s) { return le64(s.size()) + std::string(s); }
std::string bytes_field(std::string_view label, std::string_view value) {
  return sized(label) + sized(value);
}
std::string number_field(std::string_view label, std::uint64_t value) {
  return sized(label) + le64(8) + le64(value);
}
std::string header_field(const HeaderDigest& h) {
  std::string value = sized(h.include) + std::string(1, h.resolved ? '\1' : '\0') + sized(h.path) +
                      std::string(h.content_hash.begin(), h.content_hash.end());
  return sized("header") + sized(value);
}

TEST(DeriveKey, MatchesTheDocumentedEncoding) {
  KeyInputs in;
  in.format_version = 3;
  in.nvrtc_version = "13.0";
  in.nvrtc_identity = "id";
  in.arch = "sm_90a";
  in.options = {"-I", "inc"};
  in.source = "src";
  in.program_name = "p.cu";
  in.name_expressions = {"b", "a", "b"};
  in.headers = {resolved_header("h.cuh", "/x/h.cuh", 9), unresolved_header("<none>")};

  const std::vector<std::string> fields = {
      number_field("format_version", 3),   bytes_field("nvrtc_version", "13.0"),
      bytes_field("nvrtc_identity", "id"), bytes_field("arch", "sm_90a"),
      number_field("options", 2),          bytes_field("option", "-I"),
      bytes_field("option", "inc"),        bytes_field("source", "src"),
      bytes_field("program_name", "p.cu"), number_field("name_expressions", 2),
      bytes_field("name_expression", "a"), bytes_field("name_expression", "b"),
      number_field("headers", 2),          header_field(in.headers[0]),
      header_field(in.headers[1]),
  };
  std::string all;
  for (const auto& f : fields) {
    all += f;
  }
  EXPECT_EQ(derive_key(in).bytes, hash128(all));

  const std::vector<KeyField> explained = explain_key(in);
  ASSERT_EQ(explained.size(), fields.size());
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const auto h = hash128(fields[i]);
    EXPECT_EQ(explained[i].hash, to_hex(h.data(), h.size())) << explained[i].label;
  }
}

// ---------------------------------------------------------------------------------------------
// explain_key
// ---------------------------------------------------------------------------------------------

TEST(ExplainKey, FieldsInHashingOrderWithLabels) {
  const std::vector<KeyField> fields = explain_key(base_inputs());
  std::vector<std::string> labels;
  for (const auto& f : fields) {
    labels.push_back(f.label);
  }
  const std::vector<std::string> expected = {"format_version",
                                             "nvrtc_version",
                                             "nvrtc_identity",
                                             "arch",
                                             "options",
                                             "option[0]",
                                             "option[1]",
                                             "option[2]",
                                             "source",
                                             "program_name",
                                             "name_expressions",
                                             "name_expression[0]",
                                             "name_expression[1]",
                                             "headers",
                                             "header[detail/ops.cuh]",
                                             "header[cuda/std/mdspan]"};
  EXPECT_EQ(labels, expected);
  EXPECT_EQ(fields[0].summary, "1");
  EXPECT_EQ(fields[3].summary, "sm_90");
  EXPECT_EQ(fields[4].summary, "3");
  EXPECT_EQ(fields[6].summary, "-DN=4");
  // Name expressions appear sorted.
  EXPECT_EQ(fields[11].summary, "ns::k<double>");
  EXPECT_EQ(fields[12].summary, "ns::k<float>");
  EXPECT_NE(fields[14].summary.find("/proj/inc/detail/ops.cuh"), std::string::npos);
  EXPECT_EQ(fields[15].summary, "unresolved");
  for (const auto& f : fields) {
    EXPECT_EQ(f.hash.size(), 32u) << f.label;
    EXPECT_TRUE(Key::parse(f.hash).ok()) << f.label;
  }
}

TEST(ExplainKey, SourceSummaryIsShortOneLineAndCarriesTheLength) {
  KeyInputs in = base_inputs();
  in.source = std::string(10000, 'x') + "\n";
  in.source.replace(0, 3, "a\nb");
  const std::vector<KeyField> fields = explain_key(in);
  const auto it = std::find_if(fields.begin(), fields.end(),
                               [](const KeyField& f) { return f.label == "source"; });
  ASSERT_NE(it, fields.end());
  EXPECT_LT(it->summary.size(), 100u);
  EXPECT_EQ(it->summary.find('\n'), std::string::npos);
  EXPECT_EQ(it->summary.rfind("a\\nb", 0), 0u) << it->summary;
  EXPECT_NE(it->summary.find("10001 bytes"), std::string::npos) << it->summary;
}

TEST(ExplainKey, OnlyTheChangedFieldChangesItsHash) {
  const std::vector<KeyField> base = explain_key(base_inputs());
  KeyInputs in = base_inputs();
  in.arch = "sm_90a";
  in.options[1] = "-DN=5";
  const std::vector<KeyField> changed = explain_key(in);
  ASSERT_EQ(base.size(), changed.size());
  std::vector<std::string> differing;
  for (std::size_t i = 0; i < base.size(); ++i) {
    EXPECT_EQ(base[i].label, changed[i].label);
    if (base[i].hash != changed[i].hash) {
      differing.push_back(base[i].label);
    }
  }
  EXPECT_EQ(differing, (std::vector<std::string>{"arch", "option[1]"}));
}

// ---------------------------------------------------------------------------------------------
// Golden key
// ---------------------------------------------------------------------------------------------

KeyInputs golden_inputs() {
  KeyInputs in;
  in.format_version = 1;
  in.nvrtc_version = "13.0";
  in.nvrtc_identity = "libnvrtc.so.13.0.48:size=104857600:xxh3=0123456789abcdef0123456789abcdef";
  in.arch = "sm_90";
  in.options = {"-std=c++17", "-I", "/proj/include", "--use_fast_math"};
  in.source =
      "#include <cuda/std/mdspan>\n#include \"ops.cuh\"\n"
      "namespace ns {\ntemplate <class T, class E>\n"
      "__global__ void scale(cuda::std::mdspan<T, E> m, T f) { m(0, 0) *= f; }\n}\n";
  in.program_name = "scale.cu";
  in.name_expressions = {"ns::scale<float, cuda::std::dextents<size_t, 2>>",
                         "ns::scale<double, cuda::std::dextents<size_t, 2>>"};
  in.headers = {unresolved_header("cuda/std/mdspan"),
                resolved_header("ops.cuh", "/proj/include/ops.cuh", 0x40)};
  return in;
}

std::string explain_text(const std::vector<KeyField>& fields) {
  std::string text;
  for (const auto& f : fields) {
    text += f.label + "\t" + f.summary + "\t" + f.hash + "\n";
  }
  return text;
}

TEST(DeriveKey, GoldenKey) {
  const fs::path golden_key = fs::path(CUBBY_TEST_DATA_DIR) / "golden" / "key_v1.txt";
  const fs::path golden_explain = fs::path(CUBBY_TEST_DATA_DIR) / "golden" / "key_v1_explain.txt";
  const std::string key_text = derive_key(golden_inputs()).hex() + "\n";
  const std::string explain = explain_text(explain_key(golden_inputs()));
  const char* update = std::getenv("CUBBY_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    write_text(golden_key, key_text);
    write_text(golden_explain, explain);
    GTEST_SKIP() << "rewrote " << golden_key << " and " << golden_explain;
  }
  ASSERT_TRUE(fs::exists(golden_key))
      << golden_key << " is missing; run with CUBBY_UPDATE_GOLDEN=1 to create it";
  EXPECT_EQ(read_text(golden_key), key_text)
      << "the key encoding changed; if deliberate, bump the format version and run with "
         "CUBBY_UPDATE_GOLDEN=1";
  EXPECT_EQ(read_text(golden_explain), explain);
}

// ---------------------------------------------------------------------------------------------
// Key text
// ---------------------------------------------------------------------------------------------

TEST(KeyText, HexRoundTrips) {
  const Key key = derive_key(base_inputs());
  const std::string hex = key.hex();
  ASSERT_EQ(hex.size(), 32u);
  EXPECT_EQ(hex.find_first_not_of("0123456789abcdef"), std::string::npos);
  const Result<Key> parsed = Key::parse(hex);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(*parsed, key);

  std::string upper = hex;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](char c) {
    return static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  });
  const Result<Key> parsed_upper = Key::parse(upper);
  ASSERT_TRUE(parsed_upper.ok());
  EXPECT_EQ(*parsed_upper, key);

  Key fixed;
  for (std::size_t i = 0; i < 16; ++i) {
    fixed.bytes[i] = static_cast<std::uint8_t>(i * 17);
  }
  EXPECT_EQ(fixed.hex(), "00112233445566778899aabbccddeeff");
  const Result<Key> mixed = Key::parse("00112233445566778899AaBbCcDdEeFf");
  ASSERT_TRUE(mixed.ok());
  EXPECT_EQ(*mixed, fixed);
}

TEST(KeyText, RejectsBadText) {
  const std::string good = "00112233445566778899aabbccddeeff";
  const std::vector<std::string> bad = {
      "",
      good.substr(0, 31),
      good + "0",
      "g0112233445566778899aabbccddeeff",
      "0011223344556677 899aabbccddeeff",
      "0x112233445566778899aabbccddeeff",
      "00112233445566778899aabbccddeef-",
      std::string("00112233445566778899aabbccddee\0f", 32),
  };
  for (const auto& text : bad) {
    const Result<Key> parsed = Key::parse(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.error().code, Errc::invalid_argument);
    EXPECT_NE(parsed.error().message.find("invalid key"), std::string::npos)
        << parsed.error().message;
  }
  EXPECT_NE(Key::parse(good.substr(0, 31)).error().message.find("32 hex digits"),
            std::string::npos);
  EXPECT_NE(Key::parse("g0112233445566778899aabbccddeeff").error().message.find("character 1"),
            std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// include_paths_from_options
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

TEST(IncludePaths, AllFormsInOrder) {
  const std::vector<std::string> options = {"-std=c++17",
                                            "-I",
                                            "/a",
                                            "-I/b",
                                            "--include-path=/c",
                                            "-DX=1",
                                            "--include-path",
                                            "rel/d",
                                            "-Irel/e",
                                            "--use_fast_math",
                                            "-I=/f"};
  // "-I=/f" is the folder "/f" for NVRTC (checked by compiling with a folder named "=/f" too).
  const std::vector<fs::path> expected = {"/a", "/b", "/c", "rel/d", "rel/e", "/f"};
  EXPECT_EQ(include_paths_from_options(options), expected);
}

TEST(IncludePaths, ValueOfAnOptionWithASeparateValueIsNoIncludePath) {
  // NVRTC reads "-D -I/x" as the macro "-I/x" and "-Xptxas -I/y" as a ptxas option.
  EXPECT_TRUE(include_paths_from_options({"-D", "-I/x", "-Xptxas", "-I/y"}).empty());
  EXPECT_EQ(include_paths_from_options({"-D", "X", "-I/z"}), std::vector<fs::path>{"/z"});
}

TEST(IncludePaths, IgnoresOtherOptionsAndAMissingValue) {
  EXPECT_TRUE(include_paths_from_options({}).empty());
  EXPECT_TRUE(include_paths_from_options({"-DI=1", "--include-pathology", "-arch=sm_90"}).empty());
  EXPECT_TRUE(include_paths_from_options({"-I"}).empty());
  EXPECT_EQ(include_paths_from_options({"-Ix", "--include-path"}), std::vector<fs::path>{"x"});
  // The value after "-I" is taken even if it looks like an option.
  EXPECT_EQ(include_paths_from_options({"-I", "-weird"}), std::vector<fs::path>{"-weird"});
}

TEST(IncludeOptions, EverySpellingParsedAndPassedOnInOneSpelling) {
  const IncludeOptions parsed = parse_include_options(
      {"-include=a.cuh", "-include", "b.cuh", "--pre-include=c.cuh", "--pre-include", "d.cuh", "-I",
       "/i1", "-I/i2", "-I=/i3", "--include-path=/i4", "--include-path", "/i5", "-DX=1", "-D",
       "-include=no.cuh", "-no-source-include", "-std=c++17"});
  EXPECT_EQ(parsed.pre_includes, (std::vector<std::string>{"a.cuh", "b.cuh", "c.cuh", "d.cuh"}));
  EXPECT_EQ(parsed.include_paths, (std::vector<std::string>{"/i1", "/i2", "/i3", "/i4", "/i5"}));
  EXPECT_TRUE(parsed.no_source_include);
  EXPECT_EQ(parsed.nvrtc_options,
            (std::vector<std::string>{
                "--pre-include=a.cuh", "--pre-include=b.cuh", "--pre-include=c.cuh",
                "--pre-include=d.cuh", "--include-path=/i1", "--include-path=/i2",
                "--include-path=/i3", "--include-path=/i4", "--include-path=/i5", "-DX=1", "-D",
                "-include=no.cuh", "-no-source-include", "-std=c++17"}));
  // A trailing option without its value is passed on for NVRTC to reject.
  const IncludeOptions dangling = parse_include_options({"-include"});
  EXPECT_TRUE(dangling.pre_includes.empty());
  EXPECT_EQ(dangling.nvrtc_options, std::vector<std::string>{"-include"});
  EXPECT_FALSE(parse_include_options({"--no-source-include-x"}).no_source_include);
}

TEST(ListIncludes, LiteralsOpenNoCommentAndNonDirectivesAreNotIncludes) {
  const IncludeList list = list_includes(
      "const char* s = \"/*\";\n#include \"after_string.cuh\"\n"
      "const char* r = R\"x(a\"b/*c)x\";\n#include \"after_raw.cuh\"\n"
      "char c = '\"'; int n = 1'000; /* x */\n#include \"after_char.cuh\"\n"
      "int q; /* a\n b */ #include \"not_first_on_line.cuh\"\n"
      "// comment \\ \n#include \"after_backslash_blank.cuh\"\n"
      "const char* t = R\"(\n#include \"in_raw.cuh\"\n)\";\n"
      "%:%: include \"paste.cuh\"\n"
      "#define X # include \"in_define.cuh\"\n");
  EXPECT_EQ(list.names, (std::vector<std::string>{"after_backslash_blank.cuh", "after_char.cuh",
                                                  "after_raw.cuh", "after_string.cuh"}));
  EXPECT_TRUE(list.unresolvable.empty());
}

TEST(ListIncludes, MacroOperandsAreUnresolvable) {
  const IncludeList list = list_includes(
      "#define H \"v.cuh\"\n#include H\n# include MAKE(v) // why\n"
      "#if __has_include(HDR)\n#endif\n#include <ok.cuh>\n#include\n");
  EXPECT_EQ(list.names, std::vector<std::string>{"ok.cuh"});
  EXPECT_EQ(list.unresolvable, (std::vector<std::string>{"#include H", "#include MAKE(v) // why",
                                                         "__has_include(HDR)"}));
}

// ---------------------------------------------------------------------------------------------
// scan_headers
// ---------------------------------------------------------------------------------------------

// A project: src/ (the source's folder) and inc/ (an include path).
//   source:               "local.cuh", <detail/ops.cuh>, <cuda/std/mdspan>, "missing.cuh", MACRO
//   src/local.cuh         (found in the source's own folder)
//   inc/detail/ops.cuh    includes "helper.cuh" (its own folder) and "cycle_a.cuh" (via -I)
//   inc/detail/helper.cuh
//   inc/cycle_a.cuh <-> inc/cycle_b.cuh
class ScanHeaders : public ::testing::Test {
 protected:
  void SetUp() override {
    write_text(src() / "local.cuh", "#pragma once\nconstexpr int kLocal = 1;\n");
    write_text(inc() / "detail" / "ops.cuh",
               "#pragma once\n#include \"helper.cuh\"\n  #  include \"cycle_a.cuh\" // cycle\n");
    write_text(inc() / "detail" / "helper.cuh", "#pragma once\nconstexpr int kHelper = 2;\n");
    write_text(inc() / "cycle_a.cuh", "#pragma once\n#include \"cycle_b.cuh\"\n");
    write_text(inc() / "cycle_b.cuh", "#pragma once\n#include <cycle_a.cuh>\n");
  }

  fs::path src() const { return dir_.path() / "src"; }
  fs::path inc() const { return dir_.path() / "inc"; }
  std::vector<fs::path> include_paths() const { return {inc()}; }

  std::vector<HeaderDigest> scan() const { return scan_headers(kSource, src(), include_paths()); }

  Key key_of(const std::vector<HeaderDigest>& headers) const {
    KeyInputs in = base_inputs();
    in.source = kSource;
    in.headers = headers;
    return derive_key(in);
  }

  static HeaderDigest digest_of(const std::string& include, const fs::path& file) {
    return HeaderDigest{include, fs::canonical(file).string(), true, hash128(read_text(file))};
  }

  static constexpr const char* kSource =
      "#include \"local.cuh\"   /* own folder */\n"
      "#include <detail/ops.cuh>\n"
      "#include <cuda/std/mdspan>\n"
      "#include \"missing.cuh\"\n"
      "#include KERNEL_HEADER\n"
      "#define STR \"#include \\\"not_a_directive.cuh\\\"\"\n"
      "__global__ void k() {}\n";

  TempDir dir_{"key"};
};

TEST_F(ScanHeaders, FindsQuotedAngledNestedAndCyclicIncludes) {
  const std::vector<HeaderDigest> headers = scan();
  const std::vector<HeaderDigest> expected = {
      unresolved_header("cuda/std/mdspan"),
      digest_of("cycle_a.cuh", inc() / "cycle_a.cuh"),
      digest_of("cycle_b.cuh", inc() / "cycle_b.cuh"),
      digest_of("detail/ops.cuh", inc() / "detail" / "ops.cuh"),
      digest_of("helper.cuh", inc() / "detail" / "helper.cuh"),
      digest_of("local.cuh", src() / "local.cuh"),
      unresolved_header("missing.cuh"),
  };
  EXPECT_EQ(headers, expected);
  for (const auto& h : headers) {
    if (h.resolved) {
      EXPECT_TRUE(fs::path(h.path).is_absolute()) << h.path;
    }
  }
}

TEST_F(ScanHeaders, DirectiveSpellingsAndIgnoredForms) {
  write_text(inc() / "a.cuh", "");
  write_text(inc() / "b.cuh", "");
  write_text(inc() / "c.cuh", "");
  write_text(inc() / "d.cuh", "");
  const std::string source =
      "\t#include\t\"a.cuh\"\r\n"
      "#   include <b.cuh> // trailing comment\n"
      "#include_next \"c.cuh\"\n"
      "#if 0\n#include \"d.cuh\"\n#endif\n"
      "// #include \"commented.cuh\" (not at line start: not a directive)\n"
      "#include MACRO_HEADER\n"
      "#include \"unterminated.cuh\n"
      "#include <>\n"
      "#define X #include \"no.cuh\"\n"
      "#include \"detail\"\n";  // a folder, not a file: unresolved
  std::vector<std::string> includes;
  for (const auto& h : scan_headers(source, fs::path(), include_paths())) {
    includes.push_back(h.include + (h.resolved ? "" : " (unresolved)"));
  }
  EXPECT_EQ(includes,
            (std::vector<std::string>{"a.cuh", "b.cuh", "c.cuh", "d.cuh", "detail (unresolved)"}));
}

// Each spelling NVRTC reads as an include of v.cuh after translation phases 1-3 (each checked by
// compiling with NVRTC 13.0).
TEST_F(ScanHeaders, EverySpellingAfterTranslationPhasesOneToThreeIsFound) {
  write_text(src() / "v.cuh", "constexpr int V = 1;\n");
  const std::vector<std::string> spellings = {
      "#include \"v.cuh\"\n",
      "/**/#include \"v.cuh\"\n",
      "#inc\\\nlude \"v.cuh\"\n",
      "#\\\ninclude \"v.cuh\"\n",
      "#include \"v\\\n.cuh\"\n",
      "#inc\\\r\nlude \"v.cuh\"\r\n",
      "%:include \"v.cuh\"\n",
      "%: include <v.cuh>\n",
      "# /*x*/ include \"v.cuh\"\n",
      "#include/**/\"v.cuh\"\n",
      "/* a multi-line\n comment */ #include \"v.cuh\"\n",
      "int a;\n  /* one\n two */  /* three */# include \"v.cuh\"\n",
      "# /* spans\n lines */ include \"v.cuh\"\n",
      "?\?=include \"v.cuh\"\n",  // the trigraph ??= (C++03/11/14)
      "#if __has_include(\"v.cuh\")\n#endif\n",
      "#if 0\n#include \"v.cuh\"\n#endif\n",
  };
  for (const std::string& spelling : spellings) {
    SCOPED_TRACE(spelling);
    const std::vector<HeaderDigest> headers = scan_headers(spelling, src(), {});
    EXPECT_EQ(headers, std::vector<HeaderDigest>{digest_of("v.cuh", src() / "v.cuh")});
  }
}

TEST_F(ScanHeaders, MacroIncludeInAHeaderMakesTheScanIncomplete) {
  write_text(inc() / "outer.cuh", "#define H \"inner.cuh\"\n#include H\n");
  IncludeSearch search;
  search.program_dir = src();
  search.include_paths = include_paths();
  const HeaderScan plain = scan_includes("#include \"local.cuh\"\n", search);
  EXPECT_TRUE(plain.unresolvable.empty());
  const HeaderScan scan = scan_includes("#include <outer.cuh>\n", search);
  ASSERT_EQ(scan.unresolvable.size(), 1u);
  EXPECT_EQ(scan.unresolvable[0], fs::canonical(inc() / "outer.cuh").string() + ": #include H");
  EXPECT_EQ(scan_includes("#include H\n", search).unresolvable,
            std::vector<std::string>{"#include H"});
}

TEST_F(ScanHeaders, PreIncludedFilesAndTheirIncludesAreScannedFromTheWorkingFolderThenPaths) {
  write_text(inc() / "pre.cuh", "#include \"detail/helper.cuh\"\n");
  write_text(dir_.path() / "cwd_pre.cuh", "");
  const fs::path old_cwd = fs::current_path();
  fs::current_path(dir_.path());
  IncludeSearch search;
  search.include_paths = include_paths();
  search.pre_includes = {"pre.cuh", "cwd_pre.cuh"};
  const HeaderScan scan = scan_includes("", search);
  fs::current_path(old_cwd);
  EXPECT_EQ(scan.headers, (std::vector<HeaderDigest>{
                              digest_of("cwd_pre.cuh", dir_.path() / "cwd_pre.cuh"),
                              digest_of("detail/helper.cuh", inc() / "detail" / "helper.cuh"),
                              digest_of("pre.cuh", inc() / "pre.cuh"),
                          }));
}

TEST_F(ScanHeaders, SortedAndDeduplicated) {
  // The same header included twice, from the source and from two headers.
  write_text(inc() / "x.cuh", "#include \"detail/helper.cuh\"\n");
  write_text(inc() / "y.cuh", "#include \"detail/helper.cuh\"\n#include \"missing.cuh\"\n");
  const std::string source =
      "#include \"y.cuh\"\n#include \"x.cuh\"\n#include \"detail/helper.cuh\"\n"
      "#include \"missing.cuh\"\n#include \"missing.cuh\"\n";
  const std::vector<HeaderDigest> headers = scan_headers(source, src(), include_paths());
  ASSERT_EQ(headers.size(), 4u);
  EXPECT_EQ(headers[0].include, "detail/helper.cuh");
  EXPECT_EQ(headers[1].include, "missing.cuh");
  EXPECT_FALSE(headers[1].resolved);
  EXPECT_EQ(headers[2].include, "x.cuh");
  EXPECT_EQ(headers[3].include, "y.cuh");
}

TEST_F(ScanHeaders, AbsoluteIncludeAndEmptySourceDir) {
  const fs::path abs = inc() / "detail" / "helper.cuh";
  const std::string source = "#include \"" + abs.string() + "\"\n#include \"local.cuh\"\n";
  const std::vector<HeaderDigest> headers = scan_headers(source, fs::path(), include_paths());
  ASSERT_EQ(headers.size(), 2u);
  EXPECT_EQ(headers[0], digest_of(abs.string(), abs));
  // Without a source folder, src/local.cuh is not a candidate.
  EXPECT_EQ(headers[1], unresolved_header("local.cuh"));
}

TEST_F(ScanHeaders, ShadowingHeaderInAnEarlierFolderIsRecorded) {
  const std::vector<HeaderDigest> before = scan();
  // src/ is searched before inc/: src/detail/ops.cuh would shadow inc/detail/ops.cuh.
  write_text(src() / "detail" / "ops.cuh", "#pragma once\n");
  const std::vector<HeaderDigest> after = scan();
  EXPECT_NE(before, after);
  EXPECT_NE(key_of(before), key_of(after));
  const auto count = std::count_if(after.begin(), after.end(), [](const HeaderDigest& h) {
    return h.include == "detail/ops.cuh" && h.resolved;
  });
  EXPECT_EQ(count, 2);
  EXPECT_NE(std::find(after.begin(), after.end(),
                      digest_of("detail/ops.cuh", src() / "detail" / "ops.cuh")),
            after.end());

  // A header next to the including header and one of the same name in an include path: both.
  write_text(inc() / "helper.cuh", "#pragma once\n");
  const std::vector<HeaderDigest> both = scan();
  EXPECT_NE(std::find(both.begin(), both.end(), digest_of("helper.cuh", inc() / "helper.cuh")),
            both.end());
  EXPECT_NE(
      std::find(both.begin(), both.end(), digest_of("helper.cuh", inc() / "detail" / "helper.cuh")),
      both.end());
}

TEST_F(ScanHeaders, SecondIncludePathIsSearchedToo) {
  const fs::path other = dir_.path() / "other";
  write_text(other / "detail" / "ops.cuh", "#pragma once\n");
  const std::vector<HeaderDigest> one = scan();
  const std::vector<HeaderDigest> two = scan_headers(kSource, src(), {inc(), other});
  EXPECT_EQ(two.size(), one.size() + 1);
  EXPECT_NE(
      std::find(two.begin(), two.end(), digest_of("detail/ops.cuh", other / "detail" / "ops.cuh")),
      two.end());
}

TEST_F(ScanHeaders, EditingAHeaderChangesTheKeyAndUntouchedKeepsIt) {
  const std::vector<HeaderDigest> first = scan();
  const Key key1 = key_of(first);
  // Untouched: same digests, same key (warm, memoized).
  const std::vector<HeaderDigest> again = scan();
  EXPECT_EQ(again, first);
  EXPECT_EQ(key_of(again), key1);

  // Edit a nested header reached through -I.
  write_text(inc() / "detail" / "helper.cuh", "#pragma once\nconstexpr int kHelper = 3;\n");
  const std::vector<HeaderDigest> edited = scan();
  EXPECT_NE(key_of(edited), key1);
  const auto helper = std::find_if(edited.begin(), edited.end(),
                                   [](const HeaderDigest& h) { return h.include == "helper.cuh"; });
  ASSERT_NE(helper, edited.end());
  EXPECT_EQ(helper->content_hash, hash128(read_text(inc() / "detail" / "helper.cuh")));

  // A header that now includes a new one: the new one enters the list.
  write_text(inc() / "extra.cuh", "");
  write_text(inc() / "cycle_b.cuh",
             "#pragma once\n#include <cycle_a.cuh>\n#include \"extra.cuh\"\n");
  const std::vector<HeaderDigest> extended = scan();
  EXPECT_NE(
      std::find(extended.begin(), extended.end(), digest_of("extra.cuh", inc() / "extra.cuh")),
      extended.end());
}

void set_mtime(const fs::path& file, std::int64_t seconds, long nanoseconds) {
  struct timespec times[2];
  times[0].tv_sec = seconds;
  times[0].tv_nsec = nanoseconds;
  times[1] = times[0];
  ASSERT_EQ(::utimensat(AT_FDCWD, file.c_str(), times, 0), 0);
}

TEST_F(ScanHeaders, MemoNoticesEdits) {
  const fs::path file = inc() / "detail" / "helper.cuh";
  set_mtime(file, 1700000000, 0);
  const std::string source = "#include <detail/helper.cuh>\n";
  const auto hash_now = [&] {
    const std::vector<HeaderDigest> headers = scan_headers(source, src(), include_paths());
    EXPECT_EQ(headers.size(), 1u);
    return headers.empty() ? std::array<std::uint8_t, 16>{} : headers.front().content_hash;
  };
  const auto h1 = hash_now();
  EXPECT_EQ(h1, hash128(read_text(file)));
  EXPECT_EQ(hash_now(), h1);  // memoized

  // New content, new size (mtime forced back to the old value).
  write_text(file, "constexpr int kHelper = 22;\n");
  set_mtime(file, 1700000000, 0);
  const auto h2 = hash_now();
  EXPECT_NE(h2, h1);
  EXPECT_EQ(h2, hash128(read_text(file)));

  // New content, same size, mtime bumped by one nanosecond.
  write_text(file, "constexpr int kHelper = 33;\n");
  set_mtime(file, 1700000000, 1);
  const auto h3 = hash_now();
  EXPECT_NE(h3, h2);
  EXPECT_EQ(h3, hash128(read_text(file)));

  // Replaced by another file (rename over it), same size.
  write_text(inc() / "replacement.tmp", "constexpr int kHelper = 44;\n");
  fs::rename(inc() / "replacement.tmp", file);
  const auto h4 = hash_now();
  EXPECT_NE(h4, h3);
  EXPECT_EQ(h4, hash128(read_text(file)));
}

TEST_F(ScanHeaders, ConcurrentScansAgree) {
  const std::vector<HeaderDigest> expected = scan();
  std::vector<std::vector<HeaderDigest>> results(4);
  std::vector<std::thread> threads;
  for (auto& result : results) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        result = scan();
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  for (const auto& result : results) {
    EXPECT_EQ(result, expected);
  }
}

}  // namespace
}  // namespace cubby
