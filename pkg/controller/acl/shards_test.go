package acl

import (
	"context"
	"fmt"
	"strings"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/utils/managedresources"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/providerstatus"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// statusWithCIDRs is an ALLOW status with ten CIDRs of its own.
func statusWithCIDRs(i int, ingressNamespace string) []byte {
	var cidrs []string
	for j := range 10 {
		cidrs = append(cidrs, fmt.Sprintf(`"%d.%d.%d.0/24"`, 11+i/256, i%256, j))
	}
	return []byte(`{"action":"ALLOW","type":"remote_ip","allowedCIDRs":[` + strings.Join(cidrs, ",") + `],"ingressNamespaces":["` + ingressNamespace + `"]}`)
}

// sharedSecrets are the data Secrets each shared ManagedResource of the namespace refers to.
func sharedSecrets(a *actuator, namespace string) map[string]string {
	GinkgoHelper()
	mrs := &resourcesv1alpha1.ManagedResourceList{}
	Expect(a.client.List(context.Background(), mrs, client.InNamespace(namespace))).To(Succeed())
	out := map[string]string{}
	for _, mr := range mrs.Items {
		if strings.HasPrefix(mr.Name, constants.ACLSharedManagedResourceName) {
			Expect(mr.Spec.SecretRefs).To(HaveLen(1))
			out[mr.Name] = mr.Spec.SecretRefs[0].Name
		}
	}
	return out
}

var _ = Describe("sharded shared filters", func() {
	It("rewrite only the changed shoot's shard, and remove the shards that are gone", func() {
		var objs []client.Object
		for i := range 400 {
			ex := aclExtension(fmt.Sprintf("shoot--p%d--s%d", i%7, i), "istio-ingress")
			ex.Status.ProviderStatus = &runtime.RawExtension{Raw: statusWithCIDRs(i, "istio-ingress")}
			objs = append(objs, ex)
		}
		a := newTestActuator(Config{}, objs...)
		ctx := context.Background()
		Expect(a.reconcileShared(ctx, []string{"istio-ingress"})).To(Succeed())
		before := sharedSecrets(a, "istio-ingress")
		Expect(len(before)).To(BeNumerically(">", 3), "the root and several shards")

		By("changing one shoot's CIDRs")
		ex := &extensionsv1alpha1.Extension{}
		Expect(a.client.Get(ctx, client.ObjectKey{Namespace: "shoot--p3--s10", Name: "acl"}, ex)).To(Succeed())
		ex.Status.ProviderStatus = &runtime.RawExtension{Raw: statusWithCIDRs(1000, "istio-ingress")}
		Expect(a.client.Status().Update(ctx, ex)).To(Succeed())
		Expect(a.reconcileShared(ctx, []string{"istio-ingress"})).To(Succeed())
		after := sharedSecrets(a, "istio-ingress")
		Expect(after).To(HaveLen(len(before)))
		var rewritten []string
		for name, secret := range after {
			if before[name] != secret {
				rewritten = append(rewritten, name)
			}
		}
		Expect(rewritten).To(HaveLen(1), "one shard rewritten")
		Expect(rewritten[0]).NotTo(Equal(constants.ACLSharedManagedResourceName), "the root is unchanged")

		By("removing every shoot but one")
		list := &extensionsv1alpha1.ExtensionList{}
		Expect(a.client.List(ctx, list)).To(Succeed())
		for i := range list.Items {
			if list.Items[i].Namespace != "shoot--p3--s10" {
				Expect(a.client.Delete(ctx, &list.Items[i])).To(Succeed())
			}
		}
		Expect(a.reconcileShared(ctx, []string{"istio-ingress"})).To(Succeed())
		Expect(sharedSecrets(a, "istio-ingress")).To(HaveLen(2), "the root and one shard")
	})

	It("rewrite the root only when the shards or their dispatch keys change, never leaving it stale", func() {
		const ingress = "istio-ingress"
		var objs []client.Object
		for i := range 400 {
			ex := aclExtension(fmt.Sprintf("shoot--p%d--s%d", i%7, i), ingress)
			ex.Status.ProviderStatus = &runtime.RawExtension{Raw: statusWithCIDRs(i, ingress)}
			objs = append(objs, ex)
		}
		a := newTestActuator(Config{}, objs...)
		ctx := context.Background()
		add := func(namespaces ...string) {
			GinkgoHelper()
			for i, ns := range namespaces {
				ex := aclExtension(ns, ingress)
				ex.Status.ProviderStatus = &runtime.RawExtension{Raw: statusWithCIDRs(2000+i, ingress)}
				Expect(a.client.Create(ctx, ex)).To(Succeed())
			}
			Expect(a.reconcileShared(ctx, []string{ingress})).To(Succeed())
		}
		// rootAsRendered says whether the deployed root is what the current shoots render to.
		rootAsRendered := func() {
			GinkgoHelper()
			list := &extensionsv1alpha1.ExtensionList{}
			Expect(a.client.List(ctx, list)).To(Succeed())
			var shoots []envoy.ShootPolicy
			for i := range list.Items {
				st, err := providerstatus.Decode(&list.Items[i])
				Expect(err).NotTo(HaveOccurred())
				shoots = append(shoots, providerstatus.ShootPolicy(list.Items[i].Namespace, st))
			}
			shards, err := envoy.Shards(shoots, envoy.ShardBudgetBytes)
			Expect(err).NotTo(HaveOccurred())
			want, err := envoy.HTTPConnectEnvoyFilter(ingress, nil, shards, envoy.HTTPConnectListeners)
			Expect(err).NotTo(HaveOccurred())
			objects, err := managedresources.GetObjects(ctx, a.client, ingress, constants.ACLSharedManagedResourceName)
			Expect(err).NotTo(HaveOccurred())
			Expect(objects).To(HaveLen(1))
			got, ok := objects[0].(*istionetworkingv1alpha3.EnvoyFilter)
			Expect(ok).To(BeTrue())
			Expect(proto.Equal(&got.Spec, &want.Spec)).To(BeTrue(), "the deployed root is the one the shoots render to")
		}
		Expect(a.reconcileShared(ctx, []string{ingress})).To(Succeed())
		rootAsRendered()
		before := sharedSecrets(a, ingress)

		By("a shoot that joins a shard under its prefix")
		add("shoot--p3--s5000")
		after := sharedSecrets(a, ingress)
		Expect(after[constants.ACLSharedManagedResourceName]).To(Equal(before[constants.ACLSharedManagedResourceName]), "the root is as it was")
		rootAsRendered()

		By("enough shoots to split a shard: new prefixes, new keys")
		var more []string
		for i := range 400 {
			more = append(more, fmt.Sprintf("shoot--p3--s1%d", 5000+i))
		}
		add(more...)
		split := sharedSecrets(a, ingress)
		Expect(len(split)).To(BeNumerically(">", len(after)), "the shard split")
		Expect(split[constants.ACLSharedManagedResourceName]).NotTo(Equal(after[constants.ACLSharedManagedResourceName]), "the root is rewritten")
		rootAsRendered()
	})
})
