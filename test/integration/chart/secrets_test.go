package chart_test

import (
	"net/http"
	"strings"
	"sync"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

var _ = Describe("The extension's Secret reads", func() {
	// A seed holds every shoot's credentials and ManagedResource data: a cache of Secrets would
	// keep them all in the extension's memory and stream each change to it.
	It("go to the kube-apiserver when needed: the extension never watches or lists all Secrets", func(ctx SpecContext) {
		ensureIngress(ctx)
		namespace := "shoot--p--secrets"
		createShoot(ctx, namespace)
		ex := newExtension(namespace, "acl", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/24"]}}`)
		Expect(admin.Create(ctx, ex)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(admin.Delete(ctx, ex))).To(Succeed())
			Eventually(gone(ctx, ex)).Should(BeTrue())
		})
		Eventually(lastOperation(ctx, ex)).Should(MatchRegexp(`^(Create|Reconcile) Succeeded$`))
		By("the shoot's ManagedResource and its data Secret were written, which reads the Secret first")
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: constants.ACLManagedResourceName}, &resourcesv1alpha1.ManagedResource{})).To(Succeed())
		Expect(secretReads.seen()).To(ContainElement(HavePrefix("GET /api/v1/namespaces/"+namespace+"/secrets/")), "the recorder sees the extension's Secret reads")

		Expect(secretReads.cacheLike()).To(BeEmpty())
	})
})

// secretReads records the extension's requests for Secrets (all of its requests go through the
// chart ServiceAccount's config); the suite checks once more when the manager stops.
var secretReads = &secretRecorder{}

type secretRecorder struct {
	mu       sync.Mutex
	requests []string
}

func (r *secretRecorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if strings.Contains(req.URL.Path, "/secrets") {
			r.mu.Lock()
			line := req.Method + " " + req.URL.Path
			if req.URL.Query().Get("watch") == "true" {
				line += "?watch=true"
			}
			r.requests = append(r.requests, line)
			r.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

func (r *secretRecorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.requests...)
}

// cacheLike are the recorded requests an informer makes: a watch, or a list across namespaces.
func (r *secretRecorder) cacheLike() []string {
	var out []string
	for _, line := range r.seen() {
		if strings.HasSuffix(line, "?watch=true") || line == "GET /api/v1/secrets" {
			out = append(out, line)
		}
	}
	return out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
