package csrapprover_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/csrapprover"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/seal"
)

const (
	namespace = "shoot--p--s"
	fwName    = "shoot-firewall-0"
	// bootNamespace is the extension's namespace, where boot ServiceAccounts live.
	bootNamespace = "extension-firewall-x1"
)

// csrName is the firewall's one CSR name, under which its agent asks.
var csrName = firewallv1alpha1.CSRName(namespace, fwName)

// scenario is one CSR and the seed it is decided in.
type scenario struct {
	name       string // the CSR's name, when not the firewall's own
	key        crypto.Signer
	subject    pkix.Name
	dnsNames   []string
	tamper     bool   // break the request's signature
	request    []byte // replaces the encoded request when set
	username   string
	groups     []string
	usages     []certificatesv1.KeyUsage
	expiration *int32
	signer     string
	conditions []certificatesv1.CertificateSigningRequestCondition
	firewall   *firewallv1alpha1.Firewall // nil: no Firewall in the seed
	sarAllowed bool
	sarReason  string
	patchFails bool // writing the Firewall fails
}

// bootstrapping is the first CSR of the firewall's agent, with the token of
// its boot ServiceAccount: the request the approver exists for.
func bootstrapping() *scenario {
	return &scenario{
		key:        ecKey(elliptic.P256()),
		subject:    pkix.Name{CommonName: firewallv1alpha1.AgentUserName(namespace, fwName), Organization: []string{firewallv1alpha1.AgentGroup(namespace)}},
		username:   credentials.BootUser(bootNamespace, namespace, fwName),
		groups:     append(credentials.BootGroups(bootNamespace), "system:authenticated"),
		usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		expiration: ptr.To[int32](3600),
		signer:     certificatesv1.KubeAPIServerClientSignerName,
		firewall:   &firewallv1alpha1.Firewall{ObjectMeta: metav1.ObjectMeta{Name: fwName, Namespace: namespace}},
		sarAllowed: true,
	}
}

// keyDER is the PKIX DER of the scenario key's public half.
func (s *scenario) keyDER() []byte {
	GinkgoHelper()
	der, err := x509.MarshalPKIXPublicKey(s.key.Public())
	Expect(err).NotTo(HaveOccurred())
	return der
}

// pin is the annotation value the approver writes for the scenario's key.
func (s *scenario) pin() string { return base64.StdEncoding.EncodeToString(s.keyDER()) }

// annotate sets an annotation on the scenario's Firewall.
func (s *scenario) annotate(key, value string) {
	if s.firewall.Annotations == nil {
		s.firewall.Annotations = map[string]string{}
	}
	s.firewall.Annotations[key] = value
}

func ecKey(curve elliptic.Curve) crypto.Signer {
	key, err := ecdsa.GenerateKey(curve, rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	return key
}

func rsaKey(bits int) crypto.Signer {
	key, err := rsa.GenerateKey(rand.Reader, bits) // weak on purpose where the approver must deny
	Expect(err).NotTo(HaveOccurred())
	return key
}

func (s *scenario) csr() *certificatesv1.CertificateSigningRequest {
	GinkgoHelper()
	req := s.request
	if req == nil {
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: s.subject, DNSNames: s.dnsNames}, s.key)
		Expect(err).NotTo(HaveOccurred())
		if s.tamper {
			der[len(der)-1] ^= 0xff // the signature is last
		}
		req = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	}
	name := csrName
	if s.name != "" {
		name = s.name
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: req, SignerName: s.signer, Usages: s.usages, ExpirationSeconds: s.expiration,
			Username: s.username, Groups: s.groups, UID: "uid-1", Extra: map[string]certificatesv1.ExtraValue{"scope": {"a"}},
		},
		Status: certificatesv1.CertificateSigningRequestStatus{Conditions: s.conditions},
	}
}

// decision is what the approver did with a CSR.
type decision struct {
	// Type is Approved or Denied; empty when the CSR was left alone.
	Type    certificatesv1.RequestConditionType
	Reason  string
	Message string
}

