// The worker processes of `cubby warm`: NVRTC compiles one program at a time per process, so
// parallel warming runs `cubby warm --worker` processes (cli/warm_worker.cpp), each fed one task
// at a time over a pipe (its stdin) and answering with one JSON line on another (kReplyFd); the
// first tasks go out first.
//
// A worker dies with the process that started it (PR_SET_PDEATHSIG); a worker that exits or is
// killed in the middle of a task fails that task ("crashed"), one that takes longer than the
// timeout is killed and fails it ("timed out"), and a new worker takes its place. Stopping the
// pool (stop(), the end of the tasks) gives a worker in a task 2 s to finish it, then kills it.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "cubby/config.hpp"

namespace cubby::cli {

// A worker's answer to one task (the JSON line of warm_worker.cpp, or the pool's own verdict).
struct WorkerReply {
  std::string status;  // "compiled", "hit", "busy", "failed"
  std::string tier;    // where a hit came from: "memory", "disk", "remote"
  double compile_ms = 0;
  bool stored = true;  // false: compiled, but the store could not be written (full disk, ...)
  std::string error;   // why it failed
};

struct PoolOptions {
  unsigned jobs = 1;
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};  // per task
  std::vector<std::string> worker_args;  // after the program: "warm", "--worker", ...
  bool silence_workers = false;          // workers' stderr to /dev/null (prefetch)
  std::vector<std::string> worker_env;   // "NAME=value": set (replaced) in the workers' environment
};

// Runs `tasks` (indexes, first first) on up to `options.jobs` workers. `payload(i)` is the recipe
// bytes of task i; `done(i, reply)` gets each task's final reply (a "busy" one is queued again
// once, at the back, then waited for). Returns when every task is done, or, after killing the
// workers, as soon as `stop()` is true (it is asked at least every 200 ms).
void run_pool(const PoolOptions& options, std::deque<std::size_t> tasks,
              const std::function<std::string(std::size_t)>& payload,
              const std::function<void(std::size_t, const WorkerReply&)>& done,
              const std::function<bool()>& stop);

// The file descriptor a worker writes its replies to (a pipe to the coordinator). Not stdout: what
// NVRTC or anything else in the worker prints there (a recipe's `--time=/dev/stdout`) goes to the
// coordinator's stderr and is never read as a reply.
inline constexpr int kReplyFd = 3;

// The reply JSON line of a worker, and its parse (a line that is not one: a failed reply).
std::string reply_line(const WorkerReply& reply);
WorkerReply parse_reply(const std::string& line);

// The worker's side (`cubby warm --worker --parent PID`, cli/warm_worker.cpp): reads tasks
// "<bytes> try|wait\n<recipe bytes>" from stdin until it closes and answers each with a reply
// line on stdout; "try" answers "busy" instead of waiting when another process holds the key's
// compile lock. Compiles through a Cache on `config` (which records no suite). Returns the exit
// code.
int run_worker(Config config, long parent_pid);

// Sets this process to get `signal` when its parent ends; false when the parent is not
// `parent_pid` any more (it died before this could be set): then the caller should exit.
bool die_with_parent(long parent_pid, int signal);

}  // namespace cubby::cli
