// The name-recovery accuracy corpus (header-only; shared by bench/recovery_bench.cpp, the
// cubby_recovery_report tool and tests/core/names/test_recovery_corpus.cpp).
//
// Each RecoveryWorkload is one NVRTC program and the name expressions registered with it, spelled
// the ways users write them (typedefs, aliases, enumerators, constant expressions, defaults,
// whitespace variants, duplicates). NVRTC's own lowered names (nvrtcGetLoweredName) are the
// ground truth. Two methods are scored per expression as correct / unresolved / wrong:
//   matcher:  cubby::recover_names (structural matching after canonicalisation)
//   baseline: demangle every symbol, strip return type and parameters, remove whitespace, and
//             compare the text with the expression's (the approach of earlier caches)
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "cubby/cubin.hpp"
#include "cubby/demangle.hpp"
#include "cubby/nvrtc.hpp"
#include "cubby/recover.hpp"

namespace cubby::recovery {

struct RecoveryWorkload {
  std::string name;
  std::string source;
  std::vector<std::string> expressions;  // may repeat (duplicates are scored each time)
  std::vector<std::string> options = {"-std=c++17"};
};

struct Score {
  std::size_t correct = 0;
  std::size_t unresolved = 0;
  std::size_t wrong = 0;
  std::size_t total() const { return correct + unresolved + wrong; }
};

// The NVRTC request that compiles `w` for `arch`.
inline CompileRequest compile_request(const RecoveryWorkload& w,
                                      const std::string& arch = "sm_90") {
  CompileRequest request;
  request.source = w.source;
  request.program_name = w.name + ".cu";
  request.name_expressions = w.expressions;
  request.options = w.options;
  request.arch = arch;
  return request;
}

// Adds one answer: `answer` empty means unresolved.
inline void tally(Score& score, const std::string& answer, const std::string& truth) {
  if (answer.empty()) {
    ++score.unresolved;
  } else if (answer == truth) {
    ++score.correct;
  } else {
    ++score.wrong;
  }
}

// ---------------------------------------------------------------------------------------------
// Workloads

inline RecoveryWorkload mdspan_workload() {
  RecoveryWorkload w;
  w.name = "mdspan";
  w.source = R"(#include <cuda/std/mdspan>
namespace rc {
template <class T, class Extents, class Layout>
__global__ void touch(T* p) {
  using Mapping = typename Layout::template mapping<Extents>;
  p[0] = T(sizeof(Mapping) + Extents::rank());
}
}  // namespace rc
)";
  const char* dtypes[] = {"float", "double", "int", "long long"};
  struct Ext {
    const char* canonical;
    const char* variant;
  };
  const Ext extents[] = {
      {"cuda::std::dextents<size_t, 1>", "cuda::std::dextents<cuda::std::size_t,1>"},
      {"cuda::std::dextents<size_t, 2>", "cuda::std::dims<2>"},
      {"cuda::std::dextents<size_t, 3>",
       "cuda::std::extents<size_t, cuda::std::dynamic_extent, "
       "cuda::std::dynamic_extent, cuda::std::dynamic_extent>"},
      {"cuda::std::extents<size_t, cuda::std::dynamic_extent, 4>",
       "cuda::std::extents<cuda::std::size_t, cuda::std::dynamic_extent, 2 + 2>"},
      {"cuda::std::dextents<int, 2>", "cuda::std::dextents< int , 2 >"},
      {"cuda::std::extents<int, 3, cuda::std::dynamic_extent>",
       "cuda::std::extents<cuda::std::int32_t, 3, cuda::std::dynamic_extent>"},
  };
  const char* layouts[] = {"cuda::std::layout_right", "cuda::std::layout_left",
                           "cuda::std::layout_stride"};
  for (const char* d : dtypes) {
    for (const Ext& e : extents) {
      for (const char* l : layouts) {
        const std::string head = std::string("rc::touch<") + d + ", ";
        w.expressions.push_back(head + e.canonical + ", " + l + ">");
        w.expressions.push_back(head + e.variant + ", " + l + ">");
      }
    }
  }
  return w;
}

inline RecoveryWorkload typedefs_workload() {
  RecoveryWorkload w;
  w.name = "typedefs";
  w.source = R"(#include <cuda/std/cstdint>
#include <cuda/std/cstddef>
namespace td {
using idx_t = int;
typedef double real_t;
template <class T> using ptr_t = T*;
inline namespace v1 {
template <class T, int N = 64>
__global__ void k(T* out) { out[threadIdx.x % N] = T(N); }
}
template <class T>
__global__ void p(T out) { (void)out; }
}  // namespace td
)";
  const std::vector<std::string> types = {
      "size_t",
      "cuda::std::size_t",
      "cuda::std::uint64_t",
      "cuda::std::int64_t",
      "int32_t",
      "cuda::std::uint32_t",
      "cuda::std::int16_t",
      "cuda::std::uint16_t",
      "int8_t",
      "cuda::std::uint8_t",
      "ptrdiff_t",
      "cuda::std::ptrdiff_t",
      "uintptr_t",
      "cuda::std::intptr_t",
      "float",
      "unsigned",
      "long int",
      "unsigned long long int",
      "signed char",
      "short",
  };
  for (const std::string& t : types) {
    w.expressions.push_back("td::k<" + t + ">");
    w.expressions.push_back("td::v1::k< " + t + " , 32 >");
  }
  // User typedefs and aliases: invisible in the symbols.
  w.expressions.push_back("td::k<td::idx_t, 16>");
  w.expressions.push_back("td::k<td::real_t, 16>");
  w.expressions.push_back("td::p<td::ptr_t<float>>");
  w.expressions.push_back("td::p<float*>");
  w.expressions.push_back("td::p<const int*>");
  w.expressions.push_back("td::p<int const *>");
  return w;
}

