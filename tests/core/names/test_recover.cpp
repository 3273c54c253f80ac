// Tests for core/src/names/recover.cpp: recovery of lowered names from a CUBIN compiled by the real
// NVRTC (the ground truth is nvrtcGetLoweredName), and the cross-check of stored maps.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cubby/cubin.hpp"
#include "cubby/nvrtc.hpp"
#include "cubby/recover.hpp"
#include "cubby_workloads.hpp"
#include "name_corpus.hpp"

namespace cubby {
namespace {

// The shared corpus plus an extern "C" kernel (no mangling to recover).
const std::string kCorpus = std::string(testing::kNameExpressionCorpus) +
                            "extern \"C\" __global__ void plain_c(int* p) { p[0] = 2; }\n";

// Expressions the matcher must resolve (to NVRTC's own lowered name).
const std::vector<std::string> kResolvable = {
    "ns::k<size_t>",
    "ns::k<cuda::std::size_t>",
    "ns::k<cuda::std::uint64_t>",
    "ns::k<int32_t>",
    "ns::md<cuda::std::dextents<int, 2>>",
    "ns::e<(ns::Tag)1>",
    "ns::e<(ns::Tag)2>",
    "ns::c<1 + 1>",
    "ns::c<2>",
    "ns::pack<>",
    "ns::pack<1, 2, 3>",
    "ns::a<'a'>",
    "ns::a<-3>",
    "ns::a<5u>",
    "ns::d<float, 4>",
    "&ns::table<double>",
    "&ns::counter",
    "ns::hidden<int>",
    "anon_k",
    "ns::k<float, 256>",
    "ns::v2::k<float,256>",
    "plain_c",
};
// Expressions no enumeration can resolve safely: user typedefs, two enumerators, defaults
// shared by two instantiations. They must stay unresolved (never a wrong symbol).
const std::vector<std::string> kUnresolvable = {"ns::k<ns::idx_t>", "ns::k<ns::real_t>",
                                                "ns::e<ns::Tag::B>"};

struct Compiled {
  Entry entry;
  CubinSymbols symbols;
};

const Compiled& corpus() {
  static const Compiled compiled = [] {
    CompileRequest request;
    request.source = kCorpus;
    request.program_name = "recover_corpus.cu";
    request.options = {"-std=c++17"};
    request.arch = "sm_90";
    request.name_expressions = kResolvable;
    for (const auto& e : kUnresolvable) request.name_expressions.push_back(e);
    request.name_expressions.push_back("ns::d<>");
    request.name_expressions.push_back("ns::d<int>");
    Compiled out;
    out.entry = compile_nvrtc(request).value_or_throw();
    out.symbols = read_cubin_symbols(out.entry.payload).value_or_throw();
    return out;
  }();
  return compiled;
}

TEST(RecoverNames, ResolvesTrickyExpressionsToNvrtcsOwnNames) {
  const Compiled& c = corpus();
  const auto recovered = recover_names(c.symbols, kResolvable);
  ASSERT_EQ(recovered.size(), kResolvable.size());
  for (const RecoveredName& name : recovered) {
    SCOPED_TRACE(name.expression);
    ASSERT_TRUE(name.resolved) << name.reason;
    EXPECT_EQ(name.mangled, c.entry.lowered_names.at(name.expression)) << name.demangled;
    EXPECT_EQ(name.variable, name.expression.front() == '&');
  }
}

TEST(RecoverNames, NeverGuessesWhatMatchingCannotTell) {
  const Compiled& c = corpus();
  std::vector<std::string> expressions = kUnresolvable;
  expressions.push_back("ns::d<>");  // d<float, 4> or d<int, 4>?
  expressions.push_back("ns::k<double>");
  expressions.push_back("ns::nothing<int>");
  expressions.push_back("ns::k<float");
  for (const RecoveredName& name : recover_names(c.symbols, expressions)) {
    SCOPED_TRACE(name.expression);
    EXPECT_FALSE(name.resolved) << name.mangled;
    EXPECT_TRUE(name.mangled.empty());
    EXPECT_FALSE(name.reason.empty());
  }
}

TEST(RecoverNames, FromBytesRejectsWhatIsNotACubin) {
  auto not_elf = recover_names(std::string_view("definitely not an ELF file"), {"k"});
  ASSERT_FALSE(not_elf.ok());
  EXPECT_EQ(not_elf.error().code, Errc::corrupt);
  const std::string& cubin = corpus().entry.payload;
  for (std::size_t cut : {std::size_t{10}, std::size_t{64}, cubin.size() / 2}) {
    auto truncated = recover_names(std::string_view(cubin).substr(0, cut), {"anon_k"});
    if (truncated.ok()) {
      for (const auto& name : *truncated) EXPECT_FALSE(name.resolved && name.mangled.empty());
    } else {
      EXPECT_EQ(truncated.error().code, Errc::corrupt);
    }
  }
}

TEST(RecoverNames, Mdspan50ResolvesEveryExpression) {
  const workloads::Workload w = workloads::mdspan50();
  CompileRequest request;
  request.source = w.source;
  request.name_expressions = w.name_expressions;
  request.options = w.options;
  request.arch = "sm_90";
  const Entry entry = compile_nvrtc(request).value_or_throw();
  auto recovered = recover_names(std::string_view(entry.payload), w.name_expressions);
  ASSERT_TRUE(recovered.ok()) << recovered.error().message;
  for (const RecoveredName& name : *recovered) {
    SCOPED_TRACE(name.expression);
    ASSERT_TRUE(name.resolved) << name.reason;
    EXPECT_EQ(name.mangled, entry.lowered_names.at(name.expression));
  }
}

TEST(ListModuleSymbols, KernelsThenVariablesDemangled) {
  const auto symbols = list_module_symbols(corpus().symbols);
  ASSERT_EQ(symbols.size(), corpus().symbols.kernels.size() + corpus().symbols.variables.size());
  const auto first_variable =
      std::find_if(symbols.begin(), symbols.end(), [](const auto& s) { return s.variable; });
  EXPECT_TRUE(std::all_of(first_variable, symbols.end(), [](const auto& s) { return s.variable; }));
  const bool has_table = std::any_of(symbols.begin(), symbols.end(), [](const ModuleSymbol& s) {
    return s.variable && s.demangled == "ns::table<double>" && s.size == 64;
  });
  EXPECT_TRUE(has_table);
  const bool has_plain = std::any_of(symbols.begin(), symbols.end(), [](const ModuleSymbol& s) {
    return !s.variable && s.mangled == "plain_c" && s.demangled == "plain_c";
  });
  EXPECT_TRUE(has_plain);
}

TEST(RecoverEntryNames, FillsOnlyWhatTheEntryLacks) {
  Entry entry = corpus().entry;
  const std::string kept = entry.lowered_names.at("ns::c<2>");
  entry.lowered_names.erase("ns::a<'a'>");
  entry.lowered_names.erase("anon_k");
  auto recovered =
      recover_entry_names(entry, {"ns::a<'a'>", "anon_k", "ns::c<2>", "ns::k<ns::real_t>"});
  ASSERT_TRUE(recovered.ok()) << recovered.error().message;
  EXPECT_EQ(recovered->size(), 2u);  // ns::c<2> was stored; ns::k<ns::real_t> too
  EXPECT_EQ(entry.lowered_names.at("ns::a<'a'>"), corpus().entry.lowered_names.at("ns::a<'a'>"));
  EXPECT_EQ(entry.lowered_names.at("anon_k"), corpus().entry.lowered_names.at("anon_k"));
  EXPECT_EQ(entry.lowered_names.at("ns::c<2>"), kept);

  Entry ptx = entry;
  ptx.kind = PayloadKind::ptx;
  auto refused = recover_entry_names(ptx, {"anon_k"});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Errc::invalid_argument);
}

TEST(CheckEntryNames, AGoodEntryHasNoProblems) {
  auto report = check_entry_names(corpus().entry);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_TRUE(report->ok()) << report->problems();
  EXPECT_EQ(report->checks.size(), corpus().entry.lowered_names.size());
  EXPECT_EQ(report->kernels, corpus().symbols.kernels.size());
  std::size_t verified = 0;
  for (const NameCheck& check : report->checks) {
    if (check.status == NameCheck::Status::ok) ++verified;
    if (check.status == NameCheck::Status::unverified) {
      EXPECT_FALSE(check.detail.empty());
    }
  }
  EXPECT_GE(verified, kResolvable.size());
}

TEST(CheckEntryNames, SwappedOrMissingNamesAreReported) {
  Entry entry = corpus().entry;
  std::swap(entry.lowered_names.at("ns::c<2>"), entry.lowered_names.at("ns::a<-3>"));
  entry.lowered_names["anon_k"] = "_Z12not_a_symbolv";
  auto report = check_entry_names(entry);
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->ok());
  std::map<std::string, NameCheck::Status> status;
  for (const NameCheck& check : report->checks) status[check.expression] = check.status;
  EXPECT_EQ(status.at("ns::c<2>"), NameCheck::Status::mismatch);
  EXPECT_EQ(status.at("ns::a<-3>"), NameCheck::Status::mismatch);
  EXPECT_EQ(status.at("anon_k"), NameCheck::Status::missing);
  EXPECT_NE(report->problems().find("_Z12not_a_symbolv"), std::string::npos) << report->problems();
  EXPECT_STREQ(name_check_status_name(NameCheck::Status::mismatch), "mismatch");

  Entry broken = corpus().entry;
  broken.payload = "garbage";
  auto corrupt = check_entry_names(broken);
  ASSERT_FALSE(corrupt.ok());
  EXPECT_EQ(corrupt.error().code, Errc::corrupt);

  Entry ptx = corpus().entry;
  ptx.kind = PayloadKind::ptx;
  auto skipped = check_entry_names(ptx);
  ASSERT_TRUE(skipped.ok());
  EXPECT_TRUE(skipped->checks.empty());
}

}  // namespace
}  // namespace cubby
