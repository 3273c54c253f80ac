// Persisted store counters; contract in storage/local/store_stats.hpp.
#include "storage/local/store_stats.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <limits>

#include "storage/local/lock.hpp"
#include "util/io.hpp"

namespace cubby {
namespace {

constexpr auto kLockWait = std::chrono::seconds(10);

bool is_counter_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

// Adds the deltas of every well-formed "name=value" token of `journal` to `counters` (with
// add_counter). A token that does not parse as a signed 64-bit value, or a negative delta of a
// counter that only counts up (any but the store_* size estimate), is skipped.
void add_journal(std::string_view journal, Counters& counters) {
  while (!journal.empty()) {
    std::size_t end = journal.find('\n');
    if (end == std::string_view::npos) break;  // a torn last line: skipped
    std::string_view line = journal.substr(0, end);
    journal.remove_prefix(end + 1);
    while (!line.empty()) {
      const std::size_t space = line.find(' ');
      const std::string_view token = line.substr(0, space);
      line = space == std::string_view::npos ? std::string_view() : line.substr(space + 1);
      const std::size_t equals = token.find('=');
      if (equals == std::string_view::npos) continue;
      const std::string_view name = token.substr(0, equals);
      const std::string_view digits = token.substr(equals + 1);
      std::int64_t value = 0;
      const auto parsed = std::from_chars(digits.data(), digits.data() + digits.size(), value);
      if (!is_counter_name(name) || parsed.ec != std::errc() ||
          parsed.ptr != digits.data() + digits.size() || (value < 0 && !is_size_estimate(name))) {
        continue;
      }
      add_counter(counters, name, value);
    }
  }
}

// Every counter is a count or a size: one below 0 (a hand-edited or foreign file) reads as 0.
void clamp_negative(Counters& counters) {
  for (auto& [name, value] : counters) value = std::max<std::int64_t>(value, 0);
}

}  // namespace

std::vector<std::string_view> persisted_names() {
  std::vector<std::string_view> names;
  for (const StatInfo& stat : kStats) {
    if (!stat.persisted.empty()) names.push_back(stat.persisted);
  }
  for (const StoreCounterInfo& counter : kStoreCounters) names.push_back(counter.name);
  return names;
}

Counters persisted_delta(const Stats& before, const Stats& after) {
  Counters delta;
  for (const StatInfo& stat : kStats) {
    if (stat.persisted.empty()) continue;
    std::int64_t change = 0;
    if (stat.count != nullptr) {
      change = static_cast<std::int64_t>(after.*stat.count - before.*stat.count);
    } else {
      change = std::llround(after.*stat.ms * 1000.0) - std::llround(before.*stat.ms * 1000.0);
    }
    if (change != 0) delta[std::string(stat.persisted)] = change;
  }
  return delta;
}

bool is_size_estimate(std::string_view name) { return name.starts_with("store_"); }

void add_counter(Counters& counters, std::string_view name, std::int64_t delta) {
  auto found = counters.find(name);
  if (found == counters.end()) found = counters.emplace(std::string(name), 0).first;
  std::int64_t sum = 0;
  if (__builtin_add_overflow(found->second, delta, &sum)) {
    sum = delta > 0 ? std::numeric_limits<std::int64_t>::max() : 0;
  }
  found->second = std::max<std::int64_t>(sum, 0);
}

std::string format_counters(const Counters& counters) {
  std::string text;
  for (const auto& [name, value] : counters) {
    text += name;
    text += ' ';
    text += std::to_string(value);
    text += '\n';
  }
  return text;
}

Result<Counters> parse_counters(std::string_view text) {
  Counters counters;
  std::size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const std::size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (line.empty()) continue;
    const std::size_t space = line.find(' ');
    const std::string_view name = line.substr(0, space);
    std::int64_t value = 0;
    bool ok = space != std::string_view::npos && is_counter_name(name);
    if (ok) {
      const std::string_view digits = line.substr(space + 1);
      const auto parsed = std::from_chars(digits.data(), digits.data() + digits.size(), value);
      ok = parsed.ec == std::errc() && parsed.ptr == digits.data() + digits.size() &&
           !digits.empty();
    }
    if (!ok) {
      return fail(Errc::corrupt, "line ", std::to_string(line_number),
                  " of the counters file is not \"name value\"");
    }
    counters[std::string(name)] = value;
  }
  return counters;
}

StoreStats::StoreStats(std::filesystem::path root)
    : root_(std::move(root)),
      file_(root_ / "stats" / kCountersName),
      journal_(root_ / "stats" / "journal") {}

Result<Counters> StoreStats::read() const {
  Counters counters;
  auto text = io::read_file(file_);
  if (!text && text.error().code != Errc::not_found) return std::move(text).error();
  if (text) {
    auto parsed = parse_counters(*text);
    if (!parsed) {
      return fail(Errc::corrupt, file_.string(), ": ", parsed.error().message,
                  " (it is reset on the next update; the entries are not affected)");
    }
    counters = std::move(parsed).value();
  }
  clamp_negative(counters);
  if (auto journal = io::read_file(journal_)) add_journal(*journal, counters);
  return counters;
}

Result<void> StoreStats::append(const Counters& delta) {
  std::string line;
  for (const auto& [name, value] : delta) {
    if (!line.empty()) line += ' ';
    line += name;
    line += '=';
    line += std::to_string(value);
  }
  if (line.empty()) return {};
  line += '\n';
  return io::append_file(journal_, line);
}

Result<Counters> StoreStats::update(const std::function<void(Counters&)>& change) {
  auto lock = FileLock::acquire(root_ / "locks" / "stats.lock", kLockWait);
  if (!lock) return std::move(lock).error();
  // A lock held longer than kLockWait means its owner hangs; counters are not worth waiting for.
  if (!lock->has_value()) {
    return fail(Errc::io, "the stats lock of ", root_.string(), " has been held for over ",
                std::to_string(kLockWait.count()), " s; the counters were not updated");
  }
  Counters counters;
  if (auto text = io::read_file(file_)) {
    if (auto parsed = parse_counters(*text)) counters = std::move(parsed).value();
  }
  clamp_negative(counters);
  // The journal is folded in: renamed away first, so an append racing the fold lands either in
  // the folded file (lost if after our read: counters are advisory) or in a fresh journal.
  std::filesystem::path folding = journal_;
  folding += ".folding";
  const bool folded = ::rename(journal_.c_str(), folding.c_str()) == 0;
  if (folded) {
    if (auto journal = io::read_file(folding)) add_journal(*journal, counters);
  }
  change(counters);
  clamp_negative(counters);
  auto written = io::write_file_atomic(file_, format_counters(counters));
  if (!written) {
    if (folded) (void)::rename(folding.c_str(), journal_.c_str());  // keep its deltas
    return std::move(written).error();
  }
  if (folded) ::unlink(folding.c_str());
  return counters;
}

Result<Counters> StoreStats::add(const Counters& delta) {
  return update([&](Counters& counters) {
    for (const auto& [name, value] : delta) add_counter(counters, name, value);
  });
}

}  // namespace cubby
