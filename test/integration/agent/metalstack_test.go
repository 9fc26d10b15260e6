package agent_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/agent"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/shootsource"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

// metalStackExample is firewall-controller's own example: its namespaces and
// ClusterwideNetworkPolicies (its Service is left out).
func metalStackExample() []*unstructured.Unstructured {
	data, err := os.ReadFile(testenv.MetalStackExamplePolicies())
	Expect(err).NotTo(HaveOccurred())
	var out []*unstructured.Unstructured
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		js, err := yaml.YAMLToJSON(doc)
		Expect(err).NotTo(HaveOccurred())
		if len(bytes.TrimSpace(js)) == 0 || string(js) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		Expect(u.UnmarshalJSON(js)).To(Succeed())
		if k := u.GetKind(); k == "Namespace" || k == "ClusterwideNetworkPolicy" {
			out = append(out, u)
		}
	}
	Expect(out).To(HaveLen(4))
	return out
}

func metalStackPolicy(name, namespace string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("metal-stack.io/v1")
	u.SetKind("ClusterwideNetworkPolicy")
	u.SetName(name)
	u.SetNamespace(namespace)
	return u
}

// serveUDP answers each datagram to addr:port in ns with the same bytes,
// from addr (bound to it: an unbound socket would answer from another one).
func serveUDP(ns *netns.NS, addr string, port int) {
	var pc net.PacketConn
	Expect(ns.Do(func() (err error) {
		pc, err = net.ListenPacket("udp", net.JoinHostPort(addr, fmt.Sprint(port)))
		return err
	})).To(Succeed())
	DeferCleanup(pc.Close)
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo(buf[:n], from)
		}
	}()
}

// udpEchoes tells whether a datagram to addr:port comes back.
func udpEchoes(ns *netns.NS, addr string, port int) bool {
	var c net.Conn
	Expect(ns.Do(func() (err error) {
		c, err = net.Dial("udp", net.JoinHostPort(addr, fmt.Sprint(port)))
		return err
	})).To(Succeed())
	defer func() { _ = c.Close() }()
	Expect(c.SetDeadline(time.Now().Add(time.Second))).To(Succeed())
	if _, err := c.Write([]byte("ping")); err != nil {
		return false
	}
	buf := make([]byte, 16)
	n, err := c.Read(buf)
	return err == nil && string(buf[:n]) == "ping"
}

