package metal_test

import (
	stdcontext "context"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/firewallmachine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/metal"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/managertest"
	"github.com/metal-firewall/gardener-extension-firewall/test/metalapi"
)

// The firewall manager's machine reconciler with the metal provider against
// the test metal-api: what the metal-api says reaches the Firewall.
var _ = Describe("Firewall reconciler with the metal provider", func() {
	const settle = time.Minute
	var (
		server *metalapi.Server
		clk    *testclock.FakeClock
		c      client.Client
		r      *firewallmachine.Reconciler
		fw     *firewallv1alpha1.Firewall
	)
	setup := func(opts metalapi.Options, timeout time.Duration) {
		ctx0 := stdcontext.Background()
		server = startServer(opts)
		clk = testclock.NewFakeClock(time.Now().Truncate(time.Second))
		c = managertest.NewClient(clk, interceptor.Funcs{})
		provider := newProvider(server.URL, func(o *metal.Options) { o.Timeout = timeout })
		r = &firewallmachine.Reconciler{Client: c, Provider: provider, Clock: clk, HeartbeatTimeout: time.Minute, HealthTimeout: 20 * time.Minute, InDoubtSettle: settle}
		fw = newFirewall("fw-a")
		Expect(c.Create(ctx0, fw)).To(Succeed())
	}
	reconcileOnce := func(ctx SpecContext) (reconcile.Result, error) {
		return r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(fw)})
	}
	firewall := func(ctx SpecContext) *firewallv1alpha1.Firewall {
		GinkgoHelper()
		Expect(c.Get(ctx, client.ObjectKeyFromObject(fw), fw)).To(Succeed())
		return fw
	}
	created := func(ctx SpecContext) *metav1.Condition {
		return meta.FindStatusCondition(firewall(ctx).Status.Conditions, firewallv1alpha1.ConditionCreated)
	}

	It("writes the machine's status, liveliness, last event, image and egress IPs into the Firewall", func(ctx SpecContext) {
		setup(metalapi.Inventory(project), 5*time.Second)
		_, err := reconcileOnce(ctx)
		Expect(err).NotTo(HaveOccurred())
		_, err = reconcileOnce(ctx)
		Expect(err).NotTo(HaveOccurred())
		fw := firewall(ctx)
		id := server.Allocated()[0]
		Expect(fw.Status.MachineStatus).To(And(HaveField("MachineID", id), HaveField("Liveliness", "Alive"), HaveField("ImageID", metalapi.Image),
			HaveField("LastEvent.Event", "Phoned Home"), HaveField("CrashLoop", false)))
		Expect(meta.IsStatusConditionTrue(fw.Status.Conditions, firewallv1alpha1.ConditionProvisioned)).To(BeTrue())
		Expect(fw.Status.EgressIPs).To(HaveLen(2))
		Expect(fw.Status.EgressIPs).To(ContainElement("203.0.113.200"), "the SNAT IP")
		Expect(fw.Status.EgressIPs).To(ContainElement(HavePrefix("100.64.")), "the machine's internet address")
		Expect(server.Allocations()).To(Equal(1))
	})

	It("shows the metal-api's refusal in Created and retries with back-off", func(ctx SpecContext) {
		opts := metalapi.Inventory(project)
		opts.MachinesPerSize = 1
		setup(opts, 5*time.Second)
		_, err := newProvider(server.URL, nil).Create(ctx, newFirewall("someone-else"), nil)
		Expect(err).NotTo(HaveOccurred())

		_, err = reconcileOnce(ctx)
		Expect(err).To(HaveOccurred(), "an error: controller-runtime retries with back-off")
		Expect(created(ctx)).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", firewallmachine.ReasonCreateFailed),
			HaveField("Message", ContainSubstring("the metal-api answered 422 Unprocessable Entity: no machine available"))))
	})

	It("never allocates a second machine when an allocation timed out after the metal-api carried it out", func(ctx SpecContext) {
		setup(metalapi.Inventory(project), 300*time.Millisecond)
		server.DelayAllocations(time.Second)
		_, err := reconcileOnce(ctx)
		Expect(err).To(HaveOccurred())
		Expect(created(ctx)).To(And(HaveField("Reason", firewallmachine.ReasonAllocationInDoubt), HaveField("LastTransitionTime.Time", clk.Now())))
		Expect(server.Allocations()).To(Equal(1))

		By("the metal-api answers again; Find sees the machine and takes it")
		server.DelayAllocations(0)
		Eventually(func(g Gomega) {
			_, err := reconcileOnce(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(firewall(ctx).Status.MachineStatus).NotTo(BeNil())
		}).Should(Succeed())
		Expect(server.Allocations()).To(Equal(1))
		Expect(created(ctx)).To(HaveField("Status", metav1.ConditionTrue))
	})

	It("waits out the settle time before it allocates again when Find shows nothing", func(ctx SpecContext) {
		setup(metalapi.Inventory(project), 300*time.Millisecond)
		server.DelayAllocations(time.Second)
		_, err := reconcileOnce(ctx)
		Expect(err).To(HaveOccurred())
		Expect(server.Allocations()).To(Equal(1))
		By("the machine is freed behind the manager's back: Find shows none")
		Eventually(server.Allocated).Should(HaveLen(1))
		Expect(newProvider(server.URL, nil).Delete(ctx, server.Allocated()[0])).To(Succeed())
		server.DelayAllocations(0)

		res, err := reconcileOnce(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.RequeueAfter).To(BeNumerically("~", settle, time.Second))
		Expect(server.Allocations()).To(Equal(1), "no allocation within the settle time")

		clk.Step(settle + time.Second)
		_, err = reconcileOnce(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(server.Allocations()).To(Equal(2))
		Expect(server.Allocated()).To(HaveLen(1))
	})

	It("shows a provider that is not set up on the Firewall instead of failing elsewhere", func(ctx SpecContext) {
		setup(metalapi.Inventory(project), 5*time.Second)
		r.Provider = machine.Unavailable{Name: "metal", Err: errors.New("--metal-api-url is required")}
		_, err := reconcileOnce(ctx)
		Expect(err).To(HaveOccurred())
		Expect(created(ctx)).To(And(HaveField("Reason", firewallmachine.ReasonProviderError),
			HaveField("Message", "finding the machine: the metal machine provider is not set up: --metal-api-url is required")))
		Expect(server.Allocations()).To(BeZero())
	})
})
