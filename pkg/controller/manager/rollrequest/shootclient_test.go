package rollrequest_test

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	. "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/rollrequest"
)

var _ = Describe("ShootClients", func() {
	It("reads a shoot's FirewallMonitors without discovering its API groups, and keeps one client per shoot", func(ctx context.Context) {
		var (
			mu    sync.Mutex
			paths []string
		)
		shoot := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			paths = append(paths, r.URL.Path)
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprint(w, `{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadataList","metadata":{},"items":[]}`)
		}))
		DeferCleanup(shoot.Close)
		ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: shoot.Certificate().Raw})
		kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: shoot, cluster: {server: %q, certificate-authority-data: %s}}]
users: [{name: gardener, user: {token: t}}]
contexts: [{name: shoot, context: {cluster: shoot, user: gardener}}]
current-context: shoot
`, shoot.URL, base64.StdEncoding.EncodeToString(ca))
		seed := fake.NewClientBuilder().WithObjects(&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "gardener", Namespace: "shoot--p--s", ResourceVersion: "1"},
			Data:       map[string][]byte{"kubeconfig": []byte(kubeconfig)},
		}).Build()

		clients := ShootClients(seed)
		c, err := clients(ctx, "shoot--p--s")
		Expect(err).NotTo(HaveOccurred())
		for _, apiVersion := range []string{firewallv1alpha1.SchemeGroupVersion.String(), "firewall.metal-stack.io/v2"} {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(schema.FromAPIVersionAndKind(apiVersion, "FirewallMonitorList"))
			Expect(c.List(ctx, list, client.InNamespace("firewall"))).To(Succeed())
		}
		again, err := clients(ctx, "shoot--p--s")
		Expect(err).NotTo(HaveOccurred())
		Expect(again).To(BeIdenticalTo(c), "the Secret is unchanged")

		mu.Lock()
		defer mu.Unlock()
		Expect(paths).To(Equal([]string{
			"/apis/firewall.metal-firewall.io/v1alpha1/namespaces/firewall/firewallmonitors",
			"/apis/firewall.metal-stack.io/v2/namespaces/firewall/firewallmonitors",
		}), "no discovery (/api, /apis): a discovering client keeps every API group of its shoot")
	})
})
