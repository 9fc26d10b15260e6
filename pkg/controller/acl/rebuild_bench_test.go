package acl

import (
	"context"
	"fmt"
	"testing"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/providerstatus"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// listedCache answers Extension lists with its own objects, as the informer cache does for a
// list without deep copies; everything else goes to the client.
type listedCache struct {
	client.Reader
	items []extensionsv1alpha1.Extension
}

func (l *listedCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if el, ok := list.(*extensionsv1alpha1.ExtensionList); ok {
		el.Items = l.items
		return nil
	}
	return l.Reader.List(ctx, list, opts...)
}

// benchStatus is shoot i's status with 10 rule CIDRs (17 allowed with the always-allowed ones),
// revision r of its rule.
func benchStatus(i, r int) *v1alpha1.ExtensionStatus {
	st := &v1alpha1.ExtensionStatus{APIVersion: "acl.extensions.metal-stack.io/v1alpha1", Kind: "ExtensionStatus", Action: "ALLOW", Type: "remote_ip",
		IngressNamespaces: []string{"istio-ingress"}, Selectors: map[string]map[string]string{"istio-ingress": {"istio": "ingressgateway"}},
		Hosts: []string{fmt.Sprintf("api.s%d.example.com", i)}}
	for j := range 10 {
		st.RuleCIDRs = append(st.RuleCIDRs, fmt.Sprintf("%d.%d.%d.0/24", 11+i/256, i%256, (j+r)%256))
	}
	st.AlwaysAllowedCIDRs = []string{"10.1.0.0/16", "10.2.0.0/16", "10.250.0.0/16", "fd00::/64", "192.0.2.1/32", "192.0.2.2/32", "198.51.100.0/24"}
	st.AllowedCIDRs = append(append([]string{}, st.RuleCIDRs...), st.AlwaysAllowedCIDRs...)
	return st
}

// BenchmarkRebuildShared is one rebuild of a gateway's shared filters after one shoot's change,
// with n ACL shoots on the gateway: what every rebuild costs while shoots keep arriving.
func BenchmarkRebuildShared(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("shoots=%d", n), func(b *testing.B) {
			ctx := context.Background()
			items := make([]extensionsv1alpha1.Extension, n)
			for i := range items {
				ex := &items[i]
				ex.ObjectMeta = metav1.ObjectMeta{Name: "acl", Namespace: fmt.Sprintf("shoot--bench--s%d", i)}
				ex.Spec.Type = constants.ACLExtensionType
				raw, err := providerstatus.Encode(benchStatus(i, 0))
				if err != nil {
					b.Fatal(err)
				}
				ex.Status.ProviderStatus = raw
			}
			c := fake.NewClientBuilder().WithScheme(kubernetes.SeedScheme).Build()
			a := &actuator{client: c, reader: c, cache: &listedCache{Reader: c, items: items}}
			if err := a.rebuildShared(ctx, []string{"istio-ingress"}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for r := 1; r <= b.N; r++ {
				i := r * 7919 % n
				raw, err := providerstatus.Encode(benchStatus(i, r))
				if err != nil {
					b.Fatal(err)
				}
				items[i].Status.ProviderStatus = raw
				if err := a.rebuildShared(ctx, []string{"istio-ingress"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