inline RecoveryWorkload enums_workload() {
  RecoveryWorkload w;
  w.name = "enums";
  w.source = R"(namespace en {
enum class Op { add, sub, mul, div };
enum Mode { fast, exact };
namespace deep { enum class Kind : unsigned char { a = 3, b = 7 }; }
template <Op op> __global__ void apply(int* p) { p[0] = static_cast<int>(op); }
template <Mode m> __global__ void run(int* p) { p[0] = m; }
template <deep::Kind k, int N> __global__ void kind(int* p) { p[0] = static_cast<int>(k) + N; }
template <Op op> __device__ int weight = static_cast<int>(op) * 2;
}  // namespace en
)";
  const char* ops[] = {"add", "sub", "mul", "div"};
  for (int i = 0; i < 4; ++i) {
    w.expressions.push_back(std::string("en::apply<en::Op::") + ops[i] + ">");
    w.expressions.push_back("en::apply<(en::Op)" + std::to_string(i) + ">");
    w.expressions.push_back("&en::weight<(en::Op)" + std::to_string(i) + ">");
  }
  w.expressions.push_back("en::run<en::fast>");
  w.expressions.push_back("en::run<en::Mode::exact>");
  w.expressions.push_back("en::run<(en::Mode)0>");
  w.expressions.push_back("en::kind<en::deep::Kind::a, 1>");
  w.expressions.push_back("en::kind<(en::deep::Kind)7, 1>");
  w.expressions.push_back("en::kind<en::deep::Kind::b, 2>");
  w.expressions.push_back("en::kind<en::deep::Kind::b, 1 + 1>");
  return w;
}

inline RecoveryWorkload values_workload() {
  RecoveryWorkload w;
  w.name = "values";
  w.source = R"(namespace vl {
template <int N> __global__ void c(int* p) { p[0] = N; }
template <unsigned N> __global__ void u(int* p) { p[0] = int(N); }
template <long N> __global__ void l(int* p) { p[0] = int(N); }
template <auto V> __global__ void a(int* p) { p[0] = static_cast<int>(V); }
template <bool B> __global__ void b(int* p) { p[0] = B; }
template <char C> __global__ void ch(int* p) { p[0] = C; }
template <int... Is> __global__ void pack(int* p) { p[0] = (0 + ... + Is); }
template <class... Ts> __global__ void types(int* p) { p[0] = sizeof...(Ts); }
template <class T = float, int N = 4> __global__ void d(T* p) { p[0] = T(N); }
template <int N> __device__ int cube = N * N * N;
}  // namespace vl
)";
  const std::vector<std::pair<std::string, std::string>> ints = {
      {"1 + 1", "2"},         {"2 * 3", "6"},    {"0x10", "16"}, {"-3", "- 3"},
      {"(1 << 4) | 1", "17"}, {"100 / 7", "14"}, {"'a'", "97"},  {"7 % 4", "3"}};
  for (const auto& [spelled, plain] : ints) {
    w.expressions.push_back("vl::c<" + spelled + ">");
    w.expressions.push_back("vl::c<" + plain + ">");
    w.expressions.push_back("&vl::cube<" + spelled + ">");
  }
  for (const char* n : {"5", "5u", "0x20", "1 + 2"}) {
    w.expressions.push_back(std::string("vl::u<") + n + ">");
    w.expressions.push_back(std::string("vl::l<") + n + ">");
  }
  for (const char* v : {"5", "5u", "5l", "5ul", "'a'", "-3", "true", "(short)2", "2ll"}) {
    w.expressions.push_back(std::string("vl::a<") + v + ">");
  }
  for (const char* v : {"true", "false", "1 == 1", "!false"}) {
    w.expressions.push_back(std::string("vl::b<") + v + ">");
  }
  for (const char* v : {"'x'", "'\\n'", "65"})
    w.expressions.push_back(std::string("vl::ch<") + v + ">");
  for (const char* v : {"", "1", "1, 2", "1,2,3", "1 , 2 , 3", "-1, 0"}) {
    w.expressions.push_back(std::string("vl::pack<") + v + ">");
  }
  for (const char* v : {"", "int", "int, float", "float*, const double&"}) {
    w.expressions.push_back(std::string("vl::types<") + v + ">");
  }
  for (const char* v : {"", "float", "float, 4", "int", "int, 8", "double, 2 * 2"}) {
    w.expressions.push_back(std::string("vl::d<") + v + ">");
  }
  return w;
}

