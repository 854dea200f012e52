// The CNI verbs. ADD reads top-down: plan every attachment (pod, NADs, scoping) before anything is
// created, then under the container's lock attach them one by one in a transaction that rolls back
// exactly what it did if any step — a delegate, the scoping, the default-route step, the
// network-status write — fails, and print the cluster network's result. DEL, CHECK, GC and STATUS
// are one engine call each after the same set-up.
#include "plugin/cni/verbs.h"

#include "cni/cni_args.h"
#include "cni/netconf.h"
#include "engine/cached.h"
#include "engine/check.h"
#include "engine/detach.h"
#include "engine/gc.h"
#include "engine/kube_access.h"
#include "engine/plan.h"
#include "engine/pod_status.h"
#include "engine/session.h"
#include "store/cache.h"
#include "engine/transaction.h"
#include "plugin/cni/logging.h"

namespace manifold::plugin {

namespace {

// Every verb starts here: the config (error 7 when invalid), logging, the session.
engine::Session begin(const Services& services, const cni::Invocation& inv) {
  cni::MetaConfig config = cni::parse_meta_config(inv.config);
  configure_logging(config, inv);
  return engine::open_session(services, std::move(config), inv);
}

}  // namespace

std::string Commands::add(const cni::Invocation& inv) {
  engine::Session s = begin(services_, inv);
  engine::wait_for_readiness(services_, s.config, engine::Readiness::Wait);
  engine::KubeAccess kube(services_, s.config, cni::pod_ref_from(inv.args).uid);
  auto pod = engine::lookup_pod(kube, inv);
  engine::Plan plan = engine::plan_add(services_, s, kube, inv, pod);

  auto lock = s.cache->lock(inv.container_id);
  engine::refuse_unreadable_entry(*s.cache, s.key);
  engine::AttachTransaction tx(services_, s, inv, engine::new_entry(s, inv));
  tx.attach_all(plan.attachments, plan.scoping, &plan.policy);
  tx.apply_default_routes(plan.scoping);
  if (pod) tx.flush();  // every result on disk before the API write
  if (pod) engine::publish_status(kube, *services_.files, s.config, inv, *pod, tx.record(), tx.results());
  std::string result = engine::render_result(tx.record(), tx.results(), inv.version, s.config.return_all_results);
  tx.mark_complete();
  tx.commit();
  return result;
}

std::string Commands::del(const cni::Invocation& inv) {
  engine::Session s = begin(services_, inv);
  engine::wait_for_readiness(services_, s.config, engine::Readiness::LookOnce);
  // A container with nothing recorded and no call running (the runtime's repeated DELs of a sandbox
  // already deleted) is DELeted without its lock: there is nothing to serialise with, and a DEL the
  // runtime kills midway (containerd does, when it forcibly stops a sandbox) then leaves no lock
  // file behind.
  std::unique_ptr<store::LockGuard> lock;
  if (!s.cache->is_idle(inv.container_id)) lock = s.cache->lock(inv.container_id);
  engine::detach_entry(services_, s, inv);
  return "";
}

std::string Commands::check(const cni::Invocation& inv) {
  engine::Session s = begin(services_, inv);
  auto lock = s.cache->lock(inv.container_id);
  engine::check_entry(services_, s, inv);
  return "";
}

std::string Commands::gc(const cni::Invocation& inv) {
  engine::Session s = begin(services_, inv);
  (void)engine::parse_valid_attachments(inv.config);  // refused before anything else when missing
  engine::wait_for_readiness(services_, s.config, engine::Readiness::Wait);
  engine::collect_garbage(services_, s, inv);
  return "";
}

std::string Commands::status(const cni::Invocation& inv) {
  engine::Session s = begin(services_, inv);
  engine::wait_for_readiness(services_, s.config, engine::Readiness::Wait);
  engine::report_status(services_, s, inv);
  return "";
}

}  // namespace manifold::plugin