func approved() decision {
	return decision{Type: certificatesv1.CertificateApproved, Reason: "FirewallCSRApproved",
		Message: "approved by gardener-extension-firewall for " + firewallv1alpha1.AgentUserName(namespace, fwName)}
}

func denied(message string) decision {
	return decision{Type: certificatesv1.CertificateDenied, Reason: "FirewallCSRInvalid", Message: message}
}

var leftAlone = decision{}

// world is the fake seed of one decision and what the approver asked of it.
type world struct {
	client      client.Client
	reviews     []*authorizationv1.SubjectAccessReview
	subresource []string // the subresources written
	writes      []string // the writes, in order: "patch Firewall", "approval"
}

func newWorld(s *scenario, csr *certificatesv1.CertificateSigningRequest) *world {
	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(firewallv1alpha1.AddToScheme(scheme)).To(Succeed())
	objs := []client.Object{csr}
	if s.firewall != nil {
		objs = append(objs, s.firewall)
	}
	w := &world{}
	w.client = fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&certificatesv1.CertificateSigningRequest{}).
		WithInterceptorFuncs(interceptor.Funcs{
			// The fake client cannot authorize: the scenario answers.
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if sar, ok := obj.(*authorizationv1.SubjectAccessReview); ok {
					w.reviews = append(w.reviews, sar.DeepCopy())
					sar.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: s.sarAllowed, Reason: s.sarReason}
					return nil
				}
				return c.Create(ctx, obj, opts...)
			},
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				if _, ok := obj.(*firewallv1alpha1.Firewall); ok {
					if s.patchFails {
						return errors.New("injected")
					}
					w.writes = append(w.writes, "patch Firewall")
				}
				return c.Patch(ctx, obj, patch, opts...)
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				w.subresource = append(w.subresource, sub)
				w.writes = append(w.writes, sub)
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
		}).Build()
	return w
}

// decide reconciles the scenario's CSR and returns the decision recorded.
func decide(s *scenario) (decision, *world) {
	GinkgoHelper()
	csr := s.csr()
	w := newWorld(s, csr)
	r := &csrapprover.Reconciler{Client: w.client, BootNamespace: bootNamespace, MaxDuration: csrapprover.DefaultMaxDuration}
	res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: csr.Name}})
	Expect(err).NotTo(HaveOccurred())
	Expect(res).To(Equal(reconcile.Result{}))

	got := &certificatesv1.CertificateSigningRequest{}
	Expect(w.client.Get(context.Background(), client.ObjectKey{Name: csr.Name}, got)).To(Succeed())
	added := got.Status.Conditions[len(s.conditions):]
	Expect(len(added)).To(BeNumerically("<=", 1), "at most one decision")
	if len(added) == 0 {
		Expect(w.subresource).To(BeEmpty())
		return leftAlone, w
	}
	Expect(w.subresource).To(Equal([]string{"approval"}), "decisions go through the approval subresource")
	Expect(added[0].Status).To(Equal(corev1.ConditionTrue))
	return decision{Type: added[0].Type, Reason: added[0].Reason, Message: added[0].Message}, w
}

