package credentials_test

import (
	"context"
	"errors"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
)

var _ = Describe("BootIdentityHarmless", func() {
	var (
		mu      sync.Mutex // the reviews are asked a few at a time
		reviews []authorizationv1.SubjectAccessReviewSpec
		allow   func(*authorizationv1.ResourceAttributes) bool
		fail    error
		c       client.Client
	)
	BeforeEach(func() {
		reviews, allow, fail = nil, func(*authorizationv1.ResourceAttributes) bool { return false }, nil
		// The fake client cannot authorize: the spec answers.
		c = fake.NewClientBuilder().WithScheme(scheme.Scheme).WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				sar, ok := obj.(*authorizationv1.SubjectAccessReview)
				if !ok {
					return c.Create(ctx, obj, opts...)
				}
				if fail != nil {
					return fail
				}
				mu.Lock()
				defer mu.Unlock()
				reviews = append(reviews, sar.Spec)
				sar.Status.Allowed = allow(sar.Spec.ResourceAttributes)
				return nil
			},
		}).Build()
	})
	harmless := func() []string {
		GinkgoHelper()
		held, err := credentials.BootIdentityHarmless(context.Background(), c, bootNamespace, namespace, "fw-a")
		Expect(err).NotTo(HaveOccurred())
		return held
	}

	It("asks about the boot ServiceAccount with every group its token carries", func() {
		Expect(harmless()).To(BeEmpty())
		Expect(reviews).NotTo(BeEmpty())
		for _, r := range reviews {
			Expect(r.User).To(Equal(credentials.BootUser(bootNamespace, namespace, "fw-a")))
			Expect(r.Groups).To(ConsistOf("system:serviceaccounts", "system:serviceaccounts:"+bootNamespace, "system:authenticated"))
			Expect(r.ResourceAttributes).NotTo(BeNil())
		}
		Expect(reviews).To(ContainElements(
			HaveField("ResourceAttributes", HaveValue(And(HaveField("Resource", "certificatesigningrequests"), HaveField("Subresource", "nodeclient"), HaveField("Verb", "create")))),
			HaveField("ResourceAttributes", HaveValue(And(HaveField("Resource", "serviceaccounts"), HaveField("Subresource", "token"), HaveField("Namespace", bootNamespace)))),
			HaveField("ResourceAttributes", HaveValue(And(HaveField("Group", "*"), HaveField("Resource", "*"), HaveField("Verb", "*")))),
		), "becoming a node, minting tokens in the boot namespace, and anything at all")
	})

	It("names every dangerous permission the seed grants", func() {
		allow = func(a *authorizationv1.ResourceAttributes) bool {
			return a.Subresource == "nodeclient" || (a.Resource == "secrets" && a.Verb == "get" && a.Namespace == bootNamespace)
		}
		Expect(harmless()).To(ConsistOf(
			"create certificatesigningrequests/nodeclient.certificates.k8s.io",
			"get secrets in "+bootNamespace,
		))
	})

	It("fails rather than vouching when it cannot ask", func() {
		fail = errors.New("injected")
		held, err := credentials.BootIdentityHarmless(context.Background(), c, bootNamespace, namespace, "fw-a")
		Expect(err).To(MatchError("SubjectAccessReview for the boot identity: injected"))
		Expect(held).To(BeEmpty())
	})
})
