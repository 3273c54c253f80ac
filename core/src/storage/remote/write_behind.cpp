#include "storage/remote/write_behind.hpp"

#include <limits>
#include <memory>
#include <utility>

#include "net/deadline.hpp"

namespace cubby {
namespace {

constexpr std::int64_t kNoCap = std::numeric_limits<std::int64_t>::max();

// A queued write's share of the byte bound, given back when the write is done or dropped.
class Ticket {
 public:
  Ticket(std::atomic<std::uint64_t>& queued, std::uint64_t bytes)
      : queued_(queued), bytes_(bytes) {}
  ~Ticket() { queued_ -= bytes_; }
  Ticket(const Ticket&) = delete;
  Ticket& operator=(const Ticket&) = delete;

 private:
  std::atomic<std::uint64_t>& queued_;
  std::uint64_t bytes_;
};

}  // namespace

WriteBehind::WriteBehind(Tier& inner, std::size_t max_entries, std::uint64_t max_bytes,
                         AtomicStats& counted)
    : inner_(inner),
      max_entries_(max_entries),
      max_bytes_(max_bytes),
      counted_(counted),
      cap_ns_(kNoCap) {}

WriteBehind::~WriteBehind() = default;

void WriteBehind::put_later(const Key& key, std::string bytes) {
  const std::uint64_t size = bytes.size();
  if (queued_bytes_.fetch_add(size) + size > max_bytes_) {
    queued_bytes_ -= size;
    counted_.add(Stat::remote_writes_dropped);
    return;
  }
  auto ticket = std::make_shared<Ticket>(queued_bytes_, size);
  auto job = [this, key, bytes = std::move(bytes), ticket] {
    const std::int64_t cap = cap_ns_.load();
    const ScopedCallCap capped(cap == kNoCap ? RemoteClock::time_point::max()
                                             : RemoteClock::time_point(RemoteClock::duration(cap)));
    (void)inner_.put(key, bytes);  // counted inside; a failure is only a missed share
  };
  if (!writer_.post(std::move(job), max_entries_)) counted_.add(Stat::remote_writes_dropped);
}

void WriteBehind::drain(std::chrono::milliseconds bound) {
  const auto until = RemoteClock::now() + bound;
  // Writes started from now on end by `until` too (the one in flight ends by its own deadline).
  const std::int64_t until_ns = until.time_since_epoch().count();
  std::int64_t cap = cap_ns_.load();
  while (until_ns < cap && !cap_ns_.compare_exchange_weak(cap, until_ns)) {
  }
  counted_.add(Stat::remote_writes_dropped, writer_.drain_for(bound));
  cap_ns_.store(kNoCap);
}

}  // namespace cubby
