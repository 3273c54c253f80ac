#include "cubby/testing/session.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>

#include "cubby/config.hpp"
#include "cubby/driver.hpp"
#include "cubby/key.hpp"
#include "cubby/prefetch.hpp"

namespace cubby::testing {
namespace {

struct Session {
  std::mutex mutex;
  Options options;
  std::unique_ptr<Cache> cache;
  std::atomic<std::uint64_t> reported{0};
  std::mutex time_mutex;
  LookupTime time;
  std::once_flag arch_once;
  std::once_flag gpu_once;
  std::optional<std::string> gpu_reason;
  Prefetch prefetch;
};

// The suite of a test binary: its file name.
std::string binary_suite() {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string("gtest") : self.filename().string();
}

// Never destroyed: tests and listeners may use it until the process exits.
Session& session() {
  static Session* const instance = new Session;
  return *instance;
}

}  // namespace

void configure(const Options& options) {
  Session& s = session();
  std::lock_guard lock(s.mutex);
  s.options = options;
}

Options current_options() {
  Session& s = session();
  std::lock_guard lock(s.mutex);
  return s.options;
}

Cache& cache() {
  Session& s = session();
  std::lock_guard lock(s.mutex);
  if (!s.cache) {
    Config config = Config::load(s.options.dir).value_or_throw();  // its cubby.conf included
    if (config.suite.empty()) config.suite = binary_suite();
    s.cache = std::make_unique<Cache>(std::move(config));
  }
  return *s.cache;
}

std::string describe_key(const CompileRequest& request) {
  return format_key_fields(explain_key(cache().key_inputs(request)));
}

CacheResult compile(const CompileRequest& request) {
  Session& s = session();
  Cache& c = cache();
  if (request.arch.empty()) {
    // Resolves the default arch (Cache keeps it) outside the timed call; see LookupTime.
    std::call_once(s.arch_once, [&] {
      const auto start = std::chrono::steady_clock::now();
      static_cast<void>(c.default_arch());
      const std::chrono::duration<double, std::milli> elapsed =
          std::chrono::steady_clock::now() - start;
      std::lock_guard lock(s.time_mutex);
      s.time.arch_probe_ms += elapsed.count();
    });
  }
  CacheResult result = c.compile(request);
  {
    std::lock_guard lock(s.time_mutex);
    (result.hit ? s.time.hits : s.time.misses) += 1;
    (result.hit ? s.time.hit_ms : s.time.miss_ms) += result.elapsed_ms;
  }
  if (!result.hit && current_options().require_warm && result.uncached != Uncached::none) {
    session().reported.fetch_add(1);
    ADD_FAILURE() << "cubby: compiled " << request.program_name << " (key " << result.key.hex()
                  << ", " << static_cast<double>(result.entry->compile_us) / 1000.0
                  << " ms) without the store although --cubby_require_warm / CUBBY_REQUIRE_WARM "
                  << "is set: " << uncached_info(result.uncached).label << ", "
                  << result.uncached_detail << " (counted in uncached_"
                  << uncached_info(result.uncached).name << "; no run can make it warm)";
  } else if (!result.hit && current_options().require_warm) {
    session().reported.fetch_add(1);
    ADD_FAILURE() << "cubby: compiled " << request.program_name << " (key " << result.key.hex()
                  << ", " << static_cast<double>(result.entry->compile_us) / 1000.0
                  << " ms) although --cubby_require_warm / "
                  << "CUBBY_REQUIRE_WARM is set: the store " << c.config().dir.string()
                  << " had no entry for it. If an earlier run compiled this program, its key "
                     "changed between the runs (a timestamp or random text in the source, an "
                     "option list built in a different order, a different NVRTC or header); "
                     "compare these fields with that run's `cubby compile --explain`:\n"
                  << describe_key(request);
  }
  return result;
}

std::string start_prefetch() {
  const Config config = cache().config();
  Session& s = session();
  std::lock_guard lock(s.mutex);
  s.prefetch.start(config, PrefetchStart::at_first_miss);
  return s.prefetch.note();
}

void stop_prefetch() {
  Session& s = session();
  std::lock_guard lock(s.mutex);
  s.prefetch.stop();
}

LookupTime lookup_time() {
  Session& s = session();
  std::lock_guard lock(s.time_mutex);
  return s.time;
}

LookupTime difference(const LookupTime& after, const LookupTime& before) {
  LookupTime d;
  d.hits = after.hits - before.hits;
  d.hit_ms = after.hit_ms - before.hit_ms;
  d.misses = after.misses - before.misses;
  d.miss_ms = after.miss_ms - before.miss_ms;
  d.arch_probe_ms = after.arch_probe_ms - before.arch_probe_ms;
  return d;
}

std::uint64_t reported_compiles() { return session().reported.load(); }
void reset_reported_compiles() { session().reported.store(0); }

std::optional<std::string> gpu_skip_reason() {
  Session& s = session();
  std::call_once(s.gpu_once, [&] {
    auto status = gpu_status();
    if (!status) s.gpu_reason = "no usable GPU: " + status.error().message;
  });
  return s.gpu_reason;
}

}  // namespace cubby::testing
