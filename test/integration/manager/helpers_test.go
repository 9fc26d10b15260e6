package manager_test

import (
	"context"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/machinetest"
)

var selector = map[string]string{"firewall.metal-firewall.io/shoot": "test"}

func newDeployment(namespace string, strategy firewallv1alpha1.UpdateStrategy) *firewallv1alpha1.FirewallDeployment {
	return &firewallv1alpha1.FirewallDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "shoot-firewall", Namespace: namespace},
		Spec: firewallv1alpha1.FirewallDeploymentSpec{
			Strategy: strategy,
			Replicas: 1,
			Selector: selector,
			Template: firewallv1alpha1.FirewallTemplateSpec{
				Metadata: firewallv1alpha1.TemplateMetadata{Labels: selector},
				Spec: firewallv1alpha1.FirewallSpec{
					Size: "c1-xlarge-x86", Image: "firewall-ubuntu-3.0", Partition: "local", Project: "p1",
					Networks:            []string{"internet", "tenant"},
					FirewallTrafficSpec: firewallv1alpha1.FirewallTrafficSpec{InternalPrefixes: []string{"10.0.1.0/24"}},
					AgentVersion:        "v0.1.0",
					UserdataContents: []firewallv1alpha1.UserdataContent{
						{Path: "/etc/firewall-agent/config.yaml", Content: "name: fw\n"},
						{Path: "/etc/firewall-agent/bootstrap.kubeconfig", SecretRef: &firewallv1alpha1.SecretKeyReference{Name: "bootstrap", Key: "kubeconfig"}},
					},
				},
			},
		},
	}
}

// newShootNamespace creates a shoot namespace with the Secret the
// deployments' userdata refers to, and a machine provider for it.
func newShootNamespace(ctx context.Context) (string, *machinetest.Memory) {
	namespace := newNamespace(ctx)
	Expect(testClient.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap", Namespace: namespace},
		Data:       map[string][]byte{"kubeconfig": []byte("bootstrap-kubeconfig")},
	})).To(Succeed())
	return namespace, machinetest.NewMemory()
}

// rollImage changes the deployment's image: a new set.
func rollImage(ctx context.Context, deployment *firewallv1alpha1.FirewallDeployment) {
	Eventually(func() error {
		if err := testClient.Get(ctx, client.ObjectKeyFromObject(deployment), deployment); err != nil {
			return err
		}
		deployment.Spec.Template.Spec.Image = "firewall-ubuntu-3.1"
		return testClient.Update(ctx, deployment)
	}).Should(Succeed())
}

func firewalls(ctx context.Context, namespace string) []firewallv1alpha1.Firewall {
	list := &firewallv1alpha1.FirewallList{}
	Expect(testClient.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
	return list.Items
}

func firewallSets(ctx context.Context, namespace string) []firewallv1alpha1.FirewallSet {
	list := &firewallv1alpha1.FirewallSetList{}
	Expect(testClient.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
	return list.Items
}

func firewallNames(ctx context.Context, namespace string) func() []string {
	return func() []string {
		var out []string
		for _, fw := range firewalls(ctx, namespace) {
			out = append(out, fw.Name)
		}
		return out
	}
}

func setNames(ctx context.Context, namespace string) func() []string {
	return func() []string {
		var out []string
		for _, s := range firewallSets(ctx, namespace) {
			out = append(out, s.Name)
		}
		return out
	}
}

// heartbeat plays the agent of every Firewall that has a machine: it writes
// the agent status the way the agent's seed source does.
func heartbeat(ctx context.Context, namespace string) {
	heartbeatIf(ctx, namespace, func(*firewallv1alpha1.Firewall) bool { return true })
}

// heartbeatIf is heartbeat for the Firewalls that beat(fw).
func heartbeatIf(ctx context.Context, namespace string, beat func(*firewallv1alpha1.Firewall) bool) {
	for _, fw := range firewalls(ctx, namespace) {
		if fw.Status.MachineStatus == nil || fw.DeletionTimestamp != nil || !beat(&fw) {
			continue
		}
		patch := client.MergeFrom(fw.DeepCopy())
		fw.Status.AgentStatus = &firewallv1alpha1.AgentStatus{Version: fw.Spec.AgentVersion, LastRunAgainstSeed: &metav1.Time{Time: time.Now()}}
		Expect(client.IgnoreNotFound(testClient.Status().Patch(ctx, &fw, patch))).To(Succeed())
	}
}

// readyFirewalls counts Ready Firewalls, beating for the agents first.
func readyFirewalls(ctx context.Context, namespace string) func() []string {
	return func() []string {
		heartbeat(ctx, namespace)
		var ready []string
		for _, fw := range firewalls(ctx, namespace) {
			if meta.IsStatusConditionTrue(fw.Status.Conditions, firewallv1alpha1.ConditionReady) {
				ready = append(ready, fw.Name)
			}
		}
		return ready
	}
}

// distances are those of the namespace's Firewalls not being deleted.
func distances(ctx context.Context, namespace string) []int32 {
	var out []int32
	for _, fw := range firewalls(ctx, namespace) {
		if fw.DeletionTimestamp == nil {
			out = append(out, fw.Spec.Distance)
		}
	}
	return out
}
