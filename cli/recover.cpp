// `cubby recover CUBIN [--name-expr E]...`: enumerates a CUBIN's kernels and variables (ELF
// symbol table, no GPU needed) and recovers the lowered name of each name expression.
#include "cubby/recover.hpp"

#include <iostream>
#include <memory>

#include "cli.hpp"
#include "cubby/cubin.hpp"
#include "cubby/demangle.hpp"

namespace cubby::cli {
namespace {

struct Args {
  std::string cubin;
  std::vector<std::string> expressions;
  std::string demangler = "cxa";
  bool strict = false;
};

// --demangler cxa|cufilt; usage failure for another name or a cufilt this build lacks.
Demangler parse_demangler(const std::string& name) {
  if (name == "cxa") return Demangler::cxa;
  if (name != "cufilt")
    fail_with(kExitUsage, "--demangler must be cxa or cufilt, not '" + name + "'");
  if (!cufilt_available()) {
    fail_with(kExitUsage,
              "--demangler cufilt: this cubby was built without the toolkit's libcufilt.a; "
              "use --demangler cxa");
  }
  return Demangler::cufilt;
}

// What `cubby recover` found: each expression's recovery and every symbol of the CUBIN.
struct Recovery {
  std::vector<RecoveredName> names;
  std::vector<ModuleSymbol> listed;
  std::size_t resolved = 0;
};

json names_to_json(const std::vector<RecoveredName>& names) {
  json out = json::array();
  for (const RecoveredName& name : names) {
    json item = {{"expression", name.expression}, {"resolved", name.resolved}};
    if (name.resolved) {
      item["mangled"] = name.mangled;
      item["demangled"] = name.demangled;
      item["kind"] = name.variable ? "variable" : "kernel";
      item["inexactness"] = name.inexactness;
    } else {
      item["reason"] = name.reason;
    }
    out.push_back(std::move(item));
  }
  return out;
}

void print_recovery_json(const std::string& file, Demangler demangler, const Recovery& found) {
  json kernels = json::array();
  json variables = json::array();
  for (const ModuleSymbol& symbol : found.listed) {
    json item = {{"mangled", symbol.mangled}, {"demangled", symbol.demangled}};
    if (!symbol.note.empty()) item["note"] = symbol.note;
    if (symbol.variable) {
      item["bytes"] = symbol.size;
      variables.push_back(std::move(item));
    } else {
      kernels.push_back(std::move(item));
    }
  }
  print_json({{"file", file},
              {"demangler", demangler_name(demangler)},
              {"resolved", found.resolved},
              {"unresolved", found.names.size() - found.resolved},
              {"names", names_to_json(found.names)},
              {"kernels", std::move(kernels)},
              {"variables", std::move(variables)}});
}

void print_recovery_text(const Recovery& found) {
  if (!found.names.empty()) {
    std::cout << "names (" << found.resolved << " of " << found.names.size() << " resolved)\n";
    for (const RecoveredName& name : found.names) {
      std::cout << "  " << name.expression << "\n    -> ";
      if (name.resolved) {
        std::cout << name.mangled << (name.variable ? "  [variable]" : "  [kernel]") << '\n';
      } else {
        std::cout << "unresolved, because " << name.reason << '\n';
      }
    }
  }
  std::size_t kernel_count = 0;
  for (const ModuleSymbol& symbol : found.listed) kernel_count += symbol.variable ? 0 : 1;
  std::cout << "kernels (" << kernel_count << ")\n";
  for (const ModuleSymbol& symbol : found.listed) {
    if (symbol.variable) continue;
    std::cout << "  " << symbol.mangled << "\n    "
              << (symbol.demangled.empty() ? symbol.note : symbol.demangled) << '\n';
  }
  std::cout << "variables (" << found.listed.size() - kernel_count << ")\n";
  for (const ModuleSymbol& symbol : found.listed) {
    if (!symbol.variable) continue;
    std::cout << "  " << symbol.mangled << "  (" << format_bytes(symbol.size) << ")\n    "
              << (symbol.demangled.empty() ? symbol.note : symbol.demangled) << '\n';
  }
}

int run_recover(const Common& common, const Args& args) {
  const Demangler demangler = parse_demangler(args.demangler);
  const std::string bytes = read_input(args.cubin);
  auto symbols = read_cubin_symbols(bytes);
  if (!symbols) {
    fail_with(kExitFailed, args.cubin + " is not a readable CUBIN: " + symbols.error().message);
  }
  Recovery found;
  found.names = recover_names(*symbols, args.expressions, demangler);
  found.listed = list_module_symbols(*symbols, demangler);
  for (const RecoveredName& name : found.names) found.resolved += name.resolved ? 1 : 0;
  if (common.json) {
    print_recovery_json(args.cubin, demangler, found);
  } else {
    print_recovery_text(found);
  }
  return (args.strict && found.resolved != found.names.size()) ? kExitFailed : kExitOk;
}

}  // namespace

Command add_recover(CLI::App& app, Common& common) {
  auto args = std::make_shared<Args>();
  CLI::App* command = add_command(
      app, "recover",
      "Recover the lowered (mangled) names of name expressions from a CUBIN's symbols, and list "
      "its kernels and variables");
  add_option(*command, "CUBIN", args->cubin, "A CUBIN file (ELF), e.g. from --cubin-out")
      ->required();
  add_option(*command, "--name-expr", args->expressions, "A name expression (repeatable)")
      ->type_name("E");
  add_option(*command, "--demangler", args->demangler, "cxa (default) or cufilt (the toolkit's)")
      ->type_name("NAME");
  add_flag(*command, "--strict", args->strict, "Exit 1 when an expression stays unresolved");
  add_common(*command, common);
  return {command, [&common, args] { return run_recover(common, *args); }};
}

}  // namespace cubby::cli
