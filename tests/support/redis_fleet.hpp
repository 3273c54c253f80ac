// The Redis servers of the remote tier's TLS and Cluster tests, each started once per test
// process on first use and killed at its exit (RedisServer underneath); `fresh` hands one over
// emptied, for the tests of a suite that runs in one process (PER_SUITE in tests/CMakeLists.txt):
// - TlsRedis: a redis-server with a TLS port whose certificate (for 127.0.0.1 and localhost) is
//   signed by a CA the fixture makes with the `openssl` command, plus a second, unrelated CA; it
//   listens on 127.0.0.2 too (an address its certificate does not name);
// - RedisCluster: three masters (also started on demand, for tests that kill one)
// (`--cluster-enabled yes`) joined by
//   `redis-cli --cluster create`, every slot served.
// Each `get` returns nullptr (and why) when the tools are missing: the tests skip with it.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "redis_server.hpp"
#include "test_support.hpp"

namespace cubby::testing {

// Runs `command` with sh; true when it exits 0. Its output goes to `log`.
inline bool run_quietly(const std::string& command, const std::filesystem::path& log) {
  const std::string line = command + " >" + log.string() + " 2>&1";
  return std::system(line.c_str()) == 0;
}

// The one `Fixture` of this process, started (Fixture::start) on first use; nullptr and `why`
// when it could not be.
template <class Fixture>
Fixture* started_once(std::string* why) {
  static std::string failed;
  static const std::unique_ptr<Fixture> instance = Fixture::start(&failed);
  *why = failed;
  return instance.get();
}

class TlsRedis {
 public:
  static TlsRedis* get(std::string* why) { return started_once<TlsRedis>(why); }
  // get(), handed over as a fresh server would be: resumed and emptied (FLUSHALL), started again
  // (same ports and certificates) when a test stopped it; for the tests of a suite that share
  // this process (PER_SUITE in tests/CMakeLists.txt). nullptr (and `why`) when it cannot be.
  static TlsRedis* fresh(std::string* why) {
    TlsRedis* tls = get(why);
    if (tls == nullptr) return nullptr;
    tls->server_->resume();
    auto flushed = tls->server().command({"FLUSHALL"});
    if (!tls->server_->running() || !flushed || flushed->value != "OK") {
      // A test stopped it (or left it unusable): the same ports and certificates again.
      tls->server_.reset();
      tls->server_ = RedisServer::start(why, tls->arguments_);
      if (!tls->server_) return nullptr;
    }
    return tls;
  }

  int tls_port() const { return tls_port_; }
  const RedisServer& server() const { return *server_; }
  // The CA that signed the server's certificate, and one that did not.
  std::string ca_file() const { return (certs_.path() / "ca.crt").string(); }
  std::string cert_dir() const { return certs_.path().string(); }
  std::string wrong_ca_file() const { return (certs_.path() / "other-ca.crt").string(); }
  // A client certificate and key signed by ca_file's CA.
  std::string client_cert() const { return (certs_.path() / "client.crt").string(); }
  std::string client_key() const { return (certs_.path() / "client.key").string(); }
  std::string url(const std::string& host = "127.0.0.1") const {
    return "rediss://" + host + ":" + std::to_string(tls_port_);
  }

 private:
  TlsRedis() : certs_("tls") {}

  friend TlsRedis* started_once<TlsRedis>(std::string* why);
  static std::unique_ptr<TlsRedis> start(std::string* why) {
    std::unique_ptr<TlsRedis> out(new TlsRedis());
    const std::filesystem::path dir = out->certs_.path();
    const std::string d = dir.string();
    const std::string key = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    const std::vector<std::string> steps = {
        "openssl req -x509" + key + " -keyout " + d + "/ca.key -out " + d +
            "/ca.crt -days 2 -subj /CN=cubby-test-ca",
        "openssl req -x509" + key + " -keyout " + d + "/other-ca.key -out " + d +
            "/other-ca.crt -days 2 -subj /CN=cubby-other-ca",
        "openssl req" + key + " -keyout " + d + "/server.key -out " + d +
            "/server.csr -subj /CN=localhost",
        "openssl x509 -req -in " + d + "/server.csr -CA " + d + "/ca.crt -CAkey " + d +
            "/ca.key -CAcreateserial -out " + d + "/server.crt -days 2 -extfile " + d + "/san.ext",
        "openssl req" + key + " -keyout " + d + "/client.key -out " + d +
            "/client.csr -subj /CN=cubby-client",
        "openssl x509 -req -in " + d + "/client.csr -CA " + d + "/ca.crt -CAkey " + d +
            "/ca.key -CAcreateserial -out " + d + "/client.crt -days 2",
    };
    std::ofstream(dir / "san.ext") << "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
    for (const std::string& step : steps) {
      if (!run_quietly(step, dir / "openssl.log")) {
        *why =
            "cannot make test certificates with the openssl command (Debian: apt-get install "
            "openssl): " +
            step;
        return nullptr;
      }
    }
    out->tls_port_ = RedisServer::free_port();
    out->arguments_ = {"--tls-port", std::to_string(out->tls_port_), "--tls-cert-file",
                       d + "/server.crt", "--tls-key-file", d + "/server.key", "--tls-ca-cert-file",
                       d + "/ca.crt", "--tls-auth-clients", "optional",
                       // 127.0.0.2 too: an address the certificate does not name
                       "--bind", "127.0.0.1", "127.0.0.2"};
    out->server_ = RedisServer::start(why, out->arguments_);
    if (!out->server_) {
      *why += " (with --tls-port: a redis-server built without TLS?)";
      return nullptr;
    }
    return out;
  }