var _ = Describe("firewall agent with metal-stack.io/v1 policies in the shoot", func() {
	It("enforces firewall-controller's example policies as they are, reports in their format, and lets ours of the same name win", func(ctx SpecContext) {
		t := newTopology()
		// The example's destinations, all on the outside host.
		for _, a := range []string{"1.1.2.2/32", "1.1.1.2/32", "8.8.8.8/32", "192.168.0.2/32"} {
			Expect(t.outside.IP("addr", "add", a, "dev", "eth0")).To(Succeed())
		}
		for _, n := range []string{"1.1.0.0/16", "8.8.8.8/32", "192.168.0.0/24"} {
			Expect(t.fw.IP("route", "add", n, "via", outsideV4)).To(Succeed())
		}
		for _, port := range []int{53, 80} {
			serve(t.outside, "::", port)
		}
		serveUDP(t.outside, "8.8.8.8", 53)

		admin, kubeconfig := startShoot(ctx, testenv.MetalStackShootCRDPaths()...)
		restCfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		asAgent, err := client.New(restCfg, client.Options{Scheme: shootScheme})
		Expect(err).NotTo(HaveOccurred())

		By("installing firewall-controller's example as it is")
		for _, u := range metalStackExample() {
			Expect(client.IgnoreAlreadyExists(admin.Create(ctx, u))).To(Succeed())
		}
		sample := metalStackPolicy("clusterwidenetworkpolicy-sample", "firewall")
		status := func(u *unstructured.Unstructured) func(Gomega) map[string]any {
			return func(g Gomega) map[string]any {
				got := u.DeepCopy()
				g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(u), got)).To(Succeed())
				st, _, _ := unstructured.NestedMap(got.Object, "status")
				return st
			}
		}

		By("the agent may only list them and write their status")
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("metal-stack.io/v1")
		list.SetKind("ClusterwideNetworkPolicyList")
		Expect(asAgent.List(ctx, list, client.InNamespace("firewall"))).To(Succeed())
		Expect(list.Items).To(HaveLen(1))
		Expect(asAgent.List(ctx, list, client.InNamespace("wrong"))).To(Satisfy(apierrors.IsForbidden), "only the firewall namespace")
		Expect(asAgent.Create(ctx, metalStackPolicy("x", "firewall"))).To(Satisfy(apierrors.IsForbidden), "the agent writes no policy")
		mine := list.Items[0].DeepCopy()
		mine.Object["spec"] = map[string]any{}
		Expect(asAgent.Update(ctx, mine)).To(Satisfy(apierrors.IsForbidden), "nor changes one")

		By("a FirewallMonitor of firewall-controller-manager's format for this firewall, as it wrote one")
		fcmMonitor := &unstructured.Unstructured{}
		fcmMonitor.SetGroupVersionKind(shootsource.MetalStackMonitorGVK)
		fcmMonitor.SetName("fw-0")
		fcmMonitor.SetNamespace("firewall")
		fcmMonitor.Object["size"], fcmMonitor.Object["image"], fcmMonitor.Object["partition"], fcmMonitor.Object["project"] = "c1-xlarge-x86", "firewall-ubuntu-3.0", "p1", "proj"
		fcmMonitor.Object["networks"] = []any{"internet"}
		fcmMonitor.Object["conditions"] = []any{}
		Expect(admin.Create(ctx, fcmMonitor)).To(Succeed())

		dir, kubeconfigPath := writeShootKubeconfig(kubeconfig)
		cfgPath := filepath.Join(dir, "config.yaml")
		writeConfig(cfgPath, fmt.Sprintf(shootAgentConfig, kubeconfigPath))
		a := &agent.Agent{ConfigPath: cfgPath, Applier: nftables.NewProgrammer(t.fw.Path()), Log: slog.New(slog.NewTextHandler(GinkgoWriter, nil)),
			PollInterval: 200 * time.Millisecond, SeedInterval: 300 * time.Millisecond, Version: "v-metal-stack-test"}
		stopAgent := framework.RunInBackground(a.Run)
		DeferCleanup(func() { Expect(stopAgent()).To(Succeed()) })

		By("reporting it deployed, in firewall-controller's status format")
		Eventually(status(sample)).WithTimeout(30 * time.Second).Should(Equal(map[string]any{"state": "deployed"}))

		By("the agent keeps that FirewallMonitor current in its format: version, heartbeat, rule counters, the machine left as it was")
		Eventually(func(g Gomega) {
			got := fcmMonitor.DeepCopy()
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(fcmMonitor), got)).To(Succeed())
			g.Expect(got.Object).To(HaveKeyWithValue("image", "firewall-ubuntu-3.0"))
			g.Expect(got.Object).To(HaveKeyWithValue("controllerStatus", And(
				HaveKeyWithValue("controllerVersion", "v-metal-stack-test"),
				HaveKeyWithValue("lastRun", Not(BeEmpty())),
				HaveKeyWithValue("stats", HaveKeyWithValue("rules", HaveKeyWithValue("counted", HaveKey("drop")))),
			)))
		}).WithTimeout(30 * time.Second).Should(Succeed())

		By("enforcing it on real packets: its CIDRs, its except, its ports and protocols")
		Expect(expectAllowed(t.node, "1.1.2.2", 53)).To(Equal(nodeV4))
		expectAllowed(t.node, "8.8.8.8", 53)
		Expect(udpEchoes(t.node, "8.8.8.8", 53)).To(BeTrue(), "protocol: UDP, port: 53")
		expectDropped(t.node, "1.1.1.2", 53)
		expectDropped(t.node, "8.8.8.8", 80)
		expectDropped(t.node, outsideV4, 53)
		By("not enforcing the example's policy in the namespace 'wrong'")
		expectDropped(t.node, "192.168.0.2", 80)

		By("ours of the same name wins, and theirs says so")
		ours := &fwv1alpha1.ClusterwideNetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: sample.GetName(), Namespace: "firewall"},
			Spec: fwv1alpha1.PolicySpec{Egress: []fwv1alpha1.EgressRule{{To: []fwv1alpha1.IPBlock{{CIDR: "8.8.8.8/32"}},
				Ports: []fwv1alpha1.PolicyPort{{Protocol: "TCP", Port: ptr.To[int32](80)}}}}},
		}
		Expect(admin.Create(ctx, ours)).To(Succeed())
		Eventually(status(sample)).WithTimeout(30 * time.Second).Should(Equal(map[string]any{"state": "ignored",
			"message": "not enforced: the firewall.metal-firewall.io/v1alpha1 ClusterwideNetworkPolicy of the same name is enforced instead"}))
		expectAllowed(t.node, "8.8.8.8", 80)
		expectDropped(t.node, "1.1.2.2", 53)
		Expect(udpEchoes(t.node, "8.8.8.8", 53)).To(BeFalse())

		By("theirs again once ours is gone")
		Expect(admin.Delete(ctx, ours)).To(Succeed())
		Eventually(status(sample)).WithTimeout(30 * time.Second).Should(Equal(map[string]any{"state": "deployed"}))
		expectAllowed(t.node, "1.1.2.2", 53)
		expectDropped(t.node, "8.8.8.8", 80)

		By("ignoring an invalid one with the field and value in its message, the others still enforced")
		broken := metalStackPolicy("broken", "firewall")
		broken.Object["spec"] = map[string]any{"egress": []any{map[string]any{"to": []any{map[string]any{"cidr": "10.0.0/8"}}}}}
		Expect(admin.Create(ctx, broken)).To(Succeed())
		Eventually(status(broken)).WithTimeout(30 * time.Second).Should(And(HaveKeyWithValue("state", "ignored"),
			HaveKeyWithValue("message", ContainSubstring(`spec.egress[0].to[0].cidr: Invalid value: "10.0.0/8"`))))
		expectAllowed(t.node, "1.1.2.2", 53)

		By("dropping again what a deleted one allowed")
		Expect(admin.Delete(ctx, sample)).To(Succeed())
		Eventually(func() error {
			_, err := dial(t.node, "1.1.2.2", 53, time.Second)
			return err
		}).WithTimeout(15 * time.Second).Should(HaveOccurred())
	})
})

