// Tests of kubeconfig loading (contexts, clusters, users, files vs -data, tokens, insecure flag,
// relative paths, malformed and mistyped input), the in-cluster configuration, and the base64 and
// token helpers, and the JSON form (what `manifold install` writes) read exactly like its YAML
// form. Files come from a FakeFileReader; log output is captured by test::LogCapture.
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>

#include "cni/error.h"
#include "http/kubeconfig.h"
#include "log_capture.h"
#include "util/json.h"

using namespace manifold;
using namespace manifold::http;
using manifold::test::LogCapture;

namespace {

const std::string kPath = "/etc/cni/net.d/manifold.d/manifold.kubeconfig";
const std::string kDir = "/etc/cni/net.d/manifold.d/";
const std::string kCa = "-----BEGIN CERTIFICATE-----\nQ0E=\n-----END CERTIFICATE-----\n";
const std::string kCert = "-----BEGIN CERTIFICATE-----\nQ0VSVA==\n-----END CERTIFICATE-----\n";
const std::string kKey = "-----BEGIN PRIVATE KEY-----\nS0VZ\n-----END PRIVATE KEY-----\n";
// base64 of the three PEM blocks above.
const std::string kCaB64 = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tClEwRT0KLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=";
const std::string kCertB64 = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tClEwVlNWQT09Ci0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K";
const std::string kKeyB64 = "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tClMwVloKLS0tLS1FTkQgUFJJVkFURSBLRVktLS0tLQo=";

std::string kubeconfig(const std::string& cluster_body, const std::string& user_body,
                       const std::string& current = "main") {
  return "apiVersion: v1\nkind: Config\ncurrent-context: " + current +
         "\n"
         "contexts:\n"
         "- name: other\n  context:\n    cluster: other-cluster\n    user: other-user\n"
         "- name: main\n  context:\n    cluster: c1\n    user: u1\n    namespace: kube-system\n"
         "clusters:\n"
         "- name: other-cluster\n  cluster:\n    server: https://10.9.9.9:6443\n    insecure-skip-tls-verify: true\n"
         "- name: c1\n  cluster:\n" +
         cluster_body +
         "users:\n"
         "- name: other-user\n  user:\n    token: other-token\n"
         "- name: u1\n  user:\n" +
         user_body;
}

ClusterAuth load(const std::string& text, util::FakeFileReader& files) {
  files.add(kPath, text);
  return load_kubeconfig(kPath, files);
}

/// Loads `text` and returns the error message (fails the test if it loads).
std::string load_error(const std::string& text, util::FakeFileReader& files) {
  try {
    load(text, files);
  } catch (const cni::CniError& e) {
    CHECK(e.code() == static_cast<unsigned>(cni::ErrorCode::InvalidConfig));
    return e.msg();
  }
  FAIL("load_kubeconfig did not throw");
  return {};
}

std::string load_error(const std::string& text) {
  util::FakeFileReader files;
  return load_error(text, files);
}

/// The JSON form of a YAML node: maps as objects, sequences as arrays, every scalar as a string.
Json json_of(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      Json object = Json::object();
      for (const auto& entry : node) object[entry.first.as<std::string>()] = json_of(entry.second);
      return object;
    }
    case YAML::NodeType::Sequence: {
      Json array = Json::array();
      for (const auto& item : node) array.push_back(json_of(item));
      return array;
    }
    case YAML::NodeType::Scalar:
      return node.as<std::string>();
    default:
      return nullptr;
  }
}

/// `yaml` rewritten as a JSON document (indented, as `manifold install` writes it).
std::string as_json(const std::string& yaml) { return json_of(YAML::Load(yaml)).dump(2) + "\n"; }

/// What loading `text` gives: every field of the result, or the error message.
std::string outcome(const std::string& text, util::FakeFileReader& files) {
  try {
    const ClusterAuth a = load(text, files);
    return a.server + "|" + a.ca_pem + "|" + (a.insecure_skip_tls_verify ? "insecure" : "verify") + "|" +
           a.client_cert_pem + "|" + a.client_key_pem + "|" + a.token + "|" + a.token_file;
  } catch (const cni::CniError& e) {
    return "error " + std::to_string(e.code()) + ": " + e.msg();
  }
}

}  // namespace

