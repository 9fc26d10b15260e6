// Package chart_test runs the extension exactly as the chart deploys it (the Deployment's
// flags, the binary's manager and controllers) under exactly the chart's RBAC, against a
// real kube-apiserver: a permission the controllers need and the chart lacks fails here,
// not in an operator's seed.
package chart_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/metal-firewall/gardener-extension-firewall/cmd/gardener-extension-firewall/app"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/machinetest"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

func TestChart(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Test Integration Chart Suite")
}

// releaseNamespace is what gardenlet names the extension's namespace in a seed.
const releaseNamespace = "extension-firewall-x7k2p"

var (
	cp *testenv.ControlPlane
	// admin plays gardenlet and the firewall agents.
	admin    client.Client
	scheme   *runtime.Scheme
	provider *machinetest.Memory
	opts     *app.Options
	mgr      manager.Manager
	// healthAddress serves /healthz and /readyz as the kubelet probes them.
	healthAddress string
	// managerErr receives what mgr.Start returns.
	managerErr = make(chan error, 1)
)

var _ = BeforeSuite(func() {
	SetDefaultEventuallyTimeout(time.Minute)
	log.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))

	var err error
	scheme, err = app.Scheme()
	Expect(err).NotTo(HaveOccurred())
	cp, err = testenv.Start(testenv.Options{Name: "seed", CRDDirectoryPaths: testenv.SeedCRDPaths()})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(cp.Stop()).To(Succeed()) })
	admin, err = client.New(cp.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	By("installing the chart's ServiceAccount and RBAC as gardenlet would")
	ctx := context.Background()
	Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNamespace}})).To(Succeed())
	objs := renderChart(cp.Config.Host)
	var deployment *appsv1.Deployment
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.ServiceAccount, *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding, *rbacv1.Role, *rbacv1.RoleBinding,
			*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
			Expect(admin.Create(ctx, o)).To(Succeed(), "%T %s", o, o.GetName())
		case *appsv1.Deployment:
			deployment = o
		}
	}
	Expect(deployment).NotTo(BeNil())

	By("taking the binary's options from the Deployment's flags")
	opts = &app.Options{}
	fs := pflag.NewFlagSet("gardener-extension-firewall", pflag.ContinueOnError)
	opts.AddFlags(fs)
	Expect(fs.Parse(deployment.Spec.Template.Spec.Containers[0].Args)).To(Succeed())
	// What differs between a pod and this test process: files, ports and the machine provider.
	dir := GinkgoT().TempDir()
	opts.SeedCAFile = filepath.Join(dir, "ca.crt")
	Expect(os.WriteFile(opts.SeedCAFile, cp.Config.CAData, 0o600)).To(Succeed())
	Expect(opts.WebhookCertDir).NotTo(BeEmpty())
	Expect(opts.WebhookConfigNamespace).To(Equal(releaseNamespace))
	opts.WebhookCertDir = filepath.Join(dir, "webhook-certs")
	opts.WebhookPort = freePort()
	healthAddress = "127.0.0.1:" + strconv.Itoa(freePort())
	opts.HealthProbeBindAddress = healthAddress
	opts.MetricsBindAddress = "0"
	Expect(opts.LeaderElection).To(BeTrue())

	By("starting the binary's manager and controllers as the chart's ServiceAccount")
	managerOptions := app.ManagerOptions(opts, scheme)
	managerOptions.Controller = config.Controller{CacheSyncTimeout: 30 * time.Second, SkipNameValidation: ptr.To(true)}
	mgr, err = manager.New(serviceAccountConfig(), managerOptions)
	Expect(err).NotTo(HaveOccurred())
	provider = machinetest.NewMemory()
	mgrCtx, cancel := context.WithCancel(context.Background())
	Expect(app.AddToManager(mgrCtx, mgr, opts, provider)).To(Succeed())
	go func() {
		defer GinkgoRecover()
		managerErr <- mgr.Start(mgrCtx)
	}()
	DeferCleanup(func() {
		cancel()
		Eventually(managerErr).WithTimeout(30 * time.Second).Should(Receive(Not(HaveOccurred())))
		Expect(secretReads.cacheLike()).To(BeEmpty(), "no spec made the extension watch or list all Secrets")
	})
})

// serviceAccountConfig authenticates as the cluster admin and acts as the chart's
// ServiceAccount, so every request is authorized by the chart's RBAC alone.
func serviceAccountConfig() *rest.Config {
	cfg := rest.CopyConfig(cp.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: fmt.Sprintf("system:serviceaccount:%s:gardener-extension-firewall", releaseNamespace),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + releaseNamespace, "system:authenticated"},
	}
	cfg.Wrap(secretReads.wrap)
	return cfg
}

// renderChart renders the chart as gardenlet does, with the operator's one required value.
func renderChart(seedServer string) []client.Object {
	objs, err := framework.RenderChart(releaseNamespace, seedServer)
	Expect(err).NotTo(HaveOccurred())
	return objs
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}
