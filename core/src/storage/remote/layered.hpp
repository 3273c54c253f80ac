// LayeredRemote: remotes stacked as layers (CUBBY_REMOTE="URL|read-only URL", see
// open_remote_tier), for a pull-request job that reads the main branch's cache but writes only
// its own overlay.
//
// Reads go to the layers in order; the first hit is the answer, and it is not copied into any
// other layer (the orchestrator back-fills the disk tier only). A layer that fails is a miss for
// that layer: the next one is asked. The lookup fails only when every layer failed (a miss to the
// orchestrator all the same). A lookup with the orchestrator's entry check (get_checked) passes
// over a value that fails it — a bad value in a read-only main never hides the overlay's good
// one — counting it remote_rejected (warned about once), unless it is an entry of another format
// version (a miss); with no valid value in any layer, it is a miss. Writes (put, put_later) go to
// the first layer that is writable at the time (a layer marked read-only, or one whose server
// refused a write, is passed over); with none, put fails and put_later queues nothing. remove goes
// to every writable layer. Each layer keeps its own breaker, envelope and write queue: one layer
// down never skips another.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "storage/remote/remote.hpp"

namespace cubby {

class LayeredRemote final : public Remote {
 public:
  // `layers` in read order (at least one).
  explicit LayeredRemote(std::vector<std::unique_ptr<Remote>> layers);

  Result<std::optional<std::string>> get(const Key& key) override;
  Result<std::optional<std::string>> get_checked(const Key& key, const ValueCheck& check) override;
  Result<void> put(const Key& key, std::string_view bytes) override;
  Result<void> remove(const Key& key) override;

  void put_later(const Key& key, std::string bytes) override;
  // Each layer's drain, within `bound` all together.
  void drain(std::chrono::milliseconds bound) override;
  // Each layer's drain(): only the layer that took writes has any to wait for.
  void drain() override;
  void connect_ahead() override;
  bool writable() const override { return written() != nullptr; }
  Stats counters() const override;  // the sum of the layers', and the values passed over
  const std::string& location() const override { return location_; }  // the layers', in order

 private:
  // The first writable layer, or nullptr.
  Remote* written() const;

  std::vector<std::unique_ptr<Remote>> layers_;
  std::string location_;
  AtomicStats counted_;  // values get_checked passed over
  std::atomic<bool> warned_passed_over_{false};
};

}  // namespace cubby