TEST_CASE("kubeconfig: current-context selects the context, cluster and user", "[http]") {
  util::FakeFileReader files;
  ClusterAuth auth =
      load(kubeconfig("    server: https://10.0.0.1:6443\n    certificate-authority-data: " + kCaB64 + "\n",
                      "    token: abc.def\n"),
           files);
  CHECK(auth.server == "https://10.0.0.1:6443");
  CHECK(auth.ca_pem == kCa);
  CHECK(auth.token == "abc.def");
  CHECK(auth.token_file.empty());
  CHECK_FALSE(auth.insecure_skip_tls_verify);
  CHECK(auth.client_cert_pem.empty());

  ClusterAuth other = load(kubeconfig("    server: https://10.0.0.1:6443\n", "    token: abc\n", "other"), files);
  CHECK(other.server == "https://10.9.9.9:6443");
  CHECK(other.token == "other-token");
  CHECK(other.insecure_skip_tls_verify);
}

TEST_CASE("kubeconfig: certificate-authority file is read relative to the kubeconfig", "[http]") {
  util::FakeFileReader files;
  files.add(kDir + "ca.crt", kCa);
  files.add("/abs/ca.pem", kCa + "#abs");
  ClusterAuth rel = load(
      kubeconfig("    server: https://k8s.example:6443\n    certificate-authority: ca.crt\n", "    token: t\n"), files);
  CHECK(rel.ca_pem == kCa);
  ClusterAuth abs = load(
      kubeconfig("    server: https://k8s.example:6443\n    certificate-authority: /abs/ca.pem\n", "    token: t\n"),
      files);
  CHECK(abs.ca_pem == kCa + "#abs");
}

TEST_CASE("kubeconfig: -data wins over the file form", "[http]") {
  util::FakeFileReader files;
  ClusterAuth auth = load(kubeconfig("    server: https://k8s.example\n    certificate-authority: missing.crt\n"
                                     "    certificate-authority-data: " +
                                         kCaB64 + "\n",
                                     "    token: t\n"),
                          files);
  CHECK(auth.ca_pem == kCa);
  CHECK(std::find(files.reads().begin(), files.reads().end(), kDir + "missing.crt") == files.reads().end());
}

TEST_CASE("kubeconfig: client certificate and key from files and from -data", "[http]") {
  util::FakeFileReader files;
  files.add(kDir + "pki/client.crt", kCert);
  files.add(kDir + "pki/client.key", kKey);
  ClusterAuth from_files = load(kubeconfig("    server: https://k8s.example\n",
                                           "    client-certificate: pki/client.crt\n    client-key: pki/client.key\n"),
                                files);
  CHECK(from_files.client_cert_pem == kCert);
  CHECK(from_files.client_key_pem == kKey);
  CHECK(from_files.token.empty());

  ClusterAuth from_data =
      load(kubeconfig("    server: https://k8s.example\n",
                      "    client-certificate-data: " + kCertB64 + "\n    client-key-data: " + kKeyB64 + "\n"),
           files);
  CHECK(from_data.client_cert_pem == kCert);
  CHECK(from_data.client_key_pem == kKey);
}

TEST_CASE("kubeconfig: tokenFile is kept as a resolved path, not read", "[http]") {
  util::FakeFileReader files;
  ClusterAuth rel = load(kubeconfig("    server: https://k8s.example\n", "    tokenFile: secrets/token\n"), files);
  CHECK(rel.token_file == kDir + "secrets/token");
  CHECK(rel.token.empty());
  ClusterAuth abs = load(
      kubeconfig("    server: https://k8s.example\n", "    tokenFile: /var/run/token\n    token: static\n"), files);
  CHECK(abs.token_file == "/var/run/token");
  CHECK(abs.token == "static");
  CHECK(files.reads() == std::vector<std::string>{kPath, kPath});
}

