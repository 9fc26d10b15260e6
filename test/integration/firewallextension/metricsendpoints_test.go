package firewallextension_test

import (
	"context"
	"time"

	resourcesv1alpha1configv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	"github.com/gardener/gardener/pkg/resourcemanager/controller/managedresource"
	resourcemanagerpredicate "github.com/gardener/gardener/pkg/resourcemanager/predicate"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	firewallcontroller "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/firewall"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/metricsendpoints"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

// Issue #30: the agent's shoot identity wrote the EndpointSlices of the
// metrics Service. Now the extension does, from the address each agent
// reports in the seed, through a ManagedResource that Gardener's own
// ManagedResource controller applies into the shoot (here: the seed itself
// stands in for the shoot).
var _ = Describe("the firewalls' metrics addresses in the shoot", func() {
	It("publishes one EndpointSlice per firewall that reports a usable address, follows changes, stays still during a migration and goes with the last firewall", func(ctx SpecContext) {
		crds := append(testenv.SeedCRDPaths(), testenv.ShootCRDPaths()...)
		cp, err := testenv.Start(testenv.Options{Name: "metrics", CRDDirectoryPaths: crds})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(cp.Stop()).To(Succeed()) })
		c, err := client.New(cp.Config, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())

		By("the shoot's namespace and metrics Service, as the extension's shoot ManagedResource has them")
		objects, err := firewallcontroller.ShootObjects("", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: constants.ShootNamespace}})).To(Succeed())
		for _, obj := range objects {
			if svc, ok := obj.(*corev1.Service); ok {
				Expect(c.Create(ctx, svc)).To(Succeed())
			}
		}

		By("the controller and the shoot's gardener-resource-manager")
		mgr, err := manager.New(cp.Config, manager.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
			Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
		Expect(err).NotTo(HaveOccurred())
		Expect((&metricsendpoints.Reconciler{}).AddToManager(mgr)).To(Succeed())
		shoot, err := cluster.New(cp.Config, func(o *cluster.Options) { o.Scheme = kubernetes.ShootScheme })
		Expect(err).NotTo(HaveOccurred())
		Expect(mgr.Add(shoot)).To(Succeed())
		Expect((&managedresource.Reconciler{
			Config: resourcesv1alpha1configv1alpha1.ManagedResourceControllerConfig{
				ConcurrentSyncs: ptr.To(2), SyncPeriod: &metav1.Duration{Duration: time.Minute}, ManagedByLabelValue: ptr.To("gardener"),
			},
			ClassFilter: resourcemanagerpredicate.NewClassFilter(""),
		}).AddToManager(mgr, mgr, shoot)).To(Succeed())
		mgrCtx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mgr.Start(mgrCtx) }()
		DeferCleanup(func() { stop(); Expect(<-done).To(Succeed()) })

		By("four firewalls: IPv4, IPv6, a loopback address, none reported")
		namespace := "shoot--p--metrics"
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
		report := func(name, addr string) {
			GinkgoHelper()
			fw := &firewallv1alpha1.Firewall{}
			err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, fw)
			if apierrors.IsNotFound(err) {
				fw = &firewallv1alpha1.Firewall{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
					Spec: firewallv1alpha1.FirewallSpec{Size: "s", Image: "i", Partition: "p", Project: "p", Networks: []string{"internet"}}}
				Expect(c.Create(ctx, fw)).To(Succeed())
			} else {
				Expect(err).NotTo(HaveOccurred())
			}
			if addr == "" {
				return
			}
			patch := client.MergeFrom(fw.DeepCopy())
			fw.Status.AgentStatus = &firewallv1alpha1.AgentStatus{LastRunAgainstSeed: &metav1.Time{Time: time.Now()}, MetricsAddress: addr}
			Expect(c.Status().Patch(ctx, fw, patch)).To(Succeed())
		}
		report("fw-a", "10.0.1.1:2112")
		report("fw-b", "[fd00::1]:9100")
		report("fw-c", "127.0.0.1:2112")
		report("fw-d", "")

		type published struct {
			Type  discoveryv1.AddressType
			Addr  string
			Port  int32
			Owner string
		}
		inShoot := func(g Gomega) map[string]published {
			list := &discoveryv1.EndpointSliceList{}
			g.Expect(c.List(ctx, list, client.InNamespace(constants.ShootNamespace),
				client.MatchingLabels{discoveryv1.LabelServiceName: firewallv1alpha1.MetricsServiceName})).To(Succeed())
			out := map[string]published{}
			for _, s := range list.Items {
				g.Expect(s.Labels).To(HaveKeyWithValue(discoveryv1.LabelManagedBy, constants.EndpointSliceManagedBy))
				g.Expect(s.Endpoints).To(HaveLen(1))
				g.Expect(s.Ports).To(ConsistOf(HaveField("Name", HaveValue(Equal(firewallv1alpha1.MetricsPortName)))))
				out[s.Name] = published{s.AddressType, s.Endpoints[0].Addresses[0], *s.Ports[0].Port, s.Annotations[resourcesv1alpha1.OriginAnnotation]}
			}
			return out
		}
		origin := namespace + "/" + constants.MetricsManagedResourceName
		Eventually(inShoot).Should(Equal(map[string]published{
			"fw-a": {discoveryv1.AddressTypeIPv4, "10.0.1.1", 2112, origin},
			"fw-b": {discoveryv1.AddressTypeIPv6, "fd00::1", 9100, origin},
		}), "the loopback address and the unreported one are not published")

		By("a firewall that moves its address")
		report("fw-a", "10.0.1.7:2112")
		Eventually(inShoot).Should(HaveKeyWithValue("fw-a", published{discoveryv1.AddressTypeIPv4, "10.0.1.7", 2112, origin}))

		By("a ManagedResource deleted while its firewalls stay is written again")
		mr := &resourcesv1alpha1.ManagedResource{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: constants.MetricsManagedResourceName}, mr)).To(Succeed())
		Expect(c.Delete(ctx, mr)).To(Succeed())
		Eventually(func(g Gomega) {
			again := &resourcesv1alpha1.ManagedResource{}
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: constants.MetricsManagedResourceName}, again)).To(Succeed())
			g.Expect(again.UID).NotTo(Equal(mr.UID))
			g.Expect(again.DeletionTimestamp).To(BeNil())
		}).Should(Succeed())
		Eventually(inShoot).Should(HaveLen(2))

		By("a migration pauses the firewalls: this seed leaves the shoot's slices alone")
		fw := &firewallv1alpha1.Firewall{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "fw-b"}, fw)).To(Succeed())
		patch := client.MergeFrom(fw.DeepCopy())
		fw.Annotations = map[string]string{firewallv1alpha1.AnnotationPaused: "true"}
		Expect(c.Patch(ctx, fw, patch)).To(Succeed())
		Expect(c.Delete(ctx, &firewallv1alpha1.Firewall{ObjectMeta: metav1.ObjectMeta{Name: "fw-a", Namespace: namespace}})).To(Succeed())
		Consistently(inShoot).WithTimeout(3 * time.Second).Should(HaveKey("fw-a"))

		By("without the pause, a deleted firewall's slice goes, and with the last one the ManagedResource")
		Expect(c.Patch(ctx, fw, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":null}}`)))).To(Succeed())
		Eventually(inShoot).Should(HaveLen(1))
		Expect(inShoot(Default)).To(HaveKey("fw-b"))
		for _, name := range []string{"fw-b", "fw-c", "fw-d"} {
			Expect(c.Delete(ctx, &firewallv1alpha1.Firewall{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}})).To(Succeed())
		}
		Eventually(inShoot).Should(BeEmpty())
		Eventually(func() bool {
			return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: constants.MetricsManagedResourceName}, &resourcesv1alpha1.ManagedResource{}))
		}).Should(BeTrue())
	})
})
