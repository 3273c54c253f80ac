// Redis Cluster routing (core/src/storage/remote/redis/redis_cluster.cpp): slots, the CLUSTER NODES
// map, redirections; and the Redis tier against a real 3-master cluster reached through a plain
// redis:// URL of one node: keys spread over every master, and a master killed mid-load costs
// the keys of its slots only, each call within its deadline.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <set>

#include "redis_fleet.hpp"
#include "storage/remote/redis/redis.hpp"
#include "storage/remote/redis/redis_cluster.hpp"

namespace cubby {
namespace {

using testing::RedisCluster;
using testing::RedisServer;
using testing::TlsRedis;

TEST(ClusterSlot, MatchesTheSpecificationsExamples) {
  EXPECT_EQ(cluster_slot("123456789"), 0x31C3);  // CRC16/XMODEM check value
  EXPECT_EQ(cluster_slot("foo"), 12182);
  EXPECT_EQ(cluster_slot("{user1000}.following"), cluster_slot("{user1000}.followers"));
  EXPECT_EQ(cluster_slot("{user1000}.following"), cluster_slot("user1000"));
  EXPECT_EQ(cluster_slot("foo{}{bar}"), cluster_slot("foo{}{bar}"));  // empty tag: whole key
  EXPECT_NE(cluster_slot("foo{}{bar}"), cluster_slot("bar"));
}

constexpr std::string_view kNodes =
    "07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004 slave "
    "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected\n"
    "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002,cache-2 master - 0 "
    "1426238316232 2 connected 5461-10922\n"
    "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30003@31003 master - 0 1426238318243 3 "
    "connected 10923-16383 [10923->-67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1]\n"
    "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca :30001@31001 myself,master - 0 0 1 connected "
    "0-5460\n"
    "6ec23923021cf3ffec47632106199cb7f496ce01 127.0.0.1:30005@31005 master,fail - 0 0 5 "
    "connected\n";

TEST(ParseClusterNodes, MapsEverySlotToItsMaster) {
  const Endpoint self{"10.0.0.1", 30001, ""};
  auto map = parse_cluster_nodes(kNodes, self);
  ASSERT_TRUE(map) << map.error().message;
  ASSERT_EQ(map->masters.size(), 3u);
  EXPECT_EQ(*map->node(0), (Endpoint{"10.0.0.1", 30001, ""}));  // "myself" without address
  EXPECT_EQ(*map->node(5460), (Endpoint{"10.0.0.1", 30001, ""}));
  EXPECT_EQ(*map->node(5461), (Endpoint{"127.0.0.1", 30002, ""}));
  EXPECT_EQ(*map->node(10923), (Endpoint{"127.0.0.1", 30003, ""}));
  EXPECT_EQ(*map->node(16383), (Endpoint{"127.0.0.1", 30003, ""}));
}

TEST(ParseClusterNodes, UnservedSlotsHaveNoNodeAndJunkIsRefused) {
  auto partial = parse_cluster_nodes(
      "a 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0 2-3\n", {"h", 7000, ""});
  ASSERT_TRUE(partial) << partial.error().message;
  EXPECT_NE(partial->node(0), nullptr);
  EXPECT_EQ(partial->node(1), nullptr);
  EXPECT_NE(partial->node(3), nullptr);
  EXPECT_EQ(partial->node(4), nullptr);
  for (const char* bad :
       {"", "not a cluster reply", "a 127.0.0.1:7000@1 master - 0 0 1 connected 9-2",
        "a 127.0.0.1:7000@1 master - 0 0 1 connected 0-16384",
        "a nowhere master - 0 0 1 connected 0-5"}) {
    EXPECT_FALSE(parse_cluster_nodes(bad, {"h", 1, ""})) << bad;
  }
}

TEST(ParseRedirect, MovedAndAsk) {
  const Endpoint from{"10.0.0.9", 7000, ""};
  auto moved = parse_redirect("MOVED 3999 127.0.0.1:6381", from);
  ASSERT_TRUE(moved);
  EXPECT_FALSE(moved->ask);
  EXPECT_EQ(moved->slot, 3999);
  EXPECT_EQ(moved->to, (Endpoint{"127.0.0.1", 6381, ""}));
  auto ask = parse_redirect("ASK 3999 :6381", from);  // unknown endpoint: the same host
  ASSERT_TRUE(ask);
  EXPECT_TRUE(ask->ask);
  EXPECT_EQ(ask->to, (Endpoint{"10.0.0.9", 6381, ""}));
  auto v6 = parse_redirect("MOVED 1 ::1:7001", from);
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->to.host, "::1");
  for (const char* bad :
       {"ERR x", "MOVED", "MOVED 99999 h:1", "MOVED 1 h", "MOVED 1 h:0", "ASK x h:1", "LOADING"}) {
    EXPECT_FALSE(parse_redirect(bad, from)) << bad;
  }
}

Key key_of(int i) {
  Key key;
  key.bytes.fill(0);
  key.bytes[0] = static_cast<std::uint8_t>(i);
  key.bytes[1] = static_cast<std::uint8_t>(i >> 8);
  key.bytes[15] = static_cast<std::uint8_t>(::getpid() & 0xff);
  key.bytes[14] = static_cast<std::uint8_t>((::getpid() >> 8) & 0xff);
  return key;
}

RedisOptions cluster_options(const std::string& url) {
  RedisOptions o;
  o.url = parse_redis_url(url).value_or_throw();
  o.location = url;
  o.timeout = std::chrono::milliseconds(500);
  o.backoff = std::chrono::seconds(60);
  return o;
}

constexpr int kKeys = 120;

TEST(RedisClusterTier, APlainUrlOfAnyNodeReachesEveryMaster) {
  std::string why;
  RedisCluster* cluster = RedisCluster::fresh(&why);
  if (cluster == nullptr) GTEST_SKIP() << why;
  const auto writer = open_redis_remote(cluster_options(cluster->url(1)));
  for (int i = 0; i < kKeys; ++i) {
    auto put = writer->put(key_of(i), "value " + std::to_string(i));
    ASSERT_TRUE(put) << put.error().message;
  }
  // Every master holds some of them: the keys went to their slots' masters.
  for (const auto& node : cluster->masters()) {
    auto size = node->command({"DBSIZE"});
    ASSERT_TRUE(size && size->value);
    EXPECT_GT(std::stoi(*size->value), 0) << node->url();
  }
  // A reader entering through another node finds every key.
  const auto reader = open_redis_remote(cluster_options(cluster->url(2)));
  for (int i = 0; i < kKeys; ++i) {
    auto got = reader->get(key_of(i));
    ASSERT_TRUE(got && got->has_value()) << (got ? "missing" : got.error().message);
    EXPECT_EQ(**got, "value " + std::to_string(i));
  }
  const Stats counters = reader->counters();
  EXPECT_EQ(counters.remote_errors + counters.remote_timeouts + counters.remote_skipped, 0u);
}

TEST(RedisClusterTier, AMasterKilledMidLoadCostsItsSlotsOnlyWithinTheDeadline) {
  std::string why;
  auto cluster = RedisCluster::start(&why);
  if (!cluster) GTEST_SKIP() << why;
  RedisOptions o = cluster_options(cluster->url(0));
  const auto tier = open_redis_remote(o);
  for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(tier->put(key_of(i), "v"));
  // Which keys the victim holds (asked of it directly, before it dies).
  RedisServer& victim = *cluster->masters()[2];
  std::set<int> lost;
  for (int i = 0; i < kKeys; ++i) {
    const std::string name = RedisBackend::redis_key(key_of(i));
    auto held = victim.command({"EXISTS", name});
    if (held && held->value == "1") lost.insert(i);
  }
  ASSERT_FALSE(lost.empty());
  ASSERT_LT(lost.size(), static_cast<std::size_t>(kKeys));
  victim.stop();  // kill -9
  int hits = 0;
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < kKeys; ++i) {
      const auto start = std::chrono::steady_clock::now();
      auto got = tier->get(key_of(i));
      EXPECT_LT(std::chrono::steady_clock::now() - start, 2 * o.timeout) << i;
      if (lost.count(i) != 0) {
        EXPECT_FALSE(got && got->has_value()) << i;
      } else {
        ASSERT_TRUE(got && got->has_value()) << i << ": " << (got ? "" : got.error().message);
        ++hits;
      }
    }
  }
  EXPECT_EQ(hits, 2 * (kKeys - static_cast<int>(lost.size())));
  const Stats counters = tier->counters();
  // The victim failed once; its keys were skipped after that, the others never.
  EXPECT_EQ(counters.remote_errors + counters.remote_timeouts, 1u);
  EXPECT_EQ(counters.remote_skipped, 2 * lost.size() - 1);
  // Writes of the victim's keys are dropped, the others made.
  EXPECT_FALSE(tier->put(key_of(*lost.begin()), "w"));
  for (int i = 0; i < kKeys; ++i) {
    if (lost.count(i) == 0) {
      EXPECT_TRUE(tier->put(key_of(i), "w"));
      break;
    }
  }
}

