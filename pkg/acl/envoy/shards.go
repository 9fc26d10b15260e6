package envoy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"
)

// ShardBudgetBytes bounds the size of one shard's RBAC config for one header (the protobuf size
// of its policy form). A shard's EnvoyFilter holds two such configs (one per HTTP-CONNECT port);
// rendered as JSON they stay well below the 1 MiB of a ManagedResource Secret.
const ShardBudgetBytes = 96 << 10

// ShardMatcherBudgetBytes bounds the matcher-tree form of a shard's config: a shard whose tree is
// larger (it repeats a shoot's CIDRs under each of its 8 destinations) takes the policy form,
// whose evaluation costs at most the shard's policies, never the gateway's.
const ShardMatcherBudgetBytes = 32 << 10

// shardRoot starts every Gardener shoot namespace (shoot--<project>--<name>, or shoot-<...>).
const shardRoot = "shoot-"

// Shard is a part of a gateway's ACL shoots whose HTTP-CONNECT RBAC configs are served by ECDS
// resources of their own. The shard of a shoot is the one whose namespace prefix is the longest
// prefix of the shoot's namespace: the key is the namespace itself, so a shoot's change rewrites
// its shard only, and the dispatch (Dispatch) finds the shard by a prefix lookup on the
// destination header, without a list of all shoots.
type Shard struct {
	// Prefix is the namespace prefix of the shard's shoots.
	Prefix string
	// Shoots are the shard's restricted shoots, sorted by namespace.
	Shoots []ShootPolicy
}

// ID names the shard: a hash of its prefix, stable as long as the prefix is.
func (s Shard) ID() string {
	sum := sha256.Sum256([]byte(s.Prefix))
	return hex.EncodeToString(sum[:5])
}

// Shards partitions the restricted shoots by namespace prefix so that no shard's config exceeds
// budget bytes: a prefix whose shoots exceed it is split by the next character of their
// namespaces, recursively. The result depends on the set of shoots only (no state): adding or
// changing a shoot changes its shard only, unless the shard then splits.
func Shards(shoots []ShootPolicy, budget int) ([]Shard, error) {
	weights := make([]int, len(shoots))
	for i, s := range shoots {
		weights[i] = Weight(s)
	}
	return ShardsByWeight(shoots, weights, budget)
}

// ShardsByWeight is Shards with each shoot's Weight given: a caller that keeps them for
// unchanged shoots saves building every shoot's config on each partition.
func ShardsByWeight(shoots []ShootPolicy, weights []int, budget int) ([]Shard, error) {
	if len(weights) != len(shoots) {
		return nil, fmt.Errorf("%d weights for %d shoots", len(weights), len(shoots))
	}
	var restricted []weighted
	for i, s := range shoots {
		if s.Restricts() {
			restricted = append(restricted, weighted{s, weights[i]})
		}
	}
	if len(restricted) == 0 {
		return nil, nil
	}
	sort.Slice(restricted, func(i, j int) bool { return restricted[i].Namespace < restricted[j].Namespace })
	root := shardRoot
	for _, s := range restricted {
		if !strings.HasPrefix(s.Namespace, root) {
			root = ""
			break
		}
	}
	return partition(root, restricted, budget), nil
}

type weighted struct {
	ShootPolicy
	bytes int
}

// Weight is the size a shoot adds to a shard's config for one header: its policy's.
func Weight(s ShootPolicy) int {
	return proto.Size(httpConnectPolicies([]ShootPolicy{s}, DestinationHeader))
}

func partition(prefix string, shoots []weighted, budget int) []Shard {
	total := 0
	for _, s := range shoots {
		total += s.bytes
	}
	if total <= budget || len(shoots) == 1 {
		return []Shard{{Prefix: prefix, Shoots: policies(shoots)}}
	}
	// A namespace equal to the prefix stays at the prefix; the others go by their next character.
	var out []Shard
	groups := map[byte][]weighted{}
	var chars []byte
	for _, s := range shoots {
		if len(s.Namespace) == len(prefix) {
			out = append(out, Shard{Prefix: prefix, Shoots: []ShootPolicy{s.ShootPolicy}})
			continue
		}
		c := s.Namespace[len(prefix)]
		if _, ok := groups[c]; !ok {
			chars = append(chars, c)
		}
		groups[c] = append(groups[c], s)
	}
	for _, c := range chars {
		out = append(out, partition(prefix+string(c), groups[c], budget)...)
	}
	return out
}

func policies(ws []weighted) []ShootPolicy {
	out := make([]ShootPolicy, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.ShootPolicy)
	}
	return out
}

// destinationKeys are the prefixes of the destination header values of the namespaces that
// start with prefix: each form of Destinations, cut where the namespace starts.
func destinationKeys(prefix string) []string {
	const marker = "\x00"
	var out []string
	for _, d := range Destinations(marker) {
		out = append(out, d[:strings.Index(d, marker)]+prefix)
	}
	return out
}

// Dispatch maps destination header prefixes to the index of the shard whose RBAC config decides
// on a request: the longest matching key wins. The keys are every destination form of each
// shard's prefix; where the longest prefix of some shoot's destination would pick another shard
// (a shorter namespace that is a prefix of another shard's, e.g. shoot--p--a and shoot--p--a-x,
// whose socket forms "…a--kube-apiserver-socket" and "…a-x--…" share "…a-"), that destination is
// added as a key of its own.
func Dispatch(shards []Shard) (map[string]int, error) {
	keys := map[string]int{}
	for i, sh := range shards {
		for _, k := range destinationKeys(sh.Prefix) {
			if j, ok := keys[k]; ok && j != i {
				return nil, fmt.Errorf("shards %q and %q share the dispatch key %q", shards[j].Prefix, sh.Prefix, k)
			}
			keys[k] = i
		}
	}
	for i, sh := range shards {
		for _, s := range sh.Shoots {
			for _, d := range Destinations(s.Namespace) {
				if j, ok := LongestPrefix(keys, d); !ok || j != i {
					keys[d] = i
				}
			}
		}
	}
	return keys, nil
}

// LongestPrefix returns the value of the longest key of m that is a prefix of v, as Envoy's
// prefix match map picks it.
func LongestPrefix[V any](m map[string]V, v string) (V, bool) {
	for n := len(v); n >= 0; n-- {
		if val, ok := m[v[:n]]; ok {
			return val, true
		}
	}
	var zero V
	return zero, false
}
