// Kubeconfig and in-cluster configuration loading. The kubeconfig is read as JSON: parsed as such
// when it is a JSON object (what `manifold install` writes; JSON is YAML too), else parsed by
// yaml-cpp and converted (yaml-cpp's scanner costs ~0.7M instructions for a small kubeconfig, a
// sixth of a CNI call through the node agent; the JSON parser a tenth of that). Every field is
// type-checked, referenced files are read through the FileReader (resolved against the
// kubeconfig's directory), `-data` fields are base64-decoded, and the result is validated enough
// (server URL, PEM markers, token characters) that configuration mistakes surface here, with the
// kubeconfig path and field in the message, rather than as an obscure TLS failure later.
#include "http/kubeconfig.h"

#include <yaml-cpp/yaml.h>

#include "cni/error.h"
#include "http/http.h"
#include "util/error.h"
#include "util/json_parse.h"
#include "util/log.h"

namespace manifold::http {
namespace {

/// `node` as JSON: mappings are objects (scalar keys only, the first of duplicate keys kept, as a
/// yaml-cpp lookup finds it), sequences arrays, null nodes null, and scalars strings (yaml-cpp keeps
/// every scalar as its text). Its recursion follows the nesting yaml-cpp accepted when parsing.
Json json_from_yaml(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      Json object = Json::object();
      for (const auto& entry : node)
        if (entry.first.IsScalar() && !object.contains(entry.first.Scalar()))
          object[entry.first.Scalar()] = json_from_yaml(entry.second);
      return object;
    }
    case YAML::NodeType::Sequence: {
      Json array = Json::array();
      for (const auto& item : node) array.push_back(json_from_yaml(item));
      return array;
    }
    case YAML::NodeType::Scalar:
      return node.Scalar();
    default:
      return nullptr;
  }
}

/// Whether `text` starts (after white space and a UTF-8 byte order mark) like a JSON object.
bool looks_like_json_object(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && text[first] == '{';
}

/// Reads and interprets one kubeconfig document; `path_` is used in every message.
class KubeconfigReader {
 public:
  KubeconfigReader(std::string path, util::FileReader& files) : path_(std::move(path)), files_(files) {}

  ClusterAuth load() {
    const Json root = parse(files_.read(path_));
    const std::string context_name = require_string(root, "current-context", "");
    const Json& context = find_named(root, "contexts", "context", context_name);
    const std::string cluster_name = require_string(context, "cluster", "context \"" + context_name + "\"");
    const std::optional<std::string> user_name = optional_string(context, "user", "context \"" + context_name + "\"");

    ClusterAuth auth;
    read_cluster(find_named(root, "clusters", "cluster", cluster_name), cluster_name, auth);
    if (user_name && !user_name->empty()) {
      read_user(find_named(root, "users", "user", *user_name), *user_name, auth);
    } else {
      util::log_warning("kubeconfig ", path_, ": context \"", context_name,
                        "\" names no user; requests are sent without credentials");
    }
    util::log_debug("kubeconfig ", path_, ": context \"", context_name, "\", cluster \"", cluster_name, "\", server ",
                    auth.server);
    return auth;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw cni::CniError(cni::ErrorCode::InvalidConfig, "kubeconfig " + path_ + ": " + what);
  }

