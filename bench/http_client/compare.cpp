// One HTTP(S) lookup program, built twice by compare.sh: on cubby's own client (HttpBackend,
// -DCOMPARE_CUBBY) and on cpp-httplib (Debian's libcpp-httplib-dev, -DCOMPARE_HTTPLIB), for
// ARCHITECTURE.md's build-vs-buy decision. Both send the same requests to the same server: GET of
// <prefix>/<key> on a kept-alive connection, TLS verified against CA_FILE for https://.
//   compare put  URL KEY BYTES [CA_FILE]   stores BYTES random bytes under KEY
//   compare once URL KEY [CA_FILE]         one lookup (a fresh process's cost: compare.sh times it)
//   compare warm URL KEY N [CA_FILE]       N lookups after a first one: median and p90 in us, and
//                                          the process's CPU per lookup
// Exit status 0 when every lookup found the value, 1 otherwise, 2 for bad arguments.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#if defined(COMPARE_CUBBY)
#include "storage/remote/http/http.hpp"
#elif defined(COMPARE_HTTPLIB)
#include <httplib.h>
#else
#error "build with -DCOMPARE_CUBBY or -DCOMPARE_HTTPLIB (compare.sh does)"
#endif

namespace {

using Clock = std::chrono::steady_clock;

#if defined(COMPARE_CUBBY)
class Client {
 public:
  Client(const std::string& url, const std::string& ca_file) {
    options_.url = cubby::parse_http_url(url).value_or_throw();
    options_.location = url;
    options_.timeout = std::chrono::seconds(5);
    options_.tls.ca_file = ca_file;
    auto tls = cubby::remote_tls_context(options_.url.tls, options_.tls, url);
    if (!tls) std::exit(2);
    backend_ = std::make_unique<cubby::HttpBackend>(options_, 64u << 20, counted_, *tls);
  }
  std::size_t get(const std::string& hex) {
    auto value = backend_->get(cubby::Key::parse(hex).value_or_throw());
    return value && *value ? (*value)->size() : 0;
  }
  bool put(const std::string& hex, const std::string& bytes) {
    return backend_->put(cubby::Key::parse(hex).value_or_throw(), bytes).ok();
  }

 private:
  cubby::HttpOptions options_;
  cubby::AtomicStats counted_;
  std::unique_ptr<cubby::HttpBackend> backend_;
};
#else
class Client {
 public:
  Client(const std::string& url, const std::string& ca_file)
      : client_(url.substr(0, url.find('/', url.find("://") + 3))) {
    const auto slash = url.find('/', url.find("://") + 3);
    prefix_ = slash == std::string::npos ? "" : url.substr(slash);
    if (!ca_file.empty()) client_.set_ca_cert_path(ca_file.c_str());
    client_.enable_server_certificate_verification(true);
    client_.set_keep_alive(true);
    client_.set_connection_timeout(5);
    client_.set_read_timeout(5);
    client_.set_write_timeout(5);
  }
  std::size_t get(const std::string& hex) {
    auto answer = client_.Get((prefix_ + "/" + hex).c_str());
    return answer && answer->status == 200 ? answer->body.size() : 0;
  }
  bool put(const std::string& hex, const std::string& bytes) {
    auto answer = client_.Put((prefix_ + "/" + hex).c_str(), bytes, "application/octet-stream");
    return answer && answer->status >= 200 && answer->status < 300;
  }

 private:
  httplib::Client client_;
  std::string prefix_;
};
#endif

double cpu_us() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6 + usage.ru_utime.tv_usec +
         usage.ru_stime.tv_usec;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() < 3) return 2;
  const std::string& mode = args[0];
  const std::string& url = args[1];
  const std::string& key = args[2];
  if (mode == "once") {
    Client client(url, args.size() > 3 ? args[3] : "");
    return client.get(key) > 0 ? 0 : 1;
  }
  if (mode == "put" && args.size() >= 4) {
    Client client(url, args.size() > 4 ? args[4] : "");
    std::string bytes(std::stoul(args[3]), '\0');
    std::mt19937 random(1);
    for (char& byte : bytes) byte = static_cast<char>(random());
    return client.put(key, bytes) ? 0 : 1;
  }
  if (mode == "warm" && args.size() >= 4) {
    Client client(url, args.size() > 4 ? args[4] : "");
    if (client.get(key) == 0) return 1;  // connected, the value there
    const int n = std::stoi(args[3]);
    std::vector<double> us;
    const double cpu_before = cpu_us();
    for (int i = 0; i < n; ++i) {
      const auto start = Clock::now();
      if (client.get(key) == 0) return 1;
      us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    }
    const double cpu = (cpu_us() - cpu_before) / n;
    std::sort(us.begin(), us.end());
    std::printf("median_us %.1f p90_us %.1f cpu_us_per_lookup %.1f\n", us[us.size() / 2],
                us[us.size() * 9 / 10], cpu);
    return 0;
  }
  return 2;
}
