// Tests of storage/remote/read_ahead: a fresh runner's remote that fetches a plan's keys ahead of
// the lookups, over a scripted remote whose fetches a test can hold back.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "fake_backend.hpp"
#include "storage/remote/read_ahead.hpp"

namespace cubby {
namespace {

using namespace std::chrono_literals;
using testing::fake_key;

// A Remote of values by key whose gets count per key and wait while their key is held back.
class ScriptedRemote final : public Remote {
 public:
  std::map<Key, std::string> values;
  std::optional<Failure> failure;  // what every get returns, when set

  Result<std::optional<std::string>> get(const Key& key) override {
    std::unique_lock lock(mutex_);
    ++gets_[key];
    released_.wait(lock, [&] { return !held_.contains(key); });
    if (failure) return *failure;
    auto found = values.find(key);
    if (found == values.end()) return std::optional<std::string>();
    return std::optional<std::string>(found->second);
  }
  // As layers (layered.hpp) do: when the value get gives fails `check`, the value in
  // `other_layer`, if any.
  Result<std::optional<std::string>> get_checked(const Key& key, const ValueCheck& check) override {
    auto found = get(key);
    if (!found || !found->has_value() || check(**found)) return found;
    std::lock_guard lock(mutex_);
    auto other = other_layer.find(key);
    if (other == other_layer.end()) return std::optional<std::string>();
    return std::optional<std::string>(other->second);
  }
  std::map<Key, std::string> other_layer;
  Result<void> put(const Key& key, std::string_view bytes) override {
    std::lock_guard lock(mutex_);
    values[key] = std::string(bytes);
    return {};
  }
  Result<void> remove(const Key&) override { return {}; }
  void put_later(const Key& key, std::string bytes) override { (void)put(key, bytes); }
  void drain(std::chrono::milliseconds) override {}
  void drain() override {}
  void connect_ahead() override {}
  bool writable() const override { return true; }
  Stats counters() const override {
    Stats out;
    out.remote_writes = 7;  // passed through under the read-ahead's own counters
    return out;
  }
  const std::string& location() const override { return location_; }

  int gets(const Key& key) {
    std::lock_guard lock(mutex_);
    return gets_[key];
  }
  // Fetches of `key` wait until release(key).
  void hold(const Key& key) {
    std::lock_guard lock(mutex_);
    held_.insert(key);
  }
  void release(const Key& key) {
    {
      std::lock_guard lock(mutex_);
      held_.erase(key);
    }
    released_.notify_all();
  }
  // Waits until `key` was asked for `times` times (within 5 s).
  bool asked(const Key& key, int times) {
    for (int i = 0; i < 5000 && gets(key) < times; ++i) std::this_thread::sleep_for(1ms);
    return gets(key) >= times;
  }

