package manager_test

import (
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	firewallmanager "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/firewallmachine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/machinetest"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
)

var _ = Describe("Firewall manager with two replicas", func() {
	It("gives each firewall its own machine and boot identity, and rolls them without ever fewer than two Ready", func(ctx SpecContext) {
		namespace := newNamespace(ctx)
		bootNamespace := newNamespace(ctx)
		provider := machinetest.NewMemory()
		Expect(testClient.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "bootstrap", Namespace: namespace},
			Data:       map[string][]byte{"kubeconfig": []byte("bootstrap-kubeconfig")},
		})).To(Succeed())
		startManager(namespace, provider, func(o *firewallmanager.Options) {
			o.Bootstrap = &firewallmachine.Bootstrap{Server: seed.Config.Host, CAData: seed.Config.CAData, Namespace: bootNamespace}
		})
		deployment := newDeployment(namespace, firewallv1alpha1.StrategyRollingUpdate)
		deployment.Spec.Replicas = 2
		Expect(testClient.Create(ctx, deployment)).To(Succeed())

		Eventually(provider.IDs).WithTimeout(time.Minute).Should(HaveLen(2))
		Eventually(firewallNames(ctx, namespace)).Should(HaveLen(2))
		var users, want []string
		for _, id := range provider.IDs() {
			// The manager's boot kubeconfig comes after the template's files.
			var kubeconfig []byte
			for _, f := range provider.Userdata(id) {
				if f.Path == agentconfigv1alpha1.BootstrapKubeconfigPath {
					kubeconfig = f.Content
				}
			}
			cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
			Expect(err).NotTo(HaveOccurred())
			cs, err := kubernetes.NewForConfig(cfg)
			Expect(err).NotTo(HaveOccurred())
			review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			users = append(users, review.Status.UserInfo.Username)
		}
		for _, name := range firewallNames(ctx, namespace)() {
			want = append(want, credentials.BootUser(bootNamespace, namespace, name))
		}
		Expect(users).To(ConsistOf(want), "each machine boots with its own firewall's identity")

		Eventually(readyFirewalls(ctx, namespace)).WithTimeout(time.Minute).Should(HaveLen(2))
		Eventually(func() []int32 { return distances(ctx, namespace) }).Should(ConsistOf(int32(0), int32(1)))
		oldSet := setNames(ctx, namespace)()
		Expect(oldSet).To(HaveLen(1))
		oldFirewalls := firewallNames(ctx, namespace)()

		By("rolling: the new set comes in at a longer distance, the old one keeps two Ready until it goes")
		rollImage(ctx, deployment)
		Eventually(setNames(ctx, namespace)).Should(HaveLen(2))
		Eventually(func() []int32 { return distances(ctx, namespace) }).Should(ConsistOf(int32(0), int32(1), int32(3), int32(4)))

		Consistently(func(g Gomega) {
			heartbeatIf(ctx, namespace, func(fw *firewallv1alpha1.Firewall) bool {
				return !strings.HasSuffix(fw.Name, "-1") || slices.Contains(oldFirewalls, fw.Name)
			})
			g.Expect(setNames(ctx, namespace)()).To(ContainElement(oldSet[0]), "one new firewall Ready is not enough")
		}).WithTimeout(4 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

		var fewest, polls int
		fewest = 2
		Eventually(func(g Gomega) {
			polls++
			ready := len(readyFirewalls(ctx, namespace)())
			fewest = min(fewest, ready)
			g.Expect(setNames(ctx, namespace)()).To(And(HaveLen(1), Not(ContainElement(oldSet[0]))))
			g.Expect(firewallNames(ctx, namespace)()).To(HaveLen(2))
		}).WithTimeout(2 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
		Expect(fewest).To(Equal(2), "never fewer than replicas Ready firewalls during the roll (%d polls)", polls)
		Expect(firewallNames(ctx, namespace)()).NotTo(ContainElements(oldFirewalls))
		Eventually(func() []int32 { return distances(ctx, namespace) }).Should(ConsistOf(int32(0), int32(1)), "the new set settles at the shortest distance")
		Eventually(provider.IDs).Should(HaveLen(2))
		Expect(provider.Created()).To(Equal(4))
		for _, fw := range firewalls(ctx, namespace) {
			Expect(fw.Spec.Image).To(Equal("firewall-ubuntu-3.1"))
			Expect(meta.IsStatusConditionTrue(fw.Status.Conditions, firewallv1alpha1.ConditionReady)).To(BeTrue())
		}
	})
})

