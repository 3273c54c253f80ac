#include "storage/remote/layered.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "net/deadline.hpp"

namespace cubby {

LayeredRemote::LayeredRemote(std::vector<std::unique_ptr<Remote>> layers)
    : layers_(std::move(layers)) {
  for (const auto& layer : layers_) {
    location_ += (location_.empty() ? "" : " ") + layer->location();
    if (!layer->writable()) location_ += "|read-only";
  }
}

Remote* LayeredRemote::written() const {
  for (const auto& layer : layers_) {
    if (layer->writable()) return layer.get();
  }
  return nullptr;
}

Result<std::optional<std::string>> LayeredRemote::get(const Key& key) {
  std::optional<Failure> failed;
  bool answered = false;
  for (const auto& layer : layers_) {
    auto found = layer->get(key);
    if (found && found->has_value()) return found;
    if (found) {
      answered = true;
    } else {
      failed = std::move(found).error();
    }
  }
  if (answered || !failed) return std::optional<std::string>();
  return std::move(*failed);
}

Result<std::optional<std::string>> LayeredRemote::get_checked(const Key& key,
                                                              const ValueCheck& check) {
  std::optional<Failure> failed;
  bool answered = false;
  for (const auto& layer : layers_) {
    auto found = layer->get(key);
    if (!found) {
      failed = std::move(found).error();
      continue;
    }
    answered = true;
    if (!found->has_value()) continue;
    auto valid = check(**found);
    if (valid) return found;
    if (valid.error().code == Errc::not_found) continue;  // another format version: a miss
    counted_.add(Stat::remote_rejected);
    if (!warned_passed_over_.exchange(true)) {
      std::fprintf(stderr,
                   "cubby: remote entry %s from %s (a layer of CUBBY_REMOTE) is not valid (%s); it "
                   "is not used: a valid entry in a layer after it is, else the kernel is compiled "
                   "(counted as rejected in `cubby stats`; shown once)\n",
                   key.hex().c_str(), layer->location().c_str(), valid.error().message.c_str());
    }
  }
  if (answered || !failed) return std::optional<std::string>();
  return std::move(*failed);
}

Result<void> LayeredRemote::put(const Key& key, std::string_view bytes) {
  Remote* layer = written();
  if (layer == nullptr) {
    return fail(Errc::invalid_argument, location_, ": no layer is writable (all read-only)");
  }
  return layer->put(key, bytes);
}

Result<void> LayeredRemote::remove(const Key& key) {
  Result<void> status;
  for (const auto& layer : layers_) {
    if (!layer->writable()) continue;
    if (auto removed = layer->remove(key); !removed && status) status = std::move(removed);
  }
  return status;
}

void LayeredRemote::put_later(const Key& key, std::string bytes) {
  if (Remote* layer = written()) layer->put_later(key, std::move(bytes));
}

void LayeredRemote::drain(std::chrono::milliseconds bound) {
  const auto until = RemoteClock::now() + bound;
  for (const auto& layer : layers_) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - RemoteClock::now());
    layer->drain(std::max(left, std::chrono::milliseconds(0)));
  }
}

void LayeredRemote::drain() {
  for (const auto& layer : layers_) layer->drain();
}

void LayeredRemote::connect_ahead() {
  for (const auto& layer : layers_) layer->connect_ahead();
}

Stats LayeredRemote::counters() const {
  Stats sum = counted_.snapshot();
  for (const auto& layer : layers_) sum += layer->counters();
  return sum;
}

}  // namespace cubby
