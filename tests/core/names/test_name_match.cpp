// Tests for core/src/names/name_match.hpp: the template-name parser, canonicalisation and the
// structural matcher. Demangled texts are abi::__cxa_demangle's output for NVRTC 13 symbols.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "names/name_match.hpp"

namespace cubby {
namespace {

std::vector<NameCandidate> candidates(const std::vector<std::string>& demangled) {
  std::vector<NameCandidate> out;
  for (const std::string& text : demangled) {
    auto parsed = parse_demangled_name(text);
    EXPECT_TRUE(parsed.ok()) << text << ": " << parsed.error().message;
    if (!parsed.ok()) continue;
    NameCandidate candidate;
    candidate.symbol = "sym" + std::to_string(out.size());
    candidate.demangled = text;
    candidate.parsed = std::move(parsed.value());
    out.push_back(std::move(candidate));
  }
  return out;
}

// The demangled text the expression resolves to among `symbols`, or "unresolved: <reason>".
std::string resolve(const std::string& expression, const std::vector<std::string>& symbols) {
  auto parsed = parse_name_expression(expression);
  if (!parsed.ok()) return "unparsed: " + parsed.error().message;
  const auto pool = candidates(symbols);
  const NameMatch match = match_name(*parsed, pool);
  if (!match.resolved) return "unresolved: " + match.reason;
  return pool[match.candidate].demangled;
}

std::string canonical(const std::string& expression) {
  auto parsed = parse_name_expression(expression);
  if (!parsed.ok()) return "error: " + parsed.error().message;
  return to_string(parsed->name);
}

bool unresolved(const std::string& answer) { return answer.rfind("unresolved: ", 0) == 0; }

const std::string kK128f = "void ns::v2::k<float, 128>(float*)";
const std::string kK256f = "void ns::v2::k<float, 256>(float*)";
const std::string kK128m = "void ns::v2::k<unsigned long, 128>(unsigned long*)";
const std::string kK128y = "void ns::v2::k<unsigned long long, 128>(unsigned long long*)";
const std::string kK128i = "void ns::v2::k<int, 128>(int*)";

TEST(ParseNameExpression, CanonicalTextIgnoresSpacingAndEvaluatesConstants) {
  EXPECT_EQ(canonical("ns :: k < float , 2+1 >"), "ns::k<float, 3>");
  EXPECT_EQ(canonical("::ns::k<float,256>"), "ns::k<float, 256>");
  EXPECT_EQ(canonical("&ns::table<double>"), "ns::table<double>");
  EXPECT_EQ(canonical("ns::a<'a'>"), "ns::a<(char)97>");
  EXPECT_EQ(canonical("ns::a<-3>"), "ns::a<-3>");
  EXPECT_EQ(canonical("ns::a<5u>"), "ns::a<5u>");
  EXPECT_EQ(canonical("ns::a<(short)-3>"), "ns::a<(short)-3>");
  EXPECT_EQ(canonical("ns::a<0x10 | 1 << 2>"), "ns::a<20>");
  EXPECT_EQ(canonical("ns::a<(1 + 2) * 3 - 10 / 3 % 2>"), "ns::a<8>");
  EXPECT_EQ(canonical("ns::a<'\\n'>"), "ns::a<(char)10>");
  EXPECT_EQ(canonical("ns::a<true>"), "ns::a<true>");
  EXPECT_EQ(canonical("ns::b<1 == 1>"), "ns::b<true>");
  EXPECT_EQ(canonical("ns::b<2 != 2>"), "ns::b<false>");
  EXPECT_EQ(canonical("ns::a<1ul + 1>"), "ns::a<2ul>");
  EXPECT_EQ(canonical("ns::a<2147483648>"), "ns::a<2147483648l>");
  EXPECT_EQ(canonical("ns::a<(ns::Tag)1>"), "ns::a<(ns::Tag)1>");
  EXPECT_EQ(canonical("ns::k<unsigned long int, long unsigned>"),
            "ns::k<unsigned long, unsigned long>");
  EXPECT_EQ(canonical("ns::k<const float*, float const *const*, int&>"),
            "ns::k<const float*, const float*const*, int&>");
}

TEST(ParseNameExpression, StandardTypedefsAndExtentsAliasesAreCanonical) {
  EXPECT_EQ(canonical("ns::k<size_t, std::ptrdiff_t, cuda::std::uint64_t, int32_t>"),
            "ns::k<unsigned long, long, unsigned long long, int>");
  EXPECT_EQ(canonical("ns::k<cuda::std::int8_t, uint16_t, ::cuda::std::size_t>"),
            "ns::k<signed char, unsigned short, unsigned long>");
  EXPECT_EQ(canonical("f<cuda::std::dextents<size_t, 2>>"),
            "f<cuda::std::extents<unsigned long, 18446744073709551615ul, 18446744073709551615ul>>");
  EXPECT_EQ(canonical("f<cuda::std::extents<int, cuda::std::dynamic_extent, 4>>"),
            "f<cuda::std::extents<int, 18446744073709551615ul, 4>>");
  EXPECT_EQ(canonical("f<cuda::std::dims<1>>"),
            "f<cuda::std::extents<unsigned long, 18446744073709551615ul>>");
  EXPECT_EQ(canonical("f<cuda::std::dims<1, int>>"),
            "f<cuda::std::extents<int, 18446744073709551615ul>>");
  // A user's own namespace is not the standard library: its size_t is left alone.
  EXPECT_EQ(canonical("ns::k<mine::size_t>"), "ns::k<mine::size_t>");
}

TEST(ParseNameExpression, RejectsWhatIsNotATemplateName) {
  for (const char* bad : {"", "ns::k<float", "ns::k<float>>", "ns::<int>", "k<>(int)", "k<,>", "1k",
                          "k<'a>", "k<float>::", "operator+", "k<(1>", "k@", "k<)>"}) {
    auto parsed = parse_name_expression(bad);
    EXPECT_FALSE(parsed.ok()) << bad << " -> " << to_string(parsed->name);
    if (!parsed.ok()) {
      EXPECT_EQ(parsed.error().code, Errc::invalid_argument);
      EXPECT_NE(parsed.error().message.find("cannot be parsed"), std::string::npos);
    }
  }
}

TEST(ParseNameExpression, HostileInputFailsCleanly) {
  const std::string deep = "k" + std::string(5000, '<') + "int" + std::string(5000, '>');
  EXPECT_FALSE(parse_name_expression(deep).ok());
  const std::string parens = "k<" + std::string(5000, '(') + "1" + std::string(5000, ')') + ">";
  EXPECT_FALSE(parse_name_expression(parens).ok());
  std::string wide = "k<";
  for (int i = 0; i < 30000; ++i) wide += "int,";
  wide += "int>";
  auto too_long = parse_name_expression(wide);
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.error().message.find("too long"), std::string::npos);
  EXPECT_EQ(canonical("k<7 / 0>"), "k<7/0>");  // not a constant: kept as text, no crash
  EXPECT_EQ(canonical("k<1 << 99>"), "k<1<<99>");
}

TEST(ParseNameExpression, ANameWhoseEveryLevelFailsLateStopsWithinItsStepBudget) {
  // Each level parses as a type that a stray word then follows, so it is read again within its
  // bounds: once exponential in the depth (a fuzzer's input ran for minutes), now bounded.
  std::string late;
  for (int i = 0; i < 20; ++i) late += "a" + std::to_string(i) + "<";
  late += "b";
  for (int i = 0; i < 20; ++i) late += "> c&";
  const auto parsed = parse_name_expression(late);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.error().message.find("too complex"), std::string::npos)
      << parsed.error().message;
  // A real name of the same depth parses in a few steps a token.
  std::string deep;
  for (int i = 0; i < 20; ++i) deep += "a" + std::to_string(i) + "<";
  deep += "b" + std::string(20, '>');
  EXPECT_TRUE(parse_name_expression(deep).ok());
}

