// Tests for core/src/format/cubin.cpp: the CUBIN (ELF) reader, on real NVRTC output and on corrupt
// input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cubby/cubin.hpp"
#include "cubby/nvrtc.hpp"
#include "util/bytes.hpp"

namespace cubby {
namespace {

// Kernels, a __noinline__ __device__ function (not a kernel) and __device__ / __constant__
// variables.
constexpr const char* kSource = R"(
__device__ __noinline__ float helper(float x) { return x * 2.0f + 1.0f; }
__device__ int gvar[17];
__constant__ float cvar[4];
namespace ns {
template <class T> __device__ T table[8];
template <class T> __global__ void scale(T* p) { p[threadIdx.x] = T(helper(float(p[threadIdx.x]))) + table<T>[0]; }
}
extern "C" __global__ void plain(float* p) { p[threadIdx.x] = helper(p[threadIdx.x]) + gvar[threadIdx.x] + cvar[0]; }
)";

const std::vector<std::string> kExpressions = {
    "ns::scale<float>", "ns::scale<int>", "&ns::table<double>", "plain", "&gvar", "&cvar"};

struct Compiled {
  Entry whole;  // whole-program mode: the helper is a LOCAL function
  Entry rdc;    // -rdc=true: the helper is a GLOBAL function
};

const Compiled& compiled() {
  static const Compiled result = [] {
    CompileRequest request;
    request.source = kSource;
    request.program_name = "cubin_test.cu";
    request.name_expressions = kExpressions;
    request.arch = "sm_90";
    Compiled out;
    out.whole = compile_nvrtc(request).value_or_throw();
    request.options = {"-rdc=true"};
    out.rdc = compile_nvrtc(request).value_or_throw();
    return out;
  }();
  return result;
}

// Minimal independent ELF64 section-table access for building targeted corruptions (fields
// read and written with bytes.hpp's little-endian helpers).
template <class T>
void put(std::string& b, std::size_t at, T value) {
  store_le(b.data() + at, value);
}
// Offset of the section header of the symbol table.
std::size_t symtab_header(const std::string& elf) {
  const std::uint64_t shoff = load_le<std::uint64_t>(elf, 40);
  const std::uint16_t shnum = load_le<std::uint16_t>(elf, 60);
  for (std::size_t i = 0; i < shnum; ++i) {
    const std::size_t at = shoff + i * 64;
    if (load_le<std::uint32_t>(elf, at + 4) == 2) return at;
  }
  ADD_FAILURE() << "test CUBIN has no symbol table";
  return 0;
}

class CubinTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { (void)compiled(); }
};

void expect_sorted_and_listed(const CubinSymbols& symbols, const Entry& entry) {
  EXPECT_TRUE(std::is_sorted(symbols.kernels.begin(), symbols.kernels.end()));
  EXPECT_TRUE(std::is_sorted(
      symbols.variables.begin(), symbols.variables.end(),
      [](const CubinVariable& a, const CubinVariable& b) { return a.name < b.name; }));
  for (const char* kernel : {"ns::scale<float>", "ns::scale<int>", "plain"}) {
    const std::string& lowered = entry.lowered_names.at(kernel);
    EXPECT_TRUE(symbols.has_kernel(lowered)) << kernel << " -> " << lowered;
    EXPECT_FALSE(symbols.has_variable(lowered)) << lowered;
  }
  EXPECT_EQ(symbols.kernels.size(), 3u);
  for (const std::string& kernel : symbols.kernels) {
    EXPECT_EQ(kernel.find("helper"), std::string::npos)
        << "device function listed as a kernel: " << kernel;
  }
}

std::uint64_t variable_size(const CubinSymbols& symbols, const std::string& name) {
  for (const auto& v : symbols.variables) {
    if (v.name == name) return v.size;
  }
  ADD_FAILURE() << "variable " << name << " not listed";
  return 0;
}

TEST_F(CubinTest, ListsKernelsButNotTheNoinlineDeviceFunctionWholeProgram) {
  auto symbols = read_cubin_symbols(compiled().whole.payload);
  ASSERT_TRUE(symbols.ok()) << symbols.error().message;
  expect_sorted_and_listed(*symbols, compiled().whole);
  EXPECT_FALSE(symbols->has_kernel("_Z6helperf"));
}

