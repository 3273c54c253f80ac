// `cubby clear [--namespace NS]`: removes every entry of the store, or those of one namespace
// ("programs": compiled programs; a blob namespace such as "cupy": CuPy's kernels).
#include <iostream>

#include "cli.hpp"

namespace cubby::cli {
namespace {

struct ClearArgs {
  std::string ns;
};

int run_clear(const Common& common, const ClearArgs& args) {
  const Config config = load_config(common);
  Store store(config.dir);
  ClearedNamespace cleared;
  if (args.ns.empty()) {
    auto removed = store.clear();  // and its size estimate
    if (!removed) fail_with(kExitFailed, removed.error().message);
    cleared.removed = *removed;
  } else {
    auto done = store.clear_namespace(args.ns);
    if (!done) fail_with(kExitFailed, done.error().message);
    cleared = std::move(done).value();
    if (args.ns != kProgramsNamespace && !cleared.namespaces.contains(args.ns)) {
      std::string known(kProgramsNamespace);
      for (const std::string& ns : cleared.namespaces) {
        if (ns != kProgramsNamespace) known += ", " + ns;
      }
      fail_with(kExitFailed, "no entry of namespace '" + args.ns + "' is in " +
                                 config.dir.string() + "; its namespaces are: " + known +
                                 " (`cubby ls` shows each entry's)");
    }
  }
  if (common.json) {
    json out = {{"dir", config.dir.string()}, {"removed", cleared.removed}};
    if (!args.ns.empty()) {
      out["namespace"] = args.ns;
      out["bytes"] = cleared.bytes;
      out["unreadable"] = cleared.unreadable;
    }
    print_json(out);
    return kExitOk;
  }
  std::cout << "removed " << cleared.removed << (cleared.removed == 1 ? " entry" : " entries");
  if (!args.ns.empty()) {
    std::cout << " of namespace " << args.ns << " (" << format_bytes(cleared.bytes) << ")";
  }
  std::cout << " from " << config.dir.string() << '\n';
  if (cleared.unreadable > 0) {
    std::cout << "kept " << cleared.unreadable
              << " entries that do not decode (`cubby verify --fix` removes the bad ones)\n";
  }
  return kExitOk;
}

}  // namespace

Command add_clear(CLI::App& app, Common& common) {
  auto args = std::make_shared<ClearArgs>();
  CLI::App* command =
      add_command(app, "clear", "Remove every entry of the store, or of one namespace");
  add_option(*command, "--namespace", args->ns,
             "Only this namespace: \"programs\" (compiled programs) or a blob namespace "
             "such as \"cupy\" (CuPy's kernels); `cubby ls` shows each entry's")
      ->type_name("NS")
      // An empty namespace must not read as "no --namespace" (which clears everything).
      ->check(CLI::Validator(
          [](const std::string& ns) -> std::string {
            return ns.empty() ? "an empty namespace names no entries: give one (\"programs\", "
                                "\"cupy\", ...; `cubby ls` shows them), or leave --namespace out "
                                "to clear every entry"
                              : "";
          },
          "NS"));
  add_common(*command, common);
  return {command, [&common, args] { return run_clear(common, *args); }};
}

}  // namespace cubby::cli
