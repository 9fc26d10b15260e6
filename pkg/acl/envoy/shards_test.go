package envoy

import (
	"fmt"
	"net/netip"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/validation"
)

func shootsNamed(names ...string) []ShootPolicy {
	var out []ShootPolicy
	for i, n := range names {
		cidrs := []netip.Prefix{netip.PrefixFrom(netip.AddrFrom4([4]byte{11, byte(i >> 8), byte(i), 0}), 24)}
		out = append(out, NewShootPolicy(n, &validation.Policy{Action: "ALLOW", Type: "remote_ip", CIDRs: append(cidrs, manyCIDRs(9)...)}, always))
	}
	return out
}

func manyShoots(n int) []ShootPolicy {
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("shoot--p%d--s%d", i%37, i))
	}
	return shootsNamed(names...)
}

// shardOf is the shard index each shoot is in.
func shardOf(shards []Shard) map[string]int {
	out := map[string]int{}
	for i, sh := range shards {
		for _, s := range sh.Shoots {
			Expect(out).NotTo(HaveKey(s.Namespace), "%s in two shards", s.Namespace)
			out[s.Namespace] = i
		}
	}
	return out
}

var _ = Describe("Shards", func() {
	It("keeps every shard within the budget and dispatches each of a shoot's destinations to its shard", func() {
		shoots := manyShoots(2000)
		shards, err := Shards(shoots, ShardBudgetBytes)
		Expect(err).NotTo(HaveOccurred())
		Expect(len(shards)).To(BeNumerically(">", 1))
		of := shardOf(shards)
		Expect(of).To(HaveLen(len(shoots)))
		for _, sh := range shards {
			size := 0
			for _, s := range sh.Shoots {
				size += Weight(s)
				Expect(strings.HasPrefix(s.Namespace, sh.Prefix)).To(BeTrue(), "%s in shard %q", s.Namespace, sh.Prefix)
			}
			Expect(size <= ShardBudgetBytes || len(sh.Shoots) == 1).To(BeTrue(), "shard %q holds %d bytes", sh.Prefix, size)
		}
		keys, err := Dispatch(shards)
		Expect(err).NotTo(HaveOccurred())
		for _, s := range shoots {
			for _, d := range Destinations(s.Namespace) {
				got, ok := LongestPrefix(keys, d)
				Expect(ok).To(BeTrue(), "no shard for %s", d)
				Expect(got).To(Equal(of[s.Namespace]), "%s goes to shard %q, not %q", d, shards[got].Prefix, shards[of[s.Namespace]].Prefix)
			}
		}
	})

	It("partitions by the weights given as it does by the computed ones, and refuses a count that does not match", func() {
		shoots := shootsNamed("shoot--p--a", "shoot--p--b", "shoot--q--c", "shoot--q--d")
		budget := Weight(shoots[0]) * 2
		want, err := Shards(shoots, budget)
		Expect(err).NotTo(HaveOccurred())
		Expect(len(want)).To(BeNumerically(">=", 2), "the budget splits them")
		weights := make([]int, len(shoots))
		for i, s := range shoots {
			weights[i] = Weight(s)
		}
		Expect(ShardsByWeight(shoots, weights, budget)).To(Equal(want))
		By("weights say where a shard splits")
		heavy := append([]int{}, weights...)
		heavy[0] = budget + 1
		got, err := ShardsByWeight(shoots, heavy, budget)
		Expect(err).NotTo(HaveOccurred())
		Expect(got).NotTo(Equal(want))
		_, err = ShardsByWeight(shoots, weights[1:], budget)
		Expect(err).To(MatchError("3 weights for 4 shoots"))
	})

	It("dispatches a namespace that is the prefix of another shard's to its own shard", func() {
		// shoot--p--a's socket destination "shoot--p--a--kube-apiserver-socket" starts with the
		// prefix "shoot--p--a-" of the shard of shoot--p--a-x, once they are split apart.
		shoots := shootsNamed("shoot--p--a", "shoot--p--a-x", "shoot--p--a-y")
		shards, err := Shards(shoots, Weight(shoots[0]))
		Expect(err).NotTo(HaveOccurred())
		Expect(len(shards)).To(BeNumerically(">=", 2))
		of := shardOf(shards)
		keys, err := Dispatch(shards)
		Expect(err).NotTo(HaveOccurred())
		for _, s := range shoots {
			for _, d := range Destinations(s.Namespace) {
				got, _ := LongestPrefix(keys, d)
				Expect(got).To(Equal(of[s.Namespace]), "%s", d)
			}
		}
	})

	It("changes only the shard of a shoot that is added or changed", func() {
		shoots := manyShoots(1000)
		before, err := Shards(shoots, ShardBudgetBytes)
		Expect(err).NotTo(HaveOccurred())
		changed := append([]ShootPolicy{}, shoots...)
		changed[500] = NewShootPolicy(changed[500].Namespace, &validation.Policy{Action: "ALLOW", Type: "remote_ip", CIDRs: manyCIDRs(3)}, always)
		changed = append(changed, shootsNamed("shoot--p5--new")...)
		after, err := Shards(changed, ShardBudgetBytes)
		Expect(err).NotTo(HaveOccurred())
		differ := 0
		prev := map[string]Shard{}
		for _, sh := range before {
			prev[sh.ID()] = sh
		}
		for _, sh := range after {
			p, ok := prev[sh.ID()]
			if !ok || fmt.Sprint(p.Shoots) != fmt.Sprint(sh.Shoots) {
				differ++
			}
		}
		Expect(len(after)).To(Equal(len(before)), "no split for one more shoot")
		Expect(differ).To(BeNumerically("<=", 2), "the changed shoot's and the new shoot's shards only")
	})

	It("leaves out shoots that restrict nothing and has no shard without ACL shoots", func() {
		p, _ := validation.Parse([]byte(`{"rule":{"action":"DENY","type":"remote_ip","cidrs":["10.250.3.0/24"]}}`), validation.Limits{})
		shards, err := Shards([]ShootPolicy{NewShootPolicy("shoot--p--x", p, always)}, ShardBudgetBytes)
		Expect(err).NotTo(HaveOccurred())
		Expect(shards).To(BeEmpty())
	})
})