  TempDir certs_;
  int tls_port_ = 0;
  std::vector<std::string> arguments_;  // the server's TLS options, for a restart
  std::unique_ptr<RedisServer> server_;
};

class RedisCluster {
 public:
  // The cluster shared by the tests of this process (tests that kill nodes start their own).
  static RedisCluster* get(std::string* why) { return started_once<RedisCluster>(why); }
  // get(), every master emptied (FLUSHALL), for the tests of a suite that share this process
  // (PER_SUITE in tests/CMakeLists.txt).
  static RedisCluster* fresh(std::string* why) {
    RedisCluster* cluster = get(why);
    if (cluster != nullptr) {
      for (const auto& node : cluster->masters_) node->command({"FLUSHALL"});
    }
    return cluster;
  }
  // With `tls`: every node also has a TLS port with `tls`'s certificate, and the cluster bus runs
  // over TLS (tls-cluster yes), so CLUSTER NODES asked over TLS names the TLS ports.
  static std::unique_ptr<RedisCluster> start(std::string* why, const TlsRedis* tls = nullptr) {
    auto out = std::make_unique<RedisCluster>();
    std::string create = "redis-cli --cluster create";
    for (int i = 0; i < 3; ++i) {
      std::vector<std::string> args = {
          "--cluster-enabled", "yes", "--cluster-config-file", "{dir}/nodes.conf", "--cluster-port",
          std::to_string(RedisServer::free_port()), "--cluster-node-timeout", "2000",
          // the other masters keep serving their slots when one is killed
          "--cluster-require-full-coverage", "no"};
      if (tls != nullptr) {
        out->tls_ports_.push_back(RedisServer::free_port());
        const std::vector<std::string> more = {
            "--tls-port",         std::to_string(out->tls_ports_.back()),
            "--tls-cluster",      "yes",
            "--tls-cert-file",    tls->cert_dir() + "/server.crt",
            "--tls-key-file",     tls->cert_dir() + "/server.key",
            "--tls-ca-cert-file", tls->ca_file(),
            "--tls-auth-clients", "optional"};
        args.insert(args.end(), more.begin(), more.end());
      }
      auto node = RedisServer::start(why, args);
      if (!node) return nullptr;
      create += " 127.0.0.1:" + std::to_string(node->port());
      out->masters_.push_back(std::move(node));
    }
    create += " --cluster-replicas 0 --cluster-yes";
    if (!run_quietly(create, out->masters_[0]->dir() / "create.log")) {
      *why = "`" + create + "` failed (Debian: apt-get install redis-tools)";
      return nullptr;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (const auto& node : out->masters_) {
      while (!state_ok(*node)) {
        if (std::chrono::steady_clock::now() > deadline) {
          *why = "the test cluster did not reach cluster_state:ok within 20 s";
          return nullptr;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    return out;
  }

  std::vector<std::unique_ptr<RedisServer>>& masters() { return masters_; }
  // A rediss:// URL of one node's TLS port (a cluster started with `tls`).
  std::string tls_url(std::size_t node) const {
    return "rediss://127.0.0.1:" + std::to_string(tls_ports_.at(node));
  }
  // A plain redis:// URL of one node (any node serves as the way in).
  std::string url(std::size_t node = 0) const { return masters_[node]->url(); }
  // A redis:// URL of every node, `first` first (redis://host:port,host:port,...).
  std::string seeds_url(std::size_t first = 0) const {
    std::string out = url(first);
    for (std::size_t i = 0; i < masters_.size(); ++i) {
      if (i != first) out += "," + url(i).substr(std::string_view("redis://").size());
    }
    return out;
  }

 private:
  static bool state_ok(const RedisServer& node) {
    auto info = node.command({"CLUSTER", "INFO"});
    return info && info->value && info->value->find("cluster_state:ok") != std::string::npos;
  }

  std::vector<std::unique_ptr<RedisServer>> masters_;
  std::vector<int> tls_ports_;  // by node, when started with TLS
};

}  // namespace cubby::testing