TEST(ParseDemangledName, StripsReturnTypeAndParameters) {
  auto function = parse_demangled_name(kK128m);
  ASSERT_TRUE(function.ok()) << function.error().message;
  EXPECT_TRUE(function->function);
  EXPECT_EQ(to_string(function->name), "ns::v2::k<unsigned long, 128>");
  auto variable = parse_demangled_name("ns::table<double>");
  ASSERT_TRUE(variable.ok());
  EXPECT_FALSE(variable->function);
  auto returns_class = parse_demangled_name("cuda::std::pair<int, int> ns::f<int>(int, int*)");
  ASSERT_TRUE(returns_class.ok());
  EXPECT_EQ(to_string(returns_class->name), "ns::f<int>");
  auto anonymous = parse_demangled_name("(anonymous namespace)::anon_k(int*)");
  ASSERT_TRUE(anonymous.ok());
  EXPECT_EQ(to_string(anonymous->name), "(anonymous namespace)::anon_k");
  auto cv_return = parse_demangled_name("float const* ns::g<(char)97, -3>()");
  ASSERT_TRUE(cv_return.ok());
  EXPECT_EQ(to_string(cv_return->name), "ns::g<(char)97, -3>");
  EXPECT_FALSE(parse_demangled_name("ns::{lambda(int)#1}::operator()(int) const").ok());
  EXPECT_FALSE(parse_demangled_name("void ns::k<int>(int").ok());
}

