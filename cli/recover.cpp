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

int run_recover(const Common& common, const Args& args) {
  Demangler demangler = Demangler::cxa;
  if (args.demangler == "cufilt") {
    if (!cufilt_available()) {
      fail_with(kExitUsage,
                "--demangler cufilt: this cubby was built without the toolkit's libcufilt.a; "
                "use --demangler cxa");
    }
    demangler = Demangler::cufilt;
  } else if (args.demangler != "cxa") {
    fail_with(kExitUsage, "--demangler must be cxa or cufilt, not '" + args.demangler + "'");
  }
  const std::string bytes = read_input(args.cubin);
  auto symbols = read_cubin_symbols(bytes);
  if (!symbols) {
    fail_with(kExitFailed, args.cubin + " is not a readable CUBIN: " + symbols.error().message);
  }
  const std::vector<RecoveredName> names = recover_names(*symbols, args.expressions, demangler);
  const std::vector<ModuleSymbol> listed = list_module_symbols(*symbols, demangler);
  std::size_t resolved = 0;
  for (const RecoveredName& name : names) resolved += name.resolved ? 1 : 0;
  const int code = (args.strict && resolved != names.size()) ? kExitFailed : kExitOk;

  if (common.json) {
    json out_names = json::array();
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
      out_names.push_back(std::move(item));
    }
    json kernels = json::array();
    json variables = json::array();
    for (const ModuleSymbol& symbol : listed) {
      json item = {{"mangled", symbol.mangled}, {"demangled", symbol.demangled}};
      if (!symbol.note.empty()) item["note"] = symbol.note;
      if (symbol.variable) {
        item["bytes"] = symbol.size;
        variables.push_back(std::move(item));
      } else {
        kernels.push_back(std::move(item));
      }
    }
    print_json({{"file", args.cubin},
                {"demangler", demangler_name(demangler)},
                {"resolved", resolved},
                {"unresolved", names.size() - resolved},
                {"names", std::move(out_names)},
                {"kernels", std::move(kernels)},
                {"variables", std::move(variables)}});
    return code;
  }
  if (!names.empty()) {
    std::cout << "names (" << resolved << " of " << names.size() << " resolved)\n";
    for (const RecoveredName& name : names) {
      std::cout << "  " << name.expression << "\n    -> ";
      if (name.resolved) {
        std::cout << name.mangled << (name.variable ? "  [variable]" : "  [kernel]") << '\n';
      } else {
        std::cout << "unresolved, because " << name.reason << '\n';
      }
    }
  }
  std::size_t kernel_count = 0;
  for (const ModuleSymbol& symbol : listed) kernel_count += symbol.variable ? 0 : 1;
  std::cout << "kernels (" << kernel_count << ")\n";
  for (const ModuleSymbol& symbol : listed) {
    if (symbol.variable) continue;
    std::cout << "  " << symbol.mangled << "\n    "
              << (symbol.demangled.empty() ? symbol.note : symbol.demangled) << '\n';
  }
  std::cout << "variables (" << listed.size() - kernel_count << ")\n";
  for (const ModuleSymbol& symbol : listed) {
    if (!symbol.variable) continue;
    std::cout << "  " << symbol.mangled << "  (" << format_bytes(symbol.size) << ")\n    "
              << (symbol.demangled.empty() ? symbol.note : symbol.demangled) << '\n';
  }
  return code;
}

}  // namespace

Command add_recover(CLI::App& app, Common& common) {
  auto args = std::make_shared<Args>();
  CLI::App* command = app.add_subcommand(
      "recover",
      "Recover the lowered (mangled) names of name expressions from a CUBIN's symbols, and list "
      "its kernels and variables");
  command->add_option("CUBIN", args->cubin, "A CUBIN file (ELF), e.g. from --cubin-out")
      ->required();
  command->add_option("--name-expr", args->expressions, "A name expression (repeatable)")
      ->type_name("E");
  command->add_option("--demangler", args->demangler, "cxa (default) or cufilt (the toolkit's)")
      ->type_name("NAME");
  command->add_flag("--strict", args->strict, "Exit 1 when an expression stays unresolved");
  add_common(*command, common);
  return {command, [&common, args] { return run_recover(common, *args); }};
}

}  // namespace cubby::cli