// A URL naming every node: a fresh process finds the slot map while its first node is dead (a
// URL of that node alone would make every lookup a miss), and misses that node's keys only.
TEST(RedisClusterTier, AFreshProcessFindsTheClusterThroughTheNextNodeWhenTheFirstIsDead) {
  std::string why;
  auto cluster = RedisCluster::start(&why);
  if (!cluster) GTEST_SKIP() << why;
  const std::string url = cluster->seeds_url(0);
  ASSERT_TRUE(parse_redis_url(url)) << url;
  {
    const auto writer = open_redis_remote(cluster_options(cluster->url(1)));
    for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(writer->put(key_of(i), "v"));
  }
  RedisServer& first = *cluster->masters()[0];
  std::set<int> lost;
  for (int i = 0; i < kKeys; ++i) {
    auto held = first.command({"EXISTS", RedisBackend::redis_key(key_of(i))});
    if (held && held->value == "1") lost.insert(i);
  }
  ASSERT_FALSE(lost.empty());
  first.stop();  // kill -9
  RedisOptions o = cluster_options(url);
  const auto tier = open_redis_remote(o);
  tier->connect_ahead();  // as a fresh process does: to the first node that accepts
  int hits = 0;
  for (int i = 0; i < kKeys; ++i) {
    const auto start = std::chrono::steady_clock::now();
    auto got = tier->get(key_of(i));
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2 * o.timeout) << i;
    if (lost.count(i) == 0) {
      EXPECT_TRUE(got && got->has_value()) << i << ": " << (got ? "missing" : got.error().message);
      hits += got && got->has_value() ? 1 : 0;
    } else {
      EXPECT_FALSE(got && got->has_value()) << i;
    }
  }
  EXPECT_EQ(hits, kKeys - static_cast<int>(lost.size()));
  // The dead node cost one failed connection; its keys were skipped after that.
  EXPECT_LE(tier->counters().remote_errors + tier->counters().remote_timeouts, 2u);
}