 private:
  std::mutex mutex_;
  std::condition_variable released_;
  std::map<Key, int> gets_;
  std::set<Key> held_;
  std::string location_ = "scripted://";
};

struct Fixture {
  explicit Fixture(std::vector<Key> keys, std::uint64_t max_bytes = 256ull << 20,
                   std::chrono::milliseconds plan_takes = 0ms) {
    auto owned = std::make_unique<ScriptedRemote>();
    scripted = owned.get();
    for (std::uint8_t i = 1; i <= 5; ++i)
      scripted->values[fake_key(i)] = "value " + std::to_string(i);
    read_ahead = std::make_unique<ReadAheadRemote>(
        std::move(owned),
        [this, keys, plan_takes](Remote&) {
          std::this_thread::sleep_for(plan_takes);
          ReadAheadPlan plan{keys, [this] { after_ran = true; }};
          return plan;
        },
        2000ms, max_bytes);
  }
  ScriptedRemote* scripted = nullptr;
  std::atomic<bool> after_ran{false};
  std::unique_ptr<ReadAheadRemote> read_ahead;
};

std::string value_of(Result<std::optional<std::string>> got) {
  if (!got) return "(failed: " + got.error().message + ")";
  return got->value_or("(miss)");
}

TEST(ReadAhead, ALookupTakesWhatWasFetchedAheadOnceAndOtherKeysGoToTheRemote) {
  Fixture g({fake_key(1), fake_key(2), fake_key(9)});
  ASSERT_TRUE(g.scripted->asked(fake_key(9), 1));  // the plan's end: a key the remote lacks
  EXPECT_EQ(value_of(g.read_ahead->get(fake_key(2))), "value 2");
  EXPECT_EQ(g.scripted->gets(fake_key(2)), 1);  // fetched ahead, not again
  EXPECT_EQ(value_of(g.read_ahead->get(fake_key(9))), "(miss)");
  EXPECT_EQ(g.scripted->gets(fake_key(9)), 1);  // the read-ahead's miss is the answer
  EXPECT_EQ(value_of(g.read_ahead->get(fake_key(2))), "value 2");
  EXPECT_EQ(g.scripted->gets(fake_key(2)), 2);  // handed over once: now the remote's
  EXPECT_EQ(value_of(g.read_ahead->get(fake_key(3))), "value 3");  // not in the plan
  EXPECT_EQ(g.scripted->gets(fake_key(3)), 1);
  const Stats counted = g.read_ahead->counters();
  EXPECT_EQ(counted.remote_read_ahead, 2U);  // the miss of 9 is not a value
  EXPECT_EQ(counted.remote_read_ahead_taken, 1U);
  EXPECT_EQ(counted.remote_writes, 7U);  // the wrapped remote's counters
  EXPECT_EQ(g.read_ahead->location(), "scripted://");
  EXPECT_FALSE(g.after_ran);  // the plan's bookkeeping waits for stop()
  g.read_ahead->stop();
  EXPECT_TRUE(g.after_ran);
}

TEST(ReadAhead, ALookupOfAKeyNotReachedYetFetchesItItselfAndTheReadAheadSkipsIt) {
  Fixture f({fake_key(1), fake_key(2), fake_key(3), fake_key(4)});
  f.scripted->hold(fake_key(1));  // both fetches in flight stay on keys 1 and 2
  f.scripted->hold(fake_key(2));
  ASSERT_TRUE(f.scripted->asked(fake_key(1), 1));
  ASSERT_TRUE(f.scripted->asked(fake_key(2), 1));
  EXPECT_EQ(value_of(f.read_ahead->get(fake_key(3))), "value 3");
  EXPECT_EQ(f.scripted->gets(fake_key(3)), 1);
  f.scripted->release(fake_key(1));
  f.scripted->release(fake_key(2));
  ASSERT_TRUE(f.scripted->asked(fake_key(4), 1));
  f.read_ahead->stop();
  EXPECT_EQ(f.scripted->gets(fake_key(3)), 1);  // taken off the list: never fetched twice
  EXPECT_TRUE(f.after_ran);
}

TEST(ReadAhead, ALookupWaitsForTheValueBeingFetched) {
  Fixture f({fake_key(1)});
  f.scripted->hold(fake_key(1));
  ASSERT_TRUE(f.scripted->asked(fake_key(1), 1));
  std::thread releaser([&] {
    std::this_thread::sleep_for(50ms);
    f.scripted->release(fake_key(1));
  });
  EXPECT_EQ(value_of(f.read_ahead->get(fake_key(1))), "value 1");
  releaser.join();
  EXPECT_EQ(f.scripted->gets(fake_key(1)), 1);
  EXPECT_EQ(f.read_ahead->counters().remote_read_ahead_taken, 1U);
}

TEST(ReadAhead, ALookupMadeBeforeThePlanIsKnownWaitsForIt) {
  Fixture f({fake_key(1)}, 256ull << 20, 100ms);
  EXPECT_EQ(value_of(f.read_ahead->get(fake_key(1))), "value 1");
  EXPECT_EQ(f.scripted->gets(fake_key(1)), 1);  // once: by the read-ahead or by the lookup
}

TEST(ReadAhead, ReadingStopsAtTheByteBoundAndAtAFailure) {
  // Two fetches are in flight at a time: each stops once the values held pass the bound, so at
  // most three of "value N" (7 bytes each) are fetched under a bound of 10.
  Fixture bounded({fake_key(1), fake_key(2), fake_key(3), fake_key(4), fake_key(5)},
                  /*max_bytes=*/10);
  ASSERT_TRUE(bounded.scripted->asked(fake_key(2), 1));
  bounded.read_ahead->stop();
  EXPECT_EQ(bounded.scripted->gets(fake_key(4)), 0);
  EXPECT_EQ(bounded.scripted->gets(fake_key(5)), 0);
  EXPECT_LE(bounded.read_ahead->counters().remote_read_ahead, 3U);
  EXPECT_GE(bounded.read_ahead->counters().remote_read_ahead, 2U);

  auto owned = std::make_unique<ScriptedRemote>();
  ScriptedRemote& failing = *owned;
  failing.failure = fail(Errc::io, "scripted: down");
  ReadAheadRemote read_ahead(
      std::move(owned),
      [](Remote&) {
        return ReadAheadPlan{{fake_key(1), fake_key(2), fake_key(3), fake_key(4)}, {}};
      },
      2000ms);
  ASSERT_TRUE(failing.asked(fake_key(1), 1));
  read_ahead.stop();
  // The first failure ends the reading (a fetch already in flight beside it ends too).
  EXPECT_EQ(failing.gets(fake_key(3)), 0);
  EXPECT_EQ(failing.gets(fake_key(4)), 0);
}

TEST(ReadAhead, StopDropsWhatNoLookupTookAndLookupsGoToTheRemoteAfter) {
  Fixture f({fake_key(1), fake_key(2)});
  ASSERT_TRUE(f.scripted->asked(fake_key(2), 1));
  f.read_ahead->stop();
  EXPECT_TRUE(f.after_ran);
  EXPECT_EQ(value_of(f.read_ahead->get(fake_key(1))), "value 1");
  EXPECT_EQ(f.scripted->gets(fake_key(1)), 2);  // the fetched-ahead value was dropped
  f.read_ahead->stop();                         // twice: harmless
}

// A value fetched ahead that fails the orchestrator's entry check (a bad value in a read-only main
// layer): the lookup asks the remote, whose next layer holds the valid one.
TEST(ReadAhead, AValueFetchedAheadThatFailsTheEntryCheckIsAskedOfTheRemoteAgain) {
  auto owned = std::make_unique<ScriptedRemote>();
  ScriptedRemote& scripted = *owned;
  scripted.values[fake_key(1)] = "bad";
  scripted.other_layer[fake_key(1)] = "good";
  ReadAheadRemote read_ahead(
      std::move(owned),
      [](Remote&) {
        return ReadAheadPlan{{fake_key(1)}, {}};
      },
      2000ms);
  ASSERT_TRUE(scripted.asked(fake_key(1), 1));
  const auto check = [](std::string_view value) -> Result<void> {
    if (value == "good") return {};
    return fail(Errc::corrupt, "not valid");
  };
  EXPECT_EQ(value_of(read_ahead.get_checked(fake_key(1), check)), "good");
  EXPECT_EQ(scripted.gets(fake_key(1)), 2);  // fetched ahead, then asked again
  EXPECT_EQ(read_ahead.counters().remote_read_ahead_taken, 1U);
}

TEST(ReadAhead, AnEmptyPlanReadsNothingAndWritesPassThrough) {
  Fixture f({});
  ASSERT_TRUE(f.read_ahead->put(fake_key(7), "seven"));
  f.read_ahead->put_later(fake_key(8), "eight");
  EXPECT_EQ(value_of(f.read_ahead->get(fake_key(7))), "seven");
  EXPECT_EQ(value_of(f.read_ahead->get(fake_key(8))), "eight");
  EXPECT_TRUE(f.read_ahead->writable());
  f.read_ahead->stop();
  EXPECT_EQ(f.read_ahead->counters().remote_read_ahead, 0U);
}

}  // namespace
}  // namespace cubby