TEST_CASE("kubeconfig: a relative kubeconfig path resolves files against its own directory", "[http]") {
  util::FakeFileReader files;
  files.add("conf/kubeconfig", kubeconfig("    server: https://k8s.example\n    certificate-authority: ca.crt\n",
                                          "    tokenFile: token\n"));
  files.add("conf/ca.crt", kCa);
  ClusterAuth auth = load_kubeconfig("conf/kubeconfig", files);
  CHECK(auth.ca_pem == kCa);
  CHECK(auth.token_file == "conf/token");
  files.add("kubeconfig", kubeconfig("    server: https://k8s.example\n", "    tokenFile: token\n"));
  CHECK(load_kubeconfig("kubeconfig", files).token_file == "token");
}

TEST_CASE("kubeconfig: insecure-skip-tls-verify is honoured with a warning", "[http]") {
  LogCapture log;
  util::FakeFileReader files;
  ClusterAuth auth = load(
      kubeconfig("    server: https://k8s.example\n    insecure-skip-tls-verify: true\n", "    token: t\n"), files);
  CHECK(auth.insecure_skip_tls_verify);
  CHECK_THAT(log.text(), Catch::Contains("insecure-skip-tls-verify") && Catch::Contains("NOT be verified"));
}

TEST_CASE("kubeconfig: insecure-skip-tls-verify false, and together with a CA", "[http]") {
  util::FakeFileReader files;
  CHECK_FALSE(
      load(kubeconfig("    server: https://k8s.example\n    insecure-skip-tls-verify: false\n", "    token: t\n"),
           files)
          .insecure_skip_tls_verify);
  CHECK_THAT(load_error(kubeconfig("    server: https://k8s.example\n    insecure-skip-tls-verify: true\n"
                                   "    certificate-authority-data: " +
                                       kCaB64 + "\n",
                                   "    token: t\n")),
             Catch::Contains("both insecure-skip-tls-verify and a certificate-authority"));
}

TEST_CASE("kubeconfig: unsupported auth mechanisms are warned about", "[http]") {
  LogCapture log;
  util::FakeFileReader files;
  load(kubeconfig("    server: https://k8s.example\n", "    token: t\n    exec:\n      command: aws\n"), files);
  CHECK_THAT(log.text(), Catch::Contains("user \"u1\" field exec is not supported"));
}

TEST_CASE("kubeconfig: missing context, cluster and user are named", "[http]") {
  CHECK_THAT(load_error(kubeconfig("    server: https://k8s.example\n", "    token: t\n", "nope")),
             Catch::Contains(kPath) && Catch::Contains("context \"nope\" not found in contexts"));

  std::string missing_cluster =
      "current-context: a\ncontexts:\n- name: a\n  context:\n    cluster: gone\n    user: u\n"
      "clusters: []\nusers:\n- name: u\n  user:\n    token: t\n";
  CHECK_THAT(load_error(missing_cluster), Catch::Contains("cluster \"gone\" not found in clusters"));

  std::string missing_user =
      "current-context: a\ncontexts:\n- name: a\n  context:\n    cluster: c\n    user: ghost\n"
      "clusters:\n- name: c\n  cluster:\n    server: https://k8s.example\n";
  CHECK_THAT(load_error(missing_user), Catch::Contains("user \"ghost\" not found in users"));

  CHECK_THAT(load_error("apiVersion: v1\nkind: Config\n"), Catch::Contains("has no current-context"));
  CHECK_THAT(load_error("current-context: a\ncontexts:\n- name: a\n  context:\n    user: u\n"),
             Catch::Contains("context \"a\" has no cluster"));
  CHECK_THAT(load_error("current-context: a\ncontexts:\n- name: a\n"),
             Catch::Contains("context \"a\" has no context section"));
  CHECK_THAT(load_error(kubeconfig("    insecure-skip-tls-verify: true\n", "    token: t\n")),
             Catch::Contains("cluster \"c1\" has no server"));
}