inline RecoveryWorkload namespaces_workload() {
  RecoveryWorkload w;
  w.name = "namespaces";
  w.source = R"(namespace outer {
namespace mid { namespace inner {
template <class T> __global__ void k(T* p) { p[0] = T(1); }
template <class T> __device__ T value[4];
} }
inline namespace abi_v3 {
template <class T> __global__ void k(T* p) { p[0] = T(2); }
__device__ float scale = 2.0f;
}
namespace { template <class T> __global__ void hidden(T* p) { p[0] = T(3); } }
template <class T> struct Box { T v; };
template <class T> __global__ void boxed(Box<T>* p) { p[0].v = T(4); }
}  // namespace outer
namespace other { template <class T> __global__ void k(T* p) { p[0] = T(5); } }
namespace { __global__ void lonely(int* p) { p[0] = 6; } }
__global__ void global_k(int* p) { p[0] = 7; }
extern "C" __global__ void c_entry(int* p) { p[0] = 8; }
__device__ int global_counter;
)";
  for (const char* t : {"int", "float", "double", "unsigned char", "long long"}) {
    const std::string type = t;
    w.expressions.push_back("outer::mid::inner::k<" + type + ">");
    w.expressions.push_back("outer::k<" + type + ">");
    w.expressions.push_back("outer::abi_v3::k<" + type + ">");
    w.expressions.push_back("other::k<" + type + ">");
    w.expressions.push_back("&outer::mid::inner::value<" + type + ">");
    w.expressions.push_back("outer::hidden<" + type + ">");
    w.expressions.push_back("outer::boxed<" + type + ">");
    w.expressions.push_back("outer::boxed< " + type + " >");
  }
  for (const char* e :
       {"lonely", "global_k", "::global_k", "c_entry", "&outer::scale", "&outer::abi_v3::scale",
        "&global_counter", "outer::k<int>", "other::k<int>"}) {
    w.expressions.push_back(e);
  }
  return w;
}

inline std::vector<RecoveryWorkload> recovery_workloads() {
  return {mdspan_workload(), typedefs_workload(), enums_workload(), values_workload(),
          namespaces_workload()};
}

// ---------------------------------------------------------------------------------------------
// Methods

// cubby's matcher: the mangled name per expression, empty when unresolved.
inline std::vector<std::string> recover_with_matcher(const CubinSymbols& symbols,
                                                     const std::vector<std::string>& expressions,
                                                     Demangler demangler = Demangler::cxa) {
  std::vector<std::string> out;
  for (const RecoveredName& name :
       recover_names(symbols, expressions, demangler, RecoveredText::mangled_only)) {
    out.push_back(name.resolved ? name.mangled : std::string());
  }
  return out;
}

// Text without whitespace.
inline std::string squeeze(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c != ' ' && c != '\t' && c != '\n') out.push_back(c);
  }
  return out;
}

// Demangled text with the parameter list and the return type cut off (text only).
inline std::string strip_signature(const std::string& demangled) {
  std::string text = demangled;
  if (!text.empty() && text.back() == ')' &&
      text.find("(anonymous namespace)") + 21 != text.size()) {
    int depth = 0;
    for (std::size_t i = text.size(); i-- > 0;) {
      if (text[i] == ')') ++depth;
      if (text[i] == '(' && --depth == 0) {
        text.resize(i);
        break;
      }
    }
  }
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (c == ' ' && depth == 0) start = i + 1;
  }
  return text.substr(start);
}

// The baseline: demangle, strip, compare text; a unique textual match or nothing.
inline std::vector<std::string> recover_with_baseline(const CubinSymbols& symbols,
                                                      const std::vector<std::string>& expressions) {
  std::multimap<std::string, std::string> by_text;
  auto add = [&](const std::string& mangled) {
    auto text = demangle(mangled);
    if (text.ok()) by_text.emplace(squeeze(strip_signature(*text)), mangled);
  };
  for (const std::string& kernel : symbols.kernels) add(kernel);
  for (const CubinVariable& variable : symbols.variables) add(variable.name);
  std::vector<std::string> out;
  for (const std::string& expression : expressions) {
    std::string key = squeeze(expression);
    if (!key.empty() && key.front() == '&') key.erase(0, 1);
    if (key.rfind("::", 0) == 0) key.erase(0, 2);
    out.push_back(by_text.count(key) == 1 ? by_text.find(key)->second : std::string());
  }
  return out;
}

// Scores answers against NVRTC's lowered names (expression -> mangled name).
inline Score score(const std::vector<std::string>& expressions,
                   const std::vector<std::string>& answers,
                   const std::map<std::string, std::string>& truth) {
  Score s;
  for (std::size_t i = 0; i < expressions.size(); ++i) {
    tally(s, answers[i], truth.at(expressions[i]));
  }
  return s;
}

}  // namespace cubby::recovery
