// Tests for core/src/cuda/nvrtc.cpp: locating NVRTC, and compiling with tricky name expressions
// through the real NVRTC (sm_90). Compiles are few and each program carries many kernels.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "cubby/cubin.hpp"
#include "cubby/nvrtc.hpp"
#include "cuda/nvrtc_library.hpp"
#include "cuda/nvrtc_locate.hpp"
#include "name_corpus.hpp"
#include "test_support.hpp"
#include "util/bytes.hpp"

namespace fs = std::filesystem;

namespace cubby {
namespace {

using testing::ScopedEnv;
using testing::TempDir;
using testing::write_text;

// The folder holding cuda/std/mdspan (CCCL) of the toolkit NVRTC comes from.
std::string cccl_include() {
  std::vector<fs::path> candidates;
  if (auto library = locate_nvrtc(); library.ok()) {
    candidates.push_back(library->path.parent_path().parent_path() / "include" / "cccl");
  }
  if (const char* home = std::getenv("CUDA_HOME"))
    candidates.push_back(fs::path(home) / "include" / "cccl");
  candidates.push_back("/usr/local/cuda/include/cccl");
  for (const auto& folder : candidates) {
    if (fs::exists(folder / "cuda" / "std" / "mdspan")) return folder.string();
  }
  return "/usr/local/cuda/include/cccl";
}

// ---------------------------------------------------------------------------------------------
// Locating

TEST(LocateNvrtc, FindsTheToolkitLibraryWithItsLoadedVersion) {
  const fs::path expected_file = "/usr/local/cuda/lib64/libnvrtc.so.13";
  if (!fs::exists(expected_file)) GTEST_SKIP() << expected_file << " is not on this machine";
  ScopedEnv no_override("CUBBY_NVRTC_LIBRARY", std::nullopt);
  ScopedEnv no_home("CUDA_HOME", std::nullopt);
  ScopedEnv no_path("CUDA_PATH", std::nullopt);
  auto library = detail::locate_nvrtc_uncached();
  ASSERT_TRUE(library.ok()) << library.error().message;
  EXPECT_EQ(library->path, fs::canonical(expected_file));
  auto loaded = loaded_nvrtc_version();
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(library->version, *loaded);
  EXPECT_EQ(library->version.rfind("13.", 0), 0u);
}

TEST(LocateNvrtc, IdentityNamesVersionPathSizeAndBuildId) {
  auto library = locate_nvrtc();
  ASSERT_TRUE(library.ok()) << library.error().message;
  const std::string& id = library->identity;
  std::vector<std::string> fields;
  for (std::size_t start = 0;;) {
    const std::size_t semi = id.find(';', start);
    fields.push_back(
        id.substr(start, semi == std::string::npos ? std::string::npos : semi - start));
    if (semi == std::string::npos) break;
    start = semi + 1;
  }
  // With a build-id the identity names no folder, so identical toolkits installed in different
  // places (machines of a fleet) share entries.
  ASSERT_EQ(fields.size(), 3u) << id;
  EXPECT_EQ(fields[0], library->version);
  EXPECT_EQ(fields[1], std::to_string(fs::file_size(library->path)));
  const std::string build_id = detail::elf_build_id(library->path);
  ASSERT_FALSE(build_id.empty()) << "the toolkit's libnvrtc carries a GNU build-id";
  EXPECT_EQ(fields[2], build_id);
  EXPECT_EQ(id.find(library->path.parent_path().string()), std::string::npos);
  EXPECT_EQ(build_id.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(LocateNvrtc, FindsTheToolkitIncludeFolder) {
  auto library = locate_nvrtc();
  ASSERT_TRUE(library.ok()) << library.error().message;
  ASSERT_FALSE(library->include_dir.empty());
  EXPECT_TRUE(fs::exists(library->include_dir / "nvrtc.h"));
  // CUDA 13 keeps CCCL (libcu++'s <cuda/std/...>) in include/cccl; older toolkits in include.
  EXPECT_TRUE(fs::exists(library->include_dir / "cccl" / "cuda" / "std" / "mdspan") ||
              fs::exists(library->include_dir / "cuda" / "std" / "mdspan"));
}

TEST(LocateNvrtc, IsMemoized) {
  auto first = locate_nvrtc();
  ASSERT_TRUE(first.ok()) << first.error().message;
  ScopedEnv elsewhere("CUBBY_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so");
  auto second = locate_nvrtc();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(first->identity, second->identity);
}

TEST(LocateNvrtc, MissingOverrideFileIsUnavailable) {
  ScopedEnv missing("CUBBY_NVRTC_LIBRARY", "/nonexistent/cubby/libnvrtc.so.13");
  auto library = detail::locate_nvrtc_uncached();
  ASSERT_FALSE(library.ok());
  EXPECT_EQ(library.error().code, Errc::nvrtc_unavailable);
  EXPECT_NE(library.error().message.find("CUBBY_NVRTC_LIBRARY"), std::string::npos);
  EXPECT_NE(library.error().message.find("/nonexistent/cubby/libnvrtc.so.13"), std::string::npos);
}

TEST(LocateNvrtc, OverrideFileIsUsed) {
  auto real = locate_nvrtc();
  ASSERT_TRUE(real.ok()) << real.error().message;
  ScopedEnv override_file("CUBBY_NVRTC_LIBRARY", real->path.string());
  auto library = detail::locate_nvrtc_uncached();
  ASSERT_TRUE(library.ok()) << library.error().message;
  EXPECT_EQ(library->path, real->path);
}

TEST(LocateNvrtc, CudaHomeComesFirstAndTheBuiltinsFileGivesTheVersion) {
  auto real = locate_nvrtc();
  ASSERT_TRUE(real.ok()) << real.error().message;
  TempDir home;
  fs::create_directories(home.path() / "lib64");
  const std::string major = real->version.substr(0, real->version.find('.'));
  fs::create_symlink(real->path, home.path() / "lib64" / ("libnvrtc.so." + major));
  write_text(home.path() / "lib64" / ("libnvrtc-builtins.so." + major + ".7"), "not a library");
  ScopedEnv no_override("CUBBY_NVRTC_LIBRARY", std::nullopt);
  ScopedEnv cuda_home("CUDA_HOME", home.path().string());
  auto library = detail::locate_nvrtc_uncached();
  ASSERT_TRUE(library.ok()) << library.error().message;
  EXPECT_EQ(library->path, real->path);  // the symlink resolved
  EXPECT_EQ(library->version, major + ".7");
  EXPECT_EQ(library->identity.rfind(major + ".7;", 0), 0u) << library->identity;
}

TEST(LocateNvrtc, SearchFoldersFollowTheDocumentedOrder) {
  ScopedEnv cuda_home("CUDA_HOME", "/opt/home-cuda");
  ScopedEnv cuda_path("CUDA_PATH", "/opt/path-cuda");
  ScopedEnv ld_path("LD_LIBRARY_PATH", "/opt/ld-a::/opt/ld-b");
  const auto folders = detail::nvrtc_search_folders();
  auto index = [&](const fs::path& folder) {
    const auto it = std::find(folders.begin(), folders.end(), folder);
    EXPECT_NE(it, folders.end()) << folder;
    return it - folders.begin();
  };
  EXPECT_EQ(index("/opt/home-cuda/lib64"), 0);
  EXPECT_EQ(index("/opt/path-cuda/lib64"), 1);
  EXPECT_LT(index("/opt/path-cuda/lib64"), index("/usr/local/cuda/lib64"));
  EXPECT_LT(index("/usr/local/cuda/lib64"), index("/opt/ld-a"));
  EXPECT_LT(index("/opt/ld-a"), index("/opt/ld-b"));
  EXPECT_LT(index("/opt/ld-b"), index("/usr/lib/x86_64-linux-gnu"));
  EXPECT_LT(index("/usr/lib/x86_64-linux-gnu"), index("/usr/lib64"));
  EXPECT_LT(index("/usr/lib64"), index("/usr/lib"));
  EXPECT_EQ(std::count(folders.begin(), folders.end(), fs::path()), 0);
}

TEST(LocateNvrtc, BuiltinsVersionNeedsExactlyOneMatchingFile) {
  TempDir dir;
  EXPECT_EQ(detail::builtins_version_in(dir.path(), 13), "");
  write_text(dir.path() / "libnvrtc-builtins.so.13.2", "");
  write_text(dir.path() / "libnvrtc-builtins.so", "");
  write_text(dir.path() / "libnvrtc-builtins.so.12.9", "");
  write_text(dir.path() / "libnvrtc-builtins.so.13.x", "");
  EXPECT_EQ(detail::builtins_version_in(dir.path(), 13), "13.2");
  EXPECT_EQ(detail::builtins_version_in(dir.path(), 12), "12.9");
  EXPECT_EQ(detail::builtins_version_in(dir.path(), 11), "");
  EXPECT_EQ(detail::builtins_version_in(dir.path(), -1), "");  // two majors: ambiguous
  write_text(dir.path() / "libnvrtc-builtins.so.13.3", "");
  EXPECT_EQ(detail::builtins_version_in(dir.path(), 13), "");  // two minors: ambiguous
}

TEST(LocateNvrtc, BuildIdIsReadFromANoteSegment) {
  TempDir dir;
  // A minimal ELF64 LE file: header, one PT_NOTE program header, one NT_GNU_BUILD_ID note.
  std::string elf(64 + 56, '\0');
  const char ident[] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  std::memcpy(elf.data(), ident, sizeof ident);
  store_le(elf.data() + 32, std::uint64_t{64});  // e_phoff
  store_le(elf.data() + 54, std::uint16_t{56});  // e_phentsize
  store_le(elf.data() + 56, std::uint16_t{1});   // e_phnum
  std::string note;
  put_le(note, std::uint32_t{4});  // name size
  put_le(note, std::uint32_t{4});  // desc size
  put_le(note, std::uint32_t{3});  // NT_GNU_BUILD_ID
  note += std::string("GNU\0", 4) + std::string("\xde\xad\xbe\xef", 4);
  store_le(elf.data() + 64, std::uint32_t{4});                              // p_type PT_NOTE
  store_le(elf.data() + 64 + 8, static_cast<std::uint64_t>(elf.size()));    // p_offset
  store_le(elf.data() + 64 + 32, static_cast<std::uint64_t>(note.size()));  // p_filesz
  write_text(dir.path() / "with_id.so", elf + note);
  EXPECT_EQ(detail::elf_build_id(dir.path() / "with_id.so"), "deadbeef");

  store_le(elf.data() + 64 + 32, std::uint64_t{1} << 30);  // note segment past the end of the file
  write_text(dir.path() / "bad_note.so", elf + note);
  EXPECT_EQ(detail::elf_build_id(dir.path() / "bad_note.so"), "");
  write_text(dir.path() / "text.so",
             "not an ELF file at all, but long enough to have a header.........");
  EXPECT_EQ(detail::elf_build_id(dir.path() / "text.so"), "");
  EXPECT_EQ(detail::elf_build_id(dir.path() / "missing.so"), "");
}

// ---------------------------------------------------------------------------------------------
// Payload kinds and argument checks (no compile)

TEST(PayloadKindFor, FollowsArchAndDlto) {
  EXPECT_EQ(payload_kind_for("sm_90", {}), PayloadKind::cubin);
  EXPECT_EQ(payload_kind_for("sm_90a", {"-lineinfo"}), PayloadKind::cubin);
  EXPECT_EQ(payload_kind_for("compute_90", {}), PayloadKind::ptx);
  EXPECT_EQ(payload_kind_for("sm_90", {"-dlto"}), PayloadKind::ltoir);
  EXPECT_EQ(payload_kind_for("compute_90", {"--dlto"}), PayloadKind::ltoir);
  EXPECT_EQ(payload_kind_for("sm_90", {"--dlink-time-opt"}), PayloadKind::ltoir);
}

CompileRequest tiny_request() {
  CompileRequest request;
  request.source = "__global__ void tiny(int* p) { p[0] = 1; }\n";
  request.program_name = "tiny.cu";
  request.name_expressions = {"tiny"};
  request.arch = "sm_90";
  return request;
}

// NVRTC's long name of -dlto gives LTO-IR too (it failed as "gave no CUBIN (empty payload)").
TEST(CompileNvrtc, DlinkTimeOptGivesLtoir) {
  CompileRequest request = tiny_request();
  request.options = {"--dlink-time-opt"};
  auto entry = compile_nvrtc(request);
  ASSERT_TRUE(entry.ok()) << entry.error().message;
  EXPECT_EQ(entry->kind, PayloadKind::ltoir);
  EXPECT_FALSE(entry->payload.empty());
}

TEST(CompileNvrtc, RejectsArchInsideOptions) {
  for (const char* option :
       {"-arch=sm_90", "-arch", "--gpu-architecture=sm_80", "--gpu-architecture", "-arch sm_90"}) {
    CompileRequest request = tiny_request();
    request.options = {"-lineinfo", option};
    auto entry = compile_nvrtc(request);
    ASSERT_FALSE(entry.ok()) << option;
    EXPECT_EQ(entry.error().code, Errc::invalid_argument) << option;
    EXPECT_NE(entry.error().message.find("separately"), std::string::npos) << entry.error().message;
  }
}

TEST(CompileNvrtc, RejectsEmptyOrUnknownArchAndEmptyExpressions) {
  CompileRequest request = tiny_request();
  request.arch = "";
  auto no_arch = compile_nvrtc(request);
  ASSERT_FALSE(no_arch.ok());
  EXPECT_EQ(no_arch.error().code, Errc::invalid_argument);
  EXPECT_NE(no_arch.error().message.find("sm_90"), std::string::npos) << no_arch.error().message;

  request.arch = "90";
  auto odd_arch = compile_nvrtc(request);
  ASSERT_FALSE(odd_arch.ok());
  EXPECT_EQ(odd_arch.error().code, Errc::invalid_argument);

  request = tiny_request();
  request.name_expressions = {"tiny", ""};
  auto empty = compile_nvrtc(request);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().code, Errc::invalid_argument);
}

TEST(CompileNvrtc, UnknownOptionIsInvalidArgument) {
  CompileRequest request = tiny_request();
  request.options = {"--no-such-nvrtc-option"};
  auto entry = compile_nvrtc(request);
  ASSERT_FALSE(entry.ok());
  EXPECT_EQ(entry.error().code, Errc::invalid_argument);
  EXPECT_NE(entry.error().message.find("tiny.cu"), std::string::npos) << entry.error().message;
}

// ---------------------------------------------------------------------------------------------
// Compile failures

TEST(CompileNvrtc, CompileErrorCarriesTheLog) {
  CompileRequest request;
  request.source = "__global__ void broken(int* p) { p[0] = cubby_undefined_identifier; }\n";
  request.program_name = "broken.cu";
  request.name_expressions = {"broken"};
  request.arch = "sm_90";
  auto entry = compile_nvrtc(request);
  ASSERT_FALSE(entry.ok());
  EXPECT_EQ(entry.error().code, Errc::compile_failed);
  const std::string& message = entry.error().message;
  EXPECT_EQ(message.rfind("NVRTC could not compile broken.cu:\n", 0), 0u) << message;
  EXPECT_NE(message.find("error"), std::string::npos) << message;
  EXPECT_NE(message.find("cubby_undefined_identifier"), std::string::npos) << message;
}

TEST(CompileNvrtc, InvalidNameExpressionIsNamedInTheFailure) {
  CompileRequest request;
  request.source = "namespace ns { template <class T> __global__ void k(T* p) { p[0] = T(); } }\n";
  request.program_name = "names.cu";
  request.name_expressions = {"ns::k<float>", "ns::nope<int>"};
  request.arch = "sm_90";
  auto entry = compile_nvrtc(request);
  ASSERT_FALSE(entry.ok());
  EXPECT_TRUE(entry.error().code == Errc::compile_failed ||
              entry.error().code == Errc::invalid_argument);
  EXPECT_NE(entry.error().message.find("ns::nope<int>"), std::string::npos)
      << entry.error().message;
  EXPECT_NE(entry.error().message.find("name expression"), std::string::npos)
      << entry.error().message;
}

// ---------------------------------------------------------------------------------------------
// The name-expression corpus: one program, many kernels, one compile.

constexpr const char* kCorpus = testing::kNameExpressionCorpus;

struct Expectation {
  const char* expression;
  const char* lowered;  // exact expected mangling where it is stable; nullptr otherwise
  bool variable;
};

const Expectation kExpectations[] = {
    // typedefs and aliases: erased by mangling (size_t -> m, uint64_t -> y, int32_t -> i)
    {"ns::k<size_t>", "_ZN2ns2v21kImLi128EEEvPT_", false},
    {"ns::k<cuda::std::size_t>", "_ZN2ns2v21kImLi128EEEvPT_", false},
    {"ns::k<cuda::std::uint64_t>", "_ZN2ns2v21kIyLi128EEEvPT_", false},
    {"ns::k<int32_t>", "_ZN2ns2v21kIiLi128EEEvPT_", false},
    {"ns::k<ns::idx_t>", "_ZN2ns2v21kIiLi128EEEvPT_", false},
    {"ns::k<ns::real_t>", "_ZN2ns2v21kIfLi128EEEvPT_", false},
    {"ns::md<cuda::std::dextents<int, 2>>", nullptr, false},
    // enumerators and casts
    {"ns::e<ns::Tag::B>", "_ZN2ns1eILNS_3TagE1EEEvPi", false},
    {"ns::e<(ns::Tag)1>", "_ZN2ns1eILNS_3TagE1EEEvPi", false},
    {"ns::e<(ns::Tag)2>", "_ZN2ns1eILNS_3TagE2EEEvPi", false},
    // constant expressions
    {"ns::c<1 + 1>", "_ZN2ns1cILi2EEEvPi", false},
    {"ns::c<2>", "_ZN2ns1cILi2EEEvPi", false},
    // parameter packs
    {"ns::pack<>", "_ZN2ns4packIJEEEvPi", false},
    {"ns::pack<1, 2, 3>", "_ZN2ns4packIJLi1ELi2ELi3EEEEvPi", false},
    // auto template parameters
    {"ns::a<'a'>", "_ZN2ns1aILc97EEEvPi", false},
    {"ns::a<-3>", "_ZN2ns1aILin3EEEvPi", false},
    {"ns::a<5u>", "_ZN2ns1aILj5EEEvPi", false},
    // default template arguments omitted
    {"ns::d<>", "_ZN2ns1dIfLi4EEEvPT_", false},
    {"ns::d<float, 4>", "_ZN2ns1dIfLi4EEEvPT_", false},
    // __device__ variables (a variable template and a plain one)
    {"&ns::table<double>", "_ZN2ns5tableIdEE", true},
    {"&ns::counter", "_ZN2ns7counterE", true},
    // anonymous namespaces: the name changes on every compile
    {"ns::hidden<int>", nullptr, false},
    {"anon_k", nullptr, false},
    // one instantiation spelled twice (inline namespace, spacing)
    {"ns::k<float, 256>", "_ZN2ns2v21kIfLi256EEEvPT_", false},
    {"ns::v2::k<float,256>", "_ZN2ns2v21kIfLi256EEEvPT_", false},
};

struct CorpusResult {
  CompileRequest request;
  Entry entry;
  CubinSymbols symbols;
};

const CorpusResult& corpus() {
  static const CorpusResult result = [] {
    CorpusResult out;
    out.request.source = kCorpus;
    out.request.program_name = "corpus.cu";
    out.request.options = {"-I" + cccl_include(), "-std=c++17"};
    out.request.arch = "sm_90";
    for (const auto& e : kExpectations) out.request.name_expressions.push_back(e.expression);
    out.request.name_expressions.push_back("ns::c<1 + 1>");  // a duplicate
    out.entry = compile_nvrtc(out.request).value_or_throw();
    out.symbols = read_cubin_symbols(out.entry.payload).value_or_throw();
    return out;
  }();
  return result;
}

class Corpus : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { (void)corpus(); }
};

TEST_F(Corpus, EveryExpressionResolvesToASymbolOfTheCubin) {
  const auto& [request, entry, symbols] = corpus();
  for (const auto& e : kExpectations) {
    SCOPED_TRACE(e.expression);
    const auto it = entry.lowered_names.find(e.expression);
    ASSERT_NE(it, entry.lowered_names.end());
    const std::string& lowered = it->second;
    ASSERT_FALSE(lowered.empty());
    EXPECT_EQ(lowered.rfind("_Z", 0), 0u) << lowered;
    if (e.lowered != nullptr) {
      EXPECT_EQ(lowered, e.lowered);
    }
    if (e.variable) {
      EXPECT_TRUE(symbols.has_variable(lowered)) << lowered;
      EXPECT_FALSE(symbols.has_kernel(lowered)) << lowered;
    } else {
      EXPECT_TRUE(symbols.has_kernel(lowered)) << lowered;
    }
  }
}

TEST_F(Corpus, OneLoweredNamePerDistinctExpression) {
  EXPECT_EQ(corpus().entry.lowered_names.size(), std::size(kExpectations));
}

TEST_F(Corpus, SpellingsOfOneInstantiationShareTheSymbol) {
  const auto& names = corpus().entry.lowered_names;
  EXPECT_EQ(names.at("ns::k<float, 256>"), names.at("ns::v2::k<float,256>"));
  EXPECT_EQ(names.at("ns::e<ns::Tag::B>"), names.at("ns::e<(ns::Tag)1>"));
  EXPECT_EQ(names.at("ns::c<1 + 1>"), names.at("ns::c<2>"));
  EXPECT_EQ(names.at("ns::d<>"), names.at("ns::d<float, 4>"));
  EXPECT_NE(names.at("ns::e<ns::Tag::B>"), names.at("ns::e<(ns::Tag)2>"));
}

TEST_F(Corpus, MdspanAndAnonymousNamesHaveTheirExpectedShape) {
  const auto& names = corpus().entry.lowered_names;
  const std::string& md = names.at("ns::md<cuda::std::dextents<int, 2>>");
  EXPECT_EQ(md.rfind("_ZN2ns2mdIN4cuda3std", 0), 0u) << md;
  EXPECT_NE(md.find("7extentsIi"), std::string::npos) << md;
  EXPECT_NE(names.at("anon_k").find("_GLOBAL__N_"), std::string::npos);
  EXPECT_NE(names.at("ns::hidden<int>").find("_GLOBAL__N_"), std::string::npos);
}

TEST_F(Corpus, EntryRecordsKindOptionsTimesAndPayload) {
  const auto& [request, entry, symbols] = corpus();
  EXPECT_EQ(entry.kind, PayloadKind::cubin);
  std::vector<std::string> expected_options = request.options;
  expected_options.push_back("--gpu-architecture=sm_90");
  EXPECT_EQ(entry.options, expected_options);
  EXPECT_GT(entry.compile_us, 0u);
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  EXPECT_GT(entry.created_ms, 0);
  EXPECT_LE(entry.created_ms, now_ms);
  ASSERT_GE(entry.payload.size(), 4u);
  EXPECT_EQ(entry.payload.substr(0, 4),
            "\x7f"
            "ELF");
  // The program's kernels are exactly the distinct instantiations the expressions named.
  std::set<std::string> kernels;
  for (const auto& e : kExpectations) {
    if (!e.variable) kernels.insert(entry.lowered_names.at(e.expression));
  }
  EXPECT_EQ(symbols.kernels, std::vector<std::string>(kernels.begin(), kernels.end()));
}

// ---------------------------------------------------------------------------------------------
// Other payload kinds, concurrency and include folders

constexpr const char* kSmallProgram = R"(
__device__ __noinline__ int twice(int x) { return 2 * x; }
__device__ int small_var[3];
namespace ns { template <class T> __global__ void fill(T* p) { p[threadIdx.x] = T(twice(small_var[0])); } }
)";

TEST(CompileNvrtc, PtxAndLtoirCompileConcurrently) {
  CompileRequest ptx_request;
  ptx_request.source = kSmallProgram;
  ptx_request.program_name = "small_ptx.cu";
  ptx_request.name_expressions = {"ns::fill<float>", "&small_var"};
  ptx_request.arch = "compute_90";
  CompileRequest lto_request = ptx_request;
  lto_request.program_name = "small_lto.cu";
  lto_request.arch = "sm_90";
  lto_request.options = {"-dlto"};

  std::optional<Result<Entry>> ptx;
  std::optional<Result<Entry>> lto;
  std::thread other([&] { lto.emplace(compile_nvrtc(lto_request)); });
  ptx.emplace(compile_nvrtc(ptx_request));
  other.join();

  ASSERT_TRUE(ptx->ok()) << ptx->error().message;
  const Entry& p = ptx->value();
  EXPECT_EQ(p.kind, PayloadKind::ptx);
  ASSERT_FALSE(p.payload.empty());
  EXPECT_NE(p.payload.back(), '\0');
  EXPECT_NE(p.payload.find(".target sm_90"), std::string::npos);
  const std::string& kernel = p.lowered_names.at("ns::fill<float>");
  EXPECT_EQ(kernel, "_ZN2ns4fillIfEEvPT_");
  EXPECT_TRUE(payload_has_symbol(p.payload, "ptx", kernel));
  EXPECT_TRUE(payload_has_symbol(p.payload, "ptx", p.lowered_names.at("&small_var")));
  EXPECT_FALSE(payload_has_symbol(p.payload, "ptx", "_Z5twicei"));  // a .func, not an entry
  EXPECT_FALSE(payload_has_symbol(p.payload, "ptx", "_ZN2ns4fillIiEEvPT_"));
  EXPECT_EQ(p.options.back(), "--gpu-architecture=compute_90");

  ASSERT_TRUE(lto->ok()) << lto->error().message;
  const Entry& l = lto->value();
  EXPECT_EQ(l.kind, PayloadKind::ltoir);
  EXPECT_FALSE(l.payload.empty());
  EXPECT_EQ(l.lowered_names.at("ns::fill<float>"), kernel);
  EXPECT_EQ(l.options, (std::vector<std::string>{"-dlto", "--gpu-architecture=sm_90"}));
  EXPECT_NE(l.payload.substr(0, 4),
            "\x7f"
            "ELF");
}

TEST(CompileNvrtc, QuotedIncludesResolveInTheSourceFolder) {
  TempDir dir;
  write_text(dir.path() / "cubby_test_value.cuh", "#define CUBBY_TEST_VALUE 42\n");
  CompileRequest request;
  request.source =
      "#include \"cubby_test_value.cuh\"\n"
      "__global__ void with_header(int* p) { p[0] = CUBBY_TEST_VALUE; }\n";
  request.program_name = "with_header.cu";
  request.name_expressions = {"with_header"};
  request.arch = "sm_90";
  request.source_dir = dir.path();
  auto entry = compile_nvrtc(request);
  ASSERT_TRUE(entry.ok()) << entry.error().message;
  EXPECT_EQ(entry->lowered_names.at("with_header"), "_Z11with_headerPi");
  EXPECT_EQ(entry->options, (std::vector<std::string>{"--gpu-architecture=sm_90"}));
}

// ---------------------------------------------------------------------------------------------
// Automatic precompiled headers

// A small mdspan program (the heavy header is what a PCH saves) with kernel k<n>.
CompileRequest mdspan_request(int n) {
  CompileRequest request;
  request.source = "#include <cuda/std/mdspan>\ntemplate <class T> __global__ void k" +
                   std::to_string(n) + "(T* p) { cuda::std::mdspan<T, cuda::std::extents<int, 4, " +
                   std::to_string(n + 2) + ">> m(p); m(0, 0) = T(" + std::to_string(n) + "); }\n";
  request.program_name = "pch_" + std::to_string(n) + ".cu";
  request.name_expressions = {"k" + std::to_string(n) + "<float>"};
  request.options = {"-std=c++17"};
  request.arch = "sm_90";
  return request;
}

bool pch_supported() {
  const auto& api = nvrtc_api();
  return api.ok() && api->supports_pch();
}

std::size_t files_in(const fs::path& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), {}));
}

