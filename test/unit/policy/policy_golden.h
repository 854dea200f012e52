// Test data: the golden example's payloads (policy_world.h: golden_policy on web's net1) as
// iptables-restore receives them on a fresh namespace — with every peer known, and in the form ADD
// installs before the peers are known. The rule builder's golden tests and the lifecycle tests check
// against these texts, so the two cannot drift apart.
#pragma once

namespace manifold::test {

/// IPv4, peers known, denyAction drop.
inline constexpr const char* kGoldenPolicyV4 =
    "*filter\n"
    ":MNP-IN-net1 - [0:0]\n"
    ":MNP-OUT-net1 - [0:0]\n"
    "-A MNP-IN-net1 -m conntrack --ctstate RELATED,ESTABLISHED -m comment --comment \"mnp/net1/replies\" -j ACCEPT\n"
    "-A MNP-IN-net1 -p udp -m udp --sport 67 --dport 68 -m comment --comment \"mnp/net1/dhcp\" -j ACCEPT\n"
    "-A MNP-IN-net1 -s 10.1.0.5/32 -p tcp -m conntrack --ctorigdstport 8080 -m comment --comment "
    "\"mnp/net1/allow-clients ingress[0]\" -j ACCEPT\n"
    "-A MNP-IN-net1 -s 10.1.0.5/32 -p tcp -m conntrack --ctorigdstport 9000:9010 -m comment --comment "
    "\"mnp/net1/allow-clients ingress[0]\" -j ACCEPT\n"
    "-A MNP-IN-net1 -s 192.0.2.0/25 -m comment --comment \"mnp/net1/allow-clients ingress[1]\" -j ACCEPT\n"
    "-A MNP-IN-net1 -m comment --comment \"mnp/net1/deny\" -j DROP\n"
    "-A MNP-OUT-net1 -m conntrack --ctstate RELATED,ESTABLISHED -m comment --comment \"mnp/net1/replies\" -j ACCEPT\n"
    "-A MNP-OUT-net1 -p udp -m udp --sport 68 --dport 67 -m comment --comment \"mnp/net1/dhcp\" -j ACCEPT\n"
    "-A MNP-OUT-net1 -d 198.51.100.0/24 -p udp -m udp --dport 53 -m comment --comment "
    "\"mnp/net1/allow-clients egress[0]\" -j ACCEPT\n"
    "-A MNP-OUT-net1 -d 10.1.0.7/32 -p tcp -m tcp --dport 8080 -m comment --comment "
    "\"mnp/net1/allow-clients egress[1]\" -j ACCEPT\n"
    "-A MNP-OUT-net1 -m comment --comment \"mnp/net1/deny\" -j DROP\n"
    "-I INPUT 1 -i net1 -m comment --comment \"mnp/net1/ingress\" -j MNP-IN-net1\n"
    "-I OUTPUT 1 -o net1 -m comment --comment \"mnp/net1/egress\" -j MNP-OUT-net1\n"
    "COMMIT\n";

/// IPv6, peers not known yet (ADD): only what needs no peer, denyAction reject.
inline constexpr const char* kGoldenPolicyV6AtAdd =
    "*filter\n"
    ":MNP-IN-net1 - [0:0]\n"
    ":MNP-OUT-net1 - [0:0]\n"
    "-A MNP-IN-net1 -m conntrack --ctstate RELATED,ESTABLISHED -m comment --comment \"mnp/net1/replies\" -j ACCEPT\n"
    "-A MNP-IN-net1 -p ipv6-icmp -m icmp6 --icmpv6-type 130 -m comment --comment \"mnp/net1/neighbour-discovery\" -j "
    "ACCEPT\n"
    "-A MNP-IN-net1 -p ipv6-icmp -m icmp6 --icmpv6-type 131 -m comment --comment \"mnp/net1/neighbour-discovery\" -j "
    "ACCEPT\n"
    "-A MNP-IN-net1 -p ipv6-icmp -m icmp6 --icmpv6-type 132 -m comment --comment \"mnp/net1/neighbour-discovery\" -j "
    "ACCEPT\n"
    "-A MNP-IN-net1 -p ipv6-icmp -m icmp6 --icmpv6-type 133 -m comment --comment \"mnp/net1/neighbour-discovery\" -j "
    "ACCEPT\n"
    "-A MNP-IN-net1 -p ipv6-icmp -m icmp6 --icmpv6-type 134 -m comment --comment \"mnp/net1/neighbour-discovery\" -j "
    "ACCEPT\n"
    "-A MNP-IN-net1 -p ipv6-icmp -m icmp6 --icmpv6-type 135 -m comment --comment \"mnp/net1/neighbour-discovery\" -j "
    "ACCEPT\n"
    "-A MNP-IN-net1 -p ipv6-icmp -m icmp6 --icmpv6-type 136 -m comment --comment \"mnp/net1/neighbour-discovery\" -j "
    "ACCEPT\n"
    "-A MNP-IN-net1 -p ipv6-icmp -m icmp6 --icmpv6-type 137 -m comment --comment \"mnp/net1/neighbour-discovery\" -j "
    "ACCEPT\n"
    "-A MNP-IN-net1 -p ipv6-icmp -m icmp6 --icmpv6-type 143 -m comment --comment \"mnp/net1/neighbour-discovery\" -j "
    "ACCEPT\n"
    "-A MNP-IN-net1 -p udp -m udp --sport 547 --dport 546 -m comment --comment \"mnp/net1/dhcpv6\" -j ACCEPT\n"
    "-A MNP-IN-net1 -m comment --comment \"mnp/net1/deny\" -j REJECT --reject-with icmp6-adm-prohibited\n"
    "-A MNP-OUT-net1 -m conntrack --ctstate RELATED,ESTABLISHED -m comment --comment \"mnp/net1/replies\" -j ACCEPT\n"
    "-A MNP-OUT-net1 -p ipv6-icmp -m icmp6 --icmpv6-type 130 -m comment --comment \"mnp/net1/neighbour-discovery\" -j "
    "ACCEPT\n"
    "-A MNP-OUT-net1 -p ipv6-icmp -m icmp6 --icmpv6-type 131 -m comment --comment \"mnp/net1/neighbour-discovery\" -j "
    "ACCEPT\n"
    "-A MNP-OUT-net1 -p ipv6-icmp -m icmp6 --icmpv6-type 132 -m comment --comment \"mnp/net1/neighbour-discovery\" -j "
    "ACCEPT\n"
    "-A MNP-OUT-net1 -p ipv6-icmp -m icmp6 --icmpv6-type 133 -m comment --comment \"mnp/net1/neighbour-discovery\" -j "
    "ACCEPT\n"
    "-A MNP-OUT-net1 -p ipv6-icmp -m icmp6 --icmpv6-type 134 -m comment --comment \"mnp/net1/neighbour-discovery\" -j "
    "ACCEPT\n"
    "-A MNP-OUT-net1 -p ipv6-icmp -m icmp6 --icmpv6-type 135 -m comment --comment \"mnp/net1/neighbour-discovery\" -j "
    "ACCEPT\n"
    "-A MNP-OUT-net1 -p ipv6-icmp -m icmp6 --icmpv6-type 136 -m comment --comment \"mnp/net1/neighbour-discovery\" -j "
    "ACCEPT\n"
    "-A MNP-OUT-net1 -p ipv6-icmp -m icmp6 --icmpv6-type 137 -m comment --comment \"mnp/net1/neighbour-discovery\" -j "
    "ACCEPT\n"
    "-A MNP-OUT-net1 -p ipv6-icmp -m icmp6 --icmpv6-type 143 -m comment --comment \"mnp/net1/neighbour-discovery\" -j "
    "ACCEPT\n"
    "-A MNP-OUT-net1 -p udp -m udp --sport 546 --dport 547 -m comment --comment \"mnp/net1/dhcpv6\" -j ACCEPT\n"
    "-A MNP-OUT-net1 -m comment --comment \"mnp/net1/deny\" -j REJECT --reject-with icmp6-adm-prohibited\n"
    "-I INPUT 1 -i net1 -m comment --comment \"mnp/net1/ingress\" -j MNP-IN-net1\n"
    "-I OUTPUT 1 -o net1 -m comment --comment \"mnp/net1/egress\" -j MNP-OUT-net1\n"
    "COMMIT\n";

}  // namespace manifold::test