  /// The document as JSON: parsed as JSON when it is a JSON object, else by yaml-cpp and converted.
  Json parse(const std::string& text) const {
    if (looks_like_json_object(text)) {
      // Anything the JSON parser refuses (YAML flow syntax, comments, a NUL byte) is left to yaml-cpp,
      // which accepts or reports it as before.
      Json json = util::parse_json_bounded(text);
      if (json.is_object()) return json;
    }
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      // yaml-cpp messages describe the syntax problem, not the document's contents.
      fail("is not valid YAML (line " + std::to_string(e.mark.line + 1) + ", column " +
           std::to_string(e.mark.column + 1) + "): " + e.msg);
    }
    if (!root.IsDefined() || root.IsNull()) fail("is empty");
    if (!root.IsMap()) fail("is not a YAML mapping");
    return json_from_yaml(root);
  }

  static std::string field_name(const std::string& where, const std::string& key) {
    return where.empty() ? key : where + " field " + key;
  }

  /// map[key]; nullptr when absent or null.
  static const Json* member(const Json& map, const std::string& key) {
    const auto it = map.find(key);
    return it == map.end() || it->is_null() ? nullptr : &*it;
  }

  /// The scalar at map[key] (a JSON number or boolean as its JSON spelling, the text YAML would
  /// hold), nullopt when absent or null; fails when it is a list or a mapping.
  std::optional<std::string> optional_string(const Json& map, const std::string& key, const std::string& where) const {
    const Json* value = member(map, key);
    if (!value) return std::nullopt;
    if (!value->is_primitive()) fail(field_name(where, key) + " must be a string");
    if (!value->is_string()) return value->dump();
    // A NUL byte ("\u0000", YAML's "\0") would cut a file name short: another file would be read.
    if (value->get_ref<const std::string&>().find('\0') != std::string::npos)
      fail(field_name(where, key) + " contains a NUL byte");
    return value->get<std::string>();
  }

  std::string require_string(const Json& map, const std::string& key, const std::string& where) const {
    std::optional<std::string> value = optional_string(map, key, where);
    if (!value || value->empty()) fail((where.empty() ? std::string() : where + " ") + "has no " + key);
    return *value;
  }

  /// map[key] as YAML reads a boolean (true/false, yes/no, on/off... as yaml-cpp decodes them);
  /// false when absent or null.
  bool optional_bool(const Json& map, const std::string& key, const std::string& where) const {
    const Json* value = member(map, key);
    if (!value) return false;
    if (value->is_boolean()) return value->get<bool>();
    bool out = false;
    if (!value->is_string() || !YAML::convert<bool>::decode(YAML::Node(value->get<std::string>()), out))
      fail(field_name(where, key) + " must be true or false");
    return out;
  }

  /// Finds the entry named `name` in the list root[list] and returns its `inner` mapping.
  const Json& find_named(const Json& root, const std::string& list, const std::string& inner,
                         const std::string& name) const {
    if (const Json* entries = member(root, list)) {
      if (!entries->is_array()) fail(list + " must be a list");
      for (std::size_t i = 0; i < entries->size(); ++i) {
        const Json& entry = (*entries)[i];
        const std::string where = list + "[" + std::to_string(i) + "]";
        if (!entry.is_object()) fail(where + " must be a mapping");
        std::optional<std::string> entry_name = optional_string(entry, "name", where);
        if (!entry_name || *entry_name != name) continue;
        const Json* body = member(entry, inner);
        if (!body) fail(inner + " \"" + name + "\" has no " + inner + " section");
        if (!body->is_object()) fail(inner + " \"" + name + "\": " + inner + " must be a mapping");
        return *body;
      }
    }
    fail(inner + " \"" + name + "\" not found in " + list);
  }

  /// Resolves a file named in the kubeconfig against the kubeconfig's directory.
  std::string resolve_path(const std::string& file) const {
    if (file.empty() || file.front() == '/') return file;
    std::size_t slash = path_.rfind('/');
    return slash == std::string::npos ? file : path_.substr(0, slash + 1) + file;
  }

  /// The contents of a `<key>` file / `<key>-data` pair; "" when neither is set.
  std::string file_or_data(const Json& map, const std::string& key, const std::string& where) {
    std::optional<std::string> data = optional_string(map, key + "-data", where);
    std::optional<std::string> file = optional_string(map, key, where);
    if (data && !data->empty()) {
      std::optional<std::string> decoded = decode_base64(*data);
      if (!decoded) fail(field_name(where, key + "-data") + " is not valid base64");
      return *decoded;
    }
    if (file && !file->empty()) {
      const std::string resolved = resolve_path(*file);
      try {
        return files_.read(resolved);
      } catch (const util::IoError& e) {
        fail(field_name(where, key) + ": " + e.msg());
      }
    }
    return {};
  }

  void require_pem(const std::string& pem, std::string_view marker, const std::string& what) const {
    if (pem.find("-----BEGIN ") == std::string::npos || pem.find(marker) == std::string::npos)
      fail(what + " does not contain a PEM " +
           std::string(marker == "CERTIFICATE-----" ? "certificate" : "private key"));
  }

  void warn_unsupported(const Json& map, const std::string& where, std::initializer_list<const char*> keys) const {
    for (const char* key : keys) {
      if (member(map, key))
        util::log_warning("kubeconfig ", path_, ": ", where, " field ", key, " is not supported and is ignored");
    }
  }

  void read_cluster(const Json& cluster, const std::string& name, ClusterAuth& auth) {
    const std::string where = "cluster \"" + name + "\"";
    auth.server = require_string(cluster, "server", where);
    try {
      parse_server_url(auth.server);
    } catch (const cni::CniError& e) {
      fail(where + " field server: " + e.msg());
    }
    auth.insecure_skip_tls_verify = optional_bool(cluster, "insecure-skip-tls-verify", where);
    auth.ca_pem = file_or_data(cluster, "certificate-authority", where);
    if (!auth.ca_pem.empty()) require_pem(auth.ca_pem, "CERTIFICATE-----", where + " certificate-authority");
    if (auth.insecure_skip_tls_verify && !auth.ca_pem.empty())
      fail(where + " sets both insecure-skip-tls-verify and a certificate-authority; remove one of them");
    if (auth.insecure_skip_tls_verify)
      util::log_warning("kubeconfig ", path_, ": ", where,
                        " sets insecure-skip-tls-verify: the API server's certificate will NOT be verified");
    warn_unsupported(cluster, where, {"proxy-url", "tls-server-name"});
  }

  void read_user(const Json& user, const std::string& name, ClusterAuth& auth) {
    const std::string where = "user \"" + name + "\"";
    auth.client_cert_pem = file_or_data(user, "client-certificate", where);
    auth.client_key_pem = file_or_data(user, "client-key", where);
    if (auth.client_cert_pem.empty() != auth.client_key_pem.empty())
      fail(where + " must set both client-certificate and client-key (or their -data forms), not only one");
    if (!auth.client_cert_pem.empty()) {
      require_pem(auth.client_cert_pem, "CERTIFICATE-----", where + " client-certificate");
      require_pem(auth.client_key_pem, "PRIVATE KEY-----", where + " client-key");
    }
    auth.token = optional_string(user, "token", where).value_or("");
    if (!auth.token.empty() && !is_valid_bearer_token(auth.token))
      fail(where + " field token contains whitespace, control or non-ASCII characters");
    std::optional<std::string> token_file = optional_string(user, "tokenFile", where);
    if (token_file && !token_file->empty()) auth.token_file = resolve_path(*token_file);
    warn_unsupported(user, where, {"exec", "auth-provider", "username", "password", "as", "as-groups"});
  }

  std::string path_;
  util::FileReader& files_;
};

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::optional<std::string> decode_base64(std::string_view text) {
  std::string out;
  out.reserve(text.size() / 4 * 3 + 3);
  unsigned buffer = 0;
  int bits = 0;
  std::size_t symbols = 0;
  std::size_t padding = 0;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      ++padding;
      continue;
    }
    if (padding > 0) return std::nullopt;  // data after padding
    int v = base64_value(c);
    if (v < 0) return std::nullopt;
    buffer = (buffer << 6) | static_cast<unsigned>(v);
    bits += 6;
    ++symbols;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xffu));
    }
  }
  if (symbols % 4 == 1 || padding > 2) return std::nullopt;
  if (padding > 0 && (symbols + padding) % 4 != 0) return std::nullopt;
  return out;
}

