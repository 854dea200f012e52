// Tests of the watch stream decoder: events reassembled from pieces cut at every byte, blank lines
// and CR LF line ends, the shape checks (JSON object, string "type", object "object", known type),
// the size bound enforced while a line is still incomplete, bounded and escaped error messages.
#include <catch2/catch.hpp>

#include "k8s/watch_stream.h"

using namespace manifold;
using namespace manifold::k8s;

namespace {

const std::string kBody =
    std::string(R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a"}}})") + "\n" + "\n" +  // a blank line
    R"({"type":"MODIFIED","object":{"kind":"Pod","metadata":{"name":"a","resourceVersion":"7"}}})" + "\r\n" +
    "   \n" +  // CR LF, then a line of spaces
    R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"9"}}})" + "\n" +
    R"({"type":"DELETED","object":{"kind":"Pod","metadata":{"name":"a"}}})" + "\n";

/// "TYPE name-or-resourceVersion" of each event, for comparisons.
std::vector<std::string> summary(const std::vector<WatchEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) {
    const Json& meta = e.object.at("metadata");
    out.push_back(e.type + " " + (meta.contains("name") ? meta.at("name").get<std::string>() : "") + "/" +
                  meta.value("resourceVersion", ""));
  }
  return out;
}

const std::vector<std::string> kExpected = {"ADDED a/", "MODIFIED a/7", "BOOKMARK /9", "DELETED a/"};

/// The message of the WatchStreamError that feeding `bytes` throws.
std::string error_of(const std::string& bytes, std::size_t max = 4u << 20) {
  WatchDecoder decoder(max);
  try {
    decoder.feed(bytes);
  } catch (const WatchStreamError& e) {
    CHECK(e.code() == static_cast<unsigned>(cni::ErrorCode::Kubernetes));
    CHECK(decoder.pending() == 0);
    return e.msg();
  }
  FAIL("feed() accepted " << bytes);
  return {};
}

}  // namespace

TEST_CASE("WatchDecoder decodes a whole body at once", "[k8s]") {
  WatchDecoder decoder;
  auto events = decoder.feed(kBody);
  CHECK(summary(events) == kExpected);
  CHECK(decoder.pending() == 0);
  CHECK(events[0].object.at("kind") == "Pod");
}

TEST_CASE("WatchDecoder gives the same events whatever the pieces", "[k8s]") {
  SECTION("one byte at a time") {
    WatchDecoder decoder;
    std::vector<WatchEvent> events;
    for (char c : kBody) {
      auto more = decoder.feed(std::string_view(&c, 1));
      for (auto& e : more) events.push_back(std::move(e));
    }
    CHECK(summary(events) == kExpected);
    CHECK(decoder.pending() == 0);
  }
  SECTION("two pieces, cut at every byte") {
    for (std::size_t cut = 0; cut <= kBody.size(); ++cut) {
      WatchDecoder decoder;
      auto events = decoder.feed(std::string_view(kBody).substr(0, cut));
      auto rest = decoder.feed(std::string_view(kBody).substr(cut));
      events.insert(events.end(), rest.begin(), rest.end());
      INFO("cut at " << cut);
      CHECK(summary(events) == kExpected);
    }
  }
}

