package manager_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	firewallmanager "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/firewallmachine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/machinetest"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
)

var _ = Describe("Firewall manager", func() {
	var (
		namespace  string
		provider   *machinetest.Memory
		deployment *firewallv1alpha1.FirewallDeployment
	)

	BeforeEach(func(ctx SpecContext) {
		namespace, provider = newShootNamespace(ctx)
		deployment = newDeployment(namespace, firewallv1alpha1.StrategyRollingUpdate)
	})

	updateDeployment := func(ctx SpecContext, mutate func(*firewallv1alpha1.FirewallDeployment)) {
		Eventually(func() error {
			if err := testClient.Get(ctx, client.ObjectKeyFromObject(deployment), deployment); err != nil {
				return err
			}
			mutate(deployment)
			return testClient.Update(ctx, deployment)
		}).Should(Succeed())
	}

	It("creates, scales and deletes firewalls, one machine each, with resolved userdata", func(ctx SpecContext) {
		startManager(namespace, provider)
		Expect(testClient.Create(ctx, deployment)).To(Succeed())

		Eventually(readyFirewalls(ctx, namespace)).WithTimeout(time.Minute).Should(HaveLen(1))
		Expect(provider.IDs()).To(HaveLen(1))
		files := provider.Userdata(provider.IDs()[0])
		Expect(files).To(HaveLen(2))
		Expect(string(files[1].Content)).To(Equal("bootstrap-kubeconfig"), "the secretRef is read at provisioning time")
		Expect(files[1].Mode.Perm()).To(BeEquivalentTo(0o600))
		Eventually(func(g Gomega) {
			g.Expect(testClient.Get(ctx, client.ObjectKeyFromObject(deployment), deployment)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(deployment.Status.Conditions, firewallv1alpha1.ConditionAvailable)).To(BeTrue())
			g.Expect(deployment.Status.ReadyReplicas).To(BeEquivalentTo(1))
		}).Should(Succeed())

		updateDeployment(ctx, func(d *firewallv1alpha1.FirewallDeployment) { d.Spec.Replicas = 2 })
		Eventually(readyFirewalls(ctx, namespace)).WithTimeout(time.Minute).Should(HaveLen(2))
		Expect(provider.IDs()).To(HaveLen(2))
		Expect(firewallSets(ctx, namespace)).To(HaveLen(1), "scaling is no rollout")

		updateDeployment(ctx, func(d *firewallv1alpha1.FirewallDeployment) { d.Spec.Replicas = 1 })
		Eventually(provider.IDs).Should(HaveLen(1))
		Eventually(firewallNames(ctx, namespace)).Should(HaveLen(1))

		Expect(testClient.Delete(ctx, deployment)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(testClient.Get(ctx, client.ObjectKeyFromObject(deployment), deployment))
		}).WithTimeout(time.Minute).Should(BeTrue())
		Expect(provider.IDs()).To(BeEmpty(), "every machine is released before the finalizers go")
		Expect(firewallNames(ctx, namespace)()).To(BeEmpty())
		Expect(setNames(ctx, namespace)()).To(BeEmpty())
		Expect(provider.Created()).To(Equal(2))
	})

	It("rolls a new set on an image change and removes the old one only when the new one is Ready", func(ctx SpecContext) {
		startManager(namespace, provider)
		Expect(testClient.Create(ctx, deployment)).To(Succeed())
		Eventually(readyFirewalls(ctx, namespace)).WithTimeout(time.Minute).Should(HaveLen(1))
		oldSet := setNames(ctx, namespace)()
		Expect(oldSet).To(HaveLen(1))

		By("changing a mutable part: the rules flow into the running firewall")
		updateDeployment(ctx, func(d *firewallv1alpha1.FirewallDeployment) {
			d.Spec.Template.Spec.RateLimits = []firewallv1alpha1.RateLimit{{Interface: "eth1", Rate: 10}}
		})
		Eventually(func(g Gomega) {
			fws := firewalls(ctx, namespace)
			g.Expect(fws).To(HaveLen(1))
			g.Expect(fws[0].Spec.RateLimits).To(HaveLen(1))
		}).Should(Succeed())
		Expect(setNames(ctx, namespace)()).To(Equal(oldSet))
		Expect(provider.Created()).To(Equal(1))

		By("changing the image: a new set next to the old one")
		updateDeployment(ctx, func(d *firewallv1alpha1.FirewallDeployment) { d.Spec.Template.Spec.Image = "firewall-ubuntu-3.1" })
		Eventually(setNames(ctx, namespace)).Should(HaveLen(2))
		Eventually(provider.IDs).Should(HaveLen(2))
		// Without a heartbeat the new firewall is not Ready: the old one stays.
		Consistently(setNames(ctx, namespace)).WithTimeout(3 * time.Second).Should(ContainElement(oldSet[0]))

		Eventually(func() []string {
			heartbeat(ctx, namespace)
			return setNames(ctx, namespace)()
		}).WithTimeout(time.Minute).Should(And(HaveLen(1), Not(ContainElement(oldSet[0]))))
		Eventually(provider.IDs).Should(HaveLen(1))
		Expect(firewalls(ctx, namespace)[0].Spec.Image).To(Equal("firewall-ubuntu-3.1"))
		Expect(provider.Created()).To(Equal(2))
		Expect(testClient.Get(ctx, client.ObjectKeyFromObject(deployment), deployment)).To(Succeed())
		Expect(deployment.Status.ObservedRevision).To(BeEquivalentTo(2))
	})

	It("reports a rollout that misses its progress deadline and keeps the old set", func(ctx SpecContext) {
		startManager(namespace, provider)
		Expect(testClient.Create(ctx, deployment)).To(Succeed())
		Eventually(readyFirewalls(ctx, namespace)).WithTimeout(time.Minute).Should(HaveLen(1))

		updateDeployment(ctx, func(d *firewallv1alpha1.FirewallDeployment) {
			d.Annotations = map[string]string{firewallv1alpha1.AnnotationRoll: "1"}
		})
		Eventually(func(g Gomega) {
			g.Expect(testClient.Get(ctx, client.ObjectKeyFromObject(deployment), deployment)).To(Succeed())
			c := meta.FindStatusCondition(deployment.Status.Conditions, firewallv1alpha1.ConditionProgressing)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal("ProgressDeadlineExceeded"))
		}).WithTimeout(time.Minute).Should(Succeed())
		Expect(setNames(ctx, namespace)()).To(HaveLen(2), "the old set stays while the new one is not Ready")
	})

	It("recreates: the old firewall goes before the new one comes", func(ctx SpecContext) {
		deployment.Spec.Strategy = firewallv1alpha1.StrategyRecreate
		startManager(namespace, provider)
		Expect(testClient.Create(ctx, deployment)).To(Succeed())
		Eventually(readyFirewalls(ctx, namespace)).WithTimeout(time.Minute).Should(HaveLen(1))
		first := provider.IDs()

		updateDeployment(ctx, func(d *firewallv1alpha1.FirewallDeployment) { d.Spec.Template.Spec.Size = "c2-xlarge-x86" })
		Eventually(func() []string {
			ids := provider.IDs()
			Expect(len(ids)).To(BeNumerically("<=", 1), "never two machines with Recreate")
			return ids
		}).WithTimeout(time.Minute).Should(And(HaveLen(1), Not(Equal(first))))
		Eventually(readyFirewalls(ctx, namespace)).WithTimeout(time.Minute).Should(HaveLen(1))
		Expect(firewalls(ctx, namespace)[0].Spec.Size).To(Equal("c2-xlarge-x86"))
	})

	It("leaves paused objects alone, their finalizers included", func(ctx SpecContext) {
		startManager(namespace, provider)
		Expect(testClient.Create(ctx, deployment)).To(Succeed())
		Eventually(readyFirewalls(ctx, namespace)).WithTimeout(time.Minute).Should(HaveLen(1))

		pause := func(obj client.Object) {
			Eventually(func() error {
				if err := testClient.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
					return err
				}
				a := obj.GetAnnotations()
				if a == nil {
					a = map[string]string{}
				}
				a[firewallv1alpha1.AnnotationPaused] = "true"
				obj.SetAnnotations(a)
				return testClient.Update(ctx, obj)
			}).Should(Succeed())
		}
		pause(deployment)
		set := firewallSets(ctx, namespace)[0]
		pause(&set)
		fw := firewalls(ctx, namespace)[0]
		pause(&fw)

		updateDeployment(ctx, func(d *firewallv1alpha1.FirewallDeployment) { d.Spec.Template.Spec.Image = "firewall-ubuntu-3.1" })
		Expect(testClient.Delete(ctx, &fw)).To(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(setNames(ctx, namespace)()).To(HaveLen(1))
			g.Expect(testClient.Get(ctx, client.ObjectKeyFromObject(&fw), &fw)).To(Succeed(), "the finalizer stays on a paused Firewall")
			g.Expect(provider.IDs()).To(HaveLen(1), "the machine of a paused Firewall is not released")
		}).WithTimeout(5 * time.Second).Should(Succeed())

		By("unpausing the Firewall: its deletion completes")
		Eventually(func() error {
			if err := testClient.Get(ctx, client.ObjectKeyFromObject(&fw), &fw); err != nil {
				return err
			}
			delete(fw.Annotations, firewallv1alpha1.AnnotationPaused)
			return testClient.Update(ctx, &fw)
		}).Should(Succeed())
		Eventually(provider.IDs).Should(BeEmpty())
	})

	It("adopts an orphaned Firewall with a machine ID instead of creating a machine", func(ctx SpecContext) {
		// The state a restore leaves behind: a machine, and a Firewall that
		// knows its ID but has no owner yet.
		set := newDeployment(namespace, "")
		orphan := &firewallv1alpha1.Firewall{
			ObjectMeta: metav1.ObjectMeta{Name: "restored-0", Namespace: namespace, Labels: selector},
			Spec:       set.Spec.Template.Spec,
		}
		m, err := provider.Create(ctx, orphan, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(testClient.Create(ctx, orphan)).To(Succeed())
		orphan.Status.MachineStatus = &firewallv1alpha1.MachineStatus{MachineID: m.ID}
		Expect(testClient.Status().Update(ctx, orphan)).To(Succeed())

		fwSet := &firewallv1alpha1.FirewallSet{
			ObjectMeta: metav1.ObjectMeta{Name: "restored", Namespace: namespace},
			Spec:       firewallv1alpha1.FirewallSetSpec{Replicas: 1, Selector: selector, Template: set.Spec.Template},
		}
		Expect(testClient.Create(ctx, fwSet)).To(Succeed())
		startManager(namespace, provider)

		Eventually(readyFirewalls(ctx, namespace)).WithTimeout(time.Minute).Should(Equal([]string{"restored-0"}))
		// The Firewall reconciler can make it Ready before the set's
		// reconciler has adopted it: the two run independently.
		Eventually(func(g Gomega) {
			g.Expect(testClient.Get(ctx, client.ObjectKeyFromObject(orphan), orphan)).To(Succeed())
			g.Expect(metav1.GetControllerOf(orphan)).NotTo(BeNil())
			g.Expect(metav1.GetControllerOf(orphan).UID).To(Equal(fwSet.UID))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Consistently(provider.IDs).WithTimeout(3 * time.Second).Should(Equal([]string{m.ID}))
		Expect(provider.Created()).To(Equal(1), "only the machine the test created")
	})

	It("converges with exactly the expected machines after a restart mid-rollout", func(ctx SpecContext) {
		stop := startManager(namespace, provider)
		Expect(testClient.Create(ctx, deployment)).To(Succeed())
		Eventually(readyFirewalls(ctx, namespace)).WithTimeout(time.Minute).Should(HaveLen(1))

		updateDeployment(ctx, func(d *firewallv1alpha1.FirewallDeployment) { d.Spec.Template.Spec.Image = "firewall-ubuntu-3.1" })
		Eventually(provider.IDs).Should(HaveLen(2))
		stop()

		startManager(namespace, provider)
		Eventually(func() []string {
			heartbeat(ctx, namespace)
			return setNames(ctx, namespace)()
		}).WithTimeout(time.Minute).Should(HaveLen(1))
		Eventually(provider.IDs).Should(HaveLen(1))
		Expect(provider.Created()).To(Equal(2), "the restarted manager created no machine")
		Expect(firewalls(ctx, namespace)[0].Spec.Image).To(Equal("firewall-ubuntu-3.1"))
	})

	It("refuses an invalid spec with the field and the value, creating nothing", func(ctx SpecContext) {
		startManager(namespace, provider)
		deployment.Spec.Template.Spec.InternalPrefixes = []string{"10.0.1/24"}
		Expect(testClient.Create(ctx, deployment)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(testClient.Get(ctx, client.ObjectKeyFromObject(deployment), deployment)).To(Succeed())
			c := meta.FindStatusCondition(deployment.Status.Conditions, firewallv1alpha1.ConditionProgressing)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal("InvalidSpec"))
			g.Expect(c.Message).To(ContainSubstring(`spec.template.spec.internalPrefixes[0]: Invalid value: "10.0.1/24"`))
		}).Should(Succeed())
		Consistently(setNames(ctx, namespace)).WithTimeout(2 * time.Second).Should(BeEmpty())
		Expect(provider.Created()).To(BeZero())
	})

	It("gives each firewall a boot kubeconfig and RBAC, and revokes the token once the agent is connected", func(ctx SpecContext) {
		bootNamespace := newNamespace(ctx)
		startManager(namespace, provider, func(o *firewallmanager.Options) {
			o.Bootstrap = &firewallmachine.Bootstrap{Server: seed.Config.Host, CAData: seed.Config.CAData, Namespace: bootNamespace, SecretNames: []string{"shoot-access-firewall-agent"}}
		})
		Expect(testClient.Create(ctx, deployment)).To(Succeed())
		Eventually(provider.IDs).WithTimeout(time.Minute).Should(HaveLen(1))
		fw := firewalls(ctx, namespace)[0]

		var kubeconfig []byte
		for _, f := range provider.Userdata(provider.IDs()[0]) {
			if f.Path == agentconfigv1alpha1.BootstrapKubeconfigPath {
				kubeconfig = f.Content
				Expect(f.Mode.Perm()).To(BeEquivalentTo(0o600))
			}
		}
		Expect(kubeconfig).NotTo(BeEmpty(), "the machine got a boot kubeconfig")
		cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		cs, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(review.Status.UserInfo.Username).To(Equal(credentials.BootUser(bootNamespace, namespace, fw.Name)))
		Expect(review.Status.UserInfo.Groups).NotTo(ContainElement("system:bootstrappers"), "the group every Gardener seed lets become a node")
		Expect(review.Status.UserInfo.Groups).To(ConsistOf("system:serviceaccounts", "system:serviceaccounts:"+bootNamespace, "system:authenticated"))

		role := &rbacv1.Role{}
		Expect(testClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: firewallv1alpha1.AgentUserName(namespace, fw.Name)}, role)).To(Succeed())
		Expect(role.Rules).To(ContainElement(HaveField("ResourceNames", Equal([]string{"shoot-access-firewall-agent"}))))

		By("the agent connects: the boot ServiceAccount goes, and with it every token")
		Eventually(readyFirewalls(ctx, namespace)).WithTimeout(time.Minute).Should(HaveLen(1))
		Eventually(func() error {
			_, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			return err
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Satisfy(apierrors.IsUnauthorized), "kube-apiserver caches token authentications for a few seconds")

		By("deleting the deployment removes the RBAC with the machine")
		Expect(testClient.Delete(ctx, deployment)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(testClient.Get(ctx, client.ObjectKeyFromObject(role), role))
		}).WithTimeout(time.Minute).Should(BeTrue())
		Expect(testClient.Get(ctx, client.ObjectKey{Name: firewallv1alpha1.AgentUserName(namespace, fw.Name)}, &rbacv1.ClusterRoleBinding{})).To(Satisfy(apierrors.IsNotFound))
	})

	It("creates no machine while the seed grants the boot identity more than its CSR, and says why", func(ctx SpecContext) {
		bootNamespace := newNamespace(ctx)
		careless := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "careless-"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:certificates.k8s.io:certificatesigningrequests:nodeclient"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts:" + bootNamespace}},
		}
		Expect(testClient.Create(ctx, careless)).To(Succeed())
		// What no fixed list names, found by asking the seed (the sweep).
		jobs := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "careless-"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"create"}}}}
		Expect(testClient.Create(ctx, jobs)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(testClient.Delete(ctx, jobs)).To(Succeed()) })
		carelessJobs := careless.DeepCopy()
		carelessJobs.ResourceVersion, carelessJobs.Name, carelessJobs.RoleRef.Name = "", "", jobs.Name
		Expect(testClient.Create(ctx, carelessJobs)).To(Succeed())
		startManager(namespace, provider, func(o *firewallmanager.Options) {
			o.Bootstrap = &firewallmachine.Bootstrap{Server: seed.Config.Host, CAData: seed.Config.CAData, Namespace: bootNamespace}
		})
		Expect(testClient.Create(ctx, deployment)).To(Succeed())
		Eventually(func(g Gomega) {
			fws := firewalls(ctx, namespace)
			g.Expect(fws).To(HaveLen(1))
			c := meta.FindStatusCondition(fws[0].Status.Conditions, firewallv1alpha1.ConditionCreated)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal("UnsafeBootIdentity"))
			g.Expect(c.Message).To(ContainSubstring("may create certificatesigningrequests/nodeclient"))
			g.Expect(c.Message).To(ContainSubstring("create jobs.batch"))
		}).WithTimeout(time.Minute).Should(Succeed())
		Expect(provider.Created()).To(BeZero(), "no machine with such a credential")
		list := &corev1.ServiceAccountList{}
		Expect(testClient.List(ctx, list, client.InNamespace(bootNamespace))).To(Succeed())
		Expect(list.Items).To(BeEmpty(), "no token was minted")

		By("once the binding is gone, the machine comes")
		Expect(testClient.Delete(ctx, careless)).To(Succeed())
		Expect(testClient.Delete(ctx, carelessJobs)).To(Succeed())
		// The manager asks again every minute; the groups' answer is kept a minute.
		Eventually(provider.IDs).WithTimeout(3 * time.Minute).Should(HaveLen(1))
	})
})
