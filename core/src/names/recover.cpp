// Name recovery and entry cross-checks over enumerated symbols (see recover.hpp).
#include "cubby/recover.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "names/mangled_name.hpp"
#include "names/name_match.hpp"

namespace cubby {
namespace {

// An identifier an expression ends with, and the searcher for its Itanium source-name
// `<length><base>`.
struct Wanted {
  std::string base;
  std::string source_name;  // "<length><base>"
};

// One recovery: the expressions parsed first, then the module's symbols offered in order
// (kernels sorted, then variables sorted), then every expression matched.
class Recovery {
 public:
  Recovery(const std::vector<std::string>& expressions, Demangler demangler, RecoveredText text)
      : expressions_(expressions), demangler_(demangler), text_(text), out_(expressions.size()) {
    parsed_.reserve(expressions.size());
    for (std::size_t i = 0; i < expressions.size(); ++i) {
      out_[i].expression = expressions[i];
      parsed_.push_back(parse_name_expression(expressions[i]));
      if (!parsed_.back().ok()) continue;
      const std::string& base = parsed_.back()->name.parts.back().name;
      if (std::none_of(wanted_.begin(), wanted_.end(),
                       [&](const Wanted& w) { return w.base == base; })) {
        wanted_.push_back(Wanted{base, std::to_string(base.size()) + base});
      }
    }
    searchers_.reserve(wanted_.size());
    for (const Wanted& w : wanted_) {
      searchers_.emplace_back(w.source_name.begin(), w.source_name.end());
    }
  }

  // Whether `mangled` can carry an identifier some expression ends with: as the source-name
  // `<length><base>` of an Itanium name, or as the whole of an unmangled (extern "C") name.
  bool wants(std::string_view mangled) const {
    const bool itanium = mangled.size() >= 2 && mangled[0] == '_' && mangled[1] == 'Z';
    for (std::size_t i = 0; i < wanted_.size(); ++i) {
      if (!itanium) {
        if (mangled == wanted_[i].base) return true;
      } else if (mangled.size() >= wanted_[i].source_name.size() &&
                 std::search(mangled.begin(), mangled.end(), searchers_[i]) != mangled.end()) {
        return true;
      }
    }
    return false;
  }

  // Adds `mangled`, which wants() accepted, as a candidate.
  void consider(std::string_view mangled, bool variable) {
    NameCandidate candidate;
    // Fast path: the mangled name parsed directly (equal to the cxa text's parse; see
    // mangled_name.hpp); its demangled text is made only where an answer shows it.
    bool parsed_directly = false;
    if (demangler_ == Demangler::cxa) {
      auto direct = parse_mangled_name(mangled);
      if (direct.ok()) {
        candidate.parsed = std::move(direct.value());
        parsed_directly = true;
      }
    }
    if (!parsed_directly) {
      auto text = demangle(mangled, demangler_);
      if (!text.ok()) {
        ++undecodable_;
        return;
      }
      auto name = parse_demangled_name(*text);
      if (!name.ok()) {
        ++undecodable_;
        return;
      }
      candidate.demangled = std::move(text.value());
      candidate.parsed = std::move(name.value());
    }
    candidate.symbol = std::string(mangled);
    candidate.variable = variable;
    const std::string& key = candidate.parsed.name.parts.back().name;
    auto group = groups_.find(key);
    if (group == groups_.end()) group = groups_.emplace(key, std::vector<NameCandidate>{}).first;
    group->second.push_back(std::move(candidate));
  }

