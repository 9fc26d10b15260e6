package credentials_test

import (
	"context"
	"errors"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
)

const (
	namespace = "shoot--p--s"
	// bootNamespace is the extension's namespace, where boot ServiceAccounts live.
	bootNamespace = "extension-firewall-x1"
)

// serviceAccounts returns the ServiceAccounts of bootNamespace labelled for
// the firewall ns/name, by name.
func serviceAccounts(c client.Client, ns, name string) map[string]corev1.ServiceAccount {
	GinkgoHelper()
	list := &corev1.ServiceAccountList{}
	Expect(c.List(context.Background(), list, client.InNamespace(bootNamespace),
		client.MatchingLabels{constants.LabelFirewallNamespace: ns, constants.LabelFirewallName: name})).To(Succeed())
	out := map[string]corev1.ServiceAccount{}
	for _, sa := range list.Items {
		out[sa.Name] = sa
	}
	return out
}

var _ = Describe("Boot credentials", func() {
	var (
		ctx      context.Context
		c        client.Client
		requests []*authenticationv1.TokenRequest // the TokenRequests made, as sent
	)
	BeforeEach(func() {
		ctx = context.Background()
		requests = nil
		c = fake.NewClientBuilder().WithScheme(scheme.Scheme).WithInterceptorFuncs(interceptor.Funcs{
			SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
				if tr, ok := subObj.(*authenticationv1.TokenRequest); ok && sub == "token" {
					requests = append(requests, tr.DeepCopy())
				}
				// The fake client answers with "fake-token", expiring in 6041.
				return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
			},
		}).Build()
	})
	ensure := func(name string, validity time.Duration) *credentials.BootCredential {
		GinkgoHelper()
		cred, err := credentials.EnsureBootCredential(ctx, c, bootNamespace, namespace, name, validity)
		Expect(err).NotTo(HaveOccurred())
		return cred
	}

	It("mints a token of the firewall's own ServiceAccount in the boot namespace, which mounts nowhere", func() {
		cred := ensure("fw-a", 30*time.Minute)
		Expect(cred).To(Equal(&credentials.BootCredential{Token: "fake-token", Expiration: time.Date(6041, 1, 1, 0, 0, 0, 0, time.UTC)}),
			"what the TokenRequest answered")

		sas := serviceAccounts(c, namespace, "fw-a")
		Expect(sas).To(HaveLen(1))
		sa, ok := sas[credentials.BootServiceAccountName(namespace, "fw-a")]
		Expect(ok).To(BeTrue())
		Expect(sa.Namespace).To(Equal(bootNamespace), "tokens are minted in the extension's namespace only")
		Expect(sa.Labels).To(Equal(map[string]string{constants.LabelFirewallNamespace: namespace, constants.LabelFirewallName: "fw-a"}))
		Expect(sa.AutomountServiceAccountToken).To(Equal(ptr.To(false)))

		Expect(requests).To(HaveLen(1))
		Expect(requests[0].Spec).To(Equal(authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](1800)}),
			"the configured validity; no audiences (the seed's own) and no bound object besides the ServiceAccount")
	})

	It("mints another token for the same ServiceAccount", func() {
		ensure("fw-a", 30*time.Minute)
		ensure("fw-a", 30*time.Minute)
		Expect(requests).To(HaveLen(2))
		Expect(serviceAccounts(c, namespace, "fw-a")).To(HaveLen(1))
	})

	DescribeTable("accepts a validity within [10m, 1h]",
		func(validity time.Duration) {
			ensure("fw-a", validity)
			Expect(requests).To(ConsistOf(HaveField("Spec.ExpirationSeconds", HaveValue(BeEquivalentTo(validity/time.Second)))))
		},
		Entry("the TokenRequest minimum", credentials.MinBootTokenValidity),
		Entry("an hour", credentials.MaxBootTokenValidity),
	)

	DescribeTable("refuses a validity outside [10m, 1h] without creating anything",
		func(validity time.Duration) {
			_, err := credentials.EnsureBootCredential(ctx, c, bootNamespace, namespace, "fw-a", validity)
			Expect(err).To(MatchError("boot token validity " + validity.String() + " must be within [10m0s, 1h0m0s]"))
			Expect(serviceAccounts(c, namespace, "fw-a")).To(BeEmpty())
			Expect(requests).To(BeEmpty())
		},
		Entry("zero", time.Duration(0)),
		Entry("negative", -time.Minute),
		Entry("below the TokenRequest minimum", 10*time.Minute-time.Second),
		Entry("over an hour", time.Hour+time.Second),
	)

	It("says which ServiceAccount it could not mint a token for", func() {
		c = interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
			SubResourceCreate: func(context.Context, client.Client, string, client.Object, client.Object, ...client.SubResourceCreateOption) error {
				return errors.New("injected")
			},
		})
		_, err := credentials.EnsureBootCredential(ctx, c, bootNamespace, namespace, "fw-a", 30*time.Minute)
		Expect(err).To(MatchError("token for boot ServiceAccount " + bootNamespace + "/" + credentials.BootServiceAccountName(namespace, "fw-a") + ": injected"))
	})

	It("deletes a firewall's ServiceAccount, or with no name those of the whole namespace", func() {
		ensure("fw-a", 30*time.Minute)
		ensure("fw-b", 30*time.Minute)
		_, err := credentials.EnsureBootCredential(ctx, c, bootNamespace, "shoot--p--other", "fw-a", 30*time.Minute)
		Expect(err).NotTo(HaveOccurred())
		unrelated := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "gardener-extension-firewall", Namespace: bootNamespace}}
		Expect(c.Create(ctx, unrelated)).To(Succeed())

		Expect(credentials.DeleteBootCredentials(ctx, c, bootNamespace, namespace, "fw-a")).To(Succeed())
		Expect(serviceAccounts(c, namespace, "fw-a")).To(BeEmpty())
		Expect(serviceAccounts(c, namespace, "fw-b")).To(HaveLen(1))

		Expect(credentials.DeleteBootCredentials(ctx, c, bootNamespace, namespace, "")).To(Succeed())
		Expect(serviceAccounts(c, namespace, "fw-b")).To(BeEmpty())
		Expect(serviceAccounts(c, "shoot--p--other", "fw-a")).To(HaveLen(1), "another namespace's firewalls keep theirs")
		Expect(c.Get(ctx, client.ObjectKeyFromObject(unrelated), &corev1.ServiceAccount{})).To(Succeed(), "the extension's own stays")

		Expect(credentials.DeleteBootCredentials(ctx, c, bootNamespace, namespace, "fw-a")).To(Succeed(), "nothing left is no error")
	})

	It("names the boot identity after the firewall, hashing names too long for an object", func() {
		Expect(credentials.BootServiceAccountName(namespace, "fw-a")).To(Equal("firewall-boot.shoot--p--s.fw-a"))
		Expect(credentials.BootUser(bootNamespace, namespace, "fw-a")).To(Equal("system:serviceaccount:" + bootNamespace + ":firewall-boot.shoot--p--s.fw-a"))
		Expect(credentials.BootGroups(bootNamespace)).To(Equal([]string{"system:serviceaccounts", "system:serviceaccounts:" + bootNamespace}))

		long := strings.Repeat("n", 253)
		a, b := credentials.BootServiceAccountName(namespace, long), credentials.BootServiceAccountName(namespace, long[1:])
		Expect(validation.IsDNS1123Subdomain(a)).To(BeEmpty())
		Expect(a).To(HavePrefix("firewall-boot."))
		Expect(a).NotTo(Equal(b))
	})

	It("writes a kubeconfig with the seed's endpoint, its CA and the token", func() {
		raw, err := credentials.BootstrapKubeconfig("https://api.seed.example:443", []byte("ca-pem"), "a-boot-token")
		Expect(err).NotTo(HaveOccurred())
		cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Host).To(Equal("https://api.seed.example:443"))
		Expect(cfg.CAData).To(Equal([]byte("ca-pem")))
		Expect(cfg.BearerToken).To(Equal("a-boot-token"))
		Expect(cfg.CertData).To(BeEmpty())
	})
})