TEST_CASE("kubeconfig: a context without a user means anonymous access, with a warning", "[http]") {
  LogCapture log;
  util::FakeFileReader files;
  ClusterAuth auth = load(
      "current-context: a\ncontexts:\n- name: a\n  context:\n    cluster: c\n"
      "clusters:\n- name: c\n  cluster:\n    server: https://k8s.example\n",
      files);
  CHECK(auth.token.empty());
  CHECK(auth.token_file.empty());
  CHECK_THAT(log.text(), Catch::Contains("names no user"));
}

TEST_CASE("kubeconfig: malformed YAML and non-mapping documents", "[http]") {
  CHECK_THAT(load_error("current-context: [unclosed\n"),
             Catch::Contains("is not valid YAML") && Catch::Contains("line"));
  CHECK_THAT(load_error("a: b: c\n"), Catch::Contains("is not valid YAML"));
  CHECK_THAT(load_error("current-context: a\n\tcontexts: []\n"), Catch::Contains("is not valid YAML"));
  CHECK_THAT(load_error(""), Catch::Contains("is empty"));
  CHECK_THAT(load_error("- just\n- a list\n"), Catch::Contains("is not a YAML mapping"));
  CHECK_THAT(load_error("plain scalar"), Catch::Contains("is not a YAML mapping"));
}

TEST_CASE("kubeconfig: wrong types are rejected with the field name", "[http]") {
  CHECK_THAT(load_error("current-context: [a, b]\n"), Catch::Contains("current-context must be a string"));
  CHECK_THAT(load_error("current-context: a\ncontexts: {a: b}\n"), Catch::Contains("contexts must be a list"));
  CHECK_THAT(load_error("current-context: a\ncontexts:\n- just-a-string\n"),
             Catch::Contains("contexts[0] must be a mapping"));
  CHECK_THAT(load_error("current-context: a\ncontexts:\n- name: a\n  context: [x]\n"),
             Catch::Contains("context must be a mapping"));
  CHECK_THAT(load_error(kubeconfig("    server: {host: x}\n", "    token: t\n")),
             Catch::Contains("cluster \"c1\" field server must be a string"));
  CHECK_THAT(load_error(kubeconfig("    server: https://k8s.example\n    insecure-skip-tls-verify: maybe\n",
                                   "    token: t\n")),
             Catch::Contains("insecure-skip-tls-verify must be true or false"));
  CHECK_THAT(load_error(kubeconfig("    server: https://k8s.example\n    insecure-skip-tls-verify: [true]\n",
                                   "    token: t\n")),
             Catch::Contains("insecure-skip-tls-verify must be true or false"));
  CHECK_THAT(load_error(kubeconfig("    server: https://k8s.example\n", "    token: [a]\n")),
             Catch::Contains("user \"u1\" field token must be a string"));
  CHECK_THAT(load_error(kubeconfig("    server: https://k8s.example\n", "    tokenFile: {a: 1}\n")),
             Catch::Contains("field tokenFile must be a string"));
}

TEST_CASE("kubeconfig: invalid server URLs are rejected", "[http]") {
  CHECK_THAT(load_error(kubeconfig("    server: http://10.0.0.1:8080\n", "    token: t\n")),
             Catch::Contains("cluster \"c1\" field server") && Catch::Contains("only https:// is supported"));
  CHECK_THAT(load_error(kubeconfig("    server: https://user:secret@10.0.0.1\n", "    token: t\n")),
             Catch::Contains("user info") && !Catch::Contains("secret"));
  CHECK_THAT(load_error(kubeconfig("    server: https://10.0.0.1:99999\n", "    token: t\n")), Catch::Contains("port"));
}