  std::vector<RecoveredName> finish() {
    std::vector<NameCandidate> none;
    for (std::size_t i = 0; i < expressions_.size(); ++i) {
      RecoveredName& answer = out_[i];
      if (!parsed_[i].ok()) {
        answer.reason = parsed_[i].error().message;
        continue;
      }
      const auto group = groups_.find(parsed_[i]->name.parts.back().name);
      std::vector<NameCandidate>& candidates = group == groups_.end() ? none : group->second;
      NameMatch match = match_name(*parsed_[i], candidates);
      if (!match.resolved) {
        // The reason quotes candidates' text: make it, and ask again (the answer is the same).
        for (NameCandidate& candidate : candidates) text_of(candidate);
        match = match_name(*parsed_[i], candidates);
      }
      if (!match.resolved) {
        answer.reason = match.reason;
        if (undecodable_ > 0) {
          answer.reason.append("; ")
              .append(std::to_string(undecodable_))
              .append(" symbol(s) of a similar name could not be demangled or parsed");
        }
        continue;
      }
      NameCandidate& chosen = candidates[match.candidate];
      answer.resolved = true;
      answer.mangled = chosen.symbol;
      if (text_ == RecoveredText::demangled) answer.demangled = text_of(chosen);
      answer.variable = chosen.variable;
      answer.inexactness = match.inexactness;
    }
    return std::move(out_);
  }

 private:
  // The demangled text of a candidate parsed on the fast path, made on first use.
  const std::string& text_of(NameCandidate& candidate) const {
    if (candidate.demangled.empty()) {
      auto text = demangle(candidate.symbol, demangler_);
      candidate.demangled = text.ok() ? std::move(text.value()) : candidate.symbol;
    }
    return candidate.demangled;
  }

