// `cubby config [KEY [VALUE]]`: the store's settings file (<store>/cubby.conf, see
// config/store_config.hpp): lists every setting with its value and where it comes from, prints one,
// sets one or (--unset) removes one. A CUBBY_* variable still wins over the file.
#include <iostream>
#include <optional>

#include "cli.hpp"
#include "config/store_config.hpp"

namespace cubby::cli {
namespace {

struct ConfigArgs {
  std::string key;
  std::optional<std::string> value;
  bool unset = false;
};

json setting_json(const EffectiveSetting& setting, const fs::path& dir) {
  json out = {{"key", setting.info->key},
              {"value", setting.value},
              {"origin", origin_text(*setting.info, setting.origin, dir)},
              {"env", setting.info->env},
              {"default", setting.info->default_value}};
  if (!setting.untrusted_because.empty()) {
    out["ignored_value"] = setting.ignored_value;
    out["ignored_because"] = setting.untrusted_because;
  }
  return out;
}

// " (the file's \"VALUE\" is ignored: <file> is owned by ...)" for a setting the file may not set.
std::string ignored_note(const EffectiveSetting& setting) {
  if (setting.untrusted_because.empty()) return {};
  return "; the file's \"" + escaped(setting.ignored_value) +
         "\" is ignored: " + setting.untrusted_because;
}

// What a max_size just set means: "1.5 GB, in powers of 1000 (kB, MB, GB), the units `cubby
// stats` shows", "5.0 GiB: a number alone is GiB, as in ccache", "unlimited".
std::string max_size_meaning(const std::string& value) {
  auto bytes = parse_max_size(value);
  if (!bytes) return bytes.error().message;
  if (*bytes >= kUnlimitedMaxSize) return "unlimited";
  const SizeUnits units = size_units_of(value);
  const bool bare = value.find_first_not_of("0123456789. ") == std::string::npos;
  return format_bytes(*bytes, units) +
         (bare ? std::string(": a number alone is GiB, as in ccache") : std::string()) +
         "; `cubby stats` shows sizes in " + units_text(units);
}

// The store's settings; usage failure (with the file's problem) when they cannot be read.
std::vector<EffectiveSetting> settings_of(const fs::path& dir) {
  auto settings = effective_settings(dir);
  if (!settings) fail_with(kExitUsage, settings.error().message);
  return std::move(settings).value();
}

int list_settings(const Common& common, const fs::path& dir) {
  const std::vector<EffectiveSetting> settings = settings_of(dir);
  if (common.json) {
    json rows = json::array();
    for (const auto& setting : settings) rows.push_back(setting_json(setting, dir));
    print_json(
        {{"dir", dir.string()}, {"file", store_config_path(dir).string()}, {"settings", rows}});
    return kExitOk;
  }
  std::cout << "# " << store_config_path(dir).string()
            << " (a CUBBY_* variable wins over the file)\n";
  for (const auto& setting : settings) {
    std::string line = std::string(setting.info->key) + " = " + setting.value;
    line.resize(std::max<std::size_t>(line.size(), 36), ' ');
    std::cout << line << "  # " << origin_text(*setting.info, setting.origin, dir)
              << ignored_note(setting) << '\n';
  }
  return kExitOk;
}

int run_config(const Common& common, const ConfigArgs& args) {
  // Not load_config: a value the file holds that the library refuses must stay fixable here.
  const fs::path dir = common.dir.empty() ? default_store_dir() : fs::path(common.dir);
  if (args.key.empty()) {
    if (args.unset) fail_with(kExitUsage, "--unset needs a KEY; see `cubby config` for the keys");
    return list_settings(common, dir);
  }
  if (args.value && args.unset) fail_with(kExitUsage, "give a VALUE or --unset, not both");
  // Writes the change; an unknown key fails here too, with the list of keys.
  if (args.value || args.unset || find_store_setting(args.key) == nullptr) {
    auto written = write_store_setting(dir, args.key, args.unset ? std::nullopt : args.value);
    if (!written) {
      fail_with(written.error().code == Errc::invalid_argument ? kExitUsage : kExitFailed,
                written.error().message);
    }
  }
  const std::vector<EffectiveSetting> settings = settings_of(dir);
  const auto found = std::find_if(settings.begin(), settings.end(), [&](const auto& setting) {
    return setting.info->key == args.key;
  });
  if (common.json) {
    print_json(setting_json(*found, dir));
  } else if (args.value && found->info->key == "max_size") {
    std::cout << found->value << " (" << max_size_meaning(found->value) << ")\n";
  } else {
    std::cout << found->value << '\n';
  }
  if ((args.value || args.unset) && found->origin == SettingOrigin::environment) {
    std::cerr << "cubby: note: " << found->info->env
              << " is set in this environment and wins over the file; unset it to use the file's "
                 "value\n";
  }
  return kExitOk;
}

}  // namespace

Command add_config(CLI::App& app, Common& common) {
  auto args = std::make_shared<ConfigArgs>();
  std::string keys;
  for (const StoreSettingInfo& setting : kStoreSettings) {
    keys +=
        "\n  " + std::string(setting.key) + " (" + std::string(setting.env) + ", default " +
        (setting.default_value.empty() ? std::string("none") : std::string(setting.default_value)) +
        "): " + std::string(setting.what);
  }
  CLI::App* command =
      add_command(app, "config", "Show or change the store's settings (<store>/cubby.conf)");
  command->footer("Settings (a CUBBY_* variable wins over the file, the file over the default):" +
                  keys);
  add_option(*command, "KEY", args->key, "Setting to show, set or unset (none: list them all)");
  add_option(*command, "VALUE", args->value, "New value, written to <store>/cubby.conf");
  add_flag(*command, "--unset", args->unset, "Remove KEY from the file (its default applies)");
  add_common(*command, common);
  return {command, [&common, args] { return run_config(common, *args); }};
}

}  // namespace cubby::cli
