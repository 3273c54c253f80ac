// `cubby`: the admin tool of a cubby store. Commands live in cli/<command>.cpp (see cli.hpp).
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "cli.hpp"
#include "cubby/error.hpp"
#include "cubby/version.hpp"

namespace {

void report(const std::string& message) {
  std::cerr << "cubby: " << message << (message.empty() || message.back() != '\n' ? "\n" : "");
}

// The command CLI11 was parsing when it failed ("cubby gc"), for the hint of a usage error.
std::string failing_command(const CLI::App& app) {
  std::string name = "cubby";
  for (const CLI::App* command = &app; command != nullptr;) {
    const auto parsed = command->get_subcommands();
    command = parsed.empty() ? nullptr : parsed.front();
    if (command != nullptr) name += " " + command->get_name();
  }
  return name;
}

// Parses one command line and runs the chosen command; failures are exceptions (see main).
// For `cubby compile k.cu -std=c++17`: the NVRTC option it was given as, as --option takes it
// ("" for any other error).
std::string nvrtc_option_hint(CLI::App& app, const CLI::ParseError& error) {
  if (dynamic_cast<const CLI::ExtrasError*>(&error) == nullptr) return {};
  for (const CLI::App* command : app.get_subcommands()) {  // the ones given
    if (command->get_name() != "compile") continue;
    for (const std::string& word : command->remaining()) {
      if (word.size() > 1 && word.front() == '-') {
        return "; NVRTC options go through --option: `--option=" + word + "`";
      }
    }
  }
  return {};
}

int run_line(std::vector<std::string> args) {
  using namespace cubby::cli;
  CLI::App app{"cubby: a persistent, shared CUBIN cache for kernels compiled with NVRTC.", "cubby"};
  Common common;
  const std::vector<Command> commands = register_commands(app, common);
  std::string generate;
  add_option(app, "--generate", generate, "Internal: print the man page or the bash completion")
      ->check(CLI::IsMember({"man", "bash-completion"}))
      ->group("");

  std::vector<char*> words;
  for (std::string& arg : args) words.push_back(arg.data());
  const int count = static_cast<int>(words.size());
  check_command_word(app, count, words.data());  // an unknown or missing command: usage failure
  try {
    app.parse(count, words.data());
  } catch (const CLI::Success& done) {  // --help, --version
    return app.exit(done);
  } catch (const CLI::ParseError& error) {
    const std::string command = failing_command(app);
    fail_with(kExitUsage, std::string(error.what()) + nvrtc_option_hint(app, error) + "; run `" +
                              command + " --help` for its options");
  }
  if (generate == "man") return write_man_page(app, std::cout);
  if (generate == "bash-completion") return write_bash_completion(app, std::cout);
  for (const Command& command : commands) {
    if (command.app->parsed()) return command.run();
  }
  report("no command given; run `cubby --help` for the list of commands");
  return kExitUsage;
}

// Runs the command lines argv stands for (`cubby -sz`: stats, then stats --zero) in order,
// stopping at the first that does not succeed.
int run(int argc, char** argv) {
  int status = cubby::cli::kExitOk;
  for (std::vector<std::string>& line : cubby::cli::expand_ccache_options(argc, argv)) {
    status = run_line(std::move(line));
    if (status != cubby::cli::kExitOk) break;
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cubby::cli;
  try {
    return run(argc, argv);
  } catch (const CliFailure& failure) {
    report(failure.message);
    return failure.exit_code;
  } catch (const cubby::Error& error) {
    report(error.what());
    return error.code() == cubby::Errc::invalid_argument ? kExitUsage : kExitFailed;
  } catch (const std::bad_alloc&) {
    report("out of memory; free memory and try again");
    return kExitFailed;
  } catch (const std::exception& error) {
    report(std::string("internal error: ") + error.what() +
           " (please report this at the cubby issue tracker)");
    return kExitFailed;
  } catch (...) {
    report("internal error (please report this at the cubby issue tracker)");
    return kExitFailed;
  }
}