TEST_CASE("kubeconfig: referenced files that cannot be read, and bad -data", "[http]") {
  CHECK_THAT(load_error(kubeconfig("    server: https://k8s.example\n    certificate-authority: nope.crt\n",
                                   "    token: t\n")),
             Catch::Contains(kPath) && Catch::Contains("certificate-authority") && Catch::Contains(kDir + "nope.crt"));
  CHECK_THAT(load_error(kubeconfig("    server: https://k8s.example\n    certificate-authority-data: '%%%'\n",
                                   "    token: t\n")),
             Catch::Contains("certificate-authority-data is not valid base64"));
  CHECK_THAT(load_error(kubeconfig("    server: https://k8s.example\n    certificate-authority-data: aGVsbG8=\n",
                                   "    token: t\n")),
             Catch::Contains("does not contain a PEM certificate"));
  CHECK_THAT(
      load_error(kubeconfig("    server: https://k8s.example\n", "    client-certificate-data: " + kCertB64 + "\n")),
      Catch::Contains("must set both client-certificate and client-key"));
  CHECK_THAT(
      load_error(kubeconfig("    server: https://k8s.example\n",
                            "    client-certificate-data: " + kCertB64 + "\n    client-key-data: " + kCertB64 + "\n")),
      Catch::Contains("client-key does not contain a PEM private key"));
}

TEST_CASE("kubeconfig: a missing kubeconfig file is a configuration error naming it", "[http]") {
  util::FakeFileReader files;
  try {
    load_kubeconfig("/nonexistent/kubeconfig", files);
    FAIL("no error");
  } catch (const cni::CniError& e) {
    CHECK(e.code() == static_cast<unsigned>(cni::ErrorCode::InvalidConfig));
    CHECK_THAT(e.msg(), Catch::Contains("/nonexistent/kubeconfig") && Catch::Contains("No such file"));
  }
}

TEST_CASE("kubeconfig: errors never echo token or key contents", "[http]") {
  std::string msg = load_error(kubeconfig("    server: https://k8s.example\n", "    token: \"sekrit tok\\nen\"\n"));
  CHECK_THAT(msg, Catch::Contains("field token contains whitespace"));
  CHECK_THAT(msg, !Catch::Contains("sekrit"));
  std::string key_msg =
      load_error(kubeconfig("    server: https://k8s.example\n",
                            "    client-certificate-data: " + kCertB64 + "\n    client-key-data: " + kCaB64 + "\n"));
  CHECK_THAT(key_msg, !Catch::Contains("BEGIN"));
}

TEST_CASE("kubeconfig: the JSON form of a kubeconfig reads exactly like its YAML form", "[http]") {
  util::FakeFileReader files;
  files.add(kDir + "ca.crt", kCa);
  files.add(kDir + "client.crt", kCert);
  files.add(kDir + "client.key", kKey);
  const std::string https = "    server: https://k8s.example:6443\n";
  const std::vector<std::string> documents = {
      kubeconfig(https + "    certificate-authority-data: " + kCaB64 + "\n", "    token: abc.def\n"),
      kubeconfig(https + "    certificate-authority: ca.crt\n", "    tokenFile: secrets/token\n"),
      kubeconfig(https + "    certificate-authority: ca.crt\n",
                 "    client-certificate: client.crt\n    client-key: /etc/cni/net.d/manifold.d/client.key\n"),
      kubeconfig(https, "    client-certificate-data: " + kCertB64 + "\n    client-key-data: " + kKeyB64 + "\n"),
      kubeconfig(https + "    insecure-skip-tls-verify: true\n", "    token: t\n"),
      kubeconfig(https + "    insecure-skip-tls-verify: \"false\"\n", "    token: t\n"),
      kubeconfig(https, "    token: t\n", "other"),
      kubeconfig(https, "    token: t\n", "missing"),
      kubeconfig("    server: http://10.0.0.1:8080\n", "    token: t\n"),
      kubeconfig("    server: {host: x}\n", "    token: t\n"),
      kubeconfig(https + "    insecure-skip-tls-verify: maybe\n", "    token: t\n"),
      kubeconfig(https + "    certificate-authority: missing.crt\n", "    token: t\n"),
      kubeconfig(https, "    token: \"sekrit tok\\nen\"\n"),
      kubeconfig(https, "    exec: {command: aws}\n    token: t\n"),
      "current-context: a\ncontexts: {a: b}\n",
      "current-context: a\ncontexts:\n- just-a-string\n",
  };
  for (const std::string& yaml : documents) {
    const std::string json = as_json(yaml);
    INFO(json);
    REQUIRE(json.front() == '{');
    CHECK(outcome(json, files) == outcome(yaml, files));
  }
}

