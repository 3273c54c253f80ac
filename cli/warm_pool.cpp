#include "warm_pool.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "cli.hpp"
#include "util/io.hpp"
#include "util/process.hpp"
#include "util/spawn.hpp"

namespace cubby::cli {
namespace {

using Clock = std::chrono::steady_clock;

// How long stopping workers waits for those finishing a task before killing them.
constexpr std::chrono::seconds kStopGrace{2};

struct Task {
  std::size_t index = 0;
  bool wait = false;  // the second try of a task that was busy: wait for its lock
};

struct Worker {
  pid_t pid = -1;
  int to = -1;    // its stdin
  int from = -1;  // its replies (kReplyFd)
  std::string buffer;
  std::optional<Task> task;
  Clock::time_point deadline{};
};

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Starts one worker: this program with `args`, stdin and kReplyFd on pipes; its stdout goes where
// its stderr goes (this process's stderr, or /dev/null when silenced).
std::optional<Worker> spawn_worker(const PoolOptions& options) {
  int in[2];
  int out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return std::nullopt;
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    return std::nullopt;
  }
  SpawnRequest request;
  request.program = "/proc/self/exe";
  request.argv = {"cubby"};
  request.argv.insert(request.argv.end(), options.worker_args.begin(), options.worker_args.end());
  request.argv.push_back("--parent");
  request.argv.push_back(std::to_string(::getpid()));
  request.env = child_environment(options.worker_env);
  request.fds = {ChildFd::dup(in[0], 0), ChildFd::dup(out[1], kReplyFd)};
  if (options.silence_workers) request.fds.push_back(ChildFd::open(2, "/dev/null", O_WRONLY));
  request.fds.push_back(ChildFd::dup(2, 1));
  const Result<pid_t> pid = spawn(request);
  ::close(in[0]);
  ::close(out[1]);
  if (!pid) {
    ::close(in[1]);
    ::close(out[0]);
    return std::nullopt;
  }
  ::fcntl(out[0], F_SETFL, ::fcntl(out[0], F_GETFL) | O_NONBLOCK);
  return Worker{*pid, in[1], out[0], {}, std::nullopt, {}};
}

// Kills (when `kill`) and reaps `worker`; what its exit status says, for messages.
std::string end_worker(Worker& worker, bool kill) {
  close_fd(worker.to);
  close_fd(worker.from);
  if (worker.pid < 0) return {};
  if (kill) ::kill(worker.pid, SIGKILL);
  int status = 0;
  while (::waitpid(worker.pid, &status, 0) < 0 && errno == EINTR) {
  }
  worker.pid = -1;
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + strsignal(WTERMSIG(status));
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

WorkerReply failed(std::string why) {
  WorkerReply reply;
  reply.status = "failed";
  reply.error = std::move(why);
  return reply;
}

class Pool {
 public:
  Pool(const PoolOptions& options, std::deque<std::size_t> tasks,
       const std::function<std::string(std::size_t)>& payload,
       const std::function<void(std::size_t, const WorkerReply&)>& done)
      : options_(options), payload_(payload), done_(done) {
    for (std::size_t index : tasks) queue_.push_back({index, false});
  }
  // Stops the workers left: SIGTERM, which a worker takes between tasks (it ends a task it is
  // in, so that a compile about to finish is stored and counted), then SIGKILL after kStopGrace.
  ~Pool() {
    for (Worker& worker : workers_) {
      close_fd(worker.to);
      if (worker.pid > 0) ::kill(worker.pid, SIGTERM);
    }
    const auto deadline = Clock::now() + kStopGrace;
    for (Worker& worker : workers_) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (worker.pid > 0 &&
          reaped_within(worker.pid, std::max(left, std::chrono::milliseconds(0)))) {
        worker.pid = -1;
      }
      end_worker(worker, true);
    }
  }

  void run(const std::function<bool()>& stop) {
    ::signal(SIGPIPE, SIG_IGN);  // a worker that died: its pipe's write fails with EPIPE
    const std::size_t jobs = std::min<std::size_t>(options_.jobs, queue_.size());
    std::size_t spawn_failures = 0;
    while (!stop() && (!queue_.empty() || busy() > 0)) {
      while (workers_.size() < jobs && !queue_.empty() && spawn_failures < 3) {
        auto worker = spawn_worker(options_);
        if (!worker) {
          ++spawn_failures;
          continue;
        }
        workers_.push_back(std::move(*worker));
      }
      if (workers_.empty()) {  // no worker could be started: each task fails
        for (const Task& task : queue_) done_(task.index, failed("no worker process could start"));
        queue_.clear();
        return;
      }
      for (Worker& worker : workers_) {
        if (!worker.task && !queue_.empty()) dispatch(worker);
      }
      wait_for_replies();
      std::erase_if(workers_, [](const Worker& worker) { return worker.pid < 0; });
      // A finished queue needs no idle workers: close them as they come free.
      for (Worker& worker : workers_) {
        if (!worker.task && queue_.empty()) end_worker(worker, false);
      }
      std::erase_if(workers_, [](const Worker& worker) { return worker.pid < 0; });
    }
  }

 private:
  std::size_t busy() const {
    std::size_t count = 0;
    for (const Worker& worker : workers_) count += worker.task ? 1 : 0;
    return count;
  }

  void dispatch(Worker& worker) {
    const Task task = queue_.front();
    queue_.pop_front();
    const std::string bytes = payload_(task.index);
    const std::string header = std::to_string(bytes.size()) + (task.wait ? " wait" : " try") + "\n";
    worker.task = task;
    worker.deadline = Clock::now() + options_.timeout;
    if (io::write_all(worker.to, header) != 0 || io::write_all(worker.to, bytes) != 0) {
      lose(worker, "worker process " + end_worker(worker, true) + " before it took the task");
    }
  }

  // The task of `worker` ends with `why`; the worker is gone.
  void lose(Worker& worker, const std::string& why) {
    if (worker.task) done_(worker.task->index, failed(why));
    worker.task.reset();
  }

  void wait_for_replies() {
    std::vector<pollfd> fds;
    auto next = Clock::now() + std::chrono::milliseconds(200);
    for (const Worker& worker : workers_) {
      fds.push_back({worker.from, POLLIN, 0});
      if (worker.task) next = std::min(next, worker.deadline);
    }
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now());
    ::poll(fds.data(), fds.size(), static_cast<int>(std::max<long long>(0, wait.count())));
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      Worker& worker = workers_[i];
      if (fds[i].revents != 0) read_from(worker);
      if (worker.pid >= 0 && worker.task && Clock::now() > worker.deadline) {
        const auto seconds = std::chrono::duration<double>(options_.timeout).count();
        end_worker(worker, true);
        lose(worker, "timed out after " + std::to_string(static_cast<long long>(seconds)) +
                         " s (the worker was killed)");
      }
    }
  }

  void read_from(Worker& worker) {
    char chunk[4096];
    bool gone = false;
    for (;;) {
      const ssize_t got = ::read(worker.from, chunk, sizeof chunk);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {  // EAGAIN: all read; 0: the worker is gone
        gone = got == 0;
        break;
      }
      worker.buffer.append(chunk, static_cast<std::size_t>(got));
    }
    std::size_t end = 0;
    while ((end = worker.buffer.find('\n')) != std::string::npos) {
      const WorkerReply reply = parse_reply(worker.buffer.substr(0, end));
      worker.buffer.erase(0, end + 1);
      if (!worker.task) continue;
      const Task task = *worker.task;
      worker.task.reset();
      if (reply.status == "busy" && !task.wait) {
        queue_.push_back({task.index, true});
      } else {
        done_(task.index, reply);
      }
    }
    if (gone) {
      const std::string how = end_worker(worker, false);
      lose(worker, "worker process " + how + " while compiling it");
    }
  }

  const PoolOptions& options_;
  const std::function<std::string(std::size_t)>& payload_;
  const std::function<void(std::size_t, const WorkerReply&)>& done_;
  std::deque<Task> queue_;
  std::vector<Worker> workers_;
};

}  // namespace

