// Internal to the Beast transport (beast_connection.cpp): TLS session resumption across invocations
// with OpenSSL. At set-up the session stored for this server identity (TlsSessionStore) is loaded;
// every connection offers it; the sessions the server hands out (TLS 1.3 tickets arrive after the
// handshake, while the first answer is read) are captured through the context's new-session
// callback; the newest one after a full handshake becomes the session later connections of this
// process offer (the agent reconnects for days: its start-up session expires, or a restarted
// server declines it), and is stored when the transport says an exchange completed. A resumed
// handshake stores nothing: its session is still valid, and not rewriting the file keeps a
// resumed call free of file writes. The binding digest covers the server URL, the CA (or
// "insecure"), the client certificate, a digest of the client key and the OpenSSL version, so a
// session is never offered to another server, under another trust anchor or by another client
// identity.
#pragma once

#include <openssl/ssl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "http/kubeconfig.h"
#include "http/tls_session_store.h"

namespace manifold::http::beast_detail {

/// The binding digest (64 hex digits) of `auth`'s server identity and client identity.
std::string session_binding(const ClusterAuth& auth);

/// Resumes TLS sessions of one API server across invocations. offer/handshake_done may run on
/// several threads at once (the agent's streams); the captured session is guarded.
class TlsResumption {
 public:
  /// Sessions of `auth` (which must outlive this object) in `store`; a null store disables
  /// resumption. Touches no OpenSSL state.
  TlsResumption(const ClusterAuth& auth, std::shared_ptr<TlsSessionStore> store);
  TlsResumption(const TlsResumption&) = delete;
  TlsResumption& operator=(const TlsResumption&) = delete;

  /// Computes the binding and loads the stored session; true when a usable one will be offered to
  /// the server. Call once, after OpenSSL was initialised the way manifold wants it (no openssl.cnf).
  bool load();
  /// Makes `ctx` report every new session to this object, which must outlive the context's use.
  void capture(SSL_CTX* ctx);
  /// Offers the current session (the stored one, or the newest of a full handshake since; only
  /// within its lifetime) on a connection before its handshake.
  void offer(SSL* ssl) const;
  /// Counts the completed handshake of `ssl` when it resumed the offered session.
  void handshake_done(SSL* ssl);
  /// Stores the newest session received after a full handshake, if it is not stored yet.
  void persist();
  /// Handshakes that resumed an offered session so far.
  int resumed() const { return resumed_.load(); }

 private:
  static int on_new_session(SSL* ssl, SSL_SESSION* session) noexcept;
  struct SessionFree {
    void operator()(SSL_SESSION* s) const noexcept { SSL_SESSION_free(s); }
  };

  const ClusterAuth& auth_;
  std::shared_ptr<TlsSessionStore> store_;
  std::string binding_;
  std::atomic<int> resumed_{0};
  mutable std::mutex mu_;  // guards the three members below
  /// The session offered to every new connection (each gets a copy).
  std::unique_ptr<SSL_SESSION, SessionFree> current_;
  /// The serialised newest session of a full handshake, not stored yet, and its expiry.
  std::string pending_;
  std::int64_t pending_expires_ = 0;
};

}  // namespace manifold::http::beast_detail
