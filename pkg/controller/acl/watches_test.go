package acl

import (
	"testing"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func cluster(seedSpec, shoot string) *extensionsv1alpha1.Cluster {
	return &extensionsv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "shoot--p--a"},
		Spec: extensionsv1alpha1.ClusterSpec{
			Seed:  &runtime.RawExtension{Raw: []byte(`{"apiVersion":"core.gardener.cloud/v1beta1","kind":"Seed","spec":` + seedSpec + `}`)},
			Shoot: runtime.RawExtension{Raw: []byte(`{"apiVersion":"core.gardener.cloud/v1beta1","kind":"Shoot",` + shoot + `}`)},
		},
	}
}

func TestClusterPredicateFollowsOnlyWhatTheAllowListDependsOn(t *testing.T) {
	const seed = `{"networks":{"nodes":"10.1.0.0/16","pods":"10.2.0.0/16","services":"10.3.0.0/16"},"ingress":{"domain":"ingress.seed.example.com"}}`
	base := cluster(seed, `"spec":{"networking":{"nodes":"10.250.0.0/16"}},"status":{"lastOperation":{"progress":10}}`)
	p := inputsChanged(clusterInputs)
	for name, tc := range map[string]struct {
		next *extensionsv1alpha1.Cluster
		want bool
	}{
		"shoot status progress only": {cluster(seed, `"spec":{"networking":{"nodes":"10.250.0.0/16"}},"status":{"lastOperation":{"progress":90}}`), false},
		"shoot egress CIDRs":         {cluster(seed, `"spec":{"networking":{"nodes":"10.250.0.0/16"}},"status":{"networking":{"egressCIDRs":["203.0.113.7/32"]}}`), true},
		"shoot node CIDR":            {cluster(seed, `"spec":{"networking":{"nodes":"10.251.0.0/16"}}`), true},
		"seed pods":                  {cluster(`{"networks":{"nodes":"10.1.0.0/16","pods":"10.9.0.0/16"},"ingress":{"domain":"ingress.seed.example.com"}}`, `"spec":{"networking":{"nodes":"10.250.0.0/16"}}`), true},
		"seed ingress domain":        {cluster(`{"networks":{"nodes":"10.1.0.0/16","pods":"10.2.0.0/16"},"ingress":{"domain":"ingress.other.example.com"}}`, `"spec":{"networking":{"nodes":"10.250.0.0/16"}}`), true},
	} {
		if got := p.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: tc.next}); got != tc.want {
			t.Errorf("%s: got %v, want %v", name, got, tc.want)
		}
	}
	if !p.Create(event.CreateEvent{Object: base}) || p.Delete(event.DeleteEvent{Object: base}) {
		t.Error("a new Cluster counts, a deleted one does not")
	}
}

func TestInfrastructurePredicate(t *testing.T) {
	infra := func(egress ...string) *extensionsv1alpha1.Infrastructure {
		i := &extensionsv1alpha1.Infrastructure{}
		i.Status.EgressCIDRs = egress
		return i
	}
	p := inputsChanged(infrastructureInputs)
	if p.Update(event.UpdateEvent{ObjectOld: infra("198.51.100.0/30"), ObjectNew: infra("198.51.100.0/30")}) {
		t.Error("unchanged egress CIDRs")
	}
	if !p.Update(event.UpdateEvent{ObjectOld: infra("198.51.100.0/30"), ObjectNew: infra("198.51.100.0/30", "198.51.100.8/30")}) {
		t.Error("a new egress CIDR")
	}
	withNodes := infra("198.51.100.0/30")
	withNodes.Status.Networking = &extensionsv1alpha1.InfrastructureStatusNetworking{Nodes: []string{"10.251.0.0/16"}}
	if !p.Update(event.UpdateEvent{ObjectOld: infra("198.51.100.0/30"), ObjectNew: withNodes}) {
		t.Error("new node networks")
	}
}
