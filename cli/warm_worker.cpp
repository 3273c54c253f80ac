// `cubby warm --worker`: one worker process of `cubby warm` (see warm_pool.hpp).
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "cli.hpp"
#include "cubby/cache.hpp"
#include "format/recipe.hpp"
#include "util/io.hpp"
#include "warm/replay.hpp"
#include "warm_pool.hpp"

namespace cubby::cli {
namespace {

constexpr std::size_t kMaxTaskBytes = std::size_t{1} << 30;

// For tests of the pool: CUBBY_TEST_WORKER_FAULT="crash:<program name>", "hang:<program name>" or
// "stdout:<program name>" makes a worker die, hang, or print a forged reply on its stdout (as a
// recipe's `--time=/dev/stdout` would print NVRTC's timings) on that program.
void inject_fault(const std::string& program) {
  const char* fault = std::getenv("CUBBY_TEST_WORKER_FAULT");
  if (fault == nullptr) return;
  const std::string text(fault);
  if (text == "crash:" + program) ::raise(SIGKILL);
  if (text == "stdout:" + program) {
    std::cout << R"({"status":"failed","error":"forged on stdout"})" << std::endl;
  }
  if (text == "hang:" + program) {
    for (;;) ::pause();
  }
}

WorkerReply warm_one(Cache& cache, const std::string& bytes, bool wait) {
  WorkerReply reply;
  auto recipe = decode_recipe(bytes);
  if (!recipe) {
    reply.status = "failed";
    reply.error = recipe.error().message;
    return reply;
  }
  const CompileRequest request = request_of(*recipe, cache.config().base_dir);
  inject_fault(request.program_name);
  if (auto replayable = check_replayable(request); !replayable) {
    reply.status = "failed";
    reply.error = replayable.error().message;
    return reply;
  }
  try {
    // Another process compiling it: answered busy, queued again (warm_pool.hpp).
    if (!wait && Store(cache.config().dir).compile_in_progress(cache.key_of(request))) {
      reply.status = "busy";
      return reply;
    }
    const std::uint64_t failed_writes = cache.stats().failed_writes;
    const CacheResult result = cache.compile(request);
    reply.status = result.hit ? "hit" : "compiled";
    reply.tier = source_name(result.tier);
    reply.compile_ms = static_cast<double>(result.entry->compile_us) / 1000.0;
    reply.stored = result.hit || cache.stats().failed_writes == failed_writes;
  } catch (const Error& error) {
    reply.status = "failed";
    reply.error = replay_error(request, error);
  }
  return reply;
}

}  // namespace

int run_worker(Config config, long parent_pid) {
  if (!die_with_parent(parent_pid, SIGKILL)) return kExitFailed;
  config.suite.clear();  // the coordinator's recipes, not a suite's requests
  Cache cache(std::move(config));
  std::string header;
  while (std::getline(std::cin, header)) {
    const std::size_t space = header.find(' ');
    std::size_t size = 0;
    try {
      size = std::stoul(header.substr(0, space));
    } catch (const std::exception&) {
      return kExitUsage;  // not the coordinator's protocol
    }
    if (size > kMaxTaskBytes) return kExitUsage;
    std::string bytes(size, '\0');
    if (!std::cin.read(bytes.data(), static_cast<std::streamsize>(size))) return kExitUsage;
    const bool wait = space != std::string::npos && header.substr(space + 1) == "wait";
    // A stop (SIGTERM) waits until the task is done and counted (CUBBY_STATS_FILE, the store's
    // counters): the coordinator kills a worker that takes longer (warm_pool.hpp).
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    ::sigprocmask(SIG_BLOCK, &term, nullptr);
    const WorkerReply reply = warm_one(cache, bytes, wait);
    cache.finish();
    // A reply that cannot be written: the coordinator is gone.
    if (io::write_all(kReplyFd, reply_line(reply)) != 0) return kExitFailed;
    ::sigprocmask(SIG_UNBLOCK, &term, nullptr);
  }
  return kExitOk;
}

}  // namespace cubby::cli