TEST_CASE("kubeconfig: JSON booleans, numbers and null read as the YAML scalars they spell", "[http]") {
  util::FakeFileReader files;
  Json doc = Json::parse(as_json(kubeconfig("    server: https://k8s.example\n", "    token: t\n")));
  doc["clusters"][1]["cluster"]["insecure-skip-tls-verify"] = true;
  CHECK(load(doc.dump(), files).insecure_skip_tls_verify);
  doc["clusters"][1]["cluster"]["insecure-skip-tls-verify"] = false;
  CHECK_FALSE(load(doc.dump(), files).insecure_skip_tls_verify);
  doc["clusters"][1]["cluster"]["insecure-skip-tls-verify"] = 1.5;
  CHECK_THAT(load_error(doc.dump()), Catch::Contains("insecure-skip-tls-verify must be true or false"));
  doc["clusters"][1]["cluster"]["insecure-skip-tls-verify"] = nullptr;
  CHECK_FALSE(load(doc.dump(), files).insecure_skip_tls_verify);
  doc["clusters"][1]["cluster"]["server"] = 6443;
  CHECK_THAT(load_error(doc.dump()), Catch::Contains("cluster \"c1\" field server"));
  doc["current-context"] = nullptr;
  CHECK_THAT(load_error(doc.dump()), Catch::Contains("current-context"));
}

TEST_CASE("kubeconfig: text that only starts like JSON is read as YAML", "[http]") {
  util::FakeFileReader files;
  // A YAML flow mapping, and JSON with a YAML comment after it: not JSON, valid YAML.
  const std::string flow =
      "{current-context: m, contexts: [{name: m, context: {cluster: c, user: u}}],"
      " clusters: [{name: c, cluster: {server: 'https://k8s.example'}}], users: [{name: u, user: {token: t}}]}\n";
  CHECK(load(flow, files).token == "t");
  const std::string json = as_json(kubeconfig("    server: https://k8s.example\n", "    token: t\n"));
  CHECK(load(json + "# written by hand\n", files).token == "t");
  CHECK(load("\xEF\xBB\xBF\n  " + json, files).token == "t");  // byte order mark and leading space
  CHECK_THAT(load_error("{\"current-context\": [unclosed\n"), Catch::Contains("is not valid YAML"));
  CHECK_THAT(load_error("{}"), Catch::Contains("current-context"));
}

TEST_CASE("kubeconfig: a NUL byte in a field is an error, in YAML and in JSON", "[http]") {
  util::FakeFileReader files;
  files.add(kDir + "ca.crt", kCa);
  for (const std::string& ca : {std::string("\"ca.crt\\0.pem\""), std::string("\"ca.crt\\u0000.pem\"")}) {
    const std::string yaml =
        kubeconfig("    server: https://k8s.example\n    certificate-authority: " + ca + "\n", "    token: t\n");
    if (ca.find("\\u") == std::string::npos) {
      CHECK_THAT(load_error(yaml, files), Catch::Contains("certificate-authority contains a NUL byte"));
    } else {
      CHECK_THAT(load_error(as_json(yaml), files), Catch::Contains("certificate-authority contains a NUL byte"));
    }
  }
  CHECK_THAT(load_error(kubeconfig("    server: https://k8s.example\n", "    tokenFile: \"token\\0x\"\n"), files),
             Catch::Contains("tokenFile contains a NUL byte"));
}

TEST_CASE("kubeconfig: YAML duplicate keys keep the first, complex keys are ignored", "[http]") {
  util::FakeFileReader files;
  const std::string doc = kubeconfig("    server: https://k8s.example\n", "    token: t\n");
  CHECK(load("current-context: other\n" + doc, files).server == "https://10.9.9.9:6443");
  CHECK(load("? [a, b]\n: c\n" + doc, files).server == "https://k8s.example");
}