// rediss:// to a cluster whose nodes speak TLS (tls-cluster yes): the slot map read over TLS
// names the nodes' TLS ports, each verified by the CA; keys reach every master, and a URL of
// several nodes finds them too.
TEST(RedisClusterTier, ATlsClusterIsReachedOverTlsThroughAnyNode) {
  std::string why;
  const TlsRedis* certs = TlsRedis::get(&why);
  if (certs == nullptr) GTEST_SKIP() << why;
  auto cluster = RedisCluster::start(&why, certs);
  if (!cluster) GTEST_SKIP() << why;
  const auto tls_options = [&](const std::string& url) {
    RedisOptions o = cluster_options(url);
    o.tls.ca_file = certs->ca_file();
    return o;
  };
  const auto writer = open_redis_remote(tls_options(cluster->tls_url(1)));
  for (int i = 0; i < kKeys; ++i) {
    auto put = writer->put(key_of(i), "tls " + std::to_string(i));
    ASSERT_TRUE(put) << put.error().message;
  }
  for (const auto& node : cluster->masters()) {
    auto size = node->command({"DBSIZE"});
    ASSERT_TRUE(size && size->value);
    EXPECT_GT(std::stoi(*size->value), 0) << node->url();
  }
  const std::string seeds = cluster->tls_url(2) + "," + cluster->tls_url(0).substr(9);
  const auto reader = open_redis_remote(tls_options(seeds));
  for (int i = 0; i < kKeys; ++i) {
    auto got = reader->get(key_of(i));
    ASSERT_TRUE(got && got->has_value()) << (got ? "missing" : got.error().message);
    EXPECT_EQ(**got, "tls " + std::to_string(i));
  }
  const Stats counters = reader->counters();
  EXPECT_EQ(counters.remote_errors + counters.remote_timeouts + counters.remote_skipped, 0u);
}

