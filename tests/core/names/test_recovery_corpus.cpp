// The accuracy corpus (bench/workloads/recovery_corpus.hpp) as a test: cubby's matcher never
// returns a wrong symbol, resolves far more expressions than the text baseline, and answers the
// same from the CUBIN bytes as from the symbols read out of them.
#include <gtest/gtest.h>

#include <string_view>

#include "cubby/nvrtc.hpp"
#include "cubby/recover.hpp"
#include "recovery_corpus.hpp"

namespace cubby {
namespace {

TEST(RecoveryCorpus, MatcherIsNeverWrongAndBeatsTheBaseline) {
  recovery::Score matcher;
  recovery::Score baseline;
  std::size_t expressions = 0;
  for (const recovery::RecoveryWorkload& w : recovery::recovery_workloads()) {
    SCOPED_TRACE(w.name);
    auto entry = compile_nvrtc(recovery::compile_request(w));
    ASSERT_TRUE(entry.ok()) << entry.error().message;
    const CubinSymbols symbols = read_cubin_symbols(entry->payload).value_or_throw();
    const auto answers = recovery::recover_with_matcher(symbols, w.expressions);
    const auto texts = recovery::recover_with_baseline(symbols, w.expressions);
    // Recovery from the bytes (symbol views, filtered before sorting) answers exactly as
    // recovery from the copied, sorted symbols, reasons included.
    const auto from_symbols = recover_names(symbols, w.expressions);
    const auto from_bytes = recover_names(std::string_view(entry->payload), w.expressions);
    ASSERT_TRUE(from_bytes.ok()) << from_bytes.error().message;
    ASSERT_EQ(from_bytes->size(), from_symbols.size());
    for (std::size_t i = 0; i < from_symbols.size(); ++i) {
      const RecoveredName& a = from_symbols[i];
      const RecoveredName& b = (*from_bytes)[i];
      EXPECT_EQ(a.resolved, b.resolved) << a.expression;
      EXPECT_EQ(a.mangled, b.mangled) << a.expression;
      EXPECT_EQ(a.demangled, b.demangled) << a.expression;
      EXPECT_EQ(a.variable, b.variable) << a.expression;
      EXPECT_EQ(a.inexactness, b.inexactness) << a.expression;
      EXPECT_EQ(a.reason, b.reason) << a.expression;
    }
    for (std::size_t i = 0; i < w.expressions.size(); ++i) {
      const std::string& truth = entry->lowered_names.at(w.expressions[i]);
      EXPECT_TRUE(answers[i].empty() || answers[i] == truth)
          << w.expressions[i] << " -> " << answers[i] << ", NVRTC: " << truth;
      recovery::tally(matcher, answers[i], truth);
      recovery::tally(baseline, texts[i], truth);
    }
    expressions += w.expressions.size();
  }
  EXPECT_GE(expressions, 300u);
  EXPECT_EQ(matcher.wrong, 0u);
  EXPECT_GE(matcher.correct, expressions * 8 / 10);
  EXPECT_GT(matcher.correct, 2 * baseline.correct);
}

}  // namespace
}  // namespace cubby
