package envoy

import (
	"net/netip"
	"slices"
	"testing"
)

func prefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

func TestMerge(t *testing.T) {
	got := Strings(Merge(prefixes("10.1.0.0/16", "10.0.0.0/8", "192.168.1.0/24", "2001:db8::/32", "2001:db8:1::/48", "192.168.1.0/24")))
	want := []string{"10.0.0.0/8", "192.168.1.0/24", "2001:db8::/32"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestSubtract(t *testing.T) {
	for _, tc := range []struct {
		from, remove, want []string
	}{
		{[]string{"10.0.0.0/8"}, []string{"10.0.0.0/8"}, nil},
		{[]string{"10.0.0.0/8"}, []string{"0.0.0.0/0"}, nil},
		{[]string{"10.0.0.0/8"}, []string{"192.168.0.0/16", "2001:db8::/32"}, []string{"10.0.0.0/8"}},
		{[]string{"10.0.0.0/30"}, []string{"10.0.0.1/32"}, []string{"10.0.0.0/32", "10.0.0.2/31"}},
		{[]string{"10.0.0.0/8"}, []string{"10.128.0.0/9"}, []string{"10.0.0.0/9"}},
		{[]string{"2001:db8::/32"}, []string{"2001:db8:8000::/33"}, []string{"2001:db8::/33"}},
	} {
		got := Strings(Subtract(prefixes(tc.from...), prefixes(tc.remove...)))
		if !slices.Equal(got, tc.want) && (len(got) != 0 || len(tc.want) != 0) {
			t.Errorf("%v - %v: got %v, want %v", tc.from, tc.remove, got, tc.want)
		}
	}
}

func TestSubtractCoversExactlyTheRest(t *testing.T) {
	from := prefixes("10.0.0.0/16")
	remove := prefixes("10.0.3.7/32", "10.0.128.0/20")
	rest := Subtract(from, remove)
	for i := range 1 << 16 {
		a := netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})
		inRest := slices.ContainsFunc(rest, func(p netip.Prefix) bool { return p.Contains(a) })
		removed := slices.ContainsFunc(remove, func(p netip.Prefix) bool { return p.Contains(a) })
		if inRest == removed {
			t.Fatalf("%s: in rest %v, removed %v", a, inRest, removed)
		}
	}
}

func TestMergeMatchesTheQuadraticDefinition(t *testing.T) {
	in := prefixes("10.0.0.0/8", "10.1.0.0/16", "10.1.2.0/24", "10.2.0.0/15", "10.3.0.0/16", "11.0.0.0/8", "9.255.0.0/16",
		"0.0.0.0/0", "2001:db8::/32", "2001:db8::/48", "::/0", "192.168.0.0/16")
	got := Strings(Merge(in))
	want := []string{"0.0.0.0/0", "::/0"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	got = Strings(Merge(in[:7]))
	want = []string{"9.255.0.0/16", "10.0.0.0/8", "11.0.0.0/8"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
