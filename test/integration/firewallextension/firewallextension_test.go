package firewallextension_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	bootstraptokenapi "k8s.io/cluster-bootstrap/token/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	firewallcontroller "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/firewall"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/config"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

const providerConfig = `{"size":"c1-xlarge-x86","image":"firewall-ubuntu-3.0","partition":"local","project":"p1",
"networks":["internet","tenant"],"internalPrefixes":["10.250.0.0/16"],"rateLimits":[{"interface":"ext0","rate":100}],
"dns":{"upstreams":["10.250.0.53"]}}`

// createShoot creates what gardenlet has for a shoot in a seed: namespace,
// Cluster and the `gardener` kubeconfig Secret.
func createShoot(ctx SpecContext, s *seedEnv, namespace string) {
	createShootWith(ctx, s, namespace, `{"apiVersion":"core.gardener.cloud/v1beta1","kind":"Shoot","metadata":{"name":"s","namespace":"garden-p"}}`)
}

// createShootWith is createShoot with the Cluster's Shoot.
func createShootWith(ctx SpecContext, s *seedEnv, namespace, shoot string) {
	Expect(s.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{"gardener.cloud/role": "shoot"}}})).To(Succeed())
	Expect(s.client.Create(ctx, &extensionsv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: namespace},
		Spec: extensionsv1alpha1.ClusterSpec{
			CloudProfile: runtime.RawExtension{Raw: []byte(`{"apiVersion":"core.gardener.cloud/v1beta1","kind":"CloudProfile","metadata":{"name":"local"}}`)},
			Seed:         &runtime.RawExtension{Raw: []byte(`{"apiVersion":"core.gardener.cloud/v1beta1","kind":"Seed","metadata":{"name":"seed"}}`)},
			Shoot:        runtime.RawExtension{Raw: []byte(shoot)},
		},
	})).To(Succeed())
	// The seed stands in for the shoot: only its endpoint is read here.
	gardenerSecret, err := testenv.GardenerSecret(namespace, s.cp.Config)
	Expect(err).NotTo(HaveOccurred())
	Expect(s.client.Create(ctx, gardenerSecret)).To(Succeed())
}

// shootManagedResource returns the shoot ManagedResource of the namespace and
// the objects it carries.
func shootManagedResource(ctx SpecContext, s *seedEnv, namespace string) (*resourcesv1alpha1.ManagedResource, []client.Object) {
	mr := &resourcesv1alpha1.ManagedResource{}
	ExpectWithOffset(1, s.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: constants.ShootManagedResourceName}, mr)).To(Succeed())
	objects, err := framework.ShootManagedResourceObjects(ctx, s.client, namespace, constants.ShootManagedResourceName)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return mr, objects
}

func newExtension(namespace, config string) *extensionsv1alpha1.Extension {
	return &extensionsv1alpha1.Extension{
		ObjectMeta: metav1.ObjectMeta{Name: "firewall", Namespace: namespace, Annotations: map[string]string{
			v1beta1constants.GardenerOperation: v1beta1constants.GardenerOperationReconcile,
		}},
		Spec: extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{
			Type:           "firewall",
			ProviderConfig: &runtime.RawExtension{Raw: []byte(config)},
		}},
	}
}

// lastOperation returns "<type> <state>" of the Extension's last operation.
func lastOperation(ctx SpecContext, s *seedEnv, ex *extensionsv1alpha1.Extension) func() string {
	return func() string {
		if err := s.client.Get(ctx, client.ObjectKeyFromObject(ex), ex); err != nil {
			return err.Error()
		}
		if op := ex.Status.LastOperation; op != nil {
			return fmt.Sprintf("%s %s", op.Type, op.State)
		}
		return ""
	}
}

