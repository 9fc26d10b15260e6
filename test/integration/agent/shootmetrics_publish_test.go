package agent_test

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

const publishAgentConfig = `name: fw-0
networks:
- {id: internal, interface: int0}
- {id: internet, interface: ext0}
metrics: {internalNetwork: internal}
sources:
  shoot: {namespace: firewall, kubeconfig: %s}
  static:
    firewall: {internalPrefixes: ["10.0.1.0/24"]}
controllers:
  firewall: {source: static}
  cwnp:     {source: shoot}
  monitor:  {source: shoot}
`

var _ = Describe("the agent's metrics for the shoot", func() {
	It("serves them on its internal address, which the nodes can scrape and the outside cannot, reports that address and writes no EndpointSlice", func(ctx SpecContext) {
		t := newTopology()
		admin, kubeconfig := startShoot(ctx)
		reachShootFrom(t.fw, kubeconfig)
		dir, kubeconfigPath := writeShootKubeconfig(kubeconfig)
		cfgPath := filepath.Join(dir, "config.yaml")
		writeConfig(cfgPath, fmt.Sprintf(publishAgentConfig, kubeconfigPath))

		By("the extension's Service: no selector, Prometheus annotations")
		svc := &corev1.Service{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: "firewall", Name: fwv1alpha1.MetricsServiceName}, svc)).To(Succeed())
		Expect(svc.Spec.Selector).To(BeEmpty())
		Expect(svc.Annotations).To(HaveKeyWithValue("prometheus.io/scrape", "true"))
		Expect(svc.Spec.Ports).To(ConsistOf(HaveField("Name", fwv1alpha1.MetricsPortName)))

		startAgentProcess(t.fw, cfgPath)

		By("the monitor names the address: the internal interface's first address and the port")
		published := net.JoinHostPort("10.0.1.1", strconv.Itoa(fwv1alpha1.MetricsServicePort))
		Eventually(func(g Gomega) {
			mon := &fwv1alpha1.FirewallMonitor{}
			g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: "firewall", Name: "fw-0"}, mon)).To(Succeed())
			g.Expect(mon.Status.MetricsAddress).To(Equal(published))
		}).WithTimeout(30 * time.Second).Should(Succeed())

		By("a scrape of that address from the nodes' side")
		m := scrapeMetrics(t.node, published)
		Expect(m).To(HaveKey(`firewall_agent_device_receive_bytes_total{device="int0",side="internal"}`))
		By("nothing from the outside")
		expectDropped(t.outside, "10.0.1.1", fwv1alpha1.MetricsServicePort)

		By("the monitor's devices and traffic")
		Eventually(func(g Gomega) {
			mon := &fwv1alpha1.FirewallMonitor{}
			g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: "firewall", Name: "fw-0"}, mon)).To(Succeed())
			g.Expect(mon.Status.Devices).To(ConsistOf(
				And(HaveField("Name", "ext0"), HaveField("Internal", false)),
				And(HaveField("Name", "int0"), HaveField("Internal", true), HaveField("RxBytes", BeNumerically(">", 0)))))
			g.Expect(mon.Status.Traffic).NotTo(BeNil())
			g.Expect(mon.Status.Traffic.Internal.InBytes).To(BeNumerically(">", 0), "the scrape came in on int0")
		}).WithTimeout(30 * time.Second).Should(Succeed())

		By("no EndpointSlice of the agent's: the extension publishes the address from the seed")
		slices := &discoveryv1.EndpointSliceList{}
		Expect(admin.List(ctx, slices, client.InNamespace("firewall"), client.MatchingLabels{discoveryv1.LabelServiceName: fwv1alpha1.MetricsServiceName})).To(Succeed())
		Expect(slices.Items).To(BeEmpty())

		By("the agent's rights: reading slices in its namespace, writing none, no Service")
		restCfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		asAgent, err := client.New(restCfg, client.Options{Scheme: shootScheme})
		Expect(err).NotTo(HaveOccurred())
		// Listing the firewall namespace's slices it may: that is how it finds the drop receiver.
		Expect(asAgent.List(ctx, &discoveryv1.EndpointSliceList{}, client.InNamespace("firewall"))).To(Succeed())
		Expect(asAgent.List(ctx, &discoveryv1.EndpointSliceList{}, client.InNamespace("default"))).To(Satisfy(apierrors.IsForbidden), "only in the firewall namespace")
		Expect(asAgent.Get(ctx, client.ObjectKeyFromObject(svc), &corev1.Service{})).To(Satisfy(apierrors.IsForbidden))
		mine := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "fw-0", Namespace: "firewall",
			Labels: map[string]string{discoveryv1.LabelServiceName: fwv1alpha1.MetricsServiceName}}, AddressType: discoveryv1.AddressTypeIPv4}
		Expect(asAgent.Create(ctx, mine)).To(Satisfy(apierrors.IsForbidden))
	})
})
