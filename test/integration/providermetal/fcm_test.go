package providermetal_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/metalapi"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

// fcmPort is the port firewall-controller-manager's webhook server listens on:
// v0.6.1 has no flag for it.
const fcmPort = 9443

// fcmStatus is what provider-metal's health check reads of the FirewallDeployment
// (pkg/controller/healthcheck/firewall.go): healthy when no replica is unhealthy and
// readyReplicas equals targetReplicas.
type fcmStatus struct {
	target, ready, unhealthy int64
	// acted tells that firewall-controller-manager wrote the status (its
	// Available condition), not only the CRD's zero values.
	acted bool
}

func fcmStatusOf(deploy *unstructured.Unstructured) fcmStatus {
	target, _, _ := unstructured.NestedInt64(deploy.Object, "status", "targetReplicas")
	ready, _, _ := unstructured.NestedInt64(deploy.Object, "status", "readyReplicas")
	unhealthy, _, _ := unstructured.NestedInt64(deploy.Object, "status", "unhealthyReplicas")
	conditions, _, _ := unstructured.NestedSlice(deploy.Object, "status", "conditions")
	acted := false
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == "Available" {
			acted = true
		}
	}
	return fcmStatus{target: target, ready: ready, unhealthy: unhealthy, acted: acted}
}

// startFCM runs firewall-controller-manager's own binary (hack/build-fcm.sh) for
// namespace as provider-metal deploys it, in single-cluster mode (the seed is the
// shoot), against the metal-api at metalURL with the Metal-Admin key. Its webhooks
// are registered with the kube-apiserver as its manifests have them.
func startFCM(namespace, metalURL, adminKey string) {
	GinkgoHelper()
	out, err := exec.Command(filepath.Join(testenv.RepoRoot(), "hack", "build-fcm.sh")).Output()
	Expect(err).NotTo(HaveOccurred(), "building firewall-controller-manager: %s", exitOutput(err))
	binary := strings.TrimSpace(string(out))

	webhooks := &envtest.WebhookInstallOptions{
		Paths:            []string{testenv.FirewallControllerManagerWebhooks()},
		LocalServingHost: "127.0.0.1",
		LocalServingPort: fcmPort,
	}
	Expect(webhooks.Install(seedConfig)).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		// Cleanup removes the certificates only: without the configurations,
		// later writes would still call the stopped webhook server.
		for _, w := range webhooks.MutatingWebhooks {
			Expect(client.IgnoreNotFound(testClient.Delete(ctx, w))).To(Succeed())
		}
		for _, w := range webhooks.ValidatingWebhooks {
			Expect(client.IgnoreNotFound(testClient.Delete(ctx, w))).To(Succeed())
		}
		Expect(webhooks.Cleanup()).To(Succeed())
	})

	dir := GinkgoT().TempDir()
	kubeconfig, err := testenv.Kubeconfig(seedConfig)
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(filepath.Join(dir, "kubeconfig"), kubeconfig, 0o600)).To(Succeed())
	log := filepath.Join(dir, "fcm.log")
	p, err := testenv.StartProcess(binary, log,
		[]string{"KUBECONFIG=" + filepath.Join(dir, "kubeconfig"), "METAL_AUTH_HMAC=" + adminKey},
		"--namespace="+namespace, "--cluster-id=c1", "--metal-api-url="+metalURL, "--seed-api-url="+seedConfig.Host,
		"--ssh-key-secret-name=ssh-secret", "--cert-dir="+webhooks.LocalServingCertDir,
		// Names only, handed on to the firewalls: single-cluster mode reads no secret.
		"--shoot-kubeconfig-secret-name=generic-token-kubeconfig", "--shoot-token-secret-name=shoot-access-firewall-controller-manager",
		"--metrics-addr=0", "--health-addr=0", "--safety-backoff=1s", "--log-level=debug")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		Expect(p.Stop()).To(Succeed())
		if CurrentSpecReport().Failed() {
			data, _ := os.ReadFile(log) //nolint:gosec // the test's own folder
			GinkgoWriter.Printf("firewall-controller-manager's log:\n%s\n", data)
		}
	})
}