func firewalls(ctx SpecContext, s *seedEnv, namespace string) []firewallv1alpha1.Firewall {
	list := &firewallv1alpha1.FirewallList{}
	Expect(s.client.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
	return list.Items
}

// beatAndCountReady plays the agent on every Firewall with a machine, as it
// reports once its rules are in force (read from seed and shoot, the
// Firewall's generation applied), and returns the names of the Ready ones.
func beatAndCountReady(ctx SpecContext, s *seedEnv, namespace string) func() []string {
	return beatWith(ctx, s, namespace, func(fw *firewallv1alpha1.Firewall) int64 { return fw.Generation })
}

// beatWith plays the agent reporting the generation applied(fw) in force.
func beatWith(ctx SpecContext, s *seedEnv, namespace string, applied func(*firewallv1alpha1.Firewall) int64) func() []string {
	return func() []string {
		var ready []string
		for _, fw := range firewalls(ctx, s, namespace) {
			if fw.Status.MachineStatus != nil {
				patch := client.MergeFrom(fw.DeepCopy())
				now := &metav1.Time{Time: time.Now()}
				fw.Status.AgentStatus = &firewallv1alpha1.AgentStatus{LastRunAgainstSeed: now, LastRunAgainstShoot: now, AppliedGeneration: applied(&fw)}
				Expect(client.IgnoreNotFound(s.client.Status().Patch(ctx, &fw, patch))).To(Succeed())
			}
			if meta.IsStatusConditionTrue(fw.Status.Conditions, firewallv1alpha1.ConditionReady) {
				ready = append(ready, fw.Name)
			}
		}
		return ready
	}
}

// bootServiceAccounts are the shoot's firewalls' boot ServiceAccounts: while
// one exists, its boot token authenticates.
func bootServiceAccounts(ctx SpecContext, s *seedEnv, namespace string) []corev1.ServiceAccount {
	list := &corev1.ServiceAccountList{}
	Expect(s.client.List(ctx, list, client.InNamespace(bootNamespace), client.MatchingLabels{constants.LabelFirewallNamespace: namespace})).To(Succeed())
	return list.Items
}

var _ = Describe("Extension firewall", func() {
	It("refuses an invalid providerConfig with the field and the value, creating nothing", func(ctx SpecContext) {
		namespace := "shoot--p--invalid"
		createShoot(ctx, seedA, namespace)
		ex := newExtension(namespace, `{"size":"s","image":"i","partition":"p","project":"p","networks":["n"],"internalPrefixes":["10.0.0/8"]}`)
		Expect(seedA.client.Create(ctx, ex)).To(Succeed())
		Eventually(lastErrorOf(ctx, seedA, ex)).WithTimeout(time.Minute).Should(ContainSubstring(`providerConfig.internalPrefixes[0]: Invalid value: "10.0.0/8"`))
		Expect(seedA.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "firewall"}, &firewallv1alpha1.FirewallDeployment{})).To(Satisfy(apierrors.IsNotFound))

		Eventually(func() error {
			if err := seedA.client.Get(ctx, client.ObjectKeyFromObject(ex), ex); err != nil {
				return err
			}
			ex.Spec.ProviderConfig.Raw = []byte(`{"size":"s","image":"i","partition":"p","project":"p","networks":["n"],"colour":"red"}`)
			metav1.SetMetaDataAnnotation(&ex.ObjectMeta, v1beta1constants.GardenerOperation, v1beta1constants.GardenerOperationReconcile)
			return seedA.client.Update(ctx, ex)
		}).Should(Succeed())
		Eventually(func() string {
			_ = seedA.client.Get(ctx, client.ObjectKeyFromObject(ex), ex)
			return ex.Status.LastError.Description
		}).WithTimeout(time.Minute).Should(ContainSubstring(`unknown field "colour"`))
	})

	It("stores what the providerConfig validation accepts: an egress rule without ips masquerades", func(ctx SpecContext) {
		namespace := "shoot--p--masquerade"
		Expect(seedA.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
		d := &firewallv1alpha1.FirewallDeployment{ObjectMeta: metav1.ObjectMeta{Name: "firewall", Namespace: namespace}}
		d.Spec.Selector = map[string]string{"app": "firewall"}
		d.Spec.Template.Metadata.Labels = map[string]string{"app": "firewall"}
		d.Spec.Replicas = 1
		d.Spec.Template.Spec.Size, d.Spec.Template.Spec.Image, d.Spec.Template.Spec.Partition, d.Spec.Template.Spec.Project = "s", "i", "p", "p"
		d.Spec.Template.Spec.Networks = []string{"internet"}
		d.Spec.Template.Spec.EgressRules = []firewallv1alpha1.EgressRuleSNAT{{Interface: "vrf104009"}}
		Expect(seedA.client.Create(ctx, d)).To(Succeed(), "the seed's CRD refuses an egress rule the garden admission accepts")
		Expect(seedA.client.Delete(ctx, d)).To(Succeed())
		Eventually(func() error {
			return seedA.client.Get(ctx, client.ObjectKeyFromObject(d), d)
		}).WithTimeout(time.Minute).Should(Satisfy(apierrors.IsNotFound), "gone, with whatever the manager made of it, before the next spec counts machines")
	})

	It("creates the firewall, migrates it to another seed without a second machine, and deletes it", func(ctx SpecContext) {
		namespace := "shoot--p--migrate"

		By("creating the firewall in seed A")
		createShoot(ctx, seedA, namespace)
		ex := newExtension(namespace, providerConfig)
		Expect(seedA.client.Create(ctx, ex)).To(Succeed())
		Eventually(beatAndCountReady(ctx, seedA, namespace)).WithTimeout(time.Minute).Should(HaveLen(1))
		Eventually(func() string {
			beatAndCountReady(ctx, seedA, namespace)()
			return lastOperation(ctx, seedA, ex)()
		}).WithTimeout(time.Minute).Should(MatchRegexp(`^(Create|Reconcile) Succeeded$`), "a retried first reconcile reports Reconcile")
		Eventually(func() gardencorev1beta1.ConditionStatus {
			Expect(seedA.client.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
			for _, c := range ex.Status.Conditions {
				if c.Type == gardencorev1beta1.ShootSystemComponentsHealthy {
					return c.Status
				}
			}
			return ""
		}).WithTimeout(time.Minute).Should(Equal(gardencorev1beta1.ConditionTrue), "the health check reports the Ready firewall")
		fwA := firewalls(ctx, seedA, namespace)[0]
		machineID := fwA.Status.MachineStatus.MachineID
		By("the agent's config on the machine turns on the DNS proxy of the providerConfig")
		Expect(fwA.Spec.UserdataContents).To(HaveLen(1))
		agentCfg, err := config.Parse([]byte(fwA.Spec.UserdataContents[0].Content))
		Expect(err).NotTo(HaveOccurred())
		Expect(agentCfg.DNS).NotTo(BeNil())
		Expect(agentCfg.DNS.Upstreams).To(Equal([]string{"10.250.0.53"}))
		Expect(provider.CreatedIn(namespace)).To(Equal(1), "one machine for this shoot")
		access := &corev1.Secret{}
		Expect(seedA.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "shoot-access-firewall-agent"}, access)).To(Succeed(),
			"the TokenRequestor's shoot access secret exists")
		Expect(access.Labels).To(HaveKeyWithValue("resources.gardener.cloud/purpose", "token-requestor"))
		Expect(string(access.Data["kubeconfig"])).To(ContainSubstring("server: "+seedA.cp.Config.Host),
			"it names the shoot's endpoint from the gardener secret, for the TokenRequestor to add the token")
		Expect(string(access.Data["kubeconfig"])).NotTo(Or(ContainSubstring("client-key-data"), ContainSubstring("token:")),
			"and no credential of the gardener secret")
		By("carrying the agent's CRDs and least-privilege RBAC into the shoot through a ManagedResource")
		mr, objects := shootManagedResource(ctx, seedA, namespace)
		Expect(mr.Spec.Class).To(BeNil(), "class shoot: the shoot's resource manager applies it")
		var kinds []string
		for _, obj := range objects {
			kinds = append(kinds, fmt.Sprintf("%T %s", obj, obj.GetName()))
			if role, ok := obj.(*rbacv1.Role); ok {
				Expect(role.Namespace).To(Equal("firewall"))
				for _, rule := range role.Rules {
					Expect(rule.Verbs).NotTo(ContainElement("*"))
					Expect(rule.Resources).NotTo(ContainElement(Or(Equal("*"), Equal("secrets"))), "the delivered bootstrap secret has a Role of its own, for its one name")
				}
			}
			if role, ok := obj.(*rbacv1.ClusterRole); ok {
				Expect(role.Rules).To(ConsistOf(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"list", "watch"}}),
					"cluster-wide, the agent only reads Services")
			}
			if svc, ok := obj.(*corev1.Service); ok {
				Expect(svc.Namespace).To(Equal("firewall"))
				Expect(svc.Spec.Selector).To(BeEmpty(), "the extension writes its EndpointSlices")
			}
			if binding, ok := obj.(*rbacv1.RoleBinding); ok {
				Expect(binding.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount", Name: "firewall-agent", Namespace: "kube-system"}))
			}
		}
		Expect(kinds).To(ConsistOf(
			"*v1.CustomResourceDefinition clusterwidenetworkpolicies.firewall.metal-firewall.io",
			"*v1.CustomResourceDefinition firewallmonitors.firewall.metal-firewall.io",
			"*v1.Namespace firewall", "*v1.Role firewall-agent", "*v1.RoleBinding firewall-agent",
			"*v1.ClusterRole firewall.metal-firewall.io:agent", "*v1.ClusterRoleBinding firewall.metal-firewall.io:agent",
			"*v1.Service firewall-agent-metrics",
			"*v1.ValidatingAdmissionPolicy firewall-agent.metal-firewall.io", "*v1.ValidatingAdmissionPolicyBinding firewall-agent.metal-firewall.io"),
			"the Service the firewalls' metrics addresses are published under, and the policy that refuses the agent tokens and EndpointSlices")

		By("no long-lived credential anywhere in the seed")
		all := &corev1.SecretList{}
		Expect(seedA.client.List(ctx, all)).To(Succeed())
		for _, s := range all.Items {
			Expect(s.Type).NotTo(Equal(corev1.SecretTypeServiceAccountToken), "%s/%s", s.Namespace, s.Name)
			Expect(s.Type).NotTo(Equal(bootstraptokenapi.SecretTypeBootstrapToken), "%s/%s: a bootstrap token's group may become a node on a ManagedSeed", s.Namespace, s.Name)
		}
		Expect(bootServiceAccounts(ctx, seedA, namespace)).To(BeEmpty(), "the boot identity went when the agent connected: its tokens authenticate no more")

		By("migrating away from seed A")
		Expect(seedA.client.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
		metav1.SetMetaDataAnnotation(&ex.ObjectMeta, v1beta1constants.GardenerOperation, v1beta1constants.GardenerOperationMigrate)
		Expect(seedA.client.Update(ctx, ex)).To(Succeed())
		Eventually(lastOperation(ctx, seedA, ex)).WithTimeout(time.Minute).Should(Equal("Migrate Succeeded"))
		state := ex.Status.State.DeepCopy()
		Expect(string(state.Raw)).To(ContainSubstring(machineID))
		// gardenlet deletes the Extension shallowly after the migration.
		Expect(seedA.client.Delete(ctx, ex)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(seedA.client.Get(ctx, client.ObjectKeyFromObject(ex), ex)) }).Should(BeTrue())
		Expect(firewalls(ctx, seedA, namespace)).To(BeEmpty(), "no firewall object is left in seed A")
		Expect(seedA.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "firewall"}, &firewallv1alpha1.FirewallDeployment{})).To(Satisfy(apierrors.IsNotFound))
		Expect(bootServiceAccounts(ctx, seedA, namespace)).To(BeEmpty(), "seed A's boot tokens are revoked")
		Expect(seedA.client.Get(ctx, client.ObjectKey{Name: firewallv1alpha1.AgentUserName(namespace, fwA.Name)}, &rbacv1.ClusterRoleBinding{})).To(Satisfy(apierrors.IsNotFound))
		Expect(provider.IDs()).To(ContainElement(machineID), "the machine keeps running through the migration")
		Expect(seedA.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: constants.ShootManagedResourceName}, &resourcesv1alpha1.ManagedResource{})).
			To(Satisfy(apierrors.IsNotFound), "seed A no longer manages the shoot's objects")

		By("restoring in seed B")
		createShoot(ctx, seedB, namespace)
		// As gardenlet restores: create with wait-for-state, write the state, then annotate restore.
		exB := newExtension(namespace, providerConfig)
		Expect(framework.PrepareRestore(ctx, seedB.client, exB, state, time.Minute)).To(Succeed())
		annotate(ctx, seedB, exB, v1beta1constants.GardenerOperationRestore, nil)
		// The restore is done once the firewall's agent reports into seed B.
		Eventually(func() string {
			beatAndCountReady(ctx, seedB, namespace)()
			return lastOperation(ctx, seedB, exB)()
		}).WithTimeout(time.Minute).Should(MatchRegexp(`^(Restore|Reconcile) Succeeded$`))
		Expect(exB.Status.State).To(BeNil(), "once restored, the state is cleared: an old one must not pass for a part of the next migration's")

		Eventually(beatAndCountReady(ctx, seedB, namespace)).WithTimeout(time.Minute).Should(Equal([]string{fwA.Name}))
		fwB := firewalls(ctx, seedB, namespace)[0]
		Expect(fwB.Status.MachineStatus.MachineID).To(Equal(machineID), "the same machine, found by its ID")
		Expect(metav1.GetControllerOf(&fwB)).NotTo(BeNil(), "the restored Firewall was adopted")
		Consistently(func() int { return provider.CreatedIn(namespace) }).WithTimeout(3*time.Second).Should(Equal(1), "never a second machine")
		Expect(provider.IDs()).To(ContainElement(machineID))
		shootManagedResource(ctx, seedB, namespace)

		By("deleting the firewall in seed B")
		Expect(seedB.client.Delete(ctx, exB)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(seedB.client.Get(ctx, client.ObjectKeyFromObject(exB), exB)) }).WithTimeout(time.Minute).Should(BeTrue())
		Expect(provider.IDs()).NotTo(ContainElement(machineID), "the machine is released")
		Expect(bootServiceAccounts(ctx, seedB, namespace)).To(BeEmpty())
		Expect(seedB.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "shoot-access-firewall-agent"}, &corev1.Secret{})).To(Satisfy(apierrors.IsNotFound))
		Expect(seedB.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: constants.ShootManagedResourceName}, &resourcesv1alpha1.ManagedResource{})).To(Satisfy(apierrors.IsNotFound))
	})
})