var _ = Describe("Reconciler", func() {
	DescribeTable("decides a CSR",
		func(modify func(*scenario), want decision, sarAsked bool) {
			s := bootstrapping()
			modify(s)
			got, w := decide(s)
			if want.Type == certificatesv1.CertificateDenied {
				Expect(got).To(And(HaveField("Type", want.Type), HaveField("Reason", want.Reason), HaveField("Message", ContainSubstring(want.Message))))
			} else {
				Expect(got).To(Equal(want))
			}
			if sarAsked {
				Expect(w.reviews).To(HaveLen(1))
			} else {
				Expect(w.reviews).To(BeEmpty(), "decided before asking the API")
			}
		},
		Entry("the firewall's own boot ServiceAccount: approved",
			func(*scenario) {}, approved(), true),
		Entry("renewal with the firewall's own certificate: approved",
			func(s *scenario) {
				s.username = firewallv1alpha1.AgentUserName(namespace, fwName)
				s.groups = []string{firewallv1alpha1.AgentGroup(namespace), "system:authenticated"}
			}, approved(), true),
		Entry("renewal with the pinned key: approved",
			func(s *scenario) {
				s.username = firewallv1alpha1.AgentUserName(namespace, fwName)
				s.groups = []string{firewallv1alpha1.AgentGroup(namespace), "system:authenticated"}
				s.annotate(firewallv1alpha1.AnnotationAgentKey, s.pin())
			}, approved(), true),
		Entry("the boot ServiceAccount after a migration, with the pinned key: approved",
			func(s *scenario) { s.annotate(firewallv1alpha1.AnnotationAgentKey, s.pin()) }, approved(), true),
		Entry("another key revoked: approved",
			func(s *scenario) {
				s.annotate(firewallv1alpha1.AnnotationRevokedAgentKey, seal.KeyID([]byte("another key")))
			}, approved(), true),
		Entry("key encipherment besides client auth: approved",
			func(s *scenario) { s.usages = append(s.usages, certificatesv1.UsageKeyEncipherment) }, approved(), true),
		Entry("an RSA key of 2048 bits: approved",
			func(s *scenario) { s.key = rsaKey(2048) }, approved(), true),
		Entry("an ed25519 key: approved",
			func(s *scenario) {
				_, key, err := ed25519.GenerateKey(rand.Reader)
				Expect(err).NotTo(HaveOccurred())
				s.key = key
			}, approved(), true),
		Entry("the shortest validity: approved",
			func(s *scenario) { s.expiration = ptr.To(int32(csrapprover.MinDuration.Seconds())) }, approved(), true),
		Entry("the longest validity: approved",
			func(s *scenario) { s.expiration = ptr.To(int32(csrapprover.DefaultMaxDuration.Seconds())) }, approved(), true),

		Entry("a bootstrap token, even one of the firewall's former group: denied",
			func(s *scenario) {
				s.username = "system:bootstrap:abcdef"
				s.groups = []string{"system:bootstrappers", "system:bootstrappers:firewall:shoot--p--s:shoot-firewall-0", "system:authenticated"}
			}, denied(`requester "system:bootstrap:abcdef" is neither firewall:shoot--p--s:shoot-firewall-0 nor `+
				`system:serviceaccount:extension-firewall-x1:firewall-boot.shoot--p--s.shoot-firewall-0`), false),
		Entry("another firewall's boot ServiceAccount: denied",
			func(s *scenario) { s.username = credentials.BootUser(bootNamespace, namespace, "shoot-firewall-1") },
			denied(`requester "system:serviceaccount:extension-firewall-x1:firewall-boot.shoot--p--s.shoot-firewall-1" is neither`), false),
		Entry("a ServiceAccount of the boot name in another namespace: denied",
			func(s *scenario) {
				s.username = credentials.BootUser(namespace, namespace, fwName)
				s.groups = append(credentials.BootGroups(namespace), "system:authenticated")
			}, denied(`requester "system:serviceaccount:shoot--p--s:firewall-boot.shoot--p--s.shoot-firewall-0" is neither`), false),
		Entry("another firewall's certificate: denied",
			func(s *scenario) {
				s.username, s.groups = firewallv1alpha1.AgentUserName(namespace, "shoot-firewall-1"), nil
			},
			denied(`requester "firewall:shoot--p--s:shoot-firewall-1" is neither`), false),
		Entry("the boot groups without the boot ServiceAccount: denied",
			func(s *scenario) { s.username = "system:serviceaccount:" + bootNamespace + ":default" },
			denied(`requester "system:serviceaccount:extension-firewall-x1:default" is neither`), false),
		Entry("a wrong organization: denied",
			func(s *scenario) { s.subject.Organization = []string{"system:masters"} },
			denied(`subject O must be ["firewall:shoot--p--s"], got ["system:masters"]`), false),
		Entry("no organization: denied",
			func(s *scenario) { s.subject.Organization = nil }, denied(`subject O must be`), false),
		Entry("subject alternative names: denied",
			func(s *scenario) { s.dnsNames = []string{"kubernetes.default"} },
			denied("a client certificate carries no subject alternative names"), false),
		Entry("no client auth usage: denied",
			func(s *scenario) { s.usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature} },
			denied("usages must include client auth"), false),
		Entry("server auth besides client auth: denied",
			func(s *scenario) { s.usages = append(s.usages, certificatesv1.UsageServerAuth) },
			denied(`usage "server auth" is not allowed`), false),
		Entry("an RSA key of 1024 bits: denied",
			func(s *scenario) { s.key = rsaKey(1024) }, denied("RSA key of 1024 bits is too weak, at least 2048"), false),
		Entry("an ECDSA key on P-224: denied",
			func(s *scenario) { s.key = ecKey(elliptic.P224()) }, denied("ECDSA key of 224 bits is too weak, at least P-256"), false),
		Entry("a signature that does not verify: denied",
			func(s *scenario) { s.tamper = true }, denied("the request's signature does not verify"), false),
		Entry("no expirationSeconds: denied",
			func(s *scenario) { s.expiration = nil }, denied("spec.expirationSeconds is required"), false),
		Entry("expirationSeconds below the minimum: denied",
			func(s *scenario) { s.expiration = ptr.To(int32(csrapprover.MinDuration.Seconds()) - 1) },
			denied("spec.expirationSeconds 599 is outside [600, 86400]"), false),
		Entry("expirationSeconds above the maximum: denied",
			func(s *scenario) { s.expiration = ptr.To(int32(csrapprover.DefaultMaxDuration.Seconds()) + 1) },
			denied("spec.expirationSeconds 86401 is outside [600, 86400]"), false),
		Entry("no Firewall of that name in the seed: denied",
			func(s *scenario) { s.firewall = nil }, denied("no Firewall shoot--p--s/shoot-firewall-0 in this seed"), false),
		Entry("a paused Firewall, being migrated away: denied",
			func(s *scenario) {
				s.firewall.Annotations = map[string]string{firewallv1alpha1.AnnotationPaused: "true"}
			}, denied("Firewall shoot--p--s/shoot-firewall-0 is paused"), false),
		Entry("a Firewall being deleted: denied",
			func(s *scenario) {
				s.firewall.Finalizers = []string{"firewall.metal-firewall.io/machine"}
				s.firewall.DeletionTimestamp = ptr.To(metav1.Now())
			}, denied("Firewall shoot--p--s/shoot-firewall-0 is being deleted"), false),
		Entry("a requester the SubjectAccessReview turns away: denied",
			func(s *scenario) { s.sarAllowed, s.sarReason = false, "no RBAC policy matched" },
			denied(`requester "system:serviceaccount:extension-firewall-x1:firewall-boot.shoot--p--s.shoot-firewall-0" may not create certificatesigningrequests/firewallclient: no RBAC policy matched`), true),
		Entry("a key other than the pinned one: denied",
			func(s *scenario) {
				s.annotate(firewallv1alpha1.AnnotationAgentKey, s.pin())
				s.key = ecKey(elliptic.P256())
			}, denied("is not the key"), true),
		Entry("a renewal with a key other than the pinned one: denied",
			func(s *scenario) {
				s.username = firewallv1alpha1.AgentUserName(namespace, fwName)
				s.annotate(firewallv1alpha1.AnnotationAgentKey, s.pin())
				s.key = ecKey(elliptic.P256())
			}, denied("is not the key"), true),
		Entry("a pin that does not decode: denied",
			func(s *scenario) { s.annotate(firewallv1alpha1.AnnotationAgentKey, "not base64!") }, denied("is not the key"), true),
		Entry("a revoked key, not pinned yet: denied",
			func(s *scenario) { s.annotate(firewallv1alpha1.AnnotationRevokedAgentKey, seal.KeyID(s.keyDER())) }, denied("is revoked"), true),
		Entry("a revoked key, pinned: denied",
			func(s *scenario) {
				s.annotate(firewallv1alpha1.AnnotationAgentKey, s.pin())
				s.annotate(firewallv1alpha1.AnnotationRevokedAgentKey, seal.KeyID(s.keyDER()))
			}, denied("is revoked"), true),

		Entry("a CN that names no firewall: left alone",
			func(s *scenario) { s.subject.CommonName = "system:node:worker-1" }, leftAlone, false),
		Entry("a second CSR of the firewall, under another name: denied",
			func(s *scenario) { s.name = "firewall.shoot--p--s.shoot-firewall-0.2" },
			denied(`metadata.name "firewall.shoot--p--s.shoot-firewall-0.2" is not the firewall's one CSR name "firewall.shoot--p--s.shoot-firewall-0"`), false),
		Entry("a request padded beyond 4 KiB: denied",
			func(s *scenario) {
				der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: s.subject, ExtraExtensions: []pkix.Extension{
					{Id: []int{1, 3, 6, 1, 4, 1, 99999, 1}, Value: make([]byte, 1<<20)},
				}}, s.key)
				Expect(err).NotTo(HaveOccurred())
				s.request = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
			}, denied("bytes is larger than 4096"), false),
		Entry("a firewall CN that does not parse: left alone",
			func(s *scenario) { s.subject.CommonName = firewallv1alpha1.AgentUserPrefix + "only-a-namespace" }, leftAlone, false),
		Entry("an unparseable request: left alone",
			func(s *scenario) { s.request = []byte("not a CSR") }, leftAlone, false),
		Entry("another signer: left alone",
			func(s *scenario) { s.signer = certificatesv1.KubeAPIServerClientKubeletSignerName }, leftAlone, false),
		Entry("a CSR already decided: left alone",
			func(s *scenario) {
				s.conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue, Reason: "ByHand"}}
			}, leftAlone, false),
	)

	It("asks the SubjectAccessReview about the requester and the firewallclient subresource", func() {
		s := bootstrapping()
		_, w := decide(s)
		Expect(w.reviews).To(HaveLen(1))
		Expect(w.reviews[0].Spec).To(Equal(authorizationv1.SubjectAccessReviewSpec{
			User: s.username, Groups: s.groups, UID: "uid-1", Extra: map[string]authorizationv1.ExtraValue{"scope": {"a"}},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Group: certificatesv1.GroupName, Resource: "certificatesigningrequests", Subresource: firewallv1alpha1.CSRSubresource, Verb: "create",
			},
		}))
	})

	It("honours a shorter maximum validity", func() {
		s := bootstrapping()
		csr := s.csr()
		w := newWorld(s, csr)
		r := &csrapprover.Reconciler{Client: w.client, BootNamespace: bootNamespace, MaxDuration: 30 * time.Minute}
		_, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: csrName}})
		Expect(err).NotTo(HaveOccurred())
		got := &certificatesv1.CertificateSigningRequest{}
		Expect(w.client.Get(context.Background(), client.ObjectKey{Name: csrName}, got)).To(Succeed())
		Expect(got.Status.Conditions).To(ConsistOf(And(HaveField("Type", certificatesv1.CertificateDenied),
			HaveField("Message", "spec.expirationSeconds 3600 is outside [600, 1800]"))))
	})

	It("does nothing for a CSR that is gone", func() {
		s := bootstrapping()
		w := newWorld(s, s.csr())
		r := &csrapprover.Reconciler{Client: w.client, BootNamespace: bootNamespace, MaxDuration: csrapprover.DefaultMaxDuration}
		res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: "other"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(res).To(Equal(reconcile.Result{}))
		Expect(w.reviews).To(BeEmpty())
	})
})
