// Layered remotes (core/src/storage/remote/layered.cpp) over in-memory backends, and their
// spelling in CUBBY_REMOTE (open_remote_tier): reads in order, the first hit wins and is copied
// nowhere, a failing layer is a miss for that layer only, a value that fails the entry check is
// passed over for the next layer's, writes go to the first writable layer.
#include <gtest/gtest.h>

#include <map>

#include "fake_backend.hpp"
#include "storage/remote/layered.hpp"

namespace cubby {
namespace {

using testing::count_of;
using testing::fake_key;
using testing::FakeBackend;
using testing::FakeRemote;

RemoteOptions named(std::string location, bool read_only = false) {
  RemoteOptions options;
  options.location = std::move(location);
  options.read_only = read_only;
  return options;
}

// Two layers as a PR job has them: main (read-only) over a writable overlay. The test keeps the
// backends' states.
struct TwoLayers {
  TwoLayers() {
    main.state->writable = false;  // as a read-only layer's backend answers
    std::vector<std::unique_ptr<Remote>> layers;
    layers.push_back(std::move(main.tier));
    layers.push_back(std::move(overlay.tier));
    layered = std::make_unique<LayeredRemote>(std::move(layers));
  }
  FakeRemote main{named("fake://main", true)};
  FakeRemote overlay{named("fake://pr")};
  std::unique_ptr<LayeredRemote> layered;
};

std::map<std::string, std::string> values(FakeBackend::State& state) {
  std::lock_guard lock(state.mutex);
  return state.values;
}

TEST(LayeredRemote, ReadsInOrderAndTheFirstHitIsCopiedNowhere) {
  TwoLayers two;
  {
    std::lock_guard lock(two.main.state->mutex);
    two.main.state->values[fake_key(1).hex()] = "from main";
    two.main.state->values[fake_key(2).hex()] = "main's";
  }
  {
    std::lock_guard lock(two.overlay.state->mutex);
    two.overlay.state->values[fake_key(2).hex()] = "overlay's";
    two.overlay.state->values[fake_key(3).hex()] = "from overlay";
  }
  auto found = two.layered->get(fake_key(1));
  ASSERT_TRUE(found && found->has_value());
  EXPECT_EQ(**found, "from main");
  EXPECT_EQ(count_of(*two.overlay.state, &FakeBackend::State::gets), 0);  // not asked
  found = two.layered->get(fake_key(2));
  ASSERT_TRUE(found && found->has_value());
  EXPECT_EQ(**found, "main's");  // the lower layer is read first
  found = two.layered->get(fake_key(3));
  ASSERT_TRUE(found && found->has_value());
  EXPECT_EQ(**found, "from overlay");
  found = two.layered->get(fake_key(4));
  ASSERT_TRUE(found);
  EXPECT_FALSE(found->has_value());
  two.layered->drain();
  EXPECT_EQ(count_of(*two.main.state, &FakeBackend::State::puts), 0);
  EXPECT_EQ(count_of(*two.overlay.state, &FakeBackend::State::puts), 0);  // no back-fill
}

TEST(LayeredRemote, WritesGoToTheFirstWritableLayerOnly) {
  TwoLayers two;
  EXPECT_TRUE(two.layered->writable());
  two.layered->put_later(fake_key(1), "queued");
  ASSERT_TRUE(two.layered->put(fake_key(2), "now"));
  two.layered->drain();
  EXPECT_EQ(values(*two.main.state).size(), 0u);
  EXPECT_EQ(count_of(*two.main.state, &FakeBackend::State::puts), 0);
  EXPECT_EQ(values(*two.overlay.state).size(), 2u);
  EXPECT_EQ(two.layered->counters().remote_writes_dropped, 0u);
  EXPECT_EQ(two.layered->location(), "fake://main|read-only fake://pr");
}

TEST(LayeredRemote, WithNoWritableLayerNothingIsWrittenOrQueued) {
  FakeRemote a(named("fake://a", true)), b(named("fake://b", true));
  a.state->writable = false;
  b.state->writable = false;
  std::vector<std::unique_ptr<Remote>> layers;
  layers.push_back(std::move(a.tier));
  layers.push_back(std::move(b.tier));
  LayeredRemote layered(std::move(layers));
  EXPECT_FALSE(layered.writable());
  layered.put_later(fake_key(1), "bytes");
  auto put = layered.put(fake_key(1), "bytes");
  ASSERT_FALSE(put);
  EXPECT_EQ(put.error().code, Errc::invalid_argument);
  layered.drain();
  EXPECT_EQ(
      count_of(*a.state, &FakeBackend::State::puts) + count_of(*b.state, &FakeBackend::State::puts),
      0);
}

TEST(LayeredRemote, AFailingLayerIsAMissForThatLayerAndTheOthersAreStillAsked) {
  TwoLayers two;
  two.main.state->failure = Failure{Errc::io, "main is down"};
  {
    std::lock_guard lock(two.overlay.state->mutex);
    two.overlay.state->values[fake_key(1).hex()] = "from overlay";
  }
  auto found = two.layered->get(fake_key(1));
  ASSERT_TRUE(found && found->has_value());
  EXPECT_EQ(**found, "from overlay");
  auto missing = two.layered->get(fake_key(2));  // main skipped (its breaker), overlay answered
  ASSERT_TRUE(missing);
  EXPECT_FALSE(missing->has_value());
  EXPECT_EQ(count_of(*two.main.state, &FakeBackend::State::gets), 1);  // then skipped
  EXPECT_EQ(two.layered->counters().remote_skipped, 1u);
  two.overlay.state->failure = Failure{Errc::io, "overlay is down too"};
  EXPECT_FALSE(two.layered->get(fake_key(3)));  // every layer failed: a failure (a miss)
}

// The orchestrator's entry check as a test spells it: a value is valid when it starts with "good",
// of another format version when it starts with "v9" (a miss), else bad.
Result<void> entry_check(std::string_view value) {
  if (value.starts_with("good")) return {};
  if (value.starts_with("v9")) return fail(Errc::not_found, "an entry of format version 9");
  return fail(Errc::corrupt, "corrupt entry: checksum mismatch");
}

// A bad value in the read-only main must not hide the overlay's good one (a fresh runner would
// compile that kernel for ever): it is passed over, counted rejected and said once.
TEST(LayeredRemote, AValueThatFailsTheEntryCheckIsPassedOverForTheNextLayersAndCounted) {
  TwoLayers two;
  {
    std::lock_guard lock(two.main.state->mutex);
    two.main.state->values[fake_key(1).hex()] = "corrupt";
    two.main.state->values[fake_key(2).hex()] = "corrupt too";
    two.main.state->values[fake_key(3).hex()] = "v9 entry";
    two.main.state->values[fake_key(4).hex()] = "good, main's";
  }
  {
    std::lock_guard lock(two.overlay.state->mutex);
    two.overlay.state->values[fake_key(1).hex()] = "good, the overlay's";
    two.overlay.state->values[fake_key(3).hex()] = "good, the overlay's v2";
    two.overlay.state->values[fake_key(4).hex()] = "good, the overlay's";
  }
  ::testing::internal::CaptureStderr();
  auto found = two.layered->get_checked(fake_key(1), entry_check);
  auto missing = two.layered->get_checked(fake_key(2), entry_check);  // no valid value anywhere
  auto newer = two.layered->get_checked(fake_key(3), entry_check);
  auto first = two.layered->get_checked(fake_key(4), entry_check);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(found && found->has_value()) << (found ? "miss" : found.error().message);
  EXPECT_EQ(**found, "good, the overlay's");
  ASSERT_TRUE(missing);
  EXPECT_FALSE(missing->has_value());
  ASSERT_TRUE(newer && newer->has_value());
  EXPECT_EQ(**newer, "good, the overlay's v2");
  ASSERT_TRUE(first && first->has_value());
  EXPECT_EQ(**first, "good, main's");  // a valid value in main is the answer, as before
  EXPECT_EQ(two.layered->counters().remote_rejected, 2u);       // keys 1 and 2; 3 is a miss
  EXPECT_EQ(err.find("cubby: "), err.rfind("cubby: ")) << err;  // one message
  EXPECT_NE(err.find("fake://main"), std::string::npos) << err;
  EXPECT_NE(err.find("checksum mismatch"), std::string::npos) << err;
  // get without a check is what it was: the first value found.
  auto unchecked = two.layered->get(fake_key(1));
  ASSERT_TRUE(unchecked && unchecked->has_value());
  EXPECT_EQ(**unchecked, "corrupt");
}

// A fake scheme for open_remote_tier whose backends' states the test can reach by URL.
std::map<std::string, std::shared_ptr<FakeBackend::State>>& fakes() {
  static std::map<std::string, std::shared_ptr<FakeBackend::State>> states;
  return states;
}

std::unique_ptr<RemoteTier> open_fake(const Config& config, RemoteOptions options) {
  if (!known_attributes(options, {"colour"})) return nullptr;
  auto state = std::make_shared<FakeBackend::State>();
  state->writable = !options.read_only;
  fakes()[config.remote_url] = state;
  return std::make_unique<RemoteTier>(std::make_unique<FakeBackend>(state), options,
                                      std::make_shared<AtomicStats>());
}

TEST(LayeredRemote, CubbyRemoteSpellsLayersAsUrlsWithAttributes) {
  const RemoteScheme schemes[] = {{"fake://", open_fake}};
  Config config;
  config.remote_url = "  fake://u:hunter2@main|read-only\tfake://pr|colour=blue \n";
  fakes().clear();
  auto remote = open_remote_tier(config, schemes);
  ASSERT_NE(remote, nullptr);
  EXPECT_EQ(remote->location(), "fake://***@main|read-only fake://pr");
  ASSERT_EQ(fakes().size(), 2u);
  EXPECT_FALSE(fakes().at("fake://u:hunter2@main")->writable);
  EXPECT_TRUE(fakes().at("fake://pr")->writable);
  ASSERT_TRUE(remote->put(fake_key(1), "entry"));
  EXPECT_EQ(values(*fakes().at("fake://pr")).size(), 1u);
  EXPECT_EQ(values(*fakes().at("fake://u:hunter2@main")).size(), 0u);
  EXPECT_EQ(redact_remote_url(config.remote_url),
            "fake://***@main|read-only fake://pr|colour=blue");

  // One layer is a RemoteTier as before; CUBBY_REMOTE_MODE=read makes every layer read-only.
  config.remote_url = "fake://one";
  EXPECT_NE(dynamic_cast<RemoteTier*>(open_remote_tier(config, schemes).get()), nullptr);
  config.remote_url = "fake://a fake://b";
  config.remote_read_only = true;
  EXPECT_FALSE(open_remote_tier(config, schemes)->writable());
}

TEST(LayeredRemote, ALayerThatCannotBeOpenedIsLeftOutWithAWarning) {
  const RemoteScheme schemes[] = {{"fake://", open_fake}};
  Config config;
  config.remote_url = "fake://main|colour=red|shape=round nope://x:hunter2@pr fake://kept";
  ::testing::internal::CaptureStderr();
  auto remote = open_remote_tier(config, schemes);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_NE(remote, nullptr);
  EXPECT_EQ(remote->location(), "fake://kept");
  EXPECT_NE(err.find("|shape is not an attribute of this kind of remote (it takes read-only, "
                     "colour=)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("nope://***@pr"), std::string::npos) << err;
  EXPECT_EQ(err.find("hunter2"), std::string::npos) << err;
}

}  // namespace
}  // namespace cubby