// The figure `field` ("calls", "rejected_calls": redirections) of `command` in a node's
// INFO commandstats; 0 before the command was first run, -1 when the node cannot be asked.
long command_stat(const RedisServer& node, const std::string& command, const std::string& field) {
  auto info = node.command({"INFO", "commandstats"});
  if (!info || !info->value) return -1;
  const std::string& text = *info->value;
  const auto line = text.find("cmdstat_" + command + ":");
  if (line == std::string::npos) return 0;
  const auto at = text.find(field + "=", line);
  if (at == std::string::npos || at > text.find('\n', line)) return 0;
  return std::stol(text.substr(at + field.size() + 1));
}

// What `redis-cli -c` (following redirections as Redis' own client does) prints for `args`.
std::string redis_cli(int port, const std::string& args) {
  const std::string line = "redis-cli -c -h 127.0.0.1 -p " + std::to_string(port) + " " + args;
  std::string out;
  if (FILE* pipe = ::popen(line.c_str(), "r")) {
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
      out.append(buffer, n);
    ::pclose(pipe);
  }
  return out;
}

// A slot in migration from one master of the shared cluster to another, driven by hand as
// `redis-cli --cluster reshard` does it (CLUSTER SETSLOT IMPORTING / MIGRATING, MIGRATE, SETSLOT
// NODE), and handed back to its first master when it goes, whatever state the test left it in.
class SlotMigration {
 public:
  SlotMigration(int slot, RedisServer& source, RedisServer& target, RedisServer& other)
      : slot_(std::to_string(slot)), source_(source), target_(target), other_(other) {}
  ~SlotMigration() { hand_back(); }

  // Starts the migration: the source answers -ASK for the slot's keys it no longer holds.
  bool start() {
    return ok(target_, {"CLUSTER", "SETSLOT", slot_, "IMPORTING", id(source_)}) &&
           ok(source_, {"CLUSTER", "SETSLOT", slot_, "MIGRATING", id(target_)});
  }
  bool migrate(const std::string& name) {
    return ok(source_, {"MIGRATE", "127.0.0.1", std::to_string(target_.port()), name, "0", "5000"});
  }
  // Ends it: every node knows the target serves the slot (the source then answers -MOVED).
  bool finish() { return assign(target_, {&target_, &source_, &other_}); }
  // The slot back on the source, the keys named by forget_later deleted.
  void hand_back() {
    if (done_) return;
    done_ = true;
    ok(target_, {"CLUSTER", "SETSLOT", slot_, "NODE", id(target_)});
    for (const auto& name : names_) target_.command({"DEL", name});
    ok(source_, {"CLUSTER", "SETSLOT", slot_, "IMPORTING", id(target_)});
    ok(target_, {"CLUSTER", "SETSLOT", slot_, "MIGRATING", id(source_)});
    assign(source_, {&source_, &target_, &other_});  // the importing source bumps its epoch
    for (const auto& name : names_) source_.command({"DEL", name});
  }
  // Keys the hand-back deletes.
  void forget_later(const std::string& name) { names_.push_back(name); }

 private:
  static bool ok(RedisServer& node, const std::vector<std::string>& args) {
    auto reply = node.command(args);
    return reply && reply->type == '+';
  }
  static std::string id(RedisServer& node) {
    auto reply = node.command({"CLUSTER", "MYID"});
    return reply && reply->value ? *reply->value : std::string();
  }
  // SETSLOT NODE on the new owner first (it bumps its config epoch, so its claim wins), then on
  // the others.
  bool assign(RedisServer& owner, std::initializer_list<RedisServer*> nodes) {
    bool all = true;
    for (RedisServer* node : nodes) {
      all = ok(*node, {"CLUSTER", "SETSLOT", slot_, "NODE", id(owner)}) && all;
    }
    return all;
  }

  std::string slot_;
  RedisServer& source_;
  RedisServer& target_;
  RedisServer& other_;
  std::vector<std::string> names_;
  bool done_ = false;
};

// The master of `cluster` that serves `name` (the one that does not redirect a GET).
std::size_t owner_of(RedisCluster& cluster, const std::string& name) {
  for (std::size_t i = 0; i < cluster.masters().size(); ++i) {
    auto reply = cluster.masters()[i]->command({"GET", name});
    if (reply && reply->type != '-') return i;
  }
  return cluster.masters().size();
}

