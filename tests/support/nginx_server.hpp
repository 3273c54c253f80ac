// A real nginx for the HTTP remote's tests, started once per test binary (NginxServer::shared) in
// the foreground (`daemon off; master_process off;`) with its own prefix folder, on 127.0.0.1: one
// port for HTTP and one for HTTPS, with a CA and a server certificate (for 127.0.0.1 and
// localhost) made with the `openssl` tool, and a second CA that signed nothing (the wrong CA).
// WebDAV PUT/DELETE as a plain cache server has it (`dav_methods PUT DELETE;
// create_full_put_path on;`, plus libnginx-mod-http-dav-ext when installed), and locations for
// the fault tests:
//   /auth/...      basic auth, user "cubby" password "hunter2"
//   /bearer/...    only with "Authorization: Bearer s3cret-token"
//   /readonly/...  GET and HEAD only (a PUT is 403)
//   /redirect/X    302 to /main/X
//   /short-keepalive/...  closes a kept connection after 100 ms idle (keepalive_timeout 100ms)
// The nginx executable: CUBBY_TEST_NGINX, else nginx in /usr/sbin or on PATH.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "loopback.hpp"
#include "server_process.hpp"
#include "test_support.hpp"

namespace cubby::testing {

class NginxServer {
 public:
  // The binary's one server, started by the first call; nullptr (with the reason in `why`) when
  // nginx or openssl is missing or it does not start.
  static NginxServer* shared(std::string* why) {
    static std::string reason;
    static const std::unique_ptr<NginxServer> server = start(&reason);
    if (!server && why != nullptr) *why = reason;
    return server.get();
  }

  // shared(), its served folder emptied and started again if a test stopped it: for the tests of
  // a suite that share this process (PER_SUITE in tests/CMakeLists.txt), each as if it had the
  // server to itself.
  static NginxServer* fresh(std::string* why) {
    NginxServer* server = shared(why);
    if (server != nullptr && server->pid_ <= 0 && !server->launch(find_nginx())) {
      if (why != nullptr) *why = "nginx did not start again after a test stopped it";
      return nullptr;
    }
    if (server != nullptr) {
      std::error_code ignored;
      for (const auto& entry : std::filesystem::directory_iterator(server->root(), ignored)) {
        std::filesystem::remove_all(entry.path(), ignored);
      }
    }
    return server;
  }

  ~NginxServer() { stop(); }
  NginxServer(const NginxServer&) = delete;
  NginxServer& operator=(const NginxServer&) = delete;

  std::string http_url() const { return "http://127.0.0.1:" + std::to_string(http_port_); }
  std::string https_url() const { return "https://127.0.0.1:" + std::to_string(https_port_); }
  // The folder nginx serves: what was PUT to URL/path is the file root()/path.
  std::filesystem::path root() const { return dir_.path() / "www"; }
  std::filesystem::path ca_file() const { return dir_.path() / "ca.pem"; }
  std::filesystem::path wrong_ca_file() const { return dir_.path() / "other-ca.pem"; }

  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  NginxServer() : dir_("nginx") {}

  static std::string find_nginx() {
    if (const char* path = std::getenv("CUBBY_TEST_NGINX"); path && *path) return path;
    for (const char* candidate : {"/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"}) {
      if (::access(candidate, X_OK) == 0) return candidate;
    }
    return {};
  }

  static std::unique_ptr<NginxServer> start(std::string* why) {
    const std::string exe = find_nginx();
    if (exe.empty()) {
      *why = "no nginx (install nginx and libnginx-mod-http-dav-ext, or set CUBBY_TEST_NGINX)";
      return nullptr;
    }
    std::unique_ptr<NginxServer> server(new NginxServer());
    if (!server->make_certificates()) {
      *why = "openssl could not make the test certificates (install openssl)";
      return nullptr;
    }
    for (int attempt = 0; attempt < 3; ++attempt) {  // a port may be taken meanwhile
      if (server->launch(exe)) return server;
    }
    *why = "nginx did not start: " + read_text(server->dir_.path() / "error.log");
    return nullptr;
  }

