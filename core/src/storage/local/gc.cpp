// Store maintenance: LRU eviction and leftover removal; contract in storage/local/gc.hpp.
#include "storage/local/gc.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <optional>
#include <vector>

#include "storage/local/lock.hpp"
#include "storage/local/pch_dir.hpp"
#include "storage/local/store_stats.hpp"
#include "util/io.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr unsigned kGroups = 16;
constexpr auto kGcLockWait = std::chrono::minutes(5);

const char* const kHexDigits = "0123456789abcdef";

// The store folders gc writes in (its lock, the counters) or removes from must be real folders:
// through a link there, gc would create, rewrite and unlink files in someone else's folder.
Result<void> check_store_folders(const DiskTier& disk) {
  for (const char* name : {"entries", "locks", "stats"}) {
    const fs::path folder = disk.root() / name;
    struct stat info {};
    if (::lstat(folder.c_str(), &info) == 0 && !S_ISDIR(info.st_mode)) {
      return fail(Errc::io, folder.string(), " is ", io::file_type_name(info.st_mode),
                  ", not a folder: cubby never makes one and gc does not follow links; remove "
                  "it (cubby makes the folder again) and run gc again");
    }
  }
  return {};
}

Result<std::optional<FileLock>> take_gc_lock(const DiskTier& disk, bool wait) {
  if (auto checked = check_store_folders(disk); !checked) return checked.error();
  const fs::path path = disk.root() / "locks" / "gc.lock";
  return wait ? FileLock::acquire(path, kGcLockWait) : FileLock::try_acquire(path);
}

// Removes what cubby's own dead processes left, by the names cubby generates and nothing else:
// entry temp files ("<32 hex>.entry.tmp.<pid>.<16 hex>") and counters temp files
// ("stats/counters.tmp.<pid>.<16 hex>") whose writer is gone, and per-key lock files
// ("locks/<2 hex>/<32 hex>.lock") no one holds. Only regular files are removed; links are
// never followed (the store walk and io::for_each_name open folders with O_NOFOLLOW, files are
// opened and removed with openat/unlinkat and O_NOFOLLOW) and foreign sub-folders never entered.
Result<void> clean_leftovers(const DiskTier& disk, const GcOptions& options, GcReport& report) {
  auto temps = disk.list_temp([&](const fs::path& path) {
    if (remove_if_unlocked(path, options.temp_min_age)) ++report.temp_removed;
  });
  if (!temps) return temps;
  // Temp files of the counters file, from a process killed while updating it.
  auto stats = io::for_each_name(disk.root() / "stats", [&](int folder, std::string_view name) {
    if (io::is_temp_name_of(StoreStats::kCountersName, name) &&
        remove_if_unlocked_at(folder, name, options.temp_min_age)) {
      ++report.temp_removed;
    }
  });
  if (!stats) return stats;
  const PchCleanup pch = remove_dead_pch_dirs(disk.root());
  report.pch_dirs_removed += pch.folders;
  report.pch_bytes_removed += pch.bytes;
  return disk.list_locks([&](int folder, std::string_view name) {
    if (remove_if_unlocked_at(folder, name)) ++report.locks_removed;
  });
}

// Removes what is not a regular file at an entry path (a link, a FIFO, a device, a socket; a
// folder is left): readers refuse it and cubby never makes one. unlink(2) never follows a link.
// Without `remove` they are only dropped from `entries`.
void drop_non_regular(std::vector<DiskEntryInfo>& entries, bool remove, GcReport& report) {
  std::erase_if(entries, [&](const DiskEntryInfo& info) {
    if (info.regular) return false;
    if (remove && ::unlink(info.path.c_str()) == 0) ++report.non_regular_removed;
    return true;
  });
}

