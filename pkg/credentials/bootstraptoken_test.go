package credentials_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	bootstraptokenapi "k8s.io/cluster-bootstrap/token/api"
	bootstraptokenutil "k8s.io/cluster-bootstrap/token/util"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
)

const namespace = "shoot--p--s"

// tokenSecrets returns the bootstrap token Secrets labelled for the
// firewall ns/name, by name.
func tokenSecrets(c client.Client, ns, name string) map[string]corev1.Secret {
	GinkgoHelper()
	list := &corev1.SecretList{}
	Expect(c.List(context.Background(), list, client.InNamespace(metav1.NamespaceSystem),
		client.MatchingLabels{constants.LabelFirewallNamespace: ns, constants.LabelFirewallName: name})).To(Succeed())
	out := map[string]corev1.Secret{}
	for _, s := range list.Items {
		out[s.Name] = s
	}
	return out
}

var _ = Describe("Bootstrap tokens", func() {
	var (
		ctx context.Context
		c   client.Client
		now time.Time
	)
	BeforeEach(func() {
		ctx = context.Background()
		c = fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()
		now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	})
	ensure := func(name string, validity time.Duration, at time.Time) *credentials.BootstrapToken {
		GinkgoHelper()
		tok, err := credentials.EnsureBootstrapToken(ctx, c, namespace, name, validity, at)
		Expect(err).NotTo(HaveOccurred())
		return tok
	}

	It("mints a token in the form kube-apiserver's bootstrap authenticator reads", func() {
		tok := ensure("fw-a", 30*time.Minute, now.Add(500*time.Millisecond))
		Expect(bootstraptokenutil.IsValidBootstrapToken(tok.Token)).To(BeTrue())
		Expect(tok.Expiration).To(Equal(now.Add(30*time.Minute)), "whole seconds, as the secret keeps it")

		secrets := tokenSecrets(c, namespace, "fw-a")
		Expect(secrets).To(HaveLen(1))
		id, secret := tok.Token[:6], tok.Token[7:]
		s, ok := secrets[bootstraptokenutil.BootstrapTokenSecretName(id)]
		Expect(ok).To(BeTrue(), "named after the token ID, in kube-system")
		Expect(s.Namespace).To(Equal(metav1.NamespaceSystem))
		Expect(s.Type).To(Equal(bootstraptokenapi.SecretTypeBootstrapToken))
		Expect(s.Data).To(And(
			HaveKeyWithValue(bootstraptokenapi.BootstrapTokenIDKey, []byte(id)),
			HaveKeyWithValue(bootstraptokenapi.BootstrapTokenSecretKey, []byte(secret)),
			HaveKeyWithValue(bootstraptokenapi.BootstrapTokenExpirationKey, []byte("2026-01-01T12:30:00Z")),
			HaveKeyWithValue(bootstraptokenapi.BootstrapTokenUsageAuthentication, []byte("true")),
			Not(HaveKey(bootstraptokenapi.BootstrapTokenUsageSigningKey)),
			HaveKeyWithValue(bootstraptokenapi.BootstrapTokenExtraGroupsKey, []byte(firewallv1alpha1.BootstrapGroup(namespace, "fw-a"))),
		))
		Expect(bootstraptokenutil.ValidateBootstrapGroupName(string(s.Data[bootstraptokenapi.BootstrapTokenExtraGroupsKey]))).To(Succeed(),
			"kube-apiserver accepts only system:bootstrappers: groups")
	})

	It("keeps the token while at least half its validity is left, then mints another and keeps both", func() {
		first := ensure("fw-a", 30*time.Minute, now)
		Expect(ensure("fw-a", 30*time.Minute, now.Add(15*time.Minute))).To(Equal(first), "exactly half left")
		second := ensure("fw-a", 30*time.Minute, now.Add(15*time.Minute+time.Second))
		Expect(second.Token).NotTo(Equal(first.Token))
		Expect(tokenSecrets(c, namespace, "fw-a")).To(HaveLen(2), "an agent may be using the old one right now")
		Expect(ensure("fw-a", 30*time.Minute, now.Add(20*time.Minute))).To(Equal(second), "the newest is returned")
	})

	It("deletes expired and unreadable tokens", func() {
		first := ensure("fw-a", 30*time.Minute, now)
		broken := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-broken", Namespace: metav1.NamespaceSystem,
				Labels: map[string]string{constants.LabelFirewallNamespace: namespace, constants.LabelFirewallName: "fw-a"}},
			Type: bootstraptokenapi.SecretTypeBootstrapToken,
			Data: map[string][]byte{bootstraptokenapi.BootstrapTokenExpirationKey: []byte("tomorrow")},
		}
		Expect(c.Create(ctx, broken)).To(Succeed())

		second := ensure("fw-a", 30*time.Minute, now.Add(30*time.Minute)) // the first expires this instant
		Expect(tokenSecrets(c, namespace, "fw-a")).To(And(HaveLen(1),
			HaveKey(bootstraptokenutil.BootstrapTokenSecretName(second.Token[:6])),
			Not(HaveKey(bootstraptokenutil.BootstrapTokenSecretName(first.Token[:6])))))
	})

	It("leaves other firewalls' tokens and other secrets alone", func() {
		other := ensure("fw-b", 30*time.Minute, now)
		labels := map[string]string{constants.LabelFirewallNamespace: namespace, constants.LabelFirewallName: "fw-a"}
		opaque := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "not-a-token", Namespace: metav1.NamespaceSystem, Labels: labels},
			Data: map[string][]byte{bootstraptokenapi.BootstrapTokenExpirationKey: []byte("2000-01-01T00:00:00Z")}}
		Expect(c.Create(ctx, opaque)).To(Succeed())

		ensure("fw-a", 30*time.Minute, now.Add(time.Hour))
		Expect(tokenSecrets(c, namespace, "fw-b")).To(HaveKey(bootstraptokenutil.BootstrapTokenSecretName(other.Token[:6])))
		Expect(c.Get(ctx, client.ObjectKeyFromObject(opaque), &corev1.Secret{})).To(Succeed())
	})

	DescribeTable("refuses a validity outside (0, 1h]",
		func(validity time.Duration) {
			_, err := credentials.EnsureBootstrapToken(ctx, c, namespace, "fw-a", validity, now)
			Expect(err).To(MatchError(ContainSubstring("bootstrap token validity " + validity.String() + " must be within (0, 1h0m0s]")))
			Expect(tokenSecrets(c, namespace, "fw-a")).To(BeEmpty())
		},
		Entry("zero", time.Duration(0)),
		Entry("negative", -time.Minute),
		Entry("over an hour", time.Hour+time.Second),
	)

	It("deletes a firewall's tokens, or with no name those of the whole namespace", func() {
		ensure("fw-a", 30*time.Minute, now)
		ensure("fw-b", 30*time.Minute, now)
		_, err := credentials.EnsureBootstrapToken(ctx, c, "shoot--p--other", "fw-a", 30*time.Minute, now)
		Expect(err).NotTo(HaveOccurred())

		Expect(credentials.DeleteBootstrapTokens(ctx, c, namespace, "fw-a")).To(Succeed())
		Expect(tokenSecrets(c, namespace, "fw-a")).To(BeEmpty())
		Expect(tokenSecrets(c, namespace, "fw-b")).To(HaveLen(1))

		Expect(credentials.DeleteBootstrapTokens(ctx, c, namespace, "")).To(Succeed())
		Expect(tokenSecrets(c, namespace, "fw-b")).To(BeEmpty())
		Expect(tokenSecrets(c, "shoot--p--other", "fw-a")).To(HaveLen(1), "another namespace's tokens stay")
	})

	It("writes a kubeconfig with the seed's endpoint, its CA and the token", func() {
		raw, err := credentials.BootstrapKubeconfig("https://api.seed.example:443", []byte("ca-pem"), "abcdef.0123456789abcdef")
		Expect(err).NotTo(HaveOccurred())
		cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Host).To(Equal("https://api.seed.example:443"))
		Expect(cfg.CAData).To(Equal([]byte("ca-pem")))
		Expect(cfg.BearerToken).To(Equal("abcdef.0123456789abcdef"))
		Expect(cfg.CertData).To(BeEmpty())
	})
})