TEST(CompileNvrtcPch, TheFirstCompileCreatesAPchTheNextReusesItAndEntriesAreUnchanged) {
  if (!pch_supported()) GTEST_SKIP() << "NVRTC without PCH (before 12.8) or not loadable";
  TempDir dir("pch");
  PchOutcome first;
  auto created = compile_nvrtc(mdspan_request(1), dir.path(), first);
  ASSERT_TRUE(created.ok()) << created.error().message;
  EXPECT_TRUE(first.requested);
  EXPECT_TRUE(first.created);
  EXPECT_FALSE(first.reused);
  EXPECT_GE(files_in(dir.path()), 1u);
  PchOutcome second;
  auto reused = compile_nvrtc(mdspan_request(2), dir.path(), second);
  ASSERT_TRUE(reused.ok()) << reused.error().message;
  EXPECT_TRUE(second.reused);
  EXPECT_FALSE(second.created);
  // The entry is what a compile without PCH gives: no PCH option, no PCH message in the log.
  auto plain = compile_nvrtc(mdspan_request(2));
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  for (const Entry* entry : {&created.value(), &reused.value()}) {
    EXPECT_EQ(entry->options, plain->options);
    EXPECT_EQ(entry->log.find("precompiled header"), std::string::npos) << entry->log;
    EXPECT_EQ(entry->kind, PayloadKind::cubin);
  }
  EXPECT_EQ(reused->lowered_names, plain->lowered_names);
  auto symbols = read_cubin_symbols(reused->payload);
  ASSERT_TRUE(symbols.ok()) << symbols.error().message;
  EXPECT_TRUE(symbols->has_kernel(reused->lowered_names.at("k2<float>")));
}