// A slot in migration, as `redis-cli --cluster reshard` leaves it between its steps: the source
// answers -ASK for a key already migrated (followed after ASKING, the slot map kept: the source
// still serves the keys it holds), a new key lands where the cluster puts it (the target), and
// once the migration ends the source's -MOVED is followed.
TEST(RedisClusterTier, ASlotInMigrationIsFollowedThroughAskThenMoved) {
  std::string why;
  RedisCluster* cluster = RedisCluster::fresh(&why);
  if (cluster == nullptr) GTEST_SKIP() << why;
  // Three keys of one slot: `moved` is migrated, `stays` is not (yet), `fresh` is written during
  // the migration.
  std::map<int, std::vector<Key>> by_slot;
  std::vector<Key> keys;
  for (int i = 0; keys.empty(); ++i) {
    Key key = key_of(i);
    key.bytes[2] = 0xa5;  // apart from the other tests' keys
    auto& same = by_slot[cluster_slot(RedisBackend::redis_key(key))];
    same.push_back(key);
    if (same.size() == 3) keys = same;
  }
  const int slot = cluster_slot(RedisBackend::redis_key(keys[0]));
  const std::string moved = RedisBackend::redis_key(keys[0]);
  const std::string stays = RedisBackend::redis_key(keys[1]);
  const std::string fresh = RedisBackend::redis_key(keys[2]);
  const std::size_t from = owner_of(*cluster, moved);
  ASSERT_LT(from, 3u);
  RedisServer& source = *cluster->masters()[from];
  RedisServer& target = *cluster->masters()[(from + 1) % 3];
  RedisServer& other = *cluster->masters()[(from + 2) % 3];
  ASSERT_EQ(target.command({"CLUSTER", "KEYSLOT", moved})->value, std::to_string(slot));

  // Entered through the third node: the first -MOVED gives the tier the slot map.
  const auto tier = open_redis_remote(cluster_options(other.url()));
  ASSERT_TRUE(tier->put(keys[0], "moved"));
  ASSERT_TRUE(tier->put(keys[1], "stays"));
  SlotMigration migration(slot, source, target, other);
  for (const auto& name : {moved, stays, fresh}) migration.forget_later(name);
  ASSERT_TRUE(migration.start());
  ASSERT_TRUE(migration.migrate(moved));
  ASSERT_EQ(source.command({"GET", moved})->value.value_or(""),
            "ASK " + std::to_string(slot) + " 127.0.0.1:" + std::to_string(target.port()));

  // A key already migrated: -ASK from the source, then ASKING and GET on the target.
  const long asked = command_stat(target, "asking", "calls");
  const long target_gets = command_stat(target, "get", "calls");
  auto got = tier->get(keys[0]);
  ASSERT_TRUE(got && got->has_value()) << (got ? "missing" : got.error().message);
  EXPECT_EQ(**got, "moved");
  EXPECT_EQ(command_stat(target, "asking", "calls"), asked + 1);
  EXPECT_EQ(command_stat(target, "get", "calls"), target_gets + 1);

  // A key not migrated yet: the map still sends it to the source (an -ASK does not move the slot),
  // which serves it; the target is not asked.
  const long source_gets = command_stat(source, "get", "calls");
  const long target_redirected = command_stat(target, "get", "rejected_calls");
  got = tier->get(keys[1]);
  ASSERT_TRUE(got && got->has_value()) << (got ? "missing" : got.error().message);
  EXPECT_EQ(**got, "stays");
  EXPECT_EQ(command_stat(source, "get", "calls"), source_gets + 1);
  EXPECT_EQ(command_stat(target, "get", "calls"), target_gets + 1);
  EXPECT_EQ(command_stat(target, "get", "rejected_calls"), target_redirected);
  EXPECT_EQ(command_stat(target, "asking", "calls"), asked + 1);

  // A new key of the slot: the source (which does not hold it) sends the SET to the target, as
  // it would send redis-cli's; ASKING again, on the connection the GET left in the pool.
  ASSERT_TRUE(tier->put(keys[2], "fresh"));
  EXPECT_EQ(command_stat(target, "asking", "calls"), asked + 2);
  EXPECT_EQ(target.command({"CLUSTER", "COUNTKEYSINSLOT", std::to_string(slot)})->value, "2");
  EXPECT_EQ(source.command({"CLUSTER", "COUNTKEYSINSLOT", std::to_string(slot)})->value, "1");
  const std::string fresh_by_cli = redis_cli(other.port(), "GET " + fresh);
  got = tier->get(keys[2]);
  ASSERT_TRUE(got && got->has_value()) << (got ? "missing" : got.error().message);
  EXPECT_EQ(**got, "fresh");

  // The migration ends: the source answers -MOVED, followed; every key is a hit.
  ASSERT_TRUE(migration.migrate(stays));
  ASSERT_TRUE(migration.finish());
  const long redirected = command_stat(source, "get", "rejected_calls");
  const std::vector<std::string> values = {"moved", "stays", "fresh"};
  for (std::size_t i = 0; i < keys.size(); ++i) {
    got = tier->get(keys[i]);
    ASSERT_TRUE(got && got->has_value()) << i << ": " << (got ? "missing" : got.error().message);
    EXPECT_EQ(**got, values[i]);
  }
  EXPECT_GE(command_stat(source, "get", "rejected_calls"), redirected + 1);
  // What redis-cli -c read during the migration is the value the tier wrote.
  EXPECT_EQ(fresh_by_cli, target.command({"GET", fresh})->value.value_or("none") + "\n");
  const Stats counters = tier->counters();
  EXPECT_EQ(counters.remote_errors + counters.remote_timeouts + counters.remote_skipped, 0u);

  // Handed back: every node says the source serves the slot again.
  migration.hand_back();
  const std::string to_source =
      "MOVED " + std::to_string(slot) + " 127.0.0.1:" + std::to_string(source.port());
  EXPECT_EQ(source.command({"GET", moved})->type, '$');
  EXPECT_EQ(target.command({"GET", moved})->value, to_source);
  EXPECT_EQ(other.command({"GET", moved})->value, to_source);
}

