// The computed includes of one header scan: every definition the scan has seen so far, and what
// each computed include's operand expands to under them (include_scan.hpp runs the fixpoint:
// files found so bring more definitions and more computed includes).
#pragma once

#include <deque>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "key/macro_expand.hpp"
#include "key/macro_table.hpp"

namespace cubby {

// One IncludeList::computed entry, split.
struct ComputedSite {
  std::string line;       // the original line number, as text
  std::string directive;  // "#include H", "__has_include(H)"
  std::string operand;    // what is expanded
};
// Splits "LINE\tDIRECTIVE\tOPERAND"; false if `entry` is not of that form.
bool parse_computed_site(std::string_view entry, ComputedSite& out);

// Not thread-safe: one per scan.
class ComputedIncludes {
 public:
  // Starts with NVRTC's fixed predefined macros and the `-D` options' values (`defines`, as given
  // to -D: "X", "X=Y", "F(a)=a").
  explicit ComputedIncludes(const std::vector<std::string>& defines);

  // Adds recorded definitions (IncludeList::defines); `texts` must outlive this object.
  void add_definitions(const std::vector<std::string>& texts);

  // The header names `operand` can expand to under every definition added so far (memoized per
  // operand until a definition is added). Every name it consulted is remembered (consulted()).
  const OperandNames& expand(const std::string& operand);

  // Whether a name of `names` (an expand() answer) holds an identifier the expansion looked up and
  // found no definition for: where NVRTC reads the include, that macro may be defined (by NVRTC
  // itself or a toolkit header the scan does not read) and the name be another.
  bool holds_unknown_macro(const OperandNames& names);

  // How many distinct definitions were added: the fixpoint's progress measure.
  std::size_t definitions() const { return table_.size(); }

  // Every identifier an expansion looked up: a definition of any other name (in the source or a
  // `-D` option) cannot change what the scan found.
  const std::set<std::string, std::less<>>& consulted() const { return consulted_; }

 private:
  MacroTable table_;
  std::deque<std::string> owned_;  // the definitions made here (predefined, -D)
  struct Known {
    std::size_t definitions = 0;  // table_.size() when expanded
    OperandNames names;
  };
  std::unordered_map<std::string, Known> known_;
  std::set<std::string, std::less<>> consulted_;
};

}  // namespace cubby