TEST_CASE("WatchDecoder holds an incomplete event until its line ends", "[k8s]") {
  WatchDecoder decoder;
  CHECK(decoder.feed(R"({"type":"ADD)").empty());
  CHECK(decoder.pending() == 12);
  CHECK(decoder.feed(R"(ED","object":{"metadata":{"name":"b"}}})").empty());
  auto events = decoder.feed("\n{\"type\"");
  REQUIRE(events.size() == 1);
  CHECK(events[0].type == "ADDED");
  CHECK(events[0].object.at("metadata").at("name") == "b");
  CHECK(decoder.pending() == 7);
  CHECK(decoder.feed("").empty());
  CHECK(decoder.pending() == 7);
}

TEST_CASE("WatchDecoder carries an ERROR event and its Status through", "[k8s]") {
  WatchDecoder decoder;
  auto events = decoder.feed(
      R"({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410}})"
      "\n");
  REQUIRE(events.size() == 1);
  CHECK(events[0].type == "ERROR");
  CHECK(events[0].object.at("code") == 410);
  CHECK(events[0].object.at("reason") == "Expired");
}

TEST_CASE("WatchDecoder refuses lines that are not watch events", "[k8s]") {
  CHECK_THAT(error_of("this is not json\n"), Catch::Contains("not JSON") && Catch::Contains("\"this is not json\""));
  CHECK_THAT(error_of("[1,2]\n"), Catch::Contains("not a JSON object"));
  CHECK_THAT(error_of("\"ADDED\"\n"), Catch::Contains("not a JSON object"));
  CHECK_THAT(error_of(R"({"object":{}})"
                      "\n"),
             Catch::Contains("no string \"type\""));
  CHECK_THAT(error_of(R"({"type":1,"object":{}})"
                      "\n"),
             Catch::Contains("no string \"type\""));
  CHECK_THAT(error_of(R"({"type":"ADDED"})"
                      "\n"),
             Catch::Contains("no object \"object\""));
  CHECK_THAT(error_of(R"({"type":"ADDED","object":[]})"
                      "\n"),
             Catch::Contains("no object \"object\""));
  CHECK_THAT(error_of(R"({"type":"RENAMED","object":{}})"
                      "\n"),
             Catch::Contains("unknown type \"RENAMED\""));
  // Valid events before the bad line do not hide it.
  CHECK_THAT(error_of(R"({"type":"ADDED","object":{}})"
                      "\n{oops}\n"),
             Catch::Contains("not JSON"));
}

TEST_CASE("WatchDecoder refuses nesting deeper than the JSON bound without throwing from the parser", "[k8s]") {
  std::string deep = R"({"type":"ADDED","object":)";
  for (int i = 0; i < 400; ++i) deep += R"({"a":)";
  deep += "1";
  for (int i = 0; i < 400; ++i) deep += "}";
  deep += "}\n";
  CHECK_THAT(error_of(deep), Catch::Contains("not JSON"));
}

TEST_CASE("WatchDecoder messages quote a bounded, escaped excerpt of the line", "[k8s]") {
  std::string message = error_of("\x01\x02\"bad\\" + std::string(10000, 'x') + "\n");
  CHECK_THAT(message, Catch::Contains(R"("\x01\x02\x22bad\x5cxxx)") && Catch::Contains("xxx...\""));
  CHECK(message.size() < 400);
  CHECK(message.find('\x01') == std::string::npos);
}

TEST_CASE("WatchDecoder refuses an event over the bound while its line is still incomplete", "[k8s]") {
  const std::string event = R"({"type":"ADDED","object":{"n":"123456789012345678901234567890"}})";
  REQUIRE(event.size() == 64);
  SECTION("an event of exactly the bound is accepted, CR LF or LF") {
    WatchDecoder decoder(65);
    CHECK(decoder.feed(event + "\n").size() == 1);
    CHECK(decoder.feed(event + "\r\n").size() == 1);
  }
  SECTION("one byte more is refused before the line feed arrives") {
    WatchDecoder decoder(63);
    CHECK(decoder.feed(event.substr(0, 63)).empty());
    CHECK(decoder.pending() == 63);
    try {
      decoder.feed("}");
      FAIL("feed() accepted a line over the bound");
    } catch (const WatchStreamError& e) {
      CHECK_THAT(e.msg(), Catch::Contains("larger than 63 bytes") && Catch::Contains(R"("{\x22type\x22)"));
    }
    CHECK(decoder.pending() == 0);
  }
  SECTION("an endless line is refused in the piece that passes the bound") {
    WatchDecoder decoder(1000);
    CHECK(decoder.feed(std::string(600, 'x')).empty());
    CHECK_THROWS_AS(decoder.feed(std::string(600, 'x')), WatchStreamError);
  }
  SECTION("the bound is per line, not per piece") {
    WatchDecoder decoder(65);
    CHECK(decoder.feed(event + "\n" + event + "\n" + event + "\n").size() == 3);
  }
}
