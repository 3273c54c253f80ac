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

// Parses the command line and runs the chosen command; failures are exceptions (see main).
int run(int argc, char** argv) {
  using namespace cubby::cli;
  CLI::App app{"cubby: a persistent, shared CUBIN cache for kernels compiled with NVRTC.", "cubby"};
  app.set_version_flag("--version", std::string("cubby ") + cubby::kVersion);
  app.require_subcommand(1);

  Common common;
  const std::vector<Command> commands = {
      add_compile(app, common), add_stats(app, common),  add_ls(app, common),
      add_show(app, common),    add_clear(app, common),  add_verify(app, common),
      add_gc(app, common),      add_export(app, common), add_import(app, common),
      add_recover(app, common), add_warm(app, common),
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? kExitOk : kExitUsage;
  }
  for (const Command& command : commands) {
    if (command.app->parsed()) return command.run();
  }
  report("no command given; run `cubby --help` for the list of commands");
  return kExitUsage;
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
