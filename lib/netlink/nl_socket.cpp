// Implementation of NlSocket: connect, bounded dump retry, error raising. Dump requests are sent
// with the same fixed headers libnl's own cache refill uses; the answers are parsed by libnl's
// cache machinery (nl_cache_pickup_checkdup) or, for dump_all, parsed message by message. We do
// not call nl_cache_refill because it restarts interrupted dumps without a bound.
#include "netlink/nl_socket.h"

#include <linux/fib_rules.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <netlink/errno.h>

#include "netlink/error.h"
#include "util/log.h"

namespace manifold::netlink {
namespace {

const char* dump_name(DumpKind kind) {
  switch (kind) {
    case DumpKind::Links:
      return "links";
    case DumpKind::Addresses:
      return "addresses";
    case DumpKind::Routes:
      return "routes";
    case DumpKind::Rules:
      return "rules";
  }
  return "objects";
}

// Allocates an empty cache of the right type (a null socket means "do not fill it").
int alloc_empty_cache(DumpKind kind, int family, nl_cache** out) {
  switch (kind) {
    case DumpKind::Links:
      return rtnl_link_alloc_cache(nullptr, family, out);
    case DumpKind::Addresses:
      return rtnl_addr_alloc_cache(nullptr, out);
    case DumpKind::Routes:
      return rtnl_route_alloc_cache(nullptr, family, 0, out);
    case DumpKind::Rules:
      return rtnl_rule_alloc_cache(nullptr, family, out);
  }
  return -NLE_INVAL;
}

// Sends the RTM_GET* dump request for `kind` with the family in the type's fixed header.
int send_dump_request(nl_sock* sock, DumpKind kind, int family) {
  const auto fam = static_cast<unsigned char>(family);
  switch (kind) {
    case DumpKind::Links: {
      ifinfomsg hdr{};
      hdr.ifi_family = fam;
      return nl_send_simple(sock, RTM_GETLINK, NLM_F_DUMP, &hdr, sizeof hdr);
    }
    case DumpKind::Addresses: {
      ifaddrmsg hdr{};
      hdr.ifa_family = fam;
      return nl_send_simple(sock, RTM_GETADDR, NLM_F_DUMP, &hdr, sizeof hdr);
    }
    case DumpKind::Routes: {
      rtmsg hdr{};
      hdr.rtm_family = fam;
      return nl_send_simple(sock, RTM_GETROUTE, NLM_F_DUMP, &hdr, sizeof hdr);
    }
    case DumpKind::Rules: {
      fib_rule_hdr hdr{};
      hdr.family = fam;
      return nl_send_simple(sock, RTM_GETRULE, NLM_F_DUMP, &hdr, sizeof hdr);
    }
  }
  return -NLE_INVAL;
}

// libnl valid-message callback of dump_all: parses the message into its object and keeps it.
int keep_parsed_object(nl_msg* msg, void* arg) {
  const int err = nl_msg_parse(
      msg,
      [](nl_object* object, void* out) {
        nl_object_get(object);
        static_cast<std::vector<ObjectHandle>*>(out)->emplace_back(object);
      },
      arg);
  return err < 0 && err != -NLE_MSGTYPE_NOSUPPORT ? NL_STOP : NL_OK;
}

// libnl error callback: records the kernel's errno, then lets libnl map it as usual.
int record_kernel_errno(sockaddr_nl* /*from*/, nlmsgerr* error, void* arg) {
  *static_cast<int*>(arg) = error->error < 0 ? -error->error : error->error;
  return NL_STOP;
}

}  // namespace

int retry_interrupted_dump(int max_attempts, const std::function<int()>& attempt) {
  int result = -NLE_DUMP_INTR;
  for (int i = 0; i < max_attempts; ++i) {
    result = attempt();
    if (result != -NLE_DUMP_INTR) return result;
    util::log_debug("netlink dump interrupted by a concurrent change (attempt ", i + 1, " of ", max_attempts,
                    "), restarting");
  }
  return result;
}

NlSocket::NlSocket(std::string context) : sock_(nl_socket_alloc()), context_(std::move(context)) {
  if (!sock_) fail("allocate", "socket", -NLE_NOMEM);
  const int err = nl_connect(sock_.get(), NETLINK_ROUTE);
  if (err < 0) fail("connect", "NETLINK_ROUTE socket", err);
  nl_cb* cb = nl_socket_get_cb(sock_.get());  // a new reference to the socket's callbacks
  if (cb == nullptr) fail("get callbacks of", "socket", -NLE_NOMEM);
  const int set = nl_cb_err(cb, NL_CB_CUSTOM, record_kernel_errno, kernel_errno_.get());
  nl_cb_put(cb);
  if (set < 0) fail("set error callback of", "socket", set);
}

int NlSocket::request(const std::function<int(nl_sock*)>& call) {
  *kernel_errno_ = 0;
  return call(sock_.get());
}

CacheHandle NlSocket::dump(DumpKind kind, int family) {
  const std::string what = dump_name(kind);
  nl_cache* raw = nullptr;
  const int alloc_err = alloc_empty_cache(kind, family, &raw);
  if (alloc_err < 0 || raw == nullptr) fail("allocate cache for", what, alloc_err < 0 ? alloc_err : -NLE_NOMEM);
  CacheHandle cache(raw);

  const int result = retry_interrupted_dump(kMaxDumpAttempts, [&]() {
    nl_cache_clear(cache.get());
    return request([&](nl_sock* sock) {
      const int sent = send_dump_request(sock, kind, family);
      if (sent < 0) return sent;
      return nl_cache_pickup_checkdup(sock, cache.get());
    });
  });
  finish_dump(result, what);
  return cache;
}

std::vector<ObjectHandle> NlSocket::dump_all(DumpKind kind, int family) {
  const std::string what = dump_name(kind);
  std::vector<ObjectHandle> objects;
  const int result = retry_interrupted_dump(kMaxDumpAttempts, [&]() {
    objects.clear();
    return request([&](nl_sock* sock) {
      // A copy of the socket's callbacks (the kernel-errno recorder included) with our parser.
      const CallbacksHandle own(nl_socket_get_cb(sock));
      const CallbacksHandle callbacks(nl_cb_clone(own.get()));
      if (!callbacks) return -NLE_NOMEM;
      nl_cb_set(callbacks.get(), NL_CB_VALID, NL_CB_CUSTOM, keep_parsed_object, &objects);
      const int sent = send_dump_request(sock, kind, family);
      if (sent < 0) return sent;
      return nl_recvmsgs(sock, callbacks.get());
    });
  });
  finish_dump(result, what);
  return objects;
}

void NlSocket::finish_dump(int result, const std::string& what) const {
  if (result == -NLE_DUMP_INTR) {
    throw cni::CniError(cni::ErrorCode::Netlink,
                        "netlink: dump " + what + ": the kernel reported the dump inconsistent " +
                            std::to_string(kMaxDumpAttempts) + " times in a row",
                        context_);
  }
  if (result < 0) fail("dump", what, result);
}

void NlSocket::fail(std::string_view operation, std::string_view object, int nl_error) const {
  throw netlink_error(operation, object, nl_error, context_, *kernel_errno_);
}

}  // namespace manifold::netlink
