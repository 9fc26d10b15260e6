package validation

import (
	"math"
	"time"
)

// Bounds of a Firewall spec, a `firewall` providerConfig, the agent's static
// source and a ClusterwideNetworkPolicy. Each is far above real use; they keep
// a hostile document from costing unbounded time, memory or error text.
const (
	// MaxMetalIDLength is the longest metal ID (size, image, partition,
	// project, network), metal-api's own bound (metal-stack/api v2: 2-128).
	MaxMetalIDLength = 128
	// MaxNetworks is the most networks a firewall is attached to.
	MaxNetworks = 64
	// MaxInternalPrefixes is the most internal prefixes.
	MaxInternalPrefixes = 1024
	// MaxEgressRules is the most SNAT rules: at most one per network.
	MaxEgressRules = MaxNetworks
	// MaxSNATIPs is the most addresses of one SNAT rule: one per family.
	MaxSNATIPs = 2
	// MaxRateLimits is the most rate limits: at most one per network.
	MaxRateLimits = MaxNetworks
	// MaxUserdataContents is the most files in a firewall's userdata.
	MaxUserdataContents = 64
	// MaxUserdataPathLength is the longest userdata path (Linux's PATH_MAX).
	MaxUserdataPathLength = 4096
	// MaxUserdataContentBytes is the largest inline userdata file.
	MaxUserdataContentBytes = 1 << 20
	// MaxSSHPublicKeys is the most SSH keys of a firewall.
	MaxSSHPublicKeys = 64
	// MaxSSHPublicKeyLength is the longest SSH key (an RSA-16384 key is about 2.8 KB).
	MaxSSHPublicKeyLength = 16 << 10
	// MaxAgentVersionLength is the longest agent version.
	MaxAgentVersionLength = 128
	// MaxAgentURLLength is the longest agent URL.
	MaxAgentURLLength = 2048
	// MaxCIDRLength is the longest CIDR or address string (an IPv6 prefix
	// takes at most 43 characters).
	MaxCIDRLength = 64

	// MaxPolicyRules is the most egress (and, apart, ingress) rules of one
	// policy; the agent's static source holds all of a machine's policy
	// items in one (20,000 are measured in its benchmarks).
	MaxPolicyRules = 65536
	// MaxPolicyPeers is the most `to` (`from`) blocks of one rule.
	MaxPolicyPeers = 65536
	// MaxPolicyExcepts is the most `except` networks of one block.
	MaxPolicyExcepts = 1024
	// MaxPolicyFQDNs is the most `toFQDNs` selectors of one rule.
	MaxPolicyFQDNs = 1024
	// MaxPolicyPorts is the most ports of one rule.
	MaxPolicyPorts = 1024
	// MaxPolicyDescriptionLength is the longest policy description.
	MaxPolicyDescriptionLength = 4096

	// MinShootTimeout is the shortest create or health timeout a shoot's
	// providerConfig may set: bare metal takes minutes to boot, and a
	// shorter one would replace firewalls that are still coming up.
	MinShootTimeout = time.Minute
	// MaxTimeout is the longest create or health timeout.
	MaxTimeout = 24 * time.Hour
)

// MaxRateMiBps is the highest rate limit, in MiB/s, the kernel accepts as the
// agent programs it: `limit rate over` rate*2^20 bytes/second, burst 0
// (pkg/firewall/nftables). The kernel's nft_limit_init computes the token
// bucket as NSEC_PER_SEC * (rate + burst) in a u64 and refuses an overflow
// (EOVERFLOW, "value too large"), so rate <= (2^64-1)/10^9 = 18,446,744,073
// bytes/s, which is 17592 MiB/s (about 147 Gbit/s). Older kernels wrapped
// around silently instead, giving a wrong limit.
const MaxRateMiBps = math.MaxUint64 / 1_000_000_000 >> 20