bool is_valid_bearer_token(std::string_view token) {
  if (token.empty() || token.size() > 65536) return false;
  for (char c : token)
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) return false;
  return true;
}

ClusterAuth load_kubeconfig(const std::string& path, util::FileReader& files) {
  try {
    return KubeconfigReader(path, files).load();
  } catch (const util::IoError& e) {
    throw cni::CniError(cni::ErrorCode::InvalidConfig, "kubeconfig " + path + ": " + e.msg());
  } catch (const cni::CniError& e) {
    if (e.code() == static_cast<unsigned>(cni::ErrorCode::InvalidConfig)) throw;
    throw cni::CniError(cni::ErrorCode::InvalidConfig, "kubeconfig " + path + ": " + e.msg());
  } catch (const YAML::Exception& e) {
    // Navigation is type-checked above; this only guards against yaml-cpp surprises.
    throw cni::CniError(cni::ErrorCode::InvalidConfig, "kubeconfig " + path + ": unexpected structure: " + e.msg);
  }
}

std::optional<ClusterAuth> in_cluster_auth(const util::EnvSource& env, util::FileReader& files) {
  std::optional<std::string> host = env.get("KUBERNETES_SERVICE_HOST");
  std::optional<std::string> port = env.get("KUBERNETES_SERVICE_PORT");
  if (!host || host->empty() || !port || port->empty()) return std::nullopt;

  ClusterAuth auth;
  const bool ipv6 = host->find(':') != std::string::npos;
  auth.server = "https://" + (ipv6 ? "[" + *host + "]" : *host) + ":" + *port;
  try {
    parse_server_url(auth.server);
  } catch (const cni::CniError& e) {
    throw cni::CniError(cni::ErrorCode::InvalidConfig,
                        "in-cluster configuration: KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT: " + e.msg());
  }
  const std::string dir(kServiceAccountDir);
  try {
    auth.ca_pem = files.read(dir + "/ca.crt");
  } catch (const util::IoError& e) {
    throw cni::CniError(cni::ErrorCode::InvalidConfig, "in-cluster configuration: " + e.msg());
  }
  if (auth.ca_pem.find("-----BEGIN CERTIFICATE-----") == std::string::npos)
    throw cni::CniError(cni::ErrorCode::InvalidConfig,
                        "in-cluster configuration: " + dir + "/ca.crt does not contain a PEM certificate");
  auth.token_file = dir + "/token";
  util::log_debug("using the in-cluster service account, server ", auth.server);
  return auth;
}

std::optional<ClusterAuth> find_cluster_auth(const std::string& kubeconfig_path, const util::EnvSource& env,
                                             util::FileReader& files) {
  if (!kubeconfig_path.empty()) return load_kubeconfig(kubeconfig_path, files);
  return in_cluster_auth(env, files);
}

}  // namespace manifold::http
