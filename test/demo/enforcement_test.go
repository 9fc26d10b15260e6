package main

import (
	"os"
	"strings"
	"testing"
)

// The excerpt keeps the rules that act and the sets with elements, and
// counts what it leaves out; testdata/ruleset.nft is a real agent table.
func TestExcerpt(t *testing.T) {
	ruleset, err := os.ReadFile("testdata/ruleset.nft")
	if err != nil {
		t.Fatal(err)
	}
	got := excerpt(string(ruleset))
	for _, want := range []string{
		"table inet firewall-agent {",
		"set internal_v4 {",
		"elements = { 10.250.0.0/24 }",
		"type filter hook forward priority filter; policy drop;",
		`ct state established,related counter packets 4 bytes 208 accept comment "established c77fde03"`,
		"... 18 rules that look up empty sets, left out",
		`counter packets 0 bytes 0 drop comment "drop 31e1ec47"`,
		"type nat hook postrouting priority srcnat; policy accept;",
		"(19 empty sets, 4 maps and 4 chains of empty shards left out)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("excerpt lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "egress_v4_0") || strings.Contains(got, "egress_v4_shards") {
		t.Errorf("excerpt lists an empty set, shard or map:\n%s", got)
	}
}

func TestDropCounter(t *testing.T) {
	ruleset, err := os.ReadFile("testdata/ruleset.nft")
	if err != nil {
		t.Fatal(err)
	}
	n, err := dropCounter(strings.Replace(string(ruleset), `counter packets 0 bytes 0 drop comment "drop`, `counter packets 3 bytes 180 drop comment "drop`, 1))
	if err != nil || n != 3 {
		t.Errorf("dropCounter = %d, %v; want 3", n, err)
	}
}
