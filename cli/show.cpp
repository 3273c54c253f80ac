// `cubby show`: decodes one entry; --cubin-out writes its payload.
#include <iostream>
#include <optional>

#include "cli.hpp"
#include "cubby/key.hpp"

namespace cubby::cli {
namespace {

int run_show(const Common& common, const std::string& key_text, const std::string& cubin_out) {
  const Config config = load_config(common);
  const Store store(config.dir);
  const std::optional<Key> key = resolve_key(store, key_text);
  auto bytes = store.peek(*key);  // refuses a link, FIFO, device or huge file at once (no hang)
  if (!bytes) {
    fail_with(kExitFailed,
              bytes.error().code == Errc::corrupt
                  ? bytes.error().message + "; `cubby verify --fix` (or `cubby gc`) removes it"
                  : bytes.error().message);
  }
  if (!bytes->has_value()) {
    fail_with(kExitFailed,
              "no entry " + key->hex() + " in " + config.dir.string() + " (see `cubby ls`)");
  }
  auto entry = decode_entry(**bytes, *key);
  if (!entry && entry.error().code == Errc::not_found) {
    fail_with(kExitFailed, "entry " + key->hex() + " in " + config.dir.string() +
                               " cannot be shown by this cubby: " + entry.error().message);
  }
  if (!entry) {
    fail_with(kExitFailed, "entry " + key->hex() + " in " + config.dir.string() + " is corrupt (" +
                               entry.error().message +
                               "); remove it with `cubby verify --fix` (or every entry with "
                               "`cubby clear`); it is recompiled on next use");
  }
  if (!cubin_out.empty()) write_output(cubin_out, entry->payload);

  if (common.json) {
    json out = {{"key", key->hex()},
                {"path", store.path_of(*key).string()},
                {"bytes", (*bytes)->size()},
                {"kind", payload_kind_name(entry->kind)},
                {"payload_bytes", entry->payload.size()},
                {"created", format_unix_ms(entry->created_ms)},
                {"created_ms", entry->created_ms},
                {"compile_ms", rounded_ms(compile_ms_of(*entry))},
                {"options", entry->options},
                {"log", entry->log},
                {"lowered_names", names_json(*entry)}};
    if (!cubin_out.empty()) out["cubin_out"] = cubin_out;
    print_json(out);
    return kExitOk;
  }
  std::cout << "key      " << key->hex() << '\n';
  std::cout << "path     " << store.path_of(*key).string() << '\n';
  std::cout << "payload  " << payload_kind_name(entry->kind) << ", "
            << format_bytes(entry->payload.size()) << '\n';
  std::cout << "created  " << format_unix_ms(entry->created_ms) << '\n';
  std::cout << "compile  " << format_ms(compile_ms_of(*entry)) << '\n';
  std::cout << "options ";
  if (entry->options.empty()) std::cout << " (none)";
  for (const auto& option : entry->options) std::cout << ' ' << option;
  std::cout << '\n';
  std::cout << "names    " << entry->lowered_names.size() << '\n';
  for (const auto& [expression, lowered] : entry->lowered_names) {
    std::cout << "  " << expression << " -> " << lowered << '\n';
  }
  if (entry->log.empty()) {
    std::cout << "log      (empty)\n";
  } else {
    std::cout << "log\n" << entry->log << (entry->log.back() == '\n' ? "" : "\n");
  }
  if (!cubin_out.empty()) std::cout << "wrote    " << cubin_out << '\n';
  return kExitOk;
}

}  // namespace

Command add_show(CLI::App& app, Common& common) {
  struct Args {
    std::string key;
    std::string cubin_out;
  };
  auto args = std::make_shared<Args>();
  CLI::App* command = add_command(app, "show", "Decode one entry");
  add_option(*command, "KEY", args->key,
             "Entry key: 32 hex digits, or a unique prefix of at least " +
                 std::to_string(kMinKeyPrefix) + " (see `cubby ls`)")
      ->required();
  add_option(*command, "--cubin-out", args->cubin_out, "Write the payload to FILE")
      ->type_name("FILE");
  add_common(*command, common);
  return {command, [&common, args] { return run_show(common, args->key, args->cubin_out); }};
}

}  // namespace cubby::cli