var _ = Describe("Replacing one of two firewalls", func() {
	It("moves the traffic to the healthy one and keeps the failed one until its replacement is Ready", func(ctx SpecContext) {
		namespace := newNamespace(ctx)
		provider := machinetest.NewMemory()
		Expect(testClient.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "bootstrap", Namespace: namespace},
			Data:       map[string][]byte{"kubeconfig": []byte("bootstrap-kubeconfig")},
		})).To(Succeed())
		startManager(namespace, provider, func(o *firewallmanager.Options) {
			o.CreateTimeout, o.HealthTimeout, o.HeartbeatTimeout = time.Hour, time.Hour, 3*time.Second
			o.MaxReplacements, o.ReplacementBackoff = 2, time.Second
		})
		deployment := newDeployment(namespace, firewallv1alpha1.StrategyRollingUpdate)
		deployment.Spec.Replicas = 2
		// A replacement that has never been Ready is measured against the
		// create timeout, however late its first heartbeat comes.
		deployment.Spec.HealthTimeout = &metav1.Duration{Duration: 15 * time.Second}
		Expect(testClient.Create(ctx, deployment)).To(Succeed())
		Eventually(readyFirewalls(ctx, namespace)).WithTimeout(time.Minute).Should(HaveLen(2))
		byName := func() map[string]firewallv1alpha1.Firewall {
			out := map[string]firewallv1alpha1.Firewall{}
			for _, fw := range firewalls(ctx, namespace) {
				out[fw.Name] = fw
			}
			return out
		}
		// The one that fails is the one with the traffic.
		// Both from one read: the set reorders distances one Firewall at a time, so a second
		// read can see (1, 1) on the way from (0, 1) to (1, 0).
		var healthy, failing string
		Eventually(func(g Gomega) {
			healthy, failing = "", ""
			for name, fw := range byName() {
				switch fw.Spec.Distance {
				case 0:
					failing = name
				case 1:
					healthy = name
				}
			}
			g.Expect(failing).NotTo(BeEmpty(), "a Firewall at distance 0")
			g.Expect(healthy).NotTo(BeEmpty(), "a Firewall at distance 1")
		}).Should(Succeed())
		beatOnly := func(keep ...string) {
			heartbeatIf(ctx, namespace, func(fw *firewallv1alpha1.Firewall) bool { return slices.Contains(keep, fw.Name) })
		}

		By("the failing one's agent goes silent: a replacement comes beside it, the healthy one attracts the traffic")
		Eventually(func() []string {
			beatOnly(healthy)
			return firewallNames(ctx, namespace)()
		}).WithTimeout(time.Minute).Should(HaveLen(3))
		Eventually(func() int32 {
			beatOnly(healthy)
			return byName()[healthy].Spec.Distance
		}).Should(BeZero())
		var replacement string
		for _, n := range firewallNames(ctx, namespace)() {
			if n != healthy && n != failing {
				replacement = n
			}
		}
		Consistently(func(g Gomega) {
			beatOnly(healthy)
			fws := byName()
			g.Expect(fws).To(HaveKey(failing), "kept: it may still forward")
			g.Expect(fws[failing].DeletionTimestamp).To(BeNil())
			g.Expect(fws[healthy].Spec.Distance).To(BeZero())
		}).WithTimeout(4 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

		By("the replacement is Ready: the failed one goes")
		Eventually(func() []string {
			beatOnly(healthy, replacement)
			return firewallNames(ctx, namespace)()
		}).WithTimeout(time.Minute).Should(ConsistOf(healthy, replacement))
		Eventually(func() []int32 {
			beatOnly(healthy, replacement)
			return distances(ctx, namespace)
		}).Should(ConsistOf(int32(0), int32(1)))
		Expect(byName()[healthy].Spec.Distance).To(BeZero(), "the traffic stays on the firewall that has it")
		Eventually(provider.IDs).Should(HaveLen(2))
	})
})
