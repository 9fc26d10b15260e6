package firewallextension_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	firewallcontroller "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/firewall"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
)

// errKilled is the write a killed extension never made.
var errKilled = errors.New("the extension was killed before this write")

// process is one run of the extension that is killed right before its n-th
// write to the seed: the writes before it landed, nothing after it happens
// (its context ends, as the process would).
type process struct {
	mu     sync.Mutex
	writes int
	dieAt  int
	cancel context.CancelFunc
}

// write counts a write and tells whether it may happen.
func (p *process) write() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writes++
	if p.writes >= p.dieAt {
		p.cancel()
		return errKilled
	}
	return nil
}

// dyingClient is a seed client of a process.
type dyingClient struct {
	client.Client
	p *process
}

func (c dyingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := c.p.write(); err != nil {
		return err
	}
	return c.Client.Create(ctx, obj, opts...)
}

func (c dyingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := c.p.write(); err != nil {
		return err
	}
	return c.Client.Update(ctx, obj, opts...)
}

func (c dyingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if err := c.p.write(); err != nil {
		return err
	}
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c dyingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if err := c.p.write(); err != nil {
		return err
	}
	return c.Client.Delete(ctx, obj, opts...)
}

func (c dyingClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	if err := c.p.write(); err != nil {
		return err
	}
	return c.Client.DeleteAllOf(ctx, obj, opts...)
}

func (c dyingClient) Status() client.SubResourceWriter {
	return dyingSubResource{SubResourceClient: c.Client.SubResource("status"), p: c.p}
}

func (c dyingClient) SubResource(name string) client.SubResourceClient {
	return dyingSubResource{SubResourceClient: c.Client.SubResource(name), p: c.p}
}

type dyingSubResource struct {
	client.SubResourceClient
	p *process
}

func (c dyingSubResource) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	if err := c.p.write(); err != nil {
		return err
	}
	return c.SubResourceClient.Create(ctx, obj, sub, opts...)
}

func (c dyingSubResource) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if err := c.p.write(); err != nil {
		return err
	}
	return c.SubResourceClient.Update(ctx, obj, opts...)
}

func (c dyingSubResource) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if err := c.p.write(); err != nil {
		return err
	}
	return c.SubResourceClient.Patch(ctx, obj, patch, opts...)
}

// runKilled runs an actuator operation as a crash-looping extension would:
// the first run is killed before its first write, the restarted one before
// its second, and so on, each run starting from what the killed ones left,
// until a run completes. It returns how many runs were killed.
func runKilled(ctx SpecContext, s *seedEnv, ex *extensionsv1alpha1.Extension, op func(context.Context, *firewallcontroller.Config, client.Client, *extensionsv1alpha1.Extension) error) int {
	for dieAt := 1; ; dieAt++ {
		Expect(dieAt).To(BeNumerically("<", 80), "the operation never completes")
		current := &extensionsv1alpha1.Extension{}
		Expect(s.client.Get(ctx, client.ObjectKeyFromObject(ex), current)).To(Succeed())
		runCtx, cancel := context.WithCancel(ctx)
		p := &process{dieAt: dieAt, cancel: cancel}
		cfg := &firewallcontroller.Config{BootNamespace: bootNamespace, ReadyTimeout: readyTimeout, ReadyPollInterval: 200 * time.Millisecond}
		err := op(runCtx, cfg, dyingClient{Client: s.client, p: p}, current)
		cancel()
		if err == nil {
			return dieAt - 1
		}
		Expect(p.writes).To(BeNumerically(">=", dieAt), "run %d failed before it was killed: %v", dieAt, err)
	}
}