func exitOutput(err error) string {
	var e *exec.ExitError
	if errors.As(err, &e) {
		return string(e.Stderr)
	}
	return ""
}

var _ = Describe("firewall-controller-manager v0.6.1 beside the webhook", Label("fcm"), func() {
	It("allocates nothing while the webhook holds provider-metal's FirewallDeployment and reports 0 of 0, and one machine once the Extension goes", func(ctx SpecContext) {
		const (
			namespace = "shoot--p--fcm"
			project   = "proj"
			adminKey  = "admin-key-for-tests"
		)
		opts := metalapi.Inventory(project)
		opts.Keys["Metal-Admin"] = adminKey
		server, err := metalapi.New(opts)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			server.Close()
			server.ExpectNoViolations()
		})

		shootNamespace(ctx, namespace, "metal", constants.FirewallExtensionType)
		ex := firewallExtension(ctx, namespace)
		// What gardenlet and provider-metal give firewall-controller-manager: the shoot's
		// namespace firewall (here in the seed: single-cluster mode) and the SSH key.
		Expect(testClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "firewall"}})).To(Succeed())
		pub, _, err := ed25519.GenerateKey(rand.Reader)
		Expect(err).NotTo(HaveOccurred())
		sshKey, err := ssh.NewPublicKey(pub)
		Expect(err).NotTo(HaveOccurred())
		Expect(testClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ssh-secret", Namespace: namespace},
			Data: map[string][]byte{"id_rsa.pub": ssh.MarshalAuthorizedKey(sshKey)}})).To(Succeed())
		startFCM(namespace, server.URL, adminKey)

		machine := framework.ProviderFirewallMachine{Size: metalapi.Size, Image: metalapi.Image, Partition: "partition-a", Project: project,
			Networks: []string{metalapi.Internet, metalapi.PrivateNetwork(project)}}
		// A Worker reconcile whose write conflicts with firewall-controller-manager's
		// own is retried, as provider-metal's failed reconcile is.
		gepmReconcile := func() {
			GinkgoHelper()
			Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
				return framework.WriteProviderFirewallOf(ctx, testClient, namespace, machine)
			})).To(Succeed())
		}
		status := func(g Gomega) fcmStatus {
			deploy, err := framework.ProviderFirewall(ctx, testClient, namespace)
			g.Expect(err).NotTo(HaveOccurred())
			return fcmStatusOf(deploy)
		}

		By("provider-metal's Worker reconciles, every second, while the webhook holds the replicas")
		gepmReconcile()
		Expect(replicas(ctx, namespace)).To(BeZero())
		Eventually(status).WithTimeout(time.Minute).Should(Equal(fcmStatus{acted: true}), "firewall-controller-manager reports 0 of 0")
		for range 10 {
			gepmReconcile()
			Expect(replicas(ctx, namespace)).To(BeZero())
			time.Sleep(time.Second)
		}
		Expect(server.Allocations()).To(BeZero(), "firewall-controller-manager allocated no machine")
		Expect(status(Default)).To(Equal(fcmStatus{acted: true}), "provider-metal's health check: 0 of 0 ready, none unhealthy")

		By("the Extension deleted: provider-metal's next write stands, and firewall-controller-manager allocates one machine")
		Expect(testClient.Delete(ctx, ex)).To(Succeed())
		gepmReconcile()
		Expect(replicas(ctx, namespace)).To(BeEquivalentTo(1))
		Eventually(server.Allocations).WithTimeout(2*time.Minute).Should(Equal(1), "firewall-controller-manager allocates")
		Eventually(func(g Gomega) int64 { return status(g).target }).Should(BeEquivalentTo(1))
		Consistently(server.Allocations).WithTimeout(5*time.Second).Should(Equal(1), fmt.Sprintf("one machine for %s", namespace))
	})
})