TEST_F(CubinTest, ListsKernelsButNotTheNoinlineDeviceFunctionRdc) {
  auto symbols = read_cubin_symbols(compiled().rdc.payload);
  ASSERT_TRUE(symbols.ok()) << symbols.error().message;
  expect_sorted_and_listed(*symbols, compiled().rdc);
  EXPECT_FALSE(symbols->has_kernel("_Z6helperf"));  // a GLOBAL STT_FUNC here, but not an entry
  EXPECT_FALSE(symbols->has_variable("_Z6helperf"));
}

TEST_F(CubinTest, ListsVariablesWithTheirSizes) {
  for (const Entry* entry : {&compiled().whole, &compiled().rdc}) {
    auto symbols = read_cubin_symbols(entry->payload);
    ASSERT_TRUE(symbols.ok()) << symbols.error().message;
    EXPECT_EQ(variable_size(*symbols, entry->lowered_names.at("&gvar")), 17u * 4u);
    EXPECT_EQ(variable_size(*symbols, entry->lowered_names.at("&cvar")), 4u * 4u);
    EXPECT_EQ(variable_size(*symbols, entry->lowered_names.at("&ns::table<double>")), 8u * 8u);
    EXPECT_TRUE(symbols->has_variable("_ZN2ns5tableIdEE"));
    for (const auto& v : symbols->variables) {
      EXPECT_FALSE(v.name.empty());
      EXPECT_NE(v.name.rfind(".nv.", 0), 0u) << "section or undefined symbol listed: " << v.name;
    }
  }
}

TEST_F(CubinTest, SymbolRefsAreTheSameSymbolsAsViewsIntoTheBytes) {
  for (const Entry* entry : {&compiled().whole, &compiled().rdc}) {
    const std::string& bytes = entry->payload;
    auto symbols = read_cubin_symbols(bytes);
    auto refs = read_cubin_symbol_refs(bytes);
    ASSERT_TRUE(symbols.ok()) << symbols.error().message;
    ASSERT_TRUE(refs.ok()) << refs.error().message;
    std::vector<std::string> kernels;
    std::vector<std::string> variables;
    for (const CubinSymbolRef& ref : *refs) {
      ASSERT_FALSE(ref.name.empty());
      EXPECT_GE(ref.name.data(), bytes.data());
      EXPECT_LE(ref.name.data() + ref.name.size(), bytes.data() + bytes.size());
      if (ref.variable) {
        variables.emplace_back(ref.name);
        EXPECT_TRUE(symbols->has_variable(ref.name)) << ref.name;
        EXPECT_EQ(variable_size(*symbols, std::string(ref.name)), ref.size) << ref.name;
      } else {
        kernels.emplace_back(ref.name);
        EXPECT_TRUE(symbols->has_kernel(ref.name)) << ref.name;
      }
    }
    std::sort(kernels.begin(), kernels.end());
    kernels.erase(std::unique(kernels.begin(), kernels.end()), kernels.end());
    EXPECT_EQ(kernels, symbols->kernels);
    std::sort(variables.begin(), variables.end());
    variables.erase(std::unique(variables.begin(), variables.end()), variables.end());
    EXPECT_EQ(variables.size(), symbols->variables.size());
  }
}

TEST(CubinReader, SymbolRefsRejectWhatReadCubinSymbolsRejects) {
  for (const std::string& input : {std::string(), std::string("not an elf file at all, no"),
                                   std::string("\x7f"
                                               "ELF") +
                                       std::string(60, '\0')}) {
    auto refs = read_cubin_symbol_refs(input);
    auto symbols = read_cubin_symbols(input);
    ASSERT_FALSE(refs.ok());
    ASSERT_FALSE(symbols.ok());
    EXPECT_EQ(refs.error().code, Errc::corrupt);
    EXPECT_EQ(refs.error().message, symbols.error().message);
  }
}

TEST_F(CubinTest, PayloadHasSymbolOnCubin) {
  const Entry& entry = compiled().whole;
  EXPECT_TRUE(payload_has_symbol(entry.payload, "cubin", entry.lowered_names.at("plain")));
  EXPECT_TRUE(payload_has_symbol(entry.payload, "cubin", entry.lowered_names.at("&gvar")));
  EXPECT_FALSE(payload_has_symbol(entry.payload, "cubin", "_Z6helperf"));
  EXPECT_FALSE(payload_has_symbol(entry.payload, "cubin", "no_such_kernel"));
  EXPECT_FALSE(payload_has_symbol("not an elf", "cubin", "plain"));
  EXPECT_FALSE(payload_has_symbol(entry.payload, "unknown-kind", "plain"));
}