  const std::vector<std::string>& expressions_;
  Demangler demangler_;
  RecoveredText text_;
  std::vector<RecoveredName> out_;
  std::vector<Result<ParsedName>> parsed_;
  std::vector<Wanted> wanted_;
  std::vector<std::boyer_moore_horspool_searcher<std::string::const_iterator>> searchers_;
  // Candidates grouped by the last component of their name.
  std::map<std::string, std::vector<NameCandidate>, std::less<>> groups_;
  std::size_t undecodable_ = 0;
};

}  // namespace

std::vector<ModuleSymbol> list_module_symbols(const CubinSymbols& symbols, Demangler demangler) {
  std::vector<ModuleSymbol> out;
  out.reserve(symbols.kernels.size() + symbols.variables.size());
  auto add = [&](const std::string& mangled, bool variable, std::uint64_t size) {
    ModuleSymbol symbol;
    symbol.mangled = mangled;
    symbol.variable = variable;
    symbol.size = size;
    auto text = demangle(mangled, demangler);
    if (text.ok()) {
      symbol.demangled = std::move(text.value());
    } else {
      symbol.note = text.error().message;
    }
    out.push_back(std::move(symbol));
  };
  for (const std::string& kernel : symbols.kernels) add(kernel, false, 0);
  for (const CubinVariable& variable : symbols.variables) add(variable.name, true, variable.size);
  return out;
}

std::vector<RecoveredName> recover_names(const CubinSymbols& symbols,
                                         const std::vector<std::string>& expressions,
                                         Demangler demangler, RecoveredText text) {
  Recovery recovery(expressions, demangler, text);
  for (const std::string& kernel : symbols.kernels) {
    if (recovery.wants(kernel)) recovery.consider(kernel, false);
  }
  for (const CubinVariable& variable : symbols.variables) {
    if (recovery.wants(variable.name)) recovery.consider(variable.name, true);
  }
  return recovery.finish();
}

Result<std::vector<RecoveredName>> recover_names(std::string_view cubin,
                                                 const std::vector<std::string>& expressions,
                                                 Demangler demangler, RecoveredText text) {
  auto refs = read_cubin_symbol_refs(cubin);
  if (!refs.ok()) return std::move(refs).error();
  // The symbols read_cubin_symbols would give, in its order (kernels sorted and unique, then
  // variables sorted by name, the first of equal names kept), less those no expression can
  // name: filtering first leaves the order and the duplicates removed the same, and copies
  // and sorts only the few candidates.
  Recovery recovery(expressions, demangler, text);
  std::vector<std::string_view> kernels;
  std::vector<std::string_view> variables;
  for (const CubinSymbolRef& ref : *refs) {
    if (!recovery.wants(ref.name)) continue;
    (ref.variable ? variables : kernels).push_back(ref.name);
  }
  std::sort(kernels.begin(), kernels.end());
  kernels.erase(std::unique(kernels.begin(), kernels.end()), kernels.end());
  std::stable_sort(variables.begin(), variables.end());
  variables.erase(std::unique(variables.begin(), variables.end()), variables.end());
  for (std::string_view kernel : kernels) recovery.consider(kernel, false);
  for (std::string_view variable : variables) recovery.consider(variable, true);
  return recovery.finish();
}

Result<std::vector<RecoveredName>> recover_entry_names(
    Entry& entry, const std::vector<std::string>& expressions) {
  if (entry.kind != PayloadKind::cubin) {
    return fail(Errc::invalid_argument, "cannot recover names from a ",
                payload_kind_name(entry.kind),
                " payload: only a CUBIN has a symbol table to enumerate; compile for sm_XX");
  }
  std::vector<std::string> missing;
  for (const std::string& expression : expressions) {
    if (entry.lowered_names.count(expression) == 0) missing.push_back(expression);
  }
  auto recovered = recover_names(std::string_view(entry.payload), missing, Demangler::cxa,
                                 RecoveredText::mangled_only);
  if (!recovered.ok()) return recovered;
  for (const RecoveredName& name : *recovered) {
    if (name.resolved) entry.lowered_names.emplace(name.expression, name.mangled);
  }
  return recovered;
}

const char* name_check_status_name(NameCheck::Status status) noexcept {
  switch (status) {
    case NameCheck::Status::ok:
      return "ok";
    case NameCheck::Status::unverified:
      return "unverified";
    case NameCheck::Status::missing:
      return "missing";
    case NameCheck::Status::mismatch:
      return "mismatch";
  }
  return "unknown";
}

bool EntryNameReport::ok() const {
  return std::none_of(checks.begin(), checks.end(), [](const NameCheck& check) {
    return check.status == NameCheck::Status::missing ||
           check.status == NameCheck::Status::mismatch;
  });
}

std::string EntryNameReport::problems() const {
  std::string out;
  for (const NameCheck& check : checks) {
    if (check.status != NameCheck::Status::missing && check.status != NameCheck::Status::mismatch) {
      continue;
    }
    if (!out.empty()) out.append(" ");
    out.append(check.detail);
  }
  return out;
}

Result<EntryNameReport> check_entry_names(const Entry& entry) {
  EntryNameReport report;
  if (entry.kind != PayloadKind::cubin) return report;
  auto symbols = read_cubin_symbols(entry.payload);
  if (!symbols.ok()) {
    return fail(Errc::corrupt, "the entry's CUBIN cannot be read (", symbols.error().message, ")");
  }
  report.kernels = symbols->kernels.size();
  report.variables = symbols->variables.size();
  std::vector<std::string> expressions;
  expressions.reserve(entry.lowered_names.size());
  for (const auto& [expression, lowered] : entry.lowered_names) expressions.push_back(expression);
  const std::vector<RecoveredName> recovered =
      recover_names(*symbols, expressions, Demangler::cxa, RecoveredText::mangled_only);
  std::size_t i = 0;
  for (const auto& [expression, lowered] : entry.lowered_names) {
    const RecoveredName& answer = recovered[i++];
    NameCheck check;
    check.expression = expression;
    check.stored = lowered;
    if (!symbols->has_kernel(lowered) && !symbols->has_variable(lowered)) {
      check.status = NameCheck::Status::missing;
      check.detail = "`" + expression + "` is stored as `" + lowered +
                     "`, which is no kernel or variable of the entry's CUBIN.";
    } else if (!answer.resolved) {
      check.status = NameCheck::Status::unverified;
      check.detail = answer.reason;
    } else if (answer.mangled != lowered) {
      check.status = NameCheck::Status::mismatch;
      auto text = demangle(answer.mangled);
      check.detail = "`" + expression + "` is stored as `" + lowered +
                     "`, but enumeration of the CUBIN resolves it to `" + answer.mangled + "`" +
                     (text.ok() ? " (" + *text + ")." : ".");
    }
    report.checks.push_back(std::move(check));
  }
  return report;
}

}  // namespace cubby