TEST(CompileNvrtcPch, OptionsThatChoosePchThemselvesAreLeftAlone) {
  if (!pch_supported()) GTEST_SKIP() << "NVRTC without PCH (before 12.8) or not loadable";
  TempDir dir("pch");
  TempDir theirs("their-pch");
  CompileRequest request = mdspan_request(3);
  request.options.push_back("--pch-dir=" + theirs.path().string());
  request.options.insert(request.options.begin(), "-pch");
  PchOutcome pch;
  auto entry = compile_nvrtc(request, dir.path(), pch);
  ASSERT_TRUE(entry.ok()) << entry.error().message;
  EXPECT_FALSE(pch.requested);
  EXPECT_EQ(files_in(dir.path()), 0u);
  EXPECT_GE(files_in(theirs.path()), 1u);                               // NVRTC did as they asked
  EXPECT_NE(entry->log.find("precompiled header"), std::string::npos);  // and said so
  PchOutcome none;
  ASSERT_TRUE(compile_nvrtc(mdspan_request(4), fs::path(), none).ok());  // no folder: no PCH
  EXPECT_FALSE(none.requested);
}

TEST(CompileNvrtcPch, AnExhaustedHeapIsGrownAndTheNextCompileCreatesThePch) {
  if (!pch_supported()) GTEST_SKIP() << "NVRTC without PCH (before 12.8) or not loadable";
  const NvrtcApi& api = nvrtc_api().value();
  std::size_t before = 0;
  ASSERT_EQ(api.get_pch_heap_size(&before), NVRTC_SUCCESS);
  ASSERT_EQ(api.set_pch_heap_size(64 << 10), NVRTC_SUCCESS);  // far too small for mdspan
  TempDir dir("pch");
  PchOutcome first;
  ASSERT_TRUE(compile_nvrtc(mdspan_request(5), dir.path(), first).ok());
  EXPECT_FALSE(first.created);
  EXPECT_TRUE(first.grown);
  EXPECT_FALSE(first.failed);
  std::size_t grown = 0;
  ASSERT_EQ(api.get_pch_heap_size(&grown), NVRTC_SUCCESS);
  EXPECT_GT(grown, std::size_t{64 << 10});
  PchOutcome second;
  ASSERT_TRUE(compile_nvrtc(mdspan_request(6), dir.path(), second).ok());
  EXPECT_TRUE(second.created);
  EXPECT_EQ(api.set_pch_heap_size(before), NVRTC_SUCCESS);  // as the other tests expect it
}

}  // namespace
}  // namespace cubby
