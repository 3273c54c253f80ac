#include "net/tls_context.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <utility>

namespace cubby {

namespace {
constexpr std::size_t kTlsReadBuffer = 64 * 1024;
}  // namespace

std::string tls_error_text(const char* fallback) {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return fallback;
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

Result<std::shared_ptr<const TlsContext>> TlsContext::create(const TlsSettings& settings) {
  ERR_clear_error();
  SSL_CTX* raw = SSL_CTX_new(TLS_client_method());
  if (raw == nullptr) {
    return fail(Errc::io, "cannot set up TLS: ", tls_error_text("SSL_CTX_new failed"));
  }
  std::shared_ptr<TlsContext> context(new TlsContext(raw));
  // Client sessions go to keep_session (OpenSSL's own client cache is never looked up).
  SSL_CTX_set_session_cache_mode(raw, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_set_app_data(raw, context.get());
  SSL_CTX_sess_set_new_cb(raw, &TlsContext::keep_session);
  SSL_CTX_set_min_proto_version(raw, TLS1_2_VERSION);
  SSL_CTX_set_verify(raw, SSL_VERIFY_PEER, nullptr);
  SSL_CTX_set_mode(raw, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // Entries are hundreds of KB: read ahead (one recv for many records instead of two per 16 KB
  // record) into a buffer of a few records.
  SSL_CTX_set_read_ahead(raw, 1);
  SSL_CTX_set_default_read_buffer_len(raw, kTlsReadBuffer);
  // AES-128-GCM first (AES-NI makes it the cheapest per byte), ChaCha20 before AES-256 (cheaper
  // where AES-NI is missing); the server picks unless it prefers its own order.
  SSL_CTX_set_ciphersuites(raw,
                           "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256:"
                           "TLS_AES_256_GCM_SHA384");
  if (!settings.ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(raw, settings.ca_file.c_str(), nullptr) != 1) {
      return fail(Errc::invalid_argument, "the remote's CA file ", settings.ca_file,
                  " (CUBBY_REMOTE_CA_FILE) cannot be used: ", tls_error_text("no certificate"),
                  "; name a readable PEM file of CA certificates");
    }
  } else {
    context->system_store_ = true;  // loaded by the first get()
  }
  if (!settings.cert_file.empty()) {
    const std::string& key = settings.key_file.empty() ? settings.cert_file : settings.key_file;
    if (SSL_CTX_use_certificate_chain_file(raw, settings.cert_file.c_str()) != 1) {
      return fail(Errc::invalid_argument, "the client certificate ", settings.cert_file,
                  " (CUBBY_REMOTE_CERT_FILE) cannot be used: ", tls_error_text("unreadable"));
    }
    if (SSL_CTX_use_PrivateKey_file(raw, key.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(raw) != 1) {
      return fail(Errc::invalid_argument, "the client key ", key,
                  " (CUBBY_REMOTE_KEY_FILE) cannot be used with ", settings.cert_file, ": ",
                  tls_error_text("unreadable"));
    }
  } else if (!settings.key_file.empty()) {
    return fail(Errc::invalid_argument,
                "CUBBY_REMOTE_KEY_FILE is set without CUBBY_REMOTE_CERT_FILE; set both or neither");
  }
  return std::shared_ptr<const TlsContext>(std::move(context));
}

SSL_CTX* TlsContext::get() const {
  // The system store is one PEM file of every public CA: OpenSSL 3.0 takes ~40 ms to parse it
  // (43 ms on the dev VM, against 0.2 ms for one CA file), so it is read when the first
  // connection needs it (connect_ahead's thread, usually), not when the remote is set up. A store
  // that cannot be loaded fails verification, whose message says to set CUBBY_REMOTE_CA_FILE.
  if (system_store_)
    std::call_once(system_store_loaded_, [this] {
      SSL_CTX_set_default_verify_paths(context_);
      ERR_clear_error();
    });
  return context_;
}

void TlsContext::resume(SSL* ssl, const std::string& peer) const {
  SSL_set_app_data(ssl, const_cast<std::string*>(&peer));
  SSL_SESSION* session = nullptr;
  {
    std::lock_guard lock(sessions_mutex_);
    const auto found = sessions_.find(peer);
    if (found != sessions_.end() && SSL_SESSION_up_ref(found->second) == 1) session = found->second;
  }
  if (session == nullptr) return;
  SSL_set_session(ssl, session);  // a session the server no longer knows: a full handshake
  SSL_SESSION_free(session);
}

int TlsContext::keep_session(SSL* ssl, SSL_SESSION* session) {
  const auto* peer = static_cast<const std::string*>(SSL_get_app_data(ssl));
  const auto* self = static_cast<const TlsContext*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
  if (peer == nullptr || self == nullptr || SSL_SESSION_is_resumable(session) != 1) return 0;
  std::lock_guard lock(self->sessions_mutex_);
  SSL_SESSION*& kept = self->sessions_[*peer];
  if (kept != nullptr) SSL_SESSION_free(kept);
  kept = session;
  return 1;  // the reference is kept's
}

TlsContext::~TlsContext() {
  for (const auto& [peer, session] : sessions_) SSL_SESSION_free(session);
  SSL_CTX_free(context_);
}

}  // namespace cubby
