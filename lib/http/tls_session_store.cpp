// Implementation of the stored TLS sessions. A file is four lines of text:
//   manifold-tls-session 1
//   binding <64 hex digits>
//   expires <Unix seconds>
//   session <the serialised session, hex>
// Any other shape is ignored as malformed.
#include "http/tls_session_store.h"

#include <charconv>
#include <exception>
#include <vector>

#include "util/log.h"
#include "util/quote.h"

namespace manifold::http {
namespace {

constexpr std::string_view kMagic = "manifold-tls-session 1";
constexpr std::size_t kBindingDigits = 64;

bool is_binding(std::string_view s) {
  if (s.size() != kBindingDigits) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::optional<std::string> from_hex(std::string_view hex) {
  if (hex.empty() || hex.size() % 2 != 0) return std::nullopt;
  std::string out(hex.size() / 2, '\0');
  for (std::size_t i = 0; i < out.size(); ++i) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(hex.data() + 2 * i, hex.data() + 2 * i + 2, value, 16);
    if (ec != std::errc() || end != hex.data() + 2 * i + 2) return std::nullopt;
    out[i] = static_cast<char>(value);
  }
  return out;
}

/// The value of line `line` when it reads "<key> <value>", else nullopt.
std::optional<std::string_view> field(std::string_view line, std::string_view key) {
  if (line.size() <= key.size() + 1 || line.substr(0, key.size()) != key || line[key.size()] != ' ')
    return std::nullopt;
  return line.substr(key.size() + 1);
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    if (nl == std::string_view::npos) return {};  // every line ends with a newline
    out.push_back(text.substr(0, nl));
    text.remove_prefix(nl + 1);
  }
  return out;
}

}  // namespace

TlsSessionStore::TlsSessionStore(std::string dir, std::shared_ptr<util::FileReader> reader,
                                 std::shared_ptr<util::FileWriter> writer)
    : dir_(std::move(dir)), reader_(std::move(reader)), writer_(std::move(writer)) {}

std::optional<std::string> TlsSessionStore::load(const std::string& binding, std::int64_t now) const {
  if (!is_binding(binding)) return std::nullopt;
  const std::string file = path();
  std::string text;
  try {
    text = reader_->read(file, kMaxFileBytes);
  } catch (const std::exception& e) {
    // Absent on the first call of a node; anything else only costs a full handshake.
    util::log_debug("no stored TLS session used: ", e.what());
    return std::nullopt;
  }
  std::vector<std::string_view> lines = lines_of(text);
  std::optional<std::string_view> stored_binding, expires, session;
  if (lines.size() == 4 && lines[0] == kMagic) {
    stored_binding = field(lines[1], "binding");
    expires = field(lines[2], "expires");
    session = field(lines[3], "session");
  }
  std::int64_t expiry = 0;
  if (!stored_binding || !expires || !session ||
      std::from_chars(expires->data(), expires->data() + expires->size(), expiry).ec != std::errc()) {
    util::log_verbose("ignoring malformed TLS session file ", file);
    return std::nullopt;
  }
  if (*stored_binding != binding) return std::nullopt;  // another server or client identity
  if (expiry <= now || expiry > now + kMaxLifetimeSeconds) {
    util::log_debug("stored TLS session in ", file, " has expired");
    return std::nullopt;
  }
  std::optional<std::string> bytes = from_hex(*session);
  if (!bytes) util::log_verbose("ignoring malformed TLS session file ", file);
  return bytes;
}

void TlsSessionStore::save(const std::string& binding, std::string_view session, std::int64_t expires,
                           std::int64_t now) const {
  if (!is_binding(binding) || session.empty() || session.size() * 2 > kMaxFileBytes / 2 || expires <= now ||
      expires > now + kMaxLifetimeSeconds)
    return;
  std::string text;
  text.append(kMagic).append("\nbinding ").append(binding);
  text.append("\nexpires ").append(std::to_string(expires));
  text.append("\nsession ").append(util::hex_lower(session)).append("\n");
  try {
    writer_->write(path(), text, 0600);
  } catch (const std::exception& e) {
    util::log_verbose("cannot store the TLS session (the next call makes a full handshake): ", e.what());
  }
}

}  // namespace manifold::http