// failingSetDeletes is a seed client that dies, as an extension killed
// mid-way would, when it comes to deleting a FirewallSet.
type failingSetDeletes struct{ client.Client }

func (c failingSetDeletes) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if _, ok := obj.(*firewallv1alpha1.FirewallSet); ok {
		return errors.New("killed before deleting the FirewallSet")
	}
	return c.Client.Delete(ctx, obj, opts...)
}

var _ = Describe("Migrate killed half-way", func() {
	It("keeps the state of the first run: the Firewalls it already deleted are not forgotten", func(ctx SpecContext) {
		namespace := "shoot--p--killed"
		createShoot(ctx, seedA, namespace)
		ex := newExtension(namespace, providerConfig)
		Expect(seedA.client.Create(ctx, ex)).To(Succeed())
		var machineID string
		Eventually(func(g Gomega) {
			fws := firewalls(ctx, seedA, namespace)
			g.Expect(fws).To(HaveLen(1))
			g.Expect(fws[0].Status.MachineStatus).NotTo(BeNil())
			machineID = fws[0].Status.MachineStatus.MachineID
		}).WithTimeout(time.Minute).Should(Succeed())
		Eventually(func() string {
			beatAndCountReady(ctx, seedA, namespace)()
			return lastOperation(ctx, seedA, ex)()
		}).WithTimeout(time.Minute).Should(MatchRegexp(`^(Create|Reconcile) Succeeded$`))

		By("the first run saves the state, deletes the Firewall and dies")
		Expect(seedA.client.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
		err := firewallcontroller.NewActuator(failingSetDeletes{seedA.client}, seedA.client, firewallcontroller.Config{BootNamespace: bootNamespace}).Migrate(ctx, logr.Discard(), ex)
		Expect(err).To(MatchError(ContainSubstring("killed before deleting the FirewallSet")))
		Eventually(func() []firewallv1alpha1.Firewall { return firewalls(ctx, seedA, namespace) }).Should(BeEmpty())

		By("the restarted extension runs Migrate again")
		Expect(seedA.client.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
		Expect(firewallcontroller.NewActuator(seedA.client, seedA.client, firewallcontroller.Config{BootNamespace: bootNamespace}).Migrate(ctx, logr.Discard(), ex)).To(Succeed())
		Expect(seedA.client.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
		Expect(string(ex.Status.State.Raw)).To(ContainSubstring(machineID), "the deleted Firewall's machine is still in the state")
		sets := &firewallv1alpha1.FirewallSetList{}
		Expect(seedA.client.List(ctx, sets, client.InNamespace(namespace))).To(Succeed())
		Expect(sets.Items).To(BeEmpty())
	})
})
