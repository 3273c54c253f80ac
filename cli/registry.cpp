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
    // Appended piece by piece: GCC 12's -Wrestrict misreads " " + std::string at -O3.
    if (!names.empty()) names += ", ";
    names += option.long_name;
    if (!option.value.empty()) names.append(" ").append(option.value);
    std::string command = "cubby";
    for (const std::string_view word : option.command) command.append(" ").append(word);
    if (!option.value.empty()) command.append(" ").append(option.value);
    names.resize(std::max<std::size_t>(names.size(), 28), ' ');
    text += "\n  " + names + "= " + command;
  }
  text += "\n  -V, --version               = cubby --version";
  text +=
      "\nAs in ccache: short ones bundle and run in order (-sz: show, then zero); a SIZE without"
      "\na unit is GiB (-M 5: 5 GiB; k, M, G, T: powers of 1000; Ki, Mi, Gi, Ti: of 1024), and"
      "\nsizes are shown in the units max_size is written in; an AGE needs a unit (7d, 12h, 90s).";
  return text;
}

namespace {

// The ccache option `arg` starts with, and its value when `arg` carries one (-M1G, --max-size=1G,
// or the rest of a bundle after a value option: -sM1G); nullptr when `arg` is no ccache option.
// `rest` receives the bundled short options after the first (-sz: "z"), to expand next.
const CcacheOption* match_ccache_option(const std::string& arg, std::optional<std::string>& value,
                                        std::string& rest) {
  value.reset();
  rest.clear();
  for (const CcacheOption& option : ccache_options()) {
    const std::string long_with_value = std::string(option.long_name) + "=";
    if (arg == option.long_name) return &option;
    if (!option.value.empty() && arg.starts_with(long_with_value)) {
      value = arg.substr(long_with_value.size());
      return &option;
    }
  }
  // A short option, alone or bundled as getopt bundles them (-sz is -s -z).
  if (arg.size() < 2 || arg[0] != '-' || arg[1] == '-') return nullptr;
  for (const CcacheOption& option : ccache_options()) {
    if (option.short_name.size() != 2 || option.short_name[1] != arg[1]) continue;
    if (!option.value.empty()) {
      if (arg.size() > 2) value = arg.substr(2);
    } else {
      rest = arg.substr(2);
    }
    return &option;
  }
  return nullptr;
}

}  // namespace

std::vector<std::vector<std::string>> expand_ccache_options(int argc, char** argv) {
  const std::vector<std::string> args(argv, argv + argc);
  std::vector<std::string> global;  // --dir DIR and --json before the first ccache option
  std::size_t i = 1;
  for (; i < args.size(); ++i) {
    if (args[i] == "--dir" && i + 1 < args.size()) {
      global.insert(global.end(), {args[i], args[i + 1]});
      ++i;
    } else if (args[i] == "--json" || args[i].starts_with("--dir=")) {
      global.push_back(args[i]);
    } else {
      break;
    }
  }
  std::vector<std::vector<std::string>> lines;
  std::string pending;  // bundled short options still to expand ("z" of -sz)
  while (i < args.size() || !pending.empty()) {
    const std::string arg = pending.empty() ? args[i++] : "-" + pending;
    std::optional<std::string> value;
    std::string rest;
    const CcacheOption* option = match_ccache_option(arg, value, rest);
    if (option == nullptr) {
      if (!pending.empty()) {
        fail_with(kExitUsage, "unknown option -" + pending.substr(0, 1) + " in a bundle of " +
                                  "ccache options; " + ccache_short_options_hint());
      }
      if (lines.empty()) return {args};  // no ccache option: a command, or for CLI11 to judge
      lines.back().push_back(arg);       // an option of the command before it (-s --json)
      continue;
    }
    pending = rest;
    if (!option->value.empty() && !value) {
      if (i >= args.size()) {
        fail_with(
            kExitUsage,
            std::string(option->long_name) + " needs " + std::string(option->value) + " (e.g. " +
                std::string(option->short_name.empty() ? option->long_name : option->short_name) +
                (option->value == "SIZE" ? " 5G; 0: unlimited)" : " 7d)"));
      }
      value = args[i++];
    }
    std::vector<std::string> line{args[0]};
    line.insert(line.end(), global.begin(), global.end());
    line.insert(line.end(), option->command.begin(), option->command.end());
    if (value) line.push_back(*value);
    lines.push_back(std::move(line));
  }
  return lines.empty() ? std::vector<std::vector<std::string>>{args} : lines;
}

std::string ccache_short_options_hint() {
  std::string shorts;
  for (const CcacheOption& option : ccache_options()) {
    if (!option.short_name.empty())
      shorts += (shorts.empty() ? "" : ", ") + std::string(option.short_name);
  }
  return "ccache's short options cubby knows are " + shorts +
         " and -V (`cubby --help` lists them with the commands they stand for)";
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
    if (arg.starts_with("-")) {
      // Before the command word only the tool's own options (--dir, --json) may come: ccache's
      // were expanded into commands before this, so anything else is unknown.
      const std::string_view name = arg.substr(0, arg.find('='));
      const CLI::Option* option = app.get_option_no_throw(std::string(name));
      if (option == nullptr) {
        fail_with(kExitUsage, "unknown option '" + std::string(arg) + "'; " +
                                  ccache_short_options_hint() +
                                  "; the commands are: " + command_list(app));
      }
      if (option->get_items_expected_max() > 0 && name.size() == arg.size()) ++i;  // its value
      continue;
    }
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
