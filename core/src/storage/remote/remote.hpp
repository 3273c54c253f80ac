// The remote tier: entries shared by a fleet of machines (Redis, see README "Remote tier").
//
// Contract: a remote never makes a lookup fail or wait long. Every call ends within the configured
// timeout, all of it included (connect, handshake, request, the whole reply, however slowly the
// server sends it); a call that fails (refused, reset, timed out, error reply) returns a
// failure that the orchestrator treats as a miss, and after an I/O failure or a timeout the tier
// answers at once ("skipped") for the configured back-off before trying again (circuit breaker).
// Values that are unsigned or badly signed (with a secret), or bigger than the size limit, are
// rejected (a failure, counted). The tier knows nothing of entry content: decoding and
// verification are the orchestrator's.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "cubby/config.hpp"
#include "cubby/stats.hpp"
#include "storage/tier.hpp"

namespace cubby {

class RemoteTier : public Tier {
 public:
  // Queues `bytes` to be `put` by a background thread and returns at once. The queue is bounded;
  // a write that does not fit (or any write in read mode) is dropped (counted unless read mode).
  virtual void put_later(const Key& key, std::string bytes) = 0;
  // Waits until queued writes are done, at most `bound`; what is still queued then is dropped. The
  // writes started meanwhile end (or fail) by then too, and one already in flight within the
  // timeout of its start: with `bound` >= the timeout, no write outlives the drain.
  virtual void drain(std::chrono::milliseconds bound) = 0;
  // Opens a connection in the background, so that the first lookup need not wait for one (the
  // orchestrator calls it for a fresh store folder, whose lookups all go to the remote). Returns
  // at once; a lookup made meanwhile waits for that connection instead of opening another. A
  // failure counts and trips the breaker as a lookup's would.
  virtual void connect_ahead() = 0;
  // What the tier counted since it was opened (monotonic), as the remote_* counters of Stats
  // (cubby/stats.hpp) that the tier itself counts (failures, rejected values, writes); the
  // orchestrator counts the others (hits_remote, remote_misses, remote_ms). The rest are 0.
  virtual Stats counters() const = 0;
  // Where the remote is, with credentials redacted: safe for messages, logs and stats.
  virtual std::string location() const = 0;
};

// The remote tier `config` names (remote_url), or nullptr when it names none. A URL that does not
// parse is not an error either: a warning on stderr (credentials redacted) and nullptr. Opens no
// connection: the first call connects.
std::unique_ptr<RemoteTier> open_remote_tier(const Config& config);

// A CUBBY_REMOTE URL with its credentials replaced by "***": safe to print.
std::string redact_remote_url(std::string_view url);

}  // namespace cubby