TEST(MatchName, InlineNamespacesAreElidedAndLiteralSpellingWins) {
  EXPECT_EQ(resolve("ns::k<float, 256>", {kK128f, kK256f}), kK256f);
  EXPECT_EQ(resolve("ns::v2::k<float,256>", {kK128f, kK256f}), kK256f);
  // ns::k and ns::inner::k both exist: the literal qualification is the one C++ names.
  const std::string outer = "void ns::k<int>(int*)";
  const std::string inner = "void ns::inner::k<int>(int*)";
  EXPECT_EQ(resolve("ns::k<int>", {inner, outer}), outer);
  EXPECT_EQ(resolve("ns::inner::k<int>", {inner, outer}), inner);
  EXPECT_EQ(resolve("anon_k", {"(anonymous namespace)::anon_k(int*)"}),
            "(anonymous namespace)::anon_k(int*)");
  EXPECT_EQ(resolve("ns::hidden<int>", {"void ns::(anonymous namespace)::hidden<int>(int*)"}),
            "void ns::(anonymous namespace)::hidden<int>(int*)");
}

TEST(MatchName, TypedefsDefaultsAndFixedWidthTypes) {
  const std::vector<std::string> pool = {kK128f, kK256f, kK128m, kK128y, kK128i};
  EXPECT_EQ(resolve("ns::k<size_t>", pool), kK128m);
  EXPECT_EQ(resolve("ns::k<cuda::std::size_t>", pool), kK128m);
  EXPECT_EQ(resolve("ns::k<cuda::std::uint64_t>", pool), kK128y);
  EXPECT_EQ(resolve("ns::k<int32_t>", pool), kK128i);
  // k<float> is k<float, 128> by its default, which the symbols do not show: no guess.
  EXPECT_TRUE(unresolved(resolve("ns::k<float>", pool)));
  EXPECT_EQ(resolve("ns::d<>", {"void ns::d<float, 4>(float*)"}), "void ns::d<float, 4>(float*)");
  // Two instantiations differ only in the omitted default: no guess.
  EXPECT_TRUE(
      unresolved(resolve("ns::d<>", {"void ns::d<float, 4>(float*)", "void ns::d<int, 4>(int*)"})));
}

TEST(MatchName, UserTypedefsAreNeverGuessed) {
  const std::string answer = resolve("ns::k<ns::real_t>", {kK128f});
  ASSERT_TRUE(unresolved(answer)) << answer;
  EXPECT_NE(answer.find("ns::real_t"), std::string::npos) << answer;
  EXPECT_NE(answer.find("typedef"), std::string::npos) << answer;
}

TEST(MatchName, EnumeratorsCastsAndValues) {
  const std::string b = "void ns::e<(ns::Tag)1>(int*)";
  const std::string c = "void ns::e<(ns::Tag)2>(int*)";
  EXPECT_EQ(resolve("ns::e<(ns::Tag)1>", {b, c}), b);
  EXPECT_EQ(resolve("ns::e<(ns::Tag)2>", {b, c}), c);
  EXPECT_EQ(resolve("ns::e<ns::Tag::B>", {b}), b);
  // Which of two enumerators is B cannot be told from the symbols.
  const std::string ambiguous = resolve("ns::e<ns::Tag::B>", {b, c});
  ASSERT_TRUE(unresolved(ambiguous));
  EXPECT_NE(ambiguous.find("ambiguous"), std::string::npos) << ambiguous;
  EXPECT_TRUE(unresolved(resolve("ns::e<other::Tag::B>", {b})));
  // Unscoped enumerator: its scope is the enumeration's.
  EXPECT_EQ(resolve("ns::e<ns::B>", {b}), b);

  EXPECT_EQ(resolve("ns::c<1 + 1>", {"void ns::c<2>(int*)", "void ns::c<3>(int*)"}),
            "void ns::c<2>(int*)");
  const std::string a_char = "void ns::a<(char)97>(int*)";
  const std::string a_int = "void ns::a<97>(int*)";
  EXPECT_EQ(resolve("ns::a<'a'>", {a_char, a_int}), a_char);
  EXPECT_EQ(resolve("ns::a<97>", {a_char, a_int}), a_int);
  EXPECT_EQ(resolve("ns::a<5u>", {"void ns::a<5u>(int*)", "void ns::a<5>(int*)"}),
            "void ns::a<5u>(int*)");
  EXPECT_EQ(resolve("ns::a<-3>", {"void ns::a<-3>(int*)", "void ns::a<3>(int*)"}),
            "void ns::a<-3>(int*)");
  // A typed parameter converts the literal: `5` for `unsigned N` is printed `5u`.
  EXPECT_EQ(resolve("ns::u<5>", {"void ns::u<5u>(int*)"}), "void ns::u<5u>(int*)");
}