void run_pool(const PoolOptions& options, std::deque<std::size_t> tasks,
              const std::function<std::string(std::size_t)>& payload,
              const std::function<void(std::size_t, const WorkerReply&)>& done,
              const std::function<bool()>& stop) {
  Pool pool(options, std::move(tasks), payload, done);
  pool.run(stop);
}

std::string reply_line(const WorkerReply& reply) {
  nlohmann::json line = {{"status", reply.status},
                         {"tier", reply.tier},
                         {"compile_ms", reply.compile_ms},
                         {"stored", reply.stored},
                         {"error", reply.error}};
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

WorkerReply parse_reply(const std::string& line) {
  const auto not_a_reply = [&] {
    return failed("the worker answered something that is not a reply: " + line.substr(0, 200));
  };
  const auto parsed = nlohmann::json::parse(line, nullptr, false);
  if (!parsed.is_object()) return not_a_reply();
  try {
    WorkerReply reply;
    reply.status = parsed.at("status").get<std::string>();
    reply.tier = parsed.value("tier", "");
    reply.compile_ms = parsed.value("compile_ms", 0.0);
    reply.stored = parsed.value("stored", true);
    reply.error = parsed.value("error", "");
    return reply;
  } catch (const nlohmann::json::exception&) {  // a field missing or of another type
    return not_a_reply();
  }
}

bool die_with_parent(long parent_pid, int signal) {
  if (::prctl(PR_SET_PDEATHSIG, signal) != 0) return true;  // not Linux: best effort
  return static_cast<long>(::getppid()) == parent_pid;
}

}  // namespace cubby::cli
