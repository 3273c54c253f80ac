// Envelope: what a remote stores around an encoded entry, as a wrapper of a bytes backend.
// Writes: entries over `max_entry` are not sent (counted remote_writes_dropped); the entry is
// LZ4-compressed (compress.hpp) unless `compress` is off, then signed (sign.hpp) when there is a
// secret. Reads accept both forms; with a secret only values signed with it for their key; values
// that fail (bad signature, corrupt compression, over `max_entry`) are rejected: an
// Errc::corrupt failure, counted remote_rejected, warned about once. Values signed by a writer
// with a secret this reader lacks are read (the orchestrator still verifies every entry).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "stats/atomic_stats.hpp"
#include "storage/tier.hpp"

namespace cubby {

struct EnvelopeOptions {
  std::string location;  // the remote, credentials redacted (for messages)
  std::string secret;    // non-empty: sign writes, accept only values signed with it
  bool compress = true;
  std::uint64_t max_entry = 64ull << 20;
};

class Envelope final : public Tier {
 public:
  Envelope(Tier& inner, EnvelopeOptions options, AtomicStats& counted);

  Result<std::optional<std::string>> get(const Key& key) override;
  Result<void> put(const Key& key, std::string_view bytes) override;
  Result<void> remove(const Key& key) override { return inner_.remove(key); }

  // The largest value a backend may return for an entry of `max_entry` bytes (a compressed value
  // is never bigger than its entry: else it is stored uncompressed).
  static std::uint64_t max_value(std::uint64_t max_entry);

 private:
  Failure reject(const Key& key, Failure why);

  Tier& inner_;
  EnvelopeOptions options_;
  AtomicStats& counted_;
  std::atomic<bool> warned_rejected_{false};
};

}  // namespace cubby
