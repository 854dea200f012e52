// Implementation of TLS session resumption across invocations (OpenSSL's session serialisation,
// new-session callback and SHA-256 for the binding digest).
#include "k8s/tls_resumption.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <ctime>
#include <vector>

#include "util/log.h"

namespace manifold::k8s::beast_detail {
namespace {

std::string sha256_hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha256(), nullptr) != 1) return {};
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out.push_back(kDigits[digest[i] >> 4]);
    out.push_back(kDigits[digest[i] & 0xf]);
  }
  return out;
}

/// Appends `value` with its length, so that no two different field lists hash the same text.
void add_field(std::string& out, const std::string& value) {
  out.append(std::to_string(value.size())).append(":").append(value).append("\n");
}

/// The context's slot for its TlsResumption.
int resumption_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

std::int64_t now_seconds() { return static_cast<std::int64_t>(std::time(nullptr)); }

/// When `session` stops being usable, in Unix seconds.
std::int64_t expiry_of(const SSL_SESSION* session) {
  return static_cast<std::int64_t>(SSL_SESSION_get_time(session)) +
         static_cast<std::int64_t>(SSL_SESSION_get_timeout(session));
}

}  // namespace

std::string session_binding(const ClusterAuth& auth) {
  std::string text = "manifold-tls-binding 1\n";
  add_field(text, auth.server);
  add_field(text, auth.insecure_skip_tls_verify ? std::string("insecure") : auth.ca_pem);
  add_field(text, auth.client_cert_pem);
  add_field(text, sha256_hex(auth.client_key_pem));
  add_field(text, OpenSSL_version(OPENSSL_VERSION));
  return sha256_hex(text);
}

TlsResumption::TlsResumption(const ClusterAuth& auth, std::shared_ptr<TlsSessionStore> store)
    : store_(std::move(store)), binding_(store_ ? session_binding(auth) : std::string()) {}

bool TlsResumption::load() {
  if (!store_ || binding_.empty()) return false;
  std::optional<std::string> bytes = store_->load(binding_, now_seconds());
  if (!bytes) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(bytes->data());
  SSL_SESSION* session = d2i_SSL_SESSION(nullptr, &p, static_cast<long>(bytes->size()));
  stored_.reset(session);
  if (!stored_ || SSL_SESSION_is_resumable(stored_.get()) != 1 || expiry_of(stored_.get()) <= now_seconds()) {
    util::log_verbose("ignoring a stored TLS session that cannot be resumed");
    stored_.reset();
    return false;
  }
  return true;
}

void TlsResumption::capture(SSL_CTX* ctx) {
  if (!store_) return;
  SSL_CTX_set_ex_data(ctx, resumption_index(), this);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(ctx, &TlsResumption::on_new_session);
}

void TlsResumption::offer(SSL* ssl) const {
  if (stored_) SSL_set_session(ssl, stored_.get());
}

void TlsResumption::handshake_done(SSL* ssl) {
  if (!store_) return;
  if (SSL_session_reused(ssl) == 1) {
    ++resumed_;
    util::log_debug("TLS session resumed");
    return;
  }
  std::lock_guard lock(mu_);
  full_handshake_ = true;
}

int TlsResumption::on_new_session(SSL* ssl, SSL_SESSION* session) {
  auto* self = static_cast<TlsResumption*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), resumption_index()));
  if (self == nullptr || SSL_session_reused(ssl) == 1 || SSL_SESSION_is_resumable(session) != 1) return 0;
  const int size = i2d_SSL_SESSION(session, nullptr);
  if (size <= 0) return 0;
  std::string bytes(static_cast<std::size_t>(size), '\0');
  auto* out = reinterpret_cast<unsigned char*>(bytes.data());
  if (i2d_SSL_SESSION(session, &out) != size) return 0;
  std::lock_guard lock(self->mu_);
  self->pending_ = std::move(bytes);
  self->pending_expires_ = expiry_of(session);
  return 0;  // OpenSSL keeps its reference: the bytes are all this object needs
}

void TlsResumption::persist() {
  std::string bytes;
  std::int64_t expires = 0;
  {
    std::lock_guard lock(mu_);
    if (persisted_ || !full_handshake_ || pending_.empty()) return;
    persisted_ = true;
    bytes.swap(pending_);
    expires = pending_expires_;
  }
  store_->save(binding_, bytes, expires, now_seconds());
}

}  // namespace manifold::k8s::beast_detail