TEST(PayloadHasSymbol, PtxMatchesDeclarationsAsWholeTokens) {
  const std::string ptx =
      "// .entry _Z7commentv\n"
      ".visible .entry _Z3fooPf(\n"
      "\t.param .u64 _Z3fooPf_param_0\n"
      ")\n"
      ".func _Z3barv()\n"
      ".global .align 4 .b8 gv[4];\n"
      ".const .align 4 .b8 cv[16];\n"
      ".extern .global .align 4 .b8 ev[];\n"
      "\tld.global.u32 %r1, [used_only];\n"
      ".entry kern$1 (\n";
  EXPECT_TRUE(payload_has_symbol(ptx, "ptx", "_Z3fooPf"));
  EXPECT_TRUE(payload_has_symbol(ptx, "ptx", "gv"));
  EXPECT_TRUE(payload_has_symbol(ptx, "ptx", "cv"));
  EXPECT_TRUE(payload_has_symbol(ptx, "ptx", "kern$1"));
  EXPECT_FALSE(payload_has_symbol(ptx, "ptx", "_Z3foo"));       // prefix of a token
  EXPECT_FALSE(payload_has_symbol(ptx, "ptx", "kern"));         // prefix of a token
  EXPECT_FALSE(payload_has_symbol(ptx, "ptx", "_Z3barv"));      // a device function
  EXPECT_FALSE(payload_has_symbol(ptx, "ptx", "_Z7commentv"));  // only in a comment
  EXPECT_FALSE(payload_has_symbol(ptx, "ptx", "ev"));           // declared elsewhere
  EXPECT_FALSE(payload_has_symbol(ptx, "ptx", "used_only"));    // used, not declared
  EXPECT_FALSE(payload_has_symbol(ptx, "ptx", ""));
}

TEST(PayloadHasSymbol, LtoirIsOpaque) {
  EXPECT_TRUE(payload_has_symbol("opaque bytes", "ltoir", "anything"));
}

TEST(CubinSymbolsSearch, BinarySearchFindsExactNames) {
  CubinSymbols symbols;
  symbols.kernels = {"_Z1av", "_Z1bv", "_Z1cv"};
  symbols.variables = {{"x", 4}, {"y", 8}};
  EXPECT_TRUE(symbols.has_kernel("_Z1av"));
  EXPECT_TRUE(symbols.has_kernel("_Z1cv"));
  EXPECT_FALSE(symbols.has_kernel("_Z1"));
  EXPECT_FALSE(symbols.has_kernel("_Z1dv"));
  EXPECT_TRUE(symbols.has_variable("y"));
  EXPECT_FALSE(symbols.has_variable("z"));
  EXPECT_FALSE(symbols.has_variable(""));
  EXPECT_FALSE(CubinSymbols{}.has_kernel("_Z1av"));
}

TEST(CubinReader, RejectsNonElfWithAMessage) {
  for (const std::string& input :
       {std::string(), std::string("hello"), std::string(200, 'x'),
        std::string(".version 9.0\n.target sm_90\n") + std::string(100, ' ')}) {
    auto symbols = read_cubin_symbols(input);
    ASSERT_FALSE(symbols.ok());
    EXPECT_EQ(symbols.error().code, Errc::corrupt);
    EXPECT_NE(symbols.error().message.find("ELF"), std::string::npos) << symbols.error().message;
  }
}

TEST_F(CubinTest, RejectsElf32AndBigEndian) {
  std::string elf32 = compiled().whole.payload;
  elf32[4] = 1;  // ELFCLASS32
  auto a = read_cubin_symbols(elf32);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().code, Errc::corrupt);
  EXPECT_NE(a.error().message.find("64-bit little-endian"), std::string::npos) << a.error().message;

  std::string big = compiled().whole.payload;
  big[5] = 2;  // ELFDATA2MSB
  auto b = read_cubin_symbols(big);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code, Errc::corrupt);
  EXPECT_NE(b.error().message.find("64-bit little-endian"), std::string::npos) << b.error().message;
}

