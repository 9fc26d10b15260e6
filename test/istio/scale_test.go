package istio_test

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
)

// scaleShoots is how many ACL shoots share the default gateway in the scale specs, and how many
// CIDRs each allows: 60 of 200 CIDRs spread over several shards quickly; the table
// (BENCH_TABLE=true) takes BENCH_ISTIO_SHOOTS shoots (default 300) of 10 CIDRs.
func scaleShoots() (int, int) {
	if os.Getenv("BENCH_TABLE") != "true" {
		return 60, 200
	}
	if n, err := strconv.Atoi(os.Getenv("BENCH_ISTIO_SHOOTS")); err == nil && n > 0 {
		return n, 10
	}
	return 300, 10
}

// scaleRule allows CIDRs of the shoot's own.
func scaleRule(i, n int) string {
	var cidrs []string
	for j := range n {
		cidrs = append(cidrs, fmt.Sprintf(`"%d.%d.%d.0/24"`, 11+i/256, i%256, j))
	}
	return `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":[` + strings.Join(cidrs, ",") + `]}}`
}

var _ = Describe("Many ACL shoots on one gateway", Ordered, func() {
	var (
		ctx = context.Background()
		s   *seed
		gen *generated
		def *gateway
	)

	n, cidrs := scaleShoots()

	BeforeAll(func() {
		var zonal, exposure *gateway
		def, zonal, exposure = defaultGateways()
		var shoots []*shoot
		for i := range n {
			shoots = append(shoots, &shoot{
				namespace: fmt.Sprintf("shoot--p%d--s%d", i%7, i), hosts: []string{fmt.Sprintf("api.s%d.p%d.example.com", i, i%7)}, gateway: def,
				tlsTermination: i%2 == 0, rule: scaleRule(i, cidrs),
			})
		}
		s = newSeed(ctx, []*gateway{def, zonal, exposure}, shoots)
		s.reconcile(ctx)
		gen = s.generate(ctx, def)
	})

	It("evaluates each CONNECT request with one RBAC config: the one of its shoot's shard", func() {
		shards := map[string]int{}
		for i, sh := range s.shoots {
			in := netip.MustParseAddr(fmt.Sprintf("%d.%d.%d.9", 11+i/256, i%256, cidrs-1))
			out := netip.MustParseAddr("8.8.8.8")
			for _, l := range envoy.HTTPConnectListeners {
				header := l.Header
				for _, dest := range []string{"outbound|443||kube-apiserver." + sh.namespace + ".svc.cluster.local", sh.namespace + "--kube-apiserver-socket"} {
					allowed := gen.httpAllowed(int(l.Port), header, dest, in)
					Expect(allowed.allowed).To(BeTrue(), "%s from %s on %d", dest, in, l.Port)
					Expect(allowed.rbacEvaluations).To(Equal(1), "%s on %d", dest, l.Port)
					denied := gen.httpAllowed(int(l.Port), header, dest, out)
					Expect(denied.allowed).To(BeFalse(), "%s from %s on %d", dest, out, l.Port)
					Expect(denied.rbacEvaluations).To(Equal(1), "%s on %d", dest, l.Port)
					Expect(denied.shard).To(Equal(allowed.shard))
					shards[denied.shard]++
				}
			}
			Expect(gen.tlsAllowed(sh.hosts[0], in)).To(BeTrue())
			Expect(gen.tlsAllowed(sh.hosts[0], out)).To(BeFalse())
		}
		Expect(len(shards)).To(BeNumerically(">", 2), "the shoots spread over several shards (per port): %v", shards)
	})

	It("prints the Istio-side figures of one shoot's change", Label("bench"), func() {
		if os.Getenv("BENCH_TABLE") != "true" {
			Skip("set BENCH_TABLE=true (make bench-istio)")
		}
		before := gen
		names := ecdsNames(before)
		ecdsBefore := before.ecds(names...)
		total := 0
		for _, port := range []int{9443, envoy.HTTPConnectPort, envoy.LegacyVPNPort} {
			total += len(listenerBytes(before.listener(port)))
		}

		sh := s.shoots[n/2]
		sh.rule = scaleRule(n+1, cidrs)
		s.reconcile(ctx)
		after := s.generate(ctx, def)

		changedBytes := 0
		b, a := chainBytes(before.listener(9443)), chainBytes(after.listener(9443))
		var changedChains []string
		for k, v := range a {
			if !bytes.Equal(b[k], v) {
				changedBytes += len(v)
				changedChains = append(changedChains, k)
			}
		}
		for _, port := range []int{envoy.HTTPConnectPort, envoy.LegacyVPNPort} {
			if !bytes.Equal(listenerBytes(before.listener(port)), listenerBytes(after.listener(port))) {
				changedBytes += len(listenerBytes(after.listener(port)))
				changedChains = append(changedChains, fmt.Sprint(port))
			}
		}
		ecdsAfter := after.ecds(ecdsNames(after)...)
		changedECDS := 0
		for name, ec := range ecdsAfter {
			if old, ok := ecdsBefore[name]; !ok || !sameExtensionConfig(old, ec) {
				changedECDS++
			}
		}
		fmt.Println()
		fmt.Println("| ACL shoots on the gateway (10 CIDRs each) | generated listener bytes (9443, 8443, 8132) | listener bytes changed by one shoot's change | filter chains changed | ECDS resources served | ECDS resources changed | RBAC evaluations per CONNECT request |")
		fmt.Println("|---|---|---|---|---|---|---|")
		fmt.Printf("| %d | %d | %d | %d (%s) | %d | %d | %d |\n", n, total, changedBytes, len(changedChains), strings.Join(changedChains, " "),
			len(ecdsAfter), changedECDS, after.httpAllowed(envoy.HTTPConnectPort, envoy.DestinationHeader, sh.namespace+"--kube-apiserver-socket", netip.MustParseAddr("8.8.8.8")).rbacEvaluations)
	})
})

// sameExtensionConfig compares two ECDS resources by content: Istio packs each into an Any anew
// for every generation, with map entries (RBAC policies) in random order, so their bytes differ.
func sameExtensionConfig(a, b *corev3.TypedExtensionConfig) bool {
	GinkgoHelper()
	if a.GetName() != b.GetName() {
		return false
	}
	ia, err := a.GetTypedConfig().UnmarshalNew()
	Expect(err).NotTo(HaveOccurred())
	ib, err := b.GetTypedConfig().UnmarshalNew()
	Expect(err).NotTo(HaveOccurred())
	return proto.Equal(ia, ib)
}
