package agent_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	firewallcontroller "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/firewall"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/agent"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/roottest"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

var shootScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilMust(clientgoscheme.AddToScheme(s))
	utilMust(apiextensionsv1.AddToScheme(s))
	utilMust(fwv1alpha1.AddToScheme(s))
	return s
}()

func utilMust(err error) {
	if err != nil {
		panic(err)
	}
}

const shootAgentConfig = `name: fw-0
sources:
  shoot: {namespace: firewall, kubeconfig: %s}
  static:
    firewall: {internalPrefixes: ["10.0.1.0/24", "fd00:1::/64"]}
controllers:
  firewall: {source: static}
  cwnp:     {source: shoot}
  service:  {source: shoot}
  monitor:  {source: shoot}
`

// shootReceiverCert is the drop receiver's certificate of the shoot started
// last, of the CA its ManagedResource objects publish.
var shootReceiverCert tls.Certificate

// startShoot starts a shoot control plane with what the extension's shoot
// ManagedResource holds, and returns an admin client and a kubeconfig of the
// agent's ServiceAccount, which has only what that RBAC grants. crdPaths
// are CRDs the shoot has besides.
func startShoot(ctx SpecContext, crdPaths ...string) (client.Client, []byte) {
	cp, err := testenv.Start(testenv.Options{Name: "shoot", CRDDirectoryPaths: crdPaths})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(cp.Stop()).To(Succeed()) })
	admin, err := client.New(cp.Config, client.Options{Scheme: shootScheme})
	Expect(err).NotTo(HaveOccurred())

	receiverTLS, receiverCert, err := framework.NewReceiverTLS()
	Expect(err).NotTo(HaveOccurred())
	shootReceiverCert = receiverCert
	objects, err := firewallcontroller.ShootObjects(droptailerImage, receiverTLS)
	Expect(err).NotTo(HaveOccurred())
	for _, obj := range objects {
		Expect(admin.Create(ctx, obj)).To(Succeed())
		if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
			Eventually(func(g Gomega) {
				g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(crd), crd)).To(Succeed())
				for _, c := range crd.Status.Conditions {
					if c.Type == apiextensionsv1.Established {
						g.Expect(c.Status).To(Equal(apiextensionsv1.ConditionTrue))
						return
					}
				}
				g.Expect(crd.Status.Conditions).To(ContainElement(HaveField("Type", apiextensionsv1.Established)))
			}).WithTimeout(30 * time.Second).Should(Succeed())
		}
	}
	// Gardener's TokenRequestor creates the ServiceAccount and its token in
	// a real shoot; here the test does.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: constants.AgentServiceAccountName, Namespace: metav1.NamespaceSystem}}
	Expect(admin.Create(ctx, sa)).To(Succeed())
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	Expect(admin.SubResource("token").Create(ctx, sa, tr)).To(Succeed())
	kubeconfig, err := testenv.Kubeconfig(cp.WithBearerToken(tr.Status.Token))
	Expect(err).NotTo(HaveOccurred())
	return admin, kubeconfig
}

// writeShootKubeconfig writes the agent's shoot kubeconfig (0600) into a
// temporary folder of the spec and returns the folder and the file.
func writeShootKubeconfig(kubeconfig []byte) (string, string) {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	path := filepath.Join(dir, "shoot.kubeconfig")
	Expect(os.WriteFile(path, kubeconfig, 0o600)).To(Succeed())
	return dir, path
}

// reachShootFrom lets a process in ns reach the shoot's API server: it
// listens on the host's loopback, which a network namespace does not share.
func reachShootFrom(ns *netns.NS, kubeconfig []byte) {
	GinkgoHelper()
	restCfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	server, err := url.Parse(restCfg.Host)
	Expect(err).NotTo(HaveOccurred())
	port, err := strconv.Atoi(server.Port())
	Expect(err).NotTo(HaveOccurred())
	forward, stop := context.WithCancel(context.Background())
	DeferCleanup(stop)
	Expect(roottest.ForwardLoopback(forward, ns, port)).To(Succeed())
}

