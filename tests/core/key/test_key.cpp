// Tests for core/src/key/key.cpp: key derivation, explain, the golden key, key text.
//
// Golden files: tests/golden/key_v3.txt holds the hex key of `golden_inputs()` and
// tests/golden/key_v3_explain.txt its `explain_key` lines. The tests compare against them; run
// the test with CUBBY_UPDATE_GOLDEN=1 to rewrite them instead. A change of the key encoding must
// change these files (and bump the format version where the entry format changes too).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "cubby/key.hpp"
#include "key_test_inputs.hpp"
#include "test_support.hpp"
#include "util/hash.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;
using cubby::testing::base_inputs;
using cubby::testing::read_text;
using cubby::testing::resolved_header;
using cubby::testing::unresolved_header;
using cubby::testing::write_text;

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
      {"toolkit_headers", [](KeyInputs& in) { in.toolkit_headers += "x"; }},
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
  in.toolkit_headers = "tk";
  in.arch = "sm_90a";
  in.options = {"-I", "inc"};
  in.source = "src";
  in.program_name = "p.cu";
  in.name_expressions = {"b", "a", "b"};
  in.headers = {resolved_header("h.cuh", "/x/h.cuh", 9), unresolved_header("<none>")};

  // The headers enter as one bytes field: the digest of their count field and header fields.
  const std::string header_list =
      number_field("headers", 2) + header_field(in.headers[0]) + header_field(in.headers[1]);
  const auto digest = hash128(header_list);
  EXPECT_EQ(headers_digest(in.headers), digest);
  const std::vector<std::string> fields = {
      number_field("format_version", 3),
      bytes_field("nvrtc_version", "13.0"),
      bytes_field("nvrtc_identity", "id"),
      bytes_field("toolkit_headers", "tk"),
      bytes_field("arch", "sm_90a"),
      number_field("options", 2),
      bytes_field("option", "-I"),
      bytes_field("option", "inc"),
      bytes_field("source", "src"),
      bytes_field("program_name", "p.cu"),
      number_field("name_expressions", 2),
      bytes_field("name_expression", "a"),
      bytes_field("name_expression", "b"),
      bytes_field("headers", std::string(reinterpret_cast<const char*>(digest.data()), 16)),
  };
  std::string all;
  for (const auto& f : fields) {
    all += f;
  }
  EXPECT_EQ(derive_key(in).bytes, hash128(all));
  // A given digest stands for the headers, which are then not read.
  KeyInputs without = in;
  without.headers.clear();
  EXPECT_EQ(derive_key(without, digest).bytes, hash128(all));

  // Explained: the key's fields, then each header of the digest.
  const std::vector<KeyField> explained = explain_key(in);
  std::vector<std::string> shown = fields;
  shown.push_back(header_field(in.headers[0]));
  shown.push_back(header_field(in.headers[1]));
  ASSERT_EQ(explained.size(), shown.size());
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const auto h = hash128(shown[i]);
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
                                             "toolkit_headers",
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
  EXPECT_EQ(fields[4].summary, "sm_90");
  EXPECT_EQ(fields[5].summary, "3");
  EXPECT_EQ(fields[7].summary, "-DN=4");
  // Name expressions appear sorted.
  EXPECT_EQ(fields[12].summary, "ns::k<double>");
  EXPECT_EQ(fields[13].summary, "ns::k<float>");
  EXPECT_NE(fields[15].summary.find("/proj/inc/detail/ops.cuh"), std::string::npos);
  EXPECT_EQ(fields[16].summary, "toolkit (covered by the NVRTC identity)");
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

TEST(FormatKeyFields, OneAlignedLinePerFieldWithLabelShortHashAndValue) {
  std::vector<KeyField> fields = {{"arch", "sm_90", std::string(32, 'a')},
                                  {"option[10]", "-DN=4", std::string(32, 'b')}};
  EXPECT_EQ(format_key_fields(fields),
            "key fields (label, hash, value):\n"
            "  arch        aaaaaaaaaaaa  sm_90\n"
            "  option[10]  bbbbbbbbbbbb  -DN=4\n");
  // A very long label (a header's path) does not push every other line's value to the right.
  fields.push_back({std::string(50, 'l'), "v", std::string(32, 'c')});
  EXPECT_EQ(format_key_fields(fields),
            "key fields (label, hash, value):\n"
            "  arch" +
                std::string(kKeyDumpLabelWidth - 4, ' ') + "  aaaaaaaaaaaa  sm_90\n" +
                "  option[10]" + std::string(kKeyDumpLabelWidth - 10, ' ') +
                "  bbbbbbbbbbbb  -DN=4\n" + "  " + std::string(50, 'l') + "  cccccccccccc  v\n");
}

// ---------------------------------------------------------------------------------------------
// Golden key
// ---------------------------------------------------------------------------------------------

KeyInputs golden_inputs() {
  KeyInputs in;
  in.format_version = 1;
  in.nvrtc_version = "13.0";
  in.nvrtc_identity = "libnvrtc.so.13.0.48:size=104857600:xxh3=0123456789abcdef0123456789abcdef";
  in.toolkit_headers = "1982;00112233445566778899aabbccddeeff";
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

// The golden dump is the one key-dump layout (format_key_fields) plus every full hash.
std::string explain_text(const std::vector<KeyField>& fields) {
  std::string text = format_key_fields(fields);
  for (const auto& f : fields) text += f.hash + "\n";
  return text;
}

TEST(DeriveKey, GoldenKey) {
  const fs::path golden_key = fs::path(CUBBY_TEST_DATA_DIR) / "golden" / "key_v3.txt";
  const fs::path golden_explain = fs::path(CUBBY_TEST_DATA_DIR) / "golden" / "key_v3_explain.txt";
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

}  // namespace
}  // namespace cubby
