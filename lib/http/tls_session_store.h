// TLS sessions kept between invocations, so that the next short-lived manifold process resumes its
// TLS session with the API server instead of running a full handshake (no certificate chain to
// verify, no client-key signature; with the CA loaded only if the server declines). One small file,
// `<cniDir>/.tls/session` (a name the cache never takes for a container), mode 0600: it holds a
// resumption secret, protected like the client key the kubeconfig already keeps on the node. One
// file, whatever the identity: rotated client certificates or CAs replace it instead of piling up
// files. A session is bound to a digest of everything that identifies the peer and us (server URL,
// CA, client certificate and key, TLS library version), is never handed out past its lifetime (and
// never for more than the seven days TLS 1.3 allows a ticket), and anything unreadable, foreign or
// malformed is ignored: the handshake is then simply a full one. Saving is best effort and never
// throws. Reads and writes go through util::FileReader/FileWriter, so tests use the in-memory fakes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "util/file_reader.h"
#include "util/file_writer.h"

namespace manifold::http {

/// The directory of the stored TLS sessions of cache directory `cni_dir`: "<cni_dir>/.tls".
inline std::string tls_session_dir(const std::string& cni_dir) { return cni_dir + "/.tls"; }

/// Stored TLS sessions of one node (one directory).
class TlsSessionStore {
 public:
  /// Longest lifetime a stored session may claim, in seconds (TLS 1.3's limit for a ticket).
  static constexpr std::int64_t kMaxLifetimeSeconds = 7 * 24 * 3600;
  /// Largest session file read (a session is a few KB; anything larger is not ours).
  static constexpr std::size_t kMaxFileBytes = 64u << 10;

  /// Keeps sessions in `dir` (created on the first save).
  TlsSessionStore(std::string dir, std::shared_ptr<util::FileReader> reader, std::shared_ptr<util::FileWriter> writer);

  /// The session stored for `binding` (a lowercase hex digest), or nullopt when there is none, it
  /// belongs to another binding, it has expired at `now` (Unix seconds) or the file is unreadable or
  /// malformed. Never throws.
  std::optional<std::string> load(const std::string& binding, std::int64_t now) const;

  /// Stores `session` (the TLS library's serialised session) for `binding` until `expires` (Unix
  /// seconds), replacing the previous one atomically. A session already expired at `now`, or one
  /// claiming more than kMaxLifetimeSeconds, is not stored. Failures are logged, never thrown.
  void save(const std::string& binding, std::string_view session, std::int64_t expires, std::int64_t now) const;

  /// The file that holds the stored session.
  std::string path() const { return dir_ + "/session"; }

 private:
  std::string dir_;
  std::shared_ptr<util::FileReader> reader_;
  std::shared_ptr<util::FileWriter> writer_;
};

}  // namespace manifold::http
