// Fuzz target: the kubeconfig, YAML or JSON (the form `manifold install` writes; the corpus has
// both). The input is the kubeconfig file of a FakeFileReader that also holds the files a kubeconfig
// may reference (CA, client certificate and key, token file), so the relative-path, -data/base64
// and PEM checks all run. An accepted configuration is then used the way manifold uses it: an
// ApiClient is built from it (server URL parsed again) and sends one GET through a
// FakeHttpTransport (token file read and validated). Checks: only CniError escapes, the server URL
// of an accepted kubeconfig parses, the CA and insecure flag are never both set, and a bearer token
// that reaches a request header is a valid one. The input's first two lines also serve as
// KUBERNETES_SERVICE_HOST/PORT for the in-cluster configuration.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fuzz_common.h"
#include "http/http.h"
#include "http/kubeconfig.h"
#include "http/retry.h"
#include "k8s/api_client.h"
#include "util/env.h"
#include "util/file_reader.h"

using namespace manifold;

namespace {

const bool kQuiet = fuzz::quiet_logging();

constexpr const char* kCertPem =
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUZmFrZQ==\n-----END CERTIFICATE-----\n";
constexpr const char* kKeyPem =
    "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n";

void use(const http::ClusterAuth& auth, util::FakeFileReader& files) {
  if (!fuzz::accepts([&] { (void)http::parse_server_url(auth.server); }))
    fuzz::fuzz_bug("load_kubeconfig accepted a server URL that does not parse: " + auth.server);
  if (auth.insecure_skip_tls_verify && !auth.ca_pem.empty())
    fuzz::fuzz_bug("kubeconfig accepted with both a CA and insecure-skip-tls-verify");
  if (!auth.token.empty() && !http::is_valid_bearer_token(auth.token))
    fuzz::fuzz_bug("kubeconfig accepted an invalid bearer token");

  http::FakeHttpTransport transport;
  transport.push_response(200, R"({"kind":"Pod","metadata":{"name":"web-0","namespace":"default"}})");
  util::FakeClock clock;
  util::FakeSleeper sleeper(clock);
  http::FixedJitter jitter(0.5);
  http::RetryPolicy policy;
  policy.max_attempts = 1;
  fuzz::accepts([&] {
    k8s::ApiClient client(transport, auth, policy, sleeper, clock, files, jitter);
    (void)client.get_pod("default", "web-0");
  });
  for (const http::HttpRequest& request : transport.requests()) {
    for (const auto& [name, value] : request.headers) {
      if (name == "Authorization" && (value.rfind("Bearer ", 0) != 0 || !http::is_valid_bearer_token(value.substr(7))))
        fuzz::fuzz_bug("an invalid bearer token reached a request header");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = fuzz::as_text(data, size);
  util::FakeFileReader files;
  files.add("/etc/cni/net.d/manifold.d/manifold.kubeconfig", std::string(input));
  files.add("/etc/cni/net.d/manifold.d/ca.crt", kCertPem);
  files.add("/etc/kubernetes/pki/ca.crt", kCertPem);
  files.add("/etc/cni/net.d/manifold.d/client.crt", kCertPem);
  files.add("/etc/cni/net.d/manifold.d/client.key", kKeyPem);
  files.add("/etc/cni/net.d/manifold.d/token", "eyJhbGciOiJSUzI1NiJ9.ZmFrZQ.c2ln\n");
  files.add("/var/run/secrets/kubernetes.io/serviceaccount/token", "eyJhbGciOiJSUzI1NiJ9.c2E.c2ln\n");

  http::ClusterAuth auth;
  if (fuzz::accepts([&] { auth = http::load_kubeconfig("/etc/cni/net.d/manifold.d/manifold.kubeconfig", files); }))
    use(auth, files);

  // The in-cluster configuration: the input's first two lines as KUBERNETES_SERVICE_HOST/PORT.
  const size_t eol = input.find('\n');
  const std::string_view host = input.substr(0, eol);
  const std::string_view rest = eol == std::string_view::npos ? std::string_view() : input.substr(eol + 1);
  util::FakeEnv env({{"KUBERNETES_SERVICE_HOST", std::string(host)},
                     {"KUBERNETES_SERVICE_PORT", std::string(rest.substr(0, rest.find('\n')))}});
  files.add("/var/run/secrets/kubernetes.io/serviceaccount/ca.crt", kCertPem);
  std::optional<http::ClusterAuth> in_cluster;
  if (fuzz::accepts([&] { in_cluster = http::find_cluster_auth("", env, files); }) && in_cluster)
    use(*in_cluster, files);
  return 0;
}
