// TlsContext: the client side of TLS for remote connections (OpenSSL's libssl): which servers to
// trust and, optionally, the certificate this client shows. Made once per remote; shared by its
// connections (redis_connection.hpp).
//
// Trust: the CA file named by the settings (CUBBY_REMOTE_CA_FILE), else OpenSSL's default store,
// which honours SSL_CERT_FILE and SSL_CERT_DIR. The server is always verified: its chain and its
// name (the URL's host: a DNS name or an IP address), sent as SNI when it is a name.
#pragma once

#include <memory>
#include <string>

#include "cubby/error.hpp"

typedef struct ssl_ctx_st SSL_CTX;  // NOLINT(modernize-use-using): OpenSSL's own spelling

namespace cubby {

struct TlsSettings {
  std::string ca_file;    // PEM CA certificates to trust; empty: the system store
  std::string cert_file;  // PEM client certificate (chain); empty: none
  std::string key_file;   // its PEM private key; empty: in cert_file

  bool operator==(const TlsSettings&) const = default;
};

class TlsContext {
 public:
  // A context for `settings`; invalid_argument naming the file that cannot be used (and what to
  // do) otherwise.
  static Result<std::shared_ptr<const TlsContext>> create(const TlsSettings& settings);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  SSL_CTX* get() const { return context_; }

 private:
  explicit TlsContext(SSL_CTX* context) : context_(context) {}
  SSL_CTX* context_;
};

// OpenSSL's last error on this thread as text (and the queue cleared); `fallback` when none.
std::string tls_error_text(const char* fallback);

}  // namespace cubby
