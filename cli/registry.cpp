// The command registry of `cubby`: the one list of commands (help, the man page and the bash
// completion follow it), the global options, and the check of the command word.
#include <algorithm>
#include <optional>
#include <string_view>

#include "cli.hpp"
#include "cubby/version.hpp"

namespace cubby::cli {
namespace {

// Edits (insertions, deletions, substitutions) that turn `a` into `b`.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// ccache's option for an action, and the cubby command line it stands for (`cubby -M 1G` is
// `cubby config max_size 1G`). The one list: the expansion, `cubby --help`'s footer and the man
// page follow it.
struct CcacheOption {
  std::string_view short_name;            // "-s", or empty
  std::string_view long_name;             // "--show-stats"
  std::string_view value;                 // "SIZE" for an option that takes one, else empty
  std::vector<std::string_view> command;  // what it expands to; the value goes after it
};

const std::vector<CcacheOption>& ccache_options() {
  static const std::vector<CcacheOption> options = {
      {"-s", "--show-stats", "", {"stats"}},
      {"-z", "--zero-stats", "", {"stats", "--zero"}},
      {"-C", "--clear", "", {"clear"}},
      {"-p", "--show-config", "", {"config"}},
      {"-M", "--max-size", "SIZE", {"config", "max_size"}},
      {"", "--evict-older-than", "AGE", {"gc", "--older-than"}},
  };
  return options;
}

std::string command_list(const CLI::App& app) {
  std::string list;
  for (const CLI::App* command : visible_commands(app)) {
    list += (list.empty() ? "" : ", ") + command->get_name();
  }
  return list;
}

}  // namespace

std::vector<Command> register_commands(CLI::App& app, Common& common) {
  app.set_version_flag("-V,--version", std::string("cubby ") + kVersion);
  app.footer(ccache_options_text());
  app.require_subcommand(0, 1);  // none only with --help, --version (see check_command_word)
  add_common(app, common);       // --dir and --json before the command as well as after it
  return {
      add_compile(app, common), add_stats(app, common),   add_ls(app, common),
      add_show(app, common),    add_config(app, common),  add_clear(app, common),
      add_verify(app, common),  add_gc(app, common),      add_export(app, common),
      add_import(app, common),  add_recover(app, common), add_warm(app, common),
  };
}

std::string ccache_options_text() {
  std::string text = "For ccache users (each is the command after `=`):";
  for (const CcacheOption& option : ccache_options()) {
    std::string names(option.short_name);
    names += (names.empty() ? "" : ", ") + std::string(option.long_name);
    if (!option.value.empty()) names += " " + std::string(option.value);
    std::string command = "cubby";
    for (const std::string_view word : option.command) command += " " + std::string(word);
    if (!option.value.empty()) command += " " + std::string(option.value);
    names.resize(std::max<std::size_t>(names.size(), 28), ' ');
    text += "\n  " + names + "= " + command;
  }
  text += "\n  -V, --version               = cubby --version";
  return text;
}

std::vector<std::string> expand_ccache_options(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string arg = args[i];
    if (arg == "--dir") {
      ++i;  // its value
      continue;
    }
    if (arg == "--json" || arg.starts_with("--dir=")) continue;
    for (const CcacheOption& option : ccache_options()) {
      // The option alone, or with its value attached: -M1G, --max-size=1G.
      const std::string long_with_value = std::string(option.long_name) + "=";
      std::optional<std::string> value;
      if (!option.value.empty() && arg.starts_with(long_with_value)) {
        value = arg.substr(long_with_value.size());
      } else if (!option.value.empty() && !option.short_name.empty() &&
                 arg.size() > option.short_name.size() && arg.starts_with(option.short_name)) {
        value = arg.substr(option.short_name.size());
      } else if (arg != option.long_name && arg != option.short_name) {
        continue;
      }
      if (!option.value.empty() && !value && i + 1 >= args.size()) {
        fail_with(
            kExitUsage,
            std::string(option.long_name) + " needs " + std::string(option.value) + " (e.g. " +
                std::string(option.short_name.empty() ? option.long_name : option.short_name) +
                (option.value == "SIZE" ? " 5G; 0: unlimited)" : " 7d)"));
      }
      std::vector<std::string> words(option.command.begin(), option.command.end());
      if (value) words.push_back(*value);
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i));
      args.insert(args.begin() + static_cast<std::ptrdiff_t>(i), words.begin(), words.end());
      return args;
    }
    return args;  // the first word that is not a global option: a command, or for CLI11 to judge
  }
  return args;
}

std::vector<const CLI::App*> visible_commands(const CLI::App& app) {
  std::vector<const CLI::App*> commands;
  for (const CLI::App* command : app.get_subcommands({})) {
    if (!command->get_group().empty()) commands.push_back(command);
  }
  return commands;
}

void check_command_word(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help" || arg == "--version" || arg == "-V" ||
        arg.starts_with("--generate")) {
      return;  // CLI11 answers these without a command
    }
    if (arg == "--dir") {
      ++i;  // its value
      continue;
    }
    if (arg.starts_with("-")) continue;  // options: CLI11 judges them
    for (const CLI::App* command : visible_commands(app)) {
      if (command->get_name() == arg) return;
    }
    std::string hint;
    for (const CLI::App* command : visible_commands(app)) {
      const std::string& name = command->get_name();
      if (edit_distance(arg, name) <= 2 || (arg.size() >= 2 && name.starts_with(arg))) {
        hint = " (did you mean `cubby " + name + "`?)";
        break;
      }
    }
    fail_with(kExitUsage, "unknown command '" + std::string(arg) + "'" + hint +
                              "; the commands are: " + command_list(app) +
                              " (`cubby COMMAND --help` describes one)");
  }
  fail_with(kExitUsage, "no command given; the commands are: " + command_list(app) +
                            " (`cubby --help` describes them)");
}

}  // namespace cubby::cli
