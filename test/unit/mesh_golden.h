// Test data: the mesh redirect payload of the basic example on net1 (inbound port 4143, outbound
// port 4140, proxy UID 2102, inbound ports 4190 and 4191 skipped), as iptables-restore receives it
// on a fresh namespace. The firewall rule builder's golden test and the scoping lifecycle test both
// check against this one text, so the two cannot drift apart.
#pragma once

namespace manifold::test {

/// The basic example's ADD payload for net1 (identical for IPv4 and IPv6: it holds no address).
inline constexpr const char* kBasicMeshPayload =
    "*nat\n"
    ":CNIMESH-IN-net1 - [0:0]\n"
    ":CNIMESH-OUT-net1 - [0:0]\n"
    "-A CNIMESH-IN-net1 -p tcp -m multiport --dports 4190,4191 -m comment --comment "
    "\"cnimesh/net1/ignore-inbound-ports\" -j RETURN\n"
    "-A CNIMESH-IN-net1 -p tcp -m comment --comment \"cnimesh/net1/redirect-inbound\" -j REDIRECT --to-ports 4143\n"
    "-A CNIMESH-OUT-net1 -m owner --uid-owner 2102 -m comment --comment \"cnimesh/net1/ignore-proxy-uid\" -j RETURN\n"
    "-A CNIMESH-OUT-net1 -p tcp -m comment --comment \"cnimesh/net1/redirect-outbound\" -j REDIRECT --to-ports 4140\n"
    "-I PREROUTING 1 -i net1 -p tcp -m comment --comment \"cnimesh/net1/jump-inbound\" -j CNIMESH-IN-net1\n"
    "-I OUTPUT 1 -o net1 -p tcp -m comment --comment \"cnimesh/net1/jump-outbound\" -j CNIMESH-OUT-net1\n"
    "COMMIT\n";

}  // namespace manifold::test
