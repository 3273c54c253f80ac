// What a remote hit costs a user's process (cubby_remote_lookup_bench): cubby::Cache::compile of
// a program whose entry only the remote holds (an empty store folder and memory tier), so each
// lookup is key derivation, the remote GET, decoding and checking the entry, and its back-fill to
// disk (on the Cache's background thread, as in a real process). Per backend of
// CUBBY_BENCH_BACKENDS ("redis=redis://h:6379,rediss=rediss://h:6380", ci/lib.sh's
// start_redis_fleet exports it), else the one CUBBY_REMOTE names (backend name "remote"):
//  - BM_RemoteLookup/<workload>/<backend>/next: a lookup of a process that has looked up before
//    (its connection open and pooled). Every iteration asks for another program: the workload's
//    with a comment of its own (its own key), published to the remote before the timed loop.
//  - BM_RemoteLookup/<workload>/<backend>/first: a process's first lookup: a new Cache on a new
//    folder (connecting, the TLS handshake for rediss://), the lookup, and the Cache's end (which
//    waits for the back-fill).
//  - BM_TlsConnect/<backend>/{full,resumed} (rediss:// backends): opening a connection, the TLS
//    handshake and one PING: with a new TLS context each time (a new process's first connection)
//    or with the context's kept session (a later connection of the process).
//  - BM_TlsSetUp/{system_store,ca_file}: what a process's first TLS connection pays for its trust
//    store: OpenSSL's default store (the system's bundle of public CAs, honouring SSL_CERT_FILE)
//    or the one CA file CUBBY_REMOTE_CA_FILE names (needs it set).
// Compare the backends' times of one run (interleaved repetitions) for "TLS <= 1.2x plain Redis
// per lookup" (CPU time: the whole client process's, the back-fill thread included); BM_RemoteGet
// (cubby_bench) is the bare GET. Workloads: tiny (one 4.5 KB entry) and mdspan50 (one 348 KB
// entry), compiled once into a warm folder under CUBBY_BENCH_DIR (else a temporary folder).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cubby/cubby.hpp"
#include "cubby_workloads.hpp"
#include "net/connection.hpp"
#include "net/tls_context.hpp"
#include "runner.hpp"
#include "storage/remote/redis/redis_url.hpp"
#include "storage/remote/remote.hpp"

namespace {

namespace fs = std::filesystem;
using cubby_bench::bench_root;

// A folder no run has used (a process's empty store).
fs::path fresh_dir() {
  static int round = 0;
  return bench_root() / ("lookup-" + std::to_string(::getpid()) + "-" + std::to_string(round++));
}

// The workload's request and its entry (compiled once into a warm folder).
struct Program {
  cubby::CompileRequest request;
  std::shared_ptr<const cubby::Entry> entry;
};

const Program& program(const cubby::workloads::Workload& workload) {
  static std::map<std::string, Program> programs;
  Program& out = programs[workload.name];
  if (out.entry == nullptr) {
    out.request.source = workload.source;
    out.request.program_name = workload.name + ".cu";
    out.request.name_expressions = workload.name_expressions;
    out.request.options = workload.options;
    const char* arch = std::getenv("CUBBY_ARCH");
    auto gpu = cubby::gpu_arch();
    out.request.arch = arch != nullptr ? std::string(arch) : gpu ? *gpu : std::string("sm_90");
    cubby::Config warm;
    warm.dir = bench_root() / ("warm-" + workload.name);
    out.entry = cubby::Cache(warm).compile(out.request).entry;
  }
  return out;
}

// The request of `base` made another program by a comment (its own key, the same entry).
cubby::CompileRequest variant(const cubby::CompileRequest& base, const std::string& tag) {
  cubby::CompileRequest out = base;
  out.source += "\n// cubby remote lookup bench: " + tag + "\n";
  return out;
}

// The settings of the environment with `url` as the remote, on a new empty folder; nullopt (the
// benchmark skipped) without a usable remote.
std::optional<cubby::Config> remote_config(benchmark::State& state, const std::string& url) {
  auto env = cubby::Config::from_env();
  if (!env || url.empty()) {
    state.SkipWithError("skipped: no remote (set CUBBY_BENCH_BACKENDS or CUBBY_REMOTE)");
    return std::nullopt;
  }
  cubby::Config config = *env;
  config.remote_url = url;
  config.dir = fresh_dir();
  config.disabled = false;
  config.read_only = false;
  return config;
}

// Publishes `program`'s entry under the keys of `requests` (expiring after 10 minutes: every run
// publishes new ones). False (and skipped) on a failure.
bool publish(benchmark::State& state, const cubby::Config& config, const Program& program,
             const std::vector<cubby::CompileRequest>& requests) {
  cubby::Config expiring = config;
  expiring.remote_ttl_s = 600;
  auto tier = cubby::open_remote_tier(expiring);
  cubby::Cache keys(config);
  for (const auto& request : requests) {
    const cubby::Key key = keys.key_of(request);
    auto put = tier ? tier->put(key, cubby::encode_entry(key, *program.entry))
                    : cubby::Result<void>(cubby::fail(cubby::Errc::invalid_argument, "no tier"));
    if (!put) {
      state.SkipWithError(("remote store unusable (" + put.error().message + ")").c_str());
      return false;
    }
  }
  return true;
}

bool is_remote_hit(benchmark::State& state, const cubby::CacheResult& result) {
  if (result.tier == cubby::Source::remote) return true;
  state.SkipWithError(
      (std::string("not a remote hit (") + cubby::source_name(result.tier) + ")").c_str());
  return false;
}

void BM_RemoteLookupNext(benchmark::State& state, const cubby::workloads::Workload* workload,
                         const std::string& url) {
  const Program& base = program(*workload);
  auto config = remote_config(state, url);
  if (!config) return;
  static int run = 0;
  const std::string tag = std::to_string(::getpid()) + "-" + std::to_string(run++) + "-";
  std::vector<cubby::CompileRequest> requests;
  for (benchmark::IterationCount i = 0; i <= state.max_iterations; ++i) {
    requests.push_back(variant(base.request, tag + std::to_string(i)));
  }
  if (!publish(state, *config, base, requests)) return;
  {
    cubby::Cache cache(*config);
    // The process's earlier lookup: its connection is open from here on.
    if (!is_remote_hit(state, cache.compile(requests.back()))) return;
    std::size_t next = 0;
    for (auto _ : state) {
      auto result = cache.compile(requests[next++]);
      if (!is_remote_hit(state, result)) break;
      benchmark::DoNotOptimize(result);
    }
  }
  fs::remove_all(config->dir);
}

void BM_RemoteLookupFirst(benchmark::State& state, const cubby::workloads::Workload* workload,
                          const std::string& url) {
  const Program& base = program(*workload);
  auto config = remote_config(state, url);
  if (!config) return;
  const cubby::CompileRequest request = variant(base.request, "first");
  if (!publish(state, *config, base, {request})) return;
  for (auto _ : state) {
    {
      cubby::Cache cache(*config);
      if (!is_remote_hit(state, cache.compile(request))) break;
    }
    state.PauseTiming();
    fs::remove_all(config->dir);
    config->dir = fresh_dir();
    state.ResumeTiming();
  }
  fs::remove_all(config->dir);
}

void BM_TlsConnect(benchmark::State& state, const std::string& url, bool resumed) {
  auto parsed = cubby::parse_redis_url(url);
  const char* ca = std::getenv("CUBBY_REMOTE_CA_FILE");
  cubby::TlsSettings settings;
  settings.ca_file = ca != nullptr ? ca : "";
  auto shared = cubby::TlsContext::create(settings);
  if (!parsed || !shared) {
    state.SkipWithError("skipped: not a usable rediss:// URL");
    return;
  }
  const cubby::Endpoint endpoint{parsed->host, parsed->port, {}};
  const auto connect = [&](const cubby::TlsContext& tls) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    bool timed_out = false;
    auto opened = cubby::Connection::open(endpoint, &tls, deadline, nullptr, timed_out);
    char reply[16];
    if (!opened || !(*opened)->send("PING\r\n", deadline) ||
        (*opened)->receive(reply, sizeof reply, deadline) == 0) {
      state.SkipWithError("cannot connect");
      return false;
    }
    return (*opened)->resumed();
  };
  if (resumed) connect(**shared);  // the session to resume
  for (auto _ : state) {
    if (resumed) {
      if (!connect(**shared)) state.SkipWithError("not resumed");
    } else {
      auto fresh = cubby::TlsContext::create(settings);  // as a new process makes it
      if (!fresh || connect(**fresh)) state.SkipWithError("resumed or no context");
    }
  }
}

