// Tests for FileCache's reuse of unchanged attachments' serialised text across saves: whatever
// sequence of saves an ADD, a rollback or a re-ADD makes (the record growing, an earlier attachment
// changing, the list shrinking, another container interleaved, a remove in between), every file
// written is byte for byte what a fresh serialisation of the record gives, and loads back equal.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cni/error.h"
#include "store/cache.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using manifold::Json;
using manifold::store::AttachmentRecord;
using manifold::store::ContainerRecord;
using manifold::store::FileCache;
using manifold::test::TempDir;

namespace {

std::string file_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

AttachmentRecord attachment(int i) {
  AttachmentRecord a;
  a.name = "default/net-" + std::to_string(i);
  a.ifname = i == 0 ? "eth0" : "net" + std::to_string(i);
  a.config = R"({"cniVersion":"1.0.0","name":"net-)" + std::to_string(i) +
             R"(","type":"macvlan","note":"quote \" and \\ and é"})";
  a.cluster_network = i == 0;
  a.cni_args = "IgnoreUnknown=1;K8S_POD_NAME=web";
  return a;
}

/// Saves `r` and checks the file against a fresh serialisation and a load.
void save_and_check(FileCache& cache, const ContainerRecord& r) {
  cache.save(r);
  CHECK(file_text(cache.record_path(r.key())) == manifold::store::record_to_json(r).dump() + "\n");
  auto back = cache.load(r.key());
  REQUIRE(back);
  CHECK(*back == r);
}

}  // namespace

TEST_CASE("file cache: every save of a growing, changing record is a fresh serialisation", "[store]") {
  TempDir dir;
  FileCache cache(dir.path());
  ContainerRecord r;
  r.container_id = "ctr-reuse";
  r.network = "net";
  r.ifname = "eth0";
  r.netns = "/var/run/netns/pod";
  r.ifname = "eth0";
  r.cni_version = "1.0.0";
  r.extra = Json{{"pod", "default/web"}};
  save_and_check(cache, r);  // no attachment yet

  // An ADD: each attachment is saved before its delegate runs, then with its result.
  for (int i = 0; i < 5; ++i) {
    r.attachments.push_back(attachment(i));
    save_and_check(cache, r);
    r.attachments.back().result =
        R"({"cniVersion":"1.0.0","ips":[{"address":"10.0.0.)" + std::to_string(i) + R"(/24"}]})";
    save_and_check(cache, r);
  }
  // An earlier attachment changes (scoping state recorded after the fact), in every field.
  r.attachments[1].scoping = Json{{"ifname", "net1"}, {"tables", Json::array({1000})}};
  save_and_check(cache, r);
  r.attachments[2].result = "";
  r.attachments[3].name = "default/renamed";
  r.attachments[0].cluster_network = false;
  save_and_check(cache, r);
  r.attachments[4].config = "{}";
  r.attachments[4].ifname = "net9";
  save_and_check(cache, r);
  // Top-level fields change while the attachments do not.
  r.netns = "-";
  r.extra["uid"] = "u-1";
  save_and_check(cache, r);
  // A rollback keeps only some attachments; then the list grows again with different ones.
  r.attachments.resize(2);
  save_and_check(cache, r);
  r.attachments.push_back(attachment(7));
  save_and_check(cache, r);
  r.attachments.clear();
  save_and_check(cache, r);
}

TEST_CASE("file cache: reused texts never leak between containers or across a remove", "[store]") {
  TempDir dir;
  FileCache cache(dir.path());
  ContainerRecord a, b;
  a.container_id = "ctr-a";
  a.network = "net";
  a.ifname = "eth0";
  b.container_id = "ctr-b";
  b.network = "net";
  b.ifname = "eth0";
  a.attachments = {attachment(0), attachment(1)};
  b.attachments = {attachment(1), attachment(0)};
  b.attachments[0].result = "{}";
  save_and_check(cache, a);
  save_and_check(cache, b);
  a.attachments[1].result = "{}";
  save_and_check(cache, a);
  save_and_check(cache, b);

  cache.remove(a.key());
  CHECK_FALSE(cache.load(a.key()));
  a.attachments = {attachment(3)};
  save_and_check(cache, a);
  CHECK(cache.load(b.key()) == b);
}

TEST_CASE("file cache: an unstorable attachment is refused even after earlier good saves", "[store]") {
  TempDir dir;
  FileCache cache(dir.path());
  ContainerRecord r;
  r.container_id = "ctr-bad";
  r.network = "net";
  r.ifname = "eth0";
  r.attachments = {attachment(0)};
  save_and_check(cache, r);
  r.attachments.push_back(attachment(1));
  r.attachments[1].result = "invalid utf-8 \xff";
  CHECK_THROWS_AS(cache.save(r), manifold::cni::CniError);
  r.attachments[1].result = "";
  r.attachments[0].extra = 7;  // not an object
  CHECK_THROWS_AS(cache.save(r), manifold::cni::CniError);
  // The file still holds the last good save.
  ContainerRecord good;
  good.container_id = "ctr-bad";
  good.network = "net";
  good.ifname = "eth0";
  good.attachments = {attachment(0)};
  CHECK(cache.load(r.key()) == good);
}

TEST_CASE("file cache: a config or a result changing alone is re-serialised, the other reused", "[store]") {
  TempDir dir;
  FileCache cache(dir.path());
  ContainerRecord r;
  r.container_id = "ctr-fields";
  r.network = "net";
  r.ifname = "eth0";
  r.attachments = {attachment(0), attachment(1)};
  save_and_check(cache, r);
  r.attachments[1].result = R"({"cniVersion":"1.0.0","note":"\"quoted\" \u00e9"})";
  save_and_check(cache, r);
  r.attachments[1].config = R"({"cniVersion":"1.0.0","name":"other","type":"bridge"})";
  save_and_check(cache, r);
  r.attachments[1].config = attachment(1).config;  // back to the first config, result unchanged
  r.attachments[1].result = "";
  save_and_check(cache, r);
  r.attachments[0].scoping = Json::object();
  r.attachments[0].cluster_network = false;
  save_and_check(cache, r);
}
