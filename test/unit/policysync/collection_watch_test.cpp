// Tests for policysync/collection_watch against a scripted API server: a paged LIST (continue
// tokens followed, metadata-only Accept headers), the WATCH from the list's resourceVersion, events
// handed to the sink as they come, a 410 ERROR relisting (with the relist's begin and end around
// it), and stop ending the loop.
#include "policysync/collection_watch.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "log_capture.h"
#include "util/clock.h"

using manifold::Json;
using manifold::http::FakeHttpTransport;
using manifold::http::HttpRequest;
using manifold::http::HttpResponse;
using manifold::http::StreamOptions;
using manifold::http::StreamResult;
using manifold::http::TransportError;
using namespace manifold::policysync;

namespace {

/// Hands every call to the test's script; once it is used up, the loop is told to stop.
class Scripted final : public manifold::http::HttpTransport {
 public:
  Scripted(FakeHttpTransport& fake, std::atomic<bool>& stop) : fake_(fake), stop_(stop) {}
  HttpResponse send(const HttpRequest& request, std::chrono::milliseconds timeout) override {
    if (fake_.pending() == 0) stop_.store(true);
    if (stop_.load()) throw TransportError(TransportError::Kind::Closed, "script finished");
    return fake_.send(request, timeout);
  }
  StreamResult stream(const HttpRequest& request, const StreamOptions& options,
                      const std::function<bool(std::string_view)>& on_data) override {
    if (fake_.pending() == 0) stop_.store(true);
    if (stop_.load()) throw TransportError(TransportError::Kind::Closed, "script finished");
    return fake_.stream(request, options, on_data);
  }

 private:
  FakeHttpTransport& fake_;
  std::atomic<bool>& stop_;
};

std::string item(const std::string& name, const std::string& rv) {
  return Json{{"metadata", {{"name", name}, {"namespace", "default"}, {"resourceVersion", rv}}}}.dump();
}

std::string page(const std::string& rv, const std::string& next, const std::vector<std::string>& items) {
  Json j = {
      {"kind", "PartialObjectMetadataList"}, {"apiVersion", "meta.k8s.io/v1"}, {"metadata", {{"resourceVersion", rv}}}};
  if (!next.empty()) j["metadata"]["continue"] = next;
  j["items"] = Json::array();
  for (const auto& i : items) j["items"].push_back(Json::parse(i));
  return j.dump();
}

std::string event(const std::string& type, const std::string& object) {
  return R"({"type":")" + type + R"(","object":)" + object + "}\n";
}

std::string accept(const HttpRequest& r) {
  for (const auto& [name, value] : r.headers)
    if (name == "Accept") return value;
  return "";
}

}  // namespace

TEST_CASE("policysync: a view lists in pages, watches, and relists after 410", "[policysync]") {
  FakeHttpTransport api;
  api.push_response(200, page("10", "tok/1", {item("a", "5"), item("b", "6")}));
  api.push_response(200, page("10", "", {item("c", "7")}));
  api.push_stream(200, {event("MODIFIED", item("a", "11")), event("DELETED", item("b", "12")),
                        event("ERROR", R"({"kind":"Status","code":410,"reason":"Expired","message":"too old"})")});
  api.push_response(200, page("20", "", {item("a", "11")}));
  api.push_stream(200,
                  {event("BOOKMARK", R"({"metadata":{"resourceVersion":"25"}})"), event("ADDED", item("d", "26"))});
  std::atomic<bool> stop{false};
  std::vector<std::string> seen;
  CollectionSink sink;
  sink.relist_begin = [&] { seen.push_back("begin"); };
  sink.relist_end = [&] { seen.push_back("end"); };
  sink.put = [&](const Json& o) {
    seen.push_back("put " + o["metadata"]["name"].get<std::string>());
    return o["metadata"]["name"] != "d";  // d changes nothing: no pass for it
  };
  sink.remove = [&](const Json& o) {
    seen.push_back("remove " + o["metadata"]["name"].get<std::string>());
    return true;
  };
  sink.changed = [&] { seen.push_back("changed"); };
  manifold::util::FakeClock clock;
  manifold::util::FakeSleeper sleeper(clock);
  manifold::http::ClusterAuth auth;
  auth.server = "https://127.0.0.1:6443";
  CollectionWatch view(
      {"pods", "/api/v1/pods", "", "PartialObjectMetadataList", true}, sink, CollectionOptions{},
      [&] { return std::make_unique<Scripted>(api, stop); }, auth, sleeper, clock);
  manifold::test::LogCapture log;
  view.run(stop);
  CHECK(log.contains("policy sync: listed pods at resourceVersion 10"));
  CHECK(log.contains("the pods watch reported 410: too old"));
  CHECK(seen == std::vector<std::string>{"begin", "put a", "put b", "put c", "end", "changed", "put a", "changed",
                                         "remove b", "changed", "begin", "put a", "end", "changed", "put d"});
  std::vector<std::string> targets;
  for (const auto& r : api.requests()) targets.push_back(r.target);
  CHECK(targets == std::vector<std::string>{
                       "/api/v1/pods?limit=500", "/api/v1/pods?limit=500&continue=tok%2F1",
                       "/api/v1/pods?watch=1&allowWatchBookmarks=true&timeoutSeconds=300&resourceVersion=10",
                       "/api/v1/pods?limit=500",
                       "/api/v1/pods?watch=1&allowWatchBookmarks=true&timeoutSeconds=300&resourceVersion=20"});
  CHECK(accept(api.requests().at(0)) == kMetadataListAccept);
  CHECK(accept(api.requests().at(2)) == kMetadataWatchAccept);
  CHECK(view.synced());
}