var _ = Describe("The extension killed after every step of migrate and of restore", func() {
	It("converges each time: one machine, the firewall restored, no token or RBAC left in either seed", func(ctx SpecContext) {
		namespace := "shoot--p--killed-each-step"
		createShoot(ctx, seedA, namespace)
		ex := newExtension(namespace, providerConfig)
		Expect(seedA.client.Create(ctx, ex)).To(Succeed())
		Eventually(func() string {
			beatAndCountReady(ctx, seedA, namespace)()
			return lastOperation(ctx, seedA, ex)()
		}).WithTimeout(time.Minute).Should(MatchRegexp(`^(Create|Reconcile) Succeeded$`))
		fwA := firewalls(ctx, seedA, namespace)[0]
		machineID := fwA.Status.MachineStatus.MachineID

		By("migrating, killed before each of its writes in turn")
		killed := runKilled(ctx, seedA, ex, func(ctx context.Context, cfg *firewallcontroller.Config, c client.Client, ex *extensionsv1alpha1.Extension) error {
			return firewallcontroller.NewActuator(c, c, *cfg).Migrate(ctx, logr.Discard(), ex)
		})
		Expect(killed).To(BeNumerically(">=", 5), "a migration writes state, pauses, deletes objects and credentials")
		fmt.Fprintf(GinkgoWriter, "migrate: killed at %d points\n", killed)
		By("gardenlet's migrate after the restart succeeds as well")
		annotate(ctx, seedA, ex, v1beta1constants.GardenerOperationMigrate, nil)
		Eventually(lastOperation(ctx, seedA, ex)).WithTimeout(time.Minute).Should(Equal("Migrate Succeeded"))
		state := ex.Status.State.DeepCopy()
		Expect(string(state.Raw)).To(ContainSubstring(machineID), "the machine is in the state, however often the migration died")
		Expect(seedA.client.Delete(ctx, ex)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(seedA.client.Get(ctx, client.ObjectKeyFromObject(ex), ex)) }).Should(BeTrue())
		Expect(firewalls(ctx, seedA, namespace)).To(BeEmpty())
		Expect(bootServiceAccounts(ctx, seedA, namespace)).To(BeEmpty(), "no boot token of seed A left")
		Expect(seedA.client.Get(ctx, client.ObjectKey{Name: firewallv1alpha1.AgentUserName(namespace, fwA.Name)}, &rbacv1.ClusterRoleBinding{})).To(Satisfy(apierrors.IsNotFound))
		Expect(seedA.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: constants.ShootAccessSecretName}, &corev1.Secret{})).To(Satisfy(apierrors.IsNotFound))
		Expect(seedA.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: constants.ShootManagedResourceName}, &resourcesv1alpha1.ManagedResource{})).To(Satisfy(apierrors.IsNotFound))
		Expect(provider.IDs()).To(ContainElement(machineID), "the machine keeps running")

		By("restoring in seed B, killed before each of its writes in turn")
		createShoot(ctx, seedB, namespace)
		exB := newExtension(namespace, providerConfig)
		Expect(framework.PrepareRestore(ctx, seedB.client, exB, state, time.Minute)).To(Succeed())
		// The agent keeps reporting while the restores come and go.
		beatCtx, stopBeats := context.WithCancel(ctx)
		beats := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(beats)
			for beatCtx.Err() == nil {
				beatAndCountReady(ctx, seedB, namespace)()
				time.Sleep(200 * time.Millisecond)
			}
		}()
		killed = runKilled(ctx, seedB, exB, func(ctx context.Context, cfg *firewallcontroller.Config, c client.Client, ex *extensionsv1alpha1.Extension) error {
			return firewallcontroller.NewActuator(c, c, *cfg).Restore(ctx, logr.Discard(), ex)
		})
		Expect(killed).To(BeNumerically(">=", 5), "a restore writes Firewalls, sets, the deployment and the shoot's objects")
		fmt.Fprintf(GinkgoWriter, "restore: killed at %d points\n", killed)
		By("gardenlet's restore after the restart succeeds as well")
		annotate(ctx, seedB, exB, v1beta1constants.GardenerOperationRestore, nil)
		Eventually(lastOperation(ctx, seedB, exB)).WithTimeout(time.Minute).Should(MatchRegexp(`^(Restore|Reconcile) Succeeded$`))
		stopBeats()
		<-beats

		fws := firewalls(ctx, seedB, namespace)
		Expect(fws).To(HaveLen(1), "exactly one firewall")
		Expect(fws[0].Status.MachineStatus.MachineID).To(Equal(machineID), "on the same machine")
		Expect(provider.CreatedIn(namespace)).To(Equal(1), "never a second machine")
		Eventually(func() []corev1.ServiceAccount { return bootServiceAccounts(ctx, seedB, namespace) }).Should(BeEmpty(), "the agent connected: seed B's boot identity went")
		Expect(bootServiceAccounts(ctx, seedA, namespace)).To(BeEmpty())

		By("deleting it in seed B")
		Expect(seedB.client.Delete(ctx, exB)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(seedB.client.Get(ctx, client.ObjectKeyFromObject(exB), exB)) }).WithTimeout(time.Minute).Should(BeTrue())
		Expect(provider.IDs()).NotTo(ContainElement(machineID))
		Expect(seedB.client.Get(ctx, client.ObjectKey{Name: firewallv1alpha1.AgentUserName(namespace, fwA.Name)}, &rbacv1.ClusterRoleBinding{})).To(Satisfy(apierrors.IsNotFound))
	})
})
