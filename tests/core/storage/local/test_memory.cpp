// Tests for core/src/storage/local/memory.cpp: the in-process LRU of decoded entries.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "storage/local/memory.hpp"

namespace cubby {
namespace {

Key make_key(int n) {
  Key key;
  for (std::size_t i = 0; i < key.bytes.size(); ++i) {
    key.bytes[i] = static_cast<std::uint8_t>((n >> (8 * (i % 4))) & 0xff);
  }
  return key;
}

std::shared_ptr<const Entry> make_entry(std::size_t payload_bytes, char fill = 'p') {
  auto entry = std::make_shared<Entry>();
  entry->payload.assign(payload_bytes, fill);
  return entry;
}

TEST(MemoryTier, GetReturnsWhatWasPut) {
  MemoryTier tier;
  EXPECT_EQ(tier.get(make_key(1)), nullptr);
  const auto entry = make_entry(10);
  tier.put(make_key(1), entry);
  EXPECT_EQ(tier.get(make_key(1)), entry);
  EXPECT_EQ(tier.get(make_key(2)), nullptr);
  EXPECT_EQ(tier.size(), 1u);

  const auto replacement = make_entry(20);
  tier.put(make_key(1), replacement);
  EXPECT_EQ(tier.get(make_key(1)), replacement);
  EXPECT_EQ(tier.size(), 1u);
}

TEST(MemoryTier, EvictsLeastRecentlyUsedByCount) {
  MemoryTier tier(3, 1u << 20);
  for (int i = 1; i <= 3; ++i) tier.put(make_key(i), make_entry(1));
  ASSERT_NE(tier.get(make_key(1)), nullptr);  // 1 is now the most recent; 2 is the oldest
  tier.put(make_key(4), make_entry(1));
  EXPECT_EQ(tier.size(), 3u);
  EXPECT_EQ(tier.get(make_key(2)), nullptr);
  EXPECT_NE(tier.get(make_key(1)), nullptr);
  EXPECT_NE(tier.get(make_key(3)), nullptr);
  EXPECT_NE(tier.get(make_key(4)), nullptr);
  // Order now (most recent first): 4, 3, 1. The next put evicts 1.
  tier.put(make_key(5), make_entry(1));
  EXPECT_EQ(tier.get(make_key(1)), nullptr);
  EXPECT_NE(tier.get(make_key(3)), nullptr);
}

TEST(MemoryTier, EvictsByPayloadBytes) {
  MemoryTier tier(100, 1000);
  tier.put(make_key(1), make_entry(400));
  tier.put(make_key(2), make_entry(400));
  EXPECT_EQ(tier.size(), 2u);
  tier.put(make_key(3), make_entry(400));  // 1200 > 1000: the oldest goes
  EXPECT_EQ(tier.size(), 2u);
  EXPECT_EQ(tier.get(make_key(1)), nullptr);
  EXPECT_NE(tier.get(make_key(2)), nullptr);
  tier.put(make_key(4), make_entry(1000));  // fills the bound alone: everything else goes
  EXPECT_EQ(tier.size(), 1u);
  EXPECT_NE(tier.get(make_key(4)), nullptr);
}

TEST(MemoryTier, ReplacingAnEntryReleasesItsBytes) {
  MemoryTier tier(100, 1000);
  tier.put(make_key(1), make_entry(900));
  tier.put(make_key(1), make_entry(100));
  tier.put(make_key(2), make_entry(800));  // fits only if the 900 bytes were released
  EXPECT_EQ(tier.size(), 2u);
  EXPECT_NE(tier.get(make_key(1)), nullptr);
}

TEST(MemoryTier, OversizedEntryIsNotKeptAndEvictsNothing) {
  MemoryTier tier(100, 1000);
  tier.put(make_key(1), make_entry(10));
  tier.put(make_key(2), make_entry(1001));
  EXPECT_EQ(tier.get(make_key(2)), nullptr);
  EXPECT_NE(tier.get(make_key(1)), nullptr);
  EXPECT_EQ(tier.size(), 1u);
}

TEST(MemoryTier, RemoveAndClear) {
  MemoryTier tier(10, 1000);
  for (int i = 0; i < 5; ++i) tier.put(make_key(i), make_entry(100));
  tier.remove(make_key(2));
  tier.remove(make_key(42));  // absent: no effect
  EXPECT_EQ(tier.size(), 4u);
  EXPECT_EQ(tier.get(make_key(2)), nullptr);
  // Removed bytes are released: five more 100-byte entries fit beside the four (900 <= 1000).
  for (int i = 10; i < 15; ++i) tier.put(make_key(i), make_entry(100));
  EXPECT_EQ(tier.size(), 9u);
  EXPECT_NE(tier.get(make_key(0)), nullptr);

  tier.clear();
  EXPECT_EQ(tier.size(), 0u);
  EXPECT_EQ(tier.get(make_key(0)), nullptr);
  for (int i = 0; i < 10; ++i) tier.put(make_key(i), make_entry(100));
  EXPECT_EQ(tier.size(), 10u) << "clear must release the byte count too";
}

TEST(MemoryTier, RemoveIfRemovesTheChosenEntriesAndReleasesTheirBytes) {
  MemoryTier tier(10, 1000);
  for (int i = 0; i < 6; ++i) tier.put(make_key(i), make_entry(150, i % 2 == 0 ? 'e' : 'o'));
  tier.remove_if([](const Entry& entry) { return entry.payload[0] == 'e'; });
  EXPECT_EQ(tier.size(), 3u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(tier.get(make_key(i)) == nullptr, i % 2 == 0) << i;
  // 450 bytes remain: three more 150-byte entries fit (900 <= 1000) and evict nothing.
  for (int i = 10; i < 13; ++i) tier.put(make_key(i), make_entry(150));
  EXPECT_EQ(tier.size(), 6u) << "remove_if must release the byte count too";
  EXPECT_NE(tier.get(make_key(1)), nullptr);
}

TEST(MemoryTier, EntriesOutliveEviction) {
  MemoryTier tier(1, 1000);
  const auto held = tier.get(make_key(1));
  EXPECT_EQ(held, nullptr);
  tier.put(make_key(1), make_entry(5, 'a'));
  const auto first = tier.get(make_key(1));
  tier.put(make_key(2), make_entry(5, 'b'));
  EXPECT_EQ(tier.get(make_key(1)), nullptr);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->payload, "aaaaa");
}

TEST(MemoryTier, ConcurrentAccessKeepsBounds) {
  static constexpr std::size_t kMaxEntries = 16;
  static constexpr std::size_t kMaxBytes = 4000;
  MemoryTier tier(kMaxEntries, kMaxBytes);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&tier, t] {
      for (int i = 0; i < 5000; ++i) {
        const int n = (i * 31 + t * 7) % 40;
        const auto size = static_cast<std::size_t>(n) * 10;
        const char fill = static_cast<char>('a' + n % 26);
        switch (i % 5) {
          case 0:
          case 1:
            tier.put(make_key(n), make_entry(size, fill));
            break;
          case 4:
            tier.remove(make_key(n));
            break;
          default: {
            const auto entry = tier.get(make_key(n));
            // Whatever is found under a key is the entry written for that key.
            if (entry) {
              EXPECT_EQ(entry->payload, std::string(size, fill));
            }
          }
        }
        EXPECT_LE(tier.size(), kMaxEntries);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_LE(tier.size(), kMaxEntries);
  std::size_t bytes = 0;
  for (int n = 0; n < 40; ++n) {
    if (const auto entry = tier.get(make_key(n))) bytes += entry->payload.size();
  }
  EXPECT_LE(bytes, kMaxBytes);
}

}  // namespace
}  // namespace cubby