TEST_F(CubinTest, TargetedCorruptionsFailCleanly) {
  const std::string& good = compiled().whole.payload;
  const std::size_t symtab = symtab_header(good);
  auto expect_corrupt = [](const std::string& bytes, const char* what) {
    auto symbols = read_cubin_symbols(bytes);
    ASSERT_FALSE(symbols.ok()) << what;
    EXPECT_EQ(symbols.error().code, Errc::corrupt) << what;
    EXPECT_FALSE(symbols.error().message.empty()) << what;
  };
  {
    std::string bad = good;
    put<std::uint64_t>(bad, symtab + 56, 0);  // symbol entsize 0
    expect_corrupt(bad, "entsize 0");
  }
  {
    std::string bad = good;
    put<std::uint64_t>(bad, symtab + 24, ~std::uint64_t{0} - 8);  // offset near 2^64: overflow
    expect_corrupt(bad, "symtab offset overflow");
  }
  {
    std::string bad = good;
    put<std::uint32_t>(bad, symtab + 40, 0xffff);  // link past the section table
    expect_corrupt(bad, "symtab link");
  }
  {
    std::string bad = good;
    put<std::uint64_t>(bad, 40, ~std::uint64_t{0});  // e_shoff
    expect_corrupt(bad, "shoff");
  }
  {
    std::string bad = good;
    put<std::uint16_t>(bad, 58, 16);  // e_shentsize too small
    expect_corrupt(bad, "shentsize");
  }
  {
    // Every defined symbol's name offset pointed past the string table.
    std::string bad = good;
    const std::uint64_t offset = load_le<std::uint64_t>(good, symtab + 24);
    const std::uint64_t size = load_le<std::uint64_t>(good, symtab + 32);
    for (std::uint64_t at = offset + 24; at + 24 <= offset + size; at += 24) {
      put<std::uint32_t>(bad, static_cast<std::size_t>(at), 0x7fffffff);
    }
    expect_corrupt(bad, "name offset");
  }
}

TEST_F(CubinTest, EveryTruncationFailsOrReadsInBounds) {
  const std::string& good = compiled().whole.payload;
  const std::uint64_t table_end =
      load_le<std::uint64_t>(good, 40) + std::uint64_t{load_le<std::uint16_t>(good, 60)} * 64;
  ASSERT_LE(table_end, good.size());
  std::size_t failed = 0;
  for (std::size_t size = 0; size < good.size(); ++size) {
    // A copy of exactly `size` bytes, so a sanitizer sees any read past the end.
    const std::string cut = good.substr(0, size);
    auto symbols = read_cubin_symbols(cut);
    if (!symbols.ok()) {
      ++failed;
      EXPECT_EQ(symbols.error().code, Errc::corrupt);
      EXPECT_FALSE(symbols.error().message.empty());
    }
    if (size < table_end) {
      EXPECT_FALSE(symbols.ok()) << "truncated section table accepted at " << size;
    }
  }
  EXPECT_GE(failed, static_cast<std::size_t>(table_end));
}

TEST_F(CubinTest, RandomByteFlipsInHeadersNeverCrash) {
  const std::string& good = compiled().whole.payload;
  const std::size_t shoff = static_cast<std::size_t>(load_le<std::uint64_t>(good, 40));
  const std::size_t table_size = std::size_t{load_le<std::uint16_t>(good, 60)} * 64;
  const std::size_t symtab = symtab_header(good);
  const std::size_t sym_offset =
      static_cast<std::size_t>(load_le<std::uint64_t>(good, symtab + 24));
  const std::size_t sym_size = static_cast<std::size_t>(load_le<std::uint64_t>(good, symtab + 32));
  struct Region {
    std::size_t begin, size;
  };
  const Region regions[] = {{0, 64}, {shoff, table_size}, {sym_offset, sym_size}};
  std::mt19937 rng(20240917);
  std::size_t ok = 0;
  std::size_t failed = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string bytes = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      const Region& region = regions[rng() % 3];
      const std::size_t at = region.begin + rng() % region.size;
      bytes[at] = static_cast<char>(bytes[at] ^ static_cast<char>(1 + rng() % 255));
    }
    auto symbols = read_cubin_symbols(bytes);
    if (symbols.ok()) {
      ++ok;
      for (const auto& kernel : symbols->kernels) ASSERT_FALSE(kernel.empty());
      for (const auto& variable : symbols->variables) ASSERT_FALSE(variable.name.empty());
    } else {
      ++failed;
      ASSERT_EQ(symbols.error().code, Errc::corrupt);
      ASSERT_FALSE(symbols.error().message.empty());
    }
  }
  // Both outcomes occur: flips in unused fields are harmless, flips in offsets are caught.
  EXPECT_GT(ok, 0u);
  EXPECT_GT(failed, 0u);
}

}  // namespace
}  // namespace cubby