void BM_TlsSetUp(benchmark::State& state, bool system_store) {
  cubby::TlsSettings settings;
  const char* ca = std::getenv("CUBBY_REMOTE_CA_FILE");
  if (!system_store && ca == nullptr) {
    state.SkipWithError("skipped: set CUBBY_REMOTE_CA_FILE");
    return;
  }
  if (!system_store) settings.ca_file = ca;
  for (auto _ : state) {
    auto context = cubby::TlsContext::create(settings);
    if (!context) state.SkipWithError(context.error().message.c_str());
    if (context) benchmark::DoNotOptimize((*context)->get());  // the store is read here
  }
}

// The backends of CUBBY_BENCH_BACKENDS (the runner's), else CUBBY_REMOTE's as "remote".
std::vector<std::pair<std::string, std::string>> backends() {
  auto out = cubby_bench::bench_backends();
  if (out.front().first.empty()) {
    const char* remote = std::getenv("CUBBY_REMOTE");
    out.front() = {"remote", remote != nullptr ? remote : ""};
  }
  return out;
}

void register_all() {
  namespace w = cubby::workloads;
  for (const bool system_store : {true, false}) {
    benchmark::RegisterBenchmark(system_store ? "BM_TlsSetUp/system_store" : "BM_TlsSetUp/ca_file",
                                 BM_TlsSetUp, system_store)
        ->Unit(benchmark::kMicrosecond);
  }
  static const w::Workload workloads[] = {w::tiny(), w::mdspan50()};
  for (const auto& workload : workloads) {
    const bool big = workload.name == "mdspan50";
    for (const auto& [name, url] : backends()) {
      const std::string prefix = "BM_RemoteLookup/" + workload.name + "/" + name;
      benchmark::RegisterBenchmark((prefix + "/next").c_str(), BM_RemoteLookupNext, &workload, url)
          ->Unit(benchmark::kMicrosecond)
          ->Iterations(big ? 100 : 400)
          ->MeasureProcessCPUTime()  // the back-fill thread's too
          ->UseRealTime();
      benchmark::RegisterBenchmark((prefix + "/first").c_str(), BM_RemoteLookupFirst, &workload,
                                   url)
          ->Unit(benchmark::kMicrosecond)
          ->Iterations(big ? 30 : 60)
          ->MeasureProcessCPUTime()
          ->UseRealTime();
      if (workload.name != "tiny" || !url.starts_with("rediss://")) continue;
      for (const bool resumed : {false, true}) {
        benchmark::RegisterBenchmark(
            ("BM_TlsConnect/" + name + (resumed ? "/resumed" : "/full")).c_str(), BM_TlsConnect,
            url, resumed)
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (std::getenv("CUBBY_BENCH_DIR") == nullptr) fs::remove_all(bench_root());
  return 0;
}