var _ = Describe("firewall agent with the shoot source", func() {
	It("enforces the shoot's ClusterwideNetworkPolicies, reports their state and a FirewallMonitor, and keeps the rules without the shoot", func(ctx SpecContext) {
		t := newTopology()
		serve(t.outside, "::", 8080)
		serve(t.outside, "::", 9090)
		serve(t.node, "::", 30080)
		admin, kubeconfig := startShoot(ctx)
		restCfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		asAgent, err := client.New(restCfg, client.Options{Scheme: shootScheme})
		Expect(err).NotTo(HaveOccurred())
		Expect(asAgent.List(ctx, &corev1.SecretList{}, client.InNamespace("firewall"))).To(Satisfy(apierrors.IsForbidden), "the agent reads no secret but its delivered one")
		Expect(asAgent.Create(ctx, &fwv1alpha1.ClusterwideNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "firewall"}})).To(Satisfy(apierrors.IsForbidden), "the agent writes no policy")

		dir, kubeconfigPath := writeShootKubeconfig(kubeconfig)
		cfgPath := filepath.Join(dir, "config.yaml")
		writeConfig(cfgPath, fmt.Sprintf(shootAgentConfig, kubeconfigPath))
		a := &agent.Agent{ConfigPath: cfgPath, Applier: nftables.NewProgrammer(t.fw.Path()), Log: slog.New(slog.NewTextHandler(GinkgoWriter, nil)),
			PollInterval: 200 * time.Millisecond, SeedInterval: 300 * time.Millisecond, Version: "v-shoot-test"}
		stopAgent := framework.RunInBackground(a.Run)
		DeferCleanup(func() { Expect(stopAgent()).To(Succeed()) })

		monitor := func(g Gomega) *fwv1alpha1.FirewallMonitor {
			mon := &fwv1alpha1.FirewallMonitor{}
			g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: "firewall", Name: "fw-0"}, mon)).To(Succeed())
			return mon
		}
		By("enforcing nothing but the internal prefixes while the shoot has no policy")
		Eventually(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(monitor(g).Status.Conditions, agent.ConditionReady)).To(BeTrue())
		}).WithTimeout(30 * time.Second).Should(Succeed())
		expectDropped(t.node, outsideV4, 8080)

		By("allowing what a new policy allows, and saying so in its status")
		web := &fwv1alpha1.ClusterwideNetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "allow-web", Namespace: "firewall"},
			Spec: fwv1alpha1.PolicySpec{
				Egress:  []fwv1alpha1.EgressRule{{To: []fwv1alpha1.IPBlock{{CIDR: "203.0.113.0/24"}, {CIDR: "2001:db8:1::/64"}}, Ports: []fwv1alpha1.PolicyPort{{Protocol: "TCP", Port: ptr.To[int32](8080)}}}},
				Ingress: []fwv1alpha1.IngressRule{{From: []fwv1alpha1.IPBlock{{CIDR: "2001:db8:1::/64"}}, Ports: []fwv1alpha1.PolicyPort{{Port: ptr.To[int32](30080)}}}},
			},
		}
		Expect(admin.Create(ctx, web)).To(Succeed())
		Eventually(func(g Gomega) fwv1alpha1.PolicyStatus {
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
			return web.Status
		}).WithTimeout(30 * time.Second).Should(Equal(fwv1alpha1.PolicyStatus{State: fwv1alpha1.PolicyStateDeployed, ObservedGeneration: 1}))
		expectAllowed(t.node, outsideV4, 8080)
		expectAllowed(t.node, outsideV6, 8080)
		expectAllowed(t.outside, nodeV6, 30080)
		expectDropped(t.node, outsideV4, 9090)
		expectDropped(t.outside, nodeV4, 30080)

		By("ignoring an invalid policy with the field and the value in its status, the others still enforced")
		broken := &fwv1alpha1.ClusterwideNetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "broken", Namespace: "firewall"},
			Spec:       fwv1alpha1.PolicySpec{Egress: []fwv1alpha1.EgressRule{{To: []fwv1alpha1.IPBlock{{CIDR: "0.0.0.0/0", Except: []string{"10.0.0/8"}}}}}},
		}
		Expect(admin.Create(ctx, broken)).To(Succeed())
		Eventually(func(g Gomega) fwv1alpha1.PolicyStatus {
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(broken), broken)).To(Succeed())
			return broken.Status
		}).WithTimeout(30 * time.Second).Should(And(HaveField("State", fwv1alpha1.PolicyStateIgnored),
			HaveField("Message", ContainSubstring(`spec.egress[0].to[0].except[0]: Invalid value: "10.0.0/8"`))))
		expectAllowed(t.node, outsideV4, 8080)
		expectDropped(t.node, outsideV4, 9090)

		By("allowing a LoadBalancer Service's source ranges to its address and port, and only those")
		Expect(t.node.IP("addr", "add", "10.0.1.100/24", "dev", "eth0")).To(Succeed())
		serve(t.node, "::", 30081)
		lb := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerSourceRanges: []string{"203.0.113.0/24"},
				Ports: []corev1.ServicePort{{Name: "https", Protocol: corev1.ProtocolTCP, Port: 30081}}},
		}
		Expect(admin.Create(ctx, lb)).To(Succeed())
		expectDropped(t.outside, "10.0.1.100", 30081)
		lb.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.0.1.100"}}
		Expect(admin.Status().Update(ctx, lb)).To(Succeed())
		Eventually(func() error {
			_, err := connect(t.outside, "10.0.1.100", 30081)
			return err
		}).WithTimeout(15 * time.Second).Should(Succeed())
		expectDropped(t.outside, "10.0.1.100", 30080)
		expectDropped(t.outside, nodeV4, 30081)
		lb.Spec.LoadBalancerSourceRanges = []string{"198.51.100.0/24"}
		Expect(admin.Update(ctx, lb)).To(Succeed())
		Eventually(func() error {
			_, err := dial(t.outside, "10.0.1.100", 30081, time.Second)
			return err
		}).WithTimeout(15*time.Second).Should(HaveOccurred(), "no longer among the Service's sources")

		By("reporting the machine's heartbeat and counters in the FirewallMonitor")
		Eventually(func(g Gomega) {
			mon := monitor(g)
			g.Expect(mon.Status.AgentVersion).To(Equal("v-shoot-test"))
			g.Expect(time.Since(mon.Status.LastHeartbeat.Time)).To(BeNumerically("<", 5*time.Second))
			g.Expect(meta.IsStatusConditionTrue(mon.Status.Conditions, agent.ConditionShootConnected)).To(BeTrue())
			g.Expect(mon.Status.Counters).To(ContainElement(And(HaveField("Name", "established"), HaveField("Packets", BeNumerically(">", 0)))))
		}).WithTimeout(30 * time.Second).Should(Succeed())

		By("dropping again what a deleted policy allowed")
		Expect(admin.Delete(ctx, web)).To(Succeed())
		Eventually(func() error {
			_, err := dial(t.node, outsideV4, 8080, time.Second)
			return err
		}).WithTimeout(15 * time.Second).Should(HaveOccurred())

		By("keeping the rules in force when the shoot cannot be read")
		Expect(admin.Create(ctx, &fwv1alpha1.ClusterwideNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "allow-web-again", Namespace: "firewall"}, Spec: web.Spec})).To(Succeed())
		Eventually(func() error {
			_, err := connect(t.node, outsideV4, 8080)
			return err
		}).WithTimeout(15 * time.Second).Should(Succeed())
		binding := &rbacv1.RoleBinding{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: "firewall", Name: constants.AgentShootRoleName}, binding)).To(Succeed())
		Expect(admin.Delete(ctx, binding)).To(Succeed())
		// The agent cannot see this deletion: it must keep the rule rather
		// than flush what it cannot read.
		Expect(admin.Delete(ctx, &fwv1alpha1.ClusterwideNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "allow-web-again", Namespace: "firewall"}})).To(Succeed())
		Consistently(func() error {
			_, err := connect(t.node, outsideV4, 8080)
			return err
		}).WithTimeout(3 * time.Second).Should(Succeed())

		By("catching up once the shoot can be read again")
		binding.ResourceVersion = ""
		Expect(admin.Create(ctx, binding)).To(Succeed())
		Eventually(func() error {
			_, err := dial(t.node, outsideV4, 8080, time.Second)
			return err
		}).WithTimeout(15 * time.Second).Should(HaveOccurred())
	})
})
