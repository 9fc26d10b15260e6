package ruleset

import "fmt"

// Set names. Every set exists in every ruleset, empty or not, so that a policy
// change only ever changes set elements, never the table's structure.
const (
	SetInternal   = "internal"    // the internal prefixes
	SetEgress     = "egress"      // destination . proto . port allowed from inside
	SetEgressAny  = "egress_any"  // destinations allowed from inside on every port
	SetIngress    = "ingress"     // source . proto . port allowed to the inside
	SetIngressAny = "ingress_any" // sources allowed to the inside on every port
)

// SetName is the name of the set of the given base name and family.
func SetName(base string, v6 bool) string {
	if v6 {
		return base + "_v6"
	}
	return base + "_v4"
}

// ShardName is the name of one shard of a concatenated set, and of the chain
// that matches it.
func ShardName(base string, v6 bool, shard int) string {
	return fmt.Sprintf("%s_%d", SetName(base, v6), shard)
}

// SpanName is the name of the set of the range elements of a concatenated set
// that cross the bounds of its shards.
func SpanName(base string, v6 bool) string {
	return SetName(base, v6) + "_span"
}

// DispatchName is the name of the verdict map that jumps to the shards of a
// concatenated set.
func DispatchName(base string, v6 bool) string {
	return SetName(base, v6) + "_shards"
}

// ExactName is the name of the hash set of single address . proto . port
// elements.
func ExactName(base string, v6 bool) string {
	return SetName(base, v6) + "_exact"
}

// rangesRuleID is the ID of the rules that accept the range elements of a
// concatenated set: its span rule and its shards' rules, counted as one.
func rangesRuleID(base string, v6 bool) string {
	return base + suffix(v6)
}

func suffix(v6 bool) string {
	if v6 {
		return "-v6"
	}
	return "-v4"
}