// readmeFQDNPolicy is the matchName example of firewall-controller's README
// (v2.5.0), as it stands there.
const readmeFQDNPolicy = `apiVersion: metal-stack.io/v1
kind: ClusterwideNetworkPolicy
metadata:
  namespace: firewall
  name: clusterwidenetworkpolicy-fqdn
spec:
  egress:
  - toFQDNs:
    - matchName: example.com
    ports:
    - protocol: UDP
      port: 80
    - protocol: TCP
      port: 80
`

var _ = Describe("firewall agent with a metal-stack.io/v1 toFQDNs policy", func() {
	It("opens the addresses the nodes resolved for the name, and reports them in fqdn_state", func(ctx SpecContext) {
		t := newTopology()
		const exampleAddr, otherAddr = "203.0.113.10", "203.0.113.11"
		for _, a := range []string{resolverV4, exampleAddr, otherAddr} {
			Expect(t.outside.IP("addr", "add", a+"/24", "dev", "eth0")).To(Succeed())
		}
		serve(t.outside, "::", 80)
		dnsmasqOn(t.outside, []string{resolverV4}, "--host-record=example.com,"+exampleAddr, "--host-record=other.example.org,"+otherAddr)

		admin, kubeconfig := startShoot(ctx, testenv.MetalStackShootCRDPaths()...)
		reachShootFrom(t.fw, kubeconfig)
		dir, kubeconfigPath := writeShootKubeconfig(kubeconfig)
		cfgPath := filepath.Join(dir, "config.yaml")
		writeConfig(cfgPath, fmt.Sprintf(dnsShootAgentConfig, kubeconfigPath, resolverV4))

		js, err := yaml.YAMLToJSON([]byte(readmeFQDNPolicy))
		Expect(err).NotTo(HaveOccurred())
		policy := &unstructured.Unstructured{}
		Expect(policy.UnmarshalJSON(js)).To(Succeed())
		Expect(admin.Create(ctx, policy)).To(Succeed())
		startAgentProcess(t.fw, cfgPath)

		status := func(g Gomega) map[string]any {
			got := policy.DeepCopy()
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(policy), got)).To(Succeed())
			st, _, _ := unstructured.NestedMap(got.Object, "status")
			return st
		}
		Eventually(status).WithTimeout(30 * time.Second).Should(Equal(map[string]any{"state": "deployed", "fqdn_state": map[string]any{"example.com": []any{}}}))
		expectDropped(t.node, exampleAddr, 80)

		By("after a node resolved the name through the firewall")
		Expect(lookup(t.node, resolverV4, "udp", "example.com.", dns.TypeA)).To(Equal([]string{exampleAddr}))
		Expect(lookup(t.node, resolverV4, "udp", "other.example.org.", dns.TypeA)).To(Equal([]string{otherAddr}))
		Expect(expectAllowed(t.node, exampleAddr, 80)).To(Equal(nodeV4))
		expectDropped(t.node, otherAddr, 80)
		Eventually(status).WithTimeout(10 * time.Second).Should(Equal(map[string]any{"state": "deployed", "fqdn_state": map[string]any{
			"example.com": []any{map[string]any{"fqdn": "example.com", "ips": []any{exampleAddr}, "version": "ip"}},
		}}))
	})
})
