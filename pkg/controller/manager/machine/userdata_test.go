package machine_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	. "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
)

var _ = Describe("Userdata", func() {
	fw := &firewallv1alpha1.Firewall{
		ObjectMeta: metav1.ObjectMeta{Name: "fw-0", Namespace: "shoot--p--s"},
		Spec: firewallv1alpha1.FirewallSpec{UserdataContents: []firewallv1alpha1.UserdataContent{
			{Path: "/etc/firewall-agent/config.yaml", Content: "name: fw-0\n", Mode: ptr.To[int32](0o644)},
			{Path: "/etc/firewall-agent/bootstrap.kubeconfig", SecretRef: &firewallv1alpha1.SecretKeyReference{Name: "bootstrap", Key: "kubeconfig"}},
		}},
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bootstrap", Namespace: "shoot--p--s"}, Data: map[string][]byte{"kubeconfig": []byte("secret-kubeconfig")}}

	It("reads secret-backed contents at provisioning time, 0600 unless told otherwise", func() {
		c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(secret).Build()
		files, err := ResolveUserdata(context.Background(), c, fw)
		Expect(err).NotTo(HaveOccurred())
		Expect(files).To(HaveLen(2))
		Expect(files[0].Mode.Perm()).To(BeEquivalentTo(0o644))
		Expect(string(files[1].Content)).To(Equal("secret-kubeconfig"))
		Expect(files[1].Mode.Perm()).To(BeEquivalentTo(0o600))
	})

	It("names the entry and the secret when the secret is missing", func() {
		c := fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()
		_, err := ResolveUserdata(context.Background(), c, fw)
		Expect(err).To(MatchError(ContainSubstring(`spec.userdataContents[1].secretRef: reading secret "bootstrap"`)))
	})
})
