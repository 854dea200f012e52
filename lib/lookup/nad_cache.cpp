// Implementation of the NAD cache: namespaces in a map under one mutex, a queue of namespaces to
// LIST served by one worker thread (the LIST itself runs outside the lock), and a condition variable
// on which lookups wait for a fresh enough copy.
#include "lookup/nad_cache.h"

#include <algorithm>
#include <exception>

#include "lookup/resource_version.h"
#include "util/log.h"

namespace manifold::lookup {
namespace {

/// The NAD's JSON as GET returns it (a LIST's items may leave kind and apiVersion out).
std::string get_body(const Json& item) {
  if (item.contains("kind") && item.contains("apiVersion")) return item.dump();
  Json copy = item;
  copy["kind"] = "NetworkAttachmentDefinition";
  copy["apiVersion"] = "k8s.cni.cncf.io/v1";
  return copy.dump();
}

std::string item_name(const Json& item) {
  const Json* name = json_at(item, {"metadata", "name"});
  return name && name->is_string() ? name->get<std::string>() : std::string();
}

}  // namespace

NadCache::NadCache(NadLister lister, Limits limits)
    : lister_(std::move(lister)), limits_(limits), worker_([this] { work(); }) {}

NadCache::~NadCache() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_ready_.notify_all();
  changed_.notify_all();
  worker_.join();
}

NadCache::Space* NadCache::space(const std::string& ns) {
  if (auto it = spaces_.find(ns); it != spaces_.end()) return &it->second;
  if (spaces_.size() >= limits_.max_namespaces) {
    auto idle = spaces_.end();
    for (auto it = spaces_.begin(); it != spaces_.end(); ++it) {
      const Space& s = it->second;
      if (s.queued || s.listing || s.waiters > 0) continue;
      if (idle == spaces_.end() || s.used < idle->second.used) idle = it;
    }
    if (idle == spaces_.end()) return nullptr;
    bytes_ -= idle->second.bytes;
    spaces_.erase(idle);
  }
  return &spaces_[ns];
}

void NadCache::enqueue(const std::string& ns, Space& s, Clock::time_point due) {
  if (s.listing || (s.queued && s.due <= due)) return;
  s.due = due;
  if (!s.queued) queue_.push_back(ns);
  s.queued = true;
  work_ready_.notify_one();
}

void NadCache::want(const std::string& ns, std::uint64_t rv, Clock::time_point due) {
  Space* s = space(ns);
  if (!s || (s->progress && *s->progress >= rv)) return;
  s->wanted = std::max(s->wanted, rv);
  s->last_want = ++want_counter_;
  s->failed = false;
  enqueue(ns, *s, due);
}

std::deque<std::string>::iterator NadCache::next_due() {
  return std::min_element(queue_.begin(), queue_.end(), [this](const std::string& a, const std::string& b) {
    return spaces_[a].due < spaces_[b].due;
  });
}

void NadCache::new_pod(const std::vector<std::string>& namespaces, std::uint64_t bound_rv) {
  std::lock_guard lock(mu_);
  const Clock::time_point now = Clock::now();
  std::vector<std::string> all = namespaces;
  for (const auto& [ns, s] : spaces_)
    if (s.used != Clock::time_point{} && now - s.used <= limits_.recently_read &&
        std::find(all.begin(), all.end(), ns) == all.end())
      all.push_back(ns);
  for (const std::string& ns : all) want(ns, bound_rv, now + limits_.batch);
}

void NadCache::work() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_ready_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    auto next = next_due();
    if (Clock::time_point due = spaces_[*next].due; due > Clock::now()) {
      work_ready_.wait_until(lock, due);  // more pods may come to share it, or a lookup hurry it
      continue;
    }
    const std::string ns = *next;
    queue_.erase(next);
    auto it = spaces_.find(ns);
    if (it == spaces_.end()) continue;
    it->second.queued = false;
    it->second.listing = true;
    const std::uint64_t started = want_counter_;
    ++lists_;
    lock.unlock();
    std::optional<Json> list;
    try {
      list = lister_(ns);
    } catch (const std::exception& e) {
      util::log_error("agent: cannot list the NetworkAttachmentDefinitions of namespace ", ns, ": ", e.what());
    }
    lock.lock();
    apply(ns, started, list);
    changed_.notify_all();
  }
}

