// The command registry of `cubby`: the one list of commands (help, the man page and the bash
// completion follow it), the global options, and the check of the command word.
#include <algorithm>
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

std::string command_list(const CLI::App& app) {
  std::string list;
  for (const CLI::App* command : visible_commands(app)) {
    list += (list.empty() ? "" : ", ") + command->get_name();
  }
  return list;
}

}  // namespace

std::vector<Command> register_commands(CLI::App& app, Common& common) {
  app.set_version_flag("--version", std::string("cubby ") + kVersion);
  app.require_subcommand(0, 1);  // none only with --help, --version (see check_command_word)
  add_common(app, common);       // --dir and --json before the command as well as after it
  return {
      add_compile(app, common), add_stats(app, common),   add_ls(app, common),
      add_show(app, common),    add_config(app, common),  add_clear(app, common),
      add_verify(app, common),  add_gc(app, common),      add_export(app, common),
      add_import(app, common),  add_recover(app, common), add_warm(app, common),
  };
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
    if (arg == "-h" || arg == "--help" || arg == "--version" || arg.starts_with("--generate")) {
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
