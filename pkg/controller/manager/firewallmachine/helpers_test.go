package firewallmachine_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/firewallmachine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/machinetest"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/managertest"
)

const (
	namespace = "shoot--p--s"
	// bootNamespace is the extension's namespace, where boot ServiceAccounts live.
	bootNamespace    = "extension-firewall-x1"
	fwName           = "shoot-firewall-abc-0"
	heartbeatTimeout = 2 * time.Minute
	healthTimeout    = 20 * time.Minute
)

func newFirewall() *firewallv1alpha1.Firewall {
	return &firewallv1alpha1.Firewall{
		ObjectMeta: metav1.ObjectMeta{Name: fwName, Namespace: namespace},
		Spec: firewallv1alpha1.FirewallSpec{
			Size: "c1-xlarge-x86", Image: "firewall-ubuntu-3.0", Partition: "local", Project: "p1",
			Networks:            []string{"internet", "tenant"},
			FirewallTrafficSpec: firewallv1alpha1.FirewallTrafficSpec{InternalPrefixes: []string{"10.0.1.0/24"}},
			UserdataContents:    []firewallv1alpha1.UserdataContent{{Path: "/etc/firewall-agent/config.yaml", Content: "name: fw\n"}},
		},
	}
}

// env is one Firewall, the fake seed it lives in, the in-memory provider
// and the reconciler under test.
type env struct {
	ctx      context.Context
	clk      *testclock.FakeClock
	c        client.Client
	provider *machinetest.Memory
	r        *firewallmachine.Reconciler
	fw       *firewallv1alpha1.Firewall

	// allow answers the SubjectAccessReviews (the fake client cannot
	// authorize); nil denies all.
	allow func(*authorizationv1.ResourceAttributes) bool
	// tokens are the boot tokens minted, in order.
	tokens []mintedToken
}

// mintedToken is a TokenRequest as the fake seed answered it.
type mintedToken struct {
	serviceAccount    client.ObjectKey
	expirationSeconds int64
	token             string
	expires           time.Time
	machinesBefore    int // machines created when it was minted
}

// newEnv creates fw (and objs) in a fresh fake seed. The clock starts now:
// the in-memory provider stamps machines with the real time. Whole
// seconds, as the API keeps timestamps.
func newEnv(fw *firewallv1alpha1.Firewall, bootstrap *firewallmachine.Bootstrap, objs ...client.Object) *env {
	GinkgoHelper()
	e := &env{ctx: context.Background(), clk: testclock.NewFakeClock(time.Now().Truncate(time.Second)), provider: machinetest.NewMemory(), fw: fw}
	e.c = managertest.NewClient(e.clk, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if sar, ok := obj.(*authorizationv1.SubjectAccessReview); ok {
				sar.Status.Allowed = e.allow != nil && e.allow(sar.Spec.ResourceAttributes)
				return nil
			}
			return c.Create(ctx, obj, opts...)
		},
		// As kube-apiserver: a token of an existing ServiceAccount, valid for
		// what was asked from now (the fake client's expires in 6041).
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			tr, ok := subObj.(*authenticationv1.TokenRequest)
			if !ok || sub != "token" {
				return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
			}
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &corev1.ServiceAccount{}); err != nil {
				return err
			}
			t := mintedToken{serviceAccount: client.ObjectKeyFromObject(obj), expirationSeconds: *tr.Spec.ExpirationSeconds,
				token: fmt.Sprintf("boot-token-%d", len(e.tokens)), machinesBefore: e.provider.Created()}
			t.expires = e.clk.Now().Add(time.Duration(t.expirationSeconds) * time.Second)
			e.tokens = append(e.tokens, t)
			tr.Status = authenticationv1.TokenRequestStatus{Token: t.token, ExpirationTimestamp: metav1.NewTime(t.expires)}
			return nil
		},
	})
	e.r = &firewallmachine.Reconciler{Client: e.c, Provider: e.provider, Clock: e.clk,
		HeartbeatTimeout: heartbeatTimeout, HealthTimeout: healthTimeout, Bootstrap: bootstrap}
	e.r.SetCredentialsClient(e.c)
	for _, o := range append(objs, fw) {
		Expect(e.c.Create(e.ctx, o)).To(Succeed())
	}
	return e
}

func (e *env) reconcile() reconcile.Result {
	GinkgoHelper()
	res, err := e.r.Reconcile(e.ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.fw)})
	Expect(err).NotTo(HaveOccurred())
	return res
}

// firewall reads the Firewall back.
func (e *env) firewall() *firewallv1alpha1.Firewall {
	GinkgoHelper()
	Expect(e.c.Get(e.ctx, client.ObjectKeyFromObject(e.fw), e.fw)).To(Succeed())
	return e.fw
}

func (e *env) update(mutate func(*firewallv1alpha1.Firewall)) {
	GinkgoHelper()
	fw := e.firewall()
	mutate(fw)
	Expect(e.c.Update(e.ctx, fw)).To(Succeed())
}

// heartbeat reports the agent's last runs against seed and shoot as now.
func (e *env) heartbeat() {
	GinkgoHelper()
	fw := e.firewall()
	patch := client.MergeFrom(fw.DeepCopy())
	now := metav1.NewTime(e.clk.Now())
	fw.Status.AgentStatus = &firewallv1alpha1.AgentStatus{LastRunAgainstSeed: &now, LastRunAgainstShoot: &now}
	Expect(e.c.Status().Patch(e.ctx, fw, patch)).To(Succeed())
}

// delivery records what a firewallmachine.Delivery was asked to do and,
// like the shoot, holds what was delivered last.
type delivery struct {
	mu        sync.Mutex
	delivered [][]byte
	box       []byte
	withdrawn int
}

func (d *delivery) Deliver(_ context.Context, ns, name string, box []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	Expect(ns + "/" + name).To(Equal(namespace + "/" + fwName))
	d.delivered = append(d.delivered, box)
	d.box = box
	return nil
}

func (d *delivery) Delivered(_ context.Context, ns, name string) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	Expect(ns + "/" + name).To(Equal(namespace + "/" + fwName))
	return d.box, nil
}

func (d *delivery) Withdraw(_ context.Context, ns, name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	Expect(ns + "/" + name).To(Equal(namespace + "/" + fwName))
	d.withdrawn++
	d.box = nil
	return nil
}

// lingering is a provider whose Delete only requests the release: the
// machine is still found until release is called.
type lingering struct {
	*machinetest.Memory
	requested []string
}

func (l *lingering) Delete(_ context.Context, id string) error {
	l.requested = append(l.requested, id)
	return nil
}

func (l *lingering) release(ctx context.Context) {
	for _, id := range l.requested {
		Expect(l.Memory.Delete(ctx, id)).To(Succeed())
	}
}