TEST_CASE("in-cluster: service host and port with the service account files", "[http]") {
  util::FakeEnv env({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}});
  util::FakeFileReader files;
  files.add(std::string(kServiceAccountDir) + "/ca.crt", kCa);
  std::optional<ClusterAuth> auth = in_cluster_auth(env, files);
  REQUIRE(auth);
  CHECK(auth->server == "https://10.96.0.1:443");
  CHECK(auth->ca_pem == kCa);
  CHECK(auth->token_file == "/var/run/secrets/kubernetes.io/serviceaccount/token");
  CHECK(auth->token.empty());
  // The token is not read now: it is read at first use, so rotation works.
  CHECK(files.reads() == std::vector<std::string>{"/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"});

  env.set("KUBERNETES_SERVICE_HOST", "fd00:10:96::1");
  CHECK(in_cluster_auth(env, files)->server == "https://[fd00:10:96::1]:443");
}

TEST_CASE("in-cluster: absent unless both variables are set", "[http]") {
  util::FakeFileReader files;
  util::FakeEnv env;
  CHECK_FALSE(in_cluster_auth(env, files));
  env.set("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  CHECK_FALSE(in_cluster_auth(env, files));
  env.set("KUBERNETES_SERVICE_PORT", "");
  CHECK_FALSE(in_cluster_auth(env, files));
  CHECK(files.reads().empty());
}

TEST_CASE("in-cluster: malformed variables and a missing ca.crt are errors", "[http]") {
  util::FakeFileReader files;
  util::FakeEnv env({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "https"}});
  CHECK_THROWS_WITH(in_cluster_auth(env, files), Catch::Contains("KUBERNETES_SERVICE_PORT") && Catch::Contains("port"));
  env.set("KUBERNETES_SERVICE_PORT", "443");
  CHECK_THROWS_WITH(in_cluster_auth(env, files), Catch::Contains("in-cluster") && Catch::Contains("ca.crt"));
  files.add(std::string(kServiceAccountDir) + "/ca.crt", "garbage");
  CHECK_THROWS_WITH(in_cluster_auth(env, files), Catch::Contains("does not contain a PEM certificate"));
}

TEST_CASE("find_cluster_auth: kubeconfig first, then in-cluster, else none", "[http]") {
  util::FakeFileReader files;
  files.add(std::string(kServiceAccountDir) + "/ca.crt", kCa);
  files.add(kPath, kubeconfig("    server: https://k8s.example\n", "    token: t\n"));
  util::FakeEnv env({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}});
  CHECK(find_cluster_auth(kPath, env, files)->server == "https://k8s.example");
  CHECK(find_cluster_auth("", env, files)->server == "https://10.96.0.1:443");
  util::FakeEnv empty;
  CHECK_FALSE(find_cluster_auth("", empty, files));
}

TEST_CASE("decode_base64 handles padding, whitespace and garbage", "[http]") {
  CHECK(decode_base64("aGVsbG8=") == std::optional<std::string>("hello"));
  CHECK(decode_base64("aGVsbG8") == std::optional<std::string>("hello"));
  CHECK(decode_base64("aGVs\nbG8g\r\nd29y bGQ=") == std::optional<std::string>("hello world"));
  CHECK(decode_base64("") == std::optional<std::string>(""));
  CHECK(decode_base64("AAEC/w==") == std::optional<std::string>(std::string("\x00\x01\x02\xff", 4)));
  CHECK_FALSE(decode_base64("a"));
  CHECK_FALSE(decode_base64("aGVs*G8="));
  CHECK_FALSE(decode_base64("aGVsbG8=aGVs"));
  CHECK_FALSE(decode_base64("aGVsbA==="));
  CHECK_FALSE(decode_base64("aGVsbG8=="));
}

TEST_CASE("is_valid_bearer_token", "[http]") {
  CHECK(is_valid_bearer_token("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"));
  CHECK(is_valid_bearer_token("abcdef.0123456789abcdef"));
  CHECK_FALSE(is_valid_bearer_token(""));
  CHECK_FALSE(is_valid_bearer_token("two words"));
  CHECK_FALSE(is_valid_bearer_token("line\nbreak"));
  CHECK_FALSE(is_valid_bearer_token("caf\xc3\xa9"));
  CHECK_FALSE(is_valid_bearer_token(std::string(70000, 'a')));
}
