package csrapprover_test

import (
	"context"
	"crypto/elliptic"
	"encoding/base64"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/csrapprover"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/seal"
)

var _ = Describe("Key pinning", func() {
	firewall := func(w *world) *firewallv1alpha1.Firewall {
		GinkgoHelper()
		fw := &firewallv1alpha1.Firewall{}
		Expect(w.client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: fwName}, fw)).To(Succeed())
		return fw
	}

	It("pins the key of the first approved certificate on the Firewall, before approving", func() {
		s := bootstrapping()
		got, w := decide(s)
		Expect(got).To(Equal(approved()))
		Expect(firewall(w).Annotations).To(HaveKeyWithValue(firewallv1alpha1.AnnotationAgentKey, base64.StdEncoding.EncodeToString(s.keyDER())))
		Expect(w.writes).To(Equal([]string{"patch Firewall", "approval"}), "never approved without a pin")
	})

	It("writes nothing to the Firewall when the key is pinned already", func() {
		s := bootstrapping()
		s.annotate(firewallv1alpha1.AnnotationAgentKey, s.pin())
		got, w := decide(s)
		Expect(got).To(Equal(approved()))
		Expect(w.writes).To(Equal([]string{"approval"}))
		Expect(firewall(w).Annotations).To(HaveKeyWithValue(firewallv1alpha1.AnnotationAgentKey, s.pin()))
	})

	It("pins nothing for a CSR it denies", func() {
		s := bootstrapping()
		s.sarAllowed = false
		got, w := decide(s)
		Expect(got.Type).To(Equal(certificatesv1.CertificateDenied))
		Expect(firewall(w).Annotations).NotTo(HaveKey(firewallv1alpha1.AnnotationAgentKey))
	})

	It("leaves the CSR undecided, to be retried, when the pin cannot be written", func() {
		s := bootstrapping()
		s.patchFails = true
		w := newWorld(s, s.csr())
		r := &csrapprover.Reconciler{Client: w.client, BootNamespace: bootNamespace, MaxDuration: csrapprover.DefaultMaxDuration}
		_, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: csrName}})
		Expect(err).To(MatchError("pinning the agent key on Firewall shoot--p--s/shoot-firewall-0: injected"))
		Expect(w.subresource).To(BeEmpty())
		csr := &certificatesv1.CertificateSigningRequest{}
		Expect(w.client.Get(context.Background(), client.ObjectKey{Name: csrName}, csr)).To(Succeed())
		Expect(csr.Status.Conditions).To(BeEmpty())
	})

	It("names the request's key and the pinned one when they differ", func() {
		s := bootstrapping()
		s.annotate(firewallv1alpha1.AnnotationAgentKey, s.pin())
		pinned := seal.KeyID(s.keyDER())
		s.key = ecKey(elliptic.P256())
		got, w := decide(s)
		Expect(got).To(Equal(denied("the request's key " + seal.KeyID(s.keyDER()) + " is not the key " + pinned + " pinned on Firewall shoot--p--s/shoot-firewall-0")))
		Expect(w.writes).To(Equal([]string{"approval"}), "the pin stays")
	})

	It("names the revoked key and the annotation that revoked it", func() {
		s := bootstrapping()
		s.annotate(firewallv1alpha1.AnnotationRevokedAgentKey, seal.KeyID(s.keyDER()))
		got, w := decide(s)
		Expect(got).To(Equal(denied("key " + seal.KeyID(s.keyDER()) + " of Firewall shoot--p--s/shoot-firewall-0 is revoked (" + firewallv1alpha1.AnnotationRevokedAgentKey + ")")))
		Expect(firewall(w).Annotations).NotTo(HaveKey(firewallv1alpha1.AnnotationAgentKey), "a revoked key is never pinned")
	})
})