void NadCache::apply(const std::string& ns, std::uint64_t started, const std::optional<Json>& list) {
  Space& s = spaces_[ns];  // never evicted while listing
  s.listing = false;
  const Json* items = list ? json_at(*list, {"items"}) : nullptr;
  if (!items || !items->is_array()) {
    s.failed = true;
    return;
  }
  std::map<std::string, std::string> nads;
  std::size_t size = 0;
  for (const Json& item : *items)
    if (std::string name = item_name(item); !name.empty()) {
      std::string body = get_body(item);
      size += body.size();
      nads[name] = std::move(body);
    }
  const Json* rv = json_at(*list, {"metadata", "resourceVersion"});
  s.progress = rv && rv->is_string() ? parse_resource_version(rv->get<std::string>()) : std::nullopt;
  s.not_integer = !s.progress;
  bytes_ -= s.bytes;
  s.too_large = bytes_ + size > limits_.max_bytes;
  s.nads = s.too_large ? std::map<std::string, std::string>{} : std::move(nads);
  s.bytes = s.too_large ? 0 : size;
  bytes_ += s.bytes;
  s.failed = false;
  if (!s.progress || *s.progress >= s.wanted) return;
  // Older than asked: an ask that came while the LIST was in flight may be for a pod the LIST's read
  // did not see yet, so one more LIST answers it; an ask from before it cannot get fresher this way
  // (the resourceVersions do not compare): those lookups go to the API server.
  if (s.last_want > started) return enqueue(ns, s, s.waiters > 0 ? Clock::now() : Clock::now() + limits_.batch);
  s.unreachable = std::max(s.unreachable, s.wanted);
}

Verdict NadCache::check(const Space& s, const std::string& name, std::uint64_t rv, std::string& body) const {
  if (s.progress && *s.progress >= rv) {
    if (s.too_large) return Verdict::OverCapacity;
    auto it = s.nads.find(name);
    if (it == s.nads.end()) return Verdict::Absent;
    body = it->second;
    return Verdict::Hit;
  }
  if (s.failed) return Verdict::ListFailed;
  if (s.not_integer) return Verdict::NotInteger;
  return Verdict::Stale;  // not yet, or never (unreachable): the caller decides whether to wait
}

NadAnswer NadCache::get(const std::string& ns, const std::string& name, std::uint64_t bound_rv,
                        Clock::time_point deadline) {
  NadAnswer out;
  std::unique_lock lock(mu_);
  Space* s = space(ns);
  if (!s) {
    out.verdict = Verdict::OverCapacity;
    return out;
  }
  s->used = Clock::now();
  if (s->failed && !s->queued && !s->listing) want(ns, bound_rv, Clock::now());  // an earlier LIST failed
  ++s->waiters;
  for (;;) {
    out.verdict = check(*s, name, bound_rv, out.body);
    const bool final = out.verdict != Verdict::Stale || s->unreachable >= bound_rv || stop_;
    if (final) break;
    if (!s->listing) want(ns, bound_rv, Clock::now());  // not queued, or queued for later: now
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout) {
      out.verdict = check(*s, name, bound_rv, out.body);
      break;
    }
    out.waited = true;
  }
  --s->waiters;
  return out;
}

std::uint64_t NadCache::lists() const {
  std::lock_guard lock(mu_);
  return lists_;
}

std::size_t NadCache::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

std::size_t NadCache::namespaces() const {
  std::lock_guard lock(mu_);
  return spaces_.size();
}

}  // namespace manifold::lookup