TEST(MatchName, PacksPreferTheExactArgumentList) {
  const std::string empty = "void ns::pack<>(int*)";
  const std::string three = "void ns::pack<1, 2, 3>(int*)";
  EXPECT_EQ(resolve("ns::pack<>", {three, empty}), empty);
  EXPECT_EQ(resolve("ns::pack<1, 2, 3>", {three, empty}), three);
}

TEST(MatchName, MdspanExtentsAliases) {
  const std::string max = "18446744073709551615ul";
  const std::string d2 = "void cubby_bench::scale<float, cuda::std::__4::extents<unsigned long, " +
                         max + ", " + max +
                         ">, cuda::std::__4::layout_right>(float*, float const*, unsigned long)";
  const std::string d1 = "void cubby_bench::scale<float, cuda::std::__4::extents<unsigned long, " +
                         max + ">, cuda::std::__4::layout_right>(float*, float const*)";
  const std::string s4 = "void cubby_bench::scale<float, cuda::std::__4::extents<unsigned long, " +
                         max + ", 4ul>, cuda::std::__4::layout_right>(float*, float const*)";
  const std::string left =
      "void cubby_bench::scale<float, cuda::std::__4::extents<unsigned long, " + max + ", " + max +
      ">, cuda::std::__4::layout_left>(float*, float const*, unsigned long)";
  const std::vector<std::string> pool = {d1, d2, s4, left};
  EXPECT_EQ(resolve("cubby_bench::scale<float, cuda::std::dextents<size_t, 2>, "
                    "cuda::std::layout_right>",
                    pool),
            d2);
  EXPECT_EQ(resolve("cubby_bench::scale<float, cuda::std::dextents<size_t, 1>, "
                    "cuda::std::layout_right>",
                    pool),
            d1);
  EXPECT_EQ(resolve("cubby_bench::scale<float, cuda::std::extents<size_t, "
                    "cuda::std::dynamic_extent, 4>, cuda::std::layout_right>",
                    pool),
            s4);
  EXPECT_EQ(resolve("cubby_bench::scale<float, cuda::std::dims<2>, cuda::std::layout_left>", pool),
            left);
  EXPECT_TRUE(unresolved(
      resolve("cubby_bench::scale<double, cuda::std::dextents<size_t, 2>, cuda::std::layout_right>",
              pool)));
}

TEST(MatchName, NoCandidateSaysWhy) {
  const std::string none = resolve("ns::missing<int>", {kK128f});
  ASSERT_TRUE(unresolved(none));
  EXPECT_NE(none.find("no kernel or variable named `missing`"), std::string::npos) << none;
  const std::string other_args = resolve("ns::k<double>", {kK128f});
  ASSERT_TRUE(unresolved(other_args));
  EXPECT_NE(other_args.find("none with these template arguments"), std::string::npos) << other_args;
}

TEST(MatchScore, CountsCanonicalisationSteps) {
  auto expression = parse_name_expression("ns::v2::k<float, 256>");
  auto exact = parse_demangled_name(kK256f);
  ASSERT_TRUE(expression.ok() && exact.ok());
  EXPECT_EQ(match_score(expression->name, exact->name), 0);
  auto elided = parse_name_expression("ns::k<float, 256>");
  ASSERT_TRUE(elided.ok());
  EXPECT_EQ(match_score(elided->name, exact->name), 1);
  auto other = parse_demangled_name(kK128f);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(match_score(expression->name, other->name), -1);
}

}  // namespace
}  // namespace cubby
