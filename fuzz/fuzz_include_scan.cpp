// libFuzzer target: the key's include lexer (`list_includes`, translation phases 1-3 then
// directives) never crashes, hangs or reads out of bounds, and gives the same answer for
// rewrites that phases 1-3 make equivalent (line numbers aside):
//   - a complete line put before the text (a plain include of a probe header, in any of the
//     spellings NVRTC accepts: comment-prefixed, digraph, comment inside the directive, a
//     multi-line comment ending on the directive's line) adds exactly the probe header;
//   - a comment put before the text, or a line splice (backslash-newline) inserted anywhere
//     a splice cannot join with what is around it, changes nothing.
// Every computed include's operand is expanded over the text's definitions (macro_expand.hpp):
// it stays within its bounds.
// Input: two selector bytes (the probe spelling, the splice position), then the source text.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "key/computed_includes.hpp"
#include "key/include_lexer.hpp"

namespace {

void require(bool condition) {
  if (!condition) std::abort();  // libFuzzer reports the input
}

// `list` without its leading line numbers ("12: ..." or "12\t..."), which a line put before the
// text, or a splice, moves, de-duplicated: two equal sites of one logical line are one entry,
// but a splice between them puts the second on the next physical line, another entry.
std::vector<std::string> without_lines(std::vector<std::string> list) {
  for (std::string& item : list) {
    std::size_t digits = 0;
    while (digits < item.size() && item[digits] >= '0' && item[digits] <= '9') ++digits;
    item.erase(0, digits);
  }
  std::sort(list.begin(), list.end());
  list.erase(std::unique(list.begin(), list.end()), list.end());
  return list;
}

bool same(const cubby::IncludeList& a, const cubby::IncludeList& b) {
  return a.names == b.names && without_lines(a.unresolvable) == without_lines(b.unresolvable) &&
         without_lines(a.computed) == without_lines(b.computed) && a.defines == b.defines;
}

// `list` with `name` added (sorted, de-duplicated like list_includes).
cubby::IncludeList with_name(cubby::IncludeList list, const std::string& name) {
  list.names.push_back(name);
  std::sort(list.names.begin(), list.names.end());
  list.names.erase(std::unique(list.names.begin(), list.names.end()), list.names.end());
  return list;
}

// A splice at `at` is transparent unless it could join with a backslash or CR before it (an
// existing splice), or sit inside a trigraph (`??x`, whose `??/` is a backslash too).
bool splice_is_transparent_at(std::string_view text, std::size_t at) {
  if (at > 0 && (text[at - 1] == '\\' || text[at - 1] == '?' || text[at - 1] == '\r')) {
    return false;
  }
  if (at >= 3 && text.substr(at - 3, 3) == "?\?/") return false;
  if (at < text.size() && text[at] == '?') return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
  const cubby::IncludeList base = cubby::list_includes(text);
  require(same(cubby::list_includes(text), base));  // deterministic

  // Every computed include of the text expands over the text's own definitions within the
  // expander's bounds (no crash, no hang), the same way in two tables.
  cubby::ComputedIncludes once({});
  cubby::ComputedIncludes twice({});
  once.add_definitions(base.defines);
  twice.add_definitions(base.defines);
  for (const std::string& entry : base.computed) {
    cubby::ComputedSite site;
    require(cubby::parse_computed_site(entry, site));
    const cubby::OperandNames& first = once.expand(site.operand);
    const cubby::OperandNames& second = twice.expand(site.operand);
    require(first.names == second.names && first.unbounded == second.unbounded);
  }

  // A probe header included on a line of its own before the text.
  static constexpr const char* kProbes[] = {
      "#include \"probe.cuh\"\n",
      "/**/#include \"probe.cuh\"\n",
      "%:include \"probe.cuh\"\n",
      "# /*x*/ include <probe.cuh>\n",
      "/* a\n b */ #include \"probe.cuh\" // trailing\n",
      "#inc\\\nlude \"probe.cuh\"\n",
      "  #  include_next <probe.cuh>\n",
  };
  const std::string probe = kProbes[data[0] % (sizeof kProbes / sizeof kProbes[0])];
  require(same(cubby::list_includes(probe + std::string(text)), with_name(base, "probe.cuh")));

  // A comment before the text is a blank.
  require(same(cubby::list_includes("/* c\n */" + std::string(text)), base));

  // A splice inserted where it cannot join with its neighbours.
  if (!text.empty()) {
    const std::size_t at = data[1] % (text.size() + 1);
    if (splice_is_transparent_at(text, at)) {
      std::string spliced(text.substr(0, at));
      spliced += "\\\n";
      spliced += text.substr(at);
      require(same(cubby::list_includes(spliced), base));
    }
  }
  return 0;
}
