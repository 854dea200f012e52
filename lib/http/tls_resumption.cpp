// Implementation of TLS session resumption across invocations (OpenSSL's session serialisation,
// new-session callback and SHA-256 for the binding digest).
#include "http/tls_resumption.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <ctime>
#include <optional>
#include <vector>

#include "util/log.h"
#include "util/quote.h"

namespace manifold::http::beast_detail {
namespace {

std::string sha256_hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha256(), nullptr) != 1) return {};
  return util::hex_lower(std::string_view(reinterpret_cast<const char*>(digest), size));
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

/// Reads a DER length at `pos` (advancing it); nullopt when malformed or past `end`.
std::optional<std::size_t> der_length(const std::string& der, std::size_t& pos, std::size_t end) {
  if (pos >= end) return std::nullopt;
  const auto first = static_cast<unsigned char>(der[pos++]);
  if (first < 0x80) return first;
  const std::size_t bytes = first & 0x7f;
  if (bytes == 0 || bytes > 4 || end - pos < bytes) return std::nullopt;
  std::size_t length = 0;
  for (std::size_t i = 0; i < bytes; ++i) length = (length << 8) | static_cast<unsigned char>(der[pos++]);
  if (length > end - pos) return std::nullopt;
  return length;
}

/// A DER length field for `length`.
std::string der_length_field(std::size_t length) {
  if (length < 0x80) return std::string(1, static_cast<char>(length));
  std::string bytes;
  for (std::size_t l = length; l > 0; l >>= 8) bytes.insert(bytes.begin(), static_cast<char>(l & 0xff));
  return static_cast<char>(0x80 | bytes.size()) + bytes;
}

/// The serialised session without the server's certificate (the SEQUENCE's [3] element): a
/// resumed handshake never looks at it, and decoding it when the session is loaded would cost as
/// much as the verification resumption saves. `der` unchanged when it is not the expected shape.
std::string without_peer_certificate(const std::string& der) {
  std::size_t pos = 1;
  if (der.empty() || static_cast<unsigned char>(der[0]) != 0x30) return der;
  const std::optional<std::size_t> total = der_length(der, pos, der.size());
  if (!total || pos + *total != der.size()) return der;
  std::string body;
  while (pos < der.size()) {
    const std::size_t start = pos;
    const auto tag = static_cast<unsigned char>(der[pos++]);
    const std::optional<std::size_t> length = der_length(der, pos, der.size());
    if (!length || (tag & 0x1f) == 0x1f) return der;  // no multi-byte tags in a session
    pos += *length;
    if (tag != 0xa3) body.append(der, start, pos - start);
  }
  return "\x30" + der_length_field(body.size()) + body;
}

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
    : auth_(auth), store_(std::move(store)) {}

bool TlsResumption::load() {
  if (!store_) return false;
  binding_ = session_binding(auth_);
  if (binding_.empty()) return false;
  std::optional<std::string> bytes = store_->load(binding_, now_seconds());
  if (!bytes) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(bytes->data());
  std::unique_ptr<SSL_SESSION, SessionFree> stored(d2i_SSL_SESSION(nullptr, &p, static_cast<long>(bytes->size())));
  if (!stored || SSL_SESSION_is_resumable(stored.get()) != 1 || expiry_of(stored.get()) <= now_seconds()) {
    util::log_verbose("ignoring a stored TLS session that cannot be resumed");
    return false;
  }
  std::lock_guard lock(mu_);
  current_ = std::move(stored);
  return true;
}

void TlsResumption::capture(SSL_CTX* ctx) {
  if (!store_) return;
  SSL_CTX_set_ex_data(ctx, resumption_index(), this);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(ctx, &TlsResumption::on_new_session);
}

void TlsResumption::offer(SSL* ssl) const {
  // A long-running process (the agent) connects again long after load(): never past the lifetime.
  std::unique_ptr<SSL_SESSION, SessionFree> copy;
  {
    std::lock_guard lock(mu_);
    if (!current_ || expiry_of(current_.get()) <= now_seconds()) return;
    copy.reset(SSL_SESSION_dup(current_.get()));
  }
  // Each connection gets a copy: OpenSSL marks the session of a connection that ends without a TLS
  // shutdown (every server that closes after answering) not resumable, and the next connection
  // must still be able to offer it. SSL_set_session takes its own reference.
  if (copy) SSL_set_session(ssl, copy.get());
}

void TlsResumption::handshake_done(SSL* ssl) {
  if (store_ && SSL_session_reused(ssl) == 1) {
    ++resumed_;
    util::log_debug("TLS session resumed");
  }
}

int TlsResumption::on_new_session(SSL* ssl, SSL_SESSION* session) noexcept {
  // Called from inside OpenSSL, whose C frames an exception must never cross (the static
  // binary's OpenSSL has no unwind tables): a session that cannot be kept is simply not kept.
  try {
    auto* self = static_cast<TlsResumption*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), resumption_index()));
    if (self == nullptr || SSL_session_reused(ssl) == 1 || SSL_SESSION_is_resumable(session) != 1) return 0;
    const int size = i2d_SSL_SESSION(session, nullptr);
    if (size <= 0) return 0;
    std::string bytes(static_cast<std::size_t>(size), '\0');
    auto* out = reinterpret_cast<unsigned char*>(bytes.data());
    if (i2d_SSL_SESSION(session, &out) != size) return 0;
    // A copy, not a reference: the connection's own session is marked not resumable if that
    // connection ends without a TLS shutdown (see offer). OpenSSL keeps its reference (we return 0).
    std::unique_ptr<SSL_SESSION, SessionFree> copy(SSL_SESSION_dup(session));
    std::lock_guard lock(self->mu_);
    if (copy) self->current_ = std::move(copy);
    self->pending_ = without_peer_certificate(bytes);
    self->pending_expires_ = expiry_of(session);
    return 0;
  } catch (...) {
    return 0;
  }
}

void TlsResumption::persist() {
  if (!store_) return;
  std::string bytes;
  std::int64_t expires = 0;
  {
    std::lock_guard lock(mu_);
    if (pending_.empty()) return;  // pending_ holds only sessions of full handshakes
    bytes.swap(pending_);
    expires = pending_expires_;
  }
  store_->save(binding_, bytes, expires, now_seconds());
}

}  // namespace manifold::http::beast_detail
