// `cubby stats`: what the store holds (measured) and what every process that used it counted
// (hits by tier, misses, compiles, compile time saved, evictions, corrupt entries, failed writes).
#include <algorithm>
#include <cmath>
#include <iostream>
#include <optional>
#include <string_view>
#include <vector>

#include "cli.hpp"
#include "config/store_config.hpp"
#include "cubby/stats_summary.hpp"

namespace cubby::cli {
namespace {

std::int64_t counter(const Counters& counters, std::string_view name) {
  const auto found = counters.find(name);
  return found == counters.end() ? 0 : found->second;
}

// A counter of the remote tier (hits_remote, remote_*): rows only a store with a remote needs.
bool is_remote_counter(const StatInfo& stat) {
  return stat.name == "hits_remote" || stat.name.starts_with("remote_");
}

// Whether `cubby stats` shows the remote tier's rows: when a remote is configured, or when some
// process that had one counted something here (the counts stay worth seeing).
bool shows_remote(const Config& config, const Counters& counters) {
  if (!config.remote_url.empty()) return true;
  return std::any_of(kStats.begin(), kStats.end(), [&](const StatInfo& stat) {
    return is_remote_counter(stat) && !stat.persisted.empty() &&
           counter(counters, stat.persisted) != 0;
  });
}

// Counters shown, in order: persisted name, label. Every counted CUBBY_STATS line with a label
// (the remote tier's only with `remote`), then the store's own counters with one
// (cubby/stats.hpp, storage/local/store_stats.hpp).
std::vector<std::pair<std::string_view, std::string_view>> shown_counters(bool remote) {
  std::vector<std::pair<std::string_view, std::string_view>> shown;
  for (const StatInfo& stat : kStats) {
    if (!remote && is_remote_counter(stat)) continue;
    if (!stat.persisted.empty() && !stat.label.empty())
      shown.emplace_back(stat.persisted, stat.label);
  }
  for (const StoreCounterInfo& counter : kStoreCounters) {
    if (!counter.label.empty()) shown.emplace_back(counter.name, counter.label);
  }
  return shown;
}

// The process counters of `counters` (persisted names; times in microseconds) as Stats.
Stats stats_of(const Counters& counters) {
  Stats stats;
  for (const StatInfo& stat : kStats) {
    const std::int64_t value = std::max<std::int64_t>(counter(counters, stat.persisted), 0);
    if (stat.ms != nullptr) {
      stats.*stat.ms = static_cast<double>(value) / 1000.0;
    } else {
      stats.*stat.count = static_cast<std::uint64_t>(value);
    }
  }
  return stats;
}

// Zeroes every process counter (the size estimate stays) and records when.
void zero_counters(const Config& config, Store& store) {
  require_writable(config, "--zero");
  if (auto zeroed = store.zero_counters(); !zeroed) fail_with(kExitFailed, zeroed.error().message);
}

// Where the store's size bound comes from: "default", "CUBBY_MAX_SIZE", "<store>/cubby.conf".
std::string max_size_origin(const Config& config) {
  auto settings = effective_settings(config.dir);
  if (!settings) return "unknown";
  const EffectiveSetting& max_size = settings->front();  // kStoreSettings begins with max_size
  return origin_text(*max_size.info, max_size.origin, config.dir);
}

// What the store holds, as measured.
struct Usage {
  std::uint64_t entries = 0;
  std::uint64_t bytes = 0;
};

// A `cubby stats` row: label and value.
using Row = std::pair<std::string, std::string>;

// The rows about the store itself: folder, usage, bound and its origin, counting since.
// Sizes are shown in the units max_size is written in (as ccache does), said once in "max size".
std::vector<Row> store_rows(const Config& config, const Usage& usage,
                            const std::string& bound_origin,
                            const std::optional<std::int64_t>& since) {
  const SizeUnits units = store_size_units(config);
  std::string bound = format_bytes(config.max_size, units) + " (" + bound_origin;
  if (bound_origin == "default") bound += "; `cubby config max_size SIZE` sets it";
  bound += "; sizes in " + units_text(units) + ", as max_size is written";
  return {
      {"store", config.dir.string()},
      {"entries", std::to_string(usage.entries)},
      {"bytes", std::to_string(usage.bytes) + " (" + format_bytes(usage.bytes, units) + " of " +
                    format_bytes(config.max_size, units) + ")"},
      {"max size", bound + ")"},
      {"counting since", since ? format_unix_ms(*since) + " (`cubby stats --zero`)"
                               : std::string("the store began (never zeroed)")},
  };
}

// Prints `rows` as two columns: every value starts one space after the longest label.
void print_rows(const std::vector<Row>& rows) {
  std::size_t width = 0;
  for (const auto& [label, value] : rows) width = std::max(width, label.size());
  for (const auto& [label, value] : rows) {
    std::cout << label << std::string(width + 1 - label.size(), ' ') << value << '\n';
  }
}

int run_stats(const Common& common, bool zero) {
  const Config config = load_config(common);
  Store store_dir(config.dir);
  if (zero) zero_counters(config, store_dir);
  const std::optional<std::int64_t> since = store_dir.zeroed_ms();
  if (zero && !common.json) {  // as ccache -z: one line (`cubby stats` shows the zeros)
    std::cout << "counters zeroed (entries kept); counting since "
              << (since ? format_unix_ms(*since) : std::string("now")) << '\n';
    return kExitOk;
  }
  const std::string bound_origin = max_size_origin(config);
  auto usage = store_dir.usage();
  if (!usage) fail_with(kExitFailed, usage.error().message);
  const std::uint64_t count = usage->entries;
  const std::uint64_t bytes = usage->bytes;
  auto read = store_dir.counters();
  if (!read) std::cerr << "cubby: " << read.error().message << '\n';
  const Counters counters = read ? std::move(read).value() : Counters{};
  const std::int64_t hits = counter(counters, "hits_memory") + counter(counters, "hits_disk") +
                            counter(counters, "hits_remote");
  const std::int64_t lookups = hits + counter(counters, "misses");
  const double hit_rate =
      lookups > 0 ? static_cast<double>(hits) / static_cast<double>(lookups) : 0;
  // Mean time of a remote lookup (hit or miss).
  const std::int64_t remote_lookups =
      counter(counters, "hits_remote") + counter(counters, "remote_misses");
  const double remote_ms = remote_lookups > 0
                               ? static_cast<double>(counter(counters, "remote_us")) / 1000.0 /
                                     static_cast<double>(remote_lookups)
                               : 0;

  if (common.json) {
    json out = {{"dir", config.dir.string()},
                {"entries", count},
                {"bytes", bytes},
                {"max_size", json_max_size(config.max_size)},
                {"hit_rate", std::round(hit_rate * 1e4) / 1e4},
                {"remote_ms_per_lookup", rounded_ms(remote_ms)},
                {"max_size_origin", bound_origin},
                {"since", since ? json(format_unix_ms(*since)) : json(nullptr)},
                {"since_ms", since ? json(*since) : json(nullptr)}};
    if (!config.remote_url.empty()) out["remote"] = redacted_remote_url(config.remote_url);
    // Every counter once: each process counter by its Stats name (times in ms, from the persisted
    // microseconds: compile_ms, compile_ms_saved, remote_ms), then the store's own counters by
    // their names (evictions, and the size estimate store_bytes / store_entries).
    for (const StatInfo& stat : kStats) {
      if (stat.persisted.empty()) continue;
      const std::int64_t value = counter(counters, stat.persisted);
      if (stat.unit == Unit::ms) {
        out[std::string(stat.name)] = static_cast<double>(value) / 1000.0;
      } else {
        out[std::string(stat.name)] = value;
      }
    }
    for (const StoreCounterInfo& store : kStoreCounters) {
      out[std::string(store.name)] = counter(counters, store.name);
    }
    print_json(out);
    return kExitOk;
  }
  std::vector<Row> rows = store_rows(config, {count, bytes}, bound_origin, since);
  for (const auto& [name, label] : shown_counters(shows_remote(config, counters))) {
    rows.emplace_back(label, std::to_string(counter(counters, name)));
  }
  char rate[16];
  std::snprintf(rate, sizeof rate, "%.1f%%", hit_rate * 100.0);
  rows.emplace_back("hit rate", rate);
  if (!config.remote_url.empty())
    rows.emplace_back("remote", redacted_remote_url(config.remote_url));
  print_rows(rows);
  // The summary every front end prints (cubby/stats_summary.hpp): times, time saved, the remote.
  std::cout << '\n';
  for (const std::string& line : summary_lines(stats_of(counters))) std::cout << line << '\n';
  return kExitOk;
}

}  // namespace

Command add_stats(CLI::App& app, Common& common) {
  auto zero = std::make_shared<bool>(false);
  CLI::App* command = add_command(
      app, "stats",
      "Entries and bytes in the store; hits, misses, compiles and more of every process");
  add_flag(*command, "--zero", *zero,
           "Reset the counters (not the entries) and say so in one line (--json: the "
           "zeroed stats); stats then shows the time as \"counting since\"");
  add_common(*command, common);
  return {command, [&common, zero] { return run_stats(common, *zero); }};
}

}  // namespace cubby::cli
