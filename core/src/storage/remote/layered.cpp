#include "storage/remote/layered.hpp"

#include <algorithm>
#include <utility>

#include "storage/remote/deadline.hpp"

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
  Stats sum;
  for (const auto& layer : layers_) sum += layer->counters();
  return sum;
}

}  // namespace cubby