// A migration opened on the source only (MIGRATING without IMPORTING on the target, as a reshard
// begun in the wrong order leaves it): the source answers -ASK for a key it lacks, the target
// (not importing) -MOVED back to the source, for ever. The call follows kMaxRedirects of them and
// ends: a miss within its deadline, counted once.
TEST(RedisClusterTier, ARedirectionCircleOfAHalfOpenMigrationIsAMissWithinTheDeadline) {
  std::string why;
  RedisCluster* cluster = RedisCluster::fresh(&why);
  if (cluster == nullptr) GTEST_SKIP() << why;
  Key key = key_of(0);
  key.bytes[2] = 0x5a;  // apart from the other tests' keys; never written
  const std::string name = RedisBackend::redis_key(key);
  const std::string slot = std::to_string(cluster_slot(name));
  const std::size_t from = owner_of(*cluster, name);
  ASSERT_LT(from, 3u);
  RedisServer& source = *cluster->masters()[from];
  RedisServer& target = *cluster->masters()[(from + 1) % 3];
  // A URL of every node: the tier reads the slot map before its first call.
  const RedisOptions o = cluster_options(cluster->seeds_url((from + 2) % 3));
  const auto tier = open_redis_remote(o);
  auto target_id = target.command({"CLUSTER", "MYID"});
  ASSERT_TRUE(target_id && target_id->value);
  ASSERT_EQ(source.command({"CLUSTER", "SETSLOT", slot, "MIGRATING", *target_id->value})->type,
            '+');
  struct Stable {  // the migration closed again, whatever happens
    RedisServer& node;
    std::string slot;
    ~Stable() { node.command({"CLUSTER", "SETSLOT", slot, "STABLE"}); }
  } stable{source, slot};
  ASSERT_EQ(target.command({"GET", name})->value,
            "MOVED " + slot + " 127.0.0.1:" + std::to_string(source.port()));

  const long source_redirected = command_stat(source, "get", "rejected_calls");
  const long target_redirected = command_stat(target, "get", "rejected_calls");
  ::testing::internal::CaptureStderr();
  const auto start = std::chrono::steady_clock::now();
  auto got = tier->get(key);
  EXPECT_LT(std::chrono::steady_clock::now() - start, o.timeout);
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(got && got->has_value());
  EXPECT_NE(said.find("redirections (a slot migration left half open?"), std::string::npos) << said;
  // The first ask and kMaxRedirects more, alternating: source, target, source, target.
  const int asks = RedisBackend::kMaxRedirects + 1;
  EXPECT_EQ(command_stat(source, "get", "rejected_calls"), source_redirected + (asks + 1) / 2);
  EXPECT_EQ(command_stat(target, "get", "rejected_calls"), target_redirected + asks / 2);
  EXPECT_EQ(tier->counters().remote_errors, 1u);
}

}  // namespace
}  // namespace cubby