// Unlinks the oldest of `entries` until their total is at most `target`; fills the report.
void evict_oldest(std::vector<DiskEntryInfo>& entries, std::uint64_t target, GcReport& report) {
  std::uint64_t bytes = 0;
  for (const auto& entry : entries) bytes += entry.bytes;
  report.entries_before = entries.size();
  report.bytes_before = bytes;
  if (bytes > target) {
    std::sort(entries.begin(), entries.end(),
              [](const auto& a, const auto& b) { return a.modified < b.modified; });
    for (const auto& entry : entries) {
      if (bytes <= target) break;
      if (::unlink(entry.path.c_str()) == 0) {
        ++report.evicted;
        report.evicted_bytes += entry.bytes;
      }
      bytes -= entry.bytes;  // gone either way (a concurrent remover got it first)
    }
  }
  report.entries = report.entries_before - report.evicted;
  report.bytes = report.bytes_before - report.evicted_bytes;
}

std::uint64_t target_of(const GcOptions& options, double share) {
  const double ratio = std::clamp(options.target_ratio, 0.0, 1.0);
  return static_cast<std::uint64_t>(static_cast<double>(options.max_size) * ratio * share);
}

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

Result<GcReport> collect_garbage(const DiskTier& disk, const GcOptions& options) {
  const auto start = Clock::now();
  GcReport report;
  auto lock = take_gc_lock(disk, options.wait_for_lock);
  if (!lock) return std::move(lock).error();
  if (!lock->has_value()) {
    if (!options.wait_for_lock) {
      report.skipped = true;
      return report;
    }
    return fail(Errc::io, "another `cubby gc` has held ", (disk.root() / "locks/gc.lock").string(),
                " for over 5 minutes; wait for it to finish or check that it is not stuck");
  }
  if (options.clean_leftovers) {
    auto cleaned = clean_leftovers(disk, options, report);
    if (!cleaned) return cleaned.error();
  }
  std::vector<DiskEntryInfo> entries;
  auto listed = disk.list([&](const DiskEntryInfo& info) { entries.push_back(info); }, {},
                          NonRegular::include);
  if (!listed) return listed.error();
  drop_non_regular(entries, options.clean_leftovers, report);
  // Within the bound nothing goes; above it, down to the target (hysteresis).
  std::uint64_t total = 0;
  for (const auto& entry : entries) total += entry.bytes;
  evict_oldest(entries, total > options.max_size ? target_of(options, 1.0) : total, report);
  // The measured figures replace the running estimate (which drifts with killed processes).
  (void)StoreStats(disk.root()).update([&](Counters& counters) {
    counters["store_bytes"] = static_cast<std::int64_t>(report.bytes);
    counters["store_entries"] = static_cast<std::int64_t>(report.entries);
    add_counter(counters, "evictions", static_cast<std::int64_t>(report.evicted));
  });
  report.elapsed_ms = ms_since(start);
  return report;
}

Result<std::uint64_t> clear_store(DiskTier& disk) {
  auto removed = disk.clear();
  if (!removed) return removed;
  (void)StoreStats(disk.root()).update([](Counters& counters) {
    counters["store_bytes"] = 0;
    counters["store_entries"] = 0;
  });
  return removed;
}

Result<GcReport> trim_group(const DiskTier& disk, unsigned group, const GcOptions& options) {
  const auto start = Clock::now();
  GcReport report;
  auto lock = take_gc_lock(disk, false);
  if (!lock) return std::move(lock).error();
  if (!lock->has_value()) {
    report.skipped = true;
    return report;
  }
  std::vector<DiskEntryInfo> entries;
  const char prefix[2] = {kHexDigits[group % kGroups], '\0'};
  auto listed = disk.list([&](const DiskEntryInfo& info) { entries.push_back(info); }, prefix);
  if (!listed) return listed.error();
  evict_oldest(entries, target_of(options, 1.0 / kGroups), report);
  if (report.evicted > 0) {
    (void)StoreStats(disk.root())
        .add({
            {"store_bytes", -static_cast<std::int64_t>(report.evicted_bytes)},
            {"store_entries", -static_cast<std::int64_t>(report.evicted)},
            {"evictions", static_cast<std::int64_t>(report.evicted)},
        });
  }
  report.elapsed_ms = ms_since(start);
  return report;
}

}  // namespace cubby
