// `cubby warm [--suite S]... [-j N]`: compiles every recorded recipe (format/recipe.hpp) whose key
// now misses, in worker processes (warm_pool.hpp), first-needed first, with progress and a
// summary. `--prefetch` is the form the harness and the pytest plugin start beside a test run.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <iostream>
#include <set>
#include <string>
#include <unordered_map>

#include "cli.hpp"
#include "cubby/cache.hpp"
#include "key/scan_record.hpp"
#include "store/suites.hpp"
#include "util/process.hpp"
#include "warm/first_miss.hpp"
#include "warm_pool.hpp"

namespace cubby::cli {
namespace {

using Clock = std::chrono::steady_clock;

// The longest --timeout: a day is far beyond any compile, and far from overflowing a deadline.
constexpr double kMaxTimeoutSeconds = 86400;

struct WarmArgs {
  std::vector<std::string> suites;
  unsigned jobs = 0;
  double timeout_s = 300;
  bool quiet = false;
  bool prefetch = false;
  bool worker = false;
  long parent = 0;
  long after_miss = 0;  // realtime_ns of the run's start: wait for its first miss (prefetch)
};

// The recipes to warm, de-duplicated across suites, and what became of each.
struct Plan {
  std::vector<std::string> suites;
  std::vector<Recipe> recipes;
  std::vector<std::string> suite_of;
  std::vector<std::string> unknown_suites;    // named by --suite, with no recipes recorded
  std::vector<std::string> untrusted_suites;  // whose manifest another user may have written
  std::deque<std::size_t> missing;            // indexes into recipes, first-needed first
  std::size_t warm = 0;                       // already in the store
  json skipped = json::array();               // {program, suite, reason}
  json failed = json::array();                // {program, suite, error}
  std::size_t compiled = 0;
  std::size_t hits = 0;  // found by a worker: another process or the remote had it meanwhile
  double compile_ms = 0;
  std::string stopped;             // why warming stopped early; empty: it did not
  std::string worker_pch = "off";  // "eager" when workers compile several programs each
};

std::atomic<int> g_signal{0};

void on_signal(int signal) { g_signal.store(signal); }

void catch_signals() {
  struct sigaction action {};
  action.sa_handler = on_signal;  // no SA_RESTART: poll returns at once
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(signal, &action, nullptr);
}

// The manifests to warm (all of the store's without --suite), their recipes in order.
void load_recipes(const Config& config, const WarmArgs& args, Plan& plan) {
  std::vector<std::string> problems;
  plan.suites = args.suites.empty() ? list_suites(Store(config.dir), &problems) : args.suites;
  for (const std::string& problem : problems) std::cerr << "cubby: " << problem << "; ignored\n";
  std::set<std::array<std::uint8_t, 16>> seen;
  for (const std::string& suite : plan.suites) {
    std::string untrusted;
    auto loaded = load_suite(config, suite, &untrusted);  // the store's, else the remote's
    std::optional<Manifest> manifest;
    if (!loaded) {
      std::cerr << "cubby: " << loaded.error().message << "; ignored\n";
    } else if (!untrusted.empty()) {
      std::cerr << "cubby: the recipes of suite '" << suite << "' are not replayed: " << untrusted
                << ", and a replay compiles them, and reads what their sources include, as you "
                   "(your next run of the suite records your own; set CUBBY_TRUSTED_OWNERS to "
                   "the user who wrote it to replay theirs)\n";
      plan.untrusted_suites.push_back(suite);
      continue;
    } else {
      manifest = std::move(*loaded);
    }
    if (!manifest) {
      if (loaded && !args.suites.empty()) {
        plan.unknown_suites.push_back(suite);  // named, but nothing recorded: a failure
        if (!args.prefetch) {
          std::cerr << "cubby: no recipes are recorded for suite '" << suite
                    << "'; run the suite once with cubby (CUBBY_SUITE names it) to record them "
                       "(`cubby warm` without --suite warms every recorded suite)\n";
        }
      }
      continue;
    }
    for (Recipe& recipe : manifest->recipes) {
      // A manifest holds no two equal recipes: only several suites need the check.
      if (plan.suites.size() > 1 && !seen.insert(recipe_id(recipe)).second) continue;
      plan.recipes.push_back(std::move(recipe));
      plan.suite_of.push_back(suite);
    }
  }
}

// Sorts the recipes into skipped (a header is gone), warm (the key is in the store) and missing.
void find_missing(const Config& config, Plan& plan) {
  Config quiet = config;  // for keys only: no suite to record, no remote to connect to
  quiet.suite.clear();
  quiet.remote_url.clear();
  Cache cache(quiet);
  const Store store(config.dir);
  // Recipes of one suite share their header lists (CuPy's 393: 5 lists of ~960 headers) and
  // their lists most headers: each list is checked once, each header looked at once (a
  // prefetch beside a warm run spent 0.5 s of CPU on looks, a recipe at a time).
  std::unordered_map<std::string, bool> exists;
  std::unordered_map<const void*, std::string> gone_of_list;  // a header of it that is gone, or ""
  for (std::size_t i = 0; i < plan.recipes.size() && g_signal.load() == 0; ++i) {
    const Recipe& recipe = plan.recipes[i];
    auto [checked, first] = gone_of_list.try_emplace(recipe.header_paths.identity());
    if (first) {
      for (const std::string& header : header_paths_of(recipe, config.base_dir)) {
        auto [known, added] = exists.try_emplace(header, false);
        if (added) known->second = ::access(header.c_str(), F_OK) == 0;
        if (!known->second) checked->second = header;
      }
    }
    const std::string& gone = checked->second;
    if (!gone.empty()) {
      const bool unset_base = gone.starts_with(kBaseDirMarker);
      plan.skipped.push_back(
          {{"program", recipe.program_name},
           {"suite", plan.suite_of[i]},
           {"reason", unset_base ? "it was recorded under CUBBY_BASE_DIR; set CUBBY_BASE_DIR to "
                                   "this checkout's folder to warm it"
                                 : "header " + gone + " no longer exists"}});
      continue;
    }
    if (store.contains(cache.key_of(request_of(recipe, config.base_dir)))) {
      ++plan.warm;
    } else {
      plan.missing.push_back(i);
    }
  }
}

void show_progress(const Plan& plan, std::size_t total, unsigned jobs, Clock::time_point start) {
  const std::size_t done = plan.compiled + plan.hits + plan.failed.size();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  char line[160];
  std::snprintf(line, sizeof line,
                "\r\033[Kcubby warm: %zu/%zu compiled %zu, failed %zu (%u jobs, %.1f s)", done,
                total, plan.compiled, plan.failed.size(), jobs, seconds);
  std::cerr << line << std::flush;
}

// Runs the missing recipes on `jobs` workers, filling in the plan's outcome counters.
void compile_missing(const Config& config, const WarmArgs& args, unsigned jobs, Plan& plan) {
  PoolOptions options;
  options.jobs = jobs;
  options.timeout = std::chrono::milliseconds(static_cast<long long>(args.timeout_s * 1000));
  options.worker_args = {"warm", "--worker", "--dir", config.dir.string()};
  options.silence_workers = args.prefetch;
  // A worker that compiles several programs saves its PCH from the first (CUBBY_PCH=eager); one
  // that compiles a single program is faster without one.
  plan.worker_pch = config.pch && plan.missing.size() > jobs ? "eager" : "off";
  options.worker_env = {std::string("CUBBY_PCH=") + (plan.worker_pch == "eager" ? "eager" : "0")};
  const bool progress = !args.quiet && ::isatty(2) != 0;
  const std::size_t total = plan.missing.size();
  const auto start = Clock::now();
  const auto payload = [&](std::size_t i) { return encode_recipe(plan.recipes[i]); };
  const auto done = [&](std::size_t i, const WorkerReply& reply) {
    if (reply.status == "compiled" || reply.status == "hit") {
      (reply.status == "hit" ? plan.hits : plan.compiled) += 1;
      if (reply.status == "compiled") plan.compile_ms += reply.compile_ms;
      if (!reply.stored && plan.stopped.empty()) {
        plan.stopped = "the store " + config.dir.string() +
                       " could not be written (full disk? see the message above); free space "
                       "and run `cubby warm` again";
      }
    } else {
      plan.failed.push_back({{"program", plan.recipes[i].program_name},
                             {"suite", plan.suite_of[i]},
                             {"error", reply.error}});
      if (!args.quiet && !progress) {
        std::cerr << "cubby warm: " << plan.recipes[i].program_name
                  << " failed: " << reply.error.substr(0, reply.error.find('\n')) << '\n';
      }
    }
    if (progress) show_progress(plan, total, jobs, start);
  };
  const auto stop = [&] { return g_signal.load() != 0 || !plan.stopped.empty(); };
  run_pool(options, plan.missing, payload, done, stop);
  if (progress) std::cerr << '\n';
  if (g_signal.load() != 0 && plan.stopped.empty()) plan.stopped = "interrupted by a signal";
  // The workers' PCH folders: a worker that was killed could not remove its own.
  static_cast<void>(Store(config.dir).remove_dead_pch_dirs());
}

json summary_json(const Config& config, const Plan& plan, unsigned jobs, double elapsed_ms) {
  return {{"dir", config.dir.string()},
          {"suites", plan.suites},
          {"unknown_suites", plan.unknown_suites},
          {"untrusted_suites", plan.untrusted_suites},
          {"recipes", plan.recipes.size()},
          {"warm", plan.warm},
          {"compiled", plan.compiled},
          {"hits", plan.hits},
          {"failed", plan.failed},
          {"skipped", plan.skipped},
          {"jobs", jobs},
          {"worker_pch", plan.worker_pch},
          {"compile_ms", rounded_ms(plan.compile_ms)},
          {"elapsed_ms", rounded_ms(elapsed_ms)},
          {"stopped", plan.stopped}};
}

void print_summary(const Plan& plan, unsigned jobs, double elapsed_ms) {
  std::cout << "suites    " << plan.suites.size() << '\n';
  std::cout << "recipes   " << plan.recipes.size() << ": " << plan.warm << " already warm, "
            << plan.compiled << " compiled, " << plan.hits << " found meanwhile, "
            << plan.failed.size() << " failed, " << plan.skipped.size() << " skipped\n";
  std::cout << "jobs      " << count_of(jobs, "worker process") << '\n';
  std::cout << "elapsed   " << format_ms(elapsed_ms) << " (compiling " << format_ms(plan.compile_ms)
            << ")\n";
  for (const auto& [list, key, label] : {std::tuple{&plan.failed, "error", "failed    "},
                                         std::tuple{&plan.skipped, "reason", "skipped   "}}) {
    for (const json& item : *list) {
      const std::string why = item[key].get<std::string>();
      std::cout << label << item["program"].get<std::string>() << " ("
                << item["suite"].get<std::string>() << "): " << why.substr(0, why.find('\n'))
                << '\n';
    }
  }
  if (!plan.stopped.empty()) std::cout << "stopped   " << plan.stopped << '\n';
}

// The nice value of a prefetch: the lowest priority.
constexpr int kPrefetchNice = 19;

int run_warm(const Common& common, const WarmArgs& args_in) {
  WarmArgs args = args_in;
  const Config config = load_config(common);
  if (args.worker) return run_worker(config, args.parent);
  if (args.prefetch) {
    args.quiet = true;
    if (args.parent != 0 && !die_with_parent(args.parent, SIGTERM)) return kExitOk;
    // Beside a test run the prefetch (and its workers, who inherit it) gets the CPU only when the
    // run leaves it: on a warm store its key check must not slow the run's start-up (measured on
    // the H200 with a CuPy suite: 3.66 s with it at the run's priority, 3.24 s without it), and
    // after a header edit the run mostly waits for the kernels the workers compile.
    ::setpriority(PRIO_PROCESS, 0, kPrefetchNice);
  }
  // Prefetch is best effort (cubby_add_gtest's fixture, the harness): nothing to do is no failure.
  if (args.prefetch && (config.read_only || config.disabled)) return kExitOk;
  require_writable(config, "warm it");
  if (config.disabled) fail_with(kExitUsage, "CUBBY_DISABLE is set: nothing is cached; unset it");
  catch_signals();
  const auto start = Clock::now();
  // One warm of a suite at a time: a second prefetch of it leaves the work to the first.
  std::optional<SuiteWarmLock> suite_lock;
  if (args.suites.size() == 1) {
    suite_lock = SuiteWarmLock::try_acquire(Store(config.dir), args.suites.front());
    if (!suite_lock && args.prefetch) return kExitOk;
  }
  Plan plan;
  load_recipes(config, args, plan);
  // A prefetch started at_first_miss derives no key until a process of its run misses (or the
  // store lacks an entry the suite's last run had, or a header the recipes read was written since
  // that run): a warm run ends it here, having read the manifest, looked for the last run's
  // entries and at its headers' times only.
  bool headers_written = false;
  if (args.after_miss != 0 && args.suites.size() == 1 && !plan.recipes.empty() &&
      !recorded_entries_missing(config.dir, args.suites.front()) &&
      !(headers_written = headers_written_since_last_run(config.dir, args.suites.front(),
                                                         plan.recipes, config.base_dir)) &&
      !wait_for_first_miss(config.dir, args.suites.front(), args.after_miss,
                           [] { return g_signal.load() != 0; })) {
    return kExitOk;
  }
  const std::int64_t checked_at = realtime_ns();
  find_missing(config, plan);
  if (headers_written && plan.missing.empty() && g_signal.load() == 0) {
    note_headers_unchanged(config.dir, args.suites.front(), checked_at);
  }
  const unsigned jobs = std::min(
      {args.jobs != 0 ? args.jobs : (config.jobs != 0 ? config.jobs : usable_cores()),
       usable_cores(), static_cast<unsigned>(std::max<std::size_t>(1, plan.missing.size()))});
  if (!plan.missing.empty() && g_signal.load() == 0) compile_missing(config, args, jobs, plan);
  const double elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (common.json) {
    print_json(summary_json(config, plan, jobs, elapsed_ms));
  } else if (!args.quiet) {
    print_summary(plan, jobs, elapsed_ms);
  }
  const bool unknown = !plan.unknown_suites.empty() && !args.prefetch;
  return plan.stopped.empty() && !unknown ? kExitOk : kExitFailed;
}

}  // namespace

Command add_warm(CLI::App& app, Common& common) {
  auto args = std::make_shared<WarmArgs>();
  CLI::App* command = add_command(
      app, "warm",
      "Compile the recorded recipes of test suites whose entries are missing (after a toolchain "
      "upgrade, a header edit, on a fresh runner), in parallel worker processes");
  add_option(*command, "--suite", args->suites,
             "Warm this suite's recipes (repeatable; default: every suite of the store)")
      ->type_name("S");
  add_option(*command, "-j,--jobs", args->jobs,
             "Worker processes (default: $CUBBY_JOBS, else one per core; never more than "
             "the cores)")
      ->type_name("N");
  add_option(*command, "--timeout", args->timeout_s,
             "Seconds one recipe may take before its worker is killed (default 300, at "
             "most a day)")
      ->type_name("S")
      ->check(finite_number(0, kMaxTimeoutSeconds, true));
  add_flag(*command, "-q,--quiet", args->quiet, "No progress and no summary (errors still show)");
  add_flag(*command, "--prefetch", args->prefetch,
           "Run beside a test run: quiet, best effort (a read-only or disabled store is no "
           "failure), exits when another warm of the suite runs")
      ->group("");
  add_flag(*command, "--worker", args->worker, "Internal: a worker process")->group("");
  add_option(*command, "--parent", args->parent, "Internal: exit with this process")->group("");
  add_option(*command, "--after-miss", args->after_miss,
             "Internal: start when a run started at this time (ns) first misses")
      ->group("");
  add_common(*command, common);
  command->footer(
      "Recipes are recorded by test runs under the harness (suite: the test binary's name), the "
      "pytest plugin (pytest-<rootdir>) or any process with CUBBY_SUITE set. Exit status 0 when "
      "every recipe is warm, compiled, or reported as failed/skipped; 1 when warming stopped (the "
      "store could not be written, a signal).");
  return {command, [&common, args] { return run_warm(common, *args); }};
}

}  // namespace cubby::cli
