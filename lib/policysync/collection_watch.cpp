// Implementation of one collection's LIST+WATCH loop: paged lists, resumed watches, relists on
// 410, backoff on failures.
#include "policysync/collection_watch.h"

#include <algorithm>

#include "cni/error.h"
#include "http/retry.h"
#include "k8s/watch_stream.h"
#include "util/log.h"

namespace manifold::policysync {

CollectionWatch::CollectionWatch(CollectionSpec spec, CollectionSink sink, CollectionOptions options,
                                 TransportFactory open, http::ClusterAuth auth, util::Sleeper& sleeper,
                                 util::Clock& clock)
    : spec_(std::move(spec)),
      sink_(std::move(sink)),
      options_(options),
      open_(std::move(open)),
      auth_(std::move(auth)),
      sleeper_(sleeper),
      clock_(clock) {}

bool CollectionWatch::pause(std::chrono::milliseconds duration, const std::atomic<bool>& stop) {
  const auto end = clock_.now() + duration;
  while (!stop.load()) {
    const auto now = clock_.now();
    if (now >= end) return true;
    sleeper_.sleep_for(std::min(options_.tick, std::chrono::duration_cast<std::chrono::milliseconds>(end - now)));
  }
  return false;
}

void CollectionWatch::run(const std::atomic<bool>& stop) {
  http::RandomJitter jitter;
  http::RetryPolicy backoff;
  backoff.initial_backoff = options_.initial_backoff;
  backoff.max_backoff = options_.max_backoff;
  int failures = 0;
  bool listed = false;
  while (!stop.load()) {
    std::unique_ptr<http::HttpTransport> transport = open_();
    k8s::ApiClient api(*transport, auth_, http::RetryPolicy{}, sleeper_, clock_);
    int counted = 0;
    while (!stop.load()) {
      End end = End::Resume;
      if (!listed) {
        listed = list(api, stop);
        end = listed ? End::Resume : End::Backoff;
      }
      if (listed) end = watch(api, stop);
      requests_.fetch_add(api.requests_made() - counted);
      counted = api.requests_made();
      if (end == End::Stopped) return;
      if (end == End::Relist) listed = false;
      if (end != End::Backoff) {
        failures = 0;
        continue;
      }
      if (resource_version_.empty()) listed = false;
      if (!pause(http::backoff_delay(backoff, std::max(++failures, 1), jitter.next()), stop)) return;
      break;  // a new connection after a failure
    }
  }
}

bool CollectionWatch::list(k8s::ApiClient& api, const std::atomic<bool>& stop) {
  const std::string accept = spec_.metadata_only ? kMetadataListAccept : "";
  std::string token;
  bool begun = false;
  try {
    do {
      Json page = api.list_page(spec_.resource, spec_.collection, spec_.query, spec_.list_kind, accept,
                                options_.page_size, token);
      if (!begun) {
        synced_.store(false);
        if (sink_.relist_begin) sink_.relist_begin();
        begun = true;
      }
      for (const Json& item : page["items"])
        if (item.is_object()) sink_.put(item);
      token = json_string_at(page, {"metadata", "continue"});
      resource_version_ = json_string_at(page, {"metadata", "resourceVersion"});
    } while (!token.empty() && !stop.load());
  } catch (const cni::CniError& e) {
    util::log_error("policy sync: cannot list ", spec_.resource, ": ", e.msg());
    return false;
  }
  if (stop.load()) return false;
  if (sink_.relist_end) sink_.relist_end();
  if (sink_.changed) sink_.changed();
  synced_.store(true);
  util::log_verbose("policy sync: listed ", spec_.resource, " at resourceVersion ", resource_version_);
  return true;
}

bool CollectionWatch::handle(const std::string& type, const Json& object, End& end) {
  if (type == "ERROR") {
    const int code = object.value("code", 0);
    util::log_verbose("policy sync: the ", spec_.resource, " watch reported ", code, ": ",
                      object.value("message", std::string()));
    end = code == 410 ? End::Relist : End::Backoff;
    return false;
  }
  const std::string rv = json_string_at(object, {"metadata", "resourceVersion"});
  if (!rv.empty()) resource_version_ = rv;
  if (type == "BOOKMARK") return true;
  const bool mattered = type == "DELETED" ? sink_.remove(object) : sink_.put(object);
  if (mattered && sink_.changed) sink_.changed();
  return true;
}

CollectionWatch::End CollectionWatch::watch(k8s::ApiClient& api, const std::atomic<bool>& stop) {
  k8s::WatchDecoder decoder;
  http::StreamOptions so;
  so.open_timeout = options_.open_timeout;
  so.idle_timeout = options_.idle_timeout;
  so.tick = options_.tick;
  so.on_tick = [&stop] { return !stop.load(); };
  End end = End::Resume;
  watching_.store(true);
  try {
    const std::string accept = spec_.metadata_only ? kMetadataWatchAccept : "";
    const http::StreamEnd how =
        api.watch_collection(spec_.resource, spec_.collection, spec_.query, resource_version_,
                             options_.watch_timeout_seconds, accept, so, [&](std::string_view bytes) {
                               try {
                                 for (const k8s::WatchEvent& event : decoder.feed(bytes))
                                   if (!handle(event.type, event.object, end)) return false;
                               } catch (const cni::CniError& e) {
                                 util::log_error("policy sync: the ", spec_.resource,
                                                 " watch sent something that is not a watch event: ", e.msg());
                                 end = End::Backoff;
                                 return false;
                               }
                               return !stop.load();
                             });
    watching_.store(false);
    if (stop.load()) return End::Stopped;
    return how == http::StreamEnd::Stopped ? end : End::Resume;
  } catch (const k8s::ApiError& e) {
    watching_.store(false);
    if (e.http_status() == 410) return End::Relist;
    util::log_error("policy sync: the ", spec_.resource, " watch failed: ", e.msg());
  } catch (const cni::CniError& e) {
    watching_.store(false);
    util::log_error("policy sync: the ", spec_.resource, " watch failed: ", e.msg());
  }
  return stop.load() ? End::Stopped : End::Backoff;
}

}  // namespace manifold::policysync
