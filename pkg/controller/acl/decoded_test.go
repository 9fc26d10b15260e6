package acl

import (
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/providerstatus"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

var _ = Describe("decodedStatuses", func() {
	extension := func(namespace string, revision int) *extensionsv1alpha1.Extension {
		ex := &extensionsv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: "acl", Namespace: namespace}}
		ex.Spec.Type = constants.ACLExtensionType
		raw, err := providerstatus.Encode(benchStatus(1, revision))
		Expect(err).NotTo(HaveOccurred())
		ex.Status.ProviderStatus = raw
		return ex
	}

	It("decodes a status once while its bytes stay the same, again when they change, and forgets shoots no longer seen", func() {
		d := decodedStatuses{}
		a, b := extension("shoot--p--a", 0), extension("shoot--p--b", 0)
		first := d.of(a)
		Expect(first).NotTo(BeNil())
		Expect(first.policy).To(Equal(providerstatus.ShootPolicy(a.Namespace, benchStatus(1, 0))))
		Expect(first.contribution).To(Equal(contribution(a.Namespace, benchStatus(1, 0))))
		Expect(first.weight).To(Equal(envoy.Weight(first.policy)))
		// A copy of the same bytes, as the cache holds after an unrelated update.
		same := a.DeepCopy()
		Expect(d.of(same)).To(BeIdenticalTo(first))

		changed := extension("shoot--p--a", 1)
		second := d.of(changed)
		Expect(second).NotTo(BeIdenticalTo(first))
		Expect(second.contribution).NotTo(Equal(first.contribution))

		Expect(d.of(b)).NotTo(BeNil())
		d.retain([]*shootStatus{second})
		Expect(d).To(HaveLen(1))
		Expect(d).To(HaveKey("shoot--p--a"))
	})

	It("passes over what is not a live acl status", func() {
		d := decodedStatuses{}
		other := extension("shoot--p--a", 0)
		other.Spec.Type = "firewall"
		deleted := extension("shoot--p--b", 0)
		deleted.DeletionTimestamp = &metav1.Time{}
		none := extension("shoot--p--c", 0)
		none.Status.ProviderStatus = nil
		garbage := extension("shoot--p--d", 0)
		garbage.Status.ProviderStatus = &runtime.RawExtension{Raw: []byte("{")}
		for _, ex := range []*extensionsv1alpha1.Extension{other, deleted, none, garbage} {
			Expect(d.of(ex)).To(BeNil(), ex.Namespace)
		}
		Expect(d).To(BeEmpty())
	})
})
