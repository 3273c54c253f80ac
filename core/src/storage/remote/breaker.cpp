#include "storage/remote/breaker.hpp"

#include <cstdio>
#include <utility>

#include "net/deadline.hpp"

namespace cubby {
namespace {

std::int64_t now_ns() { return RemoteClock::now().time_since_epoch().count(); }

}  // namespace

Breaker::Breaker(Tier& inner, std::chrono::milliseconds backoff, std::string location,
                 AtomicStats& counted)
    : inner_(inner), backoff_(backoff), location_(std::move(location)), counted_(counted) {}

bool Breaker::is_open() const { return now_ns() < open_until_ns_.load(); }

void Breaker::trip(const Failure& failure) {
  open_until_ns_.store(now_ns() + std::chrono::nanoseconds(backoff_).count());
  if (!warned_.exchange(true)) {
    std::fprintf(stderr,
                 "cubby: the remote store %s failed (%s); kernels are compiled or read locally "
                 "instead, and the remote is skipped for %lld ms after each failure "
                 "(CUBBY_REMOTE_BACKOFF_MS). This warning is shown once; `cubby stats` counts "
                 "remote errors and timeouts\n",
                 location_.c_str(), failure.message.c_str(),
                 static_cast<long long>(backoff_.count()));
  }
}

std::optional<Failure> Breaker::skipped() {
  if (!is_open()) return std::nullopt;
  counted_.add(Stat::remote_skipped);
  return fail(Errc::io, location_, " failed recently; skipped for now");
}

template <class T>
Result<T> Breaker::after(Result<T> result) {
  if (result.ok()) {
    open_until_ns_.store(0);
  } else if (result.error().code == Errc::io) {
    trip(result.error());
  }
  return result;
}

Result<std::optional<std::string>> Breaker::get(const Key& key) {
  if (auto skip = skipped()) return std::move(*skip);
  return after(inner_.get(key));
}

Result<void> Breaker::put(const Key& key, std::string_view bytes) {
  if (auto skip = skipped()) {
    counted_.add(Stat::remote_writes_dropped);  // a write the remote never saw
    return std::move(*skip);
  }
  return after(inner_.put(key, bytes));
}

Result<void> Breaker::remove(const Key& key) {
  if (auto skip = skipped()) return std::move(*skip);
  return after(inner_.remove(key));
}

}  // namespace cubby
