// Name recovery and entry cross-checks over enumerated symbols (see recover.hpp).
#include "cubby/recover.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cubby/mangled_name.hpp"
#include "cubby/name_match.hpp"

namespace cubby {
namespace {

// Whether `mangled` can carry the identifier `base`: as the source-name `<length><base>` of an
// Itanium name, or as the whole of an unmangled (extern "C") name.
bool may_name(std::string_view mangled, const std::string& base, const std::string& source_name) {
  if (mangled.size() < 2 || mangled[0] != '_' || mangled[1] != 'Z') return mangled == base;
  return mangled.find(source_name) != std::string_view::npos;
}

struct Wanted {
  std::string base;
  std::string source_name;  // "<length><base>"
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
                                         Demangler demangler, RecoveredText wanted_text) {
  std::vector<RecoveredName> out(expressions.size());
  std::vector<Result<ParsedName>> parsed;
  parsed.reserve(expressions.size());
  std::vector<Wanted> wanted;
  for (std::size_t i = 0; i < expressions.size(); ++i) {
    out[i].expression = expressions[i];
    parsed.push_back(parse_name_expression(expressions[i]));
    if (!parsed.back().ok()) continue;
    const std::string& base = parsed.back()->name.parts.back().name;
    if (std::none_of(wanted.begin(), wanted.end(),
                     [&](const Wanted& w) { return w.base == base; })) {
      wanted.push_back(Wanted{base, std::to_string(base.size()) + base});
    }
  }

  // Candidates grouped by the last component of their name.
  std::map<std::string, std::vector<NameCandidate>, std::less<>> groups;
  std::size_t undecodable = 0;
  auto consider = [&](const std::string& mangled, bool variable) {
    if (std::none_of(wanted.begin(), wanted.end(),
                     [&](const Wanted& w) { return may_name(mangled, w.base, w.source_name); })) {
      return;
    }
    NameCandidate candidate;
    // Fast path: the mangled name parsed directly (equal to the cxa text's parse; see
    // mangled_name.hpp); its demangled text is made only where an answer shows it.
    bool parsed_directly = false;
    if (demangler == Demangler::cxa) {
      auto direct = parse_mangled_name(mangled);
      if (direct.ok()) {
        candidate.parsed = std::move(direct.value());
        parsed_directly = true;
      }
    }
    if (!parsed_directly) {
      auto text = demangle(mangled, demangler);
      if (!text.ok()) {
        ++undecodable;
        return;
      }
      auto name = parse_demangled_name(*text);
      if (!name.ok()) {
        ++undecodable;
        return;
      }
      candidate.demangled = std::move(text.value());
      candidate.parsed = std::move(name.value());
    }
    candidate.symbol = mangled;
    candidate.variable = variable;
    const std::string key = candidate.parsed.name.parts.back().name;
    groups[key].push_back(std::move(candidate));
  };
  for (const std::string& kernel : symbols.kernels) consider(kernel, false);
  for (const CubinVariable& variable : symbols.variables) consider(variable.name, true);

  // The demangled text of a candidate parsed on the fast path, made on first use.
  auto text_of = [&](NameCandidate& candidate) -> const std::string& {
    if (candidate.demangled.empty()) {
      auto text = demangle(candidate.symbol, demangler);
      candidate.demangled = text.ok() ? std::move(text.value()) : candidate.symbol;
    }
    return candidate.demangled;
  };
  std::vector<NameCandidate> none;
  for (std::size_t i = 0; i < expressions.size(); ++i) {
    RecoveredName& answer = out[i];
    if (!parsed[i].ok()) {
      answer.reason = parsed[i].error().message;
      continue;
    }
    const auto group = groups.find(parsed[i]->name.parts.back().name);
    std::vector<NameCandidate>& candidates = group == groups.end() ? none : group->second;
    NameMatch match = match_name(*parsed[i], candidates);
    if (!match.resolved) {
      // The reason quotes candidates' text: make it, and ask again (the answer is the same).
      for (NameCandidate& candidate : candidates) text_of(candidate);
      match = match_name(*parsed[i], candidates);
    }
    if (!match.resolved) {
      answer.reason = match.reason;
      if (undecodable > 0) {
        answer.reason.append("; ")
            .append(std::to_string(undecodable))
            .append(" symbol(s) of a similar name could not be demangled or parsed");
      }
      continue;
    }
    NameCandidate& chosen = candidates[match.candidate];
    answer.resolved = true;
    answer.mangled = chosen.symbol;
    if (wanted_text == RecoveredText::demangled) answer.demangled = text_of(chosen);
    answer.variable = chosen.variable;
    answer.inexactness = match.inexactness;
  }
  return out;
}

Result<std::vector<RecoveredName>> recover_names(std::string_view cubin,
                                                 const std::vector<std::string>& expressions,
                                                 Demangler demangler, RecoveredText text) {
  auto symbols = read_cubin_symbols(cubin);
  if (!symbols.ok()) return std::move(symbols).error();
  return recover_names(*symbols, expressions, demangler, text);
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
    return fail(Errc::corrupt, "the entry's CUBIN cannot be read (", symbols.error().message,
                "); remove the entry (cubby verify --fix) so it is recompiled");
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
