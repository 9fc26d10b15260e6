package agent_test

import (
	"log/slog"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/shootsource"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

// monitoredFirewall is a Firewall as the agent reads it from the seed.
func monitoredFirewall() *fwv1alpha1.Firewall {
	allocated := metav1.NewTime(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	fw := &fwv1alpha1.Firewall{ObjectMeta: metav1.ObjectMeta{Name: "fw-new", Namespace: "shoot--p--s"}}
	fw.Spec.Size, fw.Spec.Image, fw.Spec.Partition, fw.Spec.Project = "c1-xlarge-x86", "firewall-ubuntu-3.0", "p1", "proj"
	fw.Spec.Networks = []string{"internet", "tenant"}
	fw.Status.MachineStatus = &fwv1alpha1.MachineStatus{MachineID: "m-1", Liveliness: "Alive", AllocationTimestamp: &allocated,
		LastEvent: &fwv1alpha1.MachineEvent{Event: "Phoned Home", Message: "up", Timestamp: &allocated}}
	meta.SetStatusCondition(&fw.Status.Conditions, metav1.Condition{Type: fwv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", Message: "ok", LastTransitionTime: allocated})
	return fw
}

var _ = Describe("firewall agent's FirewallMonitor of metal-stack's format", func() {
	It("creates one the real firewall.metal-stack.io/v2 CRD accepts, as the agent's shoot identity, and writes nothing where the shoot lacks the kind", func(ctx SpecContext) {
		now := metav1.Now()
		status := fwv1alpha1.FirewallMonitorStatus{AgentVersion: "v1.2.3", LastHeartbeat: &now,
			Counters:          []fwv1alpha1.RuleCounter{{Name: "drop", Packets: 3, Bytes: 180}},
			Devices:           []fwv1alpha1.DeviceStatistics{{Name: "vrf3981", Internal: true, RxBytes: 2000, TxBytes: 200}},
			DistanceSupported: true, Distance: ptr.To[int32](3)}

		for _, withKind := range []bool{true, false} {
			var crds []string
			if withKind {
				crds = testenv.MetalStackShootCRDPaths()
			}
			admin, kubeconfig := startShoot(ctx, crds...)
			_, path := writeShootKubeconfig(kubeconfig)
			src := &shootsource.Source{Config: agentconfigv1alpha1.ShootSource{Kubeconfig: path, Namespace: "firewall"}, Name: "fw-new",
				Log: slog.New(slog.NewTextHandler(GinkgoWriter, nil))}
			Expect(src.MetalStackMonitor(ctx, monitoredFirewall(), status)).To(Succeed())

			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(shootsource.MetalStackMonitorGVK)
			err := admin.Get(ctx, client.ObjectKey{Namespace: "firewall", Name: "fw-new"}, got)
			if !withKind {
				Expect(meta.IsNoMatchError(err)).To(BeTrue(), "no such kind in this shoot: %v", err)
				continue
			}
			Expect(err).NotTo(HaveOccurred())
			Expect(got.Object).To(HaveKeyWithValue("size", "c1-xlarge-x86"))
			Expect(got.Object).To(HaveKeyWithValue("networks", []any{"internet", "tenant"}))
			Expect(got.Object).To(HaveKeyWithValue("machineStatus", And(HaveKeyWithValue("machineID", "m-1"), HaveKeyWithValue("liveliness", "Alive"),
				HaveKeyWithValue("allocationTimestamp", "2026-11-01T10:00:00Z"))))
			Expect(got.Object).To(HaveKeyWithValue("conditions", ConsistOf(And(HaveKeyWithValue("type", "Ready"), HaveKeyWithValue("status", "True"),
				HaveKeyWithValue("lastUpdateTime", "2026-11-01T10:00:00Z")))))
			// The real CRD prunes a field it does not know: these are the names
			// firewall-controller-manager reads.
			Expect(got.Object).To(HaveKeyWithValue("controllerStatus", And(HaveKeyWithValue("distance", BeEquivalentTo(3)), HaveKeyWithValue("distanceSupported", true))))
			Expect(got.Object).To(HaveKeyWithValue("controllerStatus", And(HaveKeyWithValue("controllerVersion", "v1.2.3"),
				HaveKeyWithValue("stats", HaveKeyWithValue("rules", HaveKeyWithValue("counted", HaveKeyWithValue("drop",
					HaveKeyWithValue("counter", And(HaveKeyWithValue("packets", BeNumerically("==", 3)), HaveKeyWithValue("bytes", BeNumerically("==", 180)))))))))))

			Expect(got.Object).To(HaveKeyWithValue("controllerStatus", HaveKeyWithValue("stats", HaveKeyWithValue("devices",
				HaveKeyWithValue("vrf3981", And(HaveKeyWithValue("in", BeNumerically("==", 2000)), HaveKeyWithValue("out", BeNumerically("==", 200))))))),
				"the interfaces' bytes as firewall-controller reports them")

			By("a later heartbeat updates it in place")
			status.Counters[0].Packets = 4
			Expect(src.MetalStackMonitor(ctx, monitoredFirewall(), status)).To(Succeed())
			Expect(admin.Get(ctx, client.ObjectKeyFromObject(got), got)).To(Succeed())
			packets, _, _ := unstructured.NestedInt64(got.Object, "controllerStatus", "stats", "rules", "counted", "drop", "counter", "packets")
			Expect(packets).To(BeNumerically("==", 4))
		}
	})
})
