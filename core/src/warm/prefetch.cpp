#include "cubby/prefetch.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <vector>

#include "key/scan_record.hpp"
#include "storage/local/manifests.hpp"
#include "util/process.hpp"
#include "util/spawn.hpp"
#include "warm/first_miss.hpp"

namespace cubby {
namespace {

bool executable(const std::filesystem::path& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error) && ::access(path.c_str(), X_OK) == 0;
}

// Why prefetch does not start for `config`, or nullopt when it should ("" : nothing to say).
std::optional<std::string> reason_not_to_start(const Config& config) {
  if (!config.prefetch || config.suite.empty() || config.disabled) return "";
  std::error_code error;
  if (config.remote_url.empty() &&
      !std::filesystem::exists(manifest_path(config.dir, config.suite), error)) {
    return "";  // the first run of the suite records what a later one prefetches
  }
  if (config.read_only) return "prefetch is off: the store is read-only (CUBBY_READ_ONLY)";
  return std::nullopt;
}

}  // namespace

std::filesystem::path locate_cli() {
  if (const char* cli = std::getenv("CUBBY_CLI"); cli != nullptr && *cli != '\0') {
    return executable(cli) ? std::filesystem::path(cli) : std::filesystem::path();
  }
  std::vector<std::filesystem::path> candidates;
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&locate_cli), &info) != 0 && info.dli_fname != nullptr) {
    std::error_code error;
    const auto self = std::filesystem::canonical(info.dli_fname, error);
    if (!error) {
      const auto dir = self.parent_path();
      candidates = {dir.parent_path() / "bin" / "cubby", dir / "cubby",
                    dir.parent_path() / "cli" / "cubby"};
    }
  }
#ifdef CUBBY_BUILD_CLI
  if (!std::string_view(CUBBY_BUILD_CLI).empty()) candidates.emplace_back(CUBBY_BUILD_CLI);
#endif
#ifdef CUBBY_INSTALL_BINDIR
  candidates.emplace_back(std::filesystem::path(CUBBY_INSTALL_BINDIR) / "cubby");
#endif
  if (const char* path = std::getenv("PATH")) {
    std::string_view folders(path);
    while (!folders.empty()) {
      const std::size_t colon = folders.find(':');
      const std::string_view folder = folders.substr(0, colon);
      if (!folder.empty()) candidates.push_back(std::filesystem::path(folder) / "cubby");
      folders = colon == std::string_view::npos ? std::string_view() : folders.substr(colon + 1);
    }
  }
  for (const auto& candidate : candidates) {
    if (executable(candidate)) return candidate;
  }
  return {};
}

void Prefetch::start(const Config& config, PrefetchStart when) {
  stop();
  note_.clear();
  if (auto reason = reason_not_to_start(config)) {
    note_ = std::move(*reason);
    return;
  }
  const std::filesystem::path cli = locate_cli();
  if (cli.empty()) {
    note_ =
        "prefetch is off: the cubby tool was not found (set CUBBY_CLI to its path, or put it on "
        "PATH)";
    return;
  }
  std::vector<std::string> args = {cli.string(),        "warm",       "--prefetch",
                                   "--suite",           config.suite, "--dir",
                                   config.dir.string(), "--parent",   std::to_string(::getpid())};
  if (config.jobs != 0) {
    args.push_back("--jobs");
    args.push_back(std::to_string(config.jobs));
  }
  if (when == PrefetchStart::at_first_miss) {
    args.push_back("--after-miss");
    args.push_back(std::to_string(realtime_ns()));
  }
  // It prints no result: its stdout goes to /dev/null.
  auto pid =
      spawn({cli, std::move(args), child_environment(), {ChildFd::open(1, "/dev/null", O_WRONLY)}});
  if (!pid) {
    note_ = "prefetch is off: " + pid.error().message;
    return;
  }
  pid_ = *pid;
}

Prefetch::~Prefetch() { stop(); }

void Prefetch::stop() {
  if (pid_ <= 0) return;
  const auto pid = static_cast<pid_t>(pid_);
  pid_ = 0;
  ::kill(pid, SIGTERM);
  if (!reaped_within(pid, std::chrono::seconds(5))) {
    ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

}  // namespace cubby