  bool run(const std::string& command) const {
    const std::string line = "cd '" + dir_.path().string() + "' && " + command + " >/dev/null 2>&1";
    return std::system(line.c_str()) == 0;
  }

  bool make_certificates() const {
    const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    write_text(dir_.path() / "san.cnf", "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
    return run("openssl req -x509 " + key +
               " -keyout ca.key -out ca.pem -days 2 -subj /CN=cubby-test-ca") &&
           run("openssl req -x509 " + key +
               " -keyout other-ca.key -out other-ca.pem -days 2 -subj /CN=cubby-other-ca") &&
           run("openssl req " + key + " -keyout server.key -out server.csr -subj /CN=localhost") &&
           run("openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
               "-out server.pem -days 2 -extfile san.cnf");
  }

  static bool accepts(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    const bool connected = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    return connected;
  }

  void write_config() const {
    const std::string dir = dir_.path().string();
    const std::string dav =
        "dav_methods PUT DELETE; create_full_put_path on; dav_access user:rw group:r;";
    const std::string dav_ext = "/usr/lib/nginx/modules/ngx_http_dav_ext_module.so";
    const bool has_dav_ext = std::filesystem::exists(dav_ext);
    std::filesystem::create_directories(root());
    write_text(dir_.path() / "htpasswd", "cubby:{PLAIN}hunter2\n");
    write_text(
        dir_.path() / "nginx.conf",
        (has_dav_ext ? "load_module " + dav_ext + ";\n" : std::string()) +
            "daemon off;\nmaster_process off;\nworker_processes 1;\npid " + dir +
            "/nginx.pid;\nerror_log " + dir +
            "/error.log warn;\nevents { worker_connections 256; }\n"
            "http {\n  access_log off;\n  client_max_body_size 256m;\n"
            "  client_body_temp_path " +
            dir + "/tmp-body;\n  proxy_temp_path " + dir + "/tmp-proxy;\n  fastcgi_temp_path " +
            dir + "/tmp-fastcgi;\n  uwsgi_temp_path " + dir + "/tmp-uwsgi;\n  scgi_temp_path " +
            dir + "/tmp-scgi;\n  server {\n    listen 127.0.0.1:" + std::to_string(http_port_) +
            ";\n    listen 127.0.0.1:" + std::to_string(https_port_) +
            " ssl;\n    ssl_certificate " + dir + "/server.pem;\n    ssl_certificate_key " + dir +
            "/server.key;\n    root " + root().string() + ";\n    location / { " + dav +
            (has_dav_ext ? " dav_ext_methods PROPFIND OPTIONS;" : "") +
            " }\n    location /auth/ { auth_basic cubby; auth_basic_user_file " + dir +
            "/htpasswd; " + dav +
            " }\n    location /bearer/ { if ($http_authorization != \"Bearer s3cret-token\") { "
            "return 401; } " +
            dav +
            " }\n    location /readonly/ { limit_except GET HEAD { deny all; } }\n"
            "    location /redirect/ { rewrite ^/redirect/(.*)$ /main/$1 redirect; }\n"
            "    location /short-keepalive/ { keepalive_timeout 100ms; " +
            dav + " }\n  }\n}\n");
  }

  bool launch(const std::string& exe) {
    http_port_ = free_loopback_port();
    https_port_ = free_loopback_port();
    if (http_port_ == 0 || https_port_ == 0 || http_port_ == https_port_) return false;
    write_config();
    const std::string prefix = dir_.path().string() + "/";
    const std::string conf = prefix + "nginx.conf";
    const std::string log = prefix + "error.log";
    pid_ = start_server({exe, "-p", prefix, "-c", conf, "-e", log},
                        [&] { return accepts(http_port_) && accepts(https_port_); });
    return pid_ > 0;
  }

  TempDir dir_;
  int http_port_ = 0, https_port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace cubby::testing
