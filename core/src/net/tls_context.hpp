// TlsContext: the client side of TLS for remote connections (OpenSSL's libssl): which servers to
// trust and, optionally, the certificate this client shows. Made once per remote; shared by its
// connections (connection.hpp).
//
// Trust: the CA file named by the settings (CUBBY_REMOTE_CA_FILE), else OpenSSL's default store,
// which honours SSL_CERT_FILE and SSL_CERT_DIR. The server is always verified: its chain and its
// name (the URL's host: a DNS name or an IP address), sent as SNI when it is a name.
//
// Sessions: the last session each server (by "host:port") gave this context is kept in memory, so
// a later connection to that server (another pooled connection, a reconnect) resumes it instead of
// making a full handshake (no certificate sent or verified again; the key exchange is still fresh:
// TLS 1.3's psk_dhe_ke). Never written anywhere: a session is a credential (with a client
// certificate, a resumed session is authenticated as that client), and cubby's store folder is
// shared with the group.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "cubby/error.hpp"

typedef struct ssl_ctx_st SSL_CTX;          // NOLINT(modernize-use-using): OpenSSL's own spelling
typedef struct ssl_st SSL;                  // NOLINT(modernize-use-using)
typedef struct ssl_session_st SSL_SESSION;  // NOLINT(modernize-use-using)

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

  // The context, its trust store loaded (the system store on the first call).
  SSL_CTX* get() const;

  // Prepares `ssl` (of this context) for a handshake with `peer` ("host:port", which must outlive
  // `ssl`): offers the session kept for it, if any, and keeps the sessions the server gives.
  void resume(SSL* ssl, const std::string& peer) const;

 private:
  explicit TlsContext(SSL_CTX* context) : context_(context) {}
  // OpenSSL's new-session callback: keeps `session` as its server's.
  static int keep_session(SSL* ssl, SSL_SESSION* session);

  SSL_CTX* context_;
  bool system_store_ = false;  // no CA file: OpenSSL's default store, loaded by the first get()
  mutable std::once_flag system_store_loaded_;
  mutable std::mutex sessions_mutex_;
  mutable std::map<std::string, SSL_SESSION*> sessions_;  // by peer; each holds a reference
};

// OpenSSL's last error on this thread as text (and the queue cleared); `fallback` when none.
std::string tls_error_text(const char* fallback);

}  // namespace cubby
