// parse_mangled_name: equal to parse_demangled_name over the abi::__cxa_demangle text wherever it
// succeeds (hand-written names and every symbol of the accuracy corpus), clean failures outside
// its subset, and no crash on truncated or hostile input.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cubby/cubin.hpp"
#include "cubby/demangle.hpp"
#include "cubby/nvrtc.hpp"
#include "cubby_workloads.hpp"
#include "names/mangled_name.hpp"
#include "recovery_corpus.hpp"

namespace cubby {
namespace {

bool same(const QualifiedName& a, const QualifiedName& b);

bool same(const NameArg& a, const NameArg& b) {
  return a.kind == b.kind && same(a.name, b.name) && a.is_const == b.is_const &&
         a.is_volatile == b.is_volatile && a.declarator == b.declarator &&
         a.negative == b.negative && a.magnitude == b.magnitude && a.value_type == b.value_type &&
         a.raw == b.raw;
}

bool same(const QualifiedName& a, const QualifiedName& b) {
  if (a.parts.size() != b.parts.size()) return false;
  for (std::size_t i = 0; i < a.parts.size(); ++i) {
    const NameComponent& x = a.parts[i];
    const NameComponent& y = b.parts[i];
    if (x.name != y.name || x.templated != y.templated || x.name_hash != y.name_hash ||
        x.args.size() != y.args.size()) {
      return false;
    }
    for (std::size_t k = 0; k < x.args.size(); ++k) {
      if (!same(x.args[k], y.args[k])) return false;
    }
  }
  return true;
}

// The parse of the demangler's text, the reference the direct parse must equal.
Result<ParsedName> via_text(const std::string& mangled) {
  auto text = demangle(mangled);
  if (!text.ok()) return std::move(text).error();
  return parse_demangled_name(*text);
}

// Expects the direct parse to succeed and to equal the parse of the demangled text.
void expect_equal_to_text(const std::string& mangled) {
  SCOPED_TRACE(mangled);
  auto direct = parse_mangled_name(mangled);
  ASSERT_TRUE(direct.ok()) << direct.error().message;
  auto reference = via_text(mangled);
  ASSERT_TRUE(reference.ok()) << reference.error().message;
  EXPECT_TRUE(same(direct->name, reference->name))
      << to_string(direct->name) << " vs " << to_string(reference->name);
  EXPECT_EQ(direct->function, reference->function);
}

TEST(MangledName, HandWrittenNamesEqualTheDemangledParse) {
  const char* names[] = {
      "_Z1kv",                                      // k()
      "_Z1kIfEvPT_",                                // k<float>(float*)
      "_ZN2ns1kIfLi3EEEvPT_",                       // ns::k<float, 3>
      "_ZN2ns1kILin3ELj4ELm5ELl6ELx7ELy8EEEvv",     // -3, 4u, 5ul, 6l, 7ll, 8ull
      "_ZN2ns1kILc97ELa1ELh200ELs2ELt3ELw65EEEvv",  // (char)97, (signed char)1, ...
      "_ZN2ns1kILb1ELb0EEEvv",                      // true, false
      "_ZN2ns1kILNS_3TagE1ELS1_n2EEEvv",            // (ns::Tag)1, (ns::Tag)-2 (substitution)
      "_ZN2ns1kIJifdEEEvv",                         // pack <int, float, double>
      "_ZN2ns1kIJEEEvv",                            // empty pack
      "_ZN2ns1kIiJEEEvv",                           // int, then an empty pack
      "_ZN2ns1kIPKfKPfRKPcOiEEvv",                  // float const*, float* const, ...
      "_ZN2ns1kIN2ns1AIiEENS_1BES2_EEvv",           // substitutions of types
      "_ZN2ns1kINS_1AIiE5InnerES3_EEvv",            // nested template prefix
      "_ZN12_GLOBAL__N_11kIiEEvv",                  // (anonymous namespace)
      "_ZNSt3__14pairIiiE1kEv",                     // std::__1::pair<int, int>::k
      "_ZSt1kIiEvv",                                // std::k<int>
      "_Z1kISt4pairIiiEEvv",                        // St type
      "_ZN4cuda3std3__47extentsImJLm18446744073709551615ELm4EEEE",  // a variable-like name
      ("_ZN11cubby_bench5scaleIdN4cuda3std3__47extentsImJLm18446744073709551615EEEENS3_11layout_"
       "leftEEEvPT_PKS7_mmmmmmS7_"),
      "_ZN11cubby_bench12scale_factorIfEE",  // a variable
      "_Z1kIeonEvv",                         // long double, unsigned __int128, __int128
      "_Z1kI1AS0_EvT_",                      // unscoped class and its substitution
      "_Z1kIS_IiEEvv",                       // k<k<int>>: the unscoped template name itself
  };
  for (const char* name : names) expect_equal_to_text(name);
}

TEST(MangledName, VariablesAreNotFunctions) {
  auto variable = parse_mangled_name("_ZN2ns5tableIdEE");
  ASSERT_TRUE(variable.ok()) << variable.error().message;
  EXPECT_FALSE(variable->function);
  EXPECT_EQ(to_string(variable->name), "ns::table<double>");
  auto kernel = parse_mangled_name("_ZN2ns1kIdEEvPT_");
  ASSERT_TRUE(kernel.ok());
  EXPECT_TRUE(kernel->function);
}

TEST(MangledName, OutsideTheSubsetFailsWithAReason) {
  const char* names[] = {
      "",                            // empty
      "plain_c",                     // not mangled
      "_Z",                          // nothing after the prefix
      "_ZplRK1AS1_",                 // operator
      "_ZN1AC2Ev",                   // constructor
      "_ZZ4mainE1x",                 // local name
      "_ZL3foo",                     // internal linkage prefix
      "_ZN2ns1kIT_EEvv",             // template parameter inside the name
      "_ZN2ns1kIXplLi1ELi2EEEEvv",   // expression argument
      "_ZN2ns1kILf3f800000EEEvv",    // float literal
      "_ZN2ns1kIVfEEvv",             // volatile
      "_ZN2ns1kIA4_fEEvv",           // array
      "_ZN2ns1kIFvvEEEvv",           // function type
      "_ZN2ns1kILi2147483648EEEvv",  // int literal out of range
      "_ZN2ns1kISsEEvv",             // standard abbreviation
      "_ZN2ns1kIS5_EEvv",            // substitution out of range
      "_ZN2ns1kIiEEvv.clone.1",      // suffix
      "_ZN2ns1kIDnEEvv",             // decltype(nullptr)
      "_ZN2ns1kIiE",                 // not closed
      "_ZN99kE",                     // length past the end
      "_ZN2ns1kIL_Z1xEEEvv",         // external name as an argument
      "_ZN3ns17UlvE_EEvv",           // lambda
  };
  for (const char* name : names) {
    auto parsed = parse_mangled_name(name);
    EXPECT_FALSE(parsed.ok()) << name << " -> " << to_string(parsed->name);
    if (!parsed.ok()) {
      EXPECT_EQ(parsed.error().code, Errc::invalid_argument);
      EXPECT_NE(parsed.error().message.find("outside the directly parsed subset"),
                std::string::npos);
    }
  }
}

TEST(MangledName, TruncatedAndHostileInputNeverCrashes) {
  const std::string full =
      "_ZN11cubby_bench5scaleIdN4cuda3std3__47extentsImJLm18446744073709551615EEEENS3_11layout_"
      "leftEEEvPT_PKS7_mmmmmmS7_";
  std::size_t parsed = 0;
  for (std::size_t n = 0; n <= full.size(); ++n) {
    const std::string prefix = full.substr(0, n);
    auto direct = parse_mangled_name(prefix);
    if (!direct.ok()) continue;
    ++parsed;
    // Whatever parses must equal the demangler's reading when that reads it at all.
    auto reference = via_text(prefix);
    if (reference.ok()) {
      EXPECT_TRUE(same(direct->name, reference->name)) << prefix;
    }
  }
  EXPECT_GT(parsed, 0u);
  std::string deep = "_Z1k";
  for (int i = 0; i < 5000; ++i) deep += "I1k";
  EXPECT_FALSE(parse_mangled_name(deep).ok());
  std::string pointers = "_Z1kI";
  for (int i = 0; i < 5000; ++i) pointers += "P";
  EXPECT_FALSE(parse_mangled_name(pointers + "iEvv").ok());
  EXPECT_FALSE(parse_mangled_name(std::string("_ZN2ns\0kE", 9)).ok());
  // Each argument type is A<previous, previous> through substitutions: 2^60 components if
  // expanded naively. Must fail fast (work budget), not hang.
  auto substitution = [](std::size_t index) {
    if (index == 0) return std::string("S_");
    std::string digits;
    for (std::size_t seq = index - 1; digits.empty() || seq > 0; seq /= 36) {
      const auto d = static_cast<char>(seq % 36);
      digits.insert(digits.begin(), static_cast<char>(d < 10 ? '0' + d : 'A' + d - 10));
    }
    return "S" + digits + "_";
  };
  std::string doubling = "_Z1kI1AI1XE";  // S_ = k, S0_ = A, S1_ = X, S2_ = A<X>
  for (std::size_t i = 2; i < 62; ++i) {
    doubling += "S0_I" + substitution(i) + substitution(i) + "E";
  }
  doubling += "Evv";
  auto bomb = parse_mangled_name(doubling);
  ASSERT_FALSE(bomb.ok());
  EXPECT_NE(bomb.error().message.find("expands too much"), std::string::npos)
      << bomb.error().message;
}

// Every kernel and variable of the accuracy corpus and of mdspan50 (NVRTC's real symbols): the
// direct parse equals the text parse wherever it succeeds, and covers every mdspan50 kernel.
TEST(MangledName, CorpusSymbolsEqualTheDemangledParse) {
  std::vector<recovery::RecoveryWorkload> workloads = recovery::recovery_workloads();
  const workloads::Workload mdspan = workloads::mdspan50();
  workloads.push_back({mdspan.name, mdspan.source, mdspan.name_expressions, mdspan.options});
  std::size_t symbols = 0;
  std::size_t direct_ok = 0;
  for (const recovery::RecoveryWorkload& w : workloads) {
    SCOPED_TRACE(w.name);
    auto entry = compile_nvrtc(recovery::compile_request(w));
    ASSERT_TRUE(entry.ok()) << entry.error().message;
    const CubinSymbols module = read_cubin_symbols(entry->payload).value_or_throw();
    std::vector<std::string> names = module.kernels;
    for (const CubinVariable& variable : module.variables) names.push_back(variable.name);
    for (const std::string& name : names) {
      ++symbols;
      auto direct = parse_mangled_name(name);
      if (!direct.ok()) continue;
      ++direct_ok;
      auto reference = via_text(name);
      ASSERT_TRUE(reference.ok()) << name << ": " << reference.error().message;
      EXPECT_TRUE(same(direct->name, reference->name))
          << name << ": " << to_string(direct->name) << " vs " << to_string(reference->name);
      EXPECT_EQ(direct->function, reference->function) << name;
    }
    if (w.name == "mdspan50") {
      for (const std::string& kernel : module.kernels) {
        EXPECT_TRUE(parse_mangled_name(kernel).ok()) << kernel;
      }
    }
  }
  EXPECT_GT(symbols, 0u);
  EXPECT_GT(direct_ok, symbols / 2);
}

}  // namespace
}  // namespace cubby
